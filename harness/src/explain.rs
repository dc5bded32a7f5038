//! `hookbench explain`: one event's whole timeline from a run's history, or the witnesses of one
//! anomaly class (the first events, or accounts, of each cell that show it), each with its
//! timeline.
//!
//! A witness is read from history.jsonl alone: the attempts the sender made and what the checker
//! found in the database afterwards (a credit's ledger rows; an update's version against its
//! account's final and latest version).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

use crate::history::{self, AttemptLine, EventLine, HistoryError, Line, Outcome};

/// The anomaly classes `explain --anomaly` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Anomaly {
    /// A credit applied more than once.
    Duplicate,
    /// A credit never applied.
    Lost,
    /// An update applied after a newer one of its account had been acknowledged.
    StaleWrite,
    /// An account whose final plan version is not its latest.
    StaleAccount,
}

/// What to explain.
#[derive(Debug, Clone)]
pub enum Question {
    /// One event, by id.
    Event(String),
    /// The first witnesses of a class, per cell.
    Anomaly(Anomaly, usize),
}

/// One event: its fate and its attempts.
#[derive(Debug, Clone, Default)]
struct Timeline {
    fate: Option<EventLine>,
    attempts: Vec<AttemptLine>,
}

type Cells = BTreeMap<String, BTreeMap<String, Timeline>>;

/// Explains `question` from the history in `dir`, only for `cell` when given.
pub fn explain(dir: &Path, question: &Question, cell: Option<&str>) -> Result<String, HistoryError> {
    let in_cell = |c: &str| cell.is_none_or(|want| want == c);
    let wanted: BTreeMap<String, BTreeSet<String>> = match question {
        Question::Event(id) => BTreeMap::from([(String::new(), BTreeSet::from([id.clone()]))]),
        Question::Anomaly(class, limit) => {
            witnesses(dir, &[*class], *limit, &in_cell)?.remove(class).unwrap_or_default()
        }
    };
    let cells = timelines(dir, &wanted, &in_cell)?;
    Ok(render(question, &cells))
}

/// The timelines of the `wanted` events (per cell; under the empty cell name, in every cell).
fn timelines(
    dir: &Path,
    wanted: &BTreeMap<String, BTreeSet<String>>,
    in_cell: &dyn Fn(&str) -> bool,
) -> Result<Cells, HistoryError> {
    let wants = |c: &str, e: &str| {
        in_cell(c)
            && (wanted.get("").is_some_and(|ids| ids.contains(e))
                || wanted.get(c).is_some_and(|ids| ids.contains(e)))
    };
    let mut cells: Cells = BTreeMap::new();
    history::read(dir, &mut |line| {
        if !wants(line.cell(), line.event()) {
            return;
        }
        let t =
            cells.entry(line.cell().to_string()).or_default().entry(line.event().to_string()).or_default();
        match line {
            Line::Attempt(a) => t.attempts.push(a),
            Line::Event(e) => t.fate = Some(e),
        }
    })?;
    Ok(cells)
}

/// One witness as a report keeps it: what it is, what is wrong, and its timeline.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Witness {
    /// The anomaly class: `duplicate`, `lost` or `stale-account`.
    pub class: String,
    /// The event's id, or `account N`.
    pub id: String,
    /// What the checker found (and, for an account, which update wrote its final version).
    pub problem: String,
    /// Every attempt of the event (of each update, for an account), in the order sent.
    pub attempts: Vec<AttemptLine>,
}

/// A cell's witnesses.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CellWitnesses {
    /// The cell, `backend/design`.
    pub cell: String,
    /// Up to `--witnesses` per class.
    pub witnesses: Vec<Witness>,
}

/// The first `limit` witnesses of each class in each cell of the run in `dir`.
pub fn report_witnesses(dir: &Path, limit: usize) -> Result<Vec<CellWitnesses>, HistoryError> {
    let all = |_: &str| true;
    let classes = [Anomaly::Duplicate, Anomaly::Lost, Anomaly::StaleAccount];
    // Two passes over the history in all: one finds every class's witnesses, one reads their
    // timelines.
    let per_class = witnesses(dir, &classes, limit, &all)?;
    let mut union = Wanted::new();
    for wanted in per_class.values() {
        for (cell, ids) in wanted {
            union.entry(cell.clone()).or_default().extend(ids.iter().cloned());
        }
    }
    let cells = timelines(dir, &union, &all)?;
    let mut by_cell: BTreeMap<String, Vec<Witness>> = BTreeMap::new();
    for (class, wanted) in &per_class {
        let name = match class {
            Anomaly::Duplicate => "duplicate",
            Anomaly::Lost => "lost",
            _ => "stale-account",
        };
        for (cell, ids) in wanted.iter().filter(|(_, ids)| !ids.is_empty()) {
            let list = by_cell.entry(cell.clone()).or_default();
            let events: BTreeMap<String, Timeline> =
                ids.iter().filter_map(|id| Some((id.clone(), cells.get(cell)?.get(id)?.clone()))).collect();
            if *class == Anomaly::StaleAccount {
                let mut accounts: BTreeMap<u32, BTreeMap<String, Timeline>> = BTreeMap::new();
                for (id, t) in events {
                    accounts.entry(t.fate.as_ref().map_or(0, |f| f.account)).or_default().insert(id, t);
                }
                for (account, updates) in accounts {
                    let mut story = String::new();
                    account_story(&mut story, &updates);
                    let mut attempts: Vec<AttemptLine> =
                        updates.into_values().flat_map(|t| t.attempts).collect();
                    attempts.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
                    let problem = story.lines().map(str::trim).collect::<Vec<_>>().join("; ");
                    list.push(Witness {
                        class: name.into(),
                        id: format!("account {account}"),
                        problem,
                        attempts,
                    });
                }
            } else {
                for (id, mut t) in events {
                    t.attempts.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
                    let problem = t.fate.as_ref().map_or_else(|| "no fate recorded".to_string(), fate);
                    list.push(Witness { class: name.into(), id, problem, attempts: t.attempts });
                }
            }
        }
    }
    Ok(by_cell.into_iter().map(|(cell, witnesses)| CellWitnesses { cell, witnesses }).collect())
}

/// Per class, the events to show: per cell, the first `limit` witnesses (for account classes,
/// every update of each witness account). One pass over the history serves every class asked.
type Wanted = BTreeMap<String, BTreeSet<String>>;

fn witnesses(
    dir: &Path,
    classes: &[Anomaly],
    limit: usize,
    in_cell: &dyn Fn(&str) -> bool,
) -> Result<BTreeMap<Anomaly, Wanted>, HistoryError> {
    let wants = |c: Anomaly| classes.contains(&c);
    let accounts_too = wants(Anomaly::StaleWrite) || wants(Anomaly::StaleAccount);
    let mut events: BTreeMap<Anomaly, Wanted> = classes.iter().map(|&c| (c, Wanted::new())).collect();
    // Per cell and account: its updates (id, version), and the last 2xx answer of each update
    // (only the stale-write class orders them by it).
    let mut updates: BTreeMap<String, BTreeMap<u32, Vec<(String, u32)>>> = BTreeMap::new();
    let mut acked_at: BTreeMap<(String, String), f64> = BTreeMap::new();
    let mut stale_accounts: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    history::read(dir, &mut |line| {
        if !in_cell(line.cell()) {
            return;
        }
        match line {
            Line::Attempt(a)
                if wants(Anomaly::StaleWrite)
                    && a.kind == "update"
                    && a.status.is_some_and(|s| (200..300).contains(&s)) =>
            {
                let t = acked_at.entry((a.cell, a.event)).or_insert(a.answered_ms);
                *t = t.max(a.answered_ms);
            }
            Line::Attempt(_) => {}
            Line::Event(e) => {
                let mut hit = |class: Anomaly, e: &EventLine| {
                    if let Some(ids) = events.get_mut(&class).map(|w| w.entry(e.cell.clone()).or_default())
                        && ids.len() < limit
                    {
                        ids.insert(e.event.clone());
                    }
                };
                if e.applied.is_some_and(|n| n > 1) {
                    hit(Anomaly::Duplicate, &e);
                }
                if e.applied == Some(0) && !e.poisoned {
                    hit(Anomaly::Lost, &e);
                }
                if let (true, Some(v)) = (accounts_too, e.version) {
                    updates
                        .entry(e.cell.clone())
                        .or_default()
                        .entry(e.account)
                        .or_default()
                        .push((e.event.clone(), v));
                }
                let stale = e.latest_version.is_some_and(|l| l > 0 && e.final_version != Some(i64::from(l)));
                if stale && wants(Anomaly::StaleAccount) {
                    let list = stale_accounts.entry(e.cell.clone()).or_default();
                    if !list.contains(&e.account) && list.len() < limit {
                        list.push(e.account);
                    }
                }
            }
        }
    })?;
    if let Some(wanted) = events.get_mut(&Anomaly::StaleAccount) {
        for (cell, accounts) in stale_accounts {
            let ids = wanted.entry(cell.clone()).or_default();
            for a in accounts {
                ids.extend(updates[&cell][&a].iter().map(|(id, _)| id.clone()));
            }
        }
    }
    if let Some(wanted) = events.get_mut(&Anomaly::StaleWrite) {
        for (cell, by_account) in &updates {
            let ids = wanted.entry(cell.clone()).or_default();
            let mut shown = 0;
            for list in by_account.values() {
                // Acknowledged updates in the order their acks came back: an older version acked
                // after a newer one is a write a design without a guard applied over it.
                let mut acked: Vec<(f64, u32, &str)> = list
                    .iter()
                    .filter_map(|(id, v)| {
                        acked_at.get(&(cell.clone(), id.clone())).map(|&t| (t, *v, id.as_str()))
                    })
                    .collect();
                acked.sort_by(|a, b| a.0.total_cmp(&b.0));
                let inverted = acked.windows(2).any(|w| w[1].1 < w[0].1);
                if inverted && shown < limit {
                    shown += 1;
                    ids.extend(list.iter().map(|(id, _)| id.clone()));
                }
            }
        }
    }
    Ok(events)
}

fn fate(e: &EventLine) -> String {
    match (e.applied, e.version) {
        (Some(n), _) => format!(
            "credit to account {}: {n} ledger row{} ({}){}",
            e.account,
            if n == 1 { "" } else { "s" },
            match n {
                0 => "never applied",
                1 => "applied once",
                _ => "applied more than once",
            },
            if e.poisoned { "; a poison event" } else { "" }
        ),
        (None, Some(v)) => format!(
            "update of account {} to version {v} (created {}); the account ended on version {} (latest {})",
            e.account,
            e.created.map_or("?".to_string(), |c| c.to_string()),
            e.final_version.map_or("?".to_string(), |f| f.to_string()),
            e.latest_version.map_or("?".to_string(), |l| l.to_string())
        ),
        _ => "no fate recorded".to_string(),
    }
}

/// The attempts whose [sent, answered] overlaps this one's, by attempt number.
fn overlapping(a: &AttemptLine, all: &[AttemptLine]) -> Vec<u32> {
    all.iter()
        .filter(|b| b.attempt != a.attempt && b.sent_ms < a.answered_ms && a.sent_ms < b.answered_ms)
        .map(|b| b.attempt)
        .collect()
}

fn timeline(out: &mut String, id: &str, t: &Timeline) {
    let what = t.fate.as_ref().map_or_else(|| "not in this cell's history".to_string(), fate);
    let _ = writeln!(out, "  {id}: {what}");
    let mut attempts = t.attempts.clone();
    attempts.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
    for a in &attempts {
        let status = a.status.map_or("-".to_string(), |s| s.to_string());
        let outcome = match a.outcome {
            Outcome::Info => format!("info ({})", a.detail.as_deref().unwrap_or("indeterminate")),
            other => other.as_str().to_string(),
        };
        let over = overlapping(a, &attempts);
        let over = if over.is_empty() {
            String::new()
        } else {
            format!(
                ", overlapping attempt {}",
                over.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            )
        };
        let _ = writeln!(
            out,
            "    attempt {} (group {}, copy {}): planned {:.1} ms, sent {:.1}, answered {:.1}; worker {}, connection {}; {status} {outcome}{over}",
            a.attempt, a.group, a.copy, a.planned_ms, a.sent_ms, a.answered_ms, a.worker, a.connection
        );
    }
}

/// For a stale account's updates: which one wrote the final version and when it was acknowledged,
/// and for each newer one whether it was acknowledged before it (and so overwritten by it) or
/// after it (and not applied: a guard refused it, or it was lost).
fn account_story(out: &mut String, events: &BTreeMap<String, Timeline>) {
    let last_ack = |t: &Timeline| {
        t.attempts
            .iter()
            .filter(|a| a.status.is_some_and(|s| (200..300).contains(&s)))
            .map(|a| a.answered_ms)
            .reduce(f64::max)
    };
    let fates: Vec<(&str, &EventLine, Option<f64>)> =
        events.iter().filter_map(|(id, t)| Some((id.as_str(), t.fate.as_ref()?, last_ack(t)))).collect();
    let Some(&(_, any, _)) = fates.first() else { return };
    let final_version = any.final_version.unwrap_or(0);
    let writer = fates.iter().find(|(_, f, _)| f.version.map(i64::from) == Some(final_version));
    let at =
        |t: Option<f64>| t.map_or("never acknowledged".to_string(), |t| format!("acknowledged at {t:.1} ms"));
    match writer {
        Some((id, f, acked)) => {
            let _ = writeln!(
                out,
                "  final version {final_version}, written by {id} (created {}), {}",
                f.created.map_or("?".to_string(), |c| c.to_string()),
                at(*acked)
            );
            for (nid, nf, nacked) in
                fates.iter().filter(|(_, nf, _)| nf.version.map(i64::from) > Some(final_version))
            {
                let order = match (nacked, acked) {
                    (Some(n), Some(w)) if n < w => "before it: overwritten by the older one",
                    (Some(_), Some(_)) => {
                        "after it: yet not the final state (a guard refused it, or its write committed first)"
                    }
                    _ => "not acknowledged",
                };
                let _ = writeln!(
                    out,
                    "  newer {nid} (version {}, created {}), {}: {order}",
                    nf.version.unwrap_or(0),
                    nf.created.map_or("?".to_string(), |c| c.to_string()),
                    at(*nacked)
                );
            }
        }
        None => {
            let _ = writeln!(out, "  final version {final_version}, written by no update of this run");
        }
    }
}

fn render(question: &Question, cells: &Cells) -> String {
    let mut out = String::new();
    if cells.is_empty() {
        let _ = match question {
            Question::Event(id) => writeln!(out, "no line of the history names {id}"),
            Question::Anomaly(class, _) => writeln!(out, "no witness of {class:?} in the history"),
        };
        return out;
    }
    for (cell, events) in cells {
        let _ = writeln!(out, "{cell}");
        match question {
            Question::Anomaly(Anomaly::StaleAccount | Anomaly::StaleWrite, _) => {
                let mut by_account: BTreeMap<u32, BTreeMap<String, Timeline>> = BTreeMap::new();
                for (id, t) in events {
                    let account = t.fate.as_ref().map_or(0, |f| f.account);
                    by_account.entry(account).or_default().insert(id.clone(), t.clone());
                }
                for (account, updates) in &by_account {
                    let _ = writeln!(out, " account {account}");
                    account_story(&mut out, updates);
                    for (id, t) in updates {
                        timeline(&mut out, id, t);
                    }
                }
            }
            _ => {
                for (id, t) in events {
                    timeline(&mut out, id, t);
                }
            }
        }
    }
    out
}
