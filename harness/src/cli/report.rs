//! `hookbench report`: render a run, rebuild the index, compare two runs, print the schema.

use std::io::Write;

use super::write_error;
use crate::printable;
use crate::report::{MAX_REPORT_BYTES, Report, compare, read_error_message, rebuild_index};
use clap::Subcommand;
use std::path::PathBuf;

/// `hookbench report` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum ReportCommand {
    /// Print the JSON Schema of report.json (generated from hookbench's types).
    Schema,
    /// Print the JSON Schema of a line of history.jsonl.
    HistorySchema,
    /// Print the JSON Schema of a command's --config file (generated from its flags), for
    /// editors: docs/schema/ holds both.
    ConfigSchema {
        /// The command whose config file.
        #[arg(value_parser = super::config_file::COMMANDS)]
        command: String,
    },
    /// (Re)write report.md and report.html beside a run's report.json.
    Render {
        /// The run's directory.
        run: PathBuf,
        /// The largest report.json read, bytes (default 16 MiB); a larger one is refused.
        #[arg(long, default_value_t = MAX_REPORT_BYTES)]
        max_report_bytes: u64,
    },
    /// Rebuild index.md and index.html: a row per run and trend charts of each cell's duplicate
    /// applies, stale accounts and p99 latency.
    Index {
        /// The directory holding one folder per run.
        #[arg(default_value = "reports")]
        dir: PathBuf,
        /// The largest report.json read, bytes (default 16 MiB); a run with a larger one is
        /// skipped, with a line saying so.
        #[arg(long, default_value_t = MAX_REPORT_BYTES)]
        max_report_bytes: u64,
    },
    /// Print what changed from run A to run B; exit 1 when a correctness figure got worse or p99
    /// latency grew past the threshold.
    Compare {
        /// The earlier run (its directory or its report.json).
        a: PathBuf,
        /// The later run.
        b: PathBuf,
        /// p99 growth that counts as a regression, as a fraction (0.5 = +50 %).
        #[arg(long, default_value_t = 0.5)]
        p99_threshold: f64,
        /// Growth of a non-zero correctness figure tolerated as run-to-run noise, as a fraction
        /// (0: every increase is a regression; growth from zero always is).
        #[arg(long, default_value_t = 0.0)]
        tolerance: f64,
        /// The largest report.json read, bytes (default 16 MiB); a larger one is refused.
        #[arg(long, default_value_t = MAX_REPORT_BYTES)]
        max_report_bytes: u64,
    },
}

/// A run's report, from its directory or its report.json of at most `limit` bytes.
fn read_run(path: &std::path::Path, limit: u64) -> anyhow::Result<Report> {
    let json = if path.is_dir() { path.join("report.json") } else { path.to_path_buf() };
    Report::read_json_capped(&json, limit).map_err(|e| super::usage(read_error_message(&json, &e)))
}

/// `hookbench report ...`.
pub(super) fn run(cmd: ReportCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    match cmd {
        ReportCommand::Schema => {
            writeln!(out, "{}", serde_json::to_string_pretty(&Report::json_schema())?)?;
        }
        ReportCommand::HistorySchema => {
            writeln!(out, "{}", serde_json::to_string_pretty(&crate::history::Line::json_schema())?)?;
        }
        ReportCommand::ConfigSchema { command } => {
            let schema = super::config_file::json_schema(&command)
                .ok_or_else(|| super::usage(format!("{command} takes no --config")))?;
            writeln!(out, "{}", serde_json::to_string_pretty(&schema)?)?;
        }
        ReportCommand::Render { run, max_report_bytes } => {
            let report = read_run(&run, max_report_bytes)?;
            report
                .write_pages(&run)
                .map_err(|e| write_error(e, format!("writing into {}", run.display())))?;
            writeln!(out, "wrote {0}/report.md and {0}/report.html", run.display())?;
        }
        ReportCommand::Index { dir, max_report_bytes } => {
            let n = rebuild_index(&dir, max_report_bytes)
                .map_err(|e| write_error(e, format!("indexing {}", dir.display())))?;
            writeln!(out, "indexed {n} runs into {0}/index.md and {0}/index.html", dir.display())?;
        }
        ReportCommand::Compare { a, b, p99_threshold, tolerance, max_report_bytes } => {
            let (ra, rb) = (read_run(&a, max_report_bytes)?, read_run(&b, max_report_bytes)?);
            let c = compare(&ra, &rb, p99_threshold, tolerance);
            if c.changes.is_empty() && c.regressions.is_empty() {
                writeln!(out, "no change")?;
            }
            // Each line quotes the reports (a cell, a retention schedule): escaped for the terminal.
            for line in &c.changes {
                writeln!(out, "{}", printable::line(line))?;
            }
            if !c.regressions.is_empty() {
                writeln!(out, "\nregressions:")?;
                for line in &c.regressions {
                    writeln!(out, "  {}", printable::line(line))?;
                }
                return Err(super::failed(format!(
                    "{} regression(s) from {} to {}",
                    c.regressions.len(),
                    a.display(),
                    b.display()
                )));
            }
        }
    }
    Ok(())
}
