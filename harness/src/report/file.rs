//! report.json on disk: read to a size limit (never a FIFO or a device), older reports read as
//! what they were, written through no symbolic link; and the history file a report names.

use std::path::Path;

use super::{HistoryFile, Report};
use crate::files::ReadError;

impl Report {
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
