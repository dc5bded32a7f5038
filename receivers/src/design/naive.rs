//! `naive`: apply the side effect on every delivery.

use std::time::Duration;

use super::{HandleError, Outcome, work};
use crate::event::Event;
use crate::store::{Guard, Store};

/// Works, then applies, whatever came before.
pub async fn handle(store: &Store, work_delay: Duration, event: &Event) -> Result<Outcome, HandleError> {
    work(work_delay).await;
    Ok(store.apply(event, Guard::None).await?.into())
}
