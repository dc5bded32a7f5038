//! A bench cell's load judged, and its row: what a bench cell and a merged bench share.

use crate::matrix::Backend;
use crate::matrix::Design;

use super::{answers, history, write_verdict};
use crate::chaos::ChaosCounts;
use crate::history::Tap;
use crate::judge::{Class, Evidence, History, Rules, Verdict, judge};
use crate::model::HandlerResult;
use crate::observe::{Gather, ObserveError, Observers};
use crate::report::{CellVerdict, LatencySpectrum, ModelFigures, Phases, Row};
use crate::sender::SendReport;
use crate::workload::Workload;

/// A cell's load, what was observed of it, and its verdict.
pub struct Judged {
    /// What was sent and answered.
    pub history: History,
    /// What the observers found.
    pub evidence: Evidence,
    /// The verdict.
    pub verdict: Verdict,
}

/// What a bench cell is held to: every class, but a dead letter is only looked for where the
/// design keeps them (the inbox; the others answer a poison event 500 every time).
pub fn rules(design: Design, witnesses: usize) -> Rules {
    let rules = Rules { witnesses, ..Rules::strict() };
    if design == Design::Inbox { rules } else { rules.ignoring(Class::NotDeadLettered) }
}

/// Judges `workload` as `sent` sent it, by what `observers` see now.
pub async fn judge_cell(
    workload: &Workload,
    sent: &SendReport,
    observers: &Observers,
    design: Design,
    witnesses: usize,
) -> Result<Judged, ObserveError> {
    let history = history(workload, "", |i| i64::from(workload.events[i].account), |i| answers(sent, i));
    let mut gather = Gather::new(&history);
    observers.look(&mut gather).await?;
    let evidence = gather.evidence;
    let verdict = judge(&history, &evidence, &rules(design, witnesses));
    Ok(Judged { history, evidence, verdict })
}

impl Judged {
    /// The verdict into the cell's history, after its attempts.
    pub fn write(&self, tap: &Tap, workload: &Workload) {
        write_verdict(tap, workload, &self.history, &self.evidence, &self.verdict);
    }
}

/// A report row: the cell's (backend, design, the model's figures), what the sender (or the
/// shards, added up) and chaos did, the verdict, and the wall time.
pub fn bench_row(
    cell: (Backend, Design, Option<&HandlerResult>),
    sent: SendReport,
    chaos: ChaosCounts,
    judged: &Judged,
    wall_s: f64,
) -> Row {
    let (backend, design, model) = cell;
    let (v, e) = (&judged.verdict, &judged.evidence);
    let c = sent.counters;
    let secs = sent.elapsed.as_secs_f64().max(1e-9);
    Row {
        backend,
        design,
        isolation: None,
        level: None,
        deliveries: c.deliveries,
        status_2xx: c.status_2xx,
        status_4xx: c.status_4xx,
        status_5xx: c.status_5xx,
        db_conflicts: c.db_conflicts,
        timeouts: c.timeouts,
        acks_lost: c.acks_lost,
        retries: c.retries,
        figures: v.into(),
        verdict: Some(CellVerdict {
            exactly_once: v.exactly_once(),
            latest_state: v.latest_state(),
            failing: v.failing(),
            summary: crate::report::verdict_summary(v),
        }),
        latency_us: sent.latency_intended,
        latency_actual_us: sent.latency_actual,
        latency_buckets: sent.latency_buckets.clone(),
        latency_spectrum: LatencySpectrum {
            planned: sent.spectrum_intended.clone(),
            actual: sent.spectrum_actual.clone(),
        },
        throughput_per_s: c.deliveries as f64 / secs,
        planned_rate: sent.pace.planned_rate(),
        achieved_rate: sent.pace.achieved_rate(),
        behind_cause: sent.pace.behind_cause(),
        wall_s,
        connect_errors: c.connect_errors,
        resets: c.resets,
        gave_up: c.gave_up,
        ledger_rows: e.ledger.map_or(0, |l| l.rows),
        unknown_events: v.tally.unknown_applies,
        dead_letters: e.dead_letters.as_ref().map_or(0, |d| d.len() as u64),
        id_conflicts: e.id_conflicts.unwrap_or(0),
        chaos,
        poisoned: v.tally.poison,
        poison_applied: v.tally.poison_applied,
        poison_attempts: c.poison_attempts,
        poison_non_2xx: c.poison_non_2xx,
        model: model.map(ModelFigures::from),
        phases: Phases::default(),
    }
}
