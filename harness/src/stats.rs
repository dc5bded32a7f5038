//! Latency histograms (hdrhistogram) and delivery counters for one cell.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2Serializer};
use serde::{Deserialize, Serialize};

/// The report's types, which these histograms and counters fill in.
use crate::report::model::Fate;
pub use crate::report::model::{LatencyBuckets, Percentiles, Spectrum};

/// Highest latency a histogram holds, in microseconds (one hour); longer ones are clamped.
const MAX_US: u64 = 3_600_000_000;

/// Why a serialized histogram could not be added.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// Not base64.
    #[error("the histogram is not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// Not a V2 histogram, or one whose range does not fit.
    #[error("the histogram is not an HdrHistogram V2 one hookbench can add: {0}")]
    Decode(String),
    /// A thread panicked holding the histogram.
    #[error("the histogram's lock was poisoned")]
    Poisoned,
}

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

    /// The histogram in HdrHistogram's V2 format (what every HdrHistogram implementation reads),
    /// base64: how a shard hands its latencies to `merge`.
    pub fn to_v2_base64(&self) -> String {
        use base64::Engine as _;
        let mut bytes = Vec::new();
        if let Ok(h) = self.hist.lock() {
            // Writing into a Vec cannot fail, and the histogram's counts fit V2's encoding.
            let _ = V2Serializer::new().serialize(&*h, &mut bytes);
        }
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Adds a histogram that [`Latency::to_v2_base64`] wrote (a shard's) to this one: exactly,
    /// count by count, so the merged percentiles are those of all the samples together.
    pub fn add_v2_base64(&self, text: &str) -> Result<(), HistogramError> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
        let theirs: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramError::Decode(format!("{e:?}")))?;
        let mut mine = self.hist.lock().map_err(|_| HistogramError::Poisoned)?;
        mine.add(&theirs).map_err(|e| HistogramError::Decode(format!("{e:?}")))
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

/// The two latency histograms of a send: from each attempt's planned time and from its actual
/// send.
#[derive(Debug, Default)]
pub struct Histograms {
    /// From the planned time (coordinated omission corrected).
    pub intended: Latency,
    /// From the actual send.
    pub actual: Latency,
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
    /// Of the 5xx, those naming a database transaction conflict (pool.rs's `Answer::db_conflict`).
    pub db_conflicts: AtomicU64,
    /// Attempts that timed out: no answer within the timeout.
    pub timeouts: AtomicU64,
    /// Attempts answered 2xx whose answer the sender dropped on purpose (the article's lost ack:
    /// the receiver committed, the provider never heard), so that the event is sent again.
    pub acks_lost: AtomicU64,
    /// Attempts that found no receiver: no connection could be made.
    pub connect_errors: AtomicU64,
    /// Attempts whose connection broke before a whole answer came.
    pub resets: AtomicU64,
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

    /// Counts an attempt's fate (not the attempt itself: `deliveries` is bumped as it is sent).
    /// [`CounterSnapshot::count`] counts a history line's fate the same way.
    pub fn count(&self, fate: Fate) {
        match fate {
            Fate::TimedOut => Self::bump(&self.timeouts),
            Fate::NoConnection => Self::bump(&self.connect_errors),
            Fate::Reset => Self::bump(&self.resets),
            Fate::Answered(s) | Fate::AckLost(s) => match s {
                200..=299 => {
                    Self::bump(&self.status_2xx);
                    if matches!(fate, Fate::AckLost(_)) {
                        Self::bump(&self.acks_lost);
                    }
                }
                400..=499 => Self::bump(&self.status_4xx),
                500..=599 => Self::bump(&self.status_5xx),
                // A 1xx or 3xx is an answer with no class of its own here.
                _ => {}
            },
        }
    }

    /// A plain copy of the counters.
    pub fn snapshot(&self) -> CounterSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CounterSnapshot {
            deliveries: get(&self.deliveries),
            status_2xx: get(&self.status_2xx),
            status_4xx: get(&self.status_4xx),
            status_5xx: get(&self.status_5xx),
            db_conflicts: get(&self.db_conflicts),
            timeouts: get(&self.timeouts),
            acks_lost: get(&self.acks_lost),
            connect_errors: get(&self.connect_errors),
            resets: get(&self.resets),
            retries: get(&self.retries),
            gave_up: get(&self.gave_up),
            poison_attempts: get(&self.poison_attempts),
            poison_non_2xx: get(&self.poison_non_2xx),
        }
    }
}

impl std::ops::AddAssign for CounterSnapshot {
    /// Adds another shard's counters.
    fn add_assign(&mut self, o: Self) {
        self.deliveries += o.deliveries;
        self.status_2xx += o.status_2xx;
        self.status_4xx += o.status_4xx;
        self.status_5xx += o.status_5xx;
        self.db_conflicts += o.db_conflicts;
        self.timeouts += o.timeouts;
        self.acks_lost += o.acks_lost;
        self.connect_errors += o.connect_errors;
        self.resets += o.resets;
        self.retries += o.retries;
        self.poison_attempts += o.poison_attempts;
        self.poison_non_2xx += o.poison_non_2xx;
        self.gave_up += o.gave_up;
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
    /// Of the 5xx, those whose answer named a database transaction conflict (a serialization
    /// failure or a deadlock: the isolation level refusing a transaction). Read from the live
    /// answers: a history line does not carry it, so counters rebuilt from a history say 0.
    #[serde(default)]
    pub db_conflicts: u64,
    /// Timed out.
    pub timeouts: u64,
    /// Answered 2xx, the answer dropped on purpose (a lost ack); counted in `status_2xx` too.
    #[serde(default)]
    pub acks_lost: u64,
    /// Found no receiver: no connection could be made.
    pub connect_errors: u64,
    /// Had their connection broken before a whole answer came.
    #[serde(default)]
    pub resets: u64,
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

impl CounterSnapshot {
    /// Counts an attempt's fate, as [`Counters::count`] does (not the attempt: `deliveries`).
    pub fn count(&mut self, fate: Fate) {
        // Counts of attempts held in memory: far below u64::MAX, so these cannot wrap.
        match fate {
            Fate::TimedOut => self.timeouts += 1,
            Fate::NoConnection => self.connect_errors += 1,
            Fate::Reset => self.resets += 1,
            Fate::Answered(s) | Fate::AckLost(s) => match s {
                200..=299 => {
                    self.status_2xx += 1;
                    self.acks_lost += u64::from(matches!(fate, Fate::AckLost(_)));
                }
                400..=499 => self.status_4xx += 1,
                500..=599 => self.status_5xx += 1,
                _ => {}
            },
        }
    }

    /// The attempts by fate, in the words every progress line uses: `1100 2xx, 3 4xx, 60 5xx, 10
    /// timed out, 20 acks lost, 10 no connection, 0 reset` (a lost ack is a 2xx too).
    pub fn fates(&self) -> String {
        format!(
            "{} 2xx, {} 4xx, {} 5xx, {} timed out, {} acks lost, {} no connection, {} reset",
            self.status_2xx,
            self.status_4xx,
            self.status_5xx,
            self.timeouts,
            self.acks_lost,
            self.connect_errors,
            self.resets
        )
    }

    /// Attempts that got an answer: those the answer-time histogram holds.
    pub fn answered(&self) -> u64 {
        self.deliveries
            .saturating_sub(self.timeouts)
            .saturating_sub(self.connect_errors)
            .saturating_sub(self.resets)
    }
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

    /// Merging is exact: the percentiles of histograms written by shards and added up are those
    /// of one histogram holding every sample, at every point of the spectrum.
    #[test]
    fn shards_histograms_add_up_to_the_histogram_of_all_their_samples() {
        let all = Latency::default();
        let shards = [Latency::default(), Latency::default(), Latency::default()];
        // A skewed spread over six decades, dealt unevenly over the shards.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..60_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let us = 1 + (x % 1_000) * 10u64.pow(u32::try_from(x % 4).unwrap_or(0)) + i % 7;
            all.record(Duration::from_micros(us));
            shards[usize::try_from((x >> 32) % 3).unwrap_or(0)].record(Duration::from_micros(us));
        }
        let merged = Latency::default();
        for s in &shards {
            merged.add_v2_base64(&s.to_v2_base64()).expect("adds");
        }
        assert_eq!(merged.percentiles(), all.percentiles());
        assert_eq!(merged.spectrum(), all.spectrum());
        assert_eq!(merged.buckets(), all.buckets());
        assert!(shards.iter().all(|s| s.percentiles().count > 10_000), "every shard got samples");
        let bad = merged.add_v2_base64("bm90IGEgaGlzdG9ncmFt").expect_err("not V2");
        assert!(bad.to_string().contains("HdrHistogram V2"), "{bad}");
    }

    /// The sender's counters and merge's tally of a history count every fate alike.
    #[test]
    fn the_live_counters_and_a_snapshot_count_each_fate_alike() {
        let fates = [
            Fate::Answered(200),
            Fate::Answered(204),
            Fate::Answered(409),
            Fate::Answered(503),
            Fate::Answered(302),
            Fate::AckLost(200),
            Fate::TimedOut,
            Fate::NoConnection,
            Fate::NoConnection,
            Fate::Reset,
        ];
        let (live, mut tally) = (Counters::default(), CounterSnapshot::default());
        for f in fates {
            Counters::bump(&live.deliveries);
            live.count(f);
            tally.deliveries += 1;
            tally.count(f);
        }
        assert_eq!(live.snapshot(), tally);
        let expected = CounterSnapshot {
            deliveries: 10,
            status_2xx: 3,
            status_4xx: 1,
            status_5xx: 1,
            timeouts: 1,
            acks_lost: 1,
            connect_errors: 2,
            resets: 1,
            ..CounterSnapshot::default()
        };
        assert_eq!(tally, expected);
        assert_eq!(tally.answered(), 6, "answers: 200, 204, 409, 503, 302 and the lost ack's 200");
        assert_eq!(CounterSnapshot::default().answered(), 0);
        assert_eq!(tally.fates(), "3 2xx, 1 4xx, 1 5xx, 1 timed out, 1 acks lost, 2 no connection, 1 reset");
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
