//! The article's crash test: the process dies after the dedupe insert, before the side effect.

use std::collections::VecDeque;

use crate::workload::rng::keyed;

/// The report's types: the crash table's row and design, as a report records them.
pub use crate::report::model::{CrashDesign, CrashResult};

/// Credit events in the crash test.
pub const CRASH_EVENTS: usize = 2000;
/// Chance per delivery that the process dies at the injected point.
pub const P_CRASH: f64 = 0.01;

impl CrashDesign {
    /// The row label the script prints.
    pub fn label(self) -> &'static str {
        match self {
            CrashDesign::Split => "insert key, then side effect",
            CrashDesign::Atomic => "insert key + side effect, one tx",
        }
    }
}

/// The crash test's id for event `i` (`evt_c00000`).
pub fn crash_event_id(i: usize) -> String {
    format!("evt_c{i:05}")
}

/// Whether attempt `n` of crash event `i` dies at the injected point.
pub fn crashes(seed: u32, i: usize, attempt: u32) -> bool {
    keyed(seed, &[&"crash", &crash_event_id(i), &attempt]) < P_CRASH
}

/// The script's `crashTest(design)`.
pub fn run(seed: u32, design: CrashDesign) -> CrashResult {
    run_events(seed, design, CRASH_EVENTS)
}

/// The crash test with `events` events instead of the article's 2,000 (the first `events` of
/// its ids, so the draws are the script's).
pub fn run_events(seed: u32, design: CrashDesign, events: usize) -> CrashResult {
    let mut queue: VecDeque<(usize, u32)> = (0..events).map(|i| (i, 1)).collect();
    let mut key = vec![false; events];
    let mut applied = vec![false; events];
    let mut crash_count = 0;
    while let Some((i, n)) = queue.pop_front() {
        let crash = crashes(seed, i, n);
        if key[i] {
            continue; // already "processed": ack
        }
        // Split commits the key now; atomic's key is rolled back if the process dies.
        if crash {
            crash_count += 1;
            key[i] = design == CrashDesign::Split;
            queue.push_back((i, n + 1));
            continue;
        }
        key[i] = true;
        applied[i] = true;
    }
    let applied = applied.iter().filter(|&&a| a).count() as u64;
    CrashResult {
        design,
        events: events as u64,
        crashes: crash_count,
        keys: key.iter().filter(|&&k| k).count() as u64,
        applied,
        lost: events as u64 - applied,
        ledger: applied as i64 * 100,
        expected: events as i64 * 100,
    }
}
