//! What a run leaves: report.json (the [`model`], plain data, serialized, with its schema), and
//! its [`render`]ers: report.md and report.html (a bench's verdict grid, tables and charts, or an
//! audit's verdicts and witnesses), the terminal tables, `--metrics` in the Prometheus text
//! format, the history index across runs and `report compare`, and its verdicts as CI reads them
//! (JUnit XML, the GitHub step summary: [`cases`]). Every renderer matches the kind of run
//! ([`RunBody`]) and reads only the model; the model renders nothing.
//!
//! The [`model`] is a layer of its own, far below the rest (lib.rs's `# Layout`): plain data that
//! imports only the judge, the workload and the matrix, so that the modules producing its figures
//! import it. What touches the world stays here: report.json read and written (`file.rs`), a new
//! run's header with its commit and machine (`start.rs`), and the rows as thresholds' subjects
//! (`subjects.rs`).

mod file;
pub mod model;
pub mod render;
mod start;
mod subjects;

use std::path::{Path, PathBuf};

pub use file::{MAX_REPORT_BYTES, read_error_message};
pub use model::*;
pub use render::*;
pub use subjects::{AUDIT_FIGURES, BENCH_FIGURES, audit_scopes, bench_scopes};

impl Report {
    /// Writes report.json, report.md and report.html into `dir`, through no symbolic link.
    pub fn write_all(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let json = self.write_json(dir)?;
        self.write_pages(dir)?;
        Ok(json)
    }

    /// Writes report.md and report.html into `dir`, through no symbolic link, leaving report.json
    /// as it is (`report render`: rewritten pretty, a report.json near its size limit would
    /// grow past it).
    pub fn write_pages(&self, dir: &Path) -> std::io::Result<()> {
        crate::files::write_nofollow(&dir.join("report.md"), render_markdown(self).as_bytes())?;
        crate::files::write_nofollow(&dir.join("report.html"), render_html(self).as_bytes())
    }

    /// The run's table for the terminal: a bench's cells, or an audit's verdicts.
    pub fn table(&self) -> String {
        match &self.body {
            RunBody::Bench(_) => render_table(self),
            RunBody::Audit { .. } => render_audit_table(self),
        }
    }
}
