//! The command line, a thin edge: one module per command, holding its flags (clap types) beside
//! its handler, which turns them into the library's config (refusing a bad combination before
//! anything starts, naming the flag), calls the library, and prints; `flags` holds the flag groups
//! several commands share. Errors become `anyhow` here and only here, each carrying the
//! [`ExitStatus`] it ends with. Tests call [`run`] with parsed arguments and a buffer, so they
//! exercise the real binary's paths without spawning it.

mod audit;
mod bench;
mod ci_outputs;
mod config_file;
mod db;
mod discover;
mod experiments;
mod explain;
mod flags;
mod hidden_values;
mod merge;
mod model;
mod perf;
mod query_limits;
mod report;
mod repro;
mod serve;
mod sign;

use std::io::{self, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

pub use audit::AuditArgs;
pub use bench::BenchArgs;
pub use config_file::{ConfigArgs, ConfigError, Invocation, json_schema as config_json_schema, parse_from};
pub use flags::{PostgresArgs, ThresholdArgs, WorkloadArgs};

use crate::files::WriteRefused;
use crate::printable;
use crate::report::Report;
use crate::threshold::Threshold;

/// Does your webhook handler apply every event exactly once? hookbench measures it.
#[derive(Debug, Parser)]
#[command(name = "hookbench", version, about, long_about = None, args_override_self = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// hookbench's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the bench: the article's workload delivered for real, in parallel, to each design's
    /// worker processes on Postgres and SQLite, then checked from the database.
    ///
    /// Prints the article-style table (with latency, and the model's figures beside the real
    /// ones) and writes report.json, report.md and report.html into --out. Fails only when nothing
    /// could run or a cell broke.
    Bench(Box<BenchArgs>),
    /// Audit a receiver hookbench did not start, black-box: the article's go-live checklist
    /// (sequential duplicate, concurrent copies, lost ack, out of order, late replay, secret
    /// rotation, hostile input, parallel load) sent to URL, judged from what an observer saw
    /// applied: the receiver's own database through your queries, or a sink its side effect calls.
    ///
    /// Prints a verdict table and writes report.json, report.md and report.html into --out.
    /// Exits 0 when every check that ran passed, 1 when one failed, 2 when the audit could not
    /// run (unreachable URL, bad flags, an observer query that fails). docs/audit.md has examples.
    Audit(Box<AuditArgs>),
    /// Find what to audit: send one fresh credit, then its duplicate, then a delivery the
    /// receiver must refuse, and read what each changed in its database, table by table.
    ///
    /// Says in words (on stderr) what the credit and its duplicate did, which tables hold the
    /// effect and which are bookkeeping or logs (never evidence), and writes to stdout a --config
    /// file for `hookbench audit` whose queries judge the effect: `hookbench discover URL ... >
    /// hookbench.toml`. The database must be quiet (exit 2 naming the table another writer
    /// changes); discover never writes to it. Exit 2 when the credit is refused or changes
    /// nothing the audit can count.
    Discover(Box<discover::DiscoverArgs>),
    /// Merge the partial results of a sharded bench or audit (`bench --shard I/N`, `audit
    /// --shard I/N` in several processes or pods) into one run: latency histograms added
    /// exactly, counters summed, histories interleaved in time order, the checker (or the
    /// audit's observers) run once against the database the receivers shared, and --fail-on held
    /// to the merged figures. Writes the usual report files.
    ///
    /// Refuses shards of different runs (workload, seed, parameters, design, backend, hookbench
    /// version) or a shard missing or given twice, naming them. docs/scale.md.
    Merge(Box<merge::MergeArgs>),
    /// Measure how close hookbench gets to this machine's limits: the atomic design against
    /// pgbench running the same transaction, the same on SQLite against a plain sqlx loop and
    /// against the receivers' own transaction through SQLite's C API, and the sender against wrk
    /// and oha on a trivial endpoint, at the same connection count. Needs
    /// pgbench, wrk and oha (`just perf` installs them).
    Perf(perf::PerfArgs),
    /// A trivial endpoint answering 200 to everything (what `perf` measures the sender against).
    #[command(hide = true)]
    ServeOk {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
    /// The article's sender experiment for real: deliveries failing together against a receiver
    /// that answers 503 until it recovers, retrying with exponential backoff without and with full
    /// jitter; measured at the receiver, beside the model's figures.
    Jitter(experiments::JitterArgs),
    /// The article's crash test with real process deaths: a worker aborts after writing the
    /// dedupe key and before the side effect (chance 0.01 per delivery, keyed as in the article),
    /// is restarted, and the delivery retried. `split` (key committed on its own) loses those
    /// events; `atomic` and `inbox` do not. Crashes are counted from the workers' exit statuses.
    Crash(experiments::CrashArgs),
    /// The article's retention test against a real dedupe store whose keys expire (expires_at)
    /// and are purged, on a virtual clock: duplicate applies for each retry schedule and key
    /// lifetime, read from the ledger, beside the model's table.
    Retention(experiments::RetentionArgs),
    /// Explain a run's verdict from its history (history.jsonl): one event's every attempt (when
    /// it was planned, sent and answered, on which worker and connection, with what status) and
    /// what the checker found in the database; or, with --anomaly, the first witnesses of a class
    /// in each cell, each with its timeline.
    Explain(explain::ExplainArgs),
    /// Reports: render a run's Markdown and HTML, rebuild the history index, compare two runs,
    /// print report.json's JSON Schema.
    #[command(subcommand)]
    Report(report::ReportCommand),
    /// Print the article's simulation for a seed: handler table, traced event, same-second pairs,
    /// retention, crash and jitter tables, identical to the article's script from `events:` on.
    Model(model::ModelArgs),
    /// Print a provider's signature headers for a body (Standard Webhooks unless --signing names
    /// another), to try a receiver with curl; with --public-key, the public key of an asymmetric
    /// scheme's --secret as the provider's dashboard shows it.
    ///
    /// Example: hookbench sign --secret whsec_... --id evt_000001 body.json
    Sign(sign::SignArgs),
    /// Write an audit's FAIL as a standalone Python 3 script (standard library only), a pytest
    /// module (--pytest) or a Node script (--node) that reproduces it without hookbench: the same
    /// bodies and headers under fresh ids, signed afresh, sent as the check sent them, judged by
    /// the same query; exit 1 when reproduced, 0 when not, 2 when it cannot run. The secret is read
    /// from HOOKBENCH_SECRET when the script runs, never written.
    ///
    /// Example: hookbench repro reports/audit --check concurrent-copies --out repro.py
    Repro(repro::ReproArgs),
    /// Make a key pair for an asymmetric scheme (sendgrid: ECDSA P-256; discord: Ed25519). Prints
    /// `secret: ...` (base64 of the PKCS#8 private key, for --secret; keep it private) and
    /// `public-key: ...` (as the provider's dashboard shows it, for the receiver).
    Keys(sign::KeysArgs),
    /// Run one receiver worker: a design over Postgres or SQLite, serving
    /// `POST /webhooks/{source}` and `GET /healthz` until SIGTERM or Ctrl-C.
    ///
    /// Once it listens it prints one JSON line, `{"listening":"127.0.0.1:PORT","pid":...}`, so
    /// `--listen 127.0.0.1:0` works. Migrations are applied at start; a SQLite file is created
    /// if missing. Several workers may share one database.
    Serve(serve::ServeArgs),
    /// Provide a fresh database and print its URL, for `hookbench serve` or your own receiver.
    ///
    /// Prints one JSON line, `{"url":...,"backend":...}`, then holds the database (and the
    /// Postgres container, if it started one) until SIGTERM or Ctrl-C, when it drops the
    /// database unless --keep.
    Db(db::DbArgs),
}

/// How a command ends, as the shell sees it. Every error reaches one of these on purpose: 1 only
/// for a run that went through and failed, so that a CI step can tell an unsafe receiver from a
/// run that could not be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 1: the run went through and failed: an audit check failed, a bench cell broke.
    Failed = 1,
    /// 2: a bad flag or input, or a run that could not be done as asked (an unreachable
    /// receiver, an observer query that fails, a receiver the preflight says cannot be audited as
    /// told, a file that cannot be read or written, the async runtime that does not start): every
    /// error that is not a verdict.
    Usage = 2,
    /// 3: the run went through, passed, and breached a `--fail-on` threshold.
    Threshold = 3,
}

/// An ending that must reach the shell as a particular exit status, with what to print.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    /// The status.
    pub status: ExitStatus,
    /// What to print after `hookbench: ` (and `error: ` for a usage error).
    pub message: String,
}

impl Exit {
    /// The exit status's code.
    pub fn code(&self) -> u8 {
        self.status as u8
    }
}

/// A bad flag or input, or a run that could not run: exit 2.
pub(crate) fn usage(err: impl std::fmt::Display) -> anyhow::Error {
    Exit { status: ExitStatus::Usage, message: format!("{err:#}") }.into()
}

/// A run that went through and failed: exit 1, printed as `hookbench: <message>`.
pub(crate) fn failed(message: String) -> anyhow::Error {
    Exit { status: ExitStatus::Failed, message }.into()
}

impl ThresholdArgs {
    /// The thresholds given on the command line and in `--fail-on-file`, each refused when it
    /// names a scope or figure this kind of run does not have.
    fn resolve(&self, scopes: &[&str], figures: &[&str]) -> anyhow::Result<Vec<Threshold>> {
        let mut all = self.fail_on.clone();
        if let Some(path) = &self.fail_on_file {
            let limit = crate::threshold::MAX_FILE_BYTES;
            // A regular file within the limit: `/dev/zero` or a FIFO would be read without end.
            let text = crate::files::read_text_capped(path, limit, "a thresholds file")
                .map_err(|e| usage(format!("--fail-on-file {e}")))?;
            let shown = path.display().to_string();
            all.extend(crate::threshold::parse_file(&text, &shown).map_err(usage)?);
        }
        for t in &all {
            t.check_names(scopes, figures).map_err(usage)?;
        }
        Ok(all)
    }
}

/// Holds `report` to `thresholds` and keeps the outcomes in it.
fn hold_to(report: &mut Report, thresholds: &[Threshold]) {
    report.header.thresholds = crate::threshold::evaluate(thresholds, &report.subjects());
}

/// The exit a breached threshold asks for, if one was breached.
fn breached(report: &Report) -> Option<Exit> {
    let broken: Vec<&str> = report
        .header
        .thresholds
        .iter()
        .filter(|o| !o.breached.is_empty())
        .map(|o| o.threshold.as_str())
        .collect();
    (!broken.is_empty()).then(|| Exit {
        status: ExitStatus::Threshold,
        message: format!("threshold breached: {}", broken.join(", ")),
    })
}

/// Parses the process's arguments, runs, and turns an error into a message and its exit status:
/// `hookbench: error: ...` and 2 for a usage error, `hookbench: ...` and 1 or 3 for a run that
/// failed or breached a threshold, and `hookbench: error: ...` and 2 for any other error (I/O,
/// the runtime, a report that could not be written): the run could not be done, which is not a
/// failed verdict.
pub fn main() -> ExitCode {
    let cli = match parse_process_args() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let cli = cli.with_step_summary(std::env::var_os(ci_outputs::STEP_SUMMARY_ENV));
    raise_open_file_limit();
    let stdout = io::stdout();
    match run(cli, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => match err.downcast_ref::<Exit>() {
            Some(exit) if exit.status == ExitStatus::Usage => {
                eprintln!("hookbench: error: {}", printable::lines(&exit.message));
                ExitCode::from(exit.code())
            }
            Some(exit) => {
                eprintln!("hookbench: {}", printable::lines(&exit.message));
                ExitCode::from(exit.code())
            }
            None => {
                // Errors quote receivers, databases and files: none of their escapes reach the
                // terminal.
                eprintln!("hookbench: error: {}", printable::lines(&format!("{err:#}")));
                // Not `ExitCode::FAILURE`: 1 says the run went through and failed; this one could
                // not be done.
                ExitCode::from(ExitStatus::Usage as u8)
            }
        },
    }
}

/// The process's arguments, with `--config`'s file read in; `Err` is how the process ends without
/// running: clap's own help, version or usage error, a config file refused (exit 2, naming its
/// line), or `--print-config`'s output printed (exit 0).
fn parse_process_args() -> Result<Cli, ExitCode> {
    match parse_from(std::env::args_os()) {
        Ok(Invocation::Run(cli)) => Ok(*cli),
        Ok(Invocation::Print(text)) => {
            print!("{text}");
            Err(ExitCode::SUCCESS)
        }
        Err(ConfigError::Args(e)) => e.exit(),
        Err(e @ (ConfigError::File { .. } | ConfigError::Hidden(_))) => {
            eprintln!("hookbench: error: {}", printable::lines(&e.to_string()));
            Err(ExitCode::from(ExitStatus::Usage as u8))
        }
    }
}

/// A report file that could not be written: a symbolic link or a FIFO planted where it goes is
/// bad input (exit 2), anything else could not be done.
fn write_error(e: io::Error, doing: String) -> anyhow::Error {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<WriteRefused>()) {
        Some(refused) => usage(refused.to_string()),
        None => anyhow::Error::new(e).context(doing),
    }
}

/// Runs one parsed command, writing its output to `out`.
pub fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<()> {
    match cli.command {
        Command::Bench(args) => bench::run(&args, out),
        Command::Audit(args) => audit::run(&args, out),
        Command::Discover(args) => discover::run(&args, out),
        Command::Merge(args) => merge::run(&args, out),
        Command::Perf(args) => perf::run(&args, out),
        Command::ServeOk { listen } => perf::run_ok_endpoint(listen, out),
        Command::Jitter(args) => experiments::run_jitter(&args, out),
        Command::Crash(args) => experiments::run_crash(&args, out),
        Command::Retention(args) => experiments::run_retention(&args, out),
        Command::Report(cmd) => report::run(cmd, out),
        Command::Explain(args) => explain::run(&args, out),
        Command::Model(args) => model::run(&args, out),
        Command::Sign(args) => sign::run(&args, out),
        Command::Keys(args) => sign::run_keys(&args, out),
        Command::Repro(args) => repro::run(&args, out),
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
        || format!("{prefix}{}", crate::machine::default_run_id()),
        |n| n.to_string_lossy().into_owned(),
    );
    let dir = out.map_or_else(|| PathBuf::from("reports").join(&id), Path::to_path_buf);
    (id, dir)
}

/// Why a shard refuses `--fail-on` (bench and audit alike).
const FAIL_ON_SHARD: &str = "--fail-on applies to a whole run: give it to `hookbench merge`, not to --shard";

/// What a shard sent, in one line, and where its partial result is.
fn print_partial(
    partial: &crate::load::partial::Partial,
    path: &Path,
    out: &mut dyn Write,
) -> io::Result<()> {
    let c = &partial.counters;
    writeln!(
        out,
        "shard {}: {} groups, {} attempts ({} 2xx, {} 4xx, {} 5xx, {} timeouts, {} acks lost) in {:.1} s",
        partial.shard,
        partial.groups,
        c.deliveries,
        c.status_2xx,
        c.status_4xx,
        c.status_5xx,
        c.timeouts,
        c.acks_lost,
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
