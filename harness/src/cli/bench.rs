//! `hookbench bench`: its arguments as a [`BenchConfig`], the run, the table and the exit status.

use std::io::{self, IsTerminal, Write};

use crate::matrix::Design;
use crate::matrix::{Backend, Isolation};
use anyhow::Context;

use super::flags::{self, PostgresArgs, ReceiverArgs, ThresholdArgs, WorkloadArgs};
use super::{FAIL_ON_SHARD, breached, failed, hold_to, print_partial, run_dir, runtime, usage, worker_exe};
use crate::bench::{self, BenchConfig, Targets};
use crate::chaos::Chaos;
use crate::experiments;
use crate::report::{BENCH_FIGURES, bench_scopes, render_table};
use crate::sender::{RetryPolicy, SenderConfig};
use crate::threshold;
use crate::workload::Shard;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `hookbench bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Backends to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "postgres,sqlite")]
    pub backends: Vec<Backend>,
    /// Designs to run, comma-separated [default: all seven].
    #[arg(long, value_delimiter = ',')]
    pub designs: Vec<Design>,
    /// The workload.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Worker processes per cell.
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub workers: usize,
    /// Requests in flight at most.
    #[arg(long, default_value_t = 64, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=10_000))]
    pub concurrency: usize,
    /// Events per second, open loop (each plan position leaves at position / rate); 0 sends as
    /// fast as --concurrency allows. 0, or 0.01 to 1000000.
    #[arg(long, default_value_t = 2500.0, value_parser = flags::rate, allow_negative_numbers = true)]
    pub rate: f64,
    /// An attempt taking longer counts as a timeout and is retried (1ms to 1h).
    #[arg(long, default_value = "10s", value_parser = flags::duration_within(flags::MIN_TIMEOUT, flags::MAX_WAIT))]
    pub timeout: Duration,
    /// First retry's backoff ceiling (full jitter below it; 0s to 1h).
    #[arg(long, default_value = "10ms", value_parser = flags::duration_within(Duration::ZERO, flags::MAX_WAIT))]
    pub retry_base: Duration,
    /// Largest backoff ceiling (0s to 1h).
    #[arg(long, default_value = "1s", value_parser = flags::duration_within(Duration::ZERO, flags::MAX_WAIT))]
    pub retry_cap: Duration,
    /// Attempts per delivery, the first included, before it is given up.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_attempts: u32,
    /// How each receiver worker works.
    #[command(flatten)]
    pub receiver: ReceiverArgs,
    /// Isolation levels to run Postgres's and MySQL's cells at, comma-separated
    /// (read-committed,repeatable-read,serializable): each listed level runs as its own cells,
    /// named `postgres@serializable/atomic`. Default: once, at each database's own level
    /// (Postgres's READ COMMITTED, MySQL's and MariaDB's REPEATABLE READ), named in the report.
    /// SQLite runs once whatever is listed: its writers are serialized.
    #[arg(long, value_delimiter = ',')]
    pub isolation: Vec<Isolation>,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// The run's directory [default: reports/TIMESTAMP-SHA: the UTC time and the short git commit].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep each cell's database (Postgres and MySQL databases, SQLite files under --out).
    #[arg(long)]
    pub keep: bool,
    /// How long to wait for the receivers to go quiet after the last delivery (0s to 1h).
    #[arg(long, default_value = "120s", value_parser = flags::duration_within(Duration::ZERO, flags::MAX_WAIT))]
    pub quiet_timeout: Duration,
    /// Do not draw progress bars: plain lines instead, one per finished cell and, while a cell
    /// sends, its groups and attempts so far at least every 9 s (what a log without a terminal
    /// gets).
    #[arg(long)]
    pub no_progress: bool,
    /// The config file (`--config`) and `--print-config`.
    #[command(flatten)]
    pub config: super::ConfigArgs,
    /// Thresholds that fail the run.
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    /// The executable the workers run (`serve`) [default: this one].
    #[arg(long, hide = true)]
    pub worker_exe: Option<PathBuf>,
    /// Deliver to receivers that are already running (comma-separated webhook URLs, one design)
    /// instead of starting workers; needs --database-url (the database they share, which the
    /// checker reads), --secret and exactly one --designs.
    #[arg(long, value_delimiter = ',', requires = "secret")]
    pub targets: Vec<String>,
    /// The secret the --targets verify with.
    #[arg(long, env = "HOOKBENCH_SECRET", hide_env_values = true)]
    pub secret: Option<crate::wire::Whsec>,
    /// Chaos during each cell, KIND=RATE (strikes per second), repeatable or comma-separated:
    /// kill-worker=RATE SIGKILLs a random worker and restarts it; pg-terminate=RATE ends every
    /// receiver connection to the cell's Postgres database (pg_terminate_backend).
    #[arg(long, value_delimiter = ',', value_name = "KIND=RATE")]
    pub chaos: Vec<Chaos>,
    /// Chance a credit event is poison: sent with a negative amount, which passes the signature
    /// and the wire format and which the side effect refuses every time. The inbox acknowledges
    /// it and leaves it as a dead letter after 5 attempts; the other designs answer 500. 0 to 1.
    #[arg(long, default_value_t = 0.0, value_name = "CHANCE", value_parser = flags::chance, allow_negative_numbers = true)]
    pub poison: f64,
    /// Failure experiments to run after the matrix, with their defaults, into the same report
    /// (comma-separated): crash, jitter, retention. Each is also its own command.
    #[arg(long, value_delimiter = ',')]
    pub experiments: Vec<experiments::Kind>,
    /// Compress the run's history (history.jsonl.zst) whatever its size; it is compressed anyway
    /// past 50,000 planned attempts.
    #[arg(long)]
    pub history_compress: bool,
    /// Witnesses per anomaly class (duplicate, lost, stale account) and cell in the report, each
    /// with its timeline from the history (`hookbench explain` lists more). 0 to 1000.
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1000))]
    pub witnesses: usize,
    /// Print where each cell's time went (provision, fleet start, deliveries, settle, fleet stop,
    /// checker, history and clean-up; report.json's `phases` holds them either way) and how long
    /// Postgres took to be ready.
    #[arg(long, short)]
    pub verbose: bool,
    /// JUnit XML (`--junit`), the Prometheus metrics (`--metrics`) and the GitHub step summary.
    #[command(flatten)]
    pub ci: super::ci_outputs::CiOutputArgs,
    /// Send only shard I of N (N at most 256) of the plan (the events whose index is I-1 modulo N, every copy and
    /// duplicate of each) to --targets, and write a partial result (shard.json and the shard's
    /// history, no verdict) for `hookbench merge`. Needs --targets; docs/scale.md.
    #[arg(long, value_name = "I/N", requires = "targets")]
    pub shard: Option<Shard>,
    /// Like --shard, with N shards (1 to 256) and this shard's index (from 0) taken from
    /// JOB_COMPLETION_INDEX, which a Kubernetes Indexed Job sets in each pod.
    #[arg(long, value_name = "N", conflicts_with = "shard", requires = "targets", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=crate::workload::MAX_SHARDS as u64))]
    pub shards: Option<usize>,
    /// When the plan's first position is due (RFC 3339, e.g. 2026-12-01T10:00:00Z), so that
    /// shards started apart keep one open-loop clock. A shard that starts late says so, sends what
    /// is already due at once, and still counts latencies from the planned times.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<jiff::Timestamp>,
}

impl TryFrom<&BenchArgs> for BenchConfig {
    type Error = anyhow::Error;

    /// The run the flags describe, refused (naming the flag) before anything starts when the
    /// flags cannot run together.
    fn try_from(args: &BenchArgs) -> anyhow::Result<Self> {
        let (run_id, out) = run_dir(args.out.as_deref(), "");
        let designs = if args.designs.is_empty() { Design::ALL.to_vec() } else { args.designs.clone() };
        let (backends, targets) = if args.targets.is_empty() {
            (args.backends.clone(), None)
        } else {
            let database_url =
                args.postgres.database_url.clone().context("--targets needs --database-url")?;
            let backend =
                Backend::of_url(&database_url).context("--database-url names no supported database")?;
            let secret = args.secret.clone().context("--targets needs --secret")?;
            (vec![backend], Some(Targets { urls: args.targets.clone(), database_url, secret }))
        };
        let shard = Shard::from_flags_and_env(args.shard, args.shards)?;
        let config = BenchConfig {
            shard,
            targets,
            backends,
            designs,
            workload: args.workload.config(),
            workers: args.workers,
            sender: SenderConfig {
                rate: (args.rate > 0.0).then_some(args.rate),
                concurrency: args.concurrency,
                timeout: args.timeout,
                retry: RetryPolicy {
                    base: args.retry_base,
                    cap: args.retry_cap,
                    max_attempts: args.max_attempts,
                },
                source: "bench".to_string(),
                record: false,
                history: None,
                shard: shard.unwrap_or_default(),
                start_at: args.start_at,
            },
            work_delay: args.receiver.work_delay,
            isolation: args.isolation.clone(),
            inbox_workers: args.receiver.inbox_workers,
            max_connections: args.receiver.max_connections,
            postgres: args.postgres.settings(),
            mysql: provision::MysqlSettings::from_env(),
            keep: args.keep,
            exe: worker_exe(args.worker_exe.as_deref())?,
            out,
            run_id,
            quiet_timeout: args.quiet_timeout,
            progress: !args.no_progress && io::stderr().is_terminal(),
            chaos: args.chaos.clone(),
            poison: args.poison,
            experiments: args.experiments.clone(),
            history_compress: args.history_compress,
            witnesses: args.witnesses,
            verbose: args.verbose,
        };
        config.validate()?;
        Ok(config)
    }
}

/// Runs the bench, writes its reports, prints its table; fails when nothing could run, a cell
/// broke, or an experiment part could not run.
pub(super) fn run(args: &BenchArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let thresholds = args.thresholds.resolve(&bench_scopes(), BENCH_FIGURES)?;
    // A bad flag or combination of flags is a usage error, like clap's own.
    let config = BenchConfig::try_from(args).map_err(usage)?;
    args.ci.refuse_unwritable()?;
    if let Some(shard) = config.shard {
        if !thresholds.is_empty() {
            return Err(usage(FAIL_ON_SHARD));
        }
        args.ci.refuse_for_shard()?;
        let partial = runtime()?.block_on(bench::run_shard(&config, shard))?;
        let path = config.out.join(crate::load::partial::PARTIAL_FILE);
        print_partial(&partial, &path, out)?;
        return Ok(());
    }
    let mut report = runtime()?.block_on(bench::run(&config)).map_err(usage)?;
    hold_to(&mut report, &thresholds);
    let dir = &config.out;
    let path =
        report.write_all(dir).map_err(|e| super::write_error(e, format!("writing {}", dir.display())))?;
    args.ci.write(&report)?;
    write!(out, "{}", render_table(&report))?;
    write!(out, "{}", threshold::render(&report.header.thresholds))?;
    writeln!(out, "\nreport: {}", path.display())?;
    let Some(b) = report.bench_body() else { return Ok(()) };
    if b.rows.is_empty() {
        return Err(failed("no cell could run".to_string()));
    }
    if !b.broken.is_empty() {
        return Err(failed(format!("{} cell(s) broke; see above and {}", b.broken.len(), path.display())));
    }
    if !b.experiments.errors.is_empty() {
        for e in &b.experiments.errors {
            eprintln!("hookbench: experiment {e}");
        }
        return Err(failed(format!(
            "{} experiment part(s) could not run; see {}",
            b.experiments.errors.len(),
            path.display()
        )));
    }
    breached(&report).map_or(Ok(()), |exit| Err(exit.into()))
}
