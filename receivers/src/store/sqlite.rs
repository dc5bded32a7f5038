//! The SQLite dialect: one file shared by several processes, WAL mode, a busy timeout, and the
//! write lock taken up front (`BEGIN IMMEDIATE`) in every writing transaction, so a transaction
//! never has to upgrade a read lock (which SQLite refuses with "database is locked" instead of
//! waiting). SQLite's transactions are serializable, so the version guard and the inbox claim
//! need no row locks.
//!
//! And a store that knows its file. SQLite connections hold an open file, not a path: when the
//! file is deleted or replaced under a running worker, its connections go on writing into the
//! unlinked file, and a connection opened while the file was read-only stays read-only after the
//! file is writable again. So [`SqliteDb`] records the file's identity (device and inode) when it
//! opens it and checks it before every operation and again after every write, before the write is
//! acknowledged. When the file at the path is gone, another, or refuses writes, the store
//! detaches: it closes its pool, answers [`StoreError::FileUnavailable`] (a 503), and tries to open
//! the file at the path again (at most every [`REATTACH_EVERY`]), attaching only to a file that
//! holds the receivers' schema and takes a write. Connections are opened without `create`, so no
//! empty file ever appears at the path: only the first open creates the file.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use sqlx::error::DatabaseError;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteError, SqliteJournalMode, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{Connection, Sqlite, SqlitePool};

use super::sqlite_claim::{self, Write};
use super::sqlite_sql::{CREDIT, FILE_TROUBLE, KEY, Keys, LEDGER, known_key, plan_sql, writable};
use super::sqlite_writer::Writer;
use super::writers::{Turn, WriteQueue};
use super::{Applied, Guard, Known, StoreError, StoreOptions, check_side_effect, overflow};
use crate::event::Event;
use crate::timing::{self, Stage};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// How often a detached store tries to open the file at its path again.
pub(super) const REATTACH_EVERY: Duration = Duration::from_millis(200);

/// Whether a SQLite error says the file cannot be used now (and the store should reopen it).
pub(super) fn is_unavailable(e: &dyn DatabaseError) -> bool {
    primary_code(e).is_some_and(|code| FILE_TROUBLE.contains(&code))
}

/// A SQLite error's primary result code (the low byte of an extended one).
fn primary_code(e: &dyn DatabaseError) -> Option<i64> {
    let code = e.try_downcast_ref::<SqliteError>()?.code()?.parse::<i64>().ok()?;
    Some(code & 0xff)
}

/// A file's identity: its device, inode and, where the filesystem records it, its birth time.
/// An inode number is reused as soon as a file is freed (seen here: a deleted database's inode
/// came back with the copy restored in its place), so the birth time tells the two apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    born: Option<std::time::SystemTime>,
}

/// The pool of the file this store has open, and that file's identity (`None` for an
/// in-memory database, which has no file to lose).
#[derive(Debug, Clone)]
pub(super) struct Attached {
    pub(super) pool: SqlitePool,
    /// The file's writer thread, where claims and credits run (sqlite_writer.rs); `None` for an
    /// in-memory database, which only the pool's connections can reach.
    writer: Option<Arc<Writer>>,
    file: Option<FileId>,
    /// Which opening of the file this is (so a stale handle cannot detach a newer pool).
    generation: u64,
}

/// A SQLite database reached through its path, reopened when the file at the path changes.
#[derive(Debug)]
pub(super) struct SqliteDb {
    path: PathBuf,
    in_memory: bool,
    connect: SqliteConnectOptions,
    options: StoreOptions,
    /// A std lock: it is held only to read or swap the pool, never across an await.
    attached: RwLock<Option<Attached>>,
    /// Why the store is detached (empty while attached).
    why: std::sync::Mutex<String>,
    /// Serializes reattaching, and remembers the last try.
    reattach: tokio::sync::Mutex<Reattach>,
    /// Pools of files left behind, closing. No new pool opens until they have closed: their
    /// connections share the `-wal` and `-shm` files at the path with whatever file is there now,
    /// and two databases writing one WAL corrupt each other.
    retired: std::sync::Mutex<Vec<Retired>>,
    /// The file last left behind, and the `-wal` and `-shm` files at the path when it was.
    left: std::sync::Mutex<Option<LeftBehind>>,
    /// Writers take turns here before `BEGIN IMMEDIATE` (writers.rs).
    writers: WriteQueue,
}

/// A file the store stopped using, and the WAL files that were beside it then. SQLite does not
/// checkpoint or remove the WAL of a file that was deleted or moved, so those stay at the path;
/// opened with another file, their frames would be written into it.
#[derive(Debug, Clone, Copy)]
struct LeftBehind {
    file: Option<FileId>,
    wal: Option<FileId>,
    shm: Option<FileId>,
}

/// A pool left behind and its writer thread, closing.
#[derive(Debug)]
struct Retired {
    pool: SqlitePool,
    writer: Option<Arc<Writer>>,
}

impl Retired {
    fn closed(&self) -> bool {
        self.pool.size() == 0 && self.writer.as_ref().is_none_or(|w| w.ended())
    }
}

#[derive(Debug, Default)]
struct Reattach {
    last_try: Option<Instant>,
    generation: u64,
}

fn file_id(path: &std::path::Path) -> std::io::Result<Option<FileId>> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(FileId { dev: m.dev(), ino: m.ino(), born: m.created().ok() })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl SqliteDb {
    /// Opens the database at `url`, creating and migrating the file if it is missing, then holds
    /// a pool that never creates it again.
    pub(super) async fn open(url: &str, options: &StoreOptions) -> Result<Self, StoreError> {
        let connect = SqliteConnectOptions::from_str(url)?
            .journal_mode(SqliteJournalMode::Wal)
            // WAL with synchronous=NORMAL survives any process crash (what the tests inflict);
            // only an operating-system crash can lose the last commits.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(options.busy_timeout);
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let path = connect.get_filename().to_path_buf();
        let db = Self {
            writers: WriteQueue::new((!in_memory).then_some(path.as_path()), options.busy_timeout),
            path,
            in_memory,
            connect: connect.clone().create_if_missing(false),
            options: options.clone(),
            attached: RwLock::new(None),
            why: std::sync::Mutex::new(String::new()),
            reattach: tokio::sync::Mutex::new(Reattach::default()),
            retired: std::sync::Mutex::new(Vec::new()),
            left: std::sync::Mutex::new(None),
        };
        let attached = if in_memory {
            // No file to watch: one pool, migrated, for the life of the store.
            let pool = pool_options(options).connect_with(connect).await?;
            migrate(&pool).await?;
            Attached { pool, writer: None, file: None, generation: 0 }
        } else {
            // Workers opening a new file together can find it locked while another switches it
            // to WAL, which SQLite reports at once instead of waiting the busy timeout (seen: 3 of
            // 30 pairs of workers started together); the next try finds WAL set.
            retrying(is_locked, || db.create_and_attach(&connect)).await?
        };
        *db.attached.write().unwrap_or_else(|e| e.into_inner()) = Some(attached);
        Ok(db)
    }

    /// Creates the file if it is missing, migrates it, and attaches the pool that serves it.
    async fn create_and_attach(&self, connect: &SqliteConnectOptions) -> Result<Attached, StoreError> {
        let setup = pool_options(&self.options).connect_with(connect.clone().create_if_missing(true)).await?;
        let migrated = migrate(&setup).await;
        setup.close().await;
        migrated?;
        self.try_attach(0).await
    }

    fn unavailable(&self, why: impl Into<String>) -> StoreError {
        StoreError::FileUnavailable { path: self.path.display().to_string(), why: why.into() }
    }

    /// Whether the file at the path is the one `attached` has open.
    fn still_there(&self, attached: &Attached) -> Result<(), Gone> {
        let Some(opened) = attached.file else { return Ok(()) };
        match file_id(&self.path) {
            Ok(Some(now)) if now == opened => Ok(()),
            Ok(Some(_)) => Err(Gone::Replaced),
            Ok(None) => Err(Gone::Deleted),
            Err(e) => Err(Gone::Unexaminable(e)),
        }
    }

    /// The pool to use now: the open file's, if it is still the one at the path; else the
    /// store detaches and tries to open the file at the path again.
    pub(super) async fn attached(&self) -> Result<Attached, StoreError> {
        let current = self.attached.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(attached) = current {
            match self.still_there(&attached) {
                Ok(()) => return Ok(attached),
                Err(why) => self.detach(&attached, &why.to_string()),
            }
        }
        self.reattach().await
    }

    /// Closes `attached`'s pool unless it was already replaced; says why once.
    fn detach(&self, attached: &Attached, why: &str) {
        let mut slot = self.attached.write().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_none_or(|a| a.generation != attached.generation) {
            return;
        }
        *slot = None;
        drop(slot);
        tracing::error!(path = %self.path.display(), why, "SQLite file unavailable: not acknowledging until it is back");
        self.set_why(why);
        let beside = |suffix: &str| file_id(&self.sibling(suffix)).ok().flatten();
        let left = LeftBehind { file: attached.file, wal: beside("-wal"), shm: beside("-shm") };
        *self.left.lock().unwrap_or_else(|e| e.into_inner()) = Some(left);
        let pool = attached.pool.clone();
        if let Some(writer) = &attached.writer {
            writer.close();
        }
        let retired = Retired { pool: pool.clone(), writer: attached.writer.clone() };
        self.retired.lock().unwrap_or_else(|e| e.into_inner()).push(retired);
        tokio::spawn(async move { pool.close().await });
    }

    fn set_why(&self, why: &str) {
        why.clone_into(&mut self.why.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn why(&self) -> String {
        self.why.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The path of the file's `-wal` or `-shm` companion.
    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(suffix);
        PathBuf::from(name)
    }

    /// Before opening `file`, which is now at the path: if it is not the file left behind, the
    /// WAL files left beside that one are moved out of the way (the `-wal` renamed, so its frames
    /// can still be recovered by hand; the `-shm`, an index SQLite rebuilds, removed).
    fn clear_left_behind(&self, file: FileId) -> Result<(), StoreError> {
        let Some(left) = *self.left.lock().unwrap_or_else(|e| e.into_inner()) else { return Ok(()) };
        if left.file == Some(file) {
            return Ok(()); // the same file is back: its WAL is its own
        }
        let stamp =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let wal = self.sibling("-wal");
        if left.wal.is_some() && file_id(&wal).ok().flatten() == left.wal {
            let aside = self.sibling(&format!("-wal.left-{stamp}"));
            std::fs::rename(&wal, &aside)
                .map_err(|e| self.unavailable(format!("cannot move the WAL left behind aside: {e}")))?;
            tracing::warn!(wal = %aside.display(), "moved the WAL of the file left behind out of the way");
        }
        let shm = self.sibling("-shm");
        if left.shm.is_some() && file_id(&shm).ok().flatten() == left.shm {
            std::fs::remove_file(&shm)
                .map_err(|e| self.unavailable(format!("cannot remove the -shm left behind: {e}")))?;
        }
        Ok(())
    }

    /// Gives a `-wal` or `-shm` file left read-only (created while the database file was) the
    /// database file's mode again, as SQLite does when it creates them.
    fn make_companions_writable(&self) -> Result<(), StoreError> {
        let mode = std::fs::metadata(&self.path).map_err(|e| self.unavailable(e.to_string()))?.permissions();
        for suffix in ["-wal", "-shm"] {
            let companion = self.sibling(suffix);
            if companion.exists() && !writable(&companion) {
                std::fs::set_permissions(&companion, mode.clone()).map_err(|e| {
                    self.unavailable(format!(
                        "{} is read-only and cannot be made writable: {e}",
                        companion.display()
                    ))
                })?;
                tracing::warn!(file = %companion.display(), "made a read-only SQLite companion file writable again");
            }
        }
        Ok(())
    }

    /// Whether every pool left behind has closed all its connections.
    fn retired_closed(&self) -> bool {
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        retired.retain(|r| !r.closed());
        retired.is_empty()
    }

    async fn reattach(&self) -> Result<Attached, StoreError> {
        let mut r = self.reattach.lock().await;
        if let Some(attached) = self.attached.read().unwrap_or_else(|e| e.into_inner()).clone() {
            return Ok(attached); // another task reattached meanwhile
        }
        if r.last_try.is_some_and(|t| t.elapsed() < REATTACH_EVERY) {
            return Err(self.unavailable(self.why()));
        }
        if !self.retired_closed() {
            let why = format!("{}; connections to the file left behind are still closing", self.why());
            return Err(self.unavailable(why));
        }
        r.last_try = Some(Instant::now());
        r.generation += 1;
        match self.try_attach(r.generation).await {
            Ok(attached) => {
                tracing::info!(path = %self.path.display(), "SQLite file back: acknowledging again");
                *self.attached.write().unwrap_or_else(|e| e.into_inner()) = Some(attached.clone());
                self.set_why("");
                Ok(attached)
            }
            Err(e) => {
                match &e {
                    StoreError::FileUnavailable { why, .. } => self.set_why(why),
                    other => self.set_why(&other.to_string()),
                }
                Err(self.unavailable(self.why()))
            }
        }
    }

    /// The file at the path, if it may be opened: it exists, is a SQLite database and is
    /// writable; the WAL files of a file left behind are out of the way, and its own `-wal` and
    /// `-shm` are writable.
    fn ready_to_open(&self) -> Result<FileId, StoreError> {
        let id = file_id(&self.path).map_err(|e| self.unavailable(format!("cannot examine it: {e}")))?;
        let id = id.ok_or_else(|| self.unavailable("the file is missing"))?;
        // Opening a file that is not a database would write a new one into it.
        is_sqlite_file(&self.path).map_err(|why| self.unavailable(why.to_string()))?;
        // Opening a read-only file would give read-only connections, and create its `-wal` and
        // `-shm` read-only too (SQLite copies the file's mode), which would keep every later
        // connection read-only after the file is writable again.
        if !writable(&self.path) {
            return Err(self.unavailable("the file is read-only"));
        }
        self.clear_left_behind(id)?;
        self.make_companions_writable()?;
        Ok(id)
    }

    /// Opens a pool on the file at the path, and keeps it only if the file holds the receivers'
    /// schema, takes a write, and is still the file at the path afterwards.
    async fn try_attach(&self, generation: u64) -> Result<Attached, StoreError> {
        if self.in_memory {
            return Err(self.unavailable("an in-memory database that was left cannot be opened again"));
        }
        let file = self.ready_to_open()?;
        let pool = pool_options(&self.options)
            .connect_with(self.connect.clone())
            .await
            .map_err(|e| self.unavailable(format!("cannot open it: {e}")))?;
        let checked = async {
            let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
                .fetch_one(&pool)
                .await
                .map_err(|_| self.unavailable("the file holds no receiver schema"))?;
            if applied < MIGRATOR.iter().count() as i64 {
                return Err(self.unavailable("the file's schema is not the receivers' current one"));
            }
            probe_write(&pool).await.map_err(|e| self.unavailable(format!("it refuses writes: {e}")))?;
            match file_id(&self.path) {
                Ok(Some(after)) if after == file => Ok(()),
                _ => Err(self.unavailable("the file changed while it was being opened")),
            }
        };
        let started = checked.await.and_then(|()| {
            Writer::start(&self.path, self.options.busy_timeout, self.writers.clone()).map_err(|e| match e {
                StoreError::FileUnavailable { .. } => e,
                other => self.unavailable(format!("cannot open its writer's connection: {other}")),
            })
        });
        match started {
            Ok(writer) => Ok(Attached { pool, writer: Some(Arc::new(writer)), file: Some(file), generation }),
            Err(e) => {
                pool.close().await;
                Err(e)
            }
        }
    }

    /// Ends an operation on `attached`: an error that says the file cannot be used detaches the
    /// store; a write is confirmed only if the file at the path is still the one written to.
    pub(super) fn settle<T>(
        &self,
        attached: &Attached,
        result: Result<T, StoreError>,
        wrote: bool,
    ) -> Result<T, StoreError> {
        match result {
            Err(e) if e.is_unavailable() => {
                self.detach(attached, &e.to_string());
                Err(e)
            }
            Ok(v) if wrote => match self.still_there(attached) {
                Ok(()) => Ok(v),
                Err(why) => {
                    self.detach(attached, &why.to_string());
                    Err(self.unavailable(format!("{why} (after this write, which is not acknowledged)")))
                }
            },
            other => other,
        }
    }

    /// The attached pool with this file's writers' queue, for one operation.
    pub(super) fn on<'a>(&'a self, attached: &'a Attached) -> Lite<'a> {
        Lite { pool: &attached.pool, writers: &self.writers, thread: attached.writer.as_deref() }
    }

    pub(super) async fn close(&self) {
        let current = self.attached.write().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(attached) = current {
            if let Some(writer) = &attached.writer {
                writer.close();
            }
            attached.pool.close().await;
        }
    }
}

/// What one operation works with: the attached pool (what a read needs, so a `&Lite` is taken
/// where a `&SqlitePool` is) and the writers' queue (what a write needs too).
pub(super) struct Lite<'a> {
    pool: &'a SqlitePool,
    writers: &'a WriteQueue,
    /// The file's writer thread (none in memory).
    thread: Option<&'a Writer>,
}

impl std::ops::Deref for Lite<'_> {
    type Target = SqlitePool;

    fn deref(&self) -> &SqlitePool {
        self.pool
    }
}

impl Lite<'_> {
    /// A pooled connection, then the write turn: the connection is had before the turn, so the
    /// wait for it is not spent holding up every other writer of the file.
    pub(super) async fn writer(&self) -> Result<(PoolConnection<Sqlite>, Turn), StoreError> {
        let conn = pooled(self.pool).await?;
        let turn = self.writers.turn().await?;
        Ok((conn, turn))
    }

    /// `write` in one transaction: on the file's writer thread, or, in memory, on a pooled
    /// connection in one round trip (sqlite_claim.rs).
    pub(super) async fn write(&self, write: Write) -> Result<Applied, StoreError> {
        match self.thread {
            Some(thread) => thread.write(write).await,
            None => {
                let (conn, turn) = self.writer().await?;
                sqlite_claim::apply(conn, turn, write).await
            }
        }
    }
}

/// Why the file at the path is no longer the one a pool has open: the store detaches, and says
/// this in the logs and in the 503's reason.
#[derive(Debug, thiserror::Error)]
enum Gone {
    /// Another file is at the path (a restore, `mv`).
    #[error("the file at the path was replaced by another")]
    Replaced,
    /// No file is at the path.
    #[error("the file was deleted")]
    Deleted,
    /// The path cannot be looked at (its directory's permissions).
    #[error("the file cannot be examined: {0}")]
    Unexaminable(#[source] std::io::Error),
}

/// Why the file at the path is not opened: opening a file that is not a database would write a
/// new one into it.
#[derive(Debug, thiserror::Error)]
enum NotSqlite {
    /// Its first 16 bytes cannot be read (an empty or short file, a directory).
    #[error("the file is not a SQLite database ({0})")]
    Unreadable(#[source] std::io::Error),
    /// They are not SQLite's header.
    #[error("the file is not a SQLite database")]
    WrongHeader,
}

/// Whether the file at `path` starts with SQLite's header (an empty file does not).
fn is_sqlite_file(path: &std::path::Path) -> Result<(), NotSqlite> {
    use std::io::Read;
    let mut magic = [0u8; 16];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).map_err(NotSqlite::Unreadable)?;
    if &magic == b"SQLite format 3\0" { Ok(()) } else { Err(NotSqlite::WrongHeader) }
}

fn pool_options(options: &StoreOptions) -> SqlitePoolOptions {
    SqlitePoolOptions::new().max_connections(options.max_connections).acquire_timeout(options.acquire_timeout)
}

/// Whether SQLite said the database is locked (`SQLITE_BUSY`, any extended code).
fn is_locked(e: &StoreError) -> bool {
    matches!(e, StoreError::Database(sqlx::Error::Database(d)) if primary_code(&**d) == Some(5))
}

/// `attempt` again, up to ten more times and 50 ms longer before each, while its error is one
/// `passes` says goes away: what workers starting together on one new file meet while another
/// creates, switches or migrates it.
async fn retrying<T, E, Fut>(passes: impl Fn(&E) -> bool, mut attempt: impl FnMut() -> Fut) -> Result<T, E>
where
    Fut: Future<Output = Result<T, E>>,
{
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(e) if tries < 10 && passes(&e) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50 * tries)).await;
            }
            done => return done,
        }
    }
}

async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    // Workers starting together on a new file may race to create the schema; the loser's
    // migration transaction rolls back, and on the next try it finds the schema applied.
    Ok(retrying(|_| true, || MIGRATOR.run(pool)).await?)
}

/// A write made and rolled back: fails when the connection cannot write the file.
pub(super) async fn probe_write(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query("INSERT INTO receiver_probe (id) VALUES (1)").execute(&mut *tx).await?;
    tx.rollback().await?;
    Ok(())
}

/// A connection from the pool, the wait for it timed.
async fn pooled(pool: &SqlitePool) -> Result<PoolConnection<Sqlite>, StoreError> {
    let started = Instant::now();
    let conn = pool.acquire().await?;
    timing::since(Stage::Pool, started);
    Ok(conn)
}

/// `BEGIN IMMEDIATE` on `conn`: the write lock taken before the first statement, timed (the
/// wait for the lock included, busy-handler sleeps and all).
pub(super) async fn begin_immediate(
    conn: &mut SqliteConnection,
) -> Result<sqlx::Transaction<'_, Sqlite>, StoreError> {
    let started = Instant::now();
    let tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    timing::since(Stage::Begin, started);
    Ok(tx)
}

/// The side effect, inside the caller's transaction. A side effect refused
/// ([`StoreError::Refused`]) has written nothing.
pub(super) async fn apply_in(
    conn: &mut SqliteConnection,
    event: &Event,
    guard: Guard,
) -> Result<Applied, StoreError> {
    check_side_effect(event)?;
    match event {
        Event::Credit { id, account, amount, .. } => {
            let credited = sqlx::query(CREDIT).bind(account).bind(amount).execute(&mut *conn).await?;
            if credited.rows_affected() == 0 {
                return Err(overflow(id, *account, *amount));
            }
            sqlx::query(LEDGER).bind(id).bind(account).bind(amount).execute(&mut *conn).await?;
            Ok(Applied::Applied)
        }
        Event::Plan { account, plan, version, created, .. } => {
            let done = sqlx::query(plan_sql(guard))
                .bind(account)
                .bind(plan)
                .bind(version)
                .bind(created)
                .execute(&mut *conn)
                .await?;
            Ok(if done.rows_affected() == 0 { Applied::Stale } else { Applied::Applied })
        }
    }
}

pub(super) async fn apply(db: &Lite<'_>, event: &Event, guard: Guard) -> Result<Applied, StoreError> {
    if check_side_effect(event).is_ok() {
        return match event {
            // A credit's two statements, in one transaction on the writer thread.
            Event::Credit { id, account, amount, .. } => {
                db.write(Write::Credit { id: id.clone(), account: *account, amount: *amount }).await
            }
            // A plan update is one statement: on its own, SQLite makes it a transaction.
            Event::Plan { .. } => {
                let (mut conn, _turn) = db.writer().await?;
                apply_in(&mut conn, event, guard).await
            }
        };
    }
    let (mut conn, _turn) = db.writer().await?;
    let mut tx = begin_immediate(&mut conn).await?;
    let applied = apply_in(&mut tx, event, guard).await?;
    tx.commit().await?;
    Ok(applied)
}

/// Inserts the event's key with its body hash, doing nothing when it is there; whether it was
/// inserted.
async fn insert_key(
    conn: &mut SqliteConnection,
    event_id: &str,
    body_sha256: &str,
) -> Result<bool, StoreError> {
    let done = sqlx::query(KEY).bind(event_id).bind(body_sha256).execute(&mut *conn).await?;
    Ok(done.rows_affected() == 1)
}

pub(super) async fn check_key(
    pool: &SqlitePool,
    event_id: &str,
    body_sha256: &str,
) -> Result<Option<Known>, StoreError> {
    let mut conn = pool.acquire().await?;
    let present: Option<i32> = sqlx::query_scalar("SELECT 1 FROM processed_events WHERE event_id = ?1")
        .bind(event_id)
        .fetch_optional(&mut *conn)
        .await?;
    if present.is_none() {
        return Ok(None);
    }
    Ok(Some(known_key(&mut conn, Keys::Processed, event_id, body_sha256).await?))
}

pub(super) async fn mark_processed(
    db: &Lite<'_>,
    event_id: &str,
    body_sha256: &str,
) -> Result<Option<Known>, StoreError> {
    // Each statement is its own transaction: a key once inserted stays, so reading it after a
    // refused insert needs no lock held across the two.
    let (mut conn, _turn) = db.writer().await?;
    if insert_key(&mut conn, event_id, body_sha256).await? {
        return Ok(None);
    }
    Ok(Some(known_key(&mut conn, Keys::Processed, event_id, body_sha256).await?))
}

pub(super) async fn apply_once(
    db: &Lite<'_>,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
    after_key: Option<&(dyn Fn() + Sync)>,
) -> Result<Applied, StoreError> {
    // Nothing to run between the key and a side effect that can apply: both go to the writer
    // thread. A poison event takes the path below, which refuses it only once its key is claimed.
    let after_key = match after_key {
        None if check_side_effect(event).is_ok() => {
            let claim = Write::Claim { event: event.clone(), body_sha256: body_sha256.to_string(), guard };
            return db.write(claim).await;
        }
        None => &|| {},
        Some(after_key) => after_key,
    };
    let (mut conn, _turn) = db.writer().await?;
    let mut tx = begin_immediate(&mut conn).await?;
    if !insert_key(&mut tx, event.id(), body_sha256).await? {
        let known = known_key(&mut tx, Keys::Processed, event.id(), body_sha256).await?;
        tx.commit().await?;
        return Ok(known.into());
    }
    apply_if_claimed(tx, true, event, guard, after_key).await
}

/// Ends a claim transaction: commits and reports a duplicate when the key was already there;
/// otherwise calls `after_key`, applies the side effect and commits both together.
async fn apply_if_claimed(
    mut tx: sqlx::Transaction<'_, Sqlite>,
    claimed: bool,
    event: &Event,
    guard: Guard,
    after_key: &(dyn Fn() + Sync),
) -> Result<Applied, StoreError> {
    if !claimed {
        tx.commit().await?;
        return Ok(Applied::Duplicate);
    }
    after_key();
    let applied = apply_in(&mut tx, event, guard).await?;
    tx.commit().await?;
    Ok(applied)
}

pub(super) async fn apply_once_until(
    db: &Lite<'_>,
    event: &Event,
    now: f64,
    ttl: f64,
) -> Result<Applied, StoreError> {
    let (mut conn, _turn) = db.writer().await?;
    let mut tx = begin_immediate(&mut conn).await?;
    // A key whose time has passed counts as absent, purged or not.
    let claimed = sqlx::query(
        "INSERT INTO dedupe_keys (event_id, expires_at) VALUES (?1, ?2) ON CONFLICT (event_id) \
         DO UPDATE SET expires_at = excluded.expires_at WHERE dedupe_keys.expires_at <= ?3",
    )
    .bind(event.id())
    .bind(now + ttl)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    apply_if_claimed(tx, claimed.rows_affected() != 0, event, Guard::None, &|| {}).await
}

pub(super) async fn purge_expired(db: &Lite<'_>, now: f64) -> Result<u64, StoreError> {
    let (mut conn, _turn) = db.writer().await?;
    let done =
        sqlx::query("DELETE FROM dedupe_keys WHERE expires_at <= ?1").bind(now).execute(&mut *conn).await?;
    Ok(done.rows_affected())
}

/// check-in-transaction: in one transaction, the id looked up in `checked_events` (SQLite's writers
/// are serialized: the transaction is `BEGIN IMMEDIATE`, so no other writer runs between), and when it is not there the side effect and the id's row. The table's index is not
/// unique, so what keeps two copies from both applying is the isolation level alone.
pub(super) async fn apply_checked(
    db: &Lite<'_>,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
) -> Result<Applied, StoreError> {
    let (mut conn, _turn) = db.writer().await?;
    let mut tx = begin_immediate(&mut conn).await?;
    let seen: Option<i32> = sqlx::query_scalar("SELECT 1 FROM checked_events WHERE event_id = ?1 LIMIT 1")
        .bind(event.id())
        .fetch_optional(&mut *tx)
        .await?;
    if seen.is_some() {
        let known = known_key(&mut tx, Keys::Checked, event.id(), body_sha256).await?;
        tx.commit().await?;
        return Ok(known.into());
    }
    let applied = apply_in(&mut tx, event, guard).await?;
    sqlx::query("INSERT INTO checked_events (event_id, body_sha256) VALUES (?1, ?2)")
        .bind(event.id())
        .bind(body_sha256)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(applied)
}
