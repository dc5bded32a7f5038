//! The two places observers report into: a [`Snapshot`] keeps what they saw by id (small checks,
//! settling by comparing two looks, several checks judged from one look), a [`Gather`] maps it
//! straight into one history's [`Evidence`] (a bench cell of any size, no string per event).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Range;

use super::{Record, Sees};
use crate::judge::{Applies, Change, CreditBook, Evidence, History, Ledger, Measure, Unexplained};

/// What the observers saw at one moment, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Per observer that counts applies, the count per event id.
    pub applied: Vec<(String, HashMap<String, u64>)>,
    /// Per observer that counts update applies alone, the count per event id.
    pub update_applied: Vec<(String, HashMap<String, u64>)>,
    /// Each account's final version (`None`: not observed).
    pub states: Option<BTreeMap<i64, i64>>,
    /// The dead letters' ids (`None`: not observed).
    pub dead_letters: Option<BTreeSet<String>>,
    /// The change log (`None`: not observed).
    pub changes: Option<Vec<Change>>,
    /// The balances and the ledger (`None`: not observed).
    pub ledger: Option<Ledger>,
    /// Bodies refused for their id (`None`: not observed).
    pub id_conflicts: Option<u64>,
    /// Per per-account aggregate (`balance`, `count`), each account's value: as read, or, in a
    /// snapshot [`super::Observers`] took after their baseline, its change since then.
    pub aggregates: Vec<(Measure, BTreeMap<i64, i64>)>,
    /// Per aggregate, once [`Snapshot::resolve`]d, the credits whose account's change it could
    /// not read as counts (their counts are in [`Snapshot::applied`] under the aggregate's name).
    pub undecoded: Vec<(String, HashSet<String>)>,
    /// Once resolved, the accounts whose aggregate changed in a way no counts explain (`None`: no
    /// aggregate observed).
    pub unexplained: Option<Vec<Unexplained>>,
    /// Only ids that start with this are kept (`None`: every id).
    only: Option<String>,
    /// Only accounts in this range are kept of the aggregates (`None`: every account).
    accounts: Option<Range<i64>>,
}

impl Snapshot {
    /// A snapshot that keeps only the ids starting with `prefix`: a run's own. The table an
    /// applied query reads may hold millions of other events (earlier runs, production rows),
    /// which no verdict of this run reads; kept, 5,000,000 of them took 472 MiB.
    pub fn only_ids(prefix: &str) -> Self {
        Self { only: Some(prefix.to_string()), ..Self::default() }
    }

    /// This snapshot, keeping of the aggregates only the accounts in `accounts`: a run's own.
    /// The table a balance query reads may hold every customer of the app, which no verdict of
    /// this run reads.
    #[must_use]
    pub fn only_accounts(self, accounts: Range<i64>) -> Self {
        Self { accounts: Some(accounts), ..self }
    }

    fn keeps(&self, id: &str) -> bool {
        self.only.as_deref().is_none_or(|p| id.starts_with(p))
    }

    /// Whether the aggregates keep `account`.
    pub fn observes_account(&self, account: i64) -> bool {
        self.accounts.as_ref().is_none_or(|r| r.contains(&account))
    }

    fn aggregate_of(&mut self, measure: Measure) -> &mut BTreeMap<i64, i64> {
        let i = match self.aggregates.iter().position(|(m, _)| *m == measure) {
            Some(i) => i,
            None => {
                self.aggregates.push((measure, BTreeMap::new()));
                self.aggregates.len() - 1
            }
        };
        &mut self.aggregates[i].1
    }

    /// This snapshot with each aggregate's values made changes since `baseline`'s.
    #[must_use]
    pub fn since(mut self, baseline: &Snapshot) -> Self {
        for (measure, values) in &mut self.aggregates {
            let before = baseline.aggregates.iter().find(|(m, _)| m == measure).map(|(_, v)| v);
            if let Some(before) = before {
                *values = crate::judge::aggregate::changes(before, values);
            } else {
                values.retain(|_, v| *v != 0);
            }
        }
        self
    }

    /// Reads each aggregate's changes against `book`, every credit the run sent: the counts go
    /// into [`Snapshot::applied`] under the aggregate's name (`balance`, `count`), the credits it
    /// cannot count into [`Snapshot::undecoded`], the changes nothing explains into
    /// [`Snapshot::unexplained`].
    #[must_use]
    pub fn resolve(mut self, book: &CreditBook) -> Self {
        if self.aggregates.is_empty() {
            return self;
        }
        let unexplained = self.unexplained.get_or_insert_default();
        for (measure, changes) in &self.aggregates {
            let accounts = self.accounts.clone();
            let observed = |a: i64| accounts.as_ref().is_none_or(|r| r.contains(&a));
            let r = book.resolve(measure.name(), *measure, changes, &observed);
            let counts = counts_of(&mut self.applied, measure.name());
            counts.extend(r.counts.into_iter().map(|(id, n)| (id, u64::from(n))));
            counts_of(&mut self.undecoded, measure.name()).extend(r.undecoded);
            unexplained.extend(r.unexplained);
        }
        self
    }

    /// Whether `observer` counts only the credits it decoded (a per-account aggregate), and which
    /// ids it could not.
    fn decoding(&self, observer: &str) -> Option<&HashSet<String>> {
        self.undecoded.iter().find(|(name, _)| name == observer).map(|(_, ids)| ids)
    }

    fn counts(&mut self, observer: &str) -> &mut HashMap<String, u64> {
        counts_of(&mut self.applied, observer)
    }

    /// The fewest and the most times any observer that counted `id` saw it applied (0 and 0 with
    /// none).
    pub fn applied(&self, id: &str) -> (u64, u64) {
        let counts = self.applied.iter().filter_map(|(observer, m)| match self.decoding(observer) {
            Some(_) => m.get(id).copied(),
            None => Some(m.get(id).copied().unwrap_or(0)),
        });
        (counts.clone().min().unwrap_or(0), counts.max().unwrap_or(0))
    }

    /// What was seen of `history`'s events, as the judge reads it. A per-account aggregate counts
    /// only the credits it decoded; the unexplained changes are those on the accounts `history`
    /// sent to, and those on accounts the run sent nothing to.
    pub fn evidence(&self, history: &History) -> Evidence {
        let applies = |per: &[(String, HashMap<String, u64>)], suffix: &str| {
            per.iter()
                .map(|(observer, counts)| {
                    let mut a = Applies::new(&format!("{observer}{suffix}"), history.len());
                    for (id, &n) in counts {
                        a.add(history.index(id), n);
                    }
                    if self.decoding(observer).is_some() {
                        let decoded = |i: usize| counts.contains_key(&history.id(i));
                        a.undecoded = (0..history.len()).filter(|&i| !decoded(i)).collect();
                    }
                    a
                })
                .collect()
        };
        let accounts: BTreeSet<i64> = history.events().iter().map(|e| e.account).collect();
        let unexplained = self
            .unexplained
            .as_ref()
            .map(|u| u.iter().filter(|u| !u.named || accounts.contains(&u.account)).cloned().collect());
        Evidence {
            applies: applies(&self.applied, ""),
            update_applies: applies(&self.update_applied, UPDATES),
            states: self.states.clone(),
            dead_letters: self
                .dead_letters
                .as_ref()
                .map(|d| d.iter().filter_map(|id| history.index(id)).collect()),
            changes: self.changes.clone(),
            id_conflicts: self.id_conflicts,
            ledger: self.ledger,
            unexplained,
        }
    }
}

/// What an observer of update applies alone is called in evidence lines: `sql updates`.
const UPDATES: &str = " updates";

/// `observer`'s entry in `per` (its counts, its undecoded ids), added empty if it has none yet.
fn counts_of<'a, T: Default>(per: &'a mut Vec<(String, T)>, observer: &str) -> &'a mut T {
    let i = match per.iter().position(|(name, _)| name == observer) {
        Some(i) => i,
        None => {
            per.push((observer.to_string(), T::default()));
            per.len() - 1
        }
    };
    &mut per[i].1
}

impl Record for Snapshot {
    fn sees(&mut self, observer: &str, sees: Sees) {
        if sees.applies {
            self.counts(observer);
        }
        if sees.update_applies {
            counts_of(&mut self.update_applied, observer);
        }
        if sees.states {
            self.states.get_or_insert_default();
        }
        if sees.dead_letters {
            self.dead_letters.get_or_insert_default();
        }
        if sees.changes {
            self.changes.get_or_insert_default();
        }
    }

    fn applied(&mut self, observer: &str, id: &str, times: u64) {
        let keeps = self.keeps(id);
        let counts = self.counts(observer);
        if keeps {
            *counts.entry(id.to_string()).or_insert(0) += times;
        }
    }

    fn update_applied(&mut self, observer: &str, id: &str, times: u64) {
        let keeps = self.keeps(id);
        let counts = counts_of(&mut self.update_applied, observer);
        if keeps {
            *counts.entry(id.to_string()).or_insert(0) += times;
        }
    }

    fn state(&mut self, account: i64, version: i64) {
        self.states.get_or_insert_default().insert(account, version);
    }

    fn dead_letter(&mut self, id: &str) {
        let keeps = self.keeps(id);
        let dead = self.dead_letters.get_or_insert_default();
        if keeps {
            dead.insert(id.to_string());
        }
    }

    fn change(&mut self, change: Change) {
        self.changes.get_or_insert_default().push(change);
    }

    fn ledger(&mut self, ledger: Ledger) {
        self.ledger = Some(ledger);
    }

    fn id_conflicts(&mut self, n: u64) {
        *self.id_conflicts.get_or_insert(0) += n;
    }

    fn aggregate(&mut self, measure: Measure, row: Option<(i64, i64)>) {
        let keeps = row.is_some_and(|(account, _)| self.observes_account(account));
        let values = self.aggregate_of(measure);
        if let (true, Some((account, value))) = (keeps, row) {
            // Rows of one account add up: `SELECT customer, amount FROM credits` is a balance.
            let held = values.entry(account).or_insert(0);
            *held = held.saturating_add(value);
        }
    }
}

/// The observers' reports mapped straight into one history's evidence.
pub struct Gather<'a> {
    history: &'a History,
    /// What was gathered.
    pub evidence: Evidence,
}

impl<'a> Gather<'a> {
    /// Gathers evidence of `history`'s events.
    pub fn new(history: &'a History) -> Self {
        Self { history, evidence: Evidence::default() }
    }

    fn applies(&mut self, observer: &str) -> &mut Applies {
        applies_of(&mut self.evidence.applies, observer, self.history.len())
    }

    fn update_applies(&mut self, observer: &str) -> &mut Applies {
        let name = format!("{observer}{UPDATES}");
        applies_of(&mut self.evidence.update_applies, &name, self.history.len())
    }
}

/// `observer`'s applies in `list`, added empty (for `events` events) if it has none yet.
fn applies_of<'a>(list: &'a mut Vec<Applies>, observer: &str, events: usize) -> &'a mut Applies {
    let i = match list.iter().position(|a| a.observer == observer) {
        Some(i) => i,
        None => {
            list.push(Applies::new(observer, events));
            list.len() - 1
        }
    };
    &mut list[i]
}

impl Record for Gather<'_> {
    fn sees(&mut self, observer: &str, sees: Sees) {
        if sees.applies {
            self.applies(observer);
        }
        if sees.update_applies {
            self.update_applies(observer);
        }
        let e = &mut self.evidence;
        if sees.states {
            e.states.get_or_insert_default();
        }
        if sees.dead_letters {
            e.dead_letters.get_or_insert_default();
        }
        if sees.changes {
            e.changes.get_or_insert_default();
        }
    }

    fn applied(&mut self, observer: &str, id: &str, times: u64) {
        let index = self.history.index(id);
        self.applies(observer).add(index, times);
    }

    fn update_applied(&mut self, observer: &str, id: &str, times: u64) {
        let index = self.history.index(id);
        self.update_applies(observer).add(index, times);
    }

    fn state(&mut self, account: i64, version: i64) {
        self.evidence.states.get_or_insert_default().insert(account, version);
    }

    fn dead_letter(&mut self, id: &str) {
        if let Some(i) = self.history.index(id) {
            self.evidence.dead_letters.get_or_insert_default().insert(i);
        }
    }

    fn change(&mut self, change: Change) {
        self.evidence.changes.get_or_insert_default().push(change);
    }

    fn ledger(&mut self, ledger: Ledger) {
        self.evidence.ledger = Some(ledger);
    }

    fn id_conflicts(&mut self, n: u64) {
        *self.evidence.id_conflicts.get_or_insert(0) += n;
    }

    /// A bench's observers read hookbench's own tables, which name every event: no aggregate
    /// reaches a gather (an audit decodes them against every credit it sent, in a snapshot).
    fn aggregate(&mut self, _measure: Measure, _row: Option<(i64, i64)>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{Answers, Expect, Ids, Kind, Sent};

    fn history(ids: &[&str]) -> History {
        let sent = Sent {
            kind: Kind::Credit { amount: 1 },
            account: 0,
            expect: Expect::Once,
            answers: Answers::default(),
        };
        History::new(vec![sent; ids.len()], Ids::Listed(ids.iter().map(|s| s.to_string()).collect()))
    }

    #[test]
    fn an_observer_that_sees_something_and_reports_nothing_observed_nothing_there() {
        let sees = Sees { applies: true, states: true, ..Sees::default() };
        let mut s = Snapshot::default();
        s.sees("sql", sees);
        let e = s.evidence(&history(&["a"]));
        assert_eq!(e.applies.len(), 1, "applies observed, none there");
        assert_eq!(e.states, Some(BTreeMap::new()), "zero accounts, not unobserved");
        assert_eq!(e.dead_letters, None, "not observed at all");
    }

    #[test]
    fn a_snapshot_and_a_gather_give_the_same_evidence() {
        let h = history(&["a", "b", "c"]);
        let (mut s, mut g) = (Snapshot::default(), Gather::new(&h));
        for r in [&mut s as &mut dyn Record, &mut g] {
            r.sees("sql", Sees { applies: true, dead_letters: true, ..Sees::default() });
            r.applied("sql", "b", 2);
            r.applied("sql", "zzz", 1);
            r.update_applied("sql", "c", 3);
            r.dead_letter("c");
            r.state(4, 2);
        }
        assert_eq!(s.evidence(&h), g.evidence);
        assert_eq!(g.evidence.applies[0].counts, [0, 2, 0]);
        assert_eq!(g.evidence.applies[0].unknown, 1);
        assert_eq!(g.evidence.update_applies[0].counts, [0, 0, 3], "kept apart from the credits'");
        assert_eq!(g.evidence.update_applies[0].observer, "sql updates");
    }

    #[test]
    fn an_observer_of_update_applies_that_reports_none_observed_none() {
        let mut s = Snapshot::default();
        s.sees("sql", Sees { update_applies: true, ..Sees::default() });
        let e = s.evidence(&history(&["a"]));
        assert_eq!((e.applies.len(), e.update_applies.len()), (0, 1));
        assert_eq!(e.update_applies[0].counts, [0]);
        assert!(Snapshot::default().evidence(&history(&["a"])).update_applies.is_empty(), "not observed");
    }

    #[test]
    fn a_snapshot_of_one_run_keeps_only_its_ids_and_still_observes() {
        let mut s = Snapshot::only_ids("run7_");
        s.sees("db", Sees { applies: true, dead_letters: true, ..Sees::default() });
        Record::applied(&mut s, "db", "run7_evt_1", 2);
        Record::applied(&mut s, "db", "run6_evt_1", 1);
        s.dead_letter("other");
        assert_eq!(s.applied("run7_evt_1"), (2, 2));
        assert_eq!(s.applied("run6_evt_1"), (0, 0), "another run's row is not kept");
        assert_eq!(s.applied[0].1.len(), 1);
        assert_eq!(s.dead_letters, Some(BTreeSet::new()), "observed, and empty of this run's");
        let mut all = Snapshot::default();
        Record::applied(&mut all, "db", "run6_evt_1", 1);
        assert_eq!(all.applied("run6_evt_1"), (1, 1), "unfiltered keeps every id");
    }
}
