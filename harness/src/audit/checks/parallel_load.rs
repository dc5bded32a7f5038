//! Check 8, the parallel load: the article's seeded workload (`--events` over `--accounts`, its
//! duplicates, concurrent copies and lost acks) at `--rate`, `--concurrency` in flight, retried
//! with backoff. PASS: every credit applied exactly once (none twice, none acknowledged and lost,
//! none never applied), nothing refused and applied, and with `--state-query` no account below
//! the latest version it acknowledged (`load::parallel_rules`, which a merged sharded audit is
//! held to too). The evidence adds the events whose first delivery went as concurrent copies: how
//! many of them applied twice, with a 95 % interval.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{AuditCheck, CheckSettings, Delivery, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::judge::rate::{Rate, doubled};
use crate::judge::{CreditBook, Verdict};
use crate::load::{Load, judge_load, parallel_rules};
use crate::observe::Snapshot;
use crate::report::{Check, CheckFigures, CheckResult};
use crate::workload::{GroupKind, Workload};

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::ParallelLoad, phase: Phase::Load, build };

/// Builds the check (its settings are the loads').
fn build<'a>(_config: &'a AuditConfig, _: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    Ok(Box::new(ParallelLoad))
}

struct ParallelLoad;

/// The load, sent, and whether it was credits only (nothing sees plan updates applied).
struct Loaded(Load, bool);

impl Delivery for Loaded {
    fn book(&self, book: &mut CreditBook) {
        self.0.book(book);
    }

    fn judge(&self, seen: &Snapshot) -> CheckResult {
        let (mut result, mut figures, verdict) =
            judge_load(&self.0, seen, Check::ParallelLoad, &parallel_rules(), &[]);
        let rate = concurrent_rate(&self.0, seen, &verdict);
        result.evidence =
            format!("{}; concurrent copies: {}", result.evidence, rate.describe("events", "doubled"));
        if self.1 {
            result.evidence.push_str("; credits only: no --state-query to see plan updates applied");
        }
        figures.concurrent = Some(rate.into());
        result.figures = Some(CheckFigures::Load(Box::new(figures)));
        result
    }
}

/// Of the load's events whose first delivery went as concurrent copies, how many the judge found
/// applied twice (among those seen applied at all).
fn concurrent_rate(load: &Load, seen: &Snapshot, verdict: &Verdict) -> Rate {
    let history = load.history();
    let concurrent: BTreeSet<usize> = load
        .workload
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::FirstConcurrent)
        .map(|g| g.event as usize)
        .collect();
    doubled(verdict, &seen.evidence(&history), concurrent)
}

#[async_trait::async_trait]
impl AuditCheck for ParallelLoad {
    /// Its accounts are the first of the run's (reserved when the run's accounts are made), so
    /// its plan takes none beyond them.
    fn plan(&self, config: &AuditConfig) -> Plan {
        let attempts = config.load.retry.max_attempts;
        Plan {
            accounts: 0,
            ..Plan::load(&config.load_workload(), config.layout, attempts).unwrap_or_default()
        }
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let config = run.config;
        let mut workload = Workload::generate(&config.load_workload())?;
        let sender = config.load_sender(Check::ParallelLoad);
        run.ctx.accounts.lay_out(&mut workload, sender.retry.max_attempts)?;
        let wire = Arc::clone(&run.ctx.wire);
        let load = run.ctx.send_load(&config.target.url, workload, wire, sender).await?;
        Ok(Box::new(Loaded(load, !config.sees_states())) as Box<dyn Delivery>)
    }
}
