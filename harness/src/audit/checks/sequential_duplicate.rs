//! Check 1, the sequential duplicate: each of `--probe-events` credits twice in a row, the second
//! after the first's answer, freshly signed. PASS: each applied exactly once.

use futures_util::future::BoxFuture;

use super::{AuditCheck, Delivery, EXACTLY_ONCE, Phase, Plan, Run, needs_applies};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Delivered, Probes};
use crate::judge::{Expect, Needs};
use crate::observe::Sees;
use crate::report::Check;

/// Builds the check (it needs no flags of its own).
pub fn build(_config: &AuditConfig) -> Result<Box<dyn AuditCheck + '_>, String> {
    Ok(Box::new(SequentialDuplicate))
}

struct SequentialDuplicate;

/// The most times one of its credits reaches the receiver: three tries to be answered, then the
/// duplicate.
const REACH: u32 = 4;

impl AuditCheck for SequentialDuplicate {
    fn check(&self) -> Check {
        Check::SequentialDuplicate
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
                let fields = ctx.credit("seq", n, 100 + n as i64, REACH)?;
                let mut sent = Delivered::new(fields, Expect::Once);
                ctx.until_answered(&mut sent, 3, "first delivery").await;
                sent.push(ctx.deliver(&sent.fields, "sequential duplicate").await);
                p.events.push(sent);
            }
            Ok(Box::new(p) as Box<dyn Delivery>)
        })
    }
}
