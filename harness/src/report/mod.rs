//! What a run leaves: report.json (the [`model`], serialized, with its schema), and its renderers:
//! report.md and report.html (a bench's verdict grid, tables and charts, or an audit's verdicts
//! and witnesses), the terminal tables, `--metrics` in the Prometheus text format, the history
//! index across runs and `report compare`, a run's rows as the subjects of thresholds, and its
//! verdicts as CI reads them (JUnit XML, the GitHub step summary: [`cases`]). Every
//! renderer matches the kind of run ([`RunBody`]) and reads only the model.

mod audit;
mod audit_charts;
mod audit_grid;
pub mod cases;
mod chart;
mod escape;
mod history;
mod html;
mod junit;
mod markdown;
mod metrics;
pub mod model;
mod page;
#[cfg(test)]
mod proptests;
mod race_window;
pub mod remedy;
mod sections;
mod step_summary;
mod subjects;
mod table;
mod verdict_grid;

use std::path::{Path, PathBuf};

pub use crate::stats::LatencyBuckets;
pub use audit::{audit_markdown, render_audit_table};
pub use audit_charts::audit_chart_titles;
pub use history::{Comparison, compare, rebuild_index, run_label, trend_key};
pub use html::{chart_titles, render_html};
pub use junit::{JunitError, render_junit};
pub use markdown::render_markdown;
pub use metrics::render_metrics;
pub use model::*;
pub use sections::{Section, experiment_sections, sections};
pub use sections::{markdown as sections_markdown, text as sections_text};
pub use step_summary::render_step_summary;
pub use subjects::{AUDIT_FIGURES, BENCH_FIGURES, audit_scopes, bench_scopes};
pub use table::render_table;

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
