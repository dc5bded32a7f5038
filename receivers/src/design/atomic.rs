//! `atomic` and its guarded variants `created-gte`, `created-gt` and `version-guard`: one
//! transaction inserts the id with ON CONFLICT DO NOTHING and applies only if a row was inserted,
//! so the UNIQUE index decides which copy wins, across every worker process.

use std::time::Duration;

use super::{Delivery, HandleError, Outcome, outcome, work};
use crate::store::{Guard, Store};

/// Works (outside the transaction), then claims and applies in one transaction. A crash after
/// the key leaves nothing behind: the open transaction dies with the process.
pub async fn handle(
    store: &Store,
    work_delay: Duration,
    delivery: &Delivery<'_>,
    guard: Guard,
) -> Result<Outcome, HandleError> {
    work(work_delay).await;
    let crash = || delivery.after_key();
    // Only a delivery that crashes has anything to run between its key and its side effect.
    let after_key = delivery.crashes_after_key().then_some(&crash as &(dyn Fn() + Sync));
    outcome(store.apply_once(delivery.event, delivery.body_sha256, guard, after_key).await?)
}
