//! Check 2, concurrent copies: each of `--probe-events` credits as `--copies` copies released
//! together by a barrier, each on a connection of its own (retried until one is answered when no
//! copy was acknowledged). PASS: each applied exactly once.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::Barrier;

use super::{AuditCheck, Delivery, EXACTLY_ONCE, Phase, Run, needs_applies};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Delivered, Probes, now_s};
use crate::audit::probe::Answer;
use crate::judge::{Expect, Needs};
use crate::observe::Sees;
use crate::report::Check;

/// Builds the check with `--copies`.
pub fn build(config: &AuditConfig) -> Result<Box<dyn AuditCheck + '_>, String> {
    Ok(Box::new(ConcurrentCopies { copies: config.probes.copies }))
}

struct ConcurrentCopies {
    copies: usize,
}

impl AuditCheck for ConcurrentCopies {
    fn check(&self) -> Check {
        Check::ConcurrentCopies
    }

    fn phase(&self) -> Phase {
        Phase::Probe
    }

    fn cannot_run(&self, sees: Sees) -> Option<String> {
        needs_applies(sees)
    }

    fn send<'a>(&'a self, run: &'a Run<'a>) -> BoxFuture<'a, Result<Box<dyn Delivery>, AuditError>> {
        Box::pin(async move {
            let (ctx, copies) = (run.ctx, self.copies);
            let mut p = Probes::new(self.check(), EXACTLY_ONCE, &[Needs::Applies]);
            for n in 0..run.config.probes.events {
                let mut sent =
                    Delivered::new(ctx.credit("cc", n, ctx.account(), 100 + n as i64), Expect::Once);
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
                if !sent.answers.acked {
                    ctx.until_answered(&mut sent, 3, "retry after no copy was acknowledged").await;
                }
                p.events.push(sent);
            }
            Ok(Box::new(p) as Box<dyn Delivery>)
        })
    }
}
