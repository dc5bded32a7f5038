//! Check 4, out of order: for `--probe-events` new accounts, plan updates of versions 1 to 6 in a
//! shuffled order (the latest never last), one at a time, each until answered. PASS: no account
//! ends below the latest version it acknowledged, and no update is left unapplied (refused or
//! failed while no later version reached the account), and, where update applies are observed
//! (`--update-applied-query`, or an applied query that returns updates), none applied twice.
//! Needs `--state-query`.

use super::{AuditCheck, CheckSettings, Delivery, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Delivered, Probes};
use crate::judge::{Class, Expect, Needs};
use crate::observe::Sees;
use crate::report::Check;

/// Versions per account.
const VERSIONS: i64 = 6;

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::OutOfOrder, phase: Phase::Probe, build };

/// Builds the check (it needs no flags of its own).
fn build<'a>(_config: &'a AuditConfig, _: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    Ok(Box::new(OutOfOrder))
}

struct OutOfOrder;

/// The order account `a` gets its versions in: a fixed interleaving, the latest never last.
fn order(a: usize) -> Vec<i64> {
    let mut order: Vec<i64> = (1..=VERSIONS).collect();
    let len = order.len();
    order.rotate_left(a % len + 1);
    if order.last() == Some(&VERSIONS) {
        order.swap(0, len - 1);
    }
    order
}

#[async_trait::async_trait]
impl AuditCheck for OutOfOrder {
    fn cannot_run(&self, sees: Sees) -> Option<String> {
        (!sees.states).then(|| "needs --state-query (each account's version)".to_string())
    }

    fn plan(&self, config: &AuditConfig) -> Plan {
        Plan::updates(config.probes.events)
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let ctx = run.ctx;
        // A duplicate: an update handler that ran twice, where update applies are observed.
        let fail = [Class::StaleAccount, Class::NeverApplied, Class::Duplicate];
        let mut p = Probes::new(INFO.check, &fail, &[Needs::States]);
        let mut n = 0;
        for a in 0..run.config.probes.events {
            let account = ctx.account();
            for v in order(a) {
                let mut sent = Delivered::new(ctx.update("ooo", n, account, v), Expect::Once);
                n += 1;
                ctx.until_answered(&mut sent, 3, &format!("version {v}")).await;
                p.events.push(sent);
            }
        }
        Ok(Box::new(p) as Box<dyn Delivery>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_version_is_never_sent_last() {
        for a in 0..20 {
            let o = order(a);
            assert_eq!(o.len(), VERSIONS as usize);
            assert_ne!(o.last(), Some(&VERSIONS), "{o:?}");
        }
    }
}
