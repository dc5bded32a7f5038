//! Latency histograms (hdrhistogram) and delivery counters for one cell.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency a histogram holds, in microseconds (one hour); longer ones are clamped.
const MAX_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds, safe to record into from many tasks.
#[derive(Debug)]
pub struct Latency {
    hist: Mutex<Histogram<u64>>,
}

impl Default for Latency {
    fn default() -> Self {
        let hist = Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds");
        Self { hist: Mutex::new(hist) }
    }
}

impl Latency {
    /// Records one latency.
    pub fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(MAX_US).clamp(1, MAX_US);
        if let Ok(mut h) = self.hist.lock() {
            // In bounds by the clamp, so recording cannot fail.
            let _ = h.record(us);
        }
    }

    /// Adds every latency `other` recorded to this one.
    pub fn merge(&self, other: &Latency) {
        // Two different histograms (a shard's into the send's), each locked once: no copy.
        if let (Ok(mut mine), Ok(theirs)) = (self.hist.lock(), other.hist.lock()) {
            // Same bounds on both sides, so adding cannot fail.
            let _ = mine.add(&*theirs);
        }
    }

    /// The percentiles recorded so far.
    pub fn percentiles(&self) -> Percentiles {
        let Ok(h) = self.hist.lock() else {
            return Percentiles::default();
        };
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            count: h.len(),
        }
    }

    /// How many latencies fell in each of [`BUCKETS_S`] (each bucket's own count, the last one
    /// everything above), their sum and their count: a Prometheus histogram's figures.
    pub fn buckets(&self) -> LatencyBuckets {
        let Ok(h) = self.hist.lock() else {
            return LatencyBuckets::default();
        };
        let mut below = 0;
        let mut buckets = Vec::with_capacity(BUCKETS_S.len() + 1);
        for &le in BUCKETS_S {
            let upto = h.count_between(0, (le * 1e6) as u64);
            buckets.push((le, upto - below));
            below = upto;
        }
        buckets.push((f64::MAX, h.len() - below));
        LatencyBuckets { sum_s: h.mean() * h.len() as f64 / 1e6, count: h.len(), buckets }
    }
}

/// Latencies along the percentile spectrum HdrHistogram draws, read from the full histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spectrum {
    /// The percentiles, from 0 to 99.999 in even steps of `log10(1/(1-p))` (ten a decade).
    pub percentiles: Vec<f64>,
    /// The latency at each, microseconds.
    pub us: Vec<u64>,
}

/// Steps of the spectrum per decade of `1/(1-p)`, and its decades (to 99.999 %).
const SPECTRUM_STEPS: u32 = 10;
const SPECTRUM_DECADES: u32 = 5;

impl Latency {
    /// The latency at each point of the percentile spectrum (empty when nothing was recorded).
    pub fn spectrum(&self) -> Spectrum {
        let Ok(h) = self.hist.lock() else { return Spectrum::default() };
        if h.is_empty() {
            return Spectrum::default();
        }
        let quantiles: Vec<f64> = (0..=SPECTRUM_STEPS * SPECTRUM_DECADES)
            .map(|k| 1.0 - 10f64.powf(-f64::from(k) / f64::from(SPECTRUM_STEPS)))
            .collect();
        let us = quantiles.iter().map(|&q| h.value_at_quantile(q)).collect();
        Spectrum { percentiles: quantiles.iter().map(|q| (q * 1e5).round() / 1e3).collect(), us }
    }
}

/// The upper bounds of the latency buckets, seconds (Prometheus's defaults, from 1 ms).
pub const BUCKETS_S: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Latencies by bucket, for the Prometheus text format (`--metrics`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyBuckets {
    /// The sum of the latencies, seconds.
    pub sum_s: f64,
    /// How many.
    pub count: u64,
    /// Each bucket's upper bound (seconds; the last is every latency above the others) and its
    /// own count.
    pub buckets: Vec<(f64, u64)>,
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Percentiles {
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
    /// Samples.
    pub count: u64,
}

/// Delivery counters, updated by the sender's tasks.
#[derive(Debug, Default)]
pub struct Counters {
    /// Attempts sent.
    pub deliveries: AtomicU64,
    /// Attempts answered 2xx (lost acks included: the receiver did answer).
    pub status_2xx: AtomicU64,
    /// Attempts answered 4xx.
    pub status_4xx: AtomicU64,
    /// Attempts answered 5xx.
    pub status_5xx: AtomicU64,
    /// Attempts that timed out, or whose response was lost (the article's lost ack).
    pub timeouts: AtomicU64,
    /// Attempts that found no receiver (connection refused or reset).
    pub connect_errors: AtomicU64,
    /// Attempts that were retries.
    pub retries: AtomicU64,
    /// Deliveries given up after the attempt limit.
    pub gave_up: AtomicU64,
    /// Groups (first deliveries and duplicates) finished.
    pub groups_done: AtomicU64,
    /// Attempts of poison events.
    pub poison_attempts: AtomicU64,
    /// Attempts of poison events answered with anything but a 2xx.
    pub poison_non_2xx: AtomicU64,
}

impl Counters {
    /// Adds one to `c`.
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// A plain copy of the counters.
    pub fn snapshot(&self) -> CounterSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CounterSnapshot {
            deliveries: get(&self.deliveries),
            status_2xx: get(&self.status_2xx),
            status_4xx: get(&self.status_4xx),
            status_5xx: get(&self.status_5xx),
            timeouts: get(&self.timeouts),
            connect_errors: get(&self.connect_errors),
            retries: get(&self.retries),
            gave_up: get(&self.gave_up),
            poison_attempts: get(&self.poison_attempts),
            poison_non_2xx: get(&self.poison_non_2xx),
        }
    }
}

/// The counters at the end of a cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSnapshot {
    /// Attempts sent.
    pub deliveries: u64,
    /// Answered 2xx.
    pub status_2xx: u64,
    /// Answered 4xx.
    pub status_4xx: u64,
    /// Answered 5xx.
    pub status_5xx: u64,
    /// Timed out or lost their response.
    pub timeouts: u64,
    /// Found no receiver.
    pub connect_errors: u64,
    /// Were retries.
    pub retries: u64,
    /// Attempts of poison events.
    #[serde(default)]
    pub poison_attempts: u64,
    /// Of those, answered with anything but a 2xx.
    #[serde(default)]
    pub poison_non_2xx: u64,
    /// Deliveries given up.
    pub gave_up: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let l = Latency::default();
        for ms in 1..=1000u64 {
            l.record(Duration::from_micros(ms * 1000));
        }
        let p = l.percentiles();
        assert_eq!(p.count, 1000);
        // Three significant figures: within 0.1 %.
        assert!((499_000..=501_000).contains(&p.p50), "{p:?}");
        assert!((989_000..=991_000).contains(&p.p99), "{p:?}");
        assert!((999_000..=1_001_000).contains(&p.max), "{p:?}");
        assert_eq!(Latency::default().percentiles(), Percentiles::default());
    }

    #[test]
    fn latencies_beyond_the_bounds_are_clamped_not_lost() {
        let l = Latency::default();
        l.record(Duration::ZERO);
        l.record(Duration::from_secs(7200));
        let p = l.percentiles();
        assert_eq!(p.count, 2);
        assert!(p.max >= MAX_US);
    }
}
