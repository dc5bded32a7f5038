//! Check 2, concurrent copies: `--trials` fresh credits, each as `--copies` copies released
//! together by a barrier, each on a connection of its own (retried until one is answered when no
//! copy was acknowledged). PASS: each applied exactly once. The evidence gives how many of the
//! trials doubled with a 95 % interval: a race seen in 7 of 20 says how often it happens, and
//! 0 of 40 how rarely it can at most ("under 9 %").

use std::sync::Arc;

use tokio::sync::Barrier;

use super::{AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Ctx, Delivered, Probes, now_s};
use crate::audit::probe::Answer;
use crate::judge::rate::doubled;
use crate::judge::{CreditBook, Expect, Needs};
use crate::observe::Snapshot;
use crate::report::{Check, CheckFigures, CheckResult, TrialsFigures};
use crate::wire::Fields;

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::ConcurrentCopies, phase: Phase::Probe, build };

/// Builds the check with `--copies` and `--trials`.
fn build<'a>(config: &'a AuditConfig, _: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    Ok(Box::new(ConcurrentCopies { copies: config.probes.copies, trials: config.probes.trials }))
}

struct ConcurrentCopies {
    copies: usize,
    trials: usize,
}

impl ConcurrentCopies {
    /// The most times one of its credits reaches the receiver: its copies, then the retries.
    fn reach(&self) -> u32 {
        u32::try_from(self.copies + RETRIES).unwrap_or(u32::MAX)
    }
}

/// The trials, sent, waiting for the observers.
struct Trials {
    probes: Probes,
    copies: usize,
}

impl Delivery for Trials {
    fn judge(&self, seen: &Snapshot) -> CheckResult {
        let (mut result, verdict) = self.probes.judged(seen);
        let history = self.probes.history();
        let rate = doubled(&verdict, &seen.evidence(&history), 0..history.len());
        result.evidence = format!("{}; {}", result.evidence, rate.describe("trials", "doubled"));
        result.figures = Some(CheckFigures::Trials(TrialsFigures {
            sent: history.len() as u64,
            copies: self.copies as u64,
            rate: rate.into(),
        }));
        result
    }

    fn replayable(&self, seen: &Snapshot) -> Vec<Fields> {
        self.probes.replayable(seen)
    }

    fn book(&self, book: &mut CreditBook) {
        self.probes.book(book);
    }
}

/// Tries to be answered after no copy was.
const RETRIES: usize = 3;

/// `copies` copies of `sent`, each signed, released together by a barrier, each on a connection
/// of its own; their answers in the order they were sent.
async fn release_together(ctx: &Arc<Ctx>, sent: &mut Delivered, copies: usize) {
    let barrier = Arc::new(Barrier::new(copies));
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..copies {
        let (ctx, f, barrier) = (ctx.clone(), sent.fields.clone(), barrier.clone());
        tasks.spawn(async move {
            let (body, headers) = ctx.wire.attempt(&f, now_s());
            barrier.wait().await;
            ctx.probe.post(None, &headers, body, &format!("copy {} of {copies}", c + 1)).await
        });
    }
    let mut answers: Vec<Answer> = tasks.join_all().await;
    answers.sort_by(|a, b| a.log.at_ms.total_cmp(&b.log.at_ms));
    for a in answers {
        sent.push(a);
    }
}

#[async_trait::async_trait]
impl AuditCheck for ConcurrentCopies {
    fn plan(&self, _config: &AuditConfig) -> Plan {
        Plan::credits(self.trials, self.reach())
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let ctx = run.ctx;
        let mut probes = Probes::new(INFO.check, EXACTLY_ONCE, &[Needs::Applies]);
        for n in 0..self.trials {
            let mut sent = Delivered::new(ctx.credit("cc", n, 100 + n as i64, self.reach())?, Expect::Once);
            release_together(ctx, &mut sent, self.copies).await;
            if !sent.answers.acked {
                ctx.until_answered(&mut sent, RETRIES, "retry after no copy was acknowledged").await;
            }
            probes.events.push(sent);
        }
        Ok(Box::new(Trials { probes, copies: self.copies }) as Box<dyn Delivery>)
    }
}
