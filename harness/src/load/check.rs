//! A load as an audit check judges it (the parallel load, the crash and poison loads, a merged
//! sharded audit), and any verdict as a report's check result: the outcome, the evidence line,
//! the failing classes and the first witnesses with their attempts.

use std::sync::Arc;

use super::{answers, history, write_verdict};
use crate::history::Tap;
use crate::judge::{Class, History, Outcome, Rules, Subject, Verdict, judge};
use crate::observe::Snapshot;
use crate::report::{AttemptLog, Check, CheckResult, LoadFigures, Status, Witness};
use crate::sender::{AttemptRecord, Pace, SendReport};
use crate::wire::Wire;
use crate::workload::Workload;

/// Witnesses a check names at most.
pub const WITNESSES: usize = 5;

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
    /// Where its attempts went, and where its verdict goes.
    pub history: Option<Tap>,
}

impl Load {
    /// What the judge reads of it: each event at the account the wire sent it to.
    pub fn history(&self) -> History {
        let (w, wire) = (&self.workload, &self.wire);
        history(w, &wire.ids.prefix, |i| wire.fields(w, i).account, |i| answers(&self.sent, i))
    }

    /// The sender's attempts of one event, as witness lines (times from the audit's start), with
    /// each pair of `marks` (a kill and the receiver healthy again) whose first fell between the
    /// event's first send and its last outcome.
    pub fn attempts_of(&self, event: usize, marks: &[[AttemptLog; 2]]) -> Vec<AttemptLog> {
        let records: Vec<&AttemptRecord> = self.sent.attempts.iter().filter(|r| r.event == event).collect();
        let mut logs: Vec<AttemptLog> = records
            .iter()
            .map(|r| AttemptLog {
                at_ms: self.offset_ms + r.sent_ms,
                outcome: r.outcome.to_string(),
                connection: format!("connection {}", r.connection),
                note: format!("attempt {}, outcome after {:.1} ms", r.attempt, r.done_ms - r.sent_ms),
            })
            .collect();
        let first = records.iter().map(|r| r.sent_ms).fold(f64::INFINITY, f64::min) + self.offset_ms;
        let last = records.iter().map(|r| r.done_ms).fold(f64::NEG_INFINITY, f64::max) + self.offset_ms;
        let within = |m: &&[AttemptLog; 2]| m[0].at_ms >= first - 1.0 && m[0].at_ms <= last;
        logs.extend(marks.iter().filter(within).flat_map(|m| m.iter().cloned()));
        logs.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        logs
    }

    /// Its credits into `book`, each with its account, amount and attempts, and the accounts of
    /// its updates.
    pub fn book(&self, book: &mut crate::judge::CreditBook) {
        let (w, wire) = (&self.workload, &self.wire);
        for i in 0..w.events.len() {
            let f = wire.fields(w, i);
            match f.kind {
                crate::wire::Kind::Credit => {
                    book.credit(&f.id, f.account, f.amount, self.sent.tries.get(i).copied().unwrap_or(0));
                }
                crate::wire::Kind::Update => book.unjudged(f.account),
            }
        }
    }

    /// The attempts of every update to `account`.
    fn attempts_of_account(&self, history: &History, account: i64) -> Vec<AttemptLog> {
        let mut logs: Vec<AttemptLog> = (0..history.len())
            .filter(|&i| history.events()[i].account == account)
            .flat_map(|i| self.attempts_of(i, &[]))
            .collect();
        logs.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        logs
    }
}

/// What a parallel load (unsharded or merged from shards) is held to: every credit exactly
/// once, nothing refused and applied, and no stale account where states are observed.
pub fn parallel_rules() -> Rules {
    use crate::judge::{Class, ClassSet, Needs};
    let fail: ClassSet = [
        Class::Duplicate,
        Class::Lost,
        Class::NeverApplied,
        Class::RefusedApplied,
        Class::StaleAccount,
        Class::UnexplainedChange,
    ]
    .into_iter()
    .collect();
    Rules { fail, warn: ClassSet::EMPTY, require: vec![Needs::Applies], witnesses: WITNESSES }
}

/// `check`'s verdict on `load` under `rules` from what the observers saw (`marks` go into the
/// witnesses' timelines), with the load's figures; the verdict into the load's history.
pub fn judge_load(
    load: &Load,
    seen: &Snapshot,
    check: Check,
    rules: &Rules,
    marks: &[[AttemptLog; 2]],
) -> (CheckResult, LoadFigures, Verdict) {
    let history = load.history();
    let evidence = seen.evidence(&history);
    let verdict = judge(&history, &evidence, rules);
    if let Some(tap) = &load.history {
        write_verdict(tap, &load.workload, &history, &evidence, &verdict);
    }
    let attempts = |s: Subject| match s {
        Subject::Event(i) => load.attempts_of(i, marks),
        Subject::Pair(a, b) => {
            let mut logs = load.attempts_of(a, marks);
            logs.extend(load.attempts_of(b, marks));
            logs.sort_by(|x, y| x.at_ms.total_cmp(&y.at_ms));
            logs
        }
        Subject::Account(a) => load.attempts_of_account(&history, a),
        Subject::Run => Vec::new(),
    };
    let (intended, answers) = (&load.sent.latency_intended, &load.sent.latency_actual);
    let answered = if answers.count == 0 {
        "no attempt answered".to_string()
    } else {
        format!("answers p50 {:.1} ms, p99 {:.1} ms", answers.p50 as f64 / 1e3, answers.p99 as f64 / 1e3)
    };
    let note = format!(
        "p50 {:.1} ms, p99 {:.1} ms (intended); {answered}{}",
        intended.p50 as f64 / 1e3,
        intended.p99 as f64 / 1e3,
        behind(&load.sent.pace)
    );
    let result = checked(check, &verdict, &history, &attempts, &note);
    (result, load_figures(load, &verdict), verdict)
}

/// When the load fell behind its plan, the rates and why, to follow its latencies in the evidence
/// line (a latency from the plan includes the wait); else nothing.
fn behind(pace: &Pace) -> String {
    crate::report::fell_behind(pace.planned_rate(), pace.achieved_rate(), pace.behind_cause())
}

/// The load's figures, from what the sender counted and what the judge found.
fn load_figures(load: &Load, v: &Verdict) -> LoadFigures {
    use crate::judge::{Class, Needs};
    let (c, t) = (&load.sent.counters, &v.tally);
    let states = t.observed.contains(&Needs::States);
    LoadFigures {
        events: t.events,
        deliveries: c.deliveries,
        status_2xx: c.status_2xx,
        status_4xx: c.status_4xx,
        status_5xx: c.status_5xx,
        timeouts: c.timeouts,
        acks_lost: c.acks_lost,
        connect_errors: c.connect_errors,
        resets: c.resets,
        dup_events: t.count(Class::Duplicate),
        extra_applies: t.extra_applies,
        lost: t.count(Class::Lost),
        never_applied: t.count(Class::NeverApplied),
        stale_accounts: states.then(|| t.count(Class::StaleAccount)),
        accounts_observed: t.accounts_observed,
        refused_applied: t.count(Class::RefusedApplied),
        acked: t.acked,
        applied: t.applied,
        gave_up: c.gave_up,
        latency_us: load.sent.latency_intended,
        answer_latency_us: (load.sent.latency_actual.count > 0).then_some(load.sent.latency_actual),
        throughput_per_s: c.deliveries as f64 / load.sent.elapsed.as_secs_f64().max(1e-9),
        planned_rate: load.sent.pace.planned_rate(),
        achieved_rate: load.sent.pace.achieved_rate(),
        behind_cause: load.sent.pace.behind_cause(),
        concurrent: None,
    }
}

/// `check`'s result from `verdict`: PASS only on a pass without an advisory finding; WARN on a
/// pass with one (a class the rules warn on), with its witnesses; FAIL with the failing classes
/// and the first witnesses (each with the attempts `attempts` names for its subject); SKIPPED, saying
/// why, when nothing was sent or the evidence it needs was not observed. `note` follows the
/// evidence line.
pub fn checked(
    check: Check,
    verdict: &Verdict,
    history: &History,
    attempts: &dyn Fn(Subject) -> Vec<AttemptLog>,
    note: &str,
) -> CheckResult {
    let summary = crate::report::verdict_summary(verdict);
    let evidence = if note.is_empty() { summary } else { format!("{summary}; {note}") };
    let status = match &verdict.outcome {
        Outcome::Pass if !verdict.warning().is_empty() => Status::Warn,
        Outcome::Pass => Status::Pass,
        Outcome::Fail => Status::Fail,
        Outcome::Unjudged(_) | Outcome::NothingSent => Status::Skipped,
    };
    let shown = match status {
        Status::Fail => verdict.failing(),
        Status::Warn => verdict.warning(),
        Status::Pass | Status::Skipped => Vec::new(),
    };
    let mut witnesses: Vec<Witness> = Vec::new();
    for f in verdict.witnesses.iter().filter(|f| shown.contains(&f.class)) {
        let w = Witness {
            id: match f.subject {
                Subject::Event(i) => history.id(i),
                Subject::Pair(a, b) => format!("{} and {}", history.id(a), history.id(b)),
                Subject::Account(a) => format!("account {a}"),
                Subject::Run => "the run".to_string(),
            },
            problem: format!("{}: {}", f.class.name(), f.problem),
            attempts: attempts(f.subject),
            observed: f.observed.clone(),
        };
        if witnesses.len() < WITNESSES || shows_a_new_case(&witnesses, f.class, &w) {
            witnesses.push(w);
        }
    }
    CheckResult { check, status, evidence, anomalies: shown, witnesses, figures: None }
}

/// Whether `w`, a witness of `class`, is of a case with a remedy of its own
/// ([`crate::report::remedy::BY_CASE`]) that no witness in `shown` is of yet: past the first few
/// witnesses such a one is still shown, so that its remedy is offered (a malformed body answered
/// 500 among six other not-refused deliveries).
fn shows_a_new_case(shown: &[Witness], class: Class, w: &Witness) -> bool {
    let of_case = |w: &Witness, note: &str| {
        w.problem.starts_with(&format!("{}: ", class.name())) && w.attempts.iter().any(|a| a.note == note)
    };
    crate::report::remedy::BY_CASE
        .iter()
        .any(|(c, note, _)| *c == class && of_case(w, note) && !shown.iter().any(|s| of_case(s, note)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{Answers, Applies, ClassSet, Evidence, Expect, Ids, Kind, Needs, Sent};

    /// Two credits acknowledged once each, the second restating the first, applied as `counts`
    /// says, judged with the semantic duplicate warning (or failing, with `strict`).
    fn result(counts: [u32; 2], strict: bool) -> CheckResult {
        let answers = Answers { attempts: 1, acked: true, last_status: Some(200), ..Answers::default() };
        let sent = Sent { kind: Kind::Credit { amount: 1 }, account: 1, expect: Expect::Once, answers };
        let ids = Ids::Listed(vec!["sem_0000".into(), "sem_0001".into()]);
        let history = History::new(vec![sent; 2], ids).with_twins(&[(0, 1)]);
        let applies = Applies { counts: counts.to_vec(), ..Applies::new("sql", 2) };
        let evidence = Evidence { applies: vec![applies], ..Evidence::default() };
        let semantic = ClassSet::EMPTY.with(Class::SemanticDuplicate);
        let fail: ClassSet = [Class::Duplicate, Class::Lost, Class::NeverApplied].into_iter().collect();
        let (fail, warn) = if strict { (fail.or(semantic), ClassSet::EMPTY) } else { (fail, semantic) };
        let rules = Rules { fail, warn, require: vec![Needs::Applies], witnesses: WITNESSES };
        let verdict = judge(&history, &evidence, &rules);
        checked(Check::SemanticDuplicate, &verdict, &history, &|_| Vec::new(), "")
    }

    /// `n` deliveries the receiver should have refused, each answered 500 and never applied, the
    /// last of them the malformed body; judged keeping `kept` witnesses a class.
    fn refused_with_500s(n: usize, kept: usize) -> CheckResult {
        let answers = Answers { attempts: 1, last_status: Some(500), ..Answers::default() };
        let sent = Sent { kind: Kind::Credit { amount: 1 }, account: 1, expect: Expect::Refused, answers };
        let ids = Ids::Listed((0..n).map(|i| format!("hostile_{i:04}")).collect());
        let history = History::new(vec![sent; n], ids);
        let evidence = Evidence { applies: vec![Applies::new("sql", n)], ..Evidence::default() };
        let fail = ClassSet::EMPTY.with(Class::NotRefused);
        let rules = Rules { fail, warn: ClassSet::EMPTY, require: vec![Needs::Applies], witnesses: kept };
        let verdict = judge(&history, &evidence, &rules);
        let note = |s: Subject| match s {
            Subject::Event(i) if i + 1 == n => crate::report::MALFORMED_BODY.to_string(),
            _ => "tampered body".to_string(),
        };
        let attempts = |s: Subject| {
            vec![AttemptLog { at_ms: 1.0, outcome: "500".into(), connection: String::new(), note: note(s) }]
        };
        checked(Check::HostileInput, &verdict, &history, &attempts, "")
    }

    #[test]
    fn a_case_with_a_remedy_of_its_own_is_witnessed_past_the_first_few_and_gets_its_remedy() {
        let r = refused_with_500s(7, 64);
        assert_eq!(r.status, Status::Fail);
        let ids: Vec<&str> = r.witnesses.iter().map(|w| w.id.as_str()).collect();
        assert_eq!(ids.len(), WITNESSES + 1, "{ids:?}");
        assert_eq!(ids.last(), Some(&"hostile_0006"), "the malformed body, seventh of seven");
        let anchors: Vec<&str> = crate::report::remedy::for_failure(r.check, &r.anomalies, &r.witnesses)
            .iter()
            .map(|x| x.anchor)
            .collect();
        assert_eq!(anchors, ["not-refused", "malformed-body"]);
        // Without the case among them, the first few alone.
        let plain = refused_with_500s(6, 64);
        assert_eq!(plain.witnesses.len(), WITNESSES + 1, "the sixth is the malformed body");
        let few = refused_with_500s(3, 64);
        assert_eq!(few.witnesses.len(), 3);
    }

    #[test]
    fn past_the_first_few_a_witness_of_no_case_is_left_out() {
        // Seven refused deliveries, none of a case: five shown.
        let answers = Answers { attempts: 1, last_status: Some(500), ..Answers::default() };
        let sent = Sent { kind: Kind::Credit { amount: 1 }, account: 1, expect: Expect::Refused, answers };
        let history = History::new(vec![sent; 7], Ids::Listed((0..7).map(|i| format!("h_{i}")).collect()));
        let evidence = Evidence { applies: vec![Applies::new("sql", 7)], ..Evidence::default() };
        let rules = Rules {
            fail: ClassSet::EMPTY.with(Class::NotRefused),
            warn: ClassSet::EMPTY,
            require: vec![Needs::Applies],
            witnesses: 64,
        };
        let verdict = judge(&history, &evidence, &rules);
        let r = checked(Check::HostileInput, &verdict, &history, &|_| Vec::new(), "");
        assert_eq!(r.witnesses.len(), WITNESSES);
    }

    /// 201 first attempts planned at 200/s, each sent `lag_ms(i)` after its plan.
    fn pace(lag_ms: impl Fn(u32) -> f64, waited_for_cap: u64) -> Pace {
        let mut p = Pace::new(16, Some(200.0));
        for i in 0..201 {
            let t = f64::from(i) * 5.0;
            p.first_attempt(t, t + lag_ms(i));
        }
        p.waited_for_cap = waited_for_cap;
        p
    }

    #[test]
    fn a_load_behind_its_plan_says_both_rates_and_the_cause_and_one_on_it_says_nothing() {
        // Sent at 16/s (62.5 ms apart) where 200/s were planned, slots waited for: the cap.
        let capped = behind(&pace(|i| f64::from(i) * 57.5, 184));
        assert_eq!(
            capped,
            "; sent at 16.0/s of the planned 200/s: the sender's 16 in flight were waiting on the \
             receiver; latencies include that wait"
        );
        // Behind with every slot free when needed: the machine.
        assert!(
            behind(&pace(|i| f64::from(i) * 57.5, 0)).contains("could not keep the pace on this machine")
        );
        // On the plan (a constant lag), or 2 % behind: nothing.
        assert_eq!(behind(&pace(|_| 40.0, 0)), "");
        assert_eq!(behind(&pace(|i| f64::from(i) * 0.1, 3)), "");
        // Nothing sent: no rate, nothing said.
        assert_eq!(behind(&Pace::new(16, Some(200.0))), "");
    }

    #[test]
    fn a_pass_with_an_advisory_finding_warns_with_its_witnesses() {
        let warned = result([1, 1], false);
        assert_eq!(warned.status, Status::Warn);
        assert_eq!(warned.anomalies, [Class::SemanticDuplicate]);
        assert_eq!(warned.witnesses.len(), 1);
        assert_eq!(warned.witnesses[0].id, "sem_0000 and sem_0001");
        assert!(warned.witnesses[0].problem.starts_with("semantic-duplicate: "), "{:?}", warned.witnesses);
        let strict = result([1, 1], true);
        assert_eq!((strict.status, strict.anomalies), (Status::Fail, vec![Class::SemanticDuplicate]));
    }

    #[test]
    fn a_clean_pass_neither_warns_nor_names_witnesses() {
        let passed = result([1, 0], false);
        assert_eq!(passed.status, Status::Pass);
        assert!(passed.anomalies.is_empty() && passed.witnesses.is_empty());
        // Nothing applied: a FAIL, never a WARN or a PASS.
        let none = result([0, 0], false);
        assert_eq!((none.status, none.anomalies), (Status::Fail, vec![Class::Lost]));
        assert!(none.witnesses.iter().all(|w| w.problem.starts_with("lost: ")), "{:?}", none.witnesses);
    }
}
