//! What the observers found, as the judge reads it: plain data, keyed by the history's event
//! indices. `None` (or no applies at all) means not observed, never "nothing there": an empty
//! state query is `Some` of no accounts.

use std::collections::{BTreeMap, BTreeSet};

pub use super::aggregate::Unexplained;

/// One observer's count of applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applies {
    /// The observer (`tables`, `sql`, `sink`, `balance`, `count`).
    pub observer: String,
    /// Per event of the history, the times it was applied.
    pub counts: Vec<u32>,
    /// Applies of ids that are no event of the history (another run's rows, say).
    pub unknown: u64,
    /// Events this observer could not count: a per-account aggregate whose change does not say
    /// which of the account's credits was applied, or that does not read the account. Its zero
    /// for them is no count.
    pub undecoded: BTreeSet<usize>,
}

impl Applies {
    /// No applies yet, for a history of `events` events.
    pub fn new(observer: &str, events: usize) -> Self {
        Self {
            observer: observer.to_string(),
            counts: vec![0; events],
            unknown: 0,
            undecoded: BTreeSet::new(),
        }
    }

    /// Event `i`'s count, unless this observer could not count it.
    pub fn count(&self, i: usize) -> Option<u32> {
        (!self.undecoded.contains(&i)).then(|| self.counts.get(i).copied().unwrap_or(0))
    }

    /// Adds `n` applies of event `index` (of no event of the history when `None`).
    pub fn add(&mut self, index: Option<usize>, n: u64) {
        match index.and_then(|i| self.counts.get_mut(i)) {
            Some(c) => *c = c.saturating_add(u32::try_from(n).unwrap_or(u32::MAX)),
            None => self.unknown += n,
        }
    }
}

/// One change the database's change log recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// Its place in the log's order.
    pub seq: i64,
    /// The account.
    pub account: i64,
    /// The version before.
    pub old: i64,
    /// The version after.
    pub new: i64,
}

/// The balances and the ledger, to add up against each other and against what was expected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ledger {
    /// The sum of every account's balance.
    pub balances: i64,
    /// The sum of the ledger's rows.
    pub rows: i64,
}

/// Everything observed of one check's or cell's events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// One entry per observer that counts applies (none: applies not observed). Its counts may
    /// hold updates too, when the applied query returns their ids.
    pub applies: Vec<Applies>,
    /// One entry per observer of update applies alone (`--update-applied-query`): kept apart from
    /// `applies`, whose zeros for credits it must not lower (none: not observed apart).
    pub update_applies: Vec<Applies>,
    /// Each account's final version (`None`: not observed).
    pub states: Option<BTreeMap<i64, i64>>,
    /// The events found in the dead-letter store, by index (`None`: not observed).
    pub dead_letters: Option<BTreeSet<usize>>,
    /// The change log, in its order (`None`: the receiver keeps none).
    pub changes: Option<Vec<Change>>,
    /// Bodies refused because their id was stored with another body (`None`: not observed).
    pub id_conflicts: Option<u64>,
    /// The balances and the ledger (`None`: not observed).
    pub ledger: Option<Ledger>,
    /// Accounts whose per-account aggregate changed in a way no apply counts explain (`None`: no
    /// aggregate observed).
    pub unexplained: Option<Vec<Unexplained>>,
}

impl Evidence {
    /// The fewest and the most times any observer saw event `i` applied (`None`: applies not
    /// observed).
    pub fn applied(&self, i: usize) -> Option<(u32, u32)> {
        let mut counts = self.applies.iter().filter_map(|a| a.count(i));
        let first = counts.next()?;
        Some(counts.fold((first, first), |(lo, hi), c| (lo.min(c), hi.max(c))))
    }

    /// The most times any observer, of applies or of update applies, saw event `i` applied
    /// (`None`: neither observed).
    pub fn most_applied(&self, i: usize) -> Option<u32> {
        self.applies.iter().chain(&self.update_applies).filter_map(|a| a.count(i)).max()
    }

    /// Event `i`'s update applies in words, per observer that counted any:
    /// `sql updates: applied 2 times`.
    pub fn describe_update(&self, i: usize) -> String {
        let seen: Vec<String> = self
            .applies
            .iter()
            .chain(&self.update_applies)
            .filter_map(|a| Some(format!("{}: applied {} times", a.observer, a.count(i)?)))
            .collect();
        if seen.is_empty() { "update applies not observed".to_string() } else { seen.join(", ") }
    }

    /// Event `i`'s counts in words, per observer: `sql: applied 2 times, balance: applied 1
    /// times`.
    pub fn describe(&self, i: usize) -> String {
        if self.applies.is_empty() {
            return "applies not observed".to_string();
        }
        self.applies
            .iter()
            .map(|a| match a.count(i) {
                Some(n) => format!("{}: applied {n} times", a.observer),
                None => format!("{}: not decoded", a.observer),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Applies of ids that are no event of the history, the most any observer saw.
    pub fn unknown_applies(&self) -> u64 {
        self.applies.iter().chain(&self.update_applies).map(|a| a.unknown).max().unwrap_or(0)
    }
}
