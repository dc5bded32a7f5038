//! The seeded workload every run uses: the article's events and delivery plan, bit for bit.
//!
//! [`Workload::generate`] gives, for a seed and an event count, exactly the events the article's
//! script generates (`makeEvents`) and exactly its delivery groups (`makeGroups`), including every
//! keyed fault draw. The model replays the plan in one simulated process; the sender replays it
//! over HTTP. Both ask the same keyed questions ([`Workload::ack_lost`], [`Workload::retry_at`]),
//! so a real run and its simulated twin face the same faults.

mod events;
mod layout;
mod plan;
pub mod rng;
mod shard;

use std::fmt;

pub use events::{Event, EventId, EventKind};
pub use layout::Layout;
pub use plan::{Group, GroupKind};
pub use shard::{JOB_COMPLETION_INDEX, MAX_SHARDS, Shard, ShardError, late_start};

use rng::keyed;

/// The article's seed (`SEED` in the script).
pub const ARTICLE_SEED: u32 = 20_261_023;
/// The article's event count (`N_EVENTS`).
pub const ARTICLE_EVENTS: usize = 10_000;

/// Everything that shapes a workload. Defaults are the script's constants.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WorkloadConfig {
    /// Seed of every draw (`SEED`).
    pub seed: u32,
    /// Number of logical events (`N_EVENTS`).
    pub events: usize,
    /// Number of accounts events are spread over (`N_ACCOUNTS`).
    pub accounts: u32,
    /// Chance an event is a credit rather than a plan update (`P_CREDIT`).
    pub p_credit: f64,
    /// Chance a plan update is followed by another in the same second (`P_TIE`).
    pub p_tie: f64,
    /// Chance an event is delivered again later (`P_DUPLICATE`).
    pub p_duplicate: f64,
    /// Chance an attempt's 2xx response is lost after the handler committed (`P_ACK_LOST`).
    pub p_ack_lost: f64,
    /// Chance the first delivery arrives as two concurrent copies (`P_CONCURRENT`).
    pub p_concurrent: f64,
    /// Chance a first delivery is moved up to `shuffle_window` positions (`P_SHUFFLE`).
    pub p_shuffle: f64,
    /// How far a shuffled delivery may move, in positions (`SHUFFLE_WINDOW`).
    pub shuffle_window: u32,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            seed: ARTICLE_SEED,
            events: ARTICLE_EVENTS,
            accounts: 500,
            p_credit: 0.6,
            p_tie: 0.05,
            p_duplicate: 0.03,
            p_ack_lost: 0.02,
            p_concurrent: 0.01,
            p_shuffle: 0.10,
            shuffle_window: 20,
        }
    }
}

/// A bad workload parameter.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WorkloadError {
    /// A chance outside `[0, 1]`.
    #[error("{name} must be a chance between 0 and 1, got {value}")]
    Chance {
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// No events or no accounts.
    #[error("{0} must be at least 1")]
    Empty(&'static str),
}

impl WorkloadConfig {
    /// Checks that every chance is in `[0, 1]` and counts are positive.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        for (name, value) in [
            ("p_credit", self.p_credit),
            ("p_tie", self.p_tie),
            ("p_duplicate", self.p_duplicate),
            ("p_ack_lost", self.p_ack_lost),
            ("p_concurrent", self.p_concurrent),
            ("p_shuffle", self.p_shuffle),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(WorkloadError::Chance { name, value });
            }
        }
        if self.events == 0 {
            return Err(WorkloadError::Empty("events"));
        }
        if self.accounts == 0 {
            return Err(WorkloadError::Empty("accounts"));
        }
        Ok(())
    }
}

/// The events, the delivery plan and what the checker needs to know about them.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The parameters it was generated from.
    pub config: WorkloadConfig,
    /// Logical events in creation order; `events[i].idx == i`.
    pub events: Vec<Event>,
    /// The latest plan version of each account (0 when it never had a plan update).
    pub latest_plan: Vec<u32>,
    /// The delivery plan: first deliveries (some as concurrent pairs, some shuffled) and later
    /// duplicates, sorted as the script sorts them.
    pub groups: Vec<Group>,
    /// Poison events (credits sent with a negative amount, which the side effect refuses every
    /// time), marked by [`Workload::poison`]; empty when there are none.
    pub poisoned: Vec<bool>,
}

impl Workload {
    /// Generates the events and the delivery plan for `config`.
    pub fn generate(config: &WorkloadConfig) -> Result<Self, WorkloadError> {
        config.validate()?;
        let (events, latest_plan) = events::make_events(config);
        let groups = plan::make_groups(config, &events);
        Ok(Self { config: config.clone(), events, latest_plan, groups, poisoned: Vec::new() })
    }

    /// Marks credit events as poison with chance `rate` each (the draw `keyed("poison", id)`), and
    /// returns how many. The article's workload is untouched; only the amount sent changes.
    pub fn poison(&mut self, rate: f64) -> usize {
        let seed = self.config.seed;
        if rate <= 0.0 {
            self.poisoned.clear();
            return 0;
        }
        self.poisoned =
            self.events.iter().map(|e| e.is_credit() && keyed(seed, &[&"poison", &e.id()]) < rate).collect();
        self.poisoned.iter().filter(|&&p| p).count()
    }

    /// Whether event `i` is poison.
    pub fn is_poisoned(&self, i: usize) -> bool {
        self.poisoned.get(i).copied().unwrap_or(false)
    }

    /// A keyed draw with this workload's seed.
    pub fn keyed(&self, parts: &[&dyn fmt::Display]) -> f64 {
        keyed(self.config.seed, parts)
    }

    /// Whether attempt `n` (1-based) of `event` has its 2xx response lost (the script's
    /// `keyed(e.id, n, "ackLost") < P_ACK_LOST`).
    pub fn ack_lost(&self, event: EventId, attempt: u32) -> bool {
        self.keyed(&[&event, &attempt, &"ackLost"]) < self.config.p_ack_lost
    }

    /// When the sender retries after attempt `n` of a group planned at `at` failed or timed out
    /// (`g.at + 5 + keyed(e.id, n, "retryAt") * 200`, in plan positions).
    pub fn retry_at(&self, event: EventId, attempt: u32, at: f64) -> f64 {
        at + 5.0 + self.keyed(&[&event, &attempt, &"retryAt"]) * 200.0
    }

    /// How many copies of each event the plan delivers (every group's copies added up): each copy
    /// is attempted until answered, so an event reaches the receiver at most this many times the
    /// attempts allowed per delivery.
    pub fn copies(&self) -> Vec<u32> {
        let mut copies = vec![0u32; self.events.len()];
        for g in &self.groups {
            if let Some(c) = copies.get_mut(g.event as usize) {
                *c += u32::from(g.copies);
            }
        }
        copies
    }

    /// Moves every credit to an account of its own, after the accounts the updates use: credit
    /// `i` to account `accounts + i`. A per-account aggregate of that account then moves with
    /// that credit alone. The plan, the ids, the amounts and the updates stay as they were.
    pub fn credits_to_own_accounts(&mut self) {
        let first = self.config.accounts;
        for e in &mut self.events {
            if e.is_credit() {
                e.account = first.saturating_add(e.idx);
            }
        }
    }

    /// How many accounts the events may name once credits have accounts of their own: the
    /// updates' and one per event.
    pub fn own_account_span(config: &WorkloadConfig) -> u64 {
        u64::from(config.accounts) + config.events as u64
    }

    /// Number of credit events.
    pub fn credit_count(&self) -> usize {
        self.events.iter().filter(|e| e.is_credit()).count()
    }

    /// Number of same-second tie updates (the second update of each pair).
    pub fn tie_count(&self) -> usize {
        self.events.iter().filter(|e| e.is_tie()).count()
    }

    /// The ledger a correct receiver ends with: the sum of every credit's amount.
    pub fn expected_ledger(&self) -> i64 {
        self.events
            .iter()
            .map(|e| match e.kind {
                EventKind::Credit { amount } => amount,
                EventKind::Plan { .. } => 0,
            })
            .sum()
    }

    /// The same-second pairs whose newer update is delivered first, as (older, newer) indexes,
    /// in event order (the script's `reversed`).
    pub fn reversed_ties(&self) -> Vec<(usize, usize)> {
        let mut first_pos = vec![usize::MAX; self.events.len()];
        for (i, g) in self.groups.iter().enumerate() {
            let slot = &mut first_pos[g.event as usize];
            if *slot == usize::MAX {
                *slot = i;
            }
        }
        self.events
            .iter()
            .filter(|e| e.is_tie() && first_pos[e.idx as usize] < first_pos[e.idx as usize - 1])
            .map(|e| (e.idx as usize - 1, e.idx as usize))
            .collect()
    }
}

/// A JavaScript number's `String(x)` for a chance, so printed parameters match the script's.
pub fn js_number(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-6 { format!("{x:e}") } else { format!("{x}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article() -> Workload {
        Workload::generate(&WorkloadConfig::default()).expect("default config is valid")
    }

    #[test]
    fn article_counts_for_seed_20261023() {
        let w = article();
        assert_eq!(w.events.len(), 10_000);
        assert_eq!(w.credit_count(), 5_935);
        assert_eq!(w.events.len() - w.credit_count(), 4_065);
        assert_eq!(w.tie_count(), 193);
        assert_eq!(w.expected_ledger(), 593_500);
        assert_eq!(w.reversed_ties().len(), 18);
    }

    #[test]
    fn article_traced_events_are_where_the_article_says() {
        let w = article();
        // evt_000132 is the first credit event delivered as a concurrent pair, to acct_0243.
        let first_pair = w
            .groups
            .iter()
            .find(|g| g.copies == 2 && w.events[g.event as usize].is_credit())
            .expect("a concurrent credit");
        let e = &w.events[first_pair.event as usize];
        assert_eq!(e.id().to_string(), "evt_000132");
        assert_eq!(e.account, 243);
        // evt_000090 and evt_000091 set plan_v1 and plan_v2 on acct_0388 in second 1790000039.
        let (older, newer) = w.reversed_ties()[0];
        assert_eq!((older, newer), (90, 91));
        for (i, v) in [(older, 1), (newer, 2)] {
            assert_eq!(w.events[i].account, 388);
            assert_eq!(w.events[i].created, 1_790_000_039);
            assert_eq!(w.events[i].kind, EventKind::Plan { version: v, tie: i == newer });
        }
        assert_eq!(w.latest_plan.len(), 500);
    }

    #[test]
    fn credits_moved_to_accounts_of_their_own_share_none_and_leave_updates_alone() {
        let mut w = Workload::generate(&WorkloadConfig { events: 300, accounts: 7, ..Default::default() })
            .expect("a workload");
        let before = w.clone();
        w.credits_to_own_accounts();
        let credited: Vec<u32> = w.events.iter().filter(|e| e.is_credit()).map(|e| e.account).collect();
        let distinct: std::collections::BTreeSet<u32> = credited.iter().copied().collect();
        assert_eq!(distinct.len(), credited.len(), "one account per credit");
        assert!(credited.iter().all(|&a| a >= 7 && u64::from(a) < Workload::own_account_span(&w.config)));
        for (e, b) in w.events.iter().zip(&before.events) {
            if !e.is_credit() {
                assert_eq!(e, b, "an update is untouched");
            }
            assert_eq!((e.idx, e.kind), (b.idx, b.kind));
        }
        assert_eq!(w.groups, before.groups, "the plan is untouched");
        let copies = w.copies();
        assert!(copies.iter().all(|&c| c >= 1) && copies.iter().any(|&c| c >= 2), "{copies:?}");
    }

    #[test]
    fn plan_is_sorted_and_every_event_has_one_first_delivery() {
        let w = article();
        assert!(w.groups.windows(2).all(|p| p[0].at <= p[1].at));
        let firsts = w.groups.iter().filter(|g| g.kind != GroupKind::Duplicate).count();
        assert_eq!(firsts, w.events.len());
        let copies: usize = w.groups.iter().map(|g| usize::from(g.copies)).sum();
        // 10,000 first deliveries, 100-odd concurrent copies and 300-odd duplicates.
        assert!(copies > 10_300 && copies < 10_600, "{copies}");
    }

    #[test]
    fn same_seed_same_workload_other_seed_other_workload() {
        let config = WorkloadConfig { events: 500, ..WorkloadConfig::default() };
        let a = Workload::generate(&config).expect("valid");
        let b = Workload::generate(&config).expect("valid");
        assert_eq!(a.events, b.events);
        assert_eq!(a.groups, b.groups);
        let c = Workload::generate(&WorkloadConfig { seed: 1, ..config }).expect("valid");
        assert_ne!(a.events, c.events);
    }

    #[test]
    fn fault_chances_are_parameters() {
        let none =
            WorkloadConfig { p_duplicate: 0.0, p_concurrent: 0.0, p_shuffle: 0.0, ..Default::default() };
        let w = Workload::generate(&none).expect("valid");
        assert_eq!(w.groups.len(), w.events.len());
        assert!(w.groups.iter().all(|g| g.copies == 1 && g.at == f64::from(g.event)));
        let all = WorkloadConfig { p_concurrent: 1.0, events: 100, ..Default::default() };
        let w = Workload::generate(&all).expect("valid");
        assert!(w.groups.iter().filter(|g| g.kind != GroupKind::Duplicate).all(|g| g.copies == 2));
    }

    #[test]
    fn bad_parameters_are_refused() {
        let bad = WorkloadConfig { p_duplicate: 1.5, ..Default::default() };
        assert_eq!(
            Workload::generate(&bad).map(|_| ()),
            Err(WorkloadError::Chance { name: "p_duplicate", value: 1.5 })
        );
        let empty = WorkloadConfig { events: 0, ..Default::default() };
        assert_eq!(Workload::generate(&empty).map(|_| ()), Err(WorkloadError::Empty("events")));
    }

    #[test]
    fn js_number_prints_like_javascript() {
        assert_eq!(js_number(0.03), "0.03");
        assert_eq!(js_number(0.1), "0.1");
        assert_eq!(js_number(1.0), "1");
        assert_eq!(js_number(0.0), "0");
        assert_eq!(js_number(1e-7), "1e-7");
    }
}
