//! A compact notation for tiny histories and evidence, for the judge's tests (elle's
//! `rw_register_test.clj` is the model).
//!
//! A history is events separated by spaces, event `i` being the `i`-th:
//! `KIND[ACCOUNT][vVERSION][$AMOUNT]:ANSWERS` (a credit's amount is 100 unless `$` gives it). KIND is `c` (a credit expected once), `m` (a credit at most
//! once), `p` (a poison credit), `x` (a credit that must be refused), `n` (a credit that must not
//! be acknowledged) or `u` (an update expected once, with `vVERSION`). ANSWERS is one letter per
//! attempt: `a` 200, `r` 400, `f` 500, `t` no answer, `h` held open. `c:ta` is a credit to account
//! 0 that timed out once and was then acknowledged; `u7v2:f` an update of account 7 to version 2
//! answered 500 once.
//!
//! Evidence is sections separated by `;`, absent sections not observed:
//! `applied[sink] 0=1 1=2 ?=3` (applies per event index, `?` another run's ids; `applied` alone:
//! observed, nothing applied; the observer defaults to `sql`), `updates 1=2` (update applies
//! observed apart, `--update-applied-query`'s), `state 7=2` (final versions),
//! `dead 3` (dead letters, by event index), `changes 7:0>2 7:2>1` (account:old>new, in order),
//! `conflicts 1`, `ledger 300/300` (balances/rows), `balance 3=+200 9=-5` and `count 3=+2` (each
//! account's change since the baseline, decoded against the history's credits by the judge's own
//! decoder; `balance` alone: observed, nothing changed).

use std::collections::{BTreeMap, BTreeSet};

use super::{
    Answers, Applies, Change, CreditBook, Evidence, Expect, History, Ids, Kind, Ledger, Measure, Sent,
};

fn answers(letters: &str) -> Answers {
    let mut a = Answers::default();
    for l in letters.chars() {
        a.attempts += 1;
        a.last_status = match l {
            'a' => Some(200),
            'r' => Some(400),
            'f' => Some(500),
            't' | 'h' => None,
            other => panic!("unknown answer {other:?}"),
        };
        a.acked |= l == 'a';
        a.refused |= l == 'r';
        a.held_open |= l == 'h';
    }
    a
}

fn event(spec: &str) -> Sent {
    let (what, letters) = spec.split_once(':').unwrap_or_else(|| panic!("`{spec}` has no `:`"));
    let mut chars = what.chars();
    let kind = chars.next().unwrap_or_else(|| panic!("`{spec}` has no kind"));
    let rest: String = chars.collect();
    let (rest, amount) = match rest.split_once('$') {
        Some((r, a)) => (r.to_string(), a.parse::<i64>().unwrap_or_else(|_| panic!("amount in `{spec}`"))),
        None => (rest, 100),
    };
    let (account, version) = match rest.split_once('v') {
        Some((a, v)) => (a, Some(v.parse::<i64>().unwrap_or_else(|_| panic!("version in `{spec}`")))),
        None => (rest.as_str(), None),
    };
    let account = if account.is_empty() { 0 } else { account.parse().unwrap_or_else(|_| panic!("`{spec}`")) };
    let (kind, expect) = match kind {
        'c' => (Kind::Credit { amount }, Expect::Once),
        'm' => (Kind::Credit { amount }, Expect::AtMostOnce),
        'p' => (Kind::Credit { amount }, Expect::Poison),
        'x' => (Kind::Credit { amount }, Expect::Refused),
        'n' => (Kind::Credit { amount }, Expect::NotAcked),
        'u' => {
            (Kind::Update { version: version.unwrap_or_else(|| panic!("`{spec}` needs vN")) }, Expect::Once)
        }
        other => panic!("unknown kind {other:?}"),
    };
    Sent { kind, account, expect, answers: answers(letters) }
}

/// The history `text` writes.
pub fn history(text: &str) -> History {
    History::new(text.split_whitespace().map(event).collect(), Ids::Workload { prefix: String::new() })
}

fn pairs(words: &[&str]) -> impl Iterator<Item = (String, i64)> {
    words.iter().map(|w| {
        let (k, v) = w.split_once('=').unwrap_or_else(|| panic!("`{w}` is not K=V"));
        (k.to_string(), v.parse().unwrap_or_else(|_| panic!("`{w}`")))
    })
}

/// One observer's applies, `0=1 ?=3`, for a history of `events` events.
fn applies(name: &str, words: &[&str], events: usize) -> Applies {
    let mut a = Applies::new(name, events);
    for (k, n) in pairs(words) {
        let index = if k == "?" { None } else { Some(k.parse().unwrap_or_else(|_| panic!("`{k}`"))) };
        a.add(index, u64::try_from(n).unwrap_or(0));
    }
    a
}

/// The evidence `text` writes, for `history`.
pub fn evidence_of(text: &str, history: &History) -> Evidence {
    let mut e = evidence(text, history.len());
    for section in text.split(';').map(str::trim) {
        let measure = match section.split_whitespace().next() {
            Some("balance") => Measure::Balance,
            Some("count") => Measure::Rows,
            _ => continue,
        };
        let changes = pairs(&section.split_whitespace().skip(1).collect::<Vec<_>>())
            .map(|(k, v)| (k.parse::<i64>().unwrap_or_else(|_| panic!("account `{k}`")), v))
            .collect();
        aggregate(&mut e, history, measure, &changes);
    }
    e
}

/// What `measure`'s `changes` say of `history`'s credits, decoded as an audit decodes them (every
/// account observed), into `e`: an observer of applies named after the measure, its undecoded
/// events, and the accounts whose change is unexplained.
fn aggregate(e: &mut Evidence, history: &History, measure: Measure, changes: &BTreeMap<i64, i64>) {
    let mut book = CreditBook::default();
    for (i, s) in history.events().iter().enumerate() {
        match s.kind {
            Kind::Credit { amount } => book.credit(&history.id(i), s.account, amount, s.answers.attempts),
            Kind::Update { .. } => book.unjudged(s.account),
        }
    }
    let resolved = book.resolve(measure.name(), measure, changes, &|_| true);
    let mut applies = Applies::new(measure.name(), history.len());
    applies.undecoded = (0..history.len()).collect();
    for (id, n) in &resolved.counts {
        let i = history.index(id).unwrap_or_else(|| panic!("{id}"));
        applies.add(Some(i), u64::from(*n));
        applies.undecoded.remove(&i);
    }
    e.applies.push(applies);
    e.unexplained.get_or_insert_default().extend(resolved.unexplained);
}

/// The evidence `text` writes, for a history of `events` events (no aggregates: see
/// [`evidence_of`]).
pub fn evidence(text: &str, events: usize) -> Evidence {
    let mut e = Evidence::default();
    for section in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let words: Vec<&str> = section.split_whitespace().collect();
        let (head, rest) = words.split_first().unwrap_or_else(|| panic!("empty section"));
        match *head {
            h if h.starts_with("applied") => {
                let name = h.strip_prefix("applied[").and_then(|n| n.strip_suffix(']')).unwrap_or("sql");
                e.applies.push(applies(name, rest, events));
            }
            "updates" => e.update_applies.push(applies("sql updates", rest, events)),
            "state" => {
                let states: BTreeMap<i64, i64> =
                    pairs(rest).map(|(k, v)| (k.parse().unwrap_or_else(|_| panic!("`{k}`")), v)).collect();
                e.states = Some(states);
            }
            "dead" => {
                let dead: BTreeSet<usize> =
                    rest.iter().map(|w| w.parse().unwrap_or_else(|_| panic!("`{w}`"))).collect();
                e.dead_letters = Some(dead);
            }
            "changes" => {
                let changes = rest
                    .iter()
                    .enumerate()
                    .map(|(seq, w)| {
                        let (account, step) = w.split_once(':').unwrap_or_else(|| panic!("`{w}`"));
                        let (old, new) = step.split_once('>').unwrap_or_else(|| panic!("`{w}`"));
                        let n = |t: &str| t.parse::<i64>().unwrap_or_else(|_| panic!("`{w}`"));
                        Change { seq: seq as i64, account: n(account), old: n(old), new: n(new) }
                    })
                    .collect();
                e.changes = Some(changes);
            }
            "conflicts" => e.id_conflicts = rest.first().and_then(|w| w.parse().ok()),
            "ledger" => {
                let (b, r) =
                    rest.first().and_then(|w| w.split_once('/')).unwrap_or_else(|| panic!("ledger B/R"));
                let n = |t: &str| t.parse::<i64>().unwrap_or_else(|_| panic!("`{t}`"));
                e.ledger = Some(Ledger { balances: n(b), rows: n(r) });
            }
            "balance" | "count" => {}
            other => panic!("unknown section {other:?}"),
        }
    }
    e
}
