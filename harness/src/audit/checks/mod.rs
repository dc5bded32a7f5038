//! The checklist: one module per check, each owning its settings (a check whose flags were not
//! given cannot be built), its deliveries and its judgement, and its [`Info`] (which check, when
//! it runs, how it is built), found through [`info`], whose match names every check. `audit::run` runs them by [`Phase`]: the probes and the parallel load
//! judged together once the observers settle, then each check that disturbs the receiver on its
//! own, then the late replay, which re-sends what the earlier checks saw applied.

mod capacity;
mod concurrent_copies;
mod crash;
mod hostile_input;
mod late_replay;
mod lost_ack;
mod out_of_order;
mod parallel_load;
mod poison;
mod race_window;
mod retry_storm;
mod secret_rotation;
mod semantic_duplicate;
mod sequential_duplicate;

use std::sync::Arc;
use std::time::Duration;

use super::AuditError;
use super::accounts::Layout;
use super::config::AuditConfig;
use super::control::ControlFlags;
use super::ctx::{Ctx, Probes};
use crate::judge::{Class, CreditBook};
use crate::observe::{Sees, Snapshot};
use crate::report::{Check, CheckResult};
use crate::wire::{Fields, Poison, Provider};

/// When a check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Single deliveries, judged with the load once the observers settle.
    Probe,
    /// The parallel load.
    Load,
    /// It disturbs the receiver (kills it, poisons it, loads it to its limit): run and judged on
    /// its own, after the others.
    Disturb,
    /// After every other check, from what they saw (the late replay).
    After,
}

/// What the registry knows of a check before it is built.
pub struct Info {
    /// Which check.
    pub check: Check,
    /// When it runs.
    pub phase: Phase,
    /// Builds it from the audit's settings, or says which it needs.
    pub build: Build,
}

/// Why a check cannot be built from the audit's settings: it is skipped, saying so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unbuilt {
    /// Its flags were not given.
    #[error("needs {0}")]
    Needs(&'static str),
    /// `--signing none`: there is no secret to rotate.
    #[error("--signing none signs nothing to rotate")]
    Unsigned,
    /// The provider the audit is held to never retries a failed delivery.
    #[error("{0} has no retry schedule to replay (it does not retry on its own, or does not say when)")]
    NoRetries(&'static str),
    /// The bodies cannot carry one change twice.
    #[error(
        "needs bodies that carry the object an event is about: --payload {0} does not (a provider's \
         bodies do; a template does with {{{{object}}}} in its credit body)"
    )]
    NoObject(String),
}

/// One check of the checklist, built from its settings.
#[async_trait::async_trait]
pub trait AuditCheck: Send + Sync {
    /// Why it cannot run with what the observers see, if it cannot: most checks count applies.
    fn cannot_run(&self, sees: Sees) -> Option<String> {
        needs_applies(sees)
    }
    /// Sends its deliveries; they are judged once the observers have settled.
    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError>;
    /// What it will send, said before anything is: the run's accounts are laid out, and checked to
    /// hold nothing, from every check's plan.
    fn plan(&self, config: &AuditConfig) -> Plan {
        let _ = config;
        Plan::default()
    }
}

/// What a check will send, before it sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Each credit placed as a probe's is ([`Ctx::credit`]): the most times it can reach the
    /// receiver.
    pub credits: Vec<u32>,
    /// Each credit of its loads laid out as a load's is (`Ctx::laid_out_load`): the same.
    pub load_credits: Vec<u32>,
    /// The accounts it takes beyond its probes' credits': its updates', its loads' blocks.
    pub accounts: u64,
}

impl Plan {
    /// `n` credits, each reaching the receiver at most `reach` times.
    pub fn credits(n: usize, reach: u32) -> Self {
        Self { credits: vec![reach; n], ..Self::default() }
    }

    /// `n` updates, each to an account of its own.
    pub fn updates(n: usize) -> Self {
        Self { accounts: n as u64, ..Self::default() }
    }

    /// The load `workload` would be, laid out as `layout` says, each delivery tried `attempts`
    /// times: its accounts, and in the scarce layout (where each credit takes a place value) the
    /// reach of each credit, which generating the workload tells.
    pub fn load(
        config: &crate::workload::WorkloadConfig,
        layout: Layout,
        attempts: u32,
    ) -> Result<Self, AuditError> {
        let (accounts, load_credits) = match layout {
            Layout::Own => (crate::workload::Workload::own_account_span(config), Vec::new()),
            Layout::Pooled => (u64::from(config.accounts), Vec::new()),
            Layout::Scarce { .. } => {
                let workload = crate::workload::Workload::generate(config)?;
                let copies = workload.copies();
                let reach = workload.events.iter().zip(copies).filter(|(e, _)| e.is_credit());
                (u64::from(config.accounts), reach.map(|(_, c)| c.saturating_mul(attempts)).collect())
            }
        };
        Ok(Self { credits: Vec::new(), load_credits, accounts })
    }

    /// This plan and `other`'s.
    #[must_use]
    pub fn and(mut self, other: Plan) -> Self {
        self.credits.extend(other.credits);
        self.load_credits.extend(other.load_credits);
        self.accounts += other.accounts;
        self
    }

    /// The accounts it takes in `layout`: its own beyond the probes' credits, and in any layout
    /// but the scarce one an account per probe credit.
    pub fn span(&self, layout: Layout) -> u64 {
        let probes = if matches!(layout, Layout::Scarce { .. }) { 0 } else { self.credits.len() as u64 };
        self.accounts + probes
    }
}

/// What a check sent, waiting for the observers.
pub trait Delivery: Send + Sync {
    /// The check's verdict, given what the observers saw once settled.
    fn judge(&self, seen: &Snapshot) -> CheckResult;

    /// Events it saw acknowledged and applied exactly once (in `seen`), which the late replay
    /// may send again.
    fn replayable(&self, seen: &Snapshot) -> Vec<Fields> {
        let _ = seen;
        Vec::new()
    }

    /// Every credit it sent, with its account, amount and attempts, and the accounts of its
    /// updates: what per-account aggregates are decoded against.
    fn book(&self, book: &mut CreditBook);
}

impl Delivery for Probes {
    fn judge(&self, seen: &Snapshot) -> CheckResult {
        Probes::judge(self, seen)
    }

    fn book(&self, book: &mut CreditBook) {
        Probes::book(self, book);
    }

    fn replayable(&self, seen: &Snapshot) -> Vec<Fields> {
        Probes::replayable(self, seen)
    }
}

/// A check that was judged, with what the observers saw when it was.
pub struct Judged {
    /// Which check.
    pub check: Check,
    /// What it sent.
    pub sent: Box<dyn Delivery>,
    /// What the observers saw.
    pub seen: Snapshot,
}

/// What a check's sending has at hand.
pub struct Run<'a> {
    /// The audit's settings.
    pub config: &'a AuditConfig,
    /// The receiver and the wire.
    pub ctx: &'a Arc<Ctx>,
    /// Reports a step on stderr (`--no-progress` silences it).
    pub step: &'a (dyn Fn(&str) + Sync),
    /// The observers, for a check that must look before it sends (the late replay).
    pub observers: &'a crate::observe::Observers,
    /// The checks judged so far.
    pub earlier: &'a [Judged],
    /// Every credit sent so far, to decode per-account aggregates against.
    pub book: &'a CreditBook,
}

/// The flags checks own, flattened into `hookbench audit`'s: each check's group is in its module,
/// with what it means and its bounds.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckFlags {
    #[command(flatten)]
    race_window: race_window::Flags,
    #[command(flatten)]
    late_replay: late_replay::Flags,
    #[command(flatten)]
    control: ControlFlags,
    #[command(flatten)]
    crash: crash::Flags,
    #[command(flatten)]
    poison: poison::Flags,
    #[command(flatten)]
    capacity: capacity::Flags,
    #[command(flatten)]
    retry_storm: retry_storm::Flags,
    #[command(flatten)]
    hostile_input: hostile_input::Flags,
}

/// Each check's own settings, from its flags: a check that runs only when its flags were given
/// has `None` (or `false`) without them, and cannot be built.
#[derive(Debug, Clone)]
pub struct CheckSettings {
    race_window: bool,
    late_replay: late_replay::Flags,
    hostile_input: hostile_input::Settings,
    crash: Option<crash::Settings>,
    poison: Option<poison::Settings>,
    capacity: Option<capacity::Settings>,
    retry_storm: Option<retry_storm::Settings>,
}

impl CheckFlags {
    /// Each check's settings, validated by its module, for a receiver held to `provider`'s rules.
    pub fn settings(&self, provider: Option<Provider>) -> Result<CheckSettings, AuditError> {
        let control = self.control.control()?;
        Ok(CheckSettings {
            race_window: self.race_window.race_window,
            late_replay: self.late_replay.settings()?,
            hostile_input: self.hostile_input.settings(provider)?,
            crash: self.crash.settings(control.as_ref())?,
            poison: self.poison.settings()?,
            capacity: self.capacity.settings()?,
            retry_storm: self.retry_storm.settings(control.as_ref())?,
        })
    }
}

impl CheckSettings {
    /// What the checks wait on their own at least: the late replay's wait, the ramp's steps, the
    /// storm's outage in real time.
    pub fn wait(&self) -> Duration {
        let ramp = self.capacity.map_or(Duration::ZERO, |c| c.wait());
        let storm = self.retry_storm.as_ref().map_or(Duration::ZERO, retry_storm::Settings::wait);
        self.late_replay.replay_after.saturating_add(ramp).saturating_add(storm)
    }

    /// How long hostile-input lets a stalled body be held (`--stall-wait`).
    pub fn stall_wait(&self) -> Duration {
        self.hostile_input.stall_wait()
    }

    /// Deliveries the checks send beyond the loads at most: the ramp's and the storm's.
    pub fn deliveries(&self) -> usize {
        let ramp = self.capacity.map_or(0, |c| c.deliveries());
        ramp.saturating_add(self.retry_storm.as_ref().map_or(0, |s| s.events))
    }

    /// How poison events are made (the poison check's, else none).
    pub fn poison(&self) -> Poison {
        self.poison.as_ref().map(|p| p.poison.clone()).unwrap_or_default()
    }

    /// The account the poison check's events credit (`--poison-account`), when it names one.
    pub fn poison_account(&self) -> Option<i64> {
        match self.poison.as_ref()?.poison {
            Poison::Account(a) => Some(a),
            _ => None,
        }
    }
}

/// Builds a check from the audit's settings and its own, or says why it cannot be.
pub type Build = for<'a> fn(&'a AuditConfig, &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt>;

/// The registry: `check`'s module's [`Info`]. The match has no catch-all, so a check cannot be
/// named without a module that sends and judges it.
pub fn info(check: Check) -> &'static Info {
    match check {
        Check::Capacity => &capacity::INFO,
        Check::ConcurrentCopies => &concurrent_copies::INFO,
        Check::Crash => &crash::INFO,
        Check::HostileInput => &hostile_input::INFO,
        Check::LateReplay => &late_replay::INFO,
        Check::LostAck => &lost_ack::INFO,
        Check::OutOfOrder => &out_of_order::INFO,
        Check::ParallelLoad => &parallel_load::INFO,
        Check::Poison => &poison::INFO,
        Check::RaceWindow => &race_window::INFO,
        Check::RetryStorm => &retry_storm::INFO,
        Check::SecretRotation => &secret_rotation::INFO,
        Check::SemanticDuplicate => &semantic_duplicate::INFO,
        Check::SequentialDuplicate => &sequential_duplicate::INFO,
    }
}

/// A check built, with what the registry knows of it.
pub struct Built<'a> {
    /// Which check, and when it runs.
    pub info: &'static Info,
    /// The check.
    pub check: Box<dyn AuditCheck + 'a>,
}

/// What a check that expects each event applied exactly once fails on.
pub const EXACTLY_ONCE: &[Class] =
    &[Class::Duplicate, Class::Lost, Class::NeverApplied, Class::RefusedApplied, Class::UnexplainedChange];

/// Why a check that counts applies cannot run without an observer of them.
pub fn needs_applies(sees: Sees) -> Option<String> {
    (!sees.applies && !sees.aggregates).then(|| {
        "needs an observer of applies (--applied-query, --balance-query, --count-query or --sink)".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_checks_module_says_it_is_that_check() {
        for &c in Check::ALL {
            assert_eq!(info(c).check, c);
        }
    }
}
