//! The receiver designs on trial, one module per kind:
//!
//! | design | module | handler |
//! |---|---|---|
//! | `naive` | [`naive`] | apply the side effect on every delivery |
//! | `check-then-insert` | [`check_then_insert`] | SELECT the id; work; apply; INSERT the id (a conflict answers 500) |
//! | `atomic` | [`atomic`] | one transaction: INSERT id ON CONFLICT DO NOTHING; apply only if inserted |
//! | `created-gte` | [`atomic`] | atomic + apply a plan update only if created >= stored created |
//! | `created-gt` | [`atomic`] | atomic + only if created > stored created |
//! | `version-guard` | [`atomic`] | atomic + `UPDATE ... WHERE plan_version < $new` |
//! | `inbox` | [`inbox`] | store in an inbox and ack; workers apply with the version guard |
//! | `check-in-transaction` | [`check_in_transaction`] | one transaction: SELECT the id, apply, INSERT the id (no UNIQUE: the isolation level decides) |
//! | `split` | [`split`] | INSERT the id and commit; then apply in a second transaction (the crash test's foil) |
//!
//! `split` is not in the bench's default matrix: without crashes it behaves like `atomic`. It is
//! the design the article's crash test shows losing events. Nor is `check-in-transaction`, which
//! the isolation matrix runs (`--isolation`, `--designs`).
//!
//! The simulated work (`--work-delay`) stands where the article's `await io()` stands: after the
//! check in `check-then-insert`, before the transaction in the others, never inside one.

pub mod atomic;
pub mod check_in_transaction;
pub mod check_then_insert;
pub mod inbox;
pub mod naive;
pub mod split;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::event::Event;
use crate::fault::{self, Fault, Faults};
use crate::store::{Applied, Guard, IdConflict, Known, Store, StoreError};

/// A receiver design (the `--design` flag's values).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Design {
    /// Apply on every delivery.
    Naive,
    /// SELECT, work, apply, INSERT.
    CheckThenInsert,
    /// One transaction: INSERT ... ON CONFLICT DO NOTHING, apply if inserted.
    Atomic,
    /// Atomic + created >= guard.
    CreatedGte,
    /// Atomic + created > guard.
    CreatedGt,
    /// Atomic + version guard.
    VersionGuard,
    /// Inbox table, workers apply with the version guard.
    Inbox,
    /// Insert the key and commit, then apply in a second transaction.
    Split,
    /// One transaction: SELECT the id, apply, INSERT the id (a non-unique index: the isolation
    /// level decides).
    CheckInTransaction,
}

impl Design {
    /// The bench's designs, in docs/design.md's order.
    pub const ALL: [Design; 7] = [
        Design::Naive,
        Design::CheckThenInsert,
        Design::Atomic,
        Design::CreatedGte,
        Design::CreatedGt,
        Design::VersionGuard,
        Design::Inbox,
    ];

    /// Every design the receivers know: the bench's, `split` and `check-in-transaction`.
    pub const KNOWN: [Design; 9] = {
        let mut known = [Design::Split; 9];
        known[8] = Design::CheckInTransaction;
        let mut i = 0;
        while i < Self::ALL.len() {
            known[i] = Self::ALL[i];
            i += 1;
        }
        known
    };

    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            Design::Naive => "naive",
            Design::CheckThenInsert => "check-then-insert",
            Design::Atomic => "atomic",
            Design::CreatedGte => "created-gte",
            Design::CreatedGt => "created-gt",
            Design::VersionGuard => "version-guard",
            Design::Inbox => "inbox",
            Design::Split => "split",
            Design::CheckInTransaction => "check-in-transaction",
        }
    }

    /// The ordering guard the design applies plan updates with.
    pub fn guard(self) -> Guard {
        match self {
            Design::Naive
            | Design::CheckThenInsert
            | Design::Atomic
            | Design::Split
            | Design::CheckInTransaction => Guard::None,
            Design::CreatedGte => Guard::CreatedGte,
            Design::CreatedGt => Guard::CreatedGt,
            Design::VersionGuard | Design::Inbox => Guard::Version,
        }
    }
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--design` value that names no design.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown design `{0}` (expected one of: naive, check-then-insert, atomic, created-gte, created-gt, version-guard, inbox, split, check-in-transaction)"
)]
pub struct UnknownDesign(pub String);

impl FromStr for Design {
    type Err = UnknownDesign;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Design::KNOWN.into_iter().find(|d| d.as_str() == s).ok_or_else(|| UnknownDesign(s.to_string()))
    }
}

/// What a receiver did with a delivery it acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The side effect happened now.
    Applied,
    /// Already applied; nothing done.
    Duplicate,
    /// An older plan update, recorded and not applied.
    Stale,
    /// Stored in the inbox for a worker to apply.
    Stored,
}

/// What a delivery that did `applied` is answered: its outcome, or the conflict of its id.
pub(crate) fn outcome(applied: Applied) -> Result<Outcome, HandleError> {
    match applied {
        Applied::Applied => Ok(Outcome::Applied),
        Applied::Duplicate => Ok(Outcome::Duplicate),
        Applied::Stale => Ok(Outcome::Stale),
        Applied::Conflict(c) => Err(HandleError::IdConflict(c)),
    }
}

/// What a delivery whose key was already there is answered.
pub(crate) fn known(known: Known) -> Result<Outcome, HandleError> {
    outcome(known.into())
}

/// Why a delivery was not acknowledged: a 5xx, so the sender retries, or for a conflict a 409.
#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// check-then-insert: the key's INSERT conflicted after the side effect was applied.
    #[error("processed_events already holds `{0}`: another copy inserted it after this one's check")]
    KeyConflictAfterApply(String),
    /// The id is already stored with another body: nothing applied (a 409, not retried).
    #[error(
        "webhook-id `{}` is already stored with another body (stored sha256 {}, received sha256 {}); not applied",
        .0.event_id, .0.stored_sha256, .0.received_sha256
    )]
    IdConflict(IdConflict),
}

/// Everything a design needs to handle one delivery.
#[derive(Debug, Clone)]
pub struct Delivery<'a> {
    /// The `{source}` path segment.
    pub source: &'a str,
    /// The verified event.
    pub event: &'a Event,
    /// The raw body, as signed.
    pub body: &'a str,
    /// The SHA-256 of the raw body, in hex: what tells a duplicate from another body under the
    /// same id.
    pub body_sha256: &'a str,
    /// A fault the request asked for (only ever set on a receiver that honours faults).
    pub fault: Option<Fault>,
    /// How long the side effect takes once `split` has committed its key.
    pub effect_delay: Duration,
}

impl Delivery<'_> {
    /// The injected point: aborts here if this delivery asked to crash after its key.
    pub(crate) fn after_key(&self) {
        if self.crashes_after_key() {
            fault::crash("after the dedupe key, before the side effect");
        }
    }

    /// Whether this delivery asked to crash after its key.
    pub(crate) fn crashes_after_key(&self) -> bool {
        self.fault == Some(Fault::CrashAfterKey)
    }
}

/// Handles one verified delivery with `design`. `faults` holds the inbox rows whose claim must
/// crash.
pub async fn handle(
    design: Design,
    store: &Store,
    work_delay: Duration,
    delivery: &Delivery<'_>,
    faults: &Faults,
) -> Result<Outcome, HandleError> {
    match design {
        Design::Naive => naive::handle(store, work_delay, delivery.event).await,
        Design::CheckThenInsert => check_then_insert::handle(store, work_delay, delivery).await,
        Design::Atomic | Design::CreatedGte | Design::CreatedGt | Design::VersionGuard => {
            atomic::handle(store, work_delay, delivery, design.guard()).await
        }
        Design::Inbox => inbox::handle(store, work_delay, delivery, faults).await,
        Design::Split => split::handle(store, work_delay, delivery).await,
        Design::CheckInTransaction => check_in_transaction::handle(store, work_delay, delivery).await,
    }
}

/// The simulated work (the article's `await io()`).
pub(crate) async fn work(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_names_round_trip() {
        for d in Design::KNOWN {
            assert_eq!(d.as_str().parse::<Design>(), Ok(d));
        }
        let err = "optimistic".parse::<Design>().expect_err("unknown");
        assert!(err.to_string().contains("unknown design `optimistic`"));
    }
}
