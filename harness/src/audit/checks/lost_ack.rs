//! Check 3, the lost acknowledgement: each of `--probe-events` credits written whole on a
//! connection dropped 50 ms later without reading the answer, then retried until answered. PASS:
//! each applied exactly once, never zero times.

use std::time::Duration;

use futures_util::future::BoxFuture;

use super::{AuditCheck, Delivery, EXACTLY_ONCE, Phase, Plan, Run, needs_applies};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Delivered, Probes, now_s};
use crate::judge::{Expect, Needs};
use crate::observe::Sees;
use crate::report::Check;

/// Builds the check (it needs no flags of its own).
pub fn build(_config: &AuditConfig) -> Result<Box<dyn AuditCheck + '_>, String> {
    Ok(Box::new(LostAck))
}

struct LostAck;

/// The most times one of its credits reaches the receiver: the dropped attempt, then five tries to
/// be answered.
const REACH: u32 = 6;

impl AuditCheck for LostAck {
    fn check(&self) -> Check {
        Check::LostAck
    }

    fn phase(&self) -> Phase {
        Phase::Probe
    }

    fn cannot_run(&self, sees: Sees) -> Option<String> {
        needs_applies(sees)
    }

    fn plan(&self, config: &AuditConfig) -> Plan {
        Plan::credits(config.probes.events, REACH)
    }

    fn send<'a>(&'a self, run: &'a Run<'a>) -> BoxFuture<'a, Result<Box<dyn Delivery>, AuditError>> {
        Box::pin(async move {
            let ctx = run.ctx;
            let mut p = Probes::new(self.check(), EXACTLY_ONCE, &[Needs::Applies]);
            for n in 0..run.config.probes.events {
                let mut sent = Delivered::new(ctx.credit("ack", n, 100 + n as i64, REACH)?, Expect::Once);
                let (body, headers) = ctx.wire.attempt(&sent.fields, now_s());
                sent.unanswered(ctx.probe.post_and_drop(&headers, &body, Duration::from_millis(50)).await);
                tokio::time::sleep(Duration::from_millis(100)).await;
                ctx.until_answered(&mut sent, 5, "retry").await;
                p.events.push(sent);
            }
            Ok(Box::new(p) as Box<dyn Delivery>)
        })
    }
}
