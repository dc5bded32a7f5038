//! Check 1, the sequential duplicate: each of `--probe-events` credits twice in a row, the second
//! after the first's answer, freshly signed. PASS: each applied exactly once.

use super::{AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Delivered, Probes};
use crate::judge::{Expect, Needs};
use crate::report::Check;

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::SequentialDuplicate, phase: Phase::Probe, build };

/// Builds the check (it needs no flags of its own).
fn build<'a>(_config: &'a AuditConfig, _: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    Ok(Box::new(SequentialDuplicate))
}

struct SequentialDuplicate;

/// The most times one of its credits reaches the receiver: three tries to be answered, then the
/// duplicate.
const REACH: u32 = 4;

#[async_trait::async_trait]
impl AuditCheck for SequentialDuplicate {
    fn plan(&self, config: &AuditConfig) -> Plan {
        Plan::credits(config.probes.events, REACH)
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let ctx = run.ctx;
        let mut p = Probes::new(INFO.check, EXACTLY_ONCE, &[Needs::Applies]);
        for n in 0..run.config.probes.events {
            let fields = ctx.credit("seq", n, 100 + n as i64, REACH)?;
            let mut sent = Delivered::new(fields, Expect::Once);
            ctx.until_answered(&mut sent, 3, "first delivery").await;
            sent.push(ctx.deliver(&sent.fields, "sequential duplicate").await);
            p.events.push(sent);
        }
        Ok(Box::new(p) as Box<dyn Delivery>)
    }
}
