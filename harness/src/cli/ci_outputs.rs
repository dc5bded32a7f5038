//! What `bench`, `audit` and `merge` write for a CI beside their reports: `--junit FILE`,
//! `--metrics FILE`, and the verdict grid appended to the GitHub step summary. The step summary's
//! path comes from `GITHUB_STEP_SUMMARY`, read once in [`super::main`] (the binary's edge) and
//! passed down, so that tests calling [`super::run`] never write where a developer's environment
//! points.
//!
//! Each is written as the report files are ([`crate::files`]): never through a symlink, only to a
//! regular file, without blocking. Each path is also looked at before the run starts, so a FIFO or
//! a link planted there ends the run at once (exit 2) instead of after minutes of sending.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{Cli, Command, write_error};
use crate::report::{Report, render_junit, render_metrics, render_step_summary};

/// The variable GitHub Actions sets to the step summary's file.
pub const STEP_SUMMARY_ENV: &str = "GITHUB_STEP_SUMMARY";

/// The CI outputs a run writes besides its reports.
#[derive(Debug, Clone, Default, Args)]
pub struct CiOutputArgs {
    /// Also write the verdicts to FILE as JUnit XML: one testcase per audit check or bench cell
    /// (and per --fail-on threshold), a FAIL as a failure with its evidence and first witnesses,
    /// a SKIPPED as skipped (docs/reports.md). A regular file only: a symlink or a FIFO there is
    /// refused before the run starts.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write the run's verdicts and figures to FILE in the Prometheus text format (for a
    /// node_exporter textfile collector or a push gateway; docs/reports.md). A regular file only,
    /// as --junit.
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// The step summary to append the verdict grid to: `GITHUB_STEP_SUMMARY`, set by `main`,
    /// never a flag.
    #[arg(skip)]
    pub step_summary: Option<PathBuf>,
}

impl CiOutputArgs {
    /// Refuses `--junit` or `--metrics` for a shard ([`SHARD_OUTPUT`]) before anything is sent.
    pub fn refuse_for_shard(&self) -> anyhow::Result<()> {
        let given = [("--junit", &self.junit), ("--metrics", &self.metrics)];
        match given.iter().find(|(_, path)| path.is_some()) {
            Some((flag, _)) => Err(super::usage(format!("{flag} {SHARD_OUTPUT}"))),
            None => Ok(()),
        }
    }

    /// The files this run will write, each with what goes into it.
    fn files(&self) -> impl Iterator<Item = (Output, &Path)> {
        [
            (Output::Junit, &self.junit),
            (Output::Metrics, &self.metrics),
            (Output::StepSummary, &self.step_summary),
        ]
        .into_iter()
        .filter_map(|(output, path)| path.as_deref().map(|p| (output, p)))
    }

    /// Refuses, before the run starts (exit 2, naming the flag or the variable), a file that is
    /// there and that the run will not write at its end: a symlink, a FIFO, a device.
    pub fn refuse_unwritable(&self) -> anyhow::Result<()> {
        for (output, path) in self.files() {
            crate::files::refuse_unwritable(path)
                .map_err(|why| super::usage(format!("{} {why}", output.named_by())))?;
        }
        Ok(())
    }

    /// Writes the JUnit and metrics files and appends to the step summary, as asked, after the
    /// reports; an error names the flag or the variable, and the path, and is exit 2.
    pub fn write(&self, report: &Report) -> anyhow::Result<()> {
        for (output, path) in self.files() {
            // Exit 2 either way: the run went through, but what the CI was told to read is not there.
            output.write(report, path).map_err(|e| {
                let doing = format!("writing {} {}", output.named_by(), path.display());
                super::usage(format!("{:#}", write_error(e, doing)))
            })?;
        }
        Ok(())
    }
}

/// One of the CI outputs.
#[derive(Debug, Clone, Copy)]
enum Output {
    Junit,
    Metrics,
    StepSummary,
}

impl Output {
    /// The flag or the variable that names its file.
    fn named_by(self) -> &'static str {
        match self {
            Self::Junit => "--junit",
            Self::Metrics => "--metrics",
            Self::StepSummary => STEP_SUMMARY_ENV,
        }
    }

    /// Writes it (the step summary appended to, keeping what earlier steps wrote).
    fn write(self, report: &Report, path: &Path) -> std::io::Result<()> {
        use crate::files::{append_to_regular, write_nofollow};
        match self {
            Self::Junit => {
                let xml = render_junit(report).map_err(std::io::Error::other)?;
                write_nofollow(path, xml.as_bytes())
            }
            Self::Metrics => {
                let text = render_metrics(report).map_err(std::io::Error::other)?;
                write_nofollow(path, text.as_bytes())
            }
            Self::StepSummary => append_to_regular(path, render_step_summary(report).as_bytes()),
        }
    }
}

/// Why a shard, which writes no verdict, takes no `--junit` or `--metrics`: the file would never
/// come.
pub const SHARD_OUTPUT: &str =
    "needs a verdict, which a shard does not reach: give it to `hookbench merge`, not to --shard";

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
