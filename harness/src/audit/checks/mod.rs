//! The checklist: one module per check, each owning its settings (a check whose flags were not
//! given cannot be built), its deliveries and its judgement, all registered in [`REGISTRY`] in
//! the checklist's order. `audit::run` runs them by [`Phase`]: the probes and the parallel load
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

use futures_util::future::BoxFuture;

pub use hostile_input::default_oversized_bytes;

use super::AuditError;
use super::accounts::Layout;
use super::config::AuditConfig;
use super::ctx::{Ctx, Probes};
use crate::judge::{Class, CreditBook};
use crate::observe::{Sees, Snapshot};
use crate::report::{Check, CheckResult};
use crate::wire::Fields;

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

/// One check of the checklist, built from its settings.
pub trait AuditCheck: Send + Sync {
    /// Which check.
    fn check(&self) -> Check;
    /// When it runs.
    fn phase(&self) -> Phase;
    /// Why it cannot run with what the observers see, if it cannot.
    fn cannot_run(&self, sees: Sees) -> Option<String>;
    /// Sends its deliveries; they are judged once the observers have settled.
    fn send<'a>(&'a self, run: &'a Run<'a>) -> BoxFuture<'a, Result<Box<dyn Delivery>, AuditError>>;
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

/// Builds a check from the audit's settings, or says which flags it needs.
pub type Build = for<'a> fn(&'a AuditConfig) -> Result<Box<dyn AuditCheck + 'a>, String>;

/// Every check, in the checklist's order ([`Check::ALL`]'s).
pub const REGISTRY: [(Check, Build); 14] = [
    (Check::SequentialDuplicate, sequential_duplicate::build),
    (Check::SemanticDuplicate, semantic_duplicate::build),
    (Check::ConcurrentCopies, concurrent_copies::build),
    (Check::RaceWindow, race_window::build),
    (Check::LostAck, lost_ack::build),
    (Check::OutOfOrder, out_of_order::build),
    (Check::LateReplay, late_replay::build),
    (Check::SecretRotation, secret_rotation::build),
    (Check::HostileInput, hostile_input::build),
    (Check::ParallelLoad, parallel_load::build),
    (Check::Crash, crash::build),
    (Check::Poison, poison::build),
    (Check::Capacity, capacity::build),
    (Check::RetryStorm, retry_storm::build),
];

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
    fn the_registry_holds_every_check_once_in_the_checklists_order() {
        let registered: Vec<Check> = REGISTRY.iter().map(|(c, _)| *c).collect();
        assert_eq!(registered, Check::ALL);
    }
}
