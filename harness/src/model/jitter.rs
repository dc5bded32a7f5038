//! The article's sender experiment: failed deliveries retrying with and without full jitter.

use std::collections::HashMap;

use crate::workload::rng::Mulberry32;

/// The report's types: the sender experiment's mode and row, as a report records them.
pub use crate::report::model::{JitterMode, JitterResult};

/// Deliveries that failed at the same moment.
pub const DELIVERIES: u32 = 1000;
/// When the receiver comes back, in seconds.
pub const RECOVER_S: f64 = 300.0;
/// First backoff, in seconds.
pub const BASE_S: f64 = 1.0;
/// Largest backoff, in seconds.
pub const CAP_S: f64 = 3600.0;

impl JitterMode {
    /// The label the script prints.
    pub fn label(self) -> &'static str {
        match self {
            JitterMode::NoJitter => "exponential, no jitter",
            JitterMode::FullJitter => "exponential, full jitter",
        }
    }
}

/// The attempt times of one delivery: retries until the first at or after `recover` seconds.
pub fn attempt_times(mode: JitterMode, rnd: &mut Mulberry32, recover: f64) -> Vec<f64> {
    let (mut t, mut k) = (0.0f64, 0i32);
    let mut times = Vec::new();
    loop {
        times.push(t);
        if t >= recover {
            return times;
        }
        let d = CAP_S.min(BASE_S * 2f64.powi(k));
        k += 1;
        t += match mode {
            JitterMode::FullJitter => rnd.next() * d,
            JitterMode::NoJitter => d,
        };
    }
}

/// The draws of `mode` come from `mulberry32(seed)` without jitter and `mulberry32(seed + 1)` with.
pub fn rng_for(seed: u32, mode: JitterMode) -> Mulberry32 {
    Mulberry32::new(seed.wrapping_add(u32::from(mode == JitterMode::FullJitter)))
}

/// The script's `jitter()` for one mode.
pub fn run(seed: u32, mode: JitterMode) -> JitterResult {
    run_with(seed, mode, DELIVERIES, RECOVER_S)
}

/// `jitter()` with another number of deliveries or recovery time.
pub fn run_with(seed: u32, mode: JitterMode, deliveries: u32, recover_s: f64) -> JitterResult {
    let mut rnd = rng_for(seed, mode);
    let mut buckets: HashMap<i64, u64> = HashMap::new();
    let (mut attempts, mut last_ok) = (0u64, 0.0f64);
    for _ in 0..deliveries {
        let times = attempt_times(mode, &mut rnd, recover_s);
        attempts += times.len() as u64;
        for &t in &times {
            *buckets.entry(t.floor() as i64).or_default() += 1;
        }
        if let Some(&last) = times.last() {
            last_ok = last_ok.max(last);
        }
    }
    let peak_after =
        buckets.iter().filter(|&(&sec, _)| sec as f64 >= RECOVER_S).map(|(_, &n)| n).max().unwrap_or(0);
    JitterResult { mode, attempts, peak_after, last_ok_s: last_ok.round() as u64 }
}
