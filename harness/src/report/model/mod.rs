//! What a run reports, as plain data: a [`Header`] every run has, and a [`RunBody`] that is a
//! bench's cells or an audit's checks, so that every renderer matches the kind of run
//! exhaustively. report.json is this, serialized; `reports/report.schema.json` its JSON Schema.
//! Nothing here renders or runs anything.

mod audit;
mod bench;
mod subjects;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use audit::*;
pub use bench::*;
pub use subjects::{AUDIT_FIGURES, BENCH_FIGURES, audit_scopes, bench_scopes};

use crate::experiments::Experiments;
use crate::files::ReadError;
use crate::machine::Machine;

/// What every run's report has.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Header {
    /// The run's id (its directory name).
    pub run_id: String,
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
    pub thresholds: Vec<crate::threshold::Outcome>,
    /// The run's history file beside this report (every attempt, then the judge's verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryFile>,
    /// The shards this report was merged from (`hookbench merge`), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Merged>,
}

impl Header {
    /// The header of a run starting now: its id, this hookbench's version and commit, the
    /// machine, the time.
    pub fn new(run_id: String) -> Self {
        Self {
            run_id,
            started_at: jiff::Timestamp::now().to_string(),
            git_sha: crate::machine::git_sha(),
            versions: Versions { hookbench: env!("CARGO_PKG_VERSION").to_string(), ..Versions::default() },
            machine: Machine::detect(),
            thresholds: Vec::new(),
            history: None,
            shards: None,
        }
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
    pub witnesses: Vec<crate::explain::CellWitnesses>,
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
    /// A bench's report of nothing yet.
    pub fn bench(run_id: String, parameters: Parameters) -> Self {
        Self { header: Header::new(run_id), body: RunBody::Bench(BenchBody::new(parameters)) }
    }

    /// An audit's report.
    pub fn audit(run_id: String, audit: AuditSection) -> Self {
        Self { header: Header::new(run_id), body: RunBody::Audit { audit } }
    }

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

    /// Reads a `report.json` of at most [`MAX_REPORT_BYTES`].
    pub fn read_json(path: &Path) -> std::io::Result<Self> {
        Self::read_json_capped(path, MAX_REPORT_BYTES)
    }

    /// Reads a `report.json` of at most `limit` bytes: a larger one, a FIFO or a device is a
    /// [`crate::files::ReadError`] (inside the `io::Error`) before anything is read. One written
    /// before reports named their kind is read as what it was: an audit's when it has an `audit`
    /// section, else a bench's.
    pub fn read_json_capped(path: &Path, limit: u64) -> std::io::Result<Self> {
        let bytes = crate::files::read_capped(path, limit, "a report.json").map_err(std::io::Error::other)?;
        // Straight into the types when it names its kind: a serde_json::Value of a large report
        // is several times its size.
        if let Ok(report) = serde_json::from_slice(&bytes) {
            return Ok(report);
        }
        let mut value: serde_json::Value = serde_json::from_slice(&bytes).map_err(std::io::Error::other)?;
        if let Some(map) = value.as_object_mut()
            && !map.contains_key("kind")
        {
            let kind = if map.contains_key("audit") { "audit" } else { "bench" };
            map.insert("kind".to_string(), kind.into());
        }
        serde_json::from_value(value).map_err(std::io::Error::other)
    }

    /// Writes `report.json` into `dir`.
    pub fn write_json(&self, dir: &Path) -> std::io::Result<std::path::PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("report.json");
        let json = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::files::write_nofollow(&path, &json)?;
        Ok(path)
    }
}

/// The largest report.json read unless `--max-report-bytes` says otherwise: 16 MiB, twenty times
/// the largest in reports/ (800 kB: a report holds figures and a few witnesses per cell, not its
/// events). Rendering one costs some 30 times its size in memory (a 45 MiB report of nothing but
/// witnesses: 1.4 GiB), so the limit keeps `report render` and `report index` under 0.5 GiB.
pub const MAX_REPORT_BYTES: u64 = 16 << 20;

/// What went wrong reading the report.json at `path`, naming it once: a size limit, a FIFO or a
/// device names it already, and a JSON error does not. A larger report says which flag raises
/// the limit.
pub fn read_error_message(path: &Path, e: &std::io::Error) -> String {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<ReadError>()) {
        Some(r @ ReadError::TooLarge { .. }) => format!("{r} (--max-report-bytes raises it)"),
        Some(r) => r.to_string(),
        None => format!("{}: {e}", path.display()),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A report.json written before reports named their kind still reads, as what it was.
    #[test]
    fn a_report_without_its_kind_reads_as_what_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut bench = serde_json::to_value(Report::bench(
            "old".into(),
            serde_json::from_value(serde_json::json!({
                "seed": 1, "events": 10, "workers": 1, "concurrency": 2, "rate": null, "work_delay": "0s",
                "timeout": "10s", "retry": {"base": "10ms", "cap": "1s", "max_attempts": 10},
                "isolation": "read-committed", "inbox_workers": 2, "p_duplicate": 0.0, "p_ack_lost": 0.0,
                "p_concurrent": 0.0, "p_shuffle": 0.0
            }))
            .expect("parameters"),
        ))
        .expect("JSON");
        bench.as_object_mut().expect("an object").remove("kind");
        let path = dir.path().join("report.json");
        std::fs::write(&path, bench.to_string()).expect("write");
        let read = Report::read_json(&path).expect("reads");
        assert!(read.bench_body().is_some());
    }
}
