//! `check-then-insert`: SELECT the id; work; apply; INSERT the id.
//!
//! The common tutorial pattern. Two copies that both pass the SELECT before either INSERTs both
//! apply; the second INSERT then conflicts and answers 500, after its side effect committed.

use std::time::Duration;

use super::{HandleError, Outcome, work};
use crate::event::Event;
use crate::store::{Guard, Store};

/// Checks, works, applies, records.
pub async fn handle(store: &Store, work_delay: Duration, event: &Event) -> Result<Outcome, HandleError> {
    if store.is_processed(event.id()).await? {
        return Ok(Outcome::Duplicate);
    }
    work(work_delay).await;
    let applied = store.apply(event, Guard::None).await?;
    if !store.mark_processed(event.id()).await? {
        return Err(HandleError::KeyConflictAfterApply(event.id().to_string()));
    }
    Ok(applied.into())
}
