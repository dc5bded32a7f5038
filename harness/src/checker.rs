//! The independent checker: correctness figures computed from the database and the workload
//! alone, never from counters the receivers keep.
//!
//! It asks an [`Observer`] (for hookbench's own receivers, [`crate::observer::Tables`], which
//! reads `credit_ledger`, `plan_changes`, `accounts` and the inbox) and compares the answers with
//! what the workload says should be there.

use serde::{Deserialize, Serialize};

use crate::observer::{Observer, TablesError};
use crate::workload::Workload;

/// The correctness figures docs/design.md names: what the checker reads from a database, and what the
/// model counts for the same workload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Figures {
    /// Credit events applied more than once.
    pub dup_events: u64,
    /// Applies beyond the first, summed over credit events.
    pub extra_applies: u64,
    /// Credit events never applied.
    pub lost: u64,
    /// Plan changes to a lower version.
    pub stale_writes: u64,
    /// Accounts whose final plan version is not their latest.
    pub stale_accounts: u64,
    /// The sum of all accounts' credits.
    pub ledger: i64,
    /// What the ledger should be: every credit applied once.
    pub expected: i64,
}

/// What the checker found in one cell's database.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The correctness figures.
    #[serde(flatten)]
    pub figures: Figures,
    /// The sum of the ledger rows' amounts; differs from `ledger` only if a credit and its
    /// ledger row were not written together.
    pub ledger_rows: i64,
    /// Ledger rows whose event id is not a credit event of the workload.
    pub unknown_events: u64,
    /// Inbox rows left as dead letters.
    pub dead_letters: u64,
    /// Poison events in the workload (not counted in `lost` or `expected`).
    #[serde(default)]
    pub poisoned: u64,
    /// Poison events with a ledger row (a refused credit must never be applied).
    #[serde(default)]
    pub poison_applied: u64,
    /// Bodies refused because their id was already stored with another body (`id_conflicts`
    /// rows: one per id and conflicting body).
    #[serde(default)]
    pub id_conflicts: u64,
    /// Per workload event: its ledger rows (credits; 0 for updates), for the run's history.
    #[serde(skip)]
    pub applies: Vec<u32>,
    /// Per account: its plan version at the end, for the run's history.
    #[serde(skip)]
    pub final_versions: Vec<i64>,
}

impl Verdict {
    /// Whether every event was applied exactly once and nothing was half written.
    pub fn exactly_once(&self) -> bool {
        let f = &self.figures;
        f.dup_events == 0 && f.lost == 0 && f.ledger == f.expected && self.ledger_rows == f.ledger
    }
}

fn event_index(id: &str) -> Option<usize> {
    id.strip_prefix("evt_")?.parse().ok()
}

/// Asks `observer` what was applied and judges it against `workload`.
pub async fn check(observer: &impl Observer, workload: &Workload) -> Result<Verdict, TablesError> {
    let n = workload.events.len();
    let mut applies = vec![0u32; n];
    let mut unknown_events = 0u64;
    observer
        .applies(&mut |id, count| match event_index(id) {
            Some(i) if i < n && workload.events[i].is_credit() => {
                applies[i] = u32::try_from(count).unwrap_or(u32::MAX);
            }
            _ => unknown_events += 1,
        })
        .await?;
    let mut f = Figures { expected: workload.expected_ledger(), ..Figures::default() };
    let (mut poisoned, mut poison_applied) = (0u64, 0u64);
    for e in workload.events.iter().filter(|e| e.is_credit()) {
        if workload.is_poisoned(e.idx as usize) {
            poisoned += 1;
            poison_applied += u64::from(applies[e.idx as usize] > 0);
            if let crate::workload::EventKind::Credit { amount } = e.kind {
                f.expected -= amount;
            }
            continue;
        }
        match applies[e.idx as usize] {
            0 => f.lost += 1,
            1 => {}
            c => {
                f.dup_events += 1;
                f.extra_applies += u64::from(c - 1);
            }
        }
    }
    // Accounts never written still have version 0: stale if they had a plan update.
    let mut final_version = vec![0i64; workload.latest_plan.len()];
    observer
        .plan_versions(&mut |account, version| {
            if let Some(slot) = usize::try_from(account).ok().and_then(|a| final_version.get_mut(a)) {
                *slot = version;
            }
        })
        .await?;
    f.stale_accounts = workload
        .latest_plan
        .iter()
        .zip(&final_version)
        .filter(|&(&latest, &now)| latest > 0 && now != i64::from(latest))
        .count() as u64;
    f.stale_writes = observer.stale_writes().await?;
    f.ledger = observer.credits_total().await?;
    Ok(Verdict {
        figures: f,
        ledger_rows: observer.ledger_total().await?,
        unknown_events,
        dead_letters: observer.dead_letters().await?,
        id_conflicts: observer.id_conflicts().await?,
        poisoned,
        poison_applied,
        applies,
        final_versions: final_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_map_to_indexes() {
        assert_eq!(event_index("evt_000132"), Some(132));
        assert_eq!(event_index("evt_1234567"), Some(1_234_567));
        assert_eq!(event_index("evt_c00001"), None);
        assert_eq!(event_index("msg_1"), None);
    }
}
