//! What a receiver applied, read from where it keeps it: the questions the checker asks.
//!
//! The checker never asks a receiver what it did; it reads the evidence the receiver left. An
//! [`Observer`] is where that evidence is read from. [`Tables`] reads hookbench's own schema
//! (`credit_ledger`, `plan_changes`, `accounts`, the inbox), with its own connections and none of
//! the receivers' code, so the judge shares nothing with what it judges. Observers of receivers
//! hookbench did not write (their own SQL, a sink counting their side effects) implement the same
//! trait.

mod tables;

use std::future::Future;
use std::time::Duration;

use receivers::design::Design;
pub use tables::{Tables, TablesError};

/// The questions the checker asks of a receiver's evidence.
pub trait Observer: Sync {
    /// Calls `f(event_id, times)` for every credit event applied at least once.
    fn applies(
        &self,
        f: &mut (dyn FnMut(&str, u64) + Send),
    ) -> impl Future<Output = Result<(), TablesError>> + Send;

    /// Calls `f(account, plan_version)` for every account the receiver holds.
    fn plan_versions(
        &self,
        f: &mut (dyn FnMut(i64, i64) + Send),
    ) -> impl Future<Output = Result<(), TablesError>> + Send;

    /// Calls `f(seq, account, old_version, new_version)` for every plan change the receiver's
    /// change log holds, in the order it recorded them.
    fn plan_changes(
        &self,
        f: &mut (dyn FnMut(i64, i64, i64, i64) + Send),
    ) -> impl Future<Output = Result<(), TablesError>> + Send;

    /// Plan changes to a lower version.
    fn stale_writes(&self) -> impl Future<Output = Result<u64, TablesError>> + Send;

    /// The sum of every account's credits.
    fn credits_total(&self) -> impl Future<Output = Result<i64, TablesError>> + Send;

    /// The sum of the amounts of every applied credit (equal to the credits' sum unless a credit
    /// and its evidence were not written together).
    fn ledger_total(&self) -> impl Future<Output = Result<i64, TablesError>> + Send;

    /// Deliveries stored and given up on (dead letters).
    fn dead_letters(&self) -> impl Future<Output = Result<u64, TablesError>> + Send;

    /// Bodies refused because their id was already stored with another body.
    fn id_conflicts(&self) -> impl Future<Output = Result<u64, TablesError>> + Send;

    /// Deliveries stored and not yet applied or given up on.
    fn pending(&self) -> impl Future<Output = Result<u64, TablesError>> + Send;
}

/// Waits until nothing is left to apply (the inbox drained); other designs are settled once the
/// sender has its last response. `Err` carries what was still pending after `timeout`.
pub async fn settle(observer: &impl Observer, design: Design, timeout: Duration) -> Result<(), u64> {
    if design != Design::Inbox {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let pending = observer.pending().await.unwrap_or(u64::MAX);
        if pending == 0 {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(pending);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
