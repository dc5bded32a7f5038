//! Check 6, secret rotation, as the providers roll a secret. Standard Webhooks and Stripe sign
//! every delivery during a roll with the old and the new secret in one header, so a receiver
//! holding either must accept it, whichever signature comes first: one credit signed with the
//! first `--secret` and the second (or, given one, a secret the receiver does not hold yet), one
//! signed the other way round. GitHub and Shopify carry one signature: one credit signed with
//! each `--secret` alone. Always: one credit signed only with a secret the receiver never had,
//! which must be refused. PASS: the first applied exactly once each, the last refused (4xx) and
//! never applied.

use super::{AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Delivered, Probes};
use crate::judge::{Class, Expect, Needs};
use crate::report::Check;
use crate::wire::{Signatures, Verification};

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::SecretRotation, phase: Phase::Probe, build };

/// Builds the check for schemes that sign.
fn build<'a>(config: &'a AuditConfig, _: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    let rules = config.target.signing.verification().ok_or(Unbuilt::Unsigned)?;
    Ok(Box::new(SecretRotation { rules, secrets: config.target.secrets.len() }))
}

struct SecretRotation {
    rules: Verification,
    secrets: usize,
}

impl SecretRotation {
    /// Each delivery to send: the keys it is signed with (`None`: one the receiver never had),
    /// what is expected of it, and what it is.
    fn deliveries(&self) -> Vec<(Vec<Option<usize>>, Expect, String)> {
        let mut plan = Vec::new();
        match self.rules.signatures {
            Signatures::Many => {
                let (other, named) = if self.secrets > 1 {
                    (Some(1), "secret 2")
                } else {
                    (None, "a secret the receiver does not hold yet")
                };
                plan.push((
                    vec![Some(0), other],
                    Expect::Once,
                    format!("signed with secret 1, then {named}"),
                ));
                plan.push((
                    vec![other, Some(0)],
                    Expect::Once,
                    format!("signed with {named}, then secret 1"),
                ));
            }
            Signatures::One => {
                for i in 0..self.secrets {
                    plan.push((vec![Some(i)], Expect::Once, format!("signed with secret {} alone", i + 1)));
                }
            }
        }
        plan.push((
            vec![None],
            Expect::Refused,
            "signed only with a secret the receiver never had".to_string(),
        ));
        plan
    }
}

#[async_trait::async_trait]
impl AuditCheck for SecretRotation {
    fn plan(&self, _config: &AuditConfig) -> Plan {
        Plan::credits(self.deliveries().len(), 1)
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let ctx = run.ctx;
        let fail: Vec<Class> = EXACTLY_ONCE.iter().copied().chain([Class::NotRefused]).collect();
        let mut p = Probes::new(INFO.check, &fail, &[Needs::Applies]);
        for (n, (keys, expect, note)) in self.deliveries().into_iter().enumerate() {
            let mut sent = Delivered::new(ctx.credit("rot", n, 100, 1)?, expect);
            let wire = ctx.wire.signed_by(ctx.wire.signer.signing_with(&keys));
            sent.push(ctx.deliver_over(&wire, &sent.fields, &note).await);
            p.events.push(sent);
        }
        Ok(Box::new(p) as Box<dyn Delivery>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Scheme;

    fn plan(scheme: Scheme, secrets: usize) -> Vec<(Vec<Option<usize>>, Expect)> {
        let rules = scheme.verification().expect("signs");
        SecretRotation { rules, secrets }.deliveries().into_iter().map(|(k, e, _)| (k, e)).collect()
    }

    #[test]
    fn a_roll_signs_with_both_secrets_in_either_order_where_the_provider_does() {
        for scheme in [Scheme::StandardWebhooks, Scheme::Stripe] {
            assert_eq!(
                plan(scheme, 2),
                [
                    (vec![Some(0), Some(1)], Expect::Once),
                    (vec![Some(1), Some(0)], Expect::Once),
                    (vec![None], Expect::Refused)
                ]
            );
            assert_eq!(
                plan(scheme, 1)[0],
                (vec![Some(0), None], Expect::Once),
                "one secret: a new one beside it"
            );
        }
        for scheme in [Scheme::Github, Scheme::Shopify] {
            assert_eq!(
                plan(scheme, 2),
                [(vec![Some(0)], Expect::Once), (vec![Some(1)], Expect::Once), (vec![None], Expect::Refused)]
            );
        }
    }

    /// What the plan expects of each delivery is what the provider's own library decides for a
    /// receiver holding the first secret (the vectors hold the rules to the libraries).
    #[test]
    fn the_plan_expects_what_the_providers_library_accepts() {
        for scheme in [Scheme::StandardWebhooks, Scheme::Stripe, Scheme::Github, Scheme::Shopify] {
            let rules = scheme.verification().expect("signs");
            for (keys, expect) in plan(scheme, 1) {
                let held: Vec<bool> = keys.iter().map(|k| *k == Some(0)).collect();
                assert_eq!(rules.accepts(0, &held), expect == Expect::Once, "{scheme:?} {keys:?}");
            }
        }
    }
}
