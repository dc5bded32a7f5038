//! Where a worker's time goes, per stage of a delivery, counted as it runs and read at
//! `GET /stats`: how many times each stage ran, its total time, and how many times it took a
//! millisecond or more (for the write lock, a wait SQLite's busy handler slept through: taken
//! free, it takes tens of microseconds).
//!
//! The counters are this process's, shared by every store and router in it: a worker has one of
//! each. `hookbench perf` reads them from each worker to say where the gap to the database's
//! own speed is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

/// A stage of a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The whole request in the router, from the handler's start to its answer.
    Request,
    /// The Standard Webhooks signature checked over the body.
    Verify,
    /// The body parsed as an event and held to the wire's bounds.
    Parse,
    /// Waiting for a pooled connection for a write.
    Pool,
    /// Waiting for the write turn (SQLite: this process's writers, then the file's lock file).
    Turn,
    /// `BEGIN` (on SQLite `BEGIN IMMEDIATE`, which waits for the file's write lock).
    Begin,
    /// Holding the write turn (SQLite): what every writer of the file waits behind.
    Held,
    /// A write from start to answer: the connection, the turn, `BEGIN`, the statements, the
    /// commit, and on SQLite the file checked.
    Write,
}

impl Stage {
    const ALL: [Stage; 8] = [
        Stage::Request,
        Stage::Verify,
        Stage::Parse,
        Stage::Pool,
        Stage::Turn,
        Stage::Begin,
        Stage::Held,
        Stage::Write,
    ];

    fn index(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        match self {
            Stage::Request => "request",
            Stage::Verify => "verify",
            Stage::Parse => "parse",
            Stage::Pool => "pool",
            Stage::Turn => "turn",
            Stage::Begin => "begin",
            Stage::Held => "held",
            Stage::Write => "write",
        }
    }
}

struct Counter {
    count: AtomicU64,
    nanos: AtomicU64,
    over_1ms: AtomicU64,
}

impl Counter {
    const fn new() -> Self {
        Self { count: AtomicU64::new(0), nanos: AtomicU64::new(0), over_1ms: AtomicU64::new(0) }
    }
}

/// What counts as a slow run: on SQLite's write lock, a wait the busy handler slept through.
const SLOW: Duration = Duration::from_millis(1);

static COUNTERS: [Counter; Stage::ALL.len()] = [const { Counter::new() }; Stage::ALL.len()];

/// Counts one run of `stage` that took `took`.
pub fn record(stage: Stage, took: Duration) {
    let c = &COUNTERS[stage.index()];
    c.count.fetch_add(1, Ordering::Relaxed);
    c.nanos.fetch_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    if took >= SLOW {
        c.over_1ms.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts one run of `stage` that started at `started` and ends now.
pub fn since(stage: Stage, started: Instant) {
    record(stage, started.elapsed());
}

/// One stage's counts so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct StageTotals {
    /// Times it ran.
    pub count: u64,
    /// Its total time, in seconds.
    pub seconds: f64,
    /// Times it took 1 ms or more.
    pub over_1ms: u64,
}

impl StageTotals {
    /// One run that took `took`.
    pub fn one(took: Duration) -> Self {
        Self { count: 1, seconds: took.as_secs_f64(), over_1ms: u64::from(took >= SLOW) }
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &StageTotals) {
        self.count += other.count;
        self.seconds += other.seconds;
        self.over_1ms += other.over_1ms;
    }
}

/// Every stage's counts so far, by name (`GET /stats`).
pub fn snapshot() -> std::collections::BTreeMap<&'static str, StageTotals> {
    Stage::ALL
        .iter()
        .map(|&stage| {
            let c = &COUNTERS[stage.index()];
            let totals = StageTotals {
                count: c.count.load(Ordering::Relaxed),
                seconds: c.nanos.load(Ordering::Relaxed) as f64 / 1e9,
                over_1ms: c.over_1ms.load(Ordering::Relaxed),
            };
            (stage.name(), totals)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_counts_its_runs_time_and_slow_runs() {
        let before = snapshot()["parse"];
        record(Stage::Parse, Duration::from_micros(200));
        record(Stage::Parse, Duration::from_millis(3));
        let after = snapshot()["parse"];
        // Other tests in this binary may count parses meanwhile, so at least these two.
        assert!(after.count >= before.count + 2);
        assert!(after.over_1ms > before.over_1ms);
        assert!(after.seconds - before.seconds >= 0.0032 - 1e-9);
    }
}
