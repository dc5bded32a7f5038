//! Check 3, the lost acknowledgement: each of `--probe-events` credits written whole on a
//! connection dropped 50 ms later without reading the answer, then retried until answered. PASS:
//! each applied exactly once, never zero times.

use std::time::Duration;

use super::{AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Delivered, Probes, now_s};
use crate::judge::{Expect, Needs};
use crate::report::Check;

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::LostAck, phase: Phase::Probe, build };

/// Builds the check (it needs no flags of its own).
fn build<'a>(_config: &'a AuditConfig, _: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    Ok(Box::new(LostAck))
}

struct LostAck;

/// The most times one of its credits reaches the receiver: the dropped attempt, then five tries to
/// be answered.
const REACH: u32 = 6;

#[async_trait::async_trait]
impl AuditCheck for LostAck {
    fn plan(&self, config: &AuditConfig) -> Plan {
        Plan::credits(config.probes.events, REACH)
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let ctx = run.ctx;
        let mut p = Probes::new(INFO.check, EXACTLY_ONCE, &[Needs::Applies]);
        for n in 0..run.config.probes.events {
            let mut sent = Delivered::new(ctx.credit("ack", n, 100 + n as i64, REACH)?, Expect::Once);
            let (body, headers) = ctx.wire.attempt(&sent.fields, now_s());
            sent.unanswered(ctx.probe.post_and_drop(&headers, &body, Duration::from_millis(50)).await);
            tokio::time::sleep(Duration::from_millis(100)).await;
            ctx.until_answered(&mut sent, 5, "retry").await;
            p.events.push(sent);
        }
        Ok(Box::new(p) as Box<dyn Delivery>)
    }
}
