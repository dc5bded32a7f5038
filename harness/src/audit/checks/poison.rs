//! The poison check (the checklist's item 8): the seeded load sent twice, once clean and once with
//! poison events mixed in at `--poison` (a credit to `--poison-account`, or the body of
//! `--poison-template`), each in ids and accounts of its own, and both judged. PASS: the clean run
//! applied exactly once; in the poisoned run no poison event applied, every other event applied
//! exactly once, their p99 within `--poison-p99-factor` of the clean run's; with
//! `--dead-letter-query`, every poison event in the receiver's dead-letter store.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{
    AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt, needs_applies,
};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::config::bounds::{number, within};
use crate::judge::{Class, ClassSet, CreditBook, Needs, Rules};
use crate::load::{Load, WITNESSES, judge_load};
use crate::observe::{Sees, Snapshot};
use crate::report::{Check, CheckFigures, CheckResult, PoisonFigures, Status};
use crate::stats::Latency;
use crate::wire::payload::Template;
use crate::wire::{Payload, Poison};
use crate::workload::Workload;

/// The baseline p99 the factor applies to is at least this: a few milliseconds either way are
/// noise, not a poison event's harm.
const P99_FLOOR: Duration = Duration::from_millis(20);

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::Poison, phase: Phase::Disturb, build };

/// The poison check's p99 factor.
const P99_FACTOR: std::ops::RangeInclusive<f64> = 1.0..=1000.0;
/// An account the user names: any integer a JSON number holds exactly (-1 is a natural poison).
const JSON_INTEGER: std::ops::RangeInclusive<i64> = -(1 << 53) + 1..=(1 << 53) - 1;

/// The check's flags: `--poison-account` or `--poison-template` runs it.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "poison")]
pub struct Flags {
    /// Poison events are credits to this account, which your handler is known to refuse (runs the
    /// poison check; any integer a JSON number holds exactly, e.g. -1).
    #[arg(long, value_name = "N", conflicts_with = "poison_template")]
    pub poison_account: Option<i64>,
    /// Poison events take the credit body of this template (the --payload template format), a
    /// body your handler fails on (runs the poison check).
    #[arg(long, value_name = "FILE")]
    pub poison_template: Option<PathBuf>,
    /// Chance a credit of the poison check's load is poison.
    #[arg(long = "poison", value_name = "CHANCE", default_value_t = 0.05)]
    pub poison_chance: f64,
    /// The other events' p99 with poison may be at most this many times their p99 without (taken
    /// as at least 20 ms; 1 to 1000).
    #[arg(long, default_value_t = 3.0)]
    pub poison_p99_factor: f64,
}

/// The check's settings, from its flags.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How poison events are made.
    pub poison: Poison,
    /// Chance a credit of the load is poison.
    pub chance: f64,
    /// The other events' p99 with poison may be this many times their p99 without.
    pub p99_factor: f64,
}

impl Flags {
    /// The settings, when a poison was named (its template read), each within its bounds.
    pub fn settings(&self) -> Result<Option<Settings>, AuditError> {
        let poison = match (self.poison_account, &self.poison_template) {
            (Some(account), _) => {
                within("--poison-account", account, &JSON_INTEGER, number)?;
                Poison::Account(account)
            }
            (None, Some(path)) => Poison::Template(Payload::Template(
                Template::read(path).map_err(|e| AuditError::Config(format!("--poison-template: {e}")))?,
            )),
            (None, None) => return Ok(None),
        };
        let (chance, p99_factor) = (self.poison_chance, self.poison_p99_factor);
        if !(chance > 0.0 && chance <= 1.0) {
            return Err(AuditError::Config("--poison must be above 0 and at most 1".into()));
        }
        if p99_factor.is_nan() || p99_factor < 1.0 {
            return Err(AuditError::Config("--poison-p99-factor must be at least 1".into()));
        }
        within("--poison-p99-factor", p99_factor, &P99_FACTOR, number)?;
        Ok(Some(Settings { poison, chance, p99_factor }))
    }
}

/// Builds the check from its flags.
fn build<'a>(_: &'a AuditConfig, checks: &'a CheckSettings) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    let settings = checks.poison.as_ref().ok_or(Unbuilt::Needs("--poison-account or --poison-template"))?;
    Ok(Box::new(PoisonCheck { settings }))
}

struct PoisonCheck<'a> {
    settings: &'a Settings,
}

/// The clean load and the poisoned one.
struct Poisoned {
    clean: Load,
    poisoned: Load,
    what: String,
    factor: f64,
}

/// p99 of the attempts of the load's events that are not poison, from send to answer.
fn p99_of_the_rest(load: &Load) -> f64 {
    let latency = Latency::default();
    for r in load.sent.attempts.iter().filter(|r| !load.workload.is_poisoned(r.event)) {
        latency.record(crate::sender::seconds((r.done_ms - r.sent_ms) / 1e3));
    }
    latency.percentiles().p99 as f64 / 1e3
}

fn rules(extra: &[Class]) -> Rules {
    let fail: ClassSet = EXACTLY_ONCE.iter().chain(extra).copied().chain([Class::StaleAccount]).collect();
    Rules { fail, warn: ClassSet::EMPTY, require: vec![Needs::Applies], witnesses: WITNESSES }
}

impl Delivery for Poisoned {
    fn book(&self, book: &mut CreditBook) {
        self.clean.book(book);
        self.poisoned.book(book);
    }

    fn judge(&self, seen: &Snapshot) -> CheckResult {
        let (clean, clean_figures, _) = judge_load(&self.clean, seen, Check::Poison, &rules(&[]), &[]);
        let (poisoned, figures, verdict) =
            judge_load(&self.poisoned, seen, Check::Poison, &rules(&[Class::NotDeadLettered]), &[]);
        let (w, wire) = (&self.poisoned.workload, &self.poisoned.wire);
        let poison_ids: Vec<String> =
            (0..w.events.len()).filter(|&i| w.is_poisoned(i)).map(|i| wire.fields(w, i).id).collect();
        let dead_lettered = seen
            .dead_letters
            .as_ref()
            .map(|d| poison_ids.iter().filter(|id| d.contains(id.as_str())).count() as u64);
        let (poison_events, applied) = (verdict.tally.poison, verdict.tally.poison_applied);
        let baseline = p99_of_the_rest(&self.clean);
        let with_poison = p99_of_the_rest(&self.poisoned);
        let allowed = self.factor * baseline.max(P99_FLOOR.as_secs_f64() * 1e3);
        let slow = with_poison > allowed;
        let none_drawn = poison_events == 0;
        let failed = clean.status != Status::Pass || poisoned.status != Status::Pass || slow || none_drawn;
        let dead = dead_lettered.map_or(String::new(), |d| format!(", {d} of them dead-lettered"));
        let evidence = format!(
            "clean run: {}; poisoned run ({poison_events} poison events, {}, {applied} applied{dead}): {}; the other events' p99 {with_poison:.1} ms against {baseline:.1} ms without poison (at most {allowed:.1} ms){}",
            clean.evidence,
            self.what,
            poisoned.evidence,
            if none_drawn { "; no event drew poison: raise --poison" } else { "" },
        );
        let mut anomalies = clean.anomalies.clone();
        anomalies.extend(poisoned.anomalies.iter().copied().filter(|c| !clean.anomalies.contains(c)));
        let witnesses = clean.witnesses.into_iter().chain(poisoned.witnesses).take(WITNESSES).collect();
        let figures = PoisonFigures {
            poison: self.what.clone(),
            poison_events,
            poison_applied: applied,
            dead_lettered,
            baseline_p99_ms: baseline,
            poisoned_p99_ms: with_poison,
            p99_factor: self.factor,
            load: figures,
            clean: clean_figures,
        };
        CheckResult {
            check: Check::Poison,
            status: if failed { Status::Fail } else { Status::Pass },
            evidence,
            anomalies,
            witnesses,
            figures: Some(CheckFigures::Poison(Box::new(figures))),
        }
    }
}

#[async_trait::async_trait]
impl AuditCheck for PoisonCheck<'_> {
    /// Poison credits to one account (`--poison-account`) all move that one account, outside the
    /// run's: a per-account aggregate cannot say which was applied, so another observer must.
    fn cannot_run(&self, sees: Sees) -> Option<String> {
        needs_applies(sees).or_else(|| match self.settings.poison {
            Poison::Account(a) if !sees.applies => Some(format!(
                "--poison-account {a} sends every poison credit to one account, which a balance or count                  query cannot tell apart: give --applied-query or --sink, or --poison-template"
            )),
            _ => None,
        })
    }

    fn plan(&self, config: &AuditConfig) -> Plan {
        let attempts = config.load.retry.max_attempts;
        let load = |_| Plan::load(&config.load_workload(), config.layout, attempts).unwrap_or_default();
        load(()).and(load(()))
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let (ctx, config) = (run.ctx, run.config);
        let url = &config.target.url;
        let sender = config.load_sender(Check::Poison);
        let clean_sender = crate::sender::SenderConfig {
            history: config.history.as_ref().map(|t| t.with_cell("audit/poison/clean".to_string())),
            ..sender.clone()
        };
        let attempts = sender.retry.max_attempts;
        let mut clean = Workload::generate(&config.load_workload())?;
        let clean_wire = Arc::new(ctx.laid_out_load("pclean_", &mut clean, attempts)?);
        let clean = ctx.send_load(url, clean, clean_wire, clean_sender).await?;

        let mut poisoned = Workload::generate(&config.load_workload())?;
        poisoned.poison(self.settings.chance);
        let mut wire = ctx.laid_out_load("poison_", &mut poisoned, attempts)?;
        wire.poison = self.settings.poison.clone();
        let poisoned = ctx.send_load(url, poisoned, Arc::new(wire), sender).await?;
        let what = match &self.settings.poison {
            Poison::Account(a) => format!("credits to account {a}"),
            Poison::Template(p) => format!("bodies of {}", p.name()),
            Poison::NegativeAmount => "credits of a negative amount".to_string(),
        };
        let factor = self.settings.p99_factor;
        Ok(Box::new(Poisoned { clean, poisoned, what, factor }) as Box<dyn Delivery>)
    }
}
