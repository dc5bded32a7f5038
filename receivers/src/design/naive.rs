//! `naive`: apply the side effect on every delivery.

use std::time::Duration;

use super::{HandleError, Outcome, outcome, work};
use crate::event::Event;
use crate::store::{Guard, Store};

/// Works, then applies, whatever came before.
pub async fn handle(store: &Store, work_delay: Duration, event: &Event) -> Result<Outcome, HandleError> {
    work(work_delay).await;
    outcome(store.apply(event, Guard::None).await?)
}
