//! `hookbench explain`: one event's whole timeline from a run's history, or the witnesses of one
//! anomaly class (the first events, accounts or cells of each cell that show it), each with its
//! timeline.
//!
//! Nothing is judged here: the classes are those the judge recorded in the history (each event's,
//! each account's and each cell's verdict lines), and a witness's timeline is the attempts the
//! sender made and what the observers found, as the history keeps them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

use crate::history::{self, AttemptLine, ChangeLine, EventLine, HistoryError, Line, Outcome};
use crate::judge::{Class, Of};

/// The report's types: a cell's witnesses and one witness, as a report keeps them.
pub use crate::report::model::witnesses::{CellWitnesses, Witness};

/// What to explain.
#[derive(Debug, Clone)]
pub enum Question {
    /// One event, by id.
    Event(String),
    /// The first witnesses of a class, per cell.
    Anomaly(Class, usize),
}

/// One event: its fate and its attempts.
#[derive(Debug, Clone, Default)]
struct Timeline {
    fate: Option<EventLine>,
    attempts: Vec<AttemptLine>,
}

/// One cell's timelines: the events asked for, the plan changes of their accounts, and the cell's
/// verdict.
#[derive(Debug, Clone, Default)]
struct CellTimelines {
    events: BTreeMap<String, Timeline>,
    changes: BTreeMap<i64, Vec<ChangeLine>>,
    verdict: Option<history::VerdictLine>,
}

type Cells = BTreeMap<String, CellTimelines>;

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

/// The timelines of the `wanted` events (per cell; under the empty cell name, in every cell),
/// with the plan changes of their accounts (a cell's change lines follow its event lines).
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
    let mut accounts: BTreeSet<(String, i64)> = BTreeSet::new();
    history::read(dir, &mut |line| match line {
        Line::Change(c) if accounts.contains(&(c.cell.clone(), c.account)) => {
            let cell = cells.entry(c.cell.clone()).or_default();
            cell.changes.entry(c.account).or_default().push(c);
        }
        Line::Verdict(v) if wanted.contains_key(&v.cell) => {
            let cell = v.cell.clone();
            cells.entry(cell).or_default().verdict = Some(v);
        }
        Line::Attempt(a) if wants(&a.cell, &a.event) => {
            let cell = cells.entry(a.cell.clone()).or_default();
            cell.events.entry(a.event.clone()).or_default().attempts.push(a);
        }
        Line::Event(e) if wants(&e.cell, &e.event) => {
            accounts.insert((e.cell.clone(), e.account));
            let (cell, event) = (e.cell.clone(), e.event.clone());
            cells.entry(cell).or_default().events.entry(event).or_default().fate = Some(e);
        }
        _ => {}
    })?;
    Ok(cells)
}

/// The first `limit` witnesses of each class in each cell of the run in `dir`.
pub fn report_witnesses(dir: &Path, limit: usize) -> Result<Vec<CellWitnesses>, HistoryError> {
    let all = |_: &str| true;
    // Two passes over the history in all: one finds every class's witnesses, one reads their
    // timelines.
    let per_class = witnesses(dir, Class::ALL, limit, &all)?;
    let mut union = Wanted::new();
    for wanted in per_class.values() {
        for (cell, ids) in wanted {
            union.entry(cell.clone()).or_default().extend(ids.iter().cloned());
        }
    }
    let cells = timelines(dir, &union, &all)?;
    let mut by_cell: BTreeMap<String, Vec<Witness>> = BTreeMap::new();
    for (&class, wanted) in &per_class {
        for (cell, ids) in wanted {
            let Some(found) = cells.get(cell) else { continue };
            let list = by_cell.entry(cell.clone()).or_default();
            let events: BTreeMap<String, Timeline> =
                ids.iter().filter_map(|id| Some((id.clone(), found.events.get(id)?.clone()))).collect();
            match class.of() {
                Of::Account => {
                    for (account, updates) in by_account(&events) {
                        let changes = found.changes.get(&account).cloned().unwrap_or_default();
                        let mut story = String::new();
                        account_story(&mut story, &updates, &changes);
                        let mut attempts: Vec<AttemptLine> =
                            updates.into_values().flat_map(|t| t.attempts).collect();
                        attempts.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
                        list.push(Witness {
                            class: class.name().into(),
                            id: format!("account {account}"),
                            problem: story.lines().map(str::trim).collect::<Vec<_>>().join("; "),
                            attempts,
                            plan_changes: changes,
                        });
                    }
                }
                Of::Event => {
                    for (id, mut t) in events {
                        t.attempts.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
                        let problem = t.fate.as_ref().map_or_else(|| "no fate recorded".to_string(), fate);
                        list.push(Witness {
                            class: class.name().into(),
                            id,
                            problem,
                            attempts: t.attempts,
                            plan_changes: Vec::new(),
                        });
                    }
                }
                Of::Run => {
                    let summary = found.verdict.as_ref().map_or_else(String::new, |v| v.summary.clone());
                    list.push(Witness {
                        class: class.name().into(),
                        id: cell.clone(),
                        problem: summary,
                        attempts: Vec::new(),
                        plan_changes: Vec::new(),
                    });
                }
            }
        }
    }
    by_cell.retain(|_, w| !w.is_empty());
    Ok(by_cell.into_iter().map(|(cell, witnesses)| CellWitnesses { cell, witnesses }).collect())
}

/// Updates grouped by their account.
fn by_account(events: &BTreeMap<String, Timeline>) -> BTreeMap<i64, BTreeMap<String, Timeline>> {
    let mut accounts: BTreeMap<i64, BTreeMap<String, Timeline>> = BTreeMap::new();
    for (id, t) in events {
        accounts.entry(t.fate.as_ref().map_or(0, |f| f.account)).or_default().insert(id.clone(), t.clone());
    }
    accounts
}

/// Per class, the events to show: per cell, the events of the first `limit` witnesses (for an
/// account class, every update of each witness account; for a run class, the cell alone).
type Wanted = BTreeMap<String, BTreeSet<String>>;

/// The witnesses of `classes`, as the judge recorded them: one pass over the history.
fn witnesses(
    dir: &Path,
    classes: &[Class],
    limit: usize,
    in_cell: &dyn Fn(&str) -> bool,
) -> Result<BTreeMap<Class, Wanted>, HistoryError> {
    let mut events: BTreeMap<Class, Wanted> = classes.iter().map(|&c| (c, Wanted::new())).collect();
    // Per cell and account: its updates, to show every one of a witness account.
    let mut updates: BTreeMap<(String, i64), Vec<String>> = BTreeMap::new();
    let mut accounts: BTreeMap<(Class, String), Vec<i64>> = BTreeMap::new();
    let note = |events: &mut BTreeMap<Class, Wanted>, class: Class, cell: &str, what: String| {
        if let Some(ids) = events.get_mut(&class).map(|w| w.entry(cell.to_string()).or_default())
            && ids.len() < limit
        {
            ids.insert(what);
        }
    };
    history::read(dir, &mut |line| {
        if !in_cell(line.cell()) {
            return;
        }
        match line {
            Line::Event(e) => {
                if e.version.is_some() {
                    updates.entry((e.cell.clone(), e.account)).or_default().push(e.event.clone());
                }
                for &class in e.anomalies.iter().filter(|c| classes.contains(c)) {
                    note(&mut events, class, &e.cell, e.event.clone());
                }
            }
            Line::Account(a) => {
                for &class in a.anomalies.iter().filter(|c| classes.contains(c)) {
                    let list = accounts.entry((class, a.cell.clone())).or_default();
                    if list.len() < limit {
                        list.push(a.account);
                    }
                }
            }
            Line::Verdict(v) => {
                for &class in v.anomalies.iter().filter(|c| classes.contains(c)) {
                    events.entry(class).or_default().entry(v.cell.clone()).or_default();
                }
            }
            Line::Attempt(_) | Line::Change(_) => {}
        }
    })?;
    for ((class, cell), list) in accounts {
        let ids = events.entry(class).or_default().entry(cell.clone()).or_default();
        for a in list {
            ids.extend(updates.get(&(cell.clone(), a)).into_iter().flatten().cloned());
        }
    }
    Ok(events)
}

fn fate(e: &EventLine) -> String {
    // An audit's observers count applies in the user's schema, which need not have a ledger.
    let evidence = if e.cell.starts_with("audit/") { "time" } else { "ledger row" };
    let anomalies = if e.anomalies.is_empty() {
        String::new()
    } else {
        format!("; the judge found: {}", e.anomalies.iter().map(|c| c.name()).collect::<Vec<_>>().join(", "))
    };
    let what = match (e.applied, e.version) {
        (applied, Some(v)) => format!(
            "update of account {} to version {v} (created {}); the account ended on version {} (latest {}){}",
            e.account,
            e.created.map_or("?".to_string(), |c| c.to_string()),
            e.final_version.map_or("?".to_string(), |f| f.to_string()),
            e.latest_version.map_or("?".to_string(), |l| l.to_string()),
            match applied {
                Some(n @ 2..) => format!("; its handler applied it {n} times (applied more than once)"),
                Some(n) => format!("; its handler applied it {n} times"),
                None => String::new(),
            }
        ),
        (Some(n), None) => format!(
            "credit to account {}: {n} {evidence}{} ({}){}",
            e.account,
            if n == 1 { "" } else { "s" },
            match n {
                0 => "never applied",
                1 => "applied once",
                _ => "applied more than once",
            },
            if e.poisoned { "; a poison event" } else { "" }
        ),
        (None, None) => "no fate recorded".to_string(),
    };
    format!("{what}{anomalies}")
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
    let _ = writeln!(out, "  {}: {what}", crate::printable::line(id));
    let mut attempts = t.attempts.clone();
    attempts.sort_by(|a, b| a.sent_ms.total_cmp(&b.sent_ms));
    for a in &attempts {
        let status = a.status.map_or("-".to_string(), |s| s.to_string());
        let outcome = match a.outcome {
            Outcome::Info => {
                format!("info ({})", crate::printable::line(a.detail.as_deref().unwrap_or("indeterminate")))
            }
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
/// after it (and not applied: a guard refused it, or it was lost); then the plan changes the
/// database recorded, in their order.
fn account_story(out: &mut String, events: &BTreeMap<String, Timeline>, changes: &[ChangeLine]) {
    story_of_writes(out, events);
    let _ = writeln!(out, "  plan changes the database recorded, in order: {}", in_order(changes));
}

/// Plan changes as `0 -> 3, 3 -> 5, 5 -> 4 (down: a stale write)`.
fn in_order(changes: &[ChangeLine]) -> String {
    let steps: Vec<String> = changes
        .iter()
        .map(|c| {
            let down = if c.new_version < c.old_version { " (down: a stale write)" } else { "" };
            format!("{} -> {}{down}", c.old_version, c.new_version)
        })
        .collect();
    if steps.is_empty() { "none".to_string() } else { steps.join(", ") }
}

fn story_of_writes(out: &mut String, events: &BTreeMap<String, Timeline>) {
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
    let writer = fates.iter().find(|(_, f, _)| f.version == Some(final_version));
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
            for (nid, nf, nacked) in fates.iter().filter(|(_, nf, _)| nf.version > Some(final_version)) {
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
            Question::Anomaly(class, _) => writeln!(out, "no witness of {} in the history", class.name()),
        };
        return out;
    }
    for (cell, found) in cells {
        let _ = writeln!(out, "{}", crate::printable::line(cell));
        match question {
            Question::Anomaly(class, _) if class.of() == Of::Run => {
                let summary = found.verdict.as_ref().map_or("no verdict recorded", |v| v.summary.as_str());
                let _ = writeln!(out, "  the judge found {} in the cell as a whole: {summary}", class.name());
            }
            Question::Anomaly(class, _) if class.of() == Of::Account => {
                for (account, updates) in &by_account(&found.events) {
                    let _ = writeln!(out, " account {account}");
                    let changes = found.changes.get(account).map_or(&[][..], Vec::as_slice);
                    account_story(&mut out, updates, changes);
                    for (id, t) in updates {
                        timeline(&mut out, id, t);
                    }
                }
            }
            _ => {
                for (id, t) in &found.events {
                    timeline(&mut out, id, t);
                    if let Some(f) = t.fate.as_ref().filter(|f| f.version.is_some()) {
                        let changes = found.changes.get(&f.account).map_or(&[][..], Vec::as_slice);
                        let _ = writeln!(
                            out,
                            "    account {}'s plan changes the database recorded, in order: {}",
                            f.account,
                            in_order(changes)
                        );
                    }
                }
            }
        }
    }
    out
}
