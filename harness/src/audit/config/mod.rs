//! What an audit is told, validated here: the receiver, its signing and payload, the observers,
//! and each check's settings. The checks that disturb the receiver have settings of their own, an
//! `Option` each: a check whose flags were not given has none, and cannot be built.

mod bounds;

use std::sync::Arc;
use std::time::Duration;

use super::control::Control;
use super::{AuditError, Pulse};
use crate::history::Tap;
use crate::observe::{Queries, QueryLimits};
use crate::report::{AuditParameters, Check};
use crate::sender::{RetryPolicy, SenderConfig};
use crate::wire::{Payload, Poison, Provider, Scheme, Signer};
use crate::workload::{Layout, Shard, WorkloadConfig};

/// The receiver and how it is spoken to.
#[derive(Debug, Clone)]
pub struct Target {
    /// Its webhook URL.
    pub url: String,
    /// How deliveries are signed.
    pub signing: Scheme,
    /// The provider whose verification rules, timeout and retry schedule it is held to
    /// (`--provider`, else the one `--signing` names).
    pub provider: Option<Provider>,
    /// The secrets, as the provider shows them.
    pub secrets: Vec<String>,
    /// What bodies look like.
    pub payload: Payload,
}

/// Where the audit sees what was applied.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    /// The receiver's database (`postgres://` or `sqlite:`), read-only.
    pub observe_db: Option<String>,
    /// The user's queries of it.
    pub queries: Queries,
    /// What each query may take (`--query-timeout`, `--max-rows`).
    pub query_limits: QueryLimits,
    /// Where the sink listens.
    pub sink: Option<String>,
    /// The JSON field a sink call carries its key in, without an `Idempotency-Key` header.
    pub sink_key: String,
    /// How long the observers must see no change to count as settled.
    pub quiet: Duration,
    /// How long to wait for them to settle at most.
    pub settle_max: Duration,
}

/// How the loads are sent.
#[derive(Debug, Clone)]
pub struct LoadSettings {
    /// The parallel load's workload.
    pub workload: WorkloadConfig,
    /// Events per second.
    pub rate: f64,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Retries.
    pub retry: RetryPolicy,
}

/// The probing checks' settings.
#[derive(Debug, Clone)]
pub struct ProbeSettings {
    /// Events per probing check.
    pub events: usize,
    /// Copies released together in the concurrent check.
    pub copies: usize,
    /// Trials of each race check (`--trials`): the concurrent check's events, and the race
    /// window's pairs per spacing.
    pub trials: usize,
    /// The checks that run only when a flag of their own asks for them (each check's `Flags`).
    pub opted_in: Vec<Check>,
    /// How long a stalled body may be held (hostile input).
    pub stall_wait: Duration,
    /// The oversized body's size (hostile input).
    pub oversized_bytes: usize,
    /// Whether the user named that size (`--oversized-bytes`) as past their receiver's limit, so
    /// that a body of it must not be taken. Without it, a receiver may take the body: every
    /// provider's library verifies a signature over any length (@octokit/webhooks accepted
    /// GitHub's 25 MB cap plus 1 MiB), and refusing more than a provider ever sends is hardening,
    /// not the provider's rule.
    pub oversized_is_limit: bool,
    /// How long to wait before the late replay.
    pub replay_after: Duration,
    /// Run (through the shell) before the late replay: the receiver's own purge job.
    pub retention_cmd: Option<String>,
}

/// The crash check's settings (`--kill-cmd`, `--start-cmd`, `--health-url`).
#[derive(Debug, Clone)]
pub struct CrashSettings {
    /// How to kill and restart the receiver.
    pub control: Control,
    /// Kills during the load.
    pub kills: u32,
}

/// The poison check's settings (`--poison-account` or `--poison-template`).
#[derive(Debug, Clone)]
pub struct PoisonSettings {
    /// How poison events are made.
    pub poison: Poison,
    /// Chance a credit of the load is poison.
    pub chance: f64,
    /// The other events' p99 with poison may be this many times their p99 without.
    pub p99_factor: f64,
}

/// The capacity check's settings (`--ramp`).
#[derive(Debug, Clone, Copy)]
pub struct CapacitySettings {
    /// The ramp.
    pub ramp: Ramp,
    /// The capacity below which the check fails (default: the ramp's first rate).
    pub min_capacity: Option<f64>,
}

/// The ramp, as asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    /// The first rate, events per second.
    pub from: f64,
    /// The last.
    pub to: f64,
    /// How many steps, both ends included.
    pub steps: u32,
    /// How long each step sends.
    pub step_duration: Duration,
}

impl Ramp {
    /// Each step's rate.
    pub fn rates(&self) -> Vec<f64> {
        if self.steps <= 1 {
            return vec![self.from];
        }
        let gap = (self.to - self.from) / f64::from(self.steps - 1);
        (0..self.steps).map(|i| self.from + gap * f64::from(i)).collect()
    }
}

/// A `--ramp` that is not two rates, the lower first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRamp {
    /// No `..` between two rates.
    #[error("`{0}` is not FROM..TO, such as 10..200")]
    NotARange(String),
    /// One end is not a number.
    #[error("`{end}` in `{ramp}` is not a number")]
    NotANumber {
        /// The end.
        end: String,
        /// The whole value.
        ramp: String,
    },
    /// One end is 0, negative or not finite.
    #[error("`{end}` in `{ramp}` must be above 0")]
    NotAbove0 {
        /// The end.
        end: String,
        /// The whole value.
        ramp: String,
    },
    /// The higher rate came first.
    #[error("`{0}` ramps down; give the lower rate first")]
    RampsDown(String),
}

/// Parses `FROM..TO` (events per second).
pub fn parse_ramp(s: &str) -> Result<(f64, f64), BadRamp> {
    let (from, to) = s.split_once("..").ok_or_else(|| BadRamp::NotARange(s.to_string()))?;
    let rate = |t: &str| -> Result<f64, BadRamp> {
        let (end, ramp) = (t.to_string(), s.to_string());
        let r: f64 =
            t.trim().parse().map_err(|_| BadRamp::NotANumber { end: end.clone(), ramp: ramp.clone() })?;
        if r.is_finite() && r > 0.0 { Ok(r) } else { Err(BadRamp::NotAbove0 { end, ramp }) }
    };
    let (from, to) = (rate(from)?, rate(to)?);
    if to < from {
        return Err(BadRamp::RampsDown(s.to_string()));
    }
    Ok((from, to))
}

/// The retry storm's settings (`--outage`, with the crash check's commands).
#[derive(Debug, Clone)]
pub struct StormSettings {
    /// How to kill and restart the receiver.
    pub control: Control,
    /// The outage, in the provider's time.
    pub outage: Duration,
    /// How much faster than the provider's clock the storm runs.
    pub time_scale: f64,
    /// Events in the batch.
    pub events: usize,
}

/// Everything an audit is told.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// The receiver.
    pub target: Target,
    /// The observers.
    pub watch: Watch,
    /// The checks to run (empty: every check the flags and observers allow).
    pub checks: Vec<Check>,
    /// The probing checks' settings.
    pub probes: ProbeSettings,
    /// The loads' settings.
    pub load: LoadSettings,
    /// The crash check's, when its flags were given.
    pub crash: Option<CrashSettings>,
    /// The poison check's, when its flags were given.
    pub poison: Option<PoisonSettings>,
    /// The capacity check's, when its flags were given.
    pub capacity: Option<CapacitySettings>,
    /// The retry storm's, when its flags were given.
    pub storm: Option<StormSettings>,
    /// The run's id prefix (default: `a` and the start time in base 36, then `_`).
    pub id_prefix: Option<String>,
    /// Added to every account (default: from the start time, a range no earlier audit used).
    pub account_base: Option<i64>,
    /// Where the loads' attempts and verdicts go (cells `audit/<check>`).
    pub history: Option<Tap>,
    /// Send only this shard of the parallel load (`--shard`), for `hookbench merge` to judge.
    pub shard: Option<Shard>,
    /// When a sharded load's first position is due (`--start-at`); it also names the run's ids
    /// and accounts, so that every shard uses the same.
    pub start_at: Option<jiff::Timestamp>,
    /// How long the whole audit may take (`--deadline`); then it stops, its report so far
    /// written.
    pub deadline: Duration,
    /// Advisory findings fail their check (`--strict`): a semantic duplicate is a FAIL, not a
    /// WARN.
    pub strict: bool,
    /// How credits are laid out over accounts: by the load's accounts, or, where per-account
    /// aggregates are the evidence, one account per credit, or place values over `--accounts`.
    pub layout: Layout,
    /// What the audit has done so far, for whoever shows its progress.
    pub pulse: Arc<Pulse>,
}

impl AuditConfig {
    /// Refuses flags that do not go together, naming them.
    pub fn validate(&self) -> Result<(), AuditError> {
        let config = |s: &str| Err(AuditError::Config(s.to_string()));
        let (t, w, p, l) = (&self.target, &self.watch, &self.probes, &self.load);
        Signer::new(t.signing, &t.secrets)?;
        let q = &w.queries;
        if w.observe_db.is_none() && w.sink.is_none() {
            return config(
                "an audit needs an observer: --observe-db URL with --applied-query (and --state-query), or --sink ADDR",
            );
        }
        let aggregates = q.balance.is_some() || q.count.is_some();
        if w.observe_db.is_some() && q.applied.is_none() && q.state.is_none() && !aggregates {
            return config(
                "--observe-db needs a query of what was applied: --applied-query, --balance-query, --count-query or --state-query",
            );
        }
        let any_query = [&q.applied, &q.update_applied, &q.state, &q.dead_letters, &q.balance, &q.count]
            .iter()
            .any(|q| q.is_some());
        if w.observe_db.is_none() && any_query {
            return config(
                "--applied-query, --update-applied-query, --state-query, --dead-letter-query, --balance-query and --count-query need --observe-db",
            );
        }
        self.validate_layout()?;
        if p.copies < 2 {
            return config("--copies must be at least 2");
        }
        if p.events == 0 {
            return config("--probe-events must be at least 1");
        }
        if p.trials == 0 {
            return config("--trials must be at least 1");
        }
        if l.rate.is_nan() || l.rate <= 0.0 {
            return config("--rate must be above 0");
        }
        if l.concurrency == 0 {
            return config("--concurrency must be at least 1");
        }
        for c in self.crash.iter().map(|c| &c.control).chain(self.storm.iter().map(|s| &s.control)) {
            if !(c.health_url.starts_with("http://") || c.health_url.starts_with("https://")) {
                return config("--health-url must be an http:// or https:// URL");
            }
        }
        if self.crash.as_ref().is_some_and(|c| c.kills == 0) {
            return config("--kills must be at least 1");
        }
        if let Some(poison) = &self.poison {
            if !(poison.chance > 0.0 && poison.chance <= 1.0) {
                return config("--poison must be above 0 and at most 1");
            }
            if poison.p99_factor.is_nan() || poison.p99_factor < 1.0 {
                return config("--poison-p99-factor must be at least 1");
            }
        }
        if let Some(s) = &self.storm {
            if s.time_scale.is_nan() || s.time_scale <= 0.0 {
                return config("--time-scale must be above 0");
            }
            if s.events == 0 {
                return config("--storm-events must be at least 1");
            }
        }
        if let Some(c) = &self.capacity
            && (c.ramp.steps == 0 || c.ramp.step_duration.is_zero())
        {
            return config("--ramp-steps and --step-duration must be above 0");
        }
        l.workload.validate()?;
        bounds::check(self)?;
        self.validate_shard()
    }

    /// What per-account aggregates need of the layout and the bodies.
    fn validate_layout(&self) -> Result<(), AuditError> {
        let config = |s: String| Err(AuditError::Config(s));
        let q = &self.watch.queries;
        let aggregates = q.balance.is_some() || q.count.is_some();
        if aggregates != (self.layout != Layout::Pooled) {
            return config("the layout of credits over accounts must follow the aggregates observed".into());
        }
        if q.balance.is_some() && !self.target.payload.carries_amount() {
            return config(format!(
                "--balance-query needs bodies that carry the credit's amount: --payload {} has none (GitHub's \
                 bodies carry no amount): give --field amount=POINTER where your handler reads it, or a --payload \
                 template with {{{{amount}}}}; or give --count-query instead",
                self.target.payload.name()
            ));
        }
        if let Layout::Scarce { accounts, max_amount } = self.layout {
            if q.count.is_some() {
                return config(format!(
                    "--count-query needs one account per credit, and --accounts {accounts} shares accounts between \
                     credits (a count of rows cannot say which was applied): leave --accounts out, or give \
                     --balance-query alone"
                ));
            }
            if self.shard.is_some() {
                return config(
                    "a sharded audit with --balance-query needs one account per credit: leave --accounts out \
                     (the balances a shard reads first would hold another shard's credits)"
                        .into(),
                );
            }
            if max_amount < super::accounts::UNIT {
                return config(format!("--max-amount must be at least {}", super::accounts::UNIT));
            }
        }
        Ok(())
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
        if self.watch.sink.is_some() || self.watch.observe_db.is_none() {
            return config(
                "a sharded audit is judged afterwards by `hookbench merge` through --observe-db; a --sink sees only while it runs",
            );
        }
        if self.checks.iter().any(|&c| c != Check::SHARDED) {
            let only = Check::SHARDED.as_str();
            return Err(AuditError::Config(format!(
                "a sharded audit runs the {} only (--checks {only}); run the other checks in an audit of their own",
                only.replace('-', " ")
            )));
        }
        if self.start_at.is_none() && (self.id_prefix.is_none() || self.account_base.is_none()) {
            return config(
                "every shard of an audit must use the same ids: give --start-at (they are made from it), or --id-prefix and --account-base",
            );
        }
        Ok(())
    }

    /// How a load is sent: at `--rate`, `--concurrency` in flight, each attempt recorded for the
    /// witnesses, into the history under `audit/<check>`.
    pub(crate) fn load_sender(&self, check: Check) -> SenderConfig {
        let l = &self.load;
        SenderConfig {
            rate: Some(l.rate),
            concurrency: l.concurrency,
            timeout: l.timeout,
            retry: l.retry,
            source: String::new(),
            record: true,
            history: self.history.as_ref().map(|t| t.with_cell(format!("audit/{}", check.as_str()))),
            shard: Shard::WHOLE,
            start_at: None,
        }
    }

    /// Whether the observers see each account's version (`--state-query`), so that plan updates
    /// can be judged.
    pub fn sees_states(&self) -> bool {
        self.watch.queries.state.is_some()
    }

    /// The workload the judged loads send (parallel load, crash, poison): the one asked for, but
    /// credits only when no observer sees accounts' versions, since an update nothing can see
    /// applied could never be judged.
    pub fn load_workload(&self) -> WorkloadConfig {
        let w = self.load.workload.clone();
        if self.sees_states() { w } else { WorkloadConfig { p_credit: 1.0, ..w } }
    }

    /// Whether `check` was asked for (all are, when none was named).
    pub fn selected(&self, check: Check) -> bool {
        self.checks.is_empty() || self.checks.contains(&check)
    }

    /// The loads' parameters, as a report keeps them.
    pub fn parameters(&self) -> AuditParameters {
        let (l, w) = (&self.load, &self.load_workload());
        AuditParameters {
            seed: w.seed,
            events: w.events,
            accounts: w.accounts,
            p_credit: w.p_credit,
            rate: l.rate,
            concurrency: l.concurrency,
            timeout: humantime::format_duration(l.timeout).to_string(),
            retry: l.retry,
            p_duplicate: w.p_duplicate,
            p_ack_lost: w.p_ack_lost,
            p_concurrent: w.p_concurrent,
            p_shuffle: w.p_shuffle,
            layout: self.layout,
        }
    }
}
