//! Updates judged for duplicates, and semantic duplicates, against the Python receiver
//! (examples/receivers/python-sqlite) through the real command line: an update handler that runs
//! twice fails with a witness naming the update's id while a safe one passes, and one change sent
//! under two ids warns for a receiver that dedupes on the event id (exit 0; with `--strict`, a
//! FAIL and exit 1) and passes for one that dedupes on the object.

use std::path::Path;
use std::process::Command;

use hookbench::audit::{Check, Status};
use hookbench::report::Report;
use testkit::SECRET;

use super::audit::{
    COUNTS, Receiver, SECRET_2, TEMPLATE, audit_shards, merge, run_audit, start, status, template_audit,
};

/// One row per update handler call, as `--log-updates` writes them.
const UPDATE_CALLS: &str = "SELECT event_id, count(*) FROM update_log GROUP BY event_id";
const STATE: &str = "SELECT customer, version FROM subscriptions";

/// The Python receiver on `dir/app.db` in `mode`, logging its update handler's calls.
fn receiver(dir: &Path, mode: &str) -> Receiver {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/python-sqlite/receiver.py");
    let db = dir.join("app.db");
    let mut cmd = Command::new("python3");
    cmd.arg(script).args(["--db", db.to_str().expect("utf-8"), "--mode", mode, "--port", "0"]);
    cmd.args(["--secret", SECRET, "--secret", SECRET_2, "--log-updates"]);
    start(cmd)
}

/// Audits the receiver in `mode` with `checks`, observed through SQLite, with `extra` flags.
fn audit_python(mode: &str, checks: &str, extra: &[&str]) -> (u8, Report) {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receiver(dir.path(), mode);
    let url = format!("http://{}/webhooks", r.addr);
    let mut flags = vec!["--checks", checks, "--probe-events", "3"];
    flags.extend_from_slice(extra);
    template_audit(&url, &dir.path().join("app.db"), COUNTS, &flags)
}

fn result(report: &Report, check: Check) -> &hookbench::report::CheckResult {
    let a = report.audit_section().expect("audit");
    a.checks.iter().find(|c| c.check == check).unwrap_or_else(|| panic!("{check:?} in the report"))
}

const UPDATES: [&str; 4] = ["--update-applied-query", UPDATE_CALLS, "--state-query", STATE];

#[test]
fn an_update_handler_run_twice_fails_with_the_updates_id() {
    let (code, report) = audit_python("double-update", "out-of-order,parallel-load", &UPDATES);
    // The load's updates too, each named by its workload id; its credits applied once.
    let load = result(&report, Check::ParallelLoad);
    assert_eq!(load.status, Status::Fail, "{}", load.evidence);
    assert_eq!(load.anomalies, [hookbench::judge::Class::Duplicate], "{}", load.evidence);
    assert!(load.witnesses.iter().all(|w| w.observed.contains("sql updates: applied 2 times")), "{load:?}");
    assert_eq!(code, 1);
    let ooo = result(&report, Check::OutOfOrder);
    assert_eq!(ooo.status, Status::Fail, "{}", ooo.evidence);
    assert!(ooo.anomalies.contains(&hookbench::judge::Class::Duplicate), "{:?}", ooo.anomalies);
    let w = &ooo.witnesses[0];
    assert!(w.id.contains("ooo_"), "the update's own id: {w:?}");
    assert_eq!(w.problem, "duplicate: applied 2 times", "{w:?}");
    assert!(w.observed.contains("sql updates: applied 2 times"), "{w:?}");
    // 3 accounts of 6 versions, every handler call twice: every update a duplicate.
    assert!(ooo.evidence.contains("18 duplicate (18 extra applies)"), "{}", ooo.evidence);
}

#[test]
fn a_safe_update_handler_passes_though_it_skips_stale_updates() {
    let (code, report) = audit_python("safe", "out-of-order", &UPDATES);
    let ooo = result(&report, Check::OutOfOrder);
    assert_eq!((code, ooo.status), (0, Status::Pass), "{}", ooo.evidence);
    assert!(ooo.evidence.contains("18 of 18 acknowledged, 18 applied; 0 duplicate"), "{}", ooo.evidence);
}

#[test]
fn an_update_query_of_the_wrong_shape_or_without_a_database_is_exit_2_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receiver(dir.path(), "safe");
    let url = format!("http://{}/webhooks", r.addr);
    let observe = format!("sqlite://{}", dir.path().join("app.db").display());
    let base = ["--secret", SECRET, "--payload", TEMPLATE, "--applied-query", COUNTS];
    for (extra, said) in [
        (
            vec!["--observe-db", &observe, "--update-applied-query", "SELECT 1, 2, 3"],
            "--update-applied-query returned rows of 3 columns",
        ),
        (
            vec!["--observe-db", &observe, "--update-applied-query", "DELETE FROM update_log"],
            "--update-applied-query",
        ),
        (vec!["--sink", "127.0.0.1:0", "--update-applied-query", UPDATE_CALLS], "need --observe-db"),
    ] {
        let args: Vec<&str> = [&[url.as_str()][..], &base, &extra].concat();
        let (code, message, _) = run_audit(&args);
        assert_eq!(code, 2, "{extra:?}: {message}");
        assert!(message.contains(said), "{extra:?}: {message}");
    }
}

#[test]
fn a_merged_sharded_audit_judges_update_applies_with_merges_own_update_query() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = receiver(dir.path(), "double-update");
    let url = format!("http://{}/webhooks", r.addr);
    let observe = format!("sqlite://{}", dir.path().join("app.db").display());
    let load = ["--events", "200", "--rate", "400", "--quiet", "300ms", "--payload", TEMPLATE];
    let queries = ["--applied-query", COUNTS, "--update-applied-query", UPDATE_CALLS, "--state-query", STATE];
    let observer = [&["--observe-db", observe.as_str()][..], &queries].concat();
    let shards = dir.path().join("shards");
    audit_shards(&url, &[&["--secret", SECRET_2][..], &load[..], &observer[..]].concat(), &shards);
    // Without the update query the shards recorded: refused, naming it.
    let without = ["--observe-db", observe.as_str(), "--applied-query", COUNTS, "--state-query", STATE];
    let (refused, _) = merge(&shards, &dir.path().join("refused"), &without);
    let refused = format!("{:#}", refused.expect_err("a shard recorded another update query"));
    assert!(
        refused.contains("--update-applied-query") && refused.contains("merge was given none"),
        "{refused}"
    );
    let merged = dir.path().join("merged");
    let (result, printed) = merge(&shards, &merged, &observer);
    let load = Report::read_json(&merged.join("report.json")).expect("report.json");
    let load = result_of(&load, Check::ParallelLoad);
    assert_eq!(load.status, Status::Fail, "{printed}");
    assert!(result.is_err(), "a FAIL exits 1: {printed}");
    assert_eq!(load.anomalies, [hookbench::judge::Class::Duplicate], "{}", load.evidence);
    assert!(load.witnesses[0].observed.contains("sql updates: applied 2 times"), "{:?}", load.witnesses);
}

fn result_of(report: &Report, check: Check) -> hookbench::report::CheckResult {
    result(report, check).clone()
}

#[test]
fn without_the_update_query_an_update_handler_run_twice_is_not_seen() {
    // The applied query counts payments only: nothing shows the update handler's calls, and the
    // final state is right, so the check passes; the update query is what makes it visible.
    let (code, report) = audit_python("double-update", "out-of-order", &["--state-query", STATE]);
    assert_eq!((code, status(&report, Check::OutOfOrder)), (0, Status::Pass));
}

#[test]
fn a_receiver_that_dedupes_on_the_event_id_warns_of_semantic_duplicates_and_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let metrics = dir.path().join("audit.prom");
    let (code, report) =
        audit_python("safe", "semantic-duplicate", &["--metrics", metrics.to_str().expect("utf-8")]);
    let s = result(&report, Check::SemanticDuplicate);
    assert_eq!((code, s.status), (0, Status::Warn), "{}", s.evidence);
    assert!(s.evidence.contains("3 semantic-duplicate (of 3 pairs)"), "{}", s.evidence);
    assert_eq!(s.anomalies, [hookbench::judge::Class::SemanticDuplicate]);
    let w = &s.witnesses[0];
    assert!(w.id.contains("sem_0000 and ") && w.id.contains("sem_0001"), "both ids: {w:?}");
    assert_eq!(w.attempts.len(), 2, "both events' attempts: {w:?}");
    assert!(w.observed.matches("sql: applied 1 times").count() == 2, "both applied: {w:?}");
    // WARN in the terminal table, in report.md with its witnesses, and in the metrics.
    let table = report.table();
    let row = table.lines().find(|l| l.starts_with("semantic-duplicate")).expect("its row");
    assert_eq!(row.split_whitespace().nth(1), Some("WARN"), "{table}");
    let md = hookbench::report::audit_markdown(&report.header, report.audit_section().expect("audit"));
    assert!(
        md.contains("| semantic-duplicate | **WARN** ([witnesses](#semantic-duplicate-witnesses))"),
        "{md}"
    );
    assert!(md.contains("## semantic-duplicate: witnesses") && md.contains("sem_0001"), "{md}");
    let prom = std::fs::read_to_string(&metrics).expect("the metrics");
    let warn = r#"hookbench_audit_check{check="semantic-duplicate",status="WARN"} 1"#;
    assert!(prom.contains(warn), "{prom}");
}

#[test]
fn with_strict_a_semantic_duplicate_fails_and_exits_1() {
    let (code, report) = audit_python("safe", "semantic-duplicate", &["--strict"]);
    let s = result(&report, Check::SemanticDuplicate);
    assert_eq!((code, s.status), (1, Status::Fail), "{}", s.evidence);
    assert!(s.witnesses[0].problem.starts_with("semantic-duplicate: "), "{:?}", s.witnesses[0]);
}

#[test]
fn a_receiver_that_dedupes_on_the_object_passes_the_semantic_duplicate_check() {
    let (code, report) = audit_python("dedupe-object", "semantic-duplicate", &["--strict"]);
    let s = result(&report, Check::SemanticDuplicate);
    assert_eq!((code, s.status), (0, Status::Pass), "{}", s.evidence);
    assert!(s.evidence.contains("6 of 6 acknowledged, 3 applied"), "{}", s.evidence);
    assert!(s.evidence.contains("0 lost") && s.evidence.contains("0 semantic-duplicate"), "{}", s.evidence);
}
