//! The anomaly classes, each defined once, here: its name, what it is about (an event, an
//! account or the whole run), the evidence it needs, its definition (the variant's doc comment,
//! which [`Class::definition`] returns) and the pure function that finds it.

use serde::{Deserialize, Serialize};

use super::history::{Expect, Kind, Sent};

/// What an anomaly is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Of {
    /// One event (a delivery id).
    Event,
    /// One account (its final state, its change log).
    Account,
    /// The whole run or cell.
    Run,
}

/// The evidence a class needs before it can be found or ruled out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Needs {
    /// Only what was sent and answered.
    Answers,
    /// How many times each event was applied (a ledger, `--applied-query`, a sink).
    Applies,
    /// Each account's final version (the accounts table, `--state-query`).
    States,
    /// The dead-letter store (the inbox, `--dead-letter-query`).
    DeadLetters,
    /// The database's own change log (hookbench's `plan_changes` trigger).
    Changes,
    /// The rows refused because their id was stored with another body (`id_conflicts`).
    IdConflicts,
    /// The balances and the ledger's rows, to add up against each other.
    Ledger,
    /// Per-account aggregates (a balance, a count of effect rows), decoded into applies.
    Aggregates,
}

impl Needs {
    /// Its name in evidence lines.
    pub fn name(self) -> &'static str {
        match self {
            Self::Answers => "answers",
            Self::Applies => "applies",
            Self::States => "states",
            Self::DeadLetters => "dead letters",
            Self::Changes => "the change log",
            Self::IdConflicts => "id conflicts",
            Self::Ledger => "the ledger",
            Self::Aggregates => "per-account aggregates",
        }
    }
}

/// One event as the detectors see it: what was sent and answered, and what was observed of it.
#[derive(Debug, Clone, Copy)]
pub struct EventView<'a> {
    /// The event as sent.
    pub sent: &'a Sent,
    /// The fewest and the most times any observer saw it applied (`None`: no observer counts
    /// applies). For an update, whether its account reached its version instead: 1 or 0.
    pub applied: Option<(u32, u32)>,
    /// Whether it is in the dead-letter store (`None`: no store observed).
    pub dead_lettered: Option<bool>,
    /// For an update, the most times any observer saw its handler apply it (`None`: a credit, or
    /// update applies not observed). Only ever read for a duplicate: an update acknowledged and
    /// not applied is no anomaly (a version guard rightly skips a stale one).
    pub handled: Option<u32>,
    /// When the event is one of a pair that restates one change under two ids, the other's.
    pub twin: Option<TwinView>,
}

/// The other event of a pair, as the detectors see it.
#[derive(Debug, Clone, Copy)]
pub struct TwinView {
    /// Whether this event is the pair's first.
    pub first: bool,
    /// The fewest and the most times any observer saw the other applied (`None`: not observed).
    pub applied: Option<(u32, u32)>,
}

impl EventView<'_> {
    fn fewest(&self) -> Option<u32> {
        self.applied.map(|(f, _)| f)
    }

    fn most(&self) -> Option<u32> {
        self.applied.map(|(_, m)| m)
    }

    /// Whether the event is one the receiver may apply (not poison, not a delivery it must refuse).
    fn may_apply(&self) -> bool {
        matches!(self.sent.expect, Expect::Once | Expect::AtMostOnce)
    }

    fn counted(&self) -> bool {
        matches!(self.sent.kind, Kind::Credit { .. })
    }

    /// Whether its twin, the same change under another id, was applied by every observer's
    /// count: then this event applying no time is right.
    fn twin_applied(&self) -> bool {
        self.twin.and_then(|t| t.applied).is_some_and(|(fewest, _)| fewest > 0)
    }
}

/// One account as the detectors see it.
#[derive(Debug, Clone)]
pub struct AccountView<'a> {
    /// The account.
    pub account: i64,
    /// The highest version the receiver acknowledged for it (`None`: no update acknowledged).
    pub latest_acked: Option<i64>,
    /// Its final version (`None`: no state observed for it, or no states observed at all).
    pub final_version: Option<i64>,
    /// Whether states were observed at all.
    pub states_observed: bool,
    /// Its changes in the database's change log, in the order recorded (`None`: no change log).
    pub changes: Option<&'a [(i64, i64)]>,
    /// What its per-account aggregates saw that no apply counts explain, one line per aggregate
    /// (empty: every change explained, or none observed).
    pub unexplained: &'a [String],
}

/// The whole run as the detectors see it.
#[derive(Debug, Clone, Copy)]
pub struct RunView {
    /// Bodies refused because their id was stored with another body (`None`: not observed).
    pub id_conflicts: Option<u64>,
    /// The balances' sum and the ledger rows' sum (`None`: not observed).
    pub ledger: Option<(i64, i64)>,
}

/// How a class is found: a pure function of one event, one account or the run, returning what is
/// wrong in a few words when the anomaly is there.
#[derive(Clone, Copy)]
pub enum Detector {
    /// Of one event.
    Event(fn(&EventView<'_>) -> Option<String>),
    /// Of one account.
    Account(fn(&AccountView<'_>) -> Option<String>),
    /// Of the run.
    Run(fn(&RunView) -> Option<String>),
}

macro_rules! classes {
    ($( $(#[doc = $doc:literal])+ $variant:ident = $name:literal, $of:ident, $needs:ident, $detect:expr; )+) => {
        /// An anomaly class. Each variant's documentation is its definition; docs/design.md lists
        /// them.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
            schemars::JsonSchema,
        )]
        #[serde(rename_all = "kebab-case")]
        pub enum Class {
            $( $(#[doc = $doc])+ $variant, )+
        }

        impl Class {
            /// Every class, in the order reports list them.
            pub const ALL: &'static [Class] = &[$(Class::$variant),+];

            /// Its name, as reports, `--fail-on` and `explain --anomaly` spell it.
            pub fn name(self) -> &'static str {
                match self { $(Self::$variant => $name,)+ }
            }

            /// Its definition: the variant's doc comment.
            pub fn definition(self) -> &'static str {
                match self { $(Self::$variant => concat!($($doc),+).trim_ascii(),)+ }
            }

            /// What it is about.
            pub fn of(self) -> Of {
                match self { $(Self::$variant => Of::$of,)+ }
            }

            /// The evidence it needs.
            pub fn needs(self) -> Needs {
                match self { $(Self::$variant => Needs::$needs,)+ }
            }

            /// How it is found.
            pub fn detector(self) -> Detector {
                match self { $(Self::$variant => $detect,)+ }
            }
        }
    };
}

impl Class {
    /// The classes that warn rather than fail unless `--strict`: one id sent with two bodies, and
    /// one change sent under two ids, where the sender's doing is as much the cause as the
    /// receiver's.
    pub const ADVISORY: [Class; 2] = [Class::IdConflict, Class::SemanticDuplicate];

    /// The class judged over pairs of events (one change sent under two ids): looked for only
    /// where pairs were sent.
    pub const PAIRED: Class = Class::SemanticDuplicate;
}

classes! {
    /// Applied more than once: an observer saw the event's side effect twice or more (an
    /// update's too, where update applies are observed).
    Duplicate = "duplicate", Event, Applies, Detector::Event(duplicate);
    /// Semantic duplicate: one change sent as two events under different ids (the same object,
    /// the same type, the second created later, as Stripe and Saleor may send), both applied: the
    /// change applied twice. Found in the pair's second event. Advisory unless `--strict`: a
    /// receiver that dedupes on the event id, as the checklist says, has it.
    SemanticDuplicate = "semantic-duplicate", Event, Applies, Detector::Event(semantic_duplicate);
    /// Lost: a credit acknowledged with a 2xx and never applied (an observer never saw it),
    /// though the receiver may apply it, nor its twin (the same change under another id). Never
    /// an update: one skipped as stale is correct.
    Lost = "lost", Event, Applies, Detector::Event(lost);
    /// Never applied: expected exactly once, never acknowledged with a 2xx (refused, failed or
    /// given up) and never applied, nor its twin. For an update, its account never reached its
    /// version: not in its final state, nor in its change log where one is kept (an update
    /// overwritten later by an older one was applied: that is a stale write).
    NeverApplied = "never-applied", Event, Applies, Detector::Event(never_applied);
    /// Stale account: the account's final version is below the latest version the receiver
    /// acknowledged for it (an older update written over a newer one, or an acknowledged update
    /// never written).
    StaleAccount = "stale-account", Account, States, Detector::Account(stale_account);
    /// Stale write: the database's change log shows the account's version going down.
    StaleWrite = "stale-write", Account, Changes, Detector::Account(stale_write);
    /// Refused and applied: applied although the receiver refused it with a 4xx and never
    /// acknowledged it, or although it must never be applied (a poison event, a forged, stale or
    /// malformed delivery).
    RefusedApplied = "refused-and-applied", Event, Applies, Detector::Event(refused_applied);
    /// Not refused: a delivery that must be refused (a bad signature, a stale timestamp, a
    /// malformed body) answered 2xx or without a 4xx, or one that must not be acknowledged (an
    /// oversized body) answered 2xx.
    NotRefused = "not-refused", Event, Answers, Detector::Event(not_refused);
    /// Not dead-lettered: a poison event neither applied nor found in the receiver's dead-letter
    /// store, where the store is observed.
    NotDeadLettered = "not-dead-lettered", Event, DeadLetters, Detector::Event(not_dead_lettered);
    /// Held open: a request whose body stalled was neither answered nor closed within the bound.
    HeldOpen = "held-open", Event, Answers, Detector::Event(held_open);
    /// Id conflict: a body refused because its id was already stored with another body (one id
    /// delivered with two bodies; the receiver kept the first).
    IdConflict = "id-conflict", Run, IdConflicts, Detector::Run(id_conflict);
    /// Half written: the accounts' balances and the ledger's rows do not add up to the same sum
    /// (a side effect without its evidence, or evidence without its effect).
    HalfWritten = "half-written", Run, Ledger, Detector::Run(half_written);
    /// Unexplained change: an account's per-account aggregate (its balance, its count of effect
    /// rows) moved in a way no apply counts of the credits sent to it explain: not a whole number
    /// of a credit's amount (a fee, rounding, a conversion), more applies than the credit reached
    /// the receiver, a balance that went down, or a change on an account the run sent nothing to.
    UnexplainedChange = "unexplained-change", Account, Aggregates, Detector::Account(unexplained_change);
}

fn duplicate(e: &EventView<'_>) -> Option<String> {
    let most = if e.counted() { e.most() } else { e.handled };
    let most = most.filter(|&m| m > 1)?;
    Some(format!("applied {most} times"))
}

fn semantic_duplicate(e: &EventView<'_>) -> Option<String> {
    let twin = e.twin.filter(|t| !t.first)?;
    let (this, first) = (e.most()?, twin.applied.map_or(0, |(_, most)| most));
    (e.counted() && this > 0 && first > 0).then(|| {
        format!(
            "the same change as its pair's first event, both applied: the first {first} times, this {this}"
        )
    })
}

fn lost(e: &EventView<'_>) -> Option<String> {
    (e.counted() && e.may_apply() && e.sent.answers.acked && e.fewest()? == 0 && !e.twin_applied())
        .then(|| "acknowledged with a 2xx and never applied".to_string())
}

fn never_applied(e: &EventView<'_>) -> Option<String> {
    let a = &e.sent.answers;
    (e.sent.expect == Expect::Once && !a.acked && e.fewest()? == 0 && !e.twin_applied()).then(|| {
        let why = if a.attempts == 0 {
            "never sent"
        } else if a.refused {
            "refused"
        } else {
            "failed or given up"
        };
        format!("never acknowledged ({why}: {}) and never applied", a.describe())
    })
}

fn refused_applied(e: &EventView<'_>) -> Option<String> {
    let most = e.most().filter(|&m| m > 0 && e.counted())?;
    let a = &e.sent.answers;
    let why = match e.sent.expect {
        Expect::Poison => "a poison event",
        Expect::Refused | Expect::NotAcked => "a delivery that must not be applied",
        Expect::Once | Expect::AtMostOnce if a.refused && !a.acked => "refused with a 4xx",
        Expect::Once | Expect::AtMostOnce => return None,
    };
    Some(format!("{why}, applied {most} times"))
}

fn not_refused(e: &EventView<'_>) -> Option<String> {
    let a = &e.sent.answers;
    match e.sent.expect {
        Expect::Refused if a.acked => Some(format!("answered 2xx ({})", a.describe())),
        Expect::Refused if !a.refused => Some(format!("not refused with a 4xx ({})", a.describe())),
        Expect::NotAcked if a.acked => Some(format!("answered 2xx ({})", a.describe())),
        _ => None,
    }
}

fn not_dead_lettered(e: &EventView<'_>) -> Option<String> {
    (e.sent.expect == Expect::Poison && e.most()? == 0 && !e.dead_lettered?)
        .then(|| "a poison event neither applied nor in the dead-letter store".to_string())
}

fn held_open(e: &EventView<'_>) -> Option<String> {
    e.sent.answers.held_open.then(|| format!("held open ({})", e.sent.answers.describe()))
}

fn stale_account(a: &AccountView<'_>) -> Option<String> {
    let latest = a.latest_acked?;
    if !a.states_observed {
        return None;
    }
    match a.final_version {
        Some(v) if v >= latest => None,
        Some(v) => Some(format!("final version {v}, below {latest}, the latest acknowledged")),
        None => Some(format!("no state for the account; version {latest} was acknowledged")),
    }
}

fn stale_write(a: &AccountView<'_>) -> Option<String> {
    let changes = a.changes?;
    let downs: Vec<String> =
        changes.iter().filter(|(old, new)| new < old).map(|(old, new)| format!("{old} -> {new}")).collect();
    (!downs.is_empty()).then(|| format!("its version went down: {}", downs.join(", ")))
}

fn unexplained_change(a: &AccountView<'_>) -> Option<String> {
    (!a.unexplained.is_empty()).then(|| a.unexplained.join("; "))
}

fn id_conflict(r: &RunView) -> Option<String> {
    let n = r.id_conflicts.filter(|&n| n > 0)?;
    Some(format!("{n} bodies refused because their id was stored with another body"))
}

fn half_written(r: &RunView) -> Option<String> {
    let (balances, rows) = r.ledger.filter(|(b, r)| b != r)?;
    Some(format!("the balances add up to {balances}, the ledger's rows to {rows}"))
}

/// A set of classes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ClassSet(u16);

impl ClassSet {
    /// No class.
    pub const EMPTY: ClassSet = ClassSet(0);

    /// Every class.
    pub fn all() -> Self {
        Class::ALL.iter().copied().collect()
    }

    fn bit(c: Class) -> u16 {
        1 << (c as u16)
    }

    /// Whether `c` is in the set.
    pub fn contains(self, c: Class) -> bool {
        self.0 & Self::bit(c) != 0
    }

    /// The set with `c`.
    #[must_use]
    pub fn with(self, c: Class) -> Self {
        Self(self.0 | Self::bit(c))
    }

    /// The set without `c`.
    #[must_use]
    pub fn without(self, c: Class) -> Self {
        Self(self.0 & !Self::bit(c))
    }

    /// Adds `c`.
    pub fn insert(&mut self, c: Class) {
        *self = self.with(c);
    }

    /// Whether it is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The classes in it, in [`Class::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Class> {
        Class::ALL.iter().copied().filter(move |&c| self.contains(c))
    }

    /// The classes in either.
    #[must_use]
    pub fn or(self, other: ClassSet) -> Self {
        Self(self.0 | other.0)
    }
}

impl FromIterator<Class> for ClassSet {
    fn from_iter<I: IntoIterator<Item = Class>>(iter: I) -> Self {
        iter.into_iter().fold(Self::EMPTY, Self::with)
    }
}
