//! Check 8, the parallel load: the seeded workload sent by the bench's sender in the audit's id
//! space, judged event by event from what the observers saw.

use std::sync::Arc;

use super::checks::WITNESSES;
use super::observe::Observation;
use super::verdict::{AttemptLog, Check, CheckResult, LoadFigures, Status, Witness};
use crate::sender::{AttemptRecord, SendReport};
use crate::wire::Wire;
use crate::workload::Workload;

/// The sender's attempts of one event, as witness lines (times from the audit's start).
fn attempts_of(records: &[AttemptRecord], event: usize, offset_ms: f64) -> Vec<AttemptLog> {
    let mut logs: Vec<AttemptLog> = records
        .iter()
        .filter(|r| r.event == event)
        .map(|r| AttemptLog {
            at_ms: offset_ms + r.sent_ms,
            outcome: r.outcome.clone(),
            connection: format!("connection {}", r.connection),
            note: format!("attempt {}", r.attempt),
        })
        .collect();
    logs.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
    logs
}

/// The load's figures and verdict.
pub fn judge(
    workload: &Arc<Workload>,
    wire: &Wire,
    sent: &SendReport,
    seen: &Observation,
    offset_ms: f64,
) -> (CheckResult, LoadFigures) {
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
                attempts: attempts_of(&sent.attempts, i, offset_ms),
                observed: seen.describe(id),
            });
        }
    };
    for (i, e) in workload.events.iter().enumerate() {
        if !e.is_credit() || workload.is_poisoned(i) {
            continue;
        }
        let id = wire.fields(workload, i).id;
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
    }
    if !seen.states.is_empty() || workload.latest_plan.iter().all(|&v| v == 0) {
        let mut stale = 0;
        for (a, &latest) in workload.latest_plan.iter().enumerate() {
            let account = a as i64 + wire.ids.account_base;
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
        f.stale_accounts = Some(stale);
    }
    let stale = f.stale_accounts.unwrap_or(0);
    let bad = f.dup_events + f.lost + f.refused_applied + stale;
    let stale_text = f
        .stale_accounts
        .map_or("stale not observed (no --state-query)".to_string(), |s| format!("{s} stale accounts"));
    let evidence = format!(
        "{} events, {} deliveries: {} dup events, {} lost, {stale_text}, {} refused-and-applied; p50 {:.1} ms, p99 {:.1} ms (intended)",
        f.events,
        f.deliveries,
        f.dup_events,
        f.lost,
        f.refused_applied,
        f.latency_us.p50 as f64 / 1e3,
        f.latency_us.p99 as f64 / 1e3
    );
    let status = if bad == 0 { Status::Pass } else { Status::Fail };
    (CheckResult { check: Check::ParallelLoad, status, evidence, witnesses }, f)
}
