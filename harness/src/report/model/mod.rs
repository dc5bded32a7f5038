//! What a run reports, as plain data: a [`Header`] every run has, and a [`RunBody`] that is a
//! bench's cells or an audit's checks, so that every renderer matches the kind of run
//! exhaustively. report.json is this, serialized; `reports/report.schema.json` its JSON Schema.
//! Nothing here renders, runs or reads anything, and it imports only the judge, the workload and
//! the matrix: the figures other modules produce (latencies, chaos, the retry policy, the
//! provider, the machine, thresholds' outcomes, the experiments' rows, witnesses) are defined
//! here as the report records them, and their producers re-export them and keep their behaviour.

mod audit;
mod bench;
mod experiments;
mod fate;
mod latency;
pub mod witnesses;

use serde::{Deserialize, Serialize};

pub use audit::*;
pub use bench::*;
pub use experiments::*;
pub use fate::{Fate, NotAFate};
pub use latency::*;
pub use witnesses::CellWitnesses;

/// What every run's report has.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Header {
    /// The run's id (its directory name).
    pub run_id: String,
    /// The meaning of the report's figures: [`SCHEMA`] now; 3 in reports that did not count the
    /// database conflicts among the 5xx apart; 2 in reports whose `connect_errors`
    /// counted resets too; 1 (or absent) in reports whose `timeouts` counted the lost acks too,
    /// before `acks_lost` counted them apart.
    #[serde(default = "first_schema")]
    pub schema: u32,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// The git commit it ran from, when known.
    pub git_sha: Option<String>,
    /// Versions.
    pub versions: Versions,
    /// The machine.
    pub machine: Machine,
    /// The `--fail-on` thresholds and the rows that breached them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Outcome>,
    /// The run's history file beside this report (every attempt, then the judge's verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryFile>,
    /// The shards this report was merged from (`hookbench merge`), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Merged>,
}

/// The meaning of the figures this hookbench writes: 2 since `timeouts` counts only attempts that
/// timed out and `acks_lost` the answers dropped on purpose, and the latencies from the actual
/// send (`latency_actual_us`) are the answered attempts' alone; 3 since `connect_errors` counts
/// only attempts no connection was made for and `resets` those whose connection broke; 4 since
/// `db_conflicts` counts the 5xx that named a database transaction conflict.
pub const SCHEMA: u32 = 4;

/// The schema of a report that names none: written before figures changed meaning.
fn first_schema() -> u32 {
    1
}

/// The counters a report counts apart only since a schema: before it, the figure reads 0 and what
/// it counts is inside another (lost acks in `timeouts`, resets in `connect_errors`).
pub const APART_SINCE: [(&str, u32, &str); 3] =
    [("acks_lost", 2, "timeouts"), ("resets", 3, "connect_errors"), ("db_conflicts", 4, "status_5xx")];

impl Header {
    /// Whether the report counts `figure` at all: false for a counter its schema did not yet
    /// count apart, whose 0 means nothing.
    pub fn counts(&self, figure: &str) -> bool {
        APART_SINCE.iter().all(|&(name, since, _)| name != figure || self.schema >= since)
    }
}

/// A bench's part of a report.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BenchBody {
    /// Parameters.
    pub parameters: Parameters,
    /// One row per cell that ran.
    pub rows: Vec<Row>,
    /// Cells that could not run (no Docker, no database), with the reason.
    pub skipped: Vec<CellNote>,
    /// Cells that started and broke, with the error.
    pub broken: Vec<CellNote>,
    /// The failure experiments that ran with this report (crash, jitter, retention).
    #[serde(default, skip_serializing_if = "Experiments::is_empty")]
    pub experiments: Experiments,
    /// The first witnesses of each anomaly in each cell, with their timelines (from the history).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<CellWitnesses>,
}

impl BenchBody {
    /// A bench of nothing yet, run with `parameters`.
    pub fn new(parameters: Parameters) -> Self {
        Self {
            parameters,
            rows: Vec::new(),
            skipped: Vec::new(),
            broken: Vec::new(),
            experiments: Experiments::default(),
            witnesses: Vec::new(),
        }
    }
}

/// What kind of run a report is of, and what it found.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum RunBody {
    /// `hookbench bench` (or a merged bench): the cells.
    Bench(BenchBody),
    /// `hookbench audit` (or a merged audit): the checks.
    Audit {
        /// The audit's verdicts.
        audit: AuditSection,
    },
}

/// Everything a run reports.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    /// What every run has.
    #[serde(flatten)]
    pub header: Header,
    /// A bench's cells or an audit's checks.
    #[serde(flatten)]
    pub body: RunBody,
}

impl Report {
    /// The bench's part, if it is a bench's report.
    pub fn bench_body(&self) -> Option<&BenchBody> {
        match &self.body {
            RunBody::Bench(b) => Some(b),
            RunBody::Audit { .. } => None,
        }
    }

    /// The bench's part, to fill in.
    pub fn bench_body_mut(&mut self) -> Option<&mut BenchBody> {
        match &mut self.body {
            RunBody::Bench(b) => Some(b),
            RunBody::Audit { .. } => None,
        }
    }

    /// The audit's part, if it is an audit's report.
    pub fn audit_section(&self) -> Option<&AuditSection> {
        match &self.body {
            RunBody::Audit { audit } => Some(audit),
            RunBody::Bench(_) => None,
        }
    }

    /// A bench's rows (none for an audit).
    pub fn rows(&self) -> &[Row] {
        self.bench_body().map_or(&[], |b| b.rows.as_slice())
    }

    /// The JSON Schema of `report.json`, generated from these types.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Report)).unwrap_or_default()
    }
}

/// The shards of a merged run, as its report lists them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Merged {
    /// How many shards.
    pub count: usize,
    /// `--start-at` of the shards, when they were given one.
    pub start_at: Option<String>,
    /// Each shard, in index order.
    pub shards: Vec<ShardSummary>,
}

/// One shard as the merged report lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShardSummary {
    /// Which shard.
    pub shard: crate::workload::Shard,
    /// Its run id.
    pub run_id: String,
    /// The groups it sent.
    pub groups: usize,
    /// Its attempts.
    pub deliveries: u64,
    /// How late it started for `--start-at`, seconds.
    pub late_by_s: f64,
    /// From the planned start to its last answer, seconds.
    pub elapsed_s: f64,
}

/// The run's history file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryFile {
    /// Its name in the run's directory (`history.jsonl` or `history.jsonl.zst`).
    pub file: String,
    /// Lines written.
    pub lines: u64,
    /// Its size on disk.
    pub bytes: u64,
}

/// The machine a run happened on.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Machine {
    /// CPU model name.
    pub cpu: String,
    /// Logical cores available to this process.
    pub cores: usize,
    /// Total memory in bytes, when known.
    pub memory_bytes: Option<u64>,
    /// Operating system.
    pub os: String,
    /// CPU architecture.
    pub arch: String,
}

/// A threshold and the rows that breached it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Outcome {
    /// The expression.
    pub threshold: String,
    /// How many rows were in its scope and had the figure.
    pub rows: usize,
    /// Each row that breached it: its labels (`postgres/naive`) and the figure's value.
    pub breached: Vec<(String, f64)>,
}
