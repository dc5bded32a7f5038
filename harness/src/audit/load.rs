//! The audit's loads: a seeded workload sent by the bench's sender in an id space of its own, and
//! its judgement event by event from what the observers saw. Check 8 (the parallel load) is one;
//! the crash and poison checks send theirs the same way and judge them with their own [`Rules`].

use std::sync::Arc;

use super::checks::WITNESSES;
use super::observe::Observation;
use super::verdict::{AttemptLog, Check, CheckResult, LoadFigures, Status, Witness};
use crate::history::{EventLine, Line, Tap};
use crate::sender::{self, AttemptRecord, Progress, SendError, SendReport, SenderConfig};
use crate::wire::Wire;
use crate::workload::Workload;

/// A load that was sent.
#[derive(Debug, Clone)]
pub struct Load {
    /// Its events and plan.
    pub workload: Arc<Workload>,
    /// Its bodies, signatures and id space.
    pub wire: Arc<Wire>,
    /// What the sender saw.
    pub sent: SendReport,
    /// Milliseconds from the audit's start to the sender's start.
    pub offset_ms: f64,
    /// Where its attempts went, and where [`judge`] writes its events' fates.
    pub history: Option<Tap>,
}

/// Sends `workload` to `url`; `offset_ms` is the audit's clock at the start.
pub async fn send(
    url: &str,
    workload: Workload,
    wire: Arc<Wire>,
    config: SenderConfig,
    offset_ms: f64,
) -> Result<Load, SendError> {
    let workload = Arc::new(workload);
    let progress = Arc::new(Progress::default());
    let history = config.history.clone();
    let sent = sender::run(workload.clone(), vec![url.to_string()], wire.clone(), config, progress).await?;
    Ok(Load { workload, wire, sent, offset_ms, history })
}

/// What a load is held to.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// The check it answers.
    pub check: Check,
    /// Whether each account must end on its latest plan version (needs a state query).
    pub latest_state: bool,
    /// Whether every (non-poison) event must be applied by the end, acknowledged or not.
    pub every_event: bool,
}

/// The sender's attempts of one event, as witness lines (times from the audit's start), with each
/// pair of `marks` (a kill and the receiver healthy again) whose first fell between the event's
/// first send and its last outcome.
pub fn attempts_of(load: &Load, event: usize, marks: &[[AttemptLog; 2]]) -> Vec<AttemptLog> {
    let records: Vec<&AttemptRecord> = load.sent.attempts.iter().filter(|r| r.event == event).collect();
    let mut logs: Vec<AttemptLog> = records
        .iter()
        .map(|r| AttemptLog {
            at_ms: load.offset_ms + r.sent_ms,
            outcome: r.outcome.clone(),
            connection: format!("connection {}", r.connection),
            note: format!("attempt {}, outcome after {:.1} ms", r.attempt, r.done_ms - r.sent_ms),
        })
        .collect();
    let first = records.iter().map(|r| r.sent_ms).fold(f64::INFINITY, f64::min) + load.offset_ms;
    let last = records.iter().map(|r| r.done_ms).fold(f64::NEG_INFINITY, f64::max) + load.offset_ms;
    let within = |m: &&[AttemptLog; 2]| m[0].at_ms >= first - 1.0 && m[0].at_ms <= last;
    logs.extend(marks.iter().filter(within).flat_map(|m| m.iter().cloned()));
    logs.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    logs
}

/// Each event's fate as the observers saw it, into the load's history: for a credit the most
/// times any observer saw it applied; for an update its account's final version (with a state
/// query) and latest version.
fn write_fates(load: &Load, seen: &Observation) {
    let Some(tap) = &load.history else { return };
    let w = &load.workload;
    for i in 0..w.events.len() {
        let fields = load.wire.fields(w, i);
        let account = u32::try_from(fields.account).unwrap_or(u32::MAX);
        tap.send(Line::Event(EventLine::fate(
            w,
            i,
            (tap.cell(), fields.id.clone(), account),
            || Some(u32::try_from(seen.applied(&fields.id).1).unwrap_or(u32::MAX)),
            || seen.states.get(&fields.account).copied(),
        )));
    }
}

/// The load's figures and verdict under `rules`; `marks` go into the witnesses' timelines. Each
/// event's fate goes into the load's history, when it has one.
pub fn judge(
    load: &Load,
    seen: &Observation,
    rules: Rules,
    marks: &[[AttemptLog; 2]],
) -> (CheckResult, LoadFigures) {
    write_fates(load, seen);
    let (workload, sent) = (&load.workload, &load.sent);
    let c = &sent.counters;
    let mut f = LoadFigures {
        events: workload.events.len() as u64,
        deliveries: c.deliveries,
        status_2xx: c.status_2xx,
        status_4xx: c.status_4xx,
        status_5xx: c.status_5xx,
        timeouts: c.timeouts,
        gave_up: c.gave_up,
        latency_us: sent.latency_intended,
        throughput_per_s: c.deliveries as f64 / sent.elapsed.as_secs_f64().max(1e-9),
        ..LoadFigures::default()
    };
    let mut witnesses = Vec::new();
    let mut witness = |i: usize, problem: String, id: &str| {
        if witnesses.len() < WITNESSES {
            witnesses.push(Witness {
                id: id.to_string(),
                problem,
                attempts: attempts_of(load, i, marks),
                observed: seen.describe(id),
            });
        }
    };
    for (i, e) in workload.events.iter().enumerate() {
        if !e.is_credit() || workload.is_poisoned(i) {
            continue;
        }
        let id = load.wire.fields(workload, i).id;
        let (min, max) = seen.applied(&id);
        if max > 1 {
            f.dup_events += 1;
            f.extra_applies += max - 1;
            witness(i, format!("duplicate: applied {max} times"), &id);
        }
        if sent.acked[i] && min == 0 {
            f.lost += 1;
            witness(i, "lost: acknowledged with a 2xx and never applied".into(), &id);
        }
        if sent.refused[i] && !sent.acked[i] && max > 0 {
            f.refused_applied += 1;
            witness(i, "refused with a 4xx and applied anyway".into(), &id);
        }
        if rules.every_event && !sent.acked[i] && min == 0 {
            f.unapplied += 1;
            witness(i, "never acknowledged and never applied".into(), &id);
        }
    }
    if rules.latest_state && (!seen.states.is_empty() || workload.latest_plan.iter().all(|&v| v == 0)) {
        f.stale_accounts = Some(stale_accounts(load, seen, &mut witnesses));
    }
    let stale = f.stale_accounts.unwrap_or(0);
    let bad = f.dup_events + f.lost + f.refused_applied + f.unapplied + stale;
    let stale_text = match f.stale_accounts {
        Some(s) => format!(", {s} stale accounts"),
        None if rules.latest_state => ", stale not observed (no --state-query)".to_string(),
        None => String::new(),
    };
    let unapplied =
        if rules.every_event { format!(", {} never applied", f.unapplied) } else { String::new() };
    let evidence = format!(
        "{} events, {} deliveries: {} dup events, {} lost{unapplied}{stale_text}, {} refused-and-applied; p50 {:.1} ms, p99 {:.1} ms (intended)",
        f.events,
        f.deliveries,
        f.dup_events,
        f.lost,
        f.refused_applied,
        f.latency_us.p50 as f64 / 1e3,
        f.latency_us.p99 as f64 / 1e3
    );
    let status = if bad == 0 { Status::Pass } else { Status::Fail };
    (CheckResult { check: rules.check, status, evidence, witnesses }, f)
}

/// Accounts whose final plan version is not their latest, each a witness while there is room.
fn stale_accounts(load: &Load, seen: &Observation, witnesses: &mut Vec<Witness>) -> u64 {
    let mut stale = 0;
    for (a, &latest) in load.workload.latest_plan.iter().enumerate() {
        let account = a as i64 + load.wire.ids.account_base;
        let now = seen.states.get(&account).copied();
        if latest > 0 && now != Some(i64::from(latest)) {
            stale += 1;
            if witnesses.len() < WITNESSES {
                witnesses.push(Witness {
                    id: format!("account {account}"),
                    problem: format!("stale: its latest plan version is {latest}"),
                    attempts: Vec::new(),
                    observed: now.map_or("no state".to_string(), |v| format!("final version {v}")),
                });
            }
        }
    }
    stale
}
