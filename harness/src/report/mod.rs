//! What a bench run leaves: `report.json` (one row per backend × design, with the run's
//! parameters, versions and machine) and the article-style table printed at the end.

mod audit;
mod audit_charts;
mod chart;
mod history;
mod html;
mod markdown;
mod metrics;
mod page;
mod sections;
mod subjects;
mod table;
mod verdict_grid;

use std::path::Path;

use receivers::design::Design;
use receivers::store::Backend;
use serde::{Deserialize, Serialize};

pub use crate::stats::LatencyBuckets;
pub use audit::{audit_markdown, audit_parameters, render_audit_table};
pub use audit_charts::audit_chart_titles;
pub use history::{Comparison, compare, rebuild_index, run_label, trend_key};
pub use html::{chart_titles, render_html};
pub use markdown::render_markdown;
pub use metrics::render_metrics;
pub use sections::{Section, experiment_sections, sections};
pub use sections::{markdown as sections_markdown, text as sections_text};
pub use subjects::{AUDIT_FIGURES, BENCH_FIGURES, audit_scopes, bench_scopes};
pub use table::render_table;

use crate::chaos::{Chaos, ChaosCounts};
use crate::checker::Figures;
use crate::experiments::Experiments;
use crate::machine::Machine;
use crate::model::HandlerResult;
use crate::sender::RetryPolicy;
use crate::stats::{Percentiles, Spectrum};

/// The run's parameters.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Parameters {
    /// Seed of every draw.
    pub seed: u32,
    /// Logical events.
    pub events: usize,
    /// Worker processes per cell.
    pub workers: usize,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Events per second (`null`: as fast as the concurrency allows).
    pub rate: Option<f64>,
    /// Simulated work per delivery.
    pub work_delay: String,
    /// Per-attempt timeout.
    pub timeout: String,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Postgres isolation.
    pub isolation: String,
    /// Inbox claim loops per worker.
    pub inbox_workers: usize,
    /// Fault chances.
    pub p_duplicate: f64,
    /// Chance a 2xx is lost.
    pub p_ack_lost: f64,
    /// Chance of a concurrent pair.
    pub p_concurrent: f64,
    /// Chance of a shuffle.
    pub p_shuffle: f64,
    /// Chaos during each cell (`--chaos`).
    #[serde(default)]
    pub chaos: Vec<Chaos>,
    /// Chance a credit event is poison (`--poison`).
    #[serde(default)]
    pub poison: f64,
}

/// Versions of what ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Versions {
    /// hookbench's version.
    pub hookbench: String,
    /// The Postgres server's version, when Postgres ran.
    pub postgres: Option<String>,
    /// SQLite's version, when SQLite ran.
    pub sqlite: Option<String>,
    /// Where Postgres came from.
    pub postgres_origin: Option<String>,
}

/// Latency percentiles in microseconds (docs/design.md's `latency_us`).
pub type LatencyUs = Percentiles;

/// Where a cell's wall time went, seconds, phase by phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Phases {
    /// A fresh database, migrated, and the observer's connection.
    pub provision_s: f64,
    /// The worker processes started and answering their health checks.
    pub fleet_start_s: f64,
    /// The sender's deliveries (and chaos).
    pub deliver_s: f64,
    /// Waiting for the receivers to finish what they stored (the inbox drained).
    pub settle_s: f64,
    /// The workers stopped.
    pub fleet_stop_s: f64,
    /// The checker reading the database.
    pub check_s: f64,
    /// The events' and plan changes' lines into the history, the database discarded.
    pub history_and_cleanup_s: f64,
}

/// A cell's two percentile spectra.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySpectrum {
    /// From each attempt's planned send (coordinated omission corrected).
    pub planned: Spectrum,
    /// From each attempt's actual send.
    pub actual: Spectrum,
}

/// The model's figures for the handler a design runs.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelFigures {
    /// The article's handler the design is compared with.
    pub handler: String,
    /// Deliveries in the model.
    pub deliveries: u64,
    /// 5xx in the model.
    pub status_5xx: u64,
    /// The correctness figures.
    #[serde(flatten)]
    pub figures: Figures,
}

impl From<&HandlerResult> for ModelFigures {
    fn from(h: &HandlerResult) -> Self {
        Self {
            handler: h.label.to_string(),
            deliveries: h.deliveries,
            status_5xx: h.errors,
            figures: h.figures,
        }
    }
}

/// One backend × design cell that ran.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Row {
    /// postgres or sqlite.
    pub backend: Backend,
    /// The design.
    pub design: Design,
    /// Attempts sent.
    pub deliveries: u64,
    /// Attempts answered 2xx.
    pub status_2xx: u64,
    /// Attempts answered 4xx.
    pub status_4xx: u64,
    /// Attempts answered 5xx.
    pub status_5xx: u64,
    /// Attempts timed out or whose ack was lost.
    pub timeouts: u64,
    /// Attempts that were retries.
    pub retries: u64,
    /// The checker's figures: dup_events, extra_applies, lost, stale_writes, stale_accounts,
    /// ledger, expected.
    #[serde(flatten)]
    pub figures: Figures,
    /// Latency from each attempt's planned time to its response (coordinated omission corrected).
    pub latency_us: LatencyUs,
    /// Latency from each attempt's actual send to its response.
    pub latency_actual_us: LatencyUs,
    /// The planned-send latencies by bucket (what `--metrics` exports as a histogram).
    #[serde(default)]
    pub latency_buckets: LatencyBuckets,
    /// The percentile spectrum of `latency_us` (from the planned send) and of
    /// `latency_actual_us`, from the full histograms: what report.html's latency charts draw.
    #[serde(default)]
    pub latency_spectrum: LatencySpectrum,
    /// Attempts per second over the delivery phase.
    pub throughput_per_s: f64,
    /// The cell's wall time: workers up, deliveries, quiet, workers down, checker.
    pub wall_s: f64,
    /// Attempts that found no receiver.
    pub connect_errors: u64,
    /// Deliveries given up after the attempt limit.
    pub gave_up: u64,
    /// Sum of ledger rows' amounts (equals `ledger` unless something was half written).
    pub ledger_rows: i64,
    /// Inbox dead letters.
    pub dead_letters: u64,
    /// Bodies refused because their id was already stored with another body (read by the
    /// checker from `id_conflicts`; 0 in a bench, whose events keep one body each).
    #[serde(default)]
    pub id_conflicts: u64,
    /// What chaos did during the cell.
    #[serde(default)]
    pub chaos: ChaosCounts,
    /// Poison events in the workload (not in `lost` or `expected`).
    #[serde(default)]
    pub poisoned: u64,
    /// Poison events applied anyway (must be 0).
    #[serde(default)]
    pub poison_applied: u64,
    /// Attempts of poison events.
    #[serde(default)]
    pub poison_attempts: u64,
    /// Of those, answered with anything but a 2xx.
    #[serde(default)]
    pub poison_non_2xx: u64,
    /// The model's figures for the same seed.
    pub model: Option<ModelFigures>,
    /// Where the cell's wall time went.
    #[serde(default)]
    pub phases: Phases,
}

/// A cell that did not run, or broke.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CellNote {
    /// postgres or sqlite.
    pub backend: Backend,
    /// The design.
    pub design: Design,
    /// Why.
    pub reason: String,
}

/// Everything a bench run reports.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    /// The run's id (its directory name).
    pub run_id: String,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// The git commit it ran from, when known.
    pub git_sha: Option<String>,
    /// Parameters.
    pub parameters: Parameters,
    /// Versions.
    pub versions: Versions,
    /// The machine.
    pub machine: Machine,
    /// One row per cell that ran.
    pub rows: Vec<Row>,
    /// Cells that could not run (no Docker, no database), with the reason.
    pub skipped: Vec<CellNote>,
    /// Cells that started and broke, with the error.
    pub broken: Vec<CellNote>,
    /// The failure experiments that ran with this report (crash, jitter, retention).
    #[serde(default, skip_serializing_if = "Experiments::is_empty")]
    pub experiments: Experiments,
    /// The audit's verdicts, when this is an audit's report (`hookbench audit`); `rows` is then
    /// empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::audit::AuditSection>,
    /// The `--fail-on` thresholds and the rows that breached them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<crate::threshold::Outcome>,
    /// The run's history file beside this report (every attempt, then every event's fate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryFile>,
    /// The first witnesses of each anomaly in each cell, with their timelines (from the history).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub witnesses: Vec<crate::explain::CellWitnesses>,
    /// The shards this report was merged from (`hookbench merge`), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<crate::shard::Merged>,
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

impl HistoryFile {
    /// The history a run finished writing: `path`, with `lines` lines.
    pub fn written(path: &Path, lines: u64) -> Self {
        Self {
            file: path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
            lines,
            bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        }
    }
}

impl Report {
    /// A report of nothing yet: the run's id and parameters, this hookbench's version and commit,
    /// the machine, and the time.
    pub fn new(run_id: String, parameters: Parameters) -> Self {
        Self {
            run_id,
            started_at: jiff::Timestamp::now().to_string(),
            git_sha: crate::bench::git_sha(),
            parameters,
            versions: Versions { hookbench: env!("CARGO_PKG_VERSION").to_string(), ..Versions::default() },
            machine: Machine::detect(),
            rows: Vec::new(),
            skipped: Vec::new(),
            broken: Vec::new(),
            experiments: Experiments::default(),
            audit: None,
            thresholds: Vec::new(),
            history: None,
            witnesses: Vec::new(),
            shards: None,
        }
    }

    /// Writes `report.json` into `dir`.
    pub fn write_json(&self, dir: &Path) -> std::io::Result<std::path::PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("report.json");
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&path, json)?;
        Ok(path)
    }

    /// Writes report.json, report.md and report.html into `dir`.
    pub fn write_all(&self, dir: &Path) -> std::io::Result<std::path::PathBuf> {
        let json = self.write_json(dir)?;
        std::fs::write(dir.join("report.md"), render_markdown(self))?;
        std::fs::write(dir.join("report.html"), render_html(self))?;
        Ok(json)
    }

    /// The JSON Schema of `report.json`, generated from these types.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Report)).unwrap_or_default()
    }

    /// Reads a `report.json`.
    pub fn read_json(path: &Path) -> std::io::Result<Self> {
        let bytes = std::fs::read(path)?;
        serde_json::from_slice(&bytes).map_err(std::io::Error::other)
    }
}
