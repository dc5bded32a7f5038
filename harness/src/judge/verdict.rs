//! [`judge`]: the one function from what was sent and answered, and what was observed, to a
//! verdict: every anomaly found (by class, for every event and account), the figures, the first
//! witnesses of each class, and whether the check passed.

use std::collections::{BTreeMap, BTreeSet};

use super::class::{AccountView, Class, ClassSet, Detector, EventView, Needs, RunView, TwinView};
use super::evidence::{Evidence, Ledger};
use super::history::{Expect, History, Kind};

/// What a check is held to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Classes that fail it.
    pub fail: ClassSet,
    /// Classes reported without failing it.
    pub warn: ClassSet,
    /// Evidence without which it cannot pass (its verdict is then [`Outcome::Unjudged`]).
    pub require: Vec<Needs>,
    /// Witnesses kept per class.
    pub witnesses: usize,
}

impl Rules {
    /// Every class fails but the advisory ones ([`Class::ADVISORY`]), which warn; applies must be
    /// observed.
    pub fn strict() -> Self {
        let warn = Class::ADVISORY.iter().fold(ClassSet::EMPTY, |set, &c| set.with(c));
        let fail = Class::ADVISORY.iter().fold(ClassSet::all(), |set, &c| set.without(c));
        Self { fail, warn, require: vec![Needs::Applies], witnesses: 5 }
    }

    /// These rules, with `require` instead.
    #[must_use]
    pub fn requiring(self, require: &[Needs]) -> Self {
        Self { require: require.to_vec(), ..self }
    }

    /// These rules with `class` neither failing nor warning.
    #[must_use]
    pub fn ignoring(self, class: Class) -> Self {
        Self { fail: self.fail.without(class), warn: self.warn.without(class), ..self }
    }

    fn looked_for(&self) -> ClassSet {
        self.fail.or(self.warn)
    }
}

/// Whether a check passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every expectation held, on evidence of every kind the rules require.
    Pass,
    /// An anomaly of a failing class was found.
    Fail,
    /// Nothing failed, but evidence the rules require, or the evidence of an event expected
    /// applied, was not observed: not a pass.
    Unjudged(Vec<Needs>),
    /// Nothing was sent: nothing can pass.
    NothingSent,
}

/// What an anomaly is found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    /// Event `i` of the history.
    Event(usize),
    /// A pair of events, the first and the second, that restate one change.
    Pair(usize, usize),
    /// An account.
    Account(i64),
    /// The run.
    Run,
}

/// One anomaly found, as a witness shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Its class.
    pub class: Class,
    /// What it is found in.
    pub subject: Subject,
    /// What is wrong, in a few words.
    pub problem: String,
    /// What the observers saw of it.
    pub observed: String,
}

/// One account's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountVerdict {
    /// The account.
    pub account: i64,
    /// The highest version acknowledged for it.
    pub latest_acked: Option<i64>,
    /// Its final version, as observed.
    pub final_version: Option<i64>,
    /// The classes found in it.
    pub classes: ClassSet,
}

/// The counts a verdict rests on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Events sent.
    pub events: u64,
    /// Attempts sent, all events together.
    pub attempts: u64,
    /// Events expected applied exactly once.
    pub expected: u64,
    /// Events acknowledged with a 2xx.
    pub acked: u64,
    /// Events seen applied (by every observer; an update: its account reached its version, or,
    /// where update applies are observed, an observer saw it applied).
    pub applied: u64,
    /// Events (accounts, runs) found with each class.
    pub found: BTreeMap<Class, u64>,
    /// Applies beyond the first, over the duplicated events.
    pub extra_applies: u64,
    /// Changes in the change log that lowered a version.
    pub stale_write_changes: u64,
    /// Accounts the history's updates are for.
    pub accounts: u64,
    /// Of those, accounts found in the state evidence (`None`: states not observed).
    pub accounts_observed: Option<u64>,
    /// Applies of ids no event of the history has.
    pub unknown_applies: u64,
    /// What the balances must add up to: every credit expected once, applied once.
    pub expected_ledger: i64,
    /// The balances and the ledger, when observed.
    pub ledger: Option<Ledger>,
    /// Events expected applied once whose evidence was not observed (a credit without an observer
    /// of applies, an update without states): no verdict can pass over them.
    pub unobserved: u64,
    /// Pairs sent that restate one change under two ids.
    pub pairs: u64,
    /// Credits sent.
    pub credits: u64,
    /// Whether update applies were observed: an observer of them alone, or an applies observer
    /// that counted an update (only then can an update's duplicate be found).
    pub update_applies_observed: bool,
    /// Poison events sent.
    pub poison: u64,
    /// Of those, applied.
    pub poison_applied: u64,
    /// The evidence observed.
    pub observed: BTreeSet<Needs>,
}

impl Tally {
    /// How many events (accounts, runs) have `class`.
    pub fn count(&self, class: Class) -> u64 {
        self.found.get(&class).copied().unwrap_or(0)
    }
}

/// A verdict: every anomaly, the figures, the witnesses, the outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Pass, fail, unjudged or nothing sent.
    pub outcome: Outcome,
    /// The counts.
    pub tally: Tally,
    /// Per event of the history, the classes found in it.
    pub events: Vec<ClassSet>,
    /// Per account (of the history's updates and the change log), in order.
    pub accounts: Vec<AccountVerdict>,
    /// The classes found in the run as a whole.
    pub run: ClassSet,
    /// The first witnesses of each class ([`Rules::witnesses`] of each), failing classes first.
    pub witnesses: Vec<Finding>,
    rules: Rules,
}

/// Judges `history` by `evidence` under `rules`.
pub fn judge(history: &History, evidence: &Evidence, rules: &Rules) -> Verdict {
    let mut j = Judging::new(history, evidence, rules);
    for i in 0..history.len() {
        j.event(i);
    }
    j.accounts();
    j.run();
    j.finish()
}

/// Whether `evidence` observes update applies for `history`: an observer of them alone, or an
/// applies observer that counted one of its updates. An applied query that counts only credits
/// returns no update's id, and its zero must not read as an update applied no time.
fn updates_observed(history: &History, evidence: &Evidence) -> bool {
    let is_update = |i: usize| history.events().get(i).is_some_and(|s| matches!(s.kind, Kind::Update { .. }));
    !evidence.update_applies.is_empty()
        || evidence.applies.iter().any(|a| a.counts.iter().enumerate().any(|(i, &n)| n > 0 && is_update(i)))
}

/// Per account, the highest version `evidence`'s change log recorded it reaching.
fn peaks(evidence: &Evidence) -> BTreeMap<i64, i64> {
    let mut peaks = BTreeMap::new();
    for c in evidence.changes.iter().flatten() {
        let peak = peaks.entry(c.account).or_insert(c.new);
        *peak = (*peak).max(c.new);
    }
    peaks
}

/// A pair's events in words: each one's id, answers and applies.
fn describe_pair(history: &History, evidence: &Evidence, subject: Subject) -> String {
    let Subject::Pair(first, second) = subject else { return String::new() };
    let one = |i: usize| {
        let answers = history.events().get(i).map_or_else(String::new, |s| s.answers.describe());
        format!("{} ({answers}; {})", history.id(i), evidence.describe(i))
    };
    format!("first {}, then {}", one(first), one(second))
}

/// A verdict being reached.
struct Judging<'a> {
    history: &'a History,
    evidence: &'a Evidence,
    rules: &'a Rules,
    looked_for: ClassSet,
    tally: Tally,
    events: Vec<ClassSet>,
    accounts: Vec<AccountVerdict>,
    run: ClassSet,
    witnesses: BTreeMap<Class, Vec<Finding>>,
    /// The evidence missing for events expected once.
    missing: BTreeSet<Needs>,
    /// Per account, the highest version its change log recorded it reaching (empty: no change
    /// log). An update overwritten later by an older version was still applied.
    peaks: BTreeMap<i64, i64>,
}

impl<'a> Judging<'a> {
    fn new(history: &'a History, evidence: &'a Evidence, rules: &'a Rules) -> Self {
        let mut observed = BTreeSet::from([Needs::Answers]);
        let present = [
            (Needs::Applies, !evidence.applies.is_empty()),
            (Needs::States, evidence.states.is_some()),
            (Needs::DeadLetters, evidence.dead_letters.is_some()),
            (Needs::Changes, evidence.changes.is_some()),
            (Needs::IdConflicts, evidence.id_conflicts.is_some()),
            (Needs::Ledger, evidence.ledger.is_some()),
            (Needs::Aggregates, evidence.unexplained.is_some()),
        ];
        observed.extend(present.into_iter().filter(|(_, p)| *p).map(|(n, _)| n));
        let tally = Tally {
            events: history.len() as u64,
            credits: history.events().iter().filter(|s| matches!(s.kind, Kind::Credit { .. })).count() as u64,
            update_applies_observed: updates_observed(history, evidence),
            pairs: history.pairs() as u64,
            unknown_applies: evidence.unknown_applies(),
            ledger: evidence.ledger,
            observed,
            ..Tally::default()
        };
        Self {
            history,
            evidence,
            rules,
            looked_for: rules.looked_for(),
            tally,
            events: vec![ClassSet::EMPTY; history.len()],
            accounts: Vec::new(),
            run: ClassSet::EMPTY,
            witnesses: BTreeMap::new(),
            missing: BTreeSet::new(),
            peaks: peaks(evidence),
        }
    }

    /// Counts `class` in `subject`, keeping the witness while there is room.
    fn found(&mut self, class: Class, subject: Subject, problem: String, observed: impl FnOnce() -> String) {
        *self.tally.found.entry(class).or_insert(0) += 1;
        let list = self.witnesses.entry(class).or_default();
        if list.len() < self.rules.witnesses {
            list.push(Finding { class, subject, problem, observed: observed() });
        }
    }

    fn view(&self, i: usize) -> EventView<'a> {
        let sent = &self.history.events()[i];
        let applied = match sent.kind {
            Kind::Credit { .. } => self.evidence.applied(i),
            Kind::Update { version } => self.evidence.states.as_ref().map(|s| {
                let reached = s.get(&sent.account).is_some_and(|&v| v >= version)
                    || self.peaks.get(&sent.account).is_some_and(|&v| v >= version);
                (u32::from(reached), u32::from(reached))
            }),
        };
        let dead_lettered = self.evidence.dead_letters.as_ref().map(|d| d.contains(&i));
        let handled = match sent.kind {
            Kind::Update { .. } if self.tally.update_applies_observed => self.evidence.most_applied(i),
            _ => None,
        };
        let twin = self
            .history
            .twin(i)
            .map(|t| TwinView { first: t.first, applied: self.evidence.applied(t.other) });
        EventView { sent, applied, dead_lettered, handled, twin }
    }

    fn event(&mut self, i: usize) {
        let view = self.view(i);
        let sent = view.sent;
        let t = &mut self.tally;
        t.attempts += u64::from(sent.answers.attempts);
        t.acked += u64::from(sent.answers.acked);
        let handled = view.handled.unwrap_or(0);
        t.applied += u64::from(view.applied.is_some_and(|(fewest, _)| fewest > 0) || handled > 0);
        let (most, credit) = (view.applied.map_or(0, |(_, m)| m), matches!(sent.kind, Kind::Credit { .. }));
        if sent.expect == Expect::Once && view.applied.is_none() {
            t.unobserved += 1;
            self.missing.insert(if credit { Needs::Applies } else { Needs::States });
        } else if credit && view.applied.is_none() {
            // A credit that must not be applied, or may be, that no observer counted (an
            // aggregate that cannot say which of an account's credits it saw): nothing shows it
            // was not applied.
            self.missing.insert(Needs::Applies);
        }
        match (sent.expect, sent.kind) {
            (Expect::Once, Kind::Credit { amount }) => {
                t.expected += 1;
                t.expected_ledger += amount;
            }
            (Expect::Once, Kind::Update { .. }) => t.expected += 1,
            (Expect::Poison, _) => {
                t.poison += 1;
                t.poison_applied += u64::from(most > 0);
            }
            _ => {}
        }
        for class in self.looked_for.iter() {
            let Detector::Event(detect) = class.detector() else { continue };
            if let Some(problem) = detect(&view) {
                if class == Class::Duplicate {
                    self.tally.extra_applies += u64::from(if credit { most } else { handled } - 1);
                }
                self.events[i].insert(class);
                let update = |v: i64| match self.evidence.states.as_ref() {
                    Some(s) => s.get(&v).map_or("no state for the account".to_string(), |f| {
                        format!("the account's final version {f}")
                    }),
                    None => "states not observed".to_string(),
                };
                let pair = self.history.twin(i).filter(|_| class == Class::PAIRED);
                let subject = pair.map_or(Subject::Event(i), |t| Subject::Pair(t.other, i));
                let observed = || match sent.kind {
                    _ if pair.is_some() => describe_pair(self.history, self.evidence, subject),
                    Kind::Credit { .. } => self.evidence.describe(i),
                    Kind::Update { .. } if class == Class::Duplicate => self.evidence.describe_update(i),
                    Kind::Update { .. } => update(sent.account),
                };
                self.found(class, subject, problem, observed);
            }
        }
    }

    fn accounts(&mut self) {
        let mut latest: BTreeMap<i64, Option<i64>> = BTreeMap::new();
        for s in self.history.events() {
            if let Kind::Update { version } = s.kind {
                let slot = latest.entry(s.account).or_insert(None);
                if s.answers.acked {
                    *slot = Some(slot.map_or(version, |l| l.max(version)));
                }
            }
        }
        self.tally.accounts = latest.len() as u64;
        let states = self.evidence.states.as_ref();
        self.tally.accounts_observed =
            states.map(|s| latest.keys().filter(|a| s.contains_key(a)).count() as u64);
        let mut changes: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
        for c in self.evidence.changes.iter().flatten() {
            changes.entry(c.account).or_default().push((c.old, c.new));
            self.tally.stale_write_changes += u64::from(c.new < c.old);
            latest.entry(c.account).or_insert(None);
        }
        let mut unexplained: BTreeMap<i64, (Vec<String>, Vec<String>)> = BTreeMap::new();
        for u in self.evidence.unexplained.iter().flatten() {
            let (problems, seen) = unexplained.entry(u.account).or_default();
            problems.push(format!("{}: {}", u.observer, u.problem));
            seen.push(format!(
                "{}: {} since the audit began",
                u.observer,
                super::aggregate::grouped(u.change.into())
            ));
            latest.entry(u.account).or_insert(None);
        }
        for (account, latest_acked) in latest {
            let view = AccountView {
                account,
                latest_acked,
                final_version: states.and_then(|s| s.get(&account).copied()),
                states_observed: states.is_some(),
                changes: self
                    .evidence
                    .changes
                    .as_ref()
                    .map(|_| changes.get(&account).map_or(&[][..], Vec::as_slice)),
                unexplained: unexplained.get(&account).map_or(&[][..], |(p, _)| p.as_slice()),
            };
            let mut classes = ClassSet::EMPTY;
            for class in self.looked_for.iter() {
                let Detector::Account(detect) = class.detector() else { continue };
                if let Some(problem) = detect(&view) {
                    classes.insert(class);
                    let observed = || match (class, unexplained.get(&account)) {
                        (Class::UnexplainedChange, Some((_, seen))) => seen.join(", "),
                        _ => view
                            .final_version
                            .map_or("no state for the account".to_string(), |v| format!("final version {v}")),
                    };
                    self.found(class, Subject::Account(account), problem, observed);
                }
            }
            self.accounts.push(AccountVerdict {
                account,
                latest_acked: view.latest_acked,
                final_version: view.final_version,
                classes,
            });
        }
    }

    fn run(&mut self) {
        let view = RunView {
            id_conflicts: self.evidence.id_conflicts,
            ledger: self.evidence.ledger.map(|l| (l.balances, l.rows)),
        };
        for class in self.looked_for.iter() {
            let Detector::Run(detect) = class.detector() else { continue };
            if let Some(problem) = detect(&view) {
                self.run.insert(class);
                self.found(class, Subject::Run, problem, || "the run as a whole".to_string());
            }
        }
    }

    fn finish(self) -> Verdict {
        let failed = self.tally.found.keys().any(|&c| self.rules.fail.contains(c));
        let mut missing: BTreeSet<Needs> =
            self.rules.require.iter().copied().filter(|n| !self.tally.observed.contains(n)).collect();
        missing.extend(self.missing.iter().copied());
        let missing: Vec<Needs> = missing.into_iter().collect();
        let outcome = if self.history.is_empty() {
            Outcome::NothingSent
        } else if failed {
            Outcome::Fail
        } else if !missing.is_empty() {
            Outcome::Unjudged(missing)
        } else {
            Outcome::Pass
        };
        let (failing, warning): (Vec<_>, Vec<_>) =
            self.witnesses.into_iter().partition(|(c, _)| self.rules.fail.contains(*c));
        let witnesses = failing.into_iter().chain(warning).flat_map(|(_, w)| w).collect();
        Verdict {
            outcome,
            tally: self.tally,
            events: self.events,
            accounts: self.accounts,
            run: self.run,
            witnesses,
            rules: self.rules.clone(),
        }
    }
}

impl Verdict {
    /// Whether the check passed.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Pass
    }

    /// The classes found that the rules warn on: advisory, they do not fail the check.
    pub fn warning(&self) -> Vec<Class> {
        self.tally.found.keys().copied().filter(|&c| self.rules.warn.contains(c)).collect()
    }

    /// The classes found that fail the check.
    pub fn failing(&self) -> Vec<Class> {
        self.tally.found.keys().copied().filter(|&c| self.rules.fail.contains(c)).collect()
    }

    /// Whether every event was applied exactly once and nothing was half written: no duplicate,
    /// lost, never-applied, refused-and-applied or half-written anomaly, and the balances (where
    /// observed) what every credit applied once adds up to.
    pub fn exactly_once(&self) -> bool {
        let once =
            [Class::Duplicate, Class::Lost, Class::NeverApplied, Class::RefusedApplied, Class::HalfWritten];
        once.iter().all(|&c| self.tally.count(c) == 0)
            && self.tally.ledger.is_none_or(|l| l.balances == self.tally.expected_ledger)
    }

    /// Whether every account ended on the latest version acknowledged for it.
    pub fn latest_state(&self) -> bool {
        self.tally.count(Class::StaleAccount) == 0
    }

    /// `class`'s count here, or `None` when the evidence could not count it (its observer was
    /// missing, or nothing it is about was observed).
    pub fn counted(&self, class: Class) -> Option<u64> {
        let t = &self.tally;
        let observed = match class {
            Class::StaleAccount => t.observed.contains(&Needs::States),
            // Judged for every event expected once whose evidence was observed.
            Class::NeverApplied => t.unobserved < t.expected || t.expected == 0,
            // Of credits where applies are observed, of updates where theirs are.
            Class::Duplicate => {
                (t.credits > 0 && t.observed.contains(&Needs::Applies)) || t.update_applies_observed
            }
            c => t.observed.contains(&c.needs()),
        };
        observed.then(|| t.count(class))
    }

    /// The classes the check looked for that this run could have: a stale account only where
    /// accounts were updated, the paired class only where pairs were sent, an unexplained change
    /// only where a per-account aggregate was observed.
    pub fn looked_for(&self) -> Vec<Class> {
        let t = &self.tally;
        let mut classes: Vec<Class> = self.rules.looked_for().iter().collect();
        classes.retain(|&c| match c {
            Class::StaleAccount => t.accounts > 0,
            Class::UnexplainedChange => t.observed.contains(&Needs::Aggregates),
            c if c == Class::PAIRED => t.pairs > 0,
            _ => true,
        });
        classes
    }
}
