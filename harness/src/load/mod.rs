//! A load: a workload's delivery plan sent by the sender, as the judge reads it ([`history`]), and
//! its verdict as the run's history keeps it ([`write_verdict`]). A bench cell, each of the
//! audit's loads and a merged run of shards are all judged through here; [`partial`] is what a
//! shard of a load leaves for `hookbench merge`.

mod cell;
mod check;
pub mod partial;

pub use cell::{Judged, bench_row, judge_cell, rules as cell_rules};
pub use check::{Load, WITNESSES, checked, judge_load, parallel_rules};

use crate::history::{AccountLine, ChangeLine, EventLine, Line, Tap, VerdictLine};
use crate::judge::{Answers, Evidence, Expect, History, Ids, Kind, Outcome, Sent, Verdict};
use crate::sender::SendReport;
use crate::workload::{EventKind, Workload};

/// Event `i`'s answers, from what the sender saw.
pub fn answers(sent: &SendReport, i: usize) -> Answers {
    let flag = |v: &[bool]| v.get(i).copied().unwrap_or(false);
    Answers {
        attempts: sent.tries.get(i).copied().unwrap_or(0),
        acked: flag(&sent.acked),
        refused: flag(&sent.refused),
        last_status: sent.last_status.get(i).copied().filter(|&s| s != 0),
        held_open: false,
    }
}

/// Makes room in `sent` for the answers of `events` events, none answered yet (a merged run's
/// sends, added up from its shards, carry no per-event answers).
pub fn size_answers(sent: &mut SendReport, events: usize) {
    sent.acked = vec![false; events];
    sent.refused = vec![false; events];
    sent.tries = vec![0; events];
    sent.last_status = vec![0; events];
}

/// One more attempt of event `i`, answered with `status` (none: a timeout or no connection), in
/// the order they were answered.
pub fn mark_answer(sent: &mut SendReport, i: usize, status: Option<u16>) {
    let Some(tries) = sent.tries.get_mut(i) else { return };
    *tries += 1;
    let s = status.unwrap_or(0);
    sent.last_status[i] = s;
    sent.acked[i] |= (200..300).contains(&s);
    sent.refused[i] |= (400..500).contains(&s);
}

/// What the judge reads of a load: each event of `workload` (a poison one expected never applied,
/// the others once), at its account as `account` places it, answered as `answers` says.
pub fn history(
    workload: &Workload,
    prefix: &str,
    account: impl Fn(usize) -> i64,
    answers: impl Fn(usize) -> Answers,
) -> History {
    let events = workload
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| Sent {
            kind: match e.kind {
                EventKind::Credit { amount } => Kind::Credit { amount },
                EventKind::Plan { version, .. } => Kind::Update { version: i64::from(version) },
            },
            account: account(i),
            expect: if workload.is_poisoned(i) { Expect::Poison } else { Expect::Once },
            answers: answers(i),
        })
        .collect();
    History::new(events, Ids::Workload { prefix: prefix.to_string() })
}

/// The outcome as the history writes it.
pub fn outcome_name(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::Unjudged(_) => "unjudged",
        Outcome::NothingSent => "nothing-sent",
    }
}

/// The verdict into `tap` after the load's attempts: a line per event (what was observed of it,
/// its anomalies), per account, per change in the change log, and the cell's verdict.
pub fn write_verdict(
    tap: &Tap,
    workload: &Workload,
    history: &History,
    evidence: &Evidence,
    verdict: &Verdict,
) {
    let states = evidence.states.as_ref();
    for (i, (e, sent)) in workload.events.iter().zip(history.events()).enumerate() {
        let mut line = EventLine {
            cell: tap.cell().to_string(),
            event: history.id(i),
            kind: String::new(),
            account: sent.account,
            applied: None,
            version: None,
            created: None,
            final_version: None,
            latest_version: None,
            poisoned: workload.is_poisoned(i),
            anomalies: verdict.events.get(i).map(|c| c.iter().collect()).unwrap_or_default(),
        };
        match e.kind {
            EventKind::Credit { .. } => {
                line.kind = "credit".into();
                line.applied = evidence.applied(i).map(|(_, most)| most);
            }
            EventKind::Plan { version, .. } => {
                line.kind = "update".into();
                line.version = Some(i64::from(version));
                line.created = Some(e.created);
                line.final_version = states.and_then(|s| s.get(&sent.account).copied());
                line.latest_version = workload.latest_plan.get(e.account as usize).map(|&v| i64::from(v));
                line.applied =
                    verdict.tally.update_applies_observed.then(|| evidence.most_applied(i)).flatten();
            }
        }
        tap.send(Line::Event(line));
    }
    for a in &verdict.accounts {
        tap.send(Line::Account(AccountLine {
            cell: tap.cell().to_string(),
            account: a.account,
            latest_acked: a.latest_acked,
            final_version: a.final_version,
            anomalies: a.classes.iter().collect(),
        }));
    }
    for c in evidence.changes.iter().flatten() {
        tap.send(Line::Change(ChangeLine {
            cell: tap.cell().to_string(),
            account: c.account,
            seq: c.seq,
            old_version: c.old,
            new_version: c.new,
        }));
    }
    tap.send(Line::Verdict(VerdictLine {
        cell: tap.cell().to_string(),
        outcome: outcome_name(&verdict.outcome).to_string(),
        summary: crate::report::verdict_summary(verdict),
        found: verdict.tally.found.clone(),
        anomalies: verdict.run.iter().collect(),
    }));
}
