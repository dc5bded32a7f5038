//! `hookbench bench`: its arguments as a [`BenchConfig`], the run, the table and the exit status.

use std::io::{self, IsTerminal, Write};

use anyhow::{Context, bail};
use receivers::design::Design;
use receivers::store::Backend;

use super::{BenchArgs, FAIL_ON_SHARD, breached, hold_to, print_partial, run_dir, runtime, worker_exe};
use crate::bench::{self, BenchConfig, Targets};
use crate::report::{BENCH_FIGURES, bench_scopes, render_metrics, render_table};
use crate::sender::{RetryPolicy, SenderConfig};
use crate::shard::Shard;
use crate::threshold;

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
            isolation: args.receiver.isolation,
            inbox_workers: args.receiver.inbox_workers,
            max_connections: args.receiver.max_connections,
            postgres: args.postgres.settings(),
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
    let config = BenchConfig::try_from(args)?;
    if let Some(shard) = config.shard {
        if !thresholds.is_empty() {
            bail!(FAIL_ON_SHARD);
        }
        let partial = runtime()?.block_on(bench::run_shard(&config, shard))?;
        let path = config.out.join(crate::shard::PARTIAL_FILE);
        print_partial(&partial, &path, out)?;
        return Ok(());
    }
    let mut report = runtime()?.block_on(bench::run(&config))?;
    hold_to(&mut report, &thresholds);
    let dir = &config.out;
    let path = report.write_all(dir).with_context(|| format!("writing {}", dir.display()))?;
    if let Some(file) = &args.metrics {
        let text = render_metrics(&report).context("encoding the metrics")?;
        std::fs::write(file, text).with_context(|| format!("writing --metrics {}", file.display()))?;
    }
    write!(out, "{}", render_table(&report))?;
    write!(out, "{}", threshold::render(&report.thresholds))?;
    writeln!(out, "\nreport: {}", path.display())?;
    if report.rows.is_empty() {
        bail!("no cell could run");
    }
    if !report.broken.is_empty() {
        bail!("{} cell(s) broke; see above and {}", report.broken.len(), path.display());
    }
    if !report.experiments.errors.is_empty() {
        for e in &report.experiments.errors {
            eprintln!("hookbench: experiment {e}");
        }
        bail!("{} experiment part(s) could not run; see {}", report.experiments.errors.len(), path.display());
    }
    breached(&report).map_or(Ok(()), |exit| Err(exit.into()))
}
