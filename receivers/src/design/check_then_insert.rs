//! `check-then-insert`: SELECT the id; work; apply; INSERT the id.
//!
//! The common tutorial pattern. Two copies that both pass the SELECT before either INSERTs both
//! apply; the second INSERT then conflicts and answers 500, after its side effect committed.
//! A known id with another body is found by the check, like a duplicate, and refused.

use std::time::Duration;

use super::{Delivery, HandleError, Outcome, known, outcome, work};
use crate::store::{Guard, Store};

/// Checks, works, applies, records.
pub async fn handle(
    store: &Store,
    work_delay: Duration,
    delivery: &Delivery<'_>,
) -> Result<Outcome, HandleError> {
    let event = delivery.event;
    if let Some(k) = store.check_key(event.id(), delivery.body_sha256).await? {
        return known(k);
    }
    work(work_delay).await;
    let applied = store.apply(event, Guard::None).await?;
    if store.mark_processed(event.id(), delivery.body_sha256).await?.is_some() {
        return Err(HandleError::KeyConflictAfterApply(event.id().to_string()));
    }
    outcome(applied)
}
