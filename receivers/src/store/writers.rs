//! SQLite's writers, queued: one write transaction at a time per file, across every worker
//! process, each handed the turn when the last one ends instead of finding it by polling.
//!
//! SQLite lets one connection at a time hold a file's write lock. A connection that finds it
//! taken sleeps in SQLite's busy handler (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms, then
//! 100 ms at a time) and tries again, so a lock freed after a fraction of a millisecond stays idle
//! until some sleeper wakes, and the writer that just let it go, never asleep, takes it again.
//! Here a writer first takes its process's turn (a tokio mutex: one process's tasks queue in
//! order and each is woken as the last lets go) and then the file's (an exclusive `flock` on a
//! lock file beside the database, for which the kernel wakes a blocked process as soon as it is
//! released). Only then does it run `BEGIN IMMEDIATE`, which finds SQLite's lock free unless
//! something outside the queue writes.
//!
//! The queue changes no guarantee. SQLite's own lock still decides: every write transaction
//! still takes it, and a writer outside the queue (a user's tool, a health probe) is still waited
//! for by the busy handler. The races the designs have are between transactions (a check, then a
//! later write), never inside one, and two worker processes still race on one file. If the lock
//! file cannot be opened, writers queue within their process only.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::StoreError;
use crate::timing::{self, Stage};

/// The queue of one SQLite file's writers in this process (a clone is the same queue).
#[derive(Debug, Clone)]
pub(super) struct WriteQueue {
    /// The lock file shared by every process writing the database (`None` for an in-memory one).
    path: Option<PathBuf>,
    /// This process's writers queue here; the slot holds the opened lock file between turns.
    slot: Arc<Mutex<Option<File>>>,
    /// How long a writer waits for its turn before it gives up (the store's busy timeout).
    wait: Duration,
}

/// A writer's turn: while it is held, no other queued writer of the file runs. It owns its place
/// in the queue, so a task of its own can hold it.
#[derive(Debug)]
pub(super) struct Turn {
    slot: OwnedMutexGuard<Option<File>>,
    held: Option<Flock<File>>,
    since: Instant,
}

impl Drop for Turn {
    fn drop(&mut self) {
        timing::since(Stage::Held, self.since);
        if let Some(held) = self.held.take() {
            // Unlocked, the file goes back into the slot for the next turn; if unlocking fails,
            // dropping the lock closes the file, which releases it too, and the next turn opens
            // it again.
            if let Ok(file) = held.unlock() {
                *self.slot = Some(file);
            }
        }
    }
}

/// The lock file beside the database at `database`.
pub(super) fn lock_file_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push("-writer.lock");
    PathBuf::from(name)
}

impl WriteQueue {
    /// The queue of the file at `database` (`None`: an in-memory database, one process's only).
    pub(super) fn new(database: Option<&Path>, wait: Duration) -> Self {
        Self { path: database.map(lock_file_path), slot: Arc::new(Mutex::new(None)), wait }
    }

    /// Waits for this writer's turn, at most the busy timeout in all.
    pub(super) async fn turn(&self) -> Result<Turn, StoreError> {
        let started = Instant::now();
        let busy = || StoreError::Busy(self.wait);
        let mut slot =
            tokio::time::timeout(self.wait, self.slot.clone().lock_owned()).await.map_err(|_| busy())?;
        let file = slot.take().or_else(|| self.open());
        let held = match file {
            None => None,
            Some(file) => match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(held) => Some(held),
                Err((file, Errno::EWOULDBLOCK)) => {
                    let left = self.wait.saturating_sub(started.elapsed());
                    wait_for_other_process(file, left).await.ok_or_else(busy)?
                }
                Err((file, errno)) => {
                    tracing::warn!(%errno, "cannot lock the writers' lock file: queueing within this process only");
                    *slot = Some(file);
                    None
                }
            },
        };
        timing::since(Stage::Turn, started);
        Ok(Turn { slot, held, since: Instant::now() })
    }

    /// The turn for a thread outside the runtime (the writer thread, sqlite_writer.rs), blocking
    /// until it is had: the thread checks its write's deadline once it holds the turn, since a
    /// thread blocked in `flock` cannot be woken by a timer.
    pub(super) fn turn_blocking(&self) -> Turn {
        let started = Instant::now();
        let mut slot = self.slot.clone().blocking_lock_owned();
        let held = slot.take().or_else(|| self.open()).and_then(|file| {
            match Flock::lock(file, FlockArg::LockExclusive) {
                Ok(held) => Some(held),
                Err((file, errno)) => {
                    tracing::warn!(%errno, "cannot lock the writers' lock file: queueing within this process only");
                    *slot = Some(file);
                    None
                }
            }
        });
        timing::since(Stage::Turn, started);
        Turn { slot, held, since: Instant::now() }
    }

    /// Opens (creating if needed) the lock file; `None` when there is none or it cannot be had.
    fn open(&self) -> Option<File> {
        let path = self.path.as_ref()?;
        match File::options().read(true).write(true).create(true).truncate(false).open(path) {
            Ok(file) => Some(file),
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "no writers' lock file: queueing within this process only");
                None
            }
        }
    }
}

/// Blocks a thread in the kernel until another process lets the lock file go, for at most
/// `left`. `None`: not had in time (the thread still takes the lock when it frees, and lets it go
/// at once); `Some(None)`: the lock failed, so queue within the process only.
async fn wait_for_other_process(file: File, left: Duration) -> Option<Option<Flock<File>>> {
    let blocked = tokio::task::spawn_blocking(move || Flock::lock(file, FlockArg::LockExclusive));
    match tokio::time::timeout(left, blocked).await {
        Err(_) => None,
        Ok(Ok(Ok(held))) => Some(Some(held)),
        Ok(Ok(Err((_, errno)))) => {
            tracing::warn!(%errno, "cannot lock the writers' lock file: queueing within this process only");
            Some(None)
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "the thread waiting for the writers' lock file failed");
            Some(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_queue_on_the_file_waits_until_the_first_turn_ends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        // Two queues on one file are two processes' queues: each opens the lock file apart.
        let first = WriteQueue::new(Some(&db), Duration::from_secs(5));
        let second = WriteQueue::new(Some(&db), Duration::from_millis(100));
        let turn = first.turn().await.expect("first turn");
        assert!(matches!(second.turn().await, Err(StoreError::Busy(_))), "taken while the first holds it");
        drop(turn);
        let again = second.turn().await.expect("free once the first turn ended");
        assert!(again.held.is_some(), "the file's lock is held, not only the process's");
        assert!(lock_file_path(&db).exists());
    }

    #[tokio::test]
    async fn without_a_lock_file_writers_queue_within_the_process() {
        let queue = WriteQueue::new(None, Duration::from_millis(100));
        let turn = queue.turn().await.expect("turn");
        assert!(turn.held.is_none());
        assert!(
            tokio::time::timeout(Duration::from_millis(50), queue.turn()).await.is_err(),
            "one at a time"
        );
        drop(turn);
        assert!(queue.turn().await.is_ok());
    }
}
