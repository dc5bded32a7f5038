//! The semantic duplicate: for `--probe-events` credits, one change sent as two events under
//! different ids, about the same object, of the same type, the second created a second later and
//! sent once the first was answered (Stripe may send "two separate Event objects" for one change;
//! Saleor does). PASS: exactly one of each pair applied. Both applied is a semantic duplicate:
//! advisory (WARN, the exit status unchanged), since the checklist dedupes on the event id, unless
//! `--strict` makes it a FAIL. Neither applied is lost or never-applied, a FAIL either way.

use super::{
    AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt, needs_applies,
};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Ctx, Delivered, Probes};
use crate::judge::{Class, ClassSet, CreditBook, Expect, Needs};
use crate::observe::{Sees, Sink, Snapshot};
use crate::report::{Check, CheckResult};
use crate::wire::Fields;

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::SemanticDuplicate, phase: Phase::Probe, build };

/// Builds the check; `--strict` makes a semantic duplicate fail it.
///
/// A body that does not carry the object's id cannot send one change twice: its two events
/// would differ in their ids alone, which a receiver rightly takes for two payments.
fn build<'a>(config: &'a AuditConfig, _: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    if !config.target.payload.carries_object() {
        return Err(Unbuilt::NoObject(config.target.payload.name().to_string()));
    }
    Ok(Box::new(SemanticDuplicate { strict: config.strict }))
}

struct SemanticDuplicate {
    strict: bool,
}

/// Tries for each event of a pair to be answered: the most times it reaches the receiver.
const REACH: u32 = 3;

/// Pair `n`'s two events: one credit of one object, the second under another id, created later,
/// to the same account (of the same amount, but in the scarce layout, where each credit of an
/// account carries a place value of its own).
fn pair(ctx: &Ctx, n: usize) -> Result<[Fields; 2], AuditError> {
    let object = Some(format!("{}sem_obj_{n:04}", ctx.wire.ids.prefix));
    let first = Fields { object: object.clone(), ..ctx.credit("sem", 2 * n, 100 + n as i64, REACH)? };
    let second = ctx.credit_beside("sem", 2 * n + 1, &first, REACH)?;
    let second = Fields { object, created: first.created + 1, ..second };
    Ok([first, second])
}

impl SemanticDuplicate {
    /// What it is held to: every change applied once, the semantic duplicate warning (or, with
    /// `--strict`, failing).
    fn probes(&self) -> Probes {
        let mut p = Probes::new(INFO.check, EXACTLY_ONCE, &[Needs::Applies]);
        let semantic = ClassSet::EMPTY.with(Class::SemanticDuplicate);
        if self.strict {
            p.rules.fail = p.rules.fail.or(semantic);
        } else {
            p.rules.warn = semantic;
        }
        p
    }
}

#[async_trait::async_trait]
impl AuditCheck for SemanticDuplicate {
    /// A sink names an event only by the key its call carries: a receiver that dedupes on the
    /// object (the remedy) may key its downstream call by the object, which names neither event
    /// of the pair, and a sink would read that as nothing applied. Only the receiver's own records
    /// (an applied query, hookbench's tables) say which event of a pair it applied; beside them,
    /// a sink's counts are left out of this check's judgement.
    fn cannot_run(&self, sees: Sees) -> Option<String> {
        needs_applies(sees).or_else(|| {
            (!sees.recorded_applies).then(|| {
                "needs --applied-query: a sink knows an event only by its call's key, and a receiver \
                 that dedupes on the object may key its call by the object, naming neither event"
                    .to_string()
            })
        })
    }

    fn plan(&self, config: &AuditConfig) -> Plan {
        // Each pair's second credit goes to its first's account.
        let credits = Plan::credits(config.probes.events, REACH);
        Plan { credits: credits.credits.iter().flat_map(|&r| [r, r]).collect(), accounts: 0, ..credits }
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let ctx = run.ctx;
        let mut p = self.probes();
        for n in 0..run.config.probes.events {
            for (which, fields) in ["first event", "second event, another id"].into_iter().zip(pair(ctx, n)?)
            {
                let mut sent = Delivered::new(fields, Expect::Once);
                ctx.until_answered(&mut sent, REACH as usize, which).await;
                p.events.push(sent);
            }
            p.pairs.push((2 * n, 2 * n + 1));
        }
        Ok(Box::new(Pairs(p)) as Box<dyn Delivery>)
    }
}

/// The pairs sent, judged on the receiver's own records alone: a sink's count of a receiver that
/// keys its call by the object names neither event, and would read as a pair never applied; a
/// per-account aggregate sees the change, not which event of the pair made it.
struct Pairs(Probes);

impl Pairs {
    fn recorded(seen: &Snapshot) -> Snapshot {
        let mut recorded = seen.clone();
        let aggregates: Vec<String> = seen.undecoded.iter().map(|(name, _)| name.clone()).collect();
        recorded.applied.retain(|(observer, _)| observer != Sink::NAME && !aggregates.contains(observer));
        recorded.undecoded.clear();
        recorded.unexplained = None;
        recorded
    }
}

impl Delivery for Pairs {
    fn book(&self, book: &mut CreditBook) {
        self.0.book(book);
    }

    fn judge(&self, seen: &Snapshot) -> CheckResult {
        self.0.judge(&Self::recorded(seen))
    }

    fn replayable(&self, seen: &Snapshot) -> Vec<Fields> {
        self.0.replayable(&Self::recorded(seen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sees(applies: bool, recorded: bool) -> Sees {
        Sees { applies, recorded_applies: recorded, ..Sees::default() }
    }

    #[test]
    fn it_runs_only_where_the_receivers_own_records_name_the_event() {
        let check = SemanticDuplicate { strict: false };
        assert!(check.cannot_run(sees(true, true)).is_none());
        assert!(
            check.cannot_run(sees(true, false)).is_some_and(|w| w.contains("--applied-query")),
            "a sink alone"
        );
        assert!(check.cannot_run(sees(false, false)).is_some(), "no observer of applies");
    }

    #[test]
    fn a_sinks_count_is_left_out_of_the_pairs_judgement() {
        use crate::observe::Record;
        let mut seen = Snapshot::default();
        Record::applied(&mut seen, "sql", "sem_0000", 1);
        Record::applied(&mut seen, Sink::NAME, "obj_1", 1);
        let recorded = Pairs::recorded(&seen);
        assert_eq!(recorded.applied.len(), 1);
        assert_eq!(recorded.applied("sem_0000"), (1, 1), "the sink's zero for it is gone");
        assert_eq!(seen.applied("sem_0000"), (0, 1), "with the sink, the fewest is its zero");
    }

    #[test]
    fn a_semantic_duplicate_warns_unless_strict() {
        let lenient = SemanticDuplicate { strict: false }.probes().rules;
        assert!(
            lenient.warn.contains(Class::SemanticDuplicate)
                && !lenient.fail.contains(Class::SemanticDuplicate)
        );
        assert!(lenient.fail.contains(Class::Lost) && lenient.fail.contains(Class::NeverApplied));
        let strict = SemanticDuplicate { strict: true }.probes().rules;
        assert!(strict.fail.contains(Class::SemanticDuplicate) && strict.warn.is_empty());
    }
}
