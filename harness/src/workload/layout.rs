//! How an audit lays its credits out over accounts, where per-account aggregates are its
//! evidence: what a run records, so that `merge` lays a sharded audit's load out as its shards
//! did. The accounts themselves are handed out by the audit (`audit::accounts`).

use serde::{Deserialize, Serialize};

/// How the audit lays its credits out over accounts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Layout {
    /// No aggregate is observed: the loads' credits share the loads' accounts as the article's
    /// workload spreads them, each credit's applies read by its id.
    #[default]
    Pooled,
    /// Every credit to an account of its own, fresh in the run's range: its account's change,
    /// divided by what one apply adds, is its apply count.
    Own,
    /// Every credit among `accounts` accounts from the run's base, its amount a place value that
    /// no other apply counts imitate, none above `max_amount`.
    Scarce {
        /// The accounts credits share (`--accounts`).
        accounts: u32,
        /// The largest amount a credit may carry (`--max-amount`).
        max_amount: i64,
    },
}

impl Layout {
    /// The layout in words, for the report.
    pub fn describe(self) -> String {
        match self {
            Self::Pooled => "credits over the load's accounts".to_string(),
            Self::Own => "one account per credit".to_string(),
            Self::Scarce { accounts, max_amount } => {
                format!("credits over {accounts} accounts, amounts as place values up to {max_amount}")
            }
        }
    }
}
