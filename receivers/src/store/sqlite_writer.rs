//! The writer thread of a SQLite file: the atomic designs' claims and the credits run here, one
//! transaction at a time, on a connection of the thread's own, with no hop inside the write turn.
//!
//! sqlx runs each SQLite connection on a thread of its own and reaches it by messages. A write
//! that went through it held the file's write turn across a chain of wake-ups: the thread blocked
//! on the writers' lock file woke a task, the task sent the statements to the connection's thread
//! and woke it, the answer woke the task again, and only then was the turn let go. On this
//! project's 2-core machine that chain, not SQLite, was most of the time the file was held
//! (reports/performance-history.md: 0.32 ms held per delivery, where SQLite's own work for the same
//! statements is under 0.1 ms). Here one thread does the whole turn itself: it blocks on the
//! lock file, and when the kernel wakes it, it runs `BEGIN IMMEDIATE`, the statements and
//! `COMMIT` on its own connection (rusqlite, SQLite's C API called in place) and lets the turn go.
//! The request waits on a channel for the outcome, outside the turn.
//!
//! Nothing the designs guarantee changes. The statements are the ones the sqlx path runs
//! (sqlite.rs's, sqlite_claim.rs's in one string); each write is one `BEGIN IMMEDIATE`
//! transaction, as before; the thread takes the same turn as every other writer of the file (the
//! process's queue, then the lock file), so the sqlx writes that stay (keys, the inbox, purges)
//! still take turns with it; and two worker processes still race on one file, each with a writer
//! thread of its own. A write whose caller has gone is not started (nobody would be told it was
//! stored); one started always ends in `COMMIT` or `ROLLBACK` before the next, whatever the
//! caller does, so a dropped request cannot leave the file's write lock held.
//!
//! The thread's connection stays open for the life of the file's attachment, so a file made
//! read-only under it would go on being written through its open descriptor; the thread checks
//! that the file is writable (`access(2)`) before each write and refuses it as unavailable
//! otherwise, which detaches the store until the file can be written again (sqlite.rs).
//!
//! Bounded whatever the load: at most [`QUEUED`] writes wait for the thread (more are refused at
//! once as busy), and a write not started within the busy timeout is refused, not written.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::oneshot;

use super::sqlite_claim::Write;
use super::sqlite_sql::{CONFLICT, CREDIT, KEY, LEDGER, plan_sql};
use super::writers::WriteQueue;
use super::{Applied, Known, StoreError, compare_bodies, overflow};
use crate::event::Event;
use crate::timing::{self, Stage};

/// How many writes may wait for the thread; one more is refused at once as busy.
const QUEUED: usize = 1024;

/// How much longer than the busy timeout a request waits for the thread's answer: a write begun
/// just before its deadline is let finish and reported, not abandoned half-way.
const GRACE: Duration = Duration::from_secs(5);

/// A SQLite file's writer thread, as the store reaches it.
#[derive(Debug)]
pub(super) struct Writer {
    path: PathBuf,
    /// `None` once closed: the thread finishes what was queued, then ends.
    jobs: Mutex<Option<SyncSender<Job>>>,
    /// Set by the thread as it ends, its connection closed.
    ended: Arc<AtomicBool>,
    /// The busy timeout: how long a write may wait to be started.
    wait: Duration,
}

/// One write for the thread, and where its outcome goes.
struct Job {
    write: Write,
    /// Not started after this: the write is refused as busy.
    deadline: Instant,
    answer: oneshot::Sender<Result<Applied, StoreError>>,
}

impl Writer {
    /// Opens the thread's connection to the file at `path` (which must exist and hold the
    /// schema) and starts the thread, which takes its turns in `queue`.
    pub(super) fn start(path: &Path, wait: Duration, queue: WriteQueue) -> Result<Self, StoreError> {
        let conn = connect(path, wait)?;
        let (jobs, inbox) = mpsc::sync_channel(QUEUED);
        let ended = Arc::new(AtomicBool::new(false));
        let thread = Thread { path: path.to_path_buf(), wait, queue, ended: ended.clone() };
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || thread.serve(conn, &inbox))
            .map_err(|e| unavailable(path, format!("cannot start its writer thread: {e}")))?;
        Ok(Self { path: path.to_path_buf(), jobs: Mutex::new(Some(jobs)), ended, wait })
    }

    /// Runs `write` on the thread: its outcome once committed (or refused, or rolled back).
    pub(super) async fn write(&self, write: Write) -> Result<Applied, StoreError> {
        let deadline = Instant::now() + self.wait;
        let (answer, answered) = oneshot::channel();
        let sent = match &*self.jobs.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(jobs) => jobs.try_send(Job { write, deadline, answer }),
            None => return Err(self.gone()),
        };
        match sent {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(StoreError::Busy(self.wait)),
            Err(TrySendError::Disconnected(_)) => return Err(self.gone()),
        }
        match tokio::time::timeout(self.wait + GRACE, answered).await {
            Ok(Ok(done)) => done,
            Ok(Err(_)) => Err(self.gone()),
            Err(_) => Err(StoreError::Busy(self.wait)),
        }
    }

    /// Takes no more writes; the thread ends once it has done the ones queued.
    pub(super) fn close(&self) {
        drop(self.jobs.lock().unwrap_or_else(|e| e.into_inner()).take());
    }

    /// Whether the thread has ended and closed its connection.
    pub(super) fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn gone(&self) -> StoreError {
        unavailable(&self.path, "its writer thread has stopped")
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

fn unavailable(path: &Path, why: impl Into<String>) -> StoreError {
    StoreError::FileUnavailable { path: path.display().to_string(), why: why.into() }
}

/// A connection like the sqlx pool's: read-write, never creating the file, `synchronous=NORMAL`
/// (the file is in WAL mode already), foreign keys on (sqlx's default), the same busy timeout.
fn connect(path: &Path, wait: Duration) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(wait)?;
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    Ok(conn)
}

/// The writer thread's connection and transaction, run on the caller's own thread: what
/// `hookbench perf`'s loop through SQLite's C API runs, so that its reference is this very
/// transaction with no HTTP, no worker process and no queue in front of it.
#[derive(Debug)]
pub struct Direct {
    conn: Connection,
}

impl Direct {
    /// A connection to the file at `path`, which must exist and hold the schema, set up as the
    /// writer thread's is.
    pub fn open(path: &Path, busy_timeout: Duration) -> Result<Self, StoreError> {
        Ok(Self { conn: connect(path, busy_timeout)? })
    }

    /// The atomic designs' credit: `id`'s key claimed with `body_sha256`, then `amount` added to
    /// `account` with its ledger row, in one `BEGIN IMMEDIATE` transaction, as the writer thread
    /// runs it.
    pub fn claim_credit(
        &self,
        id: &str,
        body_sha256: &str,
        account: i64,
        amount: i64,
    ) -> Result<Applied, StoreError> {
        let event = Event::Credit { id: id.to_string(), account, amount, created: 0 };
        transact(
            &self.conn,
            &Write::Claim { event, body_sha256: body_sha256.to_string(), guard: super::Guard::None },
        )
    }
}

/// What the thread owns besides its connection.
struct Thread {
    path: PathBuf,
    wait: Duration,
    queue: WriteQueue,
    ended: Arc<AtomicBool>,
}

impl Thread {
    /// Serves writes until every sender is gone, or the connection is lost and cannot be opened
    /// again (the writes still queued then are answered as unavailable, by their dropped answer).
    fn serve(self, conn: Connection, jobs: &Receiver<Job>) {
        // Set however the thread ends, a panic included: a store waits for every retired
        // file's thread to end before it opens the file again.
        let _ended = Ended(self.ended.clone());
        self.serve_until_done(conn, jobs);
    }

    fn serve_until_done(&self, mut conn: Connection, jobs: &Receiver<Job>) {
        for job in jobs {
            if job.answer.is_closed() {
                continue; // the request is gone: nobody would be told this was stored
            }
            if Instant::now() >= job.deadline {
                // Refused without taking a turn it would only let go: the thread was held up
                // (another process kept the file), and the writes queued behind it expire fast.
                let _ = job.answer.send(Err(StoreError::Busy(self.wait)));
                continue;
            }
            let turn = self.queue.turn_blocking();
            let done = if Instant::now() >= job.deadline {
                Err(StoreError::Busy(self.wait))
            } else if !super::sqlite_sql::writable(&self.path) {
                // The connection was opened read-write and would go on writing through its open
                // descriptor; a file its owner made read-only is one the store stops writing
                // (and opens again once it is writable).
                Err(unavailable(&self.path, "the file is read-only"))
            } else {
                transact(&conn, &job.write)
            };
            // A transaction its `ROLLBACK` could not end: that connection is closed while the
            // turn is still held (SQLite rolls back what it left open) and another opened.
            if !conn.is_autocommit() {
                match connect(&self.path, self.wait) {
                    Ok(fresh) => conn = fresh,
                    Err(e) => {
                        tracing::error!(error = %e, "the SQLite writer thread cannot reopen the file: stopping");
                        drop(conn);
                        drop(turn);
                        let _ = job.answer.send(done);
                        return;
                    }
                }
            }
            drop(turn);
            let _ = job.answer.send(done);
        }
    }
}

/// Marks the thread ended when dropped, after its connection (dropped first, in `serve`'s body).
struct Ended(Arc<AtomicBool>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// `write` in one `BEGIN IMMEDIATE` transaction: committed when it applied, was a duplicate or
/// was stale; rolled back when refused or failed.
fn transact(conn: &Connection, write: &Write) -> Result<Applied, StoreError> {
    let started = Instant::now();
    run(conn, "BEGIN IMMEDIATE")?;
    timing::since(Stage::Begin, started);
    let done = statements(conn, write).and_then(|applied| {
        run(conn, "COMMIT")?;
        Ok(applied)
    });
    if done.is_err() && !conn.is_autocommit() {
        let _ = run(conn, "ROLLBACK");
    }
    done
}

fn run(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// The statements of `write`, inside its transaction.
fn statements(conn: &Connection, write: &Write) -> Result<Applied, StoreError> {
    match write {
        Write::Claim { event, body_sha256, guard } => {
            let claimed = conn.prepare_cached(KEY)?.execute(params![event.id(), body_sha256])? == 1;
            if !claimed {
                return Ok(known_key(conn, event.id(), body_sha256)?.into());
            }
            match event {
                Event::Credit { id, account, amount, .. } => credit(conn, id, *account, *amount),
                Event::Plan { account, plan, version, created, .. } => {
                    let changed = conn
                        .prepare_cached(plan_sql(*guard))?
                        .execute(params![account, plan, version, created])?;
                    Ok(if changed == 0 { Applied::Stale } else { Applied::Applied })
                }
            }
        }
        Write::Credit { id, account, amount } => credit(conn, id, *account, *amount),
    }
}

/// The credit and its ledger row; a credit that would overflow the balance writes neither.
fn credit(conn: &Connection, id: &str, account: i64, amount: i64) -> Result<Applied, StoreError> {
    if conn.prepare_cached(CREDIT)?.execute(params![account, amount])? == 0 {
        return Err(overflow(id, account, amount));
    }
    conn.prepare_cached(LEDGER)?.execute(params![id, account, amount])?;
    Ok(Applied::Applied)
}

/// What the key already stored says about a delivery whose body hashes to `received`: a
/// duplicate, or a conflict, which is recorded (sqlite.rs's `known_key`, on this connection).
fn known_key(conn: &Connection, event_id: &str, received: &str) -> Result<Known, StoreError> {
    let stored: Option<Option<String>> = conn
        .prepare_cached("SELECT body_sha256 FROM processed_events WHERE event_id = ?1")?
        .query_row(params![event_id], |row| row.get(0))
        .optional()?;
    let Some(mut conflict) = compare_bodies(event_id, stored.flatten(), received) else {
        return Ok(Known::Duplicate);
    };
    let deliveries: i64 = conn
        .prepare_cached(CONFLICT)?
        .query_row(params![event_id, &conflict.stored_sha256, received], |row| row.get(0))?;
    conflict.first_seen = deliveries == 1;
    Ok(Known::Conflict(conflict))
}

/// Whether an error of the thread's connection says the file cannot be used now.
pub(super) fn is_unavailable(e: &rusqlite::Error) -> bool {
    match e {
        rusqlite::Error::SqliteFailure(failure, _) => {
            super::sqlite_sql::FILE_TROUBLE.contains(&i64::from(failure.extended_code & 0xff))
        }
        _ => false,
    }
}
