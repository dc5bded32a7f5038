//! The poison check (the checklist's item 8): the seeded load sent twice, once clean and once with
//! poison events mixed in at `--poison` (a credit to `--poison-account`, or the body of
//! `--poison-template`), each in ids and accounts of its own. A poison event must never produce a
//! side effect; the other events must all be applied once, their p99 within `--poison-p99-factor`
//! of the clean run's; with `--dead-letter-query`, every poison event must be in the receiver's
//! dead-letter store once the observers have settled.

use std::sync::Arc;
use std::time::Duration;

use super::checks::{Ctx, WITNESSES};
use super::load::{self, Load, Rules};
use super::observe::Observation;
use super::verdict::{Check, CheckResult, PoisonFigures, Status, Witness};
use super::{AuditConfig, AuditError};
use crate::stats::Latency;
use crate::wire::Poison;
use crate::workload::Workload;

/// The baseline p99 the factor applies to is at least this: a few milliseconds either way are
/// noise, not a poison event's harm.
const P99_FLOOR: Duration = Duration::from_millis(20);

/// The clean load and the poisoned one.
pub struct Poisoned {
    /// Without poison.
    pub clean: Load,
    /// With poison.
    pub poisoned: Load,
    /// How the poison was made, in words.
    pub what: String,
}

/// Sends the clean load, then the poisoned one.
pub async fn run(ctx: &Ctx, config: &AuditConfig, poison: &Poison) -> Result<Poisoned, AuditError> {
    let sender = config.load_sender(Check::Poison);
    let clean = Workload::generate(&config.workload)?;
    let clean_wire = Arc::new(ctx.load_wire("pclean_", clean.config.accounts));
    let offset = ctx.probe.now_ms();
    let clean = load::send(&config.url, clean, clean_wire, sender.clone(), offset).await?;

    let mut poisoned = Workload::generate(&config.workload)?;
    poisoned.poison(config.poison_chance);
    let mut wire = ctx.load_wire("poison_", poisoned.config.accounts);
    wire.poison = poison.clone();
    let offset = ctx.probe.now_ms();
    let poisoned = load::send(&config.url, poisoned, Arc::new(wire), sender, offset).await?;
    let what = match poison {
        Poison::Account(a) => format!("credits to account {a}"),
        Poison::Template(p) => format!("bodies of {}", p.name()),
        Poison::NegativeAmount => "credits of a negative amount".to_string(),
    };
    Ok(Poisoned { clean, poisoned, what })
}

/// p99 of the attempts of the load's events that are not poison, from send to answer.
fn p99_of_the_rest(load: &Load) -> f64 {
    let latency = Latency::default();
    for r in load.sent.attempts.iter().filter(|r| !load.workload.is_poisoned(r.event)) {
        latency.record(Duration::from_secs_f64(((r.done_ms - r.sent_ms) / 1e3).max(0.0)));
    }
    latency.percentiles().p99 as f64 / 1e3
}

/// The verdict.
pub fn judge(
    p: &Poisoned,
    seen: &Observation,
    factor: f64,
    dead_letters: bool,
) -> (CheckResult, PoisonFigures) {
    let rules = Rules { check: Check::Poison, latest_state: false, every_event: true };
    let (rest, figures) = load::judge(&p.poisoned, seen, rules, &[]);
    let (w, wire) = (&p.poisoned.workload, &p.poisoned.wire);
    let mut witnesses = rest.witnesses;
    let (mut poison_events, mut applied, mut dead) = (0u64, 0u64, 0u64);
    for i in (0..w.events.len()).filter(|&i| w.is_poisoned(i)) {
        poison_events += 1;
        let id = wire.fields(w, i).id;
        let (_, max) = seen.applied(&id);
        let in_store = seen.dead_letters.contains(&id);
        dead += u64::from(in_store);
        let problem = if max > 0 {
            applied += 1;
            Some(format!("poison event applied {max} times"))
        } else if dead_letters && !in_store {
            Some("poison event not in the dead-letter store".to_string())
        } else {
            None
        };
        if let (Some(problem), true) = (problem, witnesses.len() < WITNESSES) {
            let attempts = load::attempts_of(&p.poisoned, i, &[]);
            witnesses.push(Witness { id: id.clone(), problem, attempts, observed: seen.describe(&id) });
        }
    }
    let baseline = p99_of_the_rest(&p.clean);
    let with_poison = p99_of_the_rest(&p.poisoned);
    let allowed = factor * baseline.max(P99_FLOOR.as_secs_f64() * 1e3);
    let slow = with_poison > allowed;
    let dead_lettered = dead_letters.then_some(dead);
    let missing_dead = dead_letters && dead < poison_events;
    let failed = rest.status == Status::Fail || applied > 0 || slow || missing_dead || poison_events == 0;
    let dead_text = dead_lettered.map_or(String::new(), |d| format!(", {d} of them dead-lettered"));
    let evidence = format!(
        "{poison_events} poison events ({}), {applied} applied{dead_text}; the other events: {} dup, {} lost, {} never applied, p99 {with_poison:.1} ms against {baseline:.1} ms without poison (at most {allowed:.1} ms){}",
        p.what,
        figures.dup_events,
        figures.lost,
        figures.unapplied,
        if poison_events == 0 { "; no event drew poison: raise --poison" } else { "" },
    );
    let figures = PoisonFigures {
        poison: p.what.clone(),
        poison_events,
        poison_applied: applied,
        dead_lettered,
        baseline_p99_ms: baseline,
        poisoned_p99_ms: with_poison,
        p99_factor: factor,
        load: figures,
    };
    witnesses.truncate(WITNESSES);
    let status = if failed { Status::Fail } else { Status::Pass };
    (CheckResult { check: Check::Poison, status, evidence, witnesses }, figures)
}
