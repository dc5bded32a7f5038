//! Each shard held to itself before anything of it is merged: a shard's files are read from a
//! directory someone else could write, so its counters must be those of its history's attempt
//! lines, its histograms must hold those attempts' latencies, every attempt must be of an event
//! and a group the shard holds in the plan, and every group it holds must have been sent. A shard
//! that fails any of these is refused, naming the file and both figures: a wrong merged figure is
//! worse than no merge.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::history::{self, AttemptLine, Fate, Line};
use crate::load::partial::{Partial, Target};
use crate::stats::{CounterSnapshot, HistogramError, Latency, Percentiles};
use crate::workload::{Shard, Workload};

/// The most attempts one copy of a delivery makes, the first included: what `--max-attempts`
/// allows at most. A shard claiming more attempts than its copies could make is refused before
/// its history is read into memory.
pub const MAX_ATTEMPTS_PER_COPY: u64 = 100;
/// The most events a merged workload may have: what `--events` allows at most.
pub const MAX_EVENTS: usize = 100_000_000;

/// Why a shard is refused.
#[derive(Debug, thiserror::Error)]
#[error("{}: {what}", dir.display())]
pub struct Refused {
    /// The shard's directory (or the file in it).
    pub dir: PathBuf,
    /// What is wrong, with both figures.
    pub what: String,
}

/// An attempt line that is not the shard's own: the history names the file and the line.
#[derive(Debug, thiserror::Error)]
enum ForeignAttempt {
    /// Its event is none of the workload's (ids escaped for a terminal).
    #[error("an attempt of {id}, which is not an event of this workload")]
    UnknownEvent { id: String },
    /// Its event is another shard's.
    #[error("an attempt of {id}, which is not shard {shard}'s")]
    OtherShard { id: String, shard: Shard },
    /// Its group is not one of its event's.
    #[error("an attempt of {id} in group {group}, which is not that event's")]
    WrongGroup { id: String, group: usize },
    /// One line more than shard.json's deliveries: reading on would let the file, not
    /// shard.json (bounded), size what is held in memory.
    #[error("more attempt lines than its shard.json's deliveries {deliveries}")]
    PastDeliveries { deliveries: u64 },
}

/// How a shard's shard.json disagrees with its own history's lines.
#[derive(Debug, thiserror::Error)]
enum NotItsHistory {
    /// Counters that are not what the attempt lines add up to, each with both figures.
    #[error("shard.json's counters are not its history's: {}", joined(.0))]
    Counters(Vec<CounterDiffers>),
    /// Poison counters the lines do not give (or, with no poison planned, cannot bound).
    #[error(
        "shard.json says poison_attempts {said_attempts} and poison_non_2xx {said_non_2xx}; its history has {lines_attempts} and {lines_non_2xx}"
    )]
    Poison { said_attempts: u64, said_non_2xx: u64, lines_attempts: u64, lines_non_2xx: u64 },
    /// More copies given up on than the history has copies.
    #[error("shard.json says gave_up {said}; its history has {copies} copies")]
    GaveUp { said: u64, copies: u64 },
    /// A histogram that does not decode.
    #[error("{field}: {source}")]
    Histogram { field: &'static str, source: HistogramError },
    /// A histogram of another number of samples than the shard's deliveries.
    #[error("{field} holds {count} samples; its deliveries are {deliveries}")]
    Samples { field: &'static str, count: u64, deliveries: u64 },
    /// A histogram whose percentiles are not those of the attempts' latencies.
    #[error("{field}'s p50, p90, p99 and max are {said} µs; the attempts in its history give {lines} µs")]
    Percentiles { field: &'static str, said: String, lines: String },
    /// An audit shard's recorded attempt answered otherwise in its history (answers escaped for
    /// a terminal).
    #[error(
        "its attempts in shard.json differ from its history's: event {event} attempt {attempt} answered {said} against {lines}"
    )]
    Answer { event: usize, attempt: u32, said: String, lines: String },
    /// An audit shard that records another number of attempts than its history has lines.
    #[error("shard.json lists {said} attempts; its history has {lines} attempt lines")]
    Attempts { said: usize, lines: usize },
}

/// One counter of shard.json beside what the history's lines add up to.
#[derive(Debug)]
struct CounterDiffers {
    field: &'static str,
    said: u64,
    lines: u64,
    /// The lines it counts.
    what: &'static str,
}

impl fmt::Display for CounterDiffers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} against {} {}", self.field, self.said, self.lines, self.what)
    }
}

/// The counters that differ, as one clause.
fn joined(differ: &[CounterDiffers]) -> String {
    differ.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// A shard's attempts, read from its history and held to its shard.json.
pub struct Checked {
    /// Its attempt lines, in the order written.
    pub attempts: Vec<AttemptLine>,
    /// The highest connection number they name.
    pub most_connection: u64,
}

/// What a shard's history says it sent, tallied line by line.
#[derive(Default)]
struct Tally {
    counters: CounterSnapshot,
    copies: BTreeSet<(usize, u8)>,
    groups: BTreeSet<usize>,
    planned: Latency,
    actual: Latency,
}

impl Tally {
    fn add(&mut self, a: &AttemptLine, poisoned: bool) {
        let c = &mut self.counters;
        let fate = a.fate();
        // Counts of lines held in memory: far below u64::MAX, so these cannot wrap.
        c.deliveries += 1;
        c.count(fate);
        if poisoned {
            c.poison_attempts += 1;
            c.poison_non_2xx += u64::from(!fate.stored());
        }
        if !self.copies.insert((a.group, a.copy)) {
            c.retries += 1;
        }
        self.groups.insert(a.group);
        self.planned.record(ms_between(a.planned_ms, a.answered_ms));
        // As the sender: only an answer has an answer's time.
        if fate.answered() {
            self.actual.record(ms_between(a.sent_ms, a.answered_ms));
        }
    }
}

/// From `from` to `to` (milliseconds), as the sender measured it; zero when not a duration.
fn ms_between(from: f64, to: f64) -> Duration {
    Duration::try_from_secs_f64((to - from) / 1e3).unwrap_or_default()
}

/// Holds the shard in `dir` to itself and to the plan (`workload`; `index` names an event's
/// index from its id): its attempts, if it holds.
pub fn check_shard(
    dir: &Path,
    p: &Partial,
    workload: &Workload,
    index: &dyn Fn(&str) -> Option<usize>,
) -> Result<Checked, super::MergeError> {
    let refuse = |what: String| Refused { dir: dir.to_path_buf(), what };
    let shard = p.shard;
    let held_groups: Vec<usize> =
        (0..workload.groups.len()).filter(|&g| shard.holds(workload.groups[g].event)).collect();
    let held_events = (0..workload.events.len()).filter(|&i| shard.holds(i as u32)).count();
    if p.groups != held_groups.len() || p.events != held_events {
        return Err(refuse(format!(
            "shard.json says shard {shard} sent {} groups of {} events; shard {shard} of this plan holds {} groups of {} events",
            p.groups,
            p.events,
            held_groups.len(),
            held_events
        ))
        .into());
    }
    let copies: u64 = held_groups.iter().map(|&g| u64::from(workload.groups[g].copies)).sum();
    let most = copies.saturating_mul(MAX_ATTEMPTS_PER_COPY);
    if p.counters.deliveries > most {
        return Err(refuse(format!(
            "deliveries {} is more than its {copies} copies could make ({MAX_ATTEMPTS_PER_COPY} attempts each at most)",
            p.counters.deliveries
        ))
        .into());
    }
    let (tally, checked) = read_attempts(dir, p, workload, index)?;
    held_to_history(&p.counters, &tally.counters, workload.poisoned.is_empty())
        .map_err(|e| refuse(e.to_string()))?;
    let unsent: Vec<usize> = held_groups.iter().copied().filter(|g| !tally.groups.contains(g)).collect();
    if let Some(first) = unsent.first() {
        return Err(refuse(format!(
            "{} of its {} groups were never sent: its history has no attempt of group {first}{}",
            unsent.len(),
            held_groups.len(),
            if unsent.len() > 1 { " and others" } else { "" }
        ))
        .into());
    }
    for (field, text, rebuilt, samples) in [
        ("latency_planned_v2", &p.latency_planned_v2, &tally.planned, p.counters.deliveries),
        ("latency_actual_v2", &p.latency_actual_v2, &tally.actual, p.counters.answered()),
    ] {
        histogram_held_to_history(field, text, rebuilt, samples).map_err(|e| refuse(e.to_string()))?;
    }
    if let Target::Audit(a) = &p.target {
        records_held_to_history(&a.attempts, &checked.attempts, index).map_err(|e| refuse(e.to_string()))?;
    }
    Ok(checked)
}

/// Reads the shard's attempt lines, refusing one of an event or a group the shard does not hold,
/// and stopping at the first line past its `deliveries` (so that memory stays what shard.json,
/// bounded above, says).
fn read_attempts(
    dir: &Path,
    p: &Partial,
    workload: &Workload,
    index: &dyn Fn(&str) -> Option<usize>,
) -> Result<(Tally, Checked), super::MergeError> {
    let mut tally = Tally::default();
    let mut checked = Checked { attempts: Vec::new(), most_connection: 0 };
    let shard = p.shard;
    history::read_numbered(dir, &mut |_, line| {
        let Line::Attempt(a) = line else { return Ok(()) };
        // The id is the file's: escaped before it reaches a terminal.
        let id = || crate::printable::line(&a.event).into_owned();
        let Some(i) = index(&a.event) else {
            return Err(ForeignAttempt::UnknownEvent { id: id() });
        };
        if !shard.holds(i as u32) {
            return Err(ForeignAttempt::OtherShard { id: id(), shard });
        }
        if workload.groups.get(a.group).is_none_or(|g| g.event as usize != i) {
            return Err(ForeignAttempt::WrongGroup { id: id(), group: a.group });
        }
        if tally.counters.deliveries >= p.counters.deliveries {
            return Err(ForeignAttempt::PastDeliveries { deliveries: p.counters.deliveries });
        }
        tally.add(&a, workload.is_poisoned(i));
        checked.most_connection = checked.most_connection.max(a.connection);
        checked.attempts.push(a);
        Ok(())
    })?;
    Ok((tally, checked))
}

/// Refuses counters that are not those the history's lines add up to (`any_poison`: the plan
/// marks no poison, so the poison counters are only bounded).
fn held_to_history(
    said: &CounterSnapshot,
    lines: &CounterSnapshot,
    no_poison: bool,
) -> Result<(), NotItsHistory> {
    let pairs = [
        ("deliveries", said.deliveries, lines.deliveries, "attempt lines"),
        ("status_2xx", said.status_2xx, lines.status_2xx, "attempt lines with a 2xx"),
        ("status_4xx", said.status_4xx, lines.status_4xx, "attempt lines with a 4xx"),
        ("status_5xx", said.status_5xx, lines.status_5xx, "attempt lines with another status"),
        ("timeouts", said.timeouts, lines.timeouts, "attempt lines timed out"),
        ("acks_lost", said.acks_lost, lines.acks_lost, "attempt lines answered 2xx with their ack lost"),
        ("connect_errors", said.connect_errors, lines.connect_errors, "attempt lines with no connection"),
        ("resets", said.resets, lines.resets, "attempt lines whose connection broke"),
        ("retries", said.retries, lines.retries, "attempt lines after a copy's first"),
    ];
    let differ: Vec<CounterDiffers> = pairs
        .into_iter()
        .filter(|(_, said, lines, _)| said != lines)
        .map(|(field, said, lines, what)| CounterDiffers { field, said, lines, what })
        .collect();
    if !differ.is_empty() {
        return Err(NotItsHistory::Counters(differ));
    }
    let poison_ok = if no_poison {
        said.poison_attempts <= lines.deliveries && said.poison_non_2xx <= said.poison_attempts
    } else {
        said.poison_attempts == lines.poison_attempts && said.poison_non_2xx == lines.poison_non_2xx
    };
    if !poison_ok {
        return Err(NotItsHistory::Poison {
            said_attempts: said.poison_attempts,
            said_non_2xx: said.poison_non_2xx,
            lines_attempts: lines.poison_attempts,
            lines_non_2xx: lines.poison_non_2xx,
        });
    }
    let copies = lines.deliveries - lines.retries;
    if said.gave_up > copies {
        return Err(NotItsHistory::GaveUp { said: said.gave_up, copies });
    }
    Ok(())
}

/// Refuses a histogram (`field`, V2 base64) that does not hold `deliveries` samples or whose
/// percentiles are not those of the history's lines (`rebuilt`), within 1 % or 10 µs: the
/// history keeps each time to the nanosecond as milliseconds, the histogram to three digits.
fn histogram_held_to_history(
    field: &'static str,
    text: &str,
    rebuilt: &Latency,
    deliveries: u64,
) -> Result<(), NotItsHistory> {
    let theirs = Latency::default();
    theirs.add_v2_base64(text).map_err(|source| NotItsHistory::Histogram { field, source })?;
    let (t, r) = (theirs.percentiles(), rebuilt.percentiles());
    if t.count != deliveries {
        return Err(NotItsHistory::Samples { field, count: t.count, deliveries });
    }
    let figures = |p: &Percentiles| [p.p50, p.p90, p.p99, p.max];
    let off = figures(&t)
        .into_iter()
        .zip(figures(&r))
        .any(|(said, lines)| said.abs_diff(lines) > (said.max(lines) / 100).max(10));
    if off {
        let list = |p: &Percentiles| figures(p).map(|v| v.to_string()).join(", ");
        return Err(NotItsHistory::Percentiles { field, said: list(&t), lines: list(&r) });
    }
    Ok(())
}

/// Refuses an audit shard whose recorded attempts (the witnesses' timelines) are not its
/// history's: the same events, attempt numbers and answers.
fn records_held_to_history(
    records: &[crate::sender::AttemptRecord],
    lines: &[AttemptLine],
    index: &dyn Fn(&str) -> Option<usize>,
) -> Result<(), NotItsHistory> {
    let mut said: Vec<(usize, u32, Fate)> = records.iter().map(|r| (r.event, r.attempt, r.outcome)).collect();
    let mut seen: Vec<(usize, u32, Fate)> =
        lines.iter().map(|a| (index(&a.event).unwrap_or(usize::MAX), a.attempt, a.fate())).collect();
    said.sort();
    seen.sort();
    if said != seen {
        let differ = said.iter().zip(&seen).find(|(a, b)| a != b);
        return Err(match differ {
            Some((a, b)) => NotItsHistory::Answer {
                event: a.0,
                attempt: a.1,
                said: a.2.to_string(),
                lines: b.2.to_string(),
            },
            None => NotItsHistory::Attempts { said: said.len(), lines: seen.len() },
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::load::partial::PARTIAL_FILE;
    use crate::sender::SendReport;
    use crate::stats::Histograms;
    use crate::workload::{Shard, WorkloadConfig};

    /// A small workload, and an honest shard.json of shard 1/2 of it (sending nothing) as JSON.
    fn honest() -> (Workload, Value) {
        let workload =
            Workload::generate(&WorkloadConfig { events: 20, ..Default::default() }).expect("plan");
        let parameters = serde_json::from_value(json!({
            "seed": 1, "events": 20, "workers": 1, "concurrency": 2, "rate": null, "work_delay": "0s",
            "timeout": "10s", "retry": {"base": "10ms", "cap": "1s", "max_attempts": 10},
            "isolation": "read-committed", "inbox_workers": 2, "p_duplicate": 0.0, "p_ack_lost": 0.0,
            "p_concurrent": 0.0, "p_shuffle": 0.0
        }))
        .expect("parameters");
        let target = Target::Bench {
            backend: crate::matrix::Backend::Sqlite,
            design: crate::matrix::Design::Atomic,
            database: "sqlite://x.db".into(),
            parameters: Box::new(parameters),
        };
        let sent = SendReport::from_histograms(
            CounterSnapshot::default(),
            Arc::new(Histograms::default()),
            Duration::ZERO,
        );
        let shard = Shard::new(1, 2).expect("a shard");
        let p = Partial::new(("r".into(), shard, target), &workload, None, &sent);
        (workload, serde_json::to_value(&p).expect("JSON"))
    }

    /// A number as shard.json could hold it: small, huge, negative, fractional.
    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("JSON has no NaN or infinity", |f| f.is_finite()).prop_map(Value::from),
            (0u64..4).prop_map(Value::from),
        ]
    }

    /// An attempt line with any field any value of its type (and sometimes another).
    fn attempt_line() -> impl Strategy<Value = String> {
        (
            (0usize..40, any::<u32>(), 0usize..60, any::<u8>()),
            (any::<f64>(), any::<f64>(), any::<f64>()),
            (
                any::<u64>(),
                proptest::option::of(any::<u16>()),
                0usize..3,
                proptest::option::of("[a-z -]{0,12}"),
            ),
        )
            .prop_map(
                |(
                    (event, attempt, group, copy),
                    (planned, sent, answered),
                    (connection, status, outcome, detail),
                )| {
                    let f = |x: f64| if x.is_finite() { Value::from(x) } else { Value::from(0) };
                    let outcome = ["ok", "fail", "info"][outcome];
                    json!({"type": "attempt", "cell": "sqlite/atomic", "event": format!("evt_{event:06}"),
                    "kind": "credit", "group": group, "copy": copy, "attempt": attempt,
                    "planned_ms": f(planned), "sent_ms": f(sent), "answered_ms": f(answered), "worker": 0,
                    "connection": connection, "status": status, "outcome": outcome,
                    "detail": detail})
                    .to_string()
                },
            )
    }

    proptest! {
        #[test]
        fn a_shard_json_with_any_numbers_is_read_or_refused_never_a_panic(
            index in number(), count in number(), elapsed in number(), late in number(),
            cut in proptest::option::of(0usize..4000),
        ) {
            let (_, mut json) = honest();
            json["shard"] = json!({"index": index, "count": count});
            json["elapsed_s"] = elapsed;
            json["late_by_s"] = late;
            let mut bytes = serde_json::to_vec(&json).expect("encode");
            if let Some(cut) = cut {
                bytes.truncate(cut);
            }
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(dir.path().join(PARTIAL_FILE), &bytes).expect("write");
            if let Ok(p) = Partial::read(dir.path()) {
                prop_assert!(Shard::new(p.shard.index, p.shard.count).is_ok());
                prop_assert!(p.elapsed().is_ok() && p.late_by().is_ok());
            }
        }

        #[test]
        fn any_history_lines_are_checked_or_refused_never_a_panic(
            lines in proptest::collection::vec(prop_oneof![attempt_line(), "[ -~]{0,80}".prop_map(String::from)], 0..30),
            deliveries in 0u64..40,
        ) {
            let (workload, mut json) = honest();
            json["counters"]["deliveries"] = deliveries.into();
            let p: Partial = serde_json::from_value(json).expect("a partial");
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::write(dir.path().join(history::FILE), lines.join("\n")).expect("write");
            let n = workload.events.len();
            let index = |id: &str| crate::judge::history::workload_index("", id, n);
            let _ = check_shard(dir.path(), &p, &workload, &index);
        }
    }
}
