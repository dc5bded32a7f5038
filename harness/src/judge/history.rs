//! What was sent and answered, as the judge reads it: one [`Sent`] per event, in the order of the
//! events' indices, and how their ids are spelled.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

/// What an event asks of the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Add `amount` to the account: applying it twice is visible in a count of applies.
    Credit {
        /// The amount.
        amount: i64,
    },
    /// Set the account's plan at `version`: seen in the account's final version.
    Update {
        /// The version it carries.
        version: i64,
    },
}

/// What the check expects of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Expect {
    /// Applied exactly once.
    Once,
    /// Applied at most once, and applied if acknowledged (a delivery the receiver may refuse or
    /// recognise as a replay).
    AtMostOnce,
    /// Never applied, whatever it is answered; kept as a dead letter where a store is observed.
    Poison,
    /// Refused with a 4xx and never applied (a forged, stale or malformed delivery).
    Refused,
    /// Never acknowledged and never applied (an oversized body: a 413, or the connection cut).
    NotAcked,
}

/// How an event's attempts were answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answers {
    /// Attempts sent.
    pub attempts: u32,
    /// Whether an attempt was answered with a 2xx (even if the sender then dropped the answer).
    pub acked: bool,
    /// Whether an attempt was answered with a 4xx.
    pub refused: bool,
    /// The last attempt's outcome as a status, when it had one.
    pub last_status: Option<u16>,
    /// Whether an attempt was held open by the receiver past the bound (a stalled body).
    pub held_open: bool,
}

impl Answers {
    /// The answers in a few words: `3 attempts, last 500`.
    pub fn describe(&self) -> String {
        let last = self.last_status.map_or_else(|| "no status".to_string(), |s| s.to_string());
        match self.attempts {
            0 => "no attempt".to_string(),
            1 => format!("1 attempt, {last}"),
            n => format!("{n} attempts, last {last}"),
        }
    }
}

/// One event as it was sent and answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// A credit or an update.
    pub kind: Kind,
    /// The account it is for.
    pub account: i64,
    /// What the check expects of it.
    pub expect: Expect,
    /// How it was answered.
    pub answers: Answers,
}

/// How the events' ids are spelled.
#[derive(Debug, Clone)]
pub enum Ids {
    /// A workload's: `<prefix>evt_` and the index in six digits or more (`evt_000132`), made on
    /// demand so that a large run keeps no string per event.
    Workload {
        /// Put before every id (an audit's run prefix; empty in a bench).
        prefix: String,
    },
    /// Listed, one per event.
    Listed(Vec<String>),
}

/// What a check sent: its events, by index, their ids, and the pairs that are one change sent
/// twice under two ids (a semantic duplicate).
#[derive(Debug, Clone)]
pub struct History {
    events: Vec<Sent>,
    ids: Ids,
    index: OnceLock<HashMap<String, usize>>,
    /// Per event of a pair, the other event and whether this one is the first.
    twins: BTreeMap<usize, Twin>,
}

/// The other event of a pair that restates one change under another id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Twin {
    /// The other event's index.
    pub other: usize,
    /// Whether this event is the pair's first (the other restates it, created later).
    pub first: bool,
}

impl History {
    /// The events with ids spelled as `ids` says (a listed id per event).
    pub fn new(events: Vec<Sent>, ids: Ids) -> Self {
        Self { events, ids, index: OnceLock::new(), twins: BTreeMap::new() }
    }

    /// This history with `pairs`: each `(first, second)` one change sent twice, the second
    /// created later under another id. An index beyond the events, or in two pairs, is left
    /// out: each event has at most one twin.
    #[must_use]
    pub fn with_twins(mut self, pairs: &[(usize, usize)]) -> Self {
        let len = self.events.len();
        for &(a, b) in pairs {
            let free = |i: usize, t: &BTreeMap<usize, Twin>| i < len && !t.contains_key(&i);
            if a != b && free(a, &self.twins) && free(b, &self.twins) {
                self.twins.insert(a, Twin { other: b, first: true });
                self.twins.insert(b, Twin { other: a, first: false });
            }
        }
        self
    }

    /// Event `i`'s twin, when it is one of a pair.
    pub fn twin(&self, i: usize) -> Option<Twin> {
        self.twins.get(&i).copied()
    }

    /// How many pairs.
    pub fn pairs(&self) -> usize {
        self.twins.len() / 2
    }

    /// The events, by index.
    pub fn events(&self) -> &[Sent] {
        &self.events
    }

    /// How many events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing was sent.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Event `i`'s id.
    pub fn id(&self, i: usize) -> String {
        match &self.ids {
            Ids::Workload { prefix } => format!("{prefix}evt_{i:06}"),
            Ids::Listed(ids) => ids.get(i).cloned().unwrap_or_default(),
        }
    }

    /// The index of the event `id` names, if it is one of these events.
    pub fn index(&self, id: &str) -> Option<usize> {
        match &self.ids {
            Ids::Workload { prefix } => workload_index(prefix, id, self.events.len()),
            Ids::Listed(ids) => self
                .index
                .get_or_init(|| ids.iter().enumerate().map(|(i, id)| (id.clone(), i)).collect())
                .get(id)
                .copied(),
        }
    }
}

/// The index of the workload event `id` names, among `len` events whose ids carry `prefix`: only
/// the spelling the sender used (`evt_132` is not `evt_000132`).
pub fn workload_index(prefix: &str, id: &str, len: usize) -> Option<usize> {
    let digits = id.strip_prefix(prefix)?.strip_prefix("evt_")?;
    let i: usize = digits.parse().ok()?;
    (i < len && digits == format!("{i:06}")).then_some(i)
}
