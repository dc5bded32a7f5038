//! A run's verdicts as a CI's test cases, what the JUnit file ([`super::junit`]) and the GitHub
//! step summary ([`super::step_summary`]) both render: one case per audit check or bench cell,
//! one per `--fail-on` threshold, one for an audit that stopped before it finished, and one that
//! says nothing was judged when nothing was. Read from the [`Report`] alone: a case's verdict is
//! the one the report already holds, never judged again here.

use crate::threshold::Outcome;

use super::remedy::{self, Remedy};
use super::{AuditSection, BenchBody, CheckResult, Report, Row, RunBody, Status};

/// Witnesses a failure lists at most; report.md and `hookbench explain` have the rest.
pub const MAX_WITNESSES: usize = 10;

/// Characters a listed line keeps at most (a witness's attempts can be many).
pub const MAX_LINE_CHARS: usize = 240;

/// The class name of an audit's checks.
pub const AUDIT_CLASS: &str = "hookbench.audit";
/// The class name of a bench's cells.
pub const BENCH_CLASS: &str = "hookbench.bench";
/// The class name of the `--fail-on` thresholds.
pub const THRESHOLD_CLASS: &str = "hookbench.threshold";

/// One run as a suite of cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// `hookbench audit` or `hookbench bench`.
    pub name: &'static str,
    /// The run's id.
    pub run_id: String,
    /// When it started (RFC 3339), as the report says.
    pub started_at: String,
    /// How long it took, seconds.
    pub time_s: f64,
    /// Its cases, in the report's order, the thresholds last.
    pub cases: Vec<Case>,
}

/// One check, cell or threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// [`AUDIT_CLASS`], [`BENCH_CLASS`] or [`THRESHOLD_CLASS`].
    pub classname: &'static str,
    /// The check's name, the cell (`postgres/naive`) or the threshold's expression.
    pub name: String,
    /// What the report says of it.
    pub verdict: Verdict,
    /// How long it took, seconds, when the report says.
    pub time_s: Option<f64>,
}

/// A case's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// It held.
    Pass {
        /// The evidence in one line (what held).
        evidence: String,
    },
    /// It did not: the verdict's evidence, then its first witnesses and what to change.
    Fail {
        /// The evidence in one line.
        message: String,
        /// The first witnesses, then the remedies, one per line, each bounded.
        details: Vec<String>,
    },
    /// Not judged, and why.
    Skipped {
        /// The reason.
        reason: String,
    },
    /// An advisory finding: passes, its evidence and witnesses shown beside it.
    Warn {
        /// The evidence in one line.
        evidence: String,
        /// The witnesses, then the remedies.
        details: Vec<String>,
    },
}

impl Verdict {
    /// PASS, FAIL, SKIPPED or WARN, as the report prints a check's.
    pub fn word(&self) -> &'static str {
        match self {
            Self::Pass { .. } => Status::Pass.as_str(),
            Self::Fail { .. } => Status::Fail.as_str(),
            Self::Skipped { .. } => Status::Skipped.as_str(),
            Self::Warn { .. } => Status::Warn.as_str(),
        }
    }

    /// The one line that says why.
    pub fn evidence(&self) -> &str {
        match self {
            Self::Pass { evidence } => evidence,
            Self::Fail { message, .. } => message,
            Self::Skipped { reason } => reason,
            Self::Warn { evidence, .. } => evidence,
        }
    }
}

/// The report's run as a suite.
pub fn suite(report: &Report) -> Suite {
    let (name, time_s, mut cases) = match &report.body {
        RunBody::Audit { audit } => ("hookbench audit", audit.wall_s, audit_cases(audit)),
        RunBody::Bench(b) => ("hookbench bench", b.rows.iter().map(|r| r.wall_s).sum(), bench_cases(b)),
    };
    cases.extend(report.header.thresholds.iter().map(threshold_case));
    Suite {
        name,
        run_id: report.header.run_id.clone(),
        started_at: report.header.started_at.clone(),
        time_s,
        cases,
    }
}

/// Each check's case, then the stop's, or the one saying no check ran.
fn audit_cases(a: &AuditSection) -> Vec<Case> {
    let mut cases: Vec<Case> = a.checks.iter().map(check_case).collect();
    if let Some(why) = &a.stopped {
        // A stopped audit exits 2: a CI reading only the file must not see it green.
        let verdict = Verdict::Fail {
            message: format!("the audit stopped before it finished: {}", one_line(why)),
            details: Vec::new(),
        };
        cases.push(Case { classname: AUDIT_CLASS, name: "stopped".into(), verdict, time_s: None });
    }
    if cases.is_empty() {
        cases.push(nothing_judged(AUDIT_CLASS, "no check ran: nothing was judged"));
    }
    cases
}

/// A case that says nothing was judged: an empty suite reads as green, a skipped case does not
/// read as a pass.
fn nothing_judged(classname: &'static str, reason: &str) -> Case {
    Case {
        classname,
        name: "nothing judged".into(),
        verdict: Verdict::Skipped { reason: reason.into() },
        time_s: None,
    }
}

fn check_case(c: &CheckResult) -> Case {
    let details = || {
        let mut lines = bounded(c.witnesses.iter().map(|w| {
            let outcomes: Vec<&str> = w.attempts.iter().map(|a| a.outcome.as_str()).collect();
            let line = format!("{}: {}; {}", w.id, w.problem, w.observed);
            // A load's witnesses keep their attempts in the history, not in the report.
            if outcomes.is_empty() { line } else { format!("{line}; attempts: {}", outcomes.join(", ")) }
        }));
        lines.extend(remedy::for_failure(c.check, &c.anomalies, &c.witnesses).iter().map(remedy_line));
        lines
    };
    let evidence = one_line(&c.evidence);
    let verdict = match c.status {
        Status::Pass => Verdict::Pass { evidence },
        Status::Fail => Verdict::Fail { message: evidence, details: details() },
        Status::Skipped => Verdict::Skipped { reason: evidence },
        Status::Warn => Verdict::Warn { evidence, details: details() },
    };
    Case { classname: AUDIT_CLASS, name: c.check.as_str().into(), verdict, time_s: None }
}

/// Each cell that ran, broke or could not run; a failing case when none ran.
fn bench_cases(b: &BenchBody) -> Vec<Case> {
    let mut cases: Vec<Case> = b.rows.iter().map(|r| row_case(b, r)).collect();
    for n in &b.broken {
        let verdict = Verdict::Fail {
            message: format!("the cell broke: {}", one_line(&n.reason)),
            details: Vec::new(),
        };
        cases.push(Case { classname: BENCH_CLASS, name: n.cell(), verdict, time_s: None });
    }
    for n in &b.skipped {
        let verdict = Verdict::Skipped { reason: one_line(&n.reason) };
        cases.push(Case { classname: BENCH_CLASS, name: n.cell(), verdict, time_s: None });
    }
    for e in &b.experiments.errors {
        let verdict =
            Verdict::Fail { message: format!("could not run: {}", one_line(e)), details: Vec::new() };
        cases.push(Case { classname: BENCH_CLASS, name: "experiments".into(), verdict, time_s: None });
    }
    if b.rows.is_empty() {
        // The bench exits 1 when no cell could run: so does the file.
        let verdict = Verdict::Fail { message: "no cell could run".into(), details: Vec::new() };
        cases.push(Case { classname: BENCH_CLASS, name: "nothing judged".into(), verdict, time_s: None });
    }
    cases
}

/// A cell's case: a FAIL when the judge found a class that fails a cell.
fn row_case(b: &BenchBody, r: &Row) -> Case {
    let name = r.cell();
    let verdict = match &r.verdict {
        // A report written before the judge kept its verdict: nothing to pass it by.
        None => Verdict::Skipped { reason: "not judged: the report holds no verdict for this cell".into() },
        Some(v) if v.failing.is_empty() => Verdict::Pass { evidence: one_line(&v.summary) },
        Some(v) => {
            let witnesses = b.witnesses.iter().filter(|c| c.cell == name).flat_map(|c| &c.witnesses);
            let mut details = bounded(
                witnesses
                    .map(|w| format!("{} {}: {} ({} attempts)", w.class, w.id, w.problem, w.attempts.len())),
            );
            let mut remedies: Vec<Remedy> = Vec::new();
            for r in v.failing.iter().map(|&class| remedy::for_class(class)) {
                if !remedies.contains(&r) {
                    remedies.push(r);
                }
            }
            details.extend(remedies.iter().map(remedy_line));
            Verdict::Fail { message: one_line(&v.summary), details }
        }
    };
    Case { classname: BENCH_CLASS, name, verdict, time_s: Some(r.wall_s) }
}

/// A threshold's case: a FAIL when a row breached it, SKIPPED when no row had its figure.
fn threshold_case(o: &Outcome) -> Case {
    let verdict = if !o.breached.is_empty() {
        let rows: Vec<&str> = o.breached.iter().map(|(row, _)| row.as_str()).collect();
        Verdict::Fail {
            // Clipped: the rows are listed one per line below.
            message: clip(&format!(
                "threshold breached: {} ({} of {} rows: {})",
                o.threshold,
                rows.len(),
                o.rows,
                rows.join(", ")
            )),
            details: bounded(o.breached.iter().map(|(row, v)| format!("{row}: {v}"))),
        }
    } else if o.rows == 0 {
        Verdict::Skipped { reason: "no row in its scope had the figure".into() }
    } else {
        Verdict::Pass { evidence: format!("held by each of {} rows", o.rows) }
    };
    Case { classname: THRESHOLD_CLASS, name: o.threshold.clone(), verdict, time_s: None }
}

/// A remedy as a line, whole: its sentence is hookbench's own, of bounded length.
fn remedy_line(r: &Remedy) -> String {
    format!("what to change ({}): {} (see {})", r.anchor, r.change, r.docs())
}

/// The first [`MAX_WITNESSES`] lines, each clipped, and how many more there were.
fn bounded(lines: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for line in lines {
        if out.len() < MAX_WITNESSES {
            out.push(clip(&line));
        } else {
            more += 1;
        }
    }
    if more > 0 {
        out.push(format!("and {more} more in report.md"));
    }
    out
}

/// `text` on one line of at most [`MAX_LINE_CHARS`] characters, an ellipsis marking a cut.
fn clip(text: &str) -> String {
    let line = one_line(text);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// `text` with its line endings (and every other control character) as spaces.
fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::judge::Class;
    use crate::report::{AttemptLog, AuditParameters, Check, Witness};
    use crate::threshold::Outcome;

    /// An audit's report of `checks`.
    pub(in crate::report) fn audit_report(checks: Vec<CheckResult>) -> Report {
        let parameters = AuditParameters {
            seed: 1,
            events: 10,
            accounts: 5,
            p_credit: 1.0,
            rate: 10.0,
            concurrency: 2,
            timeout: "1s".into(),
            retry: crate::sender::RetryPolicy::default(),
            p_duplicate: 0.0,
            p_ack_lost: 0.0,
            p_concurrent: 0.0,
            p_shuffle: 0.0,
            layout: crate::workload::Layout::Pooled,
        };
        let section = AuditSection {
            url: "http://127.0.0.1:1/webhooks".into(),
            signing: "standard-webhooks".into(),
            provider: None,
            payload: "hookbench".into(),
            observers: vec!["sql".into()],
            id_prefix: "a_".into(),
            account_base: 0,
            parameters,
            checks,
            wall_s: 2.5,
            stopped: None,
            repro: crate::report::ReproInputs::default(),
        };
        Report::audit("audit-test".into(), section)
    }

    /// A check's result with `status`, `evidence`, the classes and `witnesses` witnesses.
    pub(in crate::report) fn result(
        check: Check,
        status: Status,
        evidence: &str,
        classes: &[Class],
        witnesses: usize,
    ) -> CheckResult {
        let witness = |i: usize| Witness {
            id: format!("evt_{i}"),
            problem: "duplicate: applied 2 times".into(),
            attempts: vec![
                AttemptLog { at_ms: 1.0, outcome: "200".into(), connection: "1".into(), note: String::new() },
                AttemptLog { at_ms: 1.0, outcome: "200".into(), connection: "2".into(), note: String::new() },
            ],
            observed: "sql: applied 2 times".into(),
        };
        CheckResult {
            check,
            status,
            evidence: evidence.into(),
            anomalies: classes.to_vec(),
            witnesses: (0..witnesses).map(witness).collect(),
            figures: None,
        }
    }

    /// Every kind of check result, once each.
    pub(in crate::report) fn every_verdict() -> Report {
        audit_report(vec![
            result(Check::SequentialDuplicate, Status::Pass, "applied once each", &[], 0),
            result(Check::ConcurrentCopies, Status::Fail, "3 of 3 trials doubled", &[Class::Duplicate], 12),
            result(Check::OutOfOrder, Status::Skipped, "needs --state-query", &[], 0),
            result(
                Check::SemanticDuplicate,
                Status::Warn,
                "1 change applied twice",
                &[Class::SemanticDuplicate],
                1,
            ),
        ])
    }

    fn verdict_of<'a>(s: &'a Suite, name: &str) -> &'a Verdict {
        &s.cases.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no case {name}: {s:?}")).verdict
    }

    #[test]
    fn each_check_is_a_case_with_the_reports_verdict() {
        let s = suite(&every_verdict());
        assert_eq!((s.name, s.run_id.as_str(), s.time_s), ("hookbench audit", "audit-test", 2.5));
        let words: Vec<&str> = s.cases.iter().map(|c| c.verdict.word()).collect();
        assert_eq!(words, ["PASS", "FAIL", "SKIPPED", "WARN"]);
        assert!(s.cases.iter().all(|c| c.classname == AUDIT_CLASS));
        let Verdict::Fail { message, details } = verdict_of(&s, "concurrent-copies") else {
            panic!("a FAIL")
        };
        assert_eq!(message, "3 of 3 trials doubled");
        assert_eq!(details.len(), MAX_WITNESSES + 2, "ten witnesses, how many more, the remedy: {details:?}");
        assert!(
            details[0]
                .starts_with("evt_0: duplicate: applied 2 times; sql: applied 2 times; attempts: 200, 200")
        );
        assert_eq!(details[MAX_WITNESSES], "and 2 more in report.md");
        assert!(details[MAX_WITNESSES + 1].contains("docs/remedies.md#duplicate"), "{details:?}");
        assert_eq!(
            verdict_of(&s, "out-of-order"),
            &Verdict::Skipped { reason: "needs --state-query".into() }
        );
        let Verdict::Warn { details, .. } = verdict_of(&s, "semantic-duplicate") else { panic!("a WARN") };
        assert!(details.iter().any(|l| l.contains("#semantic-duplicate")), "{details:?}");
    }

    #[test]
    fn a_long_or_multiline_evidence_is_one_bounded_line() {
        let long = format!("first\nsecond {}", "x".repeat(1000));
        let mut failing = result(Check::LostAck, Status::Fail, &long, &[], 1);
        failing.witnesses[0].observed = long.clone();
        let s = suite(&audit_report(vec![failing]));
        let Verdict::Fail { message, details } = &s.cases[0].verdict else { panic!("a FAIL") };
        assert!(message.starts_with("first second") && !message.contains('\n'));
        assert_eq!(details[0].chars().count(), MAX_LINE_CHARS + 1, "clipped, with the ellipsis");
        assert!(details[0].ends_with('…'));
        let short = suite(&audit_report(vec![result(Check::LostAck, Status::Fail, "e", &[], 1)]));
        let Verdict::Fail { details, .. } = &short.cases[0].verdict else { panic!("a FAIL") };
        assert!(!details[0].ends_with('…'), "a short line is kept whole: {details:?}");
    }

    #[test]
    fn a_witness_without_attempts_lists_none() {
        let mut failing = result(Check::ParallelLoad, Status::Fail, "1 duplicate", &[Class::Duplicate], 1);
        failing.witnesses[0].attempts.clear();
        let s = suite(&audit_report(vec![failing]));
        let Verdict::Fail { details, .. } = &s.cases[0].verdict else { panic!("a FAIL") };
        assert_eq!(details[0], "evt_0: duplicate: applied 2 times; sql: applied 2 times");
    }

    #[test]
    fn no_check_at_all_is_a_skipped_case_not_an_empty_suite() {
        let s = suite(&audit_report(Vec::new()));
        assert_eq!(s.cases.len(), 1);
        assert_eq!(s.cases[0].name, "nothing judged");
        assert!(matches!(s.cases[0].verdict, Verdict::Skipped { .. }));
        let one = suite(&audit_report(vec![result(Check::LostAck, Status::Pass, "ok", &[], 0)]));
        assert!(one.cases.iter().all(|c| c.name != "nothing judged"), "{one:?}");
    }

    #[test]
    fn a_stopped_audit_has_a_failing_case_of_its_own() {
        let mut r = audit_report(vec![result(Check::LostAck, Status::Pass, "ok", &[], 0)]);
        if let RunBody::Audit { audit } = &mut r.body {
            audit.stopped = Some("the deadline\npassed".into());
        }
        let s = suite(&r);
        let Verdict::Fail { message, .. } = verdict_of(&s, "stopped") else { panic!("a FAIL") };
        assert_eq!(message, "the audit stopped before it finished: the deadline passed");
        let whole = suite(&audit_report(vec![result(Check::LostAck, Status::Pass, "ok", &[], 0)]));
        assert!(whole.cases.iter().all(|c| c.name != "stopped"));
    }

    #[test]
    fn a_threshold_breached_fails_one_held_passes_one_without_rows_is_skipped() {
        let mut r = audit_report(vec![result(Check::LostAck, Status::Pass, "ok", &[], 0)]);
        r.header.thresholds = vec![
            Outcome { threshold: "lost > 0".into(), rows: 2, breached: vec![("parallel-load".into(), 3.0)] },
            Outcome { threshold: "dup_events > 0".into(), rows: 2, breached: Vec::new() },
            Outcome { threshold: "crash:lost > 0".into(), rows: 0, breached: Vec::new() },
        ];
        let s = suite(&r);
        let Verdict::Fail { message, details } = verdict_of(&s, "lost > 0") else { panic!("a FAIL") };
        assert_eq!(message, "threshold breached: lost > 0 (1 of 2 rows: parallel-load)");
        assert_eq!(details, &["parallel-load: 3"]);
        assert_eq!(
            verdict_of(&s, "dup_events > 0"),
            &Verdict::Pass { evidence: "held by each of 2 rows".into() }
        );
        assert!(matches!(verdict_of(&s, "crash:lost > 0"), Verdict::Skipped { .. }));
        assert!(s.cases.iter().filter(|c| c.name.contains('>')).all(|c| c.classname == THRESHOLD_CLASS));
    }

    /// A bench's report: sqlite/naive found duplicates, sqlite/atomic none, postgres/naive broke,
    /// postgres/atomic could not run.
    fn bench_report(rows: bool) -> Report {
        let latency = serde_json::json!({"p50":1000,"p90":2000,"p99":3000,"p999":4000,"max":5000,"count":10});
        let row = |design: &str, failing: &[&str], summary: &str| {
            serde_json::json!({"backend":"sqlite","design":design,"deliveries":10,"status_2xx":10,
                "status_4xx":0,"status_5xx":0,"timeouts":0,"retries":0,"dup_events":1,"extra_applies":1,
                "lost":0,"stale_writes":0,"stale_accounts":0,"ledger":700,"expected":600,
                "latency_us":latency,"latency_actual_us":latency,"throughput_per_s":100.0,"wall_s":1.5,
                "connect_errors":0,"gave_up":0,"ledger_rows":700,"dead_letters":0,"model":null,
                "verdict":{"exactly_once":failing.is_empty(),"latest_state":true,"failing":failing,
                    "summary":summary}})
        };
        let rows = if rows {
            vec![row("naive", &["duplicate"], "1 duplicate"), row("atomic", &[], "exactly once")]
        } else {
            Vec::new()
        };
        let json = serde_json::json!({"kind":"bench","run_id":"bench-test","started_at":"2026-12-01T10:00:00Z",
            "git_sha":null,
            "parameters":{"seed":1,"events":10,"workers":1,"concurrency":2,"rate":null,"work_delay":"0s",
                "timeout":"1s","retry":{"base":"10ms","cap":"1s","max_attempts":10},"isolation":"read-committed",
                "inbox_workers":2,"p_duplicate":0.03,"p_ack_lost":0.02,"p_concurrent":0.01,"p_shuffle":0.1},
            "versions":{"hookbench":"0.1.0","postgres":null,"sqlite":null,"postgres_origin":null},
            "machine":{"cpu":"c","cores":2,"memory_bytes":null,"os":"linux","arch":"x86_64"},
            "rows":rows,
            "skipped":[{"backend":"postgres","design":"atomic","reason":"no database"}],
            "broken":[{"backend":"postgres","design":"naive","reason":"the fleet\ndied"}],
            "witnesses":[{"cell":"sqlite/naive","witnesses":[{"class":"duplicate","id":"evt_7",
                "problem":"applied 2 times","attempts":[]}]}]});
        serde_json::from_value(json).expect("a bench's report")
    }

    #[test]
    fn a_bench_cell_fails_on_a_class_that_fails_it_or_when_it_broke() {
        let s = suite(&bench_report(true));
        assert_eq!((s.name, s.time_s), ("hookbench bench", 3.0));
        let Verdict::Fail { message, details } = verdict_of(&s, "sqlite/naive") else { panic!("a FAIL") };
        assert_eq!(message, "1 duplicate");
        assert_eq!(details[0], "duplicate evt_7: applied 2 times (0 attempts)");
        assert!(details[1].contains("docs/remedies.md#duplicate"), "{details:?}");
        assert_eq!(verdict_of(&s, "sqlite/atomic"), &Verdict::Pass { evidence: "exactly once".into() });
        let Verdict::Fail { message, .. } = verdict_of(&s, "postgres/naive") else { panic!("a FAIL") };
        assert_eq!(message, "the cell broke: the fleet died");
        assert_eq!(verdict_of(&s, "postgres/atomic"), &Verdict::Skipped { reason: "no database".into() });
        assert_eq!(s.cases.iter().find(|c| c.name == "sqlite/atomic").and_then(|c| c.time_s), Some(1.5));
        assert!(s.cases.iter().all(|c| c.name != "nothing judged"));
    }

    #[test]
    fn a_bench_where_no_cell_ran_fails() {
        let s = suite(&bench_report(false));
        let Verdict::Fail { message, .. } = verdict_of(&s, "nothing judged") else { panic!("a FAIL") };
        assert_eq!(message, "no cell could run");
    }
}
