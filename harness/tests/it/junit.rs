//! `--junit FILE` and the GitHub step summary, read the way a CI reads them: every JUnit file by
//! junitparser (PyPI, pinned; `scripts/ci-readers/install.sh` installs it, `read_junit.py` beside
//! it prints what it read as JSON), from audits of the Python example receiver in its unsafe and safe
//! modes, a small bench and a merged sharded audit; the step summary by the real binary, given
//! `GITHUB_STEP_SUMMARY` explicitly as a child process's environment.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use clap::Parser;
use hookbench::audit::{Check, Status};
use hookbench::cli::{Cli, run};
use hookbench::report::Report;
use serde_json::Value;
use testkit::SECRET;

use crate::audit::{COUNTS, SECRET_2, TEMPLATE, audit, audit_shards, merge, python_receiver_holding};

pub(crate) const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/ci-readers");

/// The checks the audits here run: quick, and two that the unsafe mode fails.
const CHECKS: &str = "sequential-duplicate,concurrent-copies,parallel-load";
const SMALL: [&str; 4] = ["--events", "100", "--trials", "3"];

/// What junitparser read in `file`: its one suite.
pub(crate) fn junitparser(file: &Path) -> Value {
    let python = format!("{SCRIPTS}/.venv/bin/python");
    assert!(
        Path::new(&python).exists(),
        "junitparser is not installed: run scripts/ci-readers/install.sh ({python} is missing)"
    );
    let out = Command::new(&python)
        .arg(format!("{SCRIPTS}/read_junit.py"))
        .arg(file)
        .output()
        .expect("python runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'junitparser'"),
        "junitparser is not installed: run scripts/ci-readers/install.sh\n{stderr}"
    );
    assert!(out.status.success(), "junitparser could not read {}:\n{stderr}", file.display());
    let read: Value = serde_json::from_slice(&out.stdout).expect("read_junit.py prints JSON");
    let suites = read["suites"].as_array().expect("suites");
    assert_eq!(suites.len(), 1, "one suite per run: {read}");
    suites[0].clone()
}

/// The names of the suite's cases whose result is `result` (pass, failure, skipped, error).
fn cases_with(suite: &Value, result: &str) -> BTreeSet<String> {
    let cases = suite["cases"].as_array().expect("cases");
    cases
        .iter()
        .filter(|c| c["result"] == result)
        .map(|c| c["name"].as_str().expect("a name").to_string())
        .collect()
}

fn case<'a>(suite: &'a Value, name: &str) -> &'a Value {
    let cases = suite["cases"].as_array().expect("cases");
    cases.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no case {name} in {suite}"))
}

/// The report's checks with `status`.
fn checks_with(report: &Report, status: Status) -> BTreeSet<String> {
    let a = report.audit_section().expect("an audit");
    a.checks.iter().filter(|c| c.status == status).map(|c| c.check.as_str().to_string()).collect()
}

/// An audit of the Python example in `mode`, through SQL, with `extra` flags and `--junit` into
/// `dir`: its exit status, report, and what junitparser read.
fn audit_python(dir: &Path, mode: &str, extra: &[&str]) -> (u8, Report, Value) {
    let db = dir.join(format!("{mode}.db"));
    let receiver = python_receiver_holding(&db, mode, None, &[SECRET, SECRET_2]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", db.display());
    let junit = dir.join(format!("{mode}.xml"));
    let junit_s = junit.to_str().expect("utf-8");
    let mut args =
        vec![url.as_str(), "--payload", TEMPLATE, "--observe-db", &observe, "--applied-query", COUNTS];
    args.extend([&SMALL[..], &["--junit", junit_s], extra].concat());
    let (code, report) = audit(&args);
    let report = report.expect("a report");
    (code, report, junitparser(&junit))
}

#[test]
fn an_unsafe_receivers_failing_checks_are_failures_carrying_their_evidence() {
    let dir = tempfile::tempdir().expect("tempdir");
    // out-of-order needs --state-query: skipped, and named, so the exit is still the FAIL's 1.
    let checks = format!("{CHECKS},out-of-order");
    let (code, report, suite) = audit_python(dir.path(), "unsafe", &["--checks", &checks]);
    assert_eq!(code, 1, "{suite}");
    assert_eq!(suite["name"], "hookbench audit");
    assert_eq!(suite["properties"]["run_id"].as_str(), Some(report.header.run_id.as_str()));
    assert_eq!(suite["tests"], 4, "{suite}");
    let failures = cases_with(&suite, "failure");
    assert!(failures.contains("concurrent-copies"), "{failures:?}");
    assert_eq!(failures, checks_with(&report, Status::Fail), "{suite}");
    assert_eq!(suite["failures"].as_u64(), Some(failures.len() as u64));
    for c in &report.audit_section().expect("an audit").checks {
        let read = case(&suite, c.check.as_str());
        assert_eq!(read["classname"], "hookbench.audit");
        if c.status == Status::Fail {
            assert_eq!(read["message"].as_str(), Some(c.evidence.as_str()), "the evidence: {read}");
            let text = read["text"].as_str().expect("the witnesses");
            assert!(text.contains(&c.witnesses[0].id), "the first witness in {text}");
            assert!(text.contains("docs/remedies.md#"), "what to change in {text}");
        }
    }
    assert_eq!(cases_with(&suite, "skipped"), BTreeSet::from(["out-of-order".to_string()]));
    let skipped = case(&suite, "out-of-order");
    assert!(skipped["message"].as_str().is_some_and(|m| m.contains("--state-query")), "{skipped}");
    assert!(cases_with(&suite, "error").is_empty());
}

#[test]
fn a_safe_receivers_file_has_no_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, report, suite) = audit_python(dir.path(), "safe", &["--checks", CHECKS]);
    assert_eq!(code, 0, "{suite}");
    let every: BTreeSet<String> = CHECKS.split(',').map(String::from).collect();
    assert_eq!(cases_with(&suite, "pass"), every, "{suite}");
    assert_eq!(checks_with(&report, Status::Pass), every);
    assert_eq!((suite["failures"].as_u64(), suite["skipped"].as_u64()), (Some(0), Some(0)), "{suite}");
}

#[test]
fn a_junit_file_that_cannot_be_written_is_named_and_the_report_still_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python_receiver_holding(&db, "safe", None, &[SECRET, SECRET_2]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", db.display());
    let missing = dir.path().join("no-such-dir").join("junit.xml");
    let missing_s = missing.to_str().expect("utf-8");
    let args = [&url, "--payload", TEMPLATE, "--observe-db", &observe, "--applied-query", COUNTS];
    let flags =
        ["--secret", SECRET, "--quiet", "300ms", "--checks", "sequential-duplicate", "--junit", missing_s];
    let args = [&args[..], &flags[..]].concat();
    let (code, said, report) = crate::audit::run_audit(&args);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains(&format!("--junit {missing_s}")), "{said}");
    assert!(report.is_some(), "the report is written before the JUnit file");
}

#[test]
fn a_bench_file_has_a_case_per_cell_and_per_threshold() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junit = dir.path().join("bench.xml");
    let run_dir = dir.path().join("run");
    let args = [
        "hookbench",
        "bench",
        "--out",
        run_dir.to_str().expect("utf-8"),
        "--no-progress",
        "--worker-exe",
        env!("CARGO_BIN_EXE_hookbench"),
        "--backends",
        "sqlite",
        "--designs",
        "naive,version-guard",
        "--events",
        "500",
        "--rate",
        "3000",
        "--fail-on",
        "version-guard:dup_events>0",
        "--junit",
        junit.to_str().expect("utf-8"),
    ];
    let cli = Cli::try_parse_from(args).expect("valid arguments");
    let mut table = Vec::new();
    run(cli, &mut table).unwrap_or_else(|e| panic!("{e:#}\n{}", String::from_utf8_lossy(&table)));
    let report = Report::read_json(&run_dir.join("report.json")).expect("report.json");
    let suite = junitparser(&junit);
    assert_eq!(suite["name"], "hookbench bench");
    assert_eq!(suite["tests"], 3, "two cells and the threshold: {suite}");
    let failing: BTreeSet<String> = report
        .rows()
        .iter()
        .filter(|r| r.verdict.as_ref().is_some_and(|v| !v.failing.is_empty()))
        .map(|r| format!("{}/{}", r.backend, r.design))
        .collect();
    assert!(failing.contains("sqlite/naive"), "the naive design doubles: {failing:?}");
    assert_eq!(cases_with(&suite, "failure"), failing, "{suite}");
    let naive = case(&suite, "sqlite/naive");
    let summary =
        report.rows().iter().find(|r| r.design.as_str() == "naive").and_then(|r| r.verdict.as_ref());
    assert_eq!(naive["message"].as_str(), summary.map(|v| v.summary.as_str()), "{naive}");
    assert_eq!(naive["classname"], "hookbench.bench");
    // The version guard keeps every account on its latest plan, as well as applying once.
    assert!(cases_with(&suite, "pass").contains("sqlite/version-guard"), "{suite}");
    let threshold = case(&suite, "version-guard:dup_events>0");
    assert_eq!(
        (&threshold["classname"], &threshold["result"]),
        (&Value::from("hookbench.threshold"), &Value::from("pass"))
    );
}

#[test]
fn a_merged_audits_file_judges_the_whole_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python_receiver_holding(&db, "safe", None, &[SECRET, SECRET_2]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", db.display());
    let load = ["--events", "100", "--rate", "400", "--quiet", "300ms", "--payload", TEMPLATE];
    let observer = ["--observe-db", observe.as_str(), "--applied-query", COUNTS];
    let shards = dir.path().join("shards");
    audit_shards(&url, &[&["--secret", SECRET_2][..], &load[..], &observer[..]].concat(), &shards);
    let junit = dir.path().join("merged.xml");
    let flags = [&observer[..], &["--junit", junit.to_str().expect("utf-8")]].concat();
    let (result, printed) = merge(&shards, &dir.path().join("merged"), &flags);
    assert!(result.is_ok(), "{result:?}\n{printed}");
    let suite = junitparser(&junit);
    assert_eq!(suite["name"], "hookbench audit");
    assert_eq!(
        cases_with(&suite, "pass"),
        BTreeSet::from([Check::ParallelLoad.as_str().to_string()]),
        "{suite}"
    );
    assert_eq!(suite["tests"], 1, "{suite}");
}

#[test]
fn the_step_summary_keeps_what_was_there_and_gets_the_grid() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python_receiver_holding(&db, "safe", None, &[SECRET, SECRET_2]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", db.display());
    let summary = dir.path().join("step-summary.md");
    std::fs::write(&summary, "an earlier step's line\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_hookbench"))
        .args(["audit", &url, "--no-progress", "--secret", SECRET, "--secret", SECRET_2])
        .args(["--payload", TEMPLATE, "--observe-db", &observe, "--applied-query", COUNTS])
        .args(["--checks", "sequential-duplicate", "--quiet", "300ms", "--out"])
        .arg(dir.path().join("audit"))
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .expect("the audit runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    let md = std::fs::read_to_string(&summary).expect("the step summary");
    assert!(md.starts_with("an earlier step's line\n\n## hookbench audit `"), "{md}");
    assert!(md.contains("| check | verdict | evidence |"), "{md}");
    assert!(md.contains("| sequential-duplicate | PASS |"), "{md}");
    assert!(md.contains("0 FAIL, 0 WARN, 1 PASS, 0 SKIPPED."), "{md}");
}

#[test]
fn junit_is_refused_for_a_shard_which_reaches_no_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junit = dir.path().join("shard.xml");
    let observe = format!("sqlite://{}", dir.path().join("app.db").display());
    // Refused before anything is sent: no receiver listens at the URL.
    let args = [
        "http://127.0.0.1:9/webhooks",
        "--secret",
        SECRET,
        "--observe-db",
        &observe,
        "--applied-query",
        COUNTS,
        "--shard",
        "1/2",
        "--id-prefix",
        "junit",
        "--account-base",
        "1000",
        "--junit",
        junit.to_str().expect("utf-8"),
    ];
    let (code, said, report) = crate::audit::run_audit(&args);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("--junit needs a verdict") && said.contains("hookbench merge"), "{said}");
    assert!(report.is_none() && !junit.exists());
    // The same shard without --junit gets past the refusal, to the unreachable receiver.
    let (code, said, _) = crate::audit::run_audit(&args[..args.len() - 2]);
    assert_eq!(code, 2, "{said}");
    assert!(!said.contains("--junit"), "{said}");
}
