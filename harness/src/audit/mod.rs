//! `hookbench audit`: the article's go-live checklist run against a receiver hookbench did not
//! start and cannot see inside, in any language, with its own schema and its provider's
//! signatures.
//!
//! The audit sends each check's deliveries (`checks`: single attempts on fresh connections from
//! `probe`; the parallel load through the bench's sender, in `load`), asks the observers
//! (`observe`: the receiver's database through the user's read-only queries, or a sink standing in
//! for its downstream service) what was applied once they have settled, and judges each check
//! (`verdict`). Every id and account of a run is its own ([`crate::wire::IdSpace`]), so audits can
//! be repeated against one long-lived database.

mod capacity;
mod checks;
mod control;
mod crash;
mod load;
mod observe;
mod poison;
mod probe;
pub mod provider;
mod shard;
mod storm;
pub mod verdict;

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use tokio::time::Instant;

pub use capacity::{Ramp, parse_ramp};
pub use control::{Control, ControlError};
pub use observe::{ObserveError, Queries};
pub use provider::Provider;
pub use shard::{judge_shards, run_shard};
pub use verdict::{AuditSection, Check, CheckResult, Status};

use crate::sender::{self, RetryPolicy, SenderConfig};
use crate::wire::{IdSpace, Payload, Poison, Scheme, SecretError, Signer, Wire};
use crate::workload::{Workload, WorkloadConfig, WorkloadError};
use checks::{Ctx, Hostility, Pending};
use observe::{Observation, Observers, Sink, SqlObserver};

/// Everything an audit is told.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// The receiver's webhook URL.
    pub url: String,
    /// How deliveries are signed.
    pub signing: Scheme,
    /// The secrets, as the provider shows them; several for the rotation check.
    pub secrets: Vec<String>,
    /// What bodies look like.
    pub payload: Payload,
    /// The receiver's database (`postgres://` or `sqlite:`), read-only.
    pub observe_db: Option<String>,
    /// Rows of applied side effects: `(event id)` per apply or `(event id, count)`.
    pub applied_query: Option<String>,
    /// `(account, version)` per account.
    pub state_query: Option<String>,
    /// `(event id)` per dead letter.
    pub dead_letter_query: Option<String>,
    /// Where the sink listens.
    pub sink: Option<String>,
    /// The JSON field a sink call carries its key in, without an `Idempotency-Key` header.
    pub sink_key: String,
    /// The checks to run (empty: every check the observers allow).
    pub checks: Vec<Check>,
    /// Events per probing check.
    pub probe_events: usize,
    /// Copies released together in the concurrent check.
    pub copies: usize,
    /// How long to wait before the late replay.
    pub replay_after: Duration,
    /// Run (through the shell) before the late replay: the receiver's own purge job.
    pub retention_cmd: Option<String>,
    /// The parallel load's workload.
    pub workload: WorkloadConfig,
    /// Events per second in the load.
    pub rate: f64,
    /// Requests in flight at most in the load.
    pub concurrency: usize,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Retries in the load.
    pub retry: RetryPolicy,
    /// How long a stalled body may be held.
    pub stall_wait: Duration,
    /// The oversized body's size.
    pub oversized_bytes: usize,
    /// How long the observers must see no change to count as settled.
    pub quiet: Duration,
    /// How long to wait for them to settle at most.
    pub settle_max: Duration,
    /// The run's id prefix (default: `a` and the start time in base 36, then `_`).
    pub id_prefix: Option<String>,
    /// Added to every account (default: from the start time, a range no earlier audit used).
    pub account_base: Option<i64>,
    /// How to kill and restart the receiver (the crash and retry-storm checks).
    pub control: Option<Control>,
    /// Kills during the crash check's load.
    pub kills: u32,
    /// How poison events are made (the poison check runs when set).
    pub poison: Option<Poison>,
    /// Chance a credit of the poison check's load is poison.
    pub poison_chance: f64,
    /// The other events' p99 with poison may be this many times their p99 without.
    pub poison_p99_factor: f64,
    /// The provider whose timeout and schedule the receiver is held to.
    pub provider: Option<Provider>,
    /// The capacity ramp (the capacity check runs when set).
    pub ramp: Option<Ramp>,
    /// The capacity below which the capacity check fails (default: the ramp's first rate).
    pub min_capacity: Option<f64>,
    /// The outage of the retry-storm check, in the provider's time (the check runs when set).
    pub outage: Option<Duration>,
    /// How much faster than the provider's clock the retry storm runs.
    pub time_scale: f64,
    /// Events in the retry storm's batch.
    pub storm_events: usize,
    /// Where the loads' attempts and their events' fates go (cells `audit/<check>`), when the
    /// audit keeps a history.
    pub history: Option<crate::history::Tap>,
    /// Send only this shard of the parallel load (`--shard`), for `hookbench merge` to judge.
    pub shard: Option<crate::shard::Shard>,
    /// When a sharded load's first position is due (`--start-at`); it also names the run's ids
    /// and accounts, so that every shard uses the same.
    pub start_at: Option<jiff::Timestamp>,
}

/// Why an audit could not run (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Flags that do not go together, or a bad value.
    #[error("{0}")]
    Config(String),
    /// A secret the scheme cannot use.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// A workload parameter.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The URL is not http://host/path.
    #[error(transparent)]
    Url(#[from] probe::BadUrl),
    /// Nothing answers at the URL.
    #[error("the receiver at {url} is unreachable: {reason}")]
    Unreachable {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// An observer failed.
    #[error(transparent)]
    Observe(#[from] ObserveError),
    /// The load's sender could not start.
    #[error("the parallel load could not start: {0}")]
    Send(#[from] sender::SendError),
    /// The receiver could not be killed or started again, or `--retention-cmd` failed.
    #[error(transparent)]
    Control(#[from] ControlError),
}

impl AuditConfig {
    /// Refuses flags that do not go together, naming them.
    pub fn validate(&self) -> Result<(), AuditError> {
        let config = |s: &str| Err(AuditError::Config(s.to_string()));
        Signer::new(self.signing, &self.secrets)?;
        if self.observe_db.is_none() && self.sink.is_none() {
            return config(
                "an audit needs an observer: --observe-db URL with --applied-query (and --state-query), or --sink ADDR",
            );
        }
        if self.observe_db.is_some() && self.applied_query.is_none() && self.state_query.is_none() {
            return config("--observe-db needs --applied-query, --state-query or both");
        }
        if self.observe_db.is_none() && (self.applied_query.is_some() || self.state_query.is_some()) {
            return config("--applied-query and --state-query need --observe-db");
        }
        if self.copies < 2 {
            return config("--copies must be at least 2");
        }
        if self.probe_events == 0 {
            return config("--probe-events must be at least 1");
        }
        if self.rate.is_nan() || self.rate <= 0.0 {
            return config("--rate must be above 0");
        }
        if self.concurrency == 0 {
            return config("--concurrency must be at least 1");
        }
        if self.dead_letter_query.is_some() && self.observe_db.is_none() {
            return config("--dead-letter-query needs --observe-db");
        }
        if self.control.is_some() && self.kills == 0 {
            return config("--kills must be at least 1");
        }
        if let Some(c) = &self.control
            && !(c.health_url.starts_with("http://") || c.health_url.starts_with("https://"))
        {
            return config("--health-url must be an http:// or https:// URL");
        }
        if self.outage.is_some() && self.control.is_none() {
            return config("--outage needs --kill-cmd, --start-cmd and --health-url");
        }
        if !(self.poison_chance > 0.0 && self.poison_chance <= 1.0) {
            return config("--poison must be above 0 and at most 1");
        }
        if self.poison_p99_factor.is_nan() || self.poison_p99_factor < 1.0 {
            return config("--poison-p99-factor must be at least 1");
        }
        if self.time_scale.is_nan() || self.time_scale <= 0.0 {
            return config("--time-scale must be above 0");
        }
        if self.storm_events == 0 {
            return config("--storm-events must be at least 1");
        }
        if let Some(r) = &self.ramp
            && (r.steps == 0 || r.step_duration.is_zero())
        {
            return config("--ramp-steps and --step-duration must be above 0");
        }
        self.workload.validate()?;
        self.validate_shard()
    }

    /// What a sharded audit needs: the load alone, a database to judge it from afterwards, and
    /// one id space for every shard.
    fn validate_shard(&self) -> Result<(), AuditError> {
        let config = |s: &str| Err(AuditError::Config(s.to_string()));
        if self.shard.is_none() {
            if self.start_at.is_some() {
                return config(
                    "--start-at aligns the shards of a sharded audit: give it with --shard or --shards",
                );
            }
            return Ok(());
        }
        if self.sink.is_some() || self.observe_db.is_none() {
            return config(
                "a sharded audit is judged afterwards by `hookbench merge` through --observe-db; a --sink sees only while it runs",
            );
        }
        if self.checks.iter().any(|&c| c != Check::ParallelLoad) {
            return config(
                "a sharded audit runs the parallel load only (--checks parallel-load); run the other checks in an audit of their own",
            );
        }
        if self.start_at.is_none() && (self.id_prefix.is_none() || self.account_base.is_none()) {
            return config(
                "every shard of an audit must use the same ids: give --start-at (they are made from it), or --id-prefix and --account-base",
            );
        }
        Ok(())
    }

    /// How the loads are sent: at `--rate`, `--concurrency` in flight, each attempt recorded for
    /// the witnesses.
    pub(crate) fn load_sender(&self, check: Check) -> SenderConfig {
        SenderConfig {
            rate: Some(self.rate),
            concurrency: self.concurrency,
            timeout: self.timeout,
            retry: self.retry,
            source: String::new(),
            record: true,
            history: self.history.as_ref().map(|t| t.with_cell(format!("audit/{}", check.as_str()))),
            shard: crate::shard::Shard::WHOLE,
            start_at: None,
        }
    }

    /// The checks to run: those asked for, in the checklist's order.
    fn selected(&self) -> Vec<Check> {
        Check::ALL.into_iter().filter(|c| self.checks.is_empty() || self.checks.contains(c)).collect()
    }
}

/// Why a check cannot run with these observers and this scheme, if it cannot.
fn cannot_run(config: &AuditConfig, check: Check, observers: &Observers, signer: &Signer) -> Option<String> {
    let needs_applies = "needs an observer of applies (--applied-query or --sink)";
    match check {
        Check::OutOfOrder if !observers.sees_state() => {
            Some("needs --state-query (each account's version)".into())
        }
        Check::OutOfOrder => None,
        Check::SecretRotation if !signer.scheme().signs() => Some("--signing none signs nothing".into()),
        Check::SecretRotation if signer.secrets() < 2 => {
            Some("give --secret twice (the old secret and the new) to test a rotation".into())
        }
        Check::ParallelLoad if !observers.sees_applies() && !observers.sees_state() => {
            Some(needs_applies.into())
        }
        Check::ParallelLoad => None,
        Check::Capacity if config.ramp.is_none() => Some("needs --ramp FROM..TO".into()),
        Check::Capacity => None,
        Check::Crash if config.control.is_none() => {
            Some("needs --kill-cmd, --start-cmd and --health-url".into())
        }
        Check::Poison if config.poison.is_none() => {
            Some("needs --poison-account or --poison-template".into())
        }
        Check::RetryStorm if config.outage.is_none() => {
            Some("needs --outage (with --kill-cmd, --start-cmd and --health-url)".into())
        }
        Check::RetryStorm => storm::cannot_storm(config.provider.unwrap_or(Provider::StandardWebhooks)),
        _ if !observers.sees_applies() => Some(needs_applies.into()),
        _ => None,
    }
}

/// The run's ids and accounts: given, or made from the clock (a sharded audit's `--start-at`, so
/// that its shards agree) so that no earlier audit used them.
fn id_space(config: &AuditConfig) -> IdSpace {
    let now = config.start_at.unwrap_or_else(jiff::Timestamp::now);
    let millis = u64::try_from(now.as_millisecond()).unwrap_or(0);
    let prefix = config.id_prefix.clone().unwrap_or_else(|| format!("a{}_", base36(millis)));
    // Ten thousand accounts a second, wrapping every ~11.5 days: far below 2^53.
    let account_base = config.account_base.unwrap_or(1_000_000 + (now.as_second() % 1_000_000) * 10_000);
    IdSpace { prefix, account_base }
}

fn base36(mut n: u64) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Runs the audit, reporting each step through `step`.
pub async fn run(config: &AuditConfig, step: &(dyn Fn(&str) + Sync)) -> Result<AuditSection, AuditError> {
    config.validate()?;
    let start = Instant::now();
    let probe = probe::Probe::new(&config.url, config.timeout, start)?;
    probe
        .reachable()
        .await
        .map_err(|e| AuditError::Unreachable { url: config.url.clone(), reason: e.to_string() })?;
    let observers = start_observers(config).await?;
    let ids = id_space(config);
    let signer = Signer::new(config.signing, &config.secrets)?;
    let poison = config.poison.clone().unwrap_or_default();
    let wire =
        Arc::new(Wire { signer: signer.clone(), payload: config.payload.clone(), ids: ids.clone(), poison });
    let probe_accounts = ids.account_base + i64::from(config.workload.accounts);
    let ctx = Arc::new(Ctx { probe, wire: wire.clone(), next_account: AtomicI64::new(probe_accounts) });

    let selected = config.selected();
    let mut results: Vec<CheckResult> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    let n = config.probe_events;
    for &check in selected.iter().filter(|c| c.probes()) {
        if let Some(why) = cannot_run(config, check, &observers, &signer) {
            results.push(CheckResult::skipped(check, why));
            continue;
        }
        step(check.as_str());
        let p = match check {
            Check::SequentialDuplicate => checks::sequential_duplicate(&ctx, n).await,
            Check::ConcurrentCopies => checks::concurrent_copies(&ctx, n, config.copies).await,
            Check::LostAck => checks::lost_ack(&ctx, n).await,
            Check::OutOfOrder => checks::out_of_order(&ctx, n, 6).await,
            Check::SecretRotation => checks::secret_rotation(&ctx).await,
            Check::HostileInput => {
                let h = Hostility { oversized_bytes: config.oversized_bytes, stall_wait: config.stall_wait };
                checks::hostile_input(&ctx, h).await
            }
            _ => continue,
        };
        pending.push(p);
    }

    let mut load = None;
    if selected.contains(&Check::ParallelLoad)
        && cannot_run(config, Check::ParallelLoad, &observers, &signer).is_none()
    {
        step("parallel-load");
        let workload = Workload::generate(&config.workload)?;
        let sender_config = config.load_sender(Check::ParallelLoad);
        load =
            Some(load::send(&config.url, workload, wire.clone(), sender_config, ctx.probe.now_ms()).await?);
    }

    step("waiting for the observers to settle");
    let seen = observers.settled(config.quiet, config.settle_max).await?;
    let mut figures = None;
    for p in &pending {
        results.push(p.judge(&seen));
    }
    if let Some(load) = &load {
        let rules = load::Rules { check: Check::ParallelLoad, latest_state: true, every_event: false };
        let (result, f) = load::judge(load, &seen, rules, &[]);
        results.push(result);
        figures = Some(f);
    }
    let faults = under_faults(config, &ctx, &observers, &selected, &signer, step).await?;
    results.extend(faults.results);

    if selected.contains(&Check::LateReplay) {
        results.push(late_replay(config, &ctx, &observers, &pending, &seen, step).await?);
    }
    results.sort_by_key(|r| r.check);
    Ok(AuditSection {
        url: config.url.clone(),
        signing: config.signing.as_str().to_string(),
        payload: config.payload.name(),
        observers: observers.names(),
        id_prefix: ids.prefix,
        account_base: ids.account_base,
        checks: results,
        load: figures,
        crash: faults.crash,
        poison: faults.poison,
        capacity: faults.capacity,
        storm: faults.storm,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

/// What the checks that disturb the receiver found.
#[derive(Default)]
struct Faults {
    results: Vec<CheckResult>,
    crash: Option<verdict::CrashFigures>,
    poison: Option<verdict::PoisonFigures>,
    capacity: Option<verdict::CapacityFigures>,
    storm: Option<verdict::StormFigures>,
}

/// The crash, poison, capacity and retry-storm checks, one after the other, each judged once the
/// observers have settled after it.
async fn under_faults(
    config: &AuditConfig,
    ctx: &Arc<Ctx>,
    observers: &Observers,
    selected: &[Check],
    signer: &Signer,
    step: &(dyn Fn(&str) + Sync),
) -> Result<Faults, AuditError> {
    let mut f = Faults::default();
    let client = reqwest::Client::new();
    let settle = || observers.settled(config.quiet, config.settle_max);
    for &check in selected.iter().filter(|c| c.disturbs()) {
        if let Some(why) = cannot_run(config, check, observers, signer) {
            f.results.push(CheckResult::skipped(check, why));
            continue;
        }
        step(check.as_str());
        match (check, &config.control, &config.poison, &config.ramp, config.outage) {
            (Check::Crash, Some(control), ..) => {
                let crashed = crash::run(ctx, config, control, &client, step).await?;
                let (result, figures) = crash::judge(&crashed, &settle().await?);
                f.results.push(result);
                f.crash = Some(figures);
            }
            (Check::Poison, _, Some(poison), ..) => {
                let poisoned = poison::run(ctx, config, poison).await?;
                let seen = settle().await?;
                let dead = observers.sees_dead_letters();
                let (result, figures) = poison::judge(&poisoned, &seen, config.poison_p99_factor, dead);
                f.results.push(result);
                f.poison = Some(figures);
            }
            (Check::Capacity, _, _, Some(ramp), _) => {
                let steps = capacity::run(ctx, config, *ramp, config.timeout, step).await?;
                let min = config.min_capacity.unwrap_or(ramp.from);
                let (result, figures) = capacity::judge(steps, config.provider, config.timeout, min);
                f.results.push(result);
                f.capacity = Some(figures);
            }
            (Check::RetryStorm, Some(control), _, _, Some(outage)) => {
                let provider = config.provider.unwrap_or(Provider::StandardWebhooks);
                let storm = storm::Storm {
                    provider,
                    outage,
                    time_scale: config.time_scale,
                    events: config.storm_events,
                };
                let stormed = storm::run(ctx, control, &client, storm).await?;
                let (result, figures) = storm::judge(&stormed, storm, config.timeout, &settle().await?);
                f.results.push(result);
                f.storm = Some(figures);
            }
            _ => {}
        }
    }
    Ok(f)
}

async fn start_observers(config: &AuditConfig) -> Result<Observers, AuditError> {
    let mut observers = Observers::default();
    if let Some(addr) = &config.sink {
        observers.sink = Some(Sink::start(addr, &config.sink_key).await?);
    }
    if let Some(url) = &config.observe_db {
        let queries = Queries {
            applied: config.applied_query.clone(),
            state: config.state_query.clone(),
            dead_letters: config.dead_letter_query.clone(),
        };
        let sql = SqlObserver::connect(url, queries).await?;
        observers.sql = Some(sql);
        // A query that fails or has the wrong shape stops the audit before anything is sent.
        observers.observe().await?;
    }
    Ok(observers)
}

async fn late_replay(
    config: &AuditConfig,
    ctx: &Ctx,
    observers: &Observers,
    pending: &[Pending],
    seen: &Observation,
    step: &(dyn Fn(&str) + Sync),
) -> Result<CheckResult, AuditError> {
    if let Some(why) = cannot_run(config, Check::LateReplay, observers, &ctx.wire.signer) {
        return Ok(CheckResult::skipped(Check::LateReplay, why));
    }
    let sample = checks::replay_sample(pending, seen, 10);
    if let Some(cmd) = &config.retention_cmd {
        step("running --retention-cmd");
        control::run_to_end("--retention-cmd", cmd).await?;
    }
    if !config.replay_after.is_zero() {
        step(&format!("waiting {} before the late replay", humantime::format_duration(config.replay_after)));
        tokio::time::sleep(config.replay_after).await;
    }
    step("late-replay");
    let mut p = checks::late_replay(ctx, &sample).await;
    p.note = format!(
        "after {}{}",
        humantime::format_duration(config.replay_after),
        if config.retention_cmd.is_some() { " and --retention-cmd" } else { "" }
    );
    let after = observers.settled(config.quiet, config.settle_max).await?;
    Ok(checks::judge_replay(&p, seen, &after))
}
