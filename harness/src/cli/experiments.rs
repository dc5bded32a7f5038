//! The failure experiments as commands of their own: `hookbench crash`, `jitter`, `retention`.

use std::io::Write;

use super::flags::PostgresArgs;
use super::{runtime, worker_exe};
use crate::experiments;
use crate::experiments::{self as lab, Experiments};
use crate::matrix::Backend;
use crate::matrix::Design;
use crate::report::{experiment_sections, sections_text};
use crate::workload::{ARTICLE_EVENTS, ARTICLE_SEED};
use clap::Args;
use std::path::PathBuf;

/// Arguments of `hookbench jitter`.
#[derive(Debug, Clone, Args)]
pub struct JitterArgs {
    /// Seed of the jitter draws (the model's).
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Deliveries that fail at the same moment.
    #[arg(long, default_value_t = crate::model::jitter::DELIVERIES, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub deliveries: u32,
    /// When the receiver comes back, in (unscaled) seconds (1 to 3600).
    #[arg(long, default_value_t = crate::model::jitter::RECOVER_S, value_parser = super::flags::number_within(1.0, 3600.0))]
    pub recover_s: f64,
    /// How much faster than the article's clock the run goes (100: its 300 s take 3 s; 1 to
    /// 10000).
    #[arg(long, default_value_t = experiments::jitter::TIME_SCALE, value_parser = super::flags::number_within(1.0, 10_000.0))]
    pub time_scale: f64,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `hookbench crash`.
#[derive(Debug, Clone, Args)]
pub struct CrashArgs {
    /// Seed of the crash draws (the article's).
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Credit events (the article's 2,000; fewer take the first ids, so the draws stay its own).
    #[arg(long, default_value_t = crate::model::crash::CRASH_EVENTS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub events: usize,
    /// Backends, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "postgres,sqlite")]
    pub backends: Vec<Backend>,
    /// Designs, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "split,atomic,inbox")]
    pub designs: Vec<Design>,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Print the rows as JSON.
    #[arg(long)]
    pub json: bool,
    /// The executable the worker runs (`serve`) [default: this one].
    #[arg(long, hide = true)]
    pub worker_exe: Option<PathBuf>,
}

/// Arguments of `hookbench retention`.
#[derive(Debug, Clone, Args)]
pub struct RetentionArgs {
    /// Seed of the draws (the article's).
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Events per schedule (the article's 10,000; each is replayed for 4 key lifetimes).
    #[arg(long, default_value_t = ARTICLE_EVENTS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=200_000))]
    pub events: usize,
    /// Backends, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "postgres,sqlite")]
    pub backends: Vec<Backend>,
    /// Attempts in flight at once (those due at the same virtual second).
    #[arg(long, default_value_t = experiments::retention::CONCURRENCY, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub concurrency: usize,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Print the runs as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `hookbench jitter`.
pub(super) fn run_jitter(args: &JitterArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if !(args.time_scale > 0.0 && args.recover_s > 0.0) {
        return Err(super::usage("--time-scale and --recover-s must be positive"));
    }
    let section =
        runtime()?.block_on(lab::run_jitter(args.seed, args.deliveries, args.recover_s, args.time_scale))?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&section)?)?;
        return Ok(());
    }
    let e = Experiments { jitter: Some(section), ..Experiments::default() };
    write!(out, "{}", sections_text(&experiment_sections(&e)))?;
    Ok(())
}

/// Prints an experiment's rows (as JSON or as its table) and fails if any part could not run.
fn print_experiment<T: serde::Serialize>(
    out: &mut dyn Write,
    json: bool,
    rows: &[T],
    section: Experiments,
    errors: &[String],
) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(rows)?)?;
    } else {
        write!(out, "{}", sections_text(&experiment_sections(&section)))?;
    }
    for e in errors {
        eprintln!("hookbench: {e}");
    }
    if !errors.is_empty() {
        return Err(super::failed(format!("{} part(s) of the experiment could not run", errors.len())));
    }
    Ok(())
}

/// `hookbench crash`.
pub(super) fn run_crash(args: &CrashArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let exe = worker_exe(args.worker_exe.as_deref())?;
    // The workers' logs (each injected abort says where it struck) go to a file, not the terminal.
    let log = std::env::temp_dir().join(format!("hookbench-crash-{}.log", std::process::id()));
    eprintln!("hookbench: worker logs in {}", log.display());
    let config = lab::crash::CrashConfig { seed: args.seed, events: args.events, exe, log: Some(log) };
    let (rows, errors) = runtime()?.block_on(async {
        // Made and dropped inside the runtime: dropping it stops its Postgres container.
        let setup = lab::Setup::new(args.backends.clone(), args.postgres.settings());
        lab::run_crash(&setup, &config, &args.designs).await
    });
    let section = Experiments { crash: rows.clone(), ..Experiments::default() };
    print_experiment(out, args.json, &rows, section, &errors)
}

/// `hookbench retention`.
pub(super) fn run_retention(args: &RetentionArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let (runs, errors) = runtime()?.block_on(async {
        let setup = lab::Setup::new(args.backends.clone(), args.postgres.settings());
        lab::run_retention(&setup, args.seed, args.events, args.concurrency).await
    });
    let section = Experiments { retention: runs.clone(), ..Experiments::default() };
    print_experiment(out, args.json, &runs, section, &errors)
}
