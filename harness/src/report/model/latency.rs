//! Latencies as a report records them: percentiles, Prometheus buckets and the percentile
//! spectrum, in microseconds unless a field says otherwise (`stats` reads them from its
//! histograms).

use serde::{Deserialize, Serialize};

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

/// Latencies along the percentile spectrum HdrHistogram draws, read from the full histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spectrum {
    /// The percentiles, from 0 to 99.999 in even steps of `log10(1/(1-p))` (ten a decade).
    pub percentiles: Vec<f64>,
    /// The latency at each, microseconds.
    pub us: Vec<u64>,
}

/// The share of its planned rate under which a load fell behind its plan: it went out later than
/// planned, and its latencies from the plan include that wait.
pub const BEHIND: f64 = 0.97;

/// Why a load fell behind its plan, as far as hookbench can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "cause", rename_all = "kebab-case")]
pub enum BehindCause {
    /// Deliveries found every slot of the sender's in-flight cap taken by attempts the receiver
    /// had not answered yet, and waited: the receiver's answer time, at this cap.
    InFlightCap {
        /// The cap (`--concurrency`, or the step's own in a capacity ramp).
        cap: u64,
    },
    /// The cap never filled: the sender itself could not send at the rate on this machine.
    Machine,
}

/// A load's planned and achieved rates (events a second) when it fell behind its plan, else
/// `None` (on its plan, or a rate not measured).
pub fn behind(planned: Option<f64>, achieved: Option<f64>) -> Option<(f64, f64)> {
    match (planned, achieved) {
        (Some(p), Some(a)) if a < BEHIND * p => Some((p, a)),
        _ => None,
    }
}
