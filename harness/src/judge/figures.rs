//! The correctness figures of a bench cell (docs/design.md names them), as the verdict counts
//! them and as the model counts them for the same workload.

use serde::{Deserialize, Serialize};

use super::class::Class;
use super::verdict::Verdict;

/// A cell's correctness figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Figures {
    /// Events applied more than once (credits, and updates where their applies are observed).
    pub dup_events: u64,
    /// Applies beyond the first, summed over duplicated events (credits, and updates where their
    /// applies are observed).
    pub extra_applies: u64,
    /// Credit events acknowledged with a 2xx and never applied.
    pub lost: u64,
    /// Events never acknowledged and never applied (refused, failed or given up).
    #[serde(default)]
    pub never_applied: u64,
    /// Plan changes to a lower version.
    pub stale_writes: u64,
    /// Accounts whose final plan version is below the latest acknowledged.
    pub stale_accounts: u64,
    /// The sum of all accounts' credits.
    pub ledger: i64,
    /// What the ledger should be: every credit applied once.
    pub expected: i64,
}

impl From<&Verdict> for Figures {
    fn from(v: &Verdict) -> Self {
        let t = &v.tally;
        Self {
            dup_events: t.count(Class::Duplicate),
            extra_applies: t.extra_applies,
            lost: t.count(Class::Lost),
            never_applied: t.count(Class::NeverApplied),
            stale_writes: t.stale_write_changes,
            stale_accounts: t.count(Class::StaleAccount),
            ledger: t.ledger.map_or(0, |l| l.balances),
            expected: t.expected_ledger,
        }
    }
}
