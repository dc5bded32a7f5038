//! `split`: INSERT the event's key and commit it on its own, then apply the side effect in a
//! second transaction. Correct until the process dies between the two: the key is already
//! committed, so the retry looks like a duplicate and the event is never applied. The article's
//! crash test shows exactly that; hookbench's `crash` command does it with a real process death.

use std::time::Duration;

use super::{Delivery, HandleError, Outcome, known, outcome, work};
use crate::store::{Guard, Store};

/// Works, commits the key, then applies.
pub async fn handle(
    store: &Store,
    work_delay: Duration,
    delivery: &Delivery<'_>,
) -> Result<Outcome, HandleError> {
    work(work_delay).await;
    if let Some(k) = store.mark_processed(delivery.event.id(), delivery.body_sha256).await? {
        return known(k);
    }
    delivery.after_key();
    // The side effect's own time (a downstream call): the window in which a crash loses the event.
    work(delivery.effect_delay).await;
    outcome(store.apply(delivery.event, Guard::None).await?)
}
