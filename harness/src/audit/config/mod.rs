//! What an audit is told that every check shares, validated here: the receiver, its signing and
//! payload, the observers, the probes' sizes and the loads. Each check's own settings are in its
//! module (`checks/`), which validates them.

pub(super) mod bounds;

use std::sync::Arc;
use std::time::Duration;

use super::{AuditError, Pulse};
use crate::history::Tap;
use crate::observe::{Queries, QueryLimits};
use crate::report::{AuditParameters, Check};
use crate::sender::{RetryPolicy, SenderConfig};
use crate::wire::{Payload, Provider, Scheme, SecretError, Signer};
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
    /// The URL Twilio and Square sign, when not `url` (`--signed-url`: a receiver behind a proxy
    /// sees the address its provider knows, not the one audited).
    pub signed_url: Option<String>,
}

impl Target {
    /// The signer its deliveries are signed with, signing the URL its provider knows.
    pub fn signer(&self) -> Result<Signer, SecretError> {
        let url = self.signed_url.as_deref().unwrap_or(&self.url);
        Ok(Signer::new(self.signing, &self.secrets)?.for_url(url))
    }
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
}

/// What an audit is told that every check shares.
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
        t.signer()?;
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
