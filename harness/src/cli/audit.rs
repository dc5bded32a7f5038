//! `hookbench audit`: its flags, turned into an [`AuditConfig`]; the audit; the verdict table, the
//! reports (written whenever the audit stopped after starting) and the exit status: 1 a check
//! failed (`hookbench: audit FAILED: check, ...`, even when the audit then stopped), 2 the audit
//! could not run (a bad flag, an unreachable receiver, a query that fails, a receiver the
//! preflight says cannot be audited as told: one line that says what to fix; or a check named in
//! `--checks` skipped), 3 every check passed and a `--fail-on` threshold was breached, 0 else.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::flags::ThresholdArgs;
use super::{FAIL_ON_SHARD, breached, failed, hold_to, print_partial, run_dir, runtime, usage};
use crate::audit::{self, Audit, AuditConfig, LoadSettings, ProbeSettings, Watch};
use crate::history::History;
use crate::observe::Queries;
use crate::progress::StepLines;
use crate::report::{AUDIT_FIGURES, HistoryFile, Report, Status, audit_scopes};
use crate::sender::RetryPolicy;
use crate::workload::{ARTICLE_SEED, Layout, Shard, WorkloadConfig};

/// Arguments of `hookbench audit`.
#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// The receiver's webhook URL (http://host:port/path).
    #[arg(value_parser = super::flags::receiver_url)]
    pub url: String,
    /// How deliveries are signed and what they carry.
    #[command(flatten)]
    pub target: super::flags::TargetArgs,
    /// The receiver's database, read-only (postgres://... or sqlite:...).
    #[arg(long, value_name = "URL")]
    pub observe_db: Option<String>,
    /// SQL returning one row per applied side effect (its event id), or (event id, count) rows.
    /// Point it at the effect, never at a dedupe table: that holds one row per event however
    /// often the effect ran.
    #[arg(long, value_name = "SQL")]
    pub applied_query: Option<String>,
    /// SQL returning (account, balance) rows: the sum of the amounts the receiver credited to
    /// each account (rows of one account add up). Each credit then goes to an account of its own
    /// (or, with --accounts, carries an amount no other applies imitate), and each account's
    /// change is read as its credits' applies.
    #[arg(long, value_name = "SQL")]
    pub balance_query: Option<String>,
    /// SQL returning (account, rows) rows: how many effect rows (an order, a payment, a usage
    /// record per event) each account has. Each credit then goes to an account of its own, and
    /// each account's change in rows is its credit's applies.
    #[arg(long, value_name = "SQL")]
    pub count_query: Option<String>,
    /// The largest amount a credit may carry where --accounts shares accounts between credits
    /// and amounts are place values (100 to 10^15); a plan that cannot fit is refused before
    /// anything is sent.
    #[arg(long, default_value_t = 1_000_000_000, value_parser = clap::value_parser!(i64).range(100..=1_000_000_000_000_000))]
    pub max_amount: i64,
    /// Advisory findings fail: a semantic duplicate (one change sent under two ids, both
    /// applied) is a FAIL and exits 1, instead of a WARN that leaves the exit status alone.
    #[arg(long)]
    pub strict: bool,
    /// SQL returning one row per applied update (its event id), or (event id, count) rows: a
    /// handler that ran twice for an update is a duplicate. Updates the receiver skipped (a stale
    /// version) are never judged lost.
    #[arg(long, value_name = "SQL")]
    pub update_applied_query: Option<String>,
    /// SQL returning (account, version) for each account the receiver holds.
    #[arg(long, value_name = "SQL")]
    pub state_query: Option<String>,
    /// What each observer query may take.
    #[command(flatten)]
    pub query_limits: super::query_limits::QueryLimitArgs,
    /// Serve a sink at ADDR for the receiver's side effect to call instead of the real downstream
    /// service; each call is one side effect.
    #[arg(long, value_name = "ADDR")]
    pub sink: Option<String>,
    /// The JSON field of a sink call that carries the event id, when the call has no
    /// Idempotency-Key header.
    #[arg(long, default_value = "event_id")]
    pub sink_key: String,
    /// The checks to run, comma-separated (default: all that the observers allow). A check named
    /// here that cannot run (its flags or observers missing) makes the audit exit 2.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub checks: Vec<crate::report::Check>,
    /// Events per probing check (sequential duplicate, lost ack; accounts for out of order; the
    /// concurrent copies take --trials).
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub probe_events: usize,
    /// Copies released together in the concurrent check.
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=64))]
    pub copies: usize,
    /// Trials of each race check: the concurrent check's fresh events (each sent as --copies
    /// copies), and the race window's pairs per spacing (1 to 10000). The evidence gives k of n
    /// trials doubled with a 95 % interval.
    #[arg(long, default_value_t = 20, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub trials: usize,
    /// The flags a check owns.
    #[command(flatten)]
    pub check_flags: audit::CheckFlags,
    /// Logical events in the parallel load.
    #[arg(long, default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000_000))]
    pub events: usize,
    /// Seed of the load's draws.
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Accounts the load's events are spread over (1 to 10000000) [default: 100]. With
    /// --balance-query, every credit of the audit shares these accounts (an app whose accounts
    /// must exist beforehand: point --account-base at them), its amount a place value.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub accounts: Option<u32>,
    /// Events per second in the load (open loop, coordinated omission corrected; 0.01 to
    /// 100000).
    #[arg(long, default_value_t = 200.0)]
    pub rate: f64,
    /// Requests in flight at most in the load (1 to 4096).
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// The provider whose delivery timeout the receiver is held to (and whose retry schedule the
    /// retry storm follows): stripe 30s, github 10s, shopify 5s, standard-webhooks 15s (sources
    /// in docs/audit.md).
    #[arg(long, value_enum)]
    pub provider: Option<crate::wire::Provider>,
    /// An attempt taking longer counts as a timeout and is retried (10ms to 10m) [default: the
    /// provider's timeout, or 10s].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
    /// Attempts per event in the load before it is given up (1 to 100; at least 30 in the crash
    /// check).
    #[arg(long, default_value_t = 10)]
    pub max_attempts: u32,
    /// SQL returning one row (event id) per dead letter in your receiver's store; each poison
    /// event must be found there.
    #[arg(long, value_name = "SQL")]
    pub dead_letter_query: Option<String>,
    /// How long the observers must see no change before the audit judges (10ms to 10m).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub quiet: Duration,
    /// How long to wait for the observers to settle at most (100ms to 1 day).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub settle_max: Duration,
    /// The prefix of every event id this audit sends: 1 to 32 letters, digits, `_` or `-`
    /// (default: `a` and the time in base 36).
    #[arg(long)]
    pub id_prefix: Option<String>,
    /// Added to every account number, 0 to 10^15 (default: from the time, a range no earlier
    /// audit used).
    #[arg(long)]
    pub account_base: Option<i64>,
    /// How long the whole audit may take (1s to 7 days, not less than its own waits); then it stops,
    /// writes its report so far and exits 2.
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub deadline: Duration,
    /// Where the reports go (default `reports/audit-<time>-<sha>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No live status line: plain lines on stderr instead, each step and, while one runs, its
    /// attempts and answers so far at least every 9 s (what a log without a terminal gets).
    #[arg(long)]
    pub no_progress: bool,
    /// The config file (`--config`) and `--print-config`.
    #[command(flatten)]
    pub config: super::ConfigArgs,
    /// Thresholds that fail the audit.
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    /// JUnit XML (`--junit`), the Prometheus metrics (`--metrics`) and the GitHub step summary.
    #[command(flatten)]
    pub ci: super::ci_outputs::CiOutputArgs,
    /// Send only shard I of N (N at most 256) of the parallel load (the events whose index is I-1 modulo N) and
    /// write a partial result (shard.json and the shard's history, no verdict) for `hookbench
    /// merge`, which asks the --observe-db once every shard is done. Runs the load alone; needs
    /// --observe-db and one id space for every shard (--start-at, or --id-prefix and
    /// --account-base). docs/scale.md.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Like --shard, with N shards (1 to 256) and this shard's index (from 0) taken from
    /// JOB_COMPLETION_INDEX, which a Kubernetes Indexed Job sets in each pod.
    #[arg(long, value_name = "N", conflicts_with = "shard", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=crate::workload::MAX_SHARDS as u64))]
    pub shards: Option<usize>,
    /// When a sharded load's first position is due (RFC 3339), the same for every shard; the
    /// run's ids and accounts are made from it.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<jiff::Timestamp>,
}

impl TryFrom<&AuditArgs> for Audit {
    type Error = anyhow::Error;

    fn try_from(a: &AuditArgs) -> anyhow::Result<Self> {
        // --signing X holds the receiver to provider X's rules unless --provider names another.
        let target = a.target.target(&a.url, a.provider)?;
        let provider = target.provider;
        let timeout =
            a.timeout.or(provider.and_then(crate::wire::Provider::timeout)).unwrap_or(DEFAULT_TIMEOUT);
        let config = AuditConfig {
            target,
            watch: Watch {
                observe_db: a.observe_db.clone(),
                queries: Queries {
                    applied: a.applied_query.clone(),
                    update_applied: a.update_applied_query.clone(),
                    state: a.state_query.clone(),
                    dead_letters: a.dead_letter_query.clone(),
                    balance: a.balance_query.clone(),
                    count: a.count_query.clone(),
                },
                query_limits: a.query_limits.limits(),
                sink: a.sink.clone(),
                sink_key: a.sink_key.clone(),
                quiet: a.quiet,
                settle_max: a.settle_max,
            },
            checks: a.checks.clone(),
            probes: ProbeSettings { events: a.probe_events, copies: a.copies, trials: a.trials },
            load: LoadSettings {
                workload: WorkloadConfig {
                    seed: a.seed,
                    events: a.events,
                    accounts: a.accounts.unwrap_or(DEFAULT_ACCOUNTS),
                    ..WorkloadConfig::default()
                },
                rate: a.rate,
                concurrency: a.concurrency,
                timeout,
                retry: RetryPolicy { max_attempts: a.max_attempts, ..RetryPolicy::default() },
            },
            id_prefix: a.id_prefix.clone(),
            account_base: a.account_base,
            history: None,
            shard: Shard::from_flags_and_env(a.shard, a.shards)?,
            start_at: a.start_at,
            deadline: a.deadline,
            strict: a.strict,
            layout: layout(a),
            pulse: Default::default(),
        };
        let audit = Audit { config, checks: a.check_flags.settings(provider)? };
        audit.validate()?;
        Ok(audit)
    }
}

/// An attempt's timeout without --timeout or --provider.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The load's accounts without --accounts.
const DEFAULT_ACCOUNTS: u32 = 100;

/// How the flags lay credits out: with a per-account aggregate, one account per credit, or place
/// values over the --accounts given; without one, over the load's accounts.
fn layout(a: &AuditArgs) -> Layout {
    match (a.balance_query.is_some() || a.count_query.is_some(), a.accounts) {
        (false, _) => Layout::Pooled,
        (true, None) => Layout::Own,
        (true, Some(accounts)) => Layout::Scarce { accounts, max_amount: a.max_amount },
    }
}

fn could_not_run(err: impl std::fmt::Display) -> anyhow::Error {
    usage(format!("the audit could not run: {err:#}"))
}

/// One shard of a sharded audit's parallel load: sent (its attempts into `history`), its history
/// and partial result written, no verdict (`hookbench merge` judges the shards together).
fn run_shard(
    mut told: Audit,
    (shard, run_id, dir): (Shard, String, &std::path::Path),
    (history, step): (History, &(dyn Fn(&str) + Sync)),
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if let Some(line) = crate::workload::late_start(shard, told.config.start_at) {
        eprintln!("hookbench audit: {line}");
    }
    let partial = runtime().map_err(could_not_run)?.block_on(audit::run_shard(&told, shard, run_id, step));
    // Every tap dropped, so that the writer can finish.
    told.config.history = None;
    history.finish().map_err(|e| could_not_run(format!("writing the history: {e}")))?;
    let partial = partial.map_err(could_not_run)?;
    let path = partial.write(dir).map_err(|e| could_not_run(anyhow::Error::from(e)))?;
    print_partial(&partial, &path, out)?;
    Ok(())
}

pub(super) fn run(args: &AuditArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let thresholds = args.thresholds.resolve(&audit_scopes(), AUDIT_FIGURES).map_err(could_not_run)?;
    let mut told = Audit::try_from(args).map_err(could_not_run)?;
    let (run_id, dir) = run_dir(args.out.as_deref(), "audit-");
    if told.config.shard.is_some() && !thresholds.is_empty() {
        return Err(could_not_run(FAIL_ON_SHARD));
    }
    if told.config.shard.is_some() {
        args.ci.refuse_for_shard()?;
    }
    args.ci.refuse_unwritable()?;
    // The loads' attempts and verdicts, as a bench's (an audit's loads are small: never
    // compressed).
    let history = History::create(&dir, false)
        .map_err(|e| could_not_run(format!("writing the history in {}: {e}", dir.display())))?;
    told.config.history = Some(history.tap("audit".into()));
    // Step lines always; the status (which check, how far, the attempts and answers so far)
    // live on a terminal, else a line at least every 9 s, so a CI log never sits silent.
    let lines = StepLines::new("hookbench audit", !args.no_progress && io::stderr().is_terminal());
    let pulse = told.config.pulse.clone();
    let step = {
        let (lines, pulse) = (lines.clone(), pulse.clone());
        move |what: &str| {
            pulse.step(what);
            lines.say(what);
        }
    };
    let showing = lines.keep_showing(move || pulse.now().to_string());
    if let Some(shard) = told.config.shard {
        return run_shard(told, (shard, run_id, &dir), (history, &step), out);
    }
    let section = runtime().map_err(could_not_run)?.block_on(audit::run(&told, &step));
    drop(showing);
    // Every tap dropped, so that the writer can finish.
    told.config.history = None;
    let written = history.finish().map_err(|e| could_not_run(format!("writing the history: {e}")));
    let (section, stopped) = match section {
        Ok(section) => (section, None),
        // Stopped after starting: the report of what ran is written, then the audit ends with 2.
        Err(audit::Stopped { error, partial: Some(partial) }) => (partial, Some(error)),
        Err(audit::Stopped { error, partial: None }) => return Err(could_not_run(error)),
    };
    let (path, lines) = written?;
    let mut report = Report::audit(run_id, section);
    report.header.history = Some(HistoryFile::written(&path, lines));
    hold_to(&mut report, &thresholds);
    let path = report
        .write_all(&dir)
        .map_err(|e| could_not_run(super::write_error(e, format!("writing {}", dir.display()))))?;
    args.ci.write(&report)?;
    write!(out, "{}", report.table())?;
    write!(out, "{}", crate::threshold::render(&report.header.thresholds))?;
    writeln!(out, "\nreport: {}", path.display())?;
    for command in crate::repro::commands(&report, &dir) {
        writeln!(out, "reproduce it without hookbench: {command}")?;
    }
    audit_exit(&report, &args.checks, stopped.map(anyhow::Error::from))
}

/// The exit an audit's report asks for: 1 naming the failed checks (a stop after a check failed
/// is still a failure: the FAIL stands); else 2 when the audit stopped, or when a check `named`
/// in `--checks` was skipped (a user who asked for it must not read 0 as its PASS); else 3 on a
/// breached threshold; else 0.
pub(super) fn audit_exit(
    report: &Report,
    named: &[crate::report::Check],
    stopped: Option<anyhow::Error>,
) -> anyhow::Result<()> {
    let Some(a) = report.audit_section() else {
        return breached(report).map_or(Ok(()), |exit| Err(exit.into()));
    };
    if a.failed() {
        let failed_checks: Vec<&str> = a.failed_checks().iter().map(|c| c.as_str()).collect();
        let then = stopped.map_or_else(String::new, |e| format!(" (then stopped: {e:#})"));
        return Err(failed(format!("audit FAILED: {}{then}", failed_checks.join(", "))));
    }
    if let Some(error) = stopped {
        return Err(could_not_run(error));
    }
    let skipped: Vec<String> = a
        .checks
        .iter()
        .filter(|c| c.status == Status::Skipped && named.contains(&c.check))
        .map(|c| format!("{} ({})", c.check.as_str(), c.evidence))
        .collect();
    if !skipped.is_empty() {
        return Err(could_not_run(format!("--checks named checks it could not run: {}", skipped.join("; "))));
    }
    breached(report).map_or(Ok(()), |exit| Err(exit.into()))
}
