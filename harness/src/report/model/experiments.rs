//! The failure experiments as a report records them (`hookbench crash`, `jitter`, `retention`,
//! or `bench --experiments`): the real rows beside the model's. `experiments` runs them, and the
//! article's one-process model computes the model's rows.

use serde::{Deserialize, Serialize};

use crate::matrix::{Backend, Design};

/// The experiments' sections of a report; each is empty unless its experiment ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Experiments {
    /// `hookbench crash`: one row per backend and design.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crash: Vec<CrashRow>,
    /// `hookbench jitter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterSection>,
    /// `hookbench retention`: one run per backend.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retention: Vec<RetentionRun>,
    /// Parts that could not run, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

impl Experiments {
    /// Whether no experiment ran.
    pub fn is_empty(&self) -> bool {
        self.crash.is_empty() && self.jitter.is_none() && self.retention.is_empty() && self.errors.is_empty()
    }
}

/// One row of the real crash table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CrashRow {
    /// The backend.
    pub backend: Backend,
    /// The design.
    pub design: Design,
    /// Events sent.
    pub events: u64,
    /// Worker processes that died by SIGABRT (the injected crash), counted from their exits.
    pub crashes: u64,
    /// Worker exits of any other kind (should be 0).
    pub other_exits: u64,
    /// Dedupe keys in the database at the end (`processed_events`, or inbox rows).
    pub keys: u64,
    /// Events with a ledger row.
    pub applied: u64,
    /// Events without one.
    pub lost: u64,
    /// The sum of all accounts' credits.
    pub ledger: i64,
    /// Every event applied once.
    pub expected: i64,
    /// HTTP attempts made.
    pub attempts: u64,
    /// The model's row for the same design (`split` and `atomic`; the article has no inbox row).
    pub model: Option<CrashResult>,
}

/// One row of the crash table.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CrashResult {
    /// Which design.
    pub design: CrashDesign,
    /// Events sent.
    pub events: u64,
    /// Process deaths.
    pub crashes: u64,
    /// Dedupe keys stored at the end.
    pub keys: u64,
    /// Events whose side effect happened.
    pub applied: u64,
    /// Events never applied.
    pub lost: u64,
    /// Sum of credits.
    pub ledger: i64,
    /// What the ledger should be.
    pub expected: i64,
}

/// Where the dedupe key is committed relative to the side effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CrashDesign {
    /// The key commits on its own, then the side effect runs.
    Split,
    /// Key and side effect commit in one transaction.
    Atomic,
}

/// The jitter experiment as a report section: both modes, measured and modelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JitterSection {
    /// Deliveries failing together.
    pub deliveries: u32,
    /// When the receiver came back, in (unscaled) seconds.
    pub recover_s: f64,
    /// How much faster than the article's clock it ran.
    pub time_scale: f64,
    /// Measured at the receiver, one per mode.
    pub real: Vec<JitterMeasured>,
    /// The model's figures, one per mode.
    pub model: Vec<JitterResult>,
}

/// What the receiver saw in one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JitterMeasured {
    /// Without or with full jitter.
    pub mode: JitterMode,
    /// Requests that reached the receiver.
    pub attempts: u64,
    /// Most arrivals in one scaled second at or after recovery.
    pub peak_after: u64,
    /// When the last 200 was answered, in scaled seconds.
    pub last_ok_s: f64,
    /// Arrivals in each scaled second from the start (index = whole second).
    #[serde(default)]
    pub arrivals_per_s: Vec<u64>,
    /// How far the attempts due at or after recovery arrived behind the time they were due, 99th
    /// percentile, in scaled seconds. Above one scaled second the machine could not put them
    /// through as fast as they fell due at this time scale, and the peak per second understates
    /// the spike (a real second holds `time_scale` times as many requests).
    #[serde(default)]
    pub recovery_late_p99_s: f64,
}

/// What the sender experiment measures.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct JitterResult {
    /// Which mode.
    pub mode: JitterMode,
    /// Every attempt made.
    pub attempts: u64,
    /// Most attempts in one second at or after recovery.
    pub peak_after: u64,
    /// When the last delivery succeeded, in whole seconds.
    pub last_ok_s: u64,
}

/// Backoff with or without jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JitterMode {
    /// Wait exactly `min(cap, base * 2^k)`.
    NoJitter,
    /// Wait a uniform draw in `[0, min(cap, base * 2^k))`.
    FullJitter,
}

/// A retention run on one backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RetentionRun {
    /// The backend.
    pub backend: Backend,
    /// Events per schedule.
    pub events: u64,
    /// One row per schedule and key lifetime.
    pub rows: Vec<RetentionRow>,
    /// Attempts delivered to the store.
    pub visits: u64,
    /// Times the purge job ran.
    pub purges: u64,
    /// Keys it deleted.
    pub keys_purged: u64,
    /// The most keys held at once (read before each purge).
    pub peak_keys: u64,
    /// Keys left after a last purge 31 virtual days after the last attempt (0: every key expired
    /// and was deleted).
    pub keys_left: u64,
    /// Wall time of the replay, in seconds.
    pub wall_s: f64,
}

/// One row: duplicate applies through a real store keeping keys for `ttl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RetentionRow {
    /// The schedule's name.
    pub schedule: String,
    /// The key lifetime's label.
    pub ttl: String,
    /// Applies beyond one per event, counted from the ledger.
    pub duplicate_applies: u64,
    /// The model's figure.
    pub model: u64,
}
