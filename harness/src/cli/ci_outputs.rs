//! What `bench`, `audit` and `merge` write for a CI beside their reports: `--junit FILE`, and the
//! verdict grid appended to the GitHub step summary. The step summary's path comes from
//! `GITHUB_STEP_SUMMARY`, read once in [`super::main`] (the binary's edge) and passed down, so that
//! tests calling [`super::run`] never write where a developer's environment points.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{Cli, Command};
use crate::report::{Report, append_step_summary, render_junit};

/// The variable GitHub Actions sets to the step summary's file.
pub const STEP_SUMMARY_ENV: &str = "GITHUB_STEP_SUMMARY";

/// The CI outputs a run writes besides its reports.
#[derive(Debug, Clone, Default, Args)]
pub struct CiOutputArgs {
    /// Also write the verdicts to FILE as JUnit XML: one testcase per audit check or bench cell
    /// (and per --fail-on threshold), a FAIL as a failure with its evidence and first witnesses,
    /// a SKIPPED as skipped (docs/reports.md).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// The step summary to append the verdict grid to: `GITHUB_STEP_SUMMARY`, set by `main`,
    /// never a flag.
    #[arg(skip)]
    pub step_summary: Option<PathBuf>,
}

impl CiOutputArgs {
    /// Refuses `--junit` for a shard ([`JUNIT_SHARD`]) before anything is sent.
    pub fn refuse_for_shard(&self) -> Result<(), &'static str> {
        if self.junit.is_some() { Err(JUNIT_SHARD) } else { Ok(()) }
    }

    /// Writes the JUnit file and appends to the step summary, as asked; an error names the flag
    /// or the variable, and the path.
    pub fn write(&self, report: &Report) -> Result<(), String> {
        if let Some(path) = &self.junit {
            write_junit(report, path).map_err(|e| format!("--junit {}: {e}", path.display()))?;
        }
        if let Some(path) = &self.step_summary {
            append_step_summary(report, path)
                .map_err(|e| format!("{STEP_SUMMARY_ENV} {}: {e}", path.display()))?;
        }
        Ok(())
    }
}

/// `--junit` given to a shard, which writes no verdict: the file would never come.
pub const JUNIT_SHARD: &str =
    "--junit needs a verdict, which a shard does not reach: give it to `hookbench merge`, not to --shard";

fn write_junit(report: &Report, path: &Path) -> std::io::Result<()> {
    let xml = render_junit(report).map_err(std::io::Error::other)?;
    std::fs::write(path, xml)
}

impl Cli {
    /// The command with the step summary's path (`GITHUB_STEP_SUMMARY`'s value, when set and not
    /// empty) given to the commands that write one.
    pub fn with_step_summary(mut self, path: Option<std::ffi::OsString>) -> Self {
        let path = path.filter(|p| !p.is_empty()).map(PathBuf::from);
        match &mut self.command {
            Command::Bench(a) => a.ci.step_summary = path,
            Command::Audit(a) => a.ci.step_summary = path,
            Command::Merge(a) => a.ci.step_summary = path,
            _ => {}
        }
        self
    }
}
