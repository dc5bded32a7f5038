//! The command line, a thin edge: `args` holds every flag, and each command has a module of its
//! own whose `run` turns the arguments into the library's config (refusing a bad combination
//! before anything starts, naming the flag), calls the library, and prints. Errors become
//! `anyhow` here and only here. Tests call [`run`] with parsed arguments and a buffer, so they
//! exercise the real binary's paths without spawning it.

mod args;
mod audit;
mod bench;
mod db;
mod experiments;
mod merge;
mod model;
mod perf;
mod report;
mod serve;
mod sign;

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

pub use args::*;

use crate::report::Report;
use crate::threshold::Threshold;

/// A command's ending that must reach the shell as a particular exit status (the audit's 1 for
/// a failed check, 2 for an audit that could not run).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    /// The status.
    pub code: u8,
    /// What to print.
    pub message: String,
}

/// The exit status of a run that went through and breached a `--fail-on` threshold (a run that
/// failed exits 1; an audit that could not run, 2).
pub const THRESHOLD_BREACHED: u8 = 3;

impl ThresholdArgs {
    /// The thresholds given on the command line and in `--fail-on-file`, each refused when it
    /// names a scope or figure this kind of run does not have.
    fn resolve(&self, scopes: &[&str], figures: &[&str]) -> anyhow::Result<Vec<Threshold>> {
        let mut all = self.fail_on.clone();
        if let Some(path) = &self.fail_on_file {
            all.extend(crate::threshold::read_file(path).map_err(anyhow::Error::msg)?);
        }
        for t in &all {
            t.check_names(scopes, figures)?;
        }
        Ok(all)
    }
}

/// Holds `report` to `thresholds` and keeps the outcomes in it.
fn hold_to(report: &mut Report, thresholds: &[Threshold]) {
    report.thresholds = crate::threshold::evaluate(thresholds, &report.subjects());
}

/// The exit a breached threshold asks for, if one was breached.
fn breached(report: &Report) -> Option<Exit> {
    let broken: Vec<&str> =
        report.thresholds.iter().filter(|o| !o.breached.is_empty()).map(|o| o.threshold.as_str()).collect();
    (!broken.is_empty()).then(|| Exit {
        code: THRESHOLD_BREACHED,
        message: format!("threshold breached: {}", broken.join(", ")),
    })
}

/// Parses the process's arguments, runs, and turns an error into a message and exit status 1
/// (or the status an [`Exit`] carries).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    raise_open_file_limit();
    let stdout = io::stdout();
    match run(cli, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("hookbench: error: {err:#}");
            match err.downcast_ref::<Exit>() {
                Some(exit) => ExitCode::from(exit.code),
                None => ExitCode::FAILURE,
            }
        }
    }
}

/// Runs one parsed command, writing its output to `out`.
pub fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<()> {
    match cli.command {
        Command::Bench(args) => bench::run(&args, out),
        Command::Audit(args) => audit::run(&args, out),
        Command::Merge(args) => merge::run(&args, out),
        Command::Perf(args) => perf::run(&args, out),
        Command::ServeOk { listen } => perf::run_ok_endpoint(listen, out),
        Command::Jitter(args) => experiments::run_jitter(&args, out),
        Command::Crash(args) => experiments::run_crash(&args, out),
        Command::Retention(args) => experiments::run_retention(&args, out),
        Command::Report(cmd) => report::run(cmd, out),
        Command::Explain(args) => explain(&args, out),
        Command::Model(args) => model::run(&args, out),
        Command::Sign(args) => sign::run(&args, out),
        Command::Serve(args) => serve::run(args, out),
        Command::Db(args) => db::run(&args, out),
    }
}

/// Raises this process's soft limit on open files to its hard limit: the jitter experiment holds
/// two sockets per delivery (1,000 deliveries by default), and a 1,024 soft limit is common.
fn raise_open_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// Logs to stderr, at `HOOKBENCH_LOG`'s level (warn by default).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HOOKBENCH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(io::stderr().is_terminal())
        .with_writer(io::stderr)
        .try_init();
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}

/// A run's id and directory: `--out` and its last component, else `reports/<prefix><time>-<sha>`.
fn run_dir(out: Option<&Path>, prefix: &str) -> (String, PathBuf) {
    let id = out.and_then(Path::file_name).map_or_else(
        || format!("{prefix}{}", crate::bench::default_run_id()),
        |n| n.to_string_lossy().into_owned(),
    );
    let dir = out.map_or_else(|| PathBuf::from("reports").join(&id), Path::to_path_buf);
    (id, dir)
}

/// Why a shard refuses `--fail-on` (bench and audit alike).
const FAIL_ON_SHARD: &str = "--fail-on applies to a whole run: give it to `hookbench merge`, not to --shard";

/// What a shard sent, in one line, and where its partial result is.
fn print_partial(partial: &crate::shard::Partial, path: &Path, out: &mut dyn Write) -> io::Result<()> {
    let c = &partial.counters;
    writeln!(
        out,
        "shard {}: {} groups, {} attempts ({} 2xx, {} 4xx, {} 5xx, {} timeouts) in {:.1} s",
        partial.shard,
        partial.groups,
        c.deliveries,
        c.status_2xx,
        c.status_4xx,
        c.status_5xx,
        c.timeouts,
        partial.elapsed_s
    )?;
    writeln!(out, "partial result: {}", path.display())
}

/// The executable workers run: `chosen` (a hidden flag for tests), else this one.
fn worker_exe(chosen: Option<&Path>) -> anyhow::Result<PathBuf> {
    match chosen {
        Some(p) => Ok(p.to_path_buf()),
        None => std::env::current_exe().context("finding hookbench's own executable"),
    }
}

/// `hookbench explain`.
fn explain(args: &ExplainArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let question = match (&args.event, args.anomaly) {
        (_, Some(class)) => crate::explain::Question::Anomaly(class, args.witnesses),
        (Some(id), None) => crate::explain::Question::Event(id.clone()),
        (None, None) => anyhow::bail!("give an EVENT_ID or --anomaly"),
    };
    let text = crate::explain::explain(&args.run_dir, &question, args.cell.as_deref())?;
    write!(out, "{text}")?;
    Ok(())
}
