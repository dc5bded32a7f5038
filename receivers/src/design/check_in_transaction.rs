//! `check-in-transaction`: work; then in ONE transaction, SELECT the id, apply, INSERT the id, with
//! a non-unique index on the id and no UNIQUE constraint.
//!
//! What a team writes that trusts the transaction instead of the constraint: the check, the
//! effect and the key commit together or not at all, so unlike `check-then-insert` no side effect
//! is ever left without its key. Whether two concurrent copies both apply is decided by the
//! isolation level alone: under READ COMMITTED, and MariaDB's REPEATABLE READ without snapshot
//! isolation, both see no row and both apply; under Postgres's REPEATABLE READ the second copy's
//! write to the account both credit fails (40001), as MariaDB's does with
//! `innodb_snapshot_isolation` on (1020); under Postgres's SERIALIZABLE the read of the missing id
//! conflicts (40001) and its retry finds the row; under MySQL's SERIALIZABLE the reads take shared
//! locks and one copy deadlocks (1213) and retries. The failure answers 5xx, so the sender retries it like any other. SQLite's writers
//! are serialized, so it never doubles there. Opt-in: not in the bench's default designs.

use std::time::Duration;

use super::{Delivery, HandleError, Outcome, outcome, work};
use crate::store::{Guard, Store};

/// Works, then checks, applies and records in one transaction.
pub async fn handle(
    store: &Store,
    work_delay: Duration,
    delivery: &Delivery<'_>,
) -> Result<Outcome, HandleError> {
    work(work_delay).await;
    outcome(store.apply_checked(delivery.event, delivery.body_sha256, Guard::None).await?)
}
