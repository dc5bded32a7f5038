//! `inbox`: verify, store the delivery in `webhook_inbox` (UNIQUE on the webhook id alone) and
//! acknowledge; workers in each receiver process claim rows, a batch at a time (`FOR UPDATE SKIP
//! LOCKED` on Postgres, the write lock of `BEGIN IMMEDIATE` on SQLite), apply them with the version
//! guard and mark them processed in the same transaction. A failed side effect is undone and its
//! attempt counted while the row is still claimed; a row that fails 5 times stays as a dead letter.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use super::{Delivery, HandleError, Outcome, known, work};
use crate::fault::{Fault, Faults};
use crate::store::{INBOX_BATCH, InboxStep, Store};

/// Stores the delivery; a copy already stored is acknowledged as a duplicate, another body under
/// its id refused as a conflict. A delivery asking to
/// crash after its key has the claim of its row crash, in this process's workers.
pub async fn handle(
    store: &Store,
    work_delay: Duration,
    delivery: &Delivery<'_>,
    faults: &Faults,
) -> Result<Outcome, HandleError> {
    work(work_delay).await;
    if delivery.fault == Some(Fault::CrashAfterKey) {
        faults.crash_on_claim(delivery.event.id());
    }
    let event = delivery.event;
    match store.inbox_store(delivery.source, event.id(), delivery.body_sha256, delivery.body).await? {
        None => Ok(Outcome::Stored),
        Some(k) => known(k),
    }
}

/// How long an idle worker waits before looking again for rows other processes stored.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// How long a worker whose claim took less than a full batch waits before its next, so that the
/// rows stored meanwhile go in one transaction, not one each: woken at every row its process
/// stored, a worker claimed rows one or two at a time, and on SQLite each claim is a turn of the
/// file's writers taken from the deliveries (reports/performance-history.md).
const LINGER: Duration = Duration::from_millis(10);
/// How long a worker waits after the database failed.
const ERROR_BACKOFF: Duration = Duration::from_millis(200);

/// One claim loop: applies pending rows until `stop` turns true. `wake` is notified when this
/// process stores a row, so a local delivery is picked up at once.
pub async fn run_worker(
    store: Store,
    wake: Arc<Notify>,
    faults: Arc<Faults>,
    mut stop: watch::Receiver<bool>,
) {
    while !*stop.borrow() {
        match store.inbox_claim(&|webhook_id| faults.claimed(webhook_id)).await {
            Ok(steps) if !steps.is_empty() => {
                let full = steps.len() >= INBOX_BATCH as usize;
                for step in steps {
                    if let InboxStep::Failed { row, attempts, error } = step {
                        tracing::warn!(row, attempts, %error, "inbox row failed");
                    }
                }
                if !full {
                    tokio::select! {
                        () = tokio::time::sleep(LINGER) => {}
                        _ = stop.changed() => {}
                    }
                }
            }
            Ok(_) => {
                tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep(IDLE_POLL) => {}
                    _ = stop.changed() => {}
                }
            }
            Err(error) => {
                tracing::warn!(%error, "inbox worker cannot reach the database");
                tokio::select! {
                    () = tokio::time::sleep(ERROR_BACKOFF) => {}
                    _ = stop.changed() => {}
                }
            }
        }
    }
}
