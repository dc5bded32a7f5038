//! `hookbench merge`: shards' partial results into one run's report, held to `--fail-on`.

use std::io::Write;

use super::flags::{MAX_WAIT, ThresholdArgs, duration_within};
use super::{breached, hold_to, run_dir, runtime, usage};
use crate::merge::{MergeConfig, merge};
use crate::report::{AUDIT_FIGURES, BENCH_FIGURES, Report, audit_scopes, bench_scopes};
use crate::threshold;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The longest `--wait` or `--settle-max`.
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Arguments of `hookbench merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The shards' directories (each with the shard.json and history a `bench --shard` wrote),
    /// or directories holding one subdirectory per shard.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Wait up to this long for shards that have not finished (as a Kubernetes Job started
    /// beside the shards does) before refusing a missing one (0s to 1 day: shards of a long load
    /// run for hours).
    #[arg(long, default_value = "0s", value_parser = duration_within(Duration::ZERO, DAY))]
    pub wait: Duration,
    /// The database the receivers shared [default: the one the shards recorded, when it needs no
    /// password].
    #[arg(long)]
    pub database_url: Option<String>,
    /// The merged run's directory [default: reports/merge-TIMESTAMP-SHA].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// How long to wait for the receivers to go quiet (the inbox drained) before checking (0s
    /// to 1h).
    #[arg(long, default_value = "120s", value_parser = duration_within(Duration::ZERO, MAX_WAIT))]
    pub quiet_timeout: Duration,
    /// A sharded audit's receiver database, read-only [default: the one the shards recorded, when
    /// it needs no password].
    #[arg(long, value_name = "URL")]
    pub observe_db: Option<String>,
    /// A sharded audit's observers count as settled after this long without a change (10ms to
    /// 10m).
    #[arg(long, default_value = "1s", value_parser = duration_within(Duration::from_millis(10), Duration::from_secs(600)))]
    pub quiet: Duration,
    /// A sharded audit's applied query, as given to its shards' `audit --applied-query`: merge
    /// runs only the queries given here, and refuses a shard that recorded other ones.
    #[arg(long, value_name = "SQL")]
    pub applied_query: Option<String>,
    /// A sharded audit's update applied query, as given to its shards
    /// (`audit --update-applied-query`).
    #[arg(long, value_name = "SQL")]
    pub update_applied_query: Option<String>,
    /// A sharded audit's state query, as given to its shards (`audit --state-query`).
    #[arg(long, value_name = "SQL")]
    pub state_query: Option<String>,
    /// A sharded audit's dead-letter query, as given to its shards (`audit --dead-letter-query`).
    #[arg(long, value_name = "SQL")]
    pub dead_letter_query: Option<String>,
    /// A sharded audit's balance query, as given to its shards (`audit --balance-query`).
    #[arg(long, value_name = "SQL")]
    pub balance_query: Option<String>,
    /// A sharded audit's count query, as given to its shards (`audit --count-query`).
    #[arg(long, value_name = "SQL")]
    pub count_query: Option<String>,
    /// What each of those queries may take.
    #[command(flatten)]
    pub query_limits: super::query_limits::QueryLimitArgs,
    /// The key the shards sealed their files with (each shard's HOOKBENCH_SHARD_KEY): every
    /// shard's shard.hmac must be this key's HMAC-SHA256 over its shard.json and history, or the
    /// shard is refused.
    #[arg(long, env = "HOOKBENCH_SHARD_KEY", hide_env_values = true, value_name = "KEY")]
    pub shard_key: Option<String>,
    /// How long to wait for them to settle at most (100ms to 1 day, as audit's).
    #[arg(long, default_value = "60s", value_parser = duration_within(Duration::from_millis(100), DAY))]
    pub settle_max: Duration,
    /// Witnesses per anomaly class in the report (0 to 1000).
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1000))]
    pub witnesses: usize,
    /// Thresholds that fail the run, held to the merged figures.
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    /// JUnit XML (`--junit`), the Prometheus metrics (`--metrics`) and the GitHub step summary.
    #[command(flatten)]
    pub ci: super::ci_outputs::CiOutputArgs,
}

/// Merges, writes the reports, prints the table. Exits 1 when a merged audit's load failed, 3
/// when a threshold is breached.
pub(super) fn run(args: &MergeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    // Refused here, before anything is merged, when they would fit neither a bench nor an audit;
    // held to the kind of run the shards turn out to be below.
    let bench = args.thresholds.resolve(&bench_scopes(), BENCH_FIGURES);
    let audit = args.thresholds.resolve(&audit_scopes(), AUDIT_FIGURES);
    if let (Err(e), Err(_)) = (&bench, &audit) {
        return Err(usage(format!("{e:#}")));
    }
    args.ci.refuse_unwritable()?;
    let (run_id, dir) = run_dir(args.out.as_deref(), "merge-");
    let config = MergeConfig {
        dirs: args.dirs.clone(),
        wait: args.wait,
        database_url: args.database_url.clone(),
        out: dir.clone(),
        run_id,
        quiet_timeout: args.quiet_timeout,
        observe_db: args.observe_db.clone(),
        quiet: args.quiet,
        settle_max: args.settle_max,
        witnesses: args.witnesses,
        queries: crate::observe::Queries {
            applied: args.applied_query.clone(),
            update_applied: args.update_applied_query.clone(),
            state: args.state_query.clone(),
            dead_letters: args.dead_letter_query.clone(),
            balance: args.balance_query.clone(),
            count: args.count_query.clone(),
        },
        query_limits: args.query_limits.limits(),
        shard_key: args.shard_key.clone().filter(|k| !k.is_empty()).map(String::into_bytes),
    };
    let mut report = runtime()?.block_on(merge(&config)).map_err(usage)?;
    let thresholds = if report.audit_section().is_some() { audit } else { bench }?;
    hold_to(&mut report, &thresholds);
    let path =
        report.write_all(&dir).map_err(|e| super::write_error(e, format!("writing {}", dir.display())))?;
    args.ci.write(&report)?;
    print_shards(&report, out)?;
    write!(out, "{}", report.table())?;
    write!(out, "{}", threshold::render(&report.header.thresholds))?;
    writeln!(out, "\nreport: {}", path.display())?;
    if let Some(a) = report.audit_section()
        && a.checks.iter().all(|c| c.status == crate::report::Status::Skipped)
    {
        let why: Vec<&str> = a.checks.iter().map(|c| c.evidence.as_str()).collect();
        return Err(usage(format!("the merged audit judged nothing: {}", why.join("; "))));
    }
    match report.body {
        crate::report::RunBody::Audit { .. } => super::audit::audit_exit(&report, &[], None),
        crate::report::RunBody::Bench(_) => breached(&report).map_or(Ok(()), |exit| Err(exit.into())),
    }
}

/// One line per merged shard.
fn print_shards(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(m) = &report.header.shards else { return Ok(()) };
    writeln!(out, "merged {} shards:", m.count)?;
    for s in &m.shards {
        writeln!(
            out,
            "  shard {}: {} groups, {} attempts, {:.1} s, started {:.3} s late",
            s.shard, s.groups, s.deliveries, s.elapsed_s, s.late_by_s
        )?;
    }
    Ok(())
}
