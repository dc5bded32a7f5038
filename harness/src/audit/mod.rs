//! `hookbench audit`: the article's go-live checklist run against a receiver hookbench did not
//! start and cannot see inside, in any language, with its own schema and its provider's
//! signatures.
//!
//! The audit connects its observers (the receiver's database through the user's read-only
//! queries, whose shape is checked first, or a sink standing in for its downstream service), sends
//! one preflight delivery that tells a receiver it cannot judge as told (a redirect, a wrong
//! path, secret or payload: exit 2 with the fix) from one that fails, then runs the checks of
//! [`checks::info`] phase by phase, each judged by the one judge from what the observers saw
//! once they settled. Every id and account of a run is its own ([`crate::wire::IdSpace`]), so
//! audits can be repeated against one long-lived database. An audit that stops after starting
//! still has its report: what ran, and why it stopped.

mod accounts;
pub mod checks;
mod config;
mod control;
mod ctx;
pub mod discover;
mod preflight;
mod probe;
mod pulse;
mod shard;

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub use checks::{CheckFlags, CheckSettings};
pub use config::{AuditConfig, LoadSettings, ProbeSettings, Target, Watch};
pub use control::{Control, ControlError};
pub use probe::{BadUrl, authority_and_path};
pub use pulse::{Pulse, PulseNow};
pub use shard::run_shard;

use crate::judge::CreditBook;
use crate::observe::{ObserveError, Observer, Observers, Sink, SinkLimits, Snapshot, SqlObserver};
use crate::report::{AuditSection, CheckResult, ReproInputs};
pub use crate::report::{Check, Status};
use crate::sender::SendError;
use crate::wire::{IdSpace, SecretError, Wire};
use crate::workload::WorkloadError;
use accounts::{Accounts, Layout};
use checks::{Built, Delivery, Judged, Phase, Plan, Run};
use ctx::{Ctx, Delivered};

/// An audit as told: what every check shares, and each check's own settings.
#[derive(Debug, Clone)]
pub struct Audit {
    /// What every check shares: the receiver, the observers, the probes' sizes, the loads.
    pub config: AuditConfig,
    /// Each check's own settings, from its flags.
    pub checks: CheckSettings,
}

impl Audit {
    /// Refuses settings that do not go together or are out of their bounds, naming the flags; and
    /// a `--deadline` shorter than the audit's own waits.
    pub fn validate(&self) -> Result<(), AuditError> {
        self.config.validate()?;
        config::bounds::deadline_fits(&self.config, self.checks.wait())
    }
}

/// Why an audit could not run or stopped (exit status 2).
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
    Url(#[from] BadUrl),
    /// Nothing answers at the URL.
    #[error("the receiver at {url} is unreachable: {reason}")]
    Unreachable {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The preflight found the receiver cannot be audited as told; the fix.
    #[error("{0}")]
    Preflight(String),
    /// An observer failed.
    #[error(transparent)]
    Observe(#[from] ObserveError),
    /// A load's sender could not start.
    #[error("a load could not start: {0}")]
    Send(#[from] SendError),
    /// The receiver could not be killed or started again, or `--retention-cmd` failed.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// Every check was skipped.
    #[error("no check could run: {0}")]
    NothingRan(String),
    /// The audit took longer than `--deadline`.
    #[error("it ran past --deadline {} and stopped (the report holds the checks that finished)", humantime::format_duration(*.0))]
    Deadline(Duration),
}

/// `work`, unless `deadline` (the audit's `--deadline` from its start) comes first.
pub(super) async fn by<T, E: Into<AuditError>>(
    deadline: (Instant, Duration),
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, AuditError> {
    match tokio::time::timeout_at(deadline.0, work).await {
        Ok(done) => done.map_err(Into::into),
        Err(_) => Err(AuditError::Deadline(deadline.1)),
    }
}

/// Why an audit stopped, and the report of what it did before (`None` when it stopped before it
/// sent anything).
#[derive(Debug)]
pub struct Stopped {
    /// Why.
    pub error: AuditError,
    /// What ran.
    pub partial: Option<AuditSection>,
}

impl<E: Into<AuditError>> From<E> for Stopped {
    fn from(e: E) -> Self {
        Self { error: e.into(), partial: None }
    }
}

/// The run's ids and accounts: given, or made from the clock (a sharded audit's `--start-at`, so
/// that its shards agree) so that no earlier audit used them.
fn id_space(config: &AuditConfig) -> IdSpace {
    let now = config.start_at.unwrap_or_else(jiff::Timestamp::now);
    fresh_ids('a', now, config.id_prefix.as_deref(), config.account_base)
}

/// Ids and accounts made from `now` where not given: the prefix `letter` and the time in base
/// 36, the accounts from the time of day.
fn fresh_ids(letter: char, now: jiff::Timestamp, prefix: Option<&str>, account_base: Option<i64>) -> IdSpace {
    let millis = u64::try_from(now.as_millisecond()).unwrap_or(0);
    let prefix = prefix.map_or_else(|| format!("{letter}{}_", base36(millis)), str::to_string);
    // Ten accounts a millisecond, wrapping every ~31.7 years, below 10^13 (far below 2^53): two
    // audits of one database started a second apart use ranges 10,000 accounts apart (a range
    // made from the second alone had two audits in one second share it).
    let account_base =
        account_base.unwrap_or(1_000_000 + i64::try_from(millis % 1_000_000_000_000).unwrap_or(0) * 10);
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

/// The observers the flags name, connected (each query's shape checked).
async fn connect_observers(audit: &Audit, ids: &IdSpace) -> Result<Observers, AuditError> {
    let config = &audit.config;
    let w = &config.watch;
    let mut list: Vec<Box<dyn Observer>> = Vec::new();
    if let Some(url) = &w.observe_db {
        list.push(Box::new(SqlObserver::connect_with_limits(url, w.queries.clone(), w.query_limits).await?));
    }
    if let Some(addr) = &w.sink {
        list.push(Box::new(
            Sink::start_for_run(addr, &w.sink_key, sink_limits(config, &audit.checks), &ids.prefix).await?,
        ));
    }
    Ok(Observers::new(list).only_ids(&ids.prefix))
}

/// The observers asked once before anything is sent, so that a query that fails stops the audit
/// first; what the run's accounts held then is their baseline. In the own layout each credit's
/// account must hold nothing (its change is its applies, and a sharded audit's merge reads no
/// baseline): one of `fresh` that does stops the audit, naming `--account-base`. A sharded
/// audit's shard holds only its own credits' accounts to that, before it sends them: another
/// shard may have started sending already.
async fn read_baseline(
    observers: &mut Observers,
    layout: Layout,
    accounts: Range<i64>,
    fresh: &(dyn Fn(i64) -> bool + Sync),
) -> Result<(), AuditError> {
    let baseline = observers.snapshot().await?;
    if layout == Layout::Own {
        held_nothing(&baseline, &accounts, fresh)?;
    }
    observers.set_baseline(baseline);
    Ok(())
}

/// Refuses accounts that hold something before the run, in the own layout.
fn held_nothing(
    baseline: &Snapshot,
    accounts: &Range<i64>,
    fresh: &(dyn Fn(i64) -> bool + Sync),
) -> Result<(), AuditError> {
    let held: Vec<String> = baseline
        .aggregates
        .iter()
        .flat_map(|(measure, values)| {
            values
                .iter()
                .filter(|&(a, &v)| v != 0 && fresh(*a))
                .map(move |(a, v)| format!("account {a}: {} {v}", measure.name()))
        })
        .collect();
    if held.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = held.iter().take(3).map(String::as_str).collect();
    Err(AuditError::Config(format!(
        "the accounts this audit credits, {} to {} (--account-base {} on), must hold nothing before it \
         starts, so that each one's change is its credit's applies, but {} do ({}{}): give --account-base at \
         accounts no one uses (an earlier audit of this database, or the app's own customers?)",
        accounts.start,
        accounts.end - 1,
        accounts.start,
        held.len(),
        shown.join(", "),
        if held.len() > shown.len() { ", ..." } else { "" }
    )))
}

/// Every check's plan, and the preflight's credit.
fn planned(config: &AuditConfig, checks: &[Built<'_>]) -> Plan {
    let preflight = Plan::credits(1, preflight::TRIES);
    checks.iter().fold(preflight, |p, c| p.and(c.check.plan(config)))
}

/// The accounts the parallel load's events name, the first of the run's.
fn load_span(config: &AuditConfig) -> i64 {
    let w = config.load_workload();
    let span = match config.layout {
        Layout::Own => crate::workload::Workload::own_account_span(&w),
        Layout::Pooled | Layout::Scarce { .. } => u64::from(w.accounts),
    };
    i64::try_from(span).unwrap_or(i64::MAX)
}

/// Where the run's aggregates are read: the shared accounts in the scarce layout, else every
/// account the plan may name, from the base.
fn aggregate_range(config: &AuditConfig, base: i64, plan: &Plan) -> Range<i64> {
    match config.layout {
        Layout::Scarce { accounts, .. } => base..base + i64::from(accounts),
        Layout::Pooled | Layout::Own => {
            let span = i64::try_from(plan.span(config.layout)).unwrap_or(i64::MAX);
            base..base.saturating_add(load_span(config)).saturating_add(span)
        }
    }
}

/// Refuses a scarce layout whose credits cannot fit under `--max-amount`, before anything is
/// sent.
fn fits(config: &AuditConfig, plan: &Plan, replay_reach: u32) -> Result<(), AuditError> {
    let probes = plan.credits.iter().map(|r| r.saturating_add(replay_reach));
    Accounts::fits(config.layout, probes.chain(plan.load_credits.iter().copied())).map(|_| ())
}

/// Every credit sent so far: the preflight's and every check's, judged or waiting.
fn book_of(preflight: &Delivered, judged: &[Judged], waiting: &[(Check, Box<dyn Delivery>)]) -> CreditBook {
    let mut book = CreditBook::default();
    preflight.book(&mut book);
    for j in judged {
        j.sent.book(&mut book);
    }
    for (_, sent) in waiting {
        sent.book(&mut book);
    }
    book
}

/// The sink's bounds, with room for every event this audit may send: past `max_keys` a new key
/// is refused, and a refused effect of the run's own would be judged lost. The loads (parallel,
/// crash, poison) each send the workload; the ramp at most its top rate in every step; the
/// probes and the storm a few thousand more.
fn sink_limits(config: &AuditConfig, checks: &CheckSettings) -> SinkLimits {
    let loads = config.load.workload.events.saturating_mul(3);
    // Each term is bounded by the flags' own bounds (each check's module), so this cannot
    // overflow.
    let planned = loads + checks.deliveries() + 100_000;
    let default = SinkLimits::default();
    SinkLimits { max_keys: default.max_keys.max(planned), ..default }
}

/// What the audit has found so far, for its report.
struct Found<'a> {
    config: &'a AuditConfig,
    /// hostile-input's `--stall-wait`, recorded for its reproduction.
    stall_wait: Duration,
    /// The poison check's `--poison-account`, recorded for its reproduction.
    poison_account: Option<i64>,
    ids: &'a IdSpace,
    observers: &'a Observers,
    start: Instant,
    results: Vec<CheckResult>,
}

impl Found<'_> {
    fn section(&self, stopped: Option<String>) -> AuditSection {
        let mut checks = self.results.clone();
        checks.sort_by_key(|r| r.check);
        let t = &self.config.target;
        AuditSection {
            url: t.url.clone(),
            signing: t.signing.as_str().to_string(),
            provider: t.provider,
            payload: t.payload.name(),
            observers: self.observers.names(),
            id_prefix: self.ids.prefix.clone(),
            account_base: self.ids.account_base,
            parameters: self.config.parameters(),
            checks,
            wall_s: self.start.elapsed().as_secs_f64(),
            stopped,
            repro: self.repro_inputs(),
        }
    }

    /// What a reproduction of this audit's findings needs: its queries, its poison account, its
    /// stall wait.
    fn repro_inputs(&self) -> ReproInputs {
        let q = &self.config.watch.queries;
        ReproInputs {
            applied_query: q.applied.clone(),
            state_query: q.state.clone(),
            balance_query: q.balance.clone(),
            count_query: q.count.clone(),
            dead_letter_query: q.dead_letters.clone(),
            poison_account: self.poison_account,
            stall_wait_ms: u64::try_from(self.stall_wait.as_millis()).ok(),
        }
    }

    /// Stops the audit with `error`, keeping what ran.
    fn stop(&self, error: impl Into<AuditError>) -> Stopped {
        let error = error.into();
        Stopped { partial: Some(self.section(Some(error.to_string()))), error }
    }
}

/// The checks the flags ask for, built; those that cannot run (their flags missing, or the
/// observers not seeing what they need) as skipped results.
fn build_checks<'a>(audit: &'a Audit, observers: &Observers) -> (Vec<Built<'a>>, Vec<CheckResult>) {
    let (mut built, mut skipped) = (Vec::new(), Vec::new());
    let selected = |c: &&Check| audit.config.selected(**c);
    for info in Check::ALL.iter().filter(selected).map(|&c| checks::info(c)) {
        match (info.build)(&audit.config, &audit.checks) {
            Err(why) => skipped.push(CheckResult::skipped(info.check, why.to_string())),
            Ok(check) => match check.cannot_run(observers.sees()) {
                Some(why) => skipped.push(CheckResult::skipped(info.check, why)),
                None => built.push(Built { info, check }),
            },
        }
    }
    (built, skipped)
}

/// What the checks sent so far: the preflight's credit, the checks judged, and those waiting for
/// the observers.
struct Sent<'a> {
    preflight: &'a Delivered,
    judged: Vec<Judged>,
    waiting: Vec<(Check, Box<dyn Delivery>)>,
    /// Whether a per-account aggregate is observed: only then are the credits booked.
    aggregates: bool,
}

impl Sent<'_> {
    /// Every credit sent so far, where an aggregate is decoded against them (else none: a load
    /// of millions of events would be booked, id by id, before each check for nothing).
    fn book(&self) -> CreditBook {
        if !self.aggregates {
            return CreditBook::default();
        }
        book_of(self.preflight, &self.judged, &self.waiting)
    }

    /// The checks waiting, judged once the observers settled (`settle`: how long they must be
    /// quiet, and the longest wait) on what they saw decoded against every credit sent so far;
    /// each into `found`.
    async fn judge(
        &mut self,
        observers: &Observers,
        settle: (Duration, Duration),
        deadline: (Instant, Duration),
        found: &mut Found<'_>,
    ) -> Result<(), Stopped> {
        let seen = by(deadline, observers.settled(settle.0, settle.1)).await.map_err(|e| found.stop(e))?;
        let seen = seen.resolve(&self.book());
        for (check, sent) in self.waiting.drain(..) {
            found.results.push(sent.judge(&seen));
            self.judged.push(Judged { check, sent, seen: seen.clone() });
        }
        Ok(())
    }
}

/// Runs the audit, reporting each step through `step`.
pub async fn run(audit: &Audit, step: &(dyn Fn(&str) + Sync)) -> Result<AuditSection, Stopped> {
    audit.validate()?;
    let config = &audit.config;
    let start = Instant::now();
    let deadline = (start + config.deadline, config.deadline);
    let t = &config.target;
    let probe = probe::Probe::new(&t.url, config.load.timeout, start, config.pulse.clone())?;
    probe
        .reachable()
        .await
        .map_err(|e| AuditError::Unreachable { url: t.url.clone(), reason: e.to_string() })?;
    let ids = id_space(config);
    let mut observers = by(deadline, connect_observers(audit, &ids)).await?;
    let (checks, skipped) = build_checks(audit, &observers);
    let replay_reach = u32::from(checks.iter().any(|c| c.info.phase == Phase::After));
    let plan = planned(config, &checks);
    fits(config, &plan, replay_reach)?;
    let range = aggregate_range(config, ids.account_base, &plan);
    observers = observers.only_accounts(range.clone());
    let whole = range.clone();
    by(deadline, read_baseline(&mut observers, config.layout, range, &|a| whole.contains(&a))).await?;
    let signer = t.signer()?;
    let poison = audit.checks.poison();
    let wire =
        Arc::new(Wire { signer, payload: t.payload.clone(), ids: ids.clone(), poison, credit_base: None });
    let accounts = Accounts::new(config.layout, ids.account_base, load_span(config));
    let ctx = Arc::new(Ctx { replay_reach, ..Ctx::new(probe, wire, accounts) });
    let observers = observers;
    let (stall_wait, poison_account) = (audit.checks.stall_wait(), audit.checks.poison_account());
    let mut found = Found {
        config,
        stall_wait,
        poison_account,
        ids: &ids,
        observers: &observers,
        start,
        results: skipped,
    };

    step("preflight");
    let w = &config.watch;
    let settle = (w.quiet, w.settle_max);
    let preflight = async {
        let sent = match preflight::preflight(&ctx, &t.url, 0, preflight::AMOUNT).await? {
            Ok(sent) => sent,
            Err(fix) => return Err(AuditError::Preflight(fix)),
        };
        let book = book_of(&sent, &[], &[]);
        preflight::confirm(&observers, &sent, &book, settle, t).await?.map_err(AuditError::Preflight)?;
        Ok(sent)
    };
    let preflight = by(deadline, preflight).await.map_err(|e| found.stop(e))?;
    let aggregates = observers.sees().aggregates;
    let mut sent = Sent { preflight: &preflight, judged: Vec::new(), waiting: Vec::new(), aggregates };
    for phases in [&[Phase::Probe, Phase::Load][..], &[Phase::Disturb], &[Phase::After]] {
        // The probes and the load are judged together; every other check on its own.
        let together = phases.len() > 1;
        for c in checks.iter().filter(|c| phases.contains(&c.info.phase)) {
            step(c.info.check.as_str());
            let book = sent.book();
            let run =
                Run { config, ctx: &ctx, step, observers: &observers, earlier: &sent.judged, book: &book };
            let delivery = by(deadline, c.check.send(&run)).await.map_err(|e| found.stop(e))?;
            sent.waiting.push((c.info.check, delivery));
            if !together {
                step("waiting for the observers to settle");
                sent.judge(&observers, settle, deadline, &mut found).await?;
            }
        }
        if !sent.waiting.is_empty() {
            step("waiting for the observers to settle");
            sent.judge(&observers, settle, deadline, &mut found).await?;
        }
    }
    if found.results.iter().all(|r| r.status == Status::Skipped) {
        let why: Vec<String> =
            found.results.iter().map(|r| format!("{}: {}", r.check.as_str(), r.evidence)).collect();
        return Err(found.stop(AuditError::NothingRan(why.join("; "))));
    }
    Ok(found.section(None))
}
