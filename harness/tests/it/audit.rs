//! `hookbench audit` against receivers it did not start, through the real command line: the
//! repository's own `serve` workers on Postgres and SQLite, observed through their tables as a
//! stranger's would be (the designs that must fail do, the ones that must pass do), and a Python
//! receiver with a schema and body of its own (examples/receivers/python-sqlite), through SQL and
//! through a sink its side effect calls.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use clap::Parser;
use hookbench::audit::{Check, Status};
use hookbench::cli::{Cli, Exit, run};
use hookbench::history::Line;
use hookbench::report::{CheckFigures, LoadFigures, Report};
use receivers::design::Design;
use receivers::store::Backend;
use testkit::{Db, SECRET};

/// A second secret, for the rotation check.
pub(crate) const SECRET_2: &str = "whsec_c2Vjb25kLXNlY3JldC1mb3Itcm90YXRpb24=";
pub(crate) const APPLIED: &str = "SELECT event_id, count(*) FROM credit_ledger GROUP BY event_id";
pub(crate) const STATE: &str = "SELECT id, plan_version FROM accounts";

/// A receiver process, killed when dropped.
pub(crate) struct Receiver {
    child: Child,
    /// Where it listens.
    pub(crate) addr: String,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd`, which prints `{"listening": "127.0.0.1:PORT", ...}` once it listens.
pub(crate) fn start(mut cmd: Command) -> Receiver {
    let mut child = cmd.stdout(Stdio::piped()).stdin(Stdio::null()).spawn().expect("receiver starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("first line");
    let json: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let addr = json["listening"].as_str().expect("listening").to_string();
    Receiver { child, addr }
}

fn serve(design: Design, db: &Db) -> Receiver {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hookbench"));
    cmd.args(["serve", "--design", design.as_str(), "--database-url", &db.url, "--listen", "127.0.0.1:0"]);
    cmd.args(["--secret", &format!("{SECRET} {SECRET_2}"), "--body-timeout", "1s", "--work-delay", "20ms"]);
    start(cmd)
}

fn python_receiver(db: &Path, mode: &str, sink: Option<&str>) -> Receiver {
    python_receiver_holding(db, mode, sink, &[SECRET, SECRET_2])
}

/// The Python example on `db` in `mode`, holding `secrets`, its side effect calling `sink`.
pub(crate) fn python_receiver_holding(
    db: &Path,
    mode: &str,
    sink: Option<&str>,
    secrets: &[&str],
) -> Receiver {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/python-sqlite/receiver.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).args(["--db", db.to_str().expect("utf-8"), "--mode", mode, "--port", "0"]);
    for s in secrets {
        cmd.args(["--secret", s]);
    }
    if let Some(url) = sink {
        cmd.args(["--sink", url]);
    }
    start(cmd)
}

/// Runs `hookbench audit` with `args`; its exit status (0, 1 or 2) and, when it ran, its report.
/// The audit's history holds the parallel load's every attempt and every event's fate, and
/// `explain` names its duplicates.
fn history_holds_the_load(dir: &Path, r: &Report) {
    let file = r.header.history.as_ref().expect("the audit's history");
    assert!(dir.join(&file.file).exists(), "{file:?}");
    let Some(load) = load_figures(r) else { return };
    let (mut attempts, mut events) = (0, 0);
    hookbench::history::read(dir, &mut |line| match line {
        Line::Attempt(a) if a.cell == "audit/parallel-load" => attempts += 1,
        Line::Event(e) if e.cell == "audit/parallel-load" => events += 1,
        _ => {}
    })
    .expect("the history reads back");
    assert_eq!((attempts, events), (load.deliveries, load.events), "{load:?}");
    if load.dup_events > 0 {
        let cli = Cli::try_parse_from(
            ["hookbench", "explain", dir.to_str().expect("utf-8"), "--anomaly", "duplicate"].iter(),
        )
        .expect("arguments parse");
        let mut out = Vec::new();
        run(cli, &mut out).expect("explain runs");
        let out = String::from_utf8(out).expect("utf-8");
        assert!(
            out.contains("audit/parallel-load") && out.contains("2 times (applied more than once)"),
            "{out}"
        );
    }
}

/// Runs `hookbench audit` with the tests' two secrets and a small, quick load, and `args`; its exit
/// status and, when one was written, its report.
pub(crate) fn audit(args: &[&str]) -> (u8, Option<Report>) {
    let common =
        ["--secret", SECRET, "--secret", SECRET_2, "--events", "200", "--rate", "400", "--quiet", "300ms"];
    let (code, _, report) = run_audit(&[&common[..], args].concat());
    (code, report)
}

/// Runs `hookbench audit` with `args` alone into a temporary directory: its exit status, what it
/// said on failing, and, when one was written, its report (with report.md and report.html beside
/// it, and a history that holds the load).
pub(crate) fn run_audit(args: &[&str]) -> (u8, String, Option<Report>) {
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("audit");
    let base = ["hookbench", "audit", "--no-progress", "--out", dir.to_str().expect("utf-8")];
    let cli = Cli::try_parse_from(base.iter().chain(args)).expect("arguments parse");
    let mut printed = Vec::new();
    let (code, said) = match run(cli, &mut printed) {
        Ok(()) => (0, String::new()),
        Err(e) => {
            let exit = e.downcast_ref::<Exit>().unwrap_or_else(|| panic!("not an exit status: {e:#}"));
            (exit.code(), exit.message.clone())
        }
    };
    let report = Report::read_json(&dir.join("report.json")).ok();
    if let Some(r) = &report {
        for file in ["report.md", "report.html"] {
            assert!(dir.join(file).exists(), "{file} written");
        }
        assert!(r.audit_section().is_some(), "an audit section");
        history_holds_the_load(&dir, r);
    }
    eprintln!("{}{said}", String::from_utf8_lossy(&printed));
    (code, said, report)
}

/// Two shard processes of an audit of `url` with `flags` (each with the tests' first secret), on
/// one `--start-at`, into `shards/1` and `shards/2`; each must write its partial result.
pub(crate) fn audit_shards(url: &str, flags: &[&str], shards: &Path) {
    let start_at = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(2)).to_string();
    let children: Vec<_> = (1..=2)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_hookbench"))
                .args(["audit", url, "--no-progress", "--secret", SECRET])
                .args(flags)
                .args(["--shard", &format!("{i}/2"), "--start-at", &start_at])
                .arg("--out")
                .arg(shards.join(i.to_string()))
                .output()
                .expect("a shard runs")
        })
        .collect();
    for c in &children {
        let said = format!("{}{}", String::from_utf8_lossy(&c.stdout), String::from_utf8_lossy(&c.stderr));
        assert!(c.status.success() && said.contains("partial result"), "{said}");
    }
}

/// `hookbench merge` of the shards under `shards` into `merged`, with `flags` (the queries the
/// shards were given: merge runs only its own): how it ended, and what it printed.
pub(crate) fn merge(shards: &Path, merged: &Path, flags: &[&str]) -> (anyhow::Result<()>, String) {
    let args =
        ["hookbench", "merge", shards.to_str().expect("utf-8"), "--out", merged.to_str().expect("utf-8")];
    let cli =
        Cli::try_parse_from(args.iter().chain(&["--quiet", "300ms"]).chain(flags)).expect("arguments parse");
    let mut printed = Vec::new();
    let result = run(cli, &mut printed);
    (result, String::from_utf8_lossy(&printed).into_owned())
}

/// Every check passed, but those that disturb the receiver and the race window, which need flags
/// of their own and were skipped.
/// `semantic`: what the semantic-duplicate check gives: WARN for a receiver that dedupes on the
/// event id, as the checklist says, on bodies that carry the object's id; SKIPPED on bodies that
/// carry none (hookbench's own format).
fn assert_every_check_passed(v: &[(Check, Status)], semantic: Status) {
    let disturbing = [Check::Crash, Check::Poison, Check::Capacity, Check::RetryStorm, Check::RaceWindow];
    for (check, status) in v {
        let expected = match check {
            c if disturbing.contains(c) => Status::Skipped,
            Check::SemanticDuplicate => semantic,
            _ => Status::Pass,
        };
        assert_eq!(*status, expected, "{check:?} in {v:?}");
    }
}

pub(crate) fn verdicts(report: &Report) -> Vec<(Check, Status)> {
    report.audit_section().expect("audit").checks.iter().map(|c| (c.check, c.status)).collect()
}

/// The parallel load's figures, when it ran.
pub(crate) fn load_figures(report: &Report) -> Option<&LoadFigures> {
    match report.audit_section()?.figures(Check::ParallelLoad)? {
        CheckFigures::Load(l) => Some(l),
        _ => None,
    }
}

pub(crate) fn status(report: &Report, check: Check) -> Status {
    verdicts(report)
        .into_iter()
        .find(|(c, _)| *c == check)
        .map_or_else(|| panic!("{check:?} in the report"), |(_, s)| s)
}

/// The repository's designs, audited black-box: naive and check-then-insert fail the duplicate
/// checks, atomic passes them and fails out-of-order, version-guard and inbox pass everything.
fn audit_the_designs(backend: Backend) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for design in
        [Design::Naive, Design::CheckThenInsert, Design::Atomic, Design::VersionGuard, Design::Inbox]
    {
        let db = rt.block_on(Db::fresh(backend));
        let receiver = serve(design, &db);
        let url = format!("http://{}/webhooks/acme", receiver.addr);
        let (code, report) = audit(&[
            &url,
            "--observe-db",
            &db.url,
            "--applied-query",
            APPLIED,
            "--state-query",
            STATE,
            "--copies",
            "4",
            "--stall-wait",
            "5s",
        ]);
        let report = report.expect("a report");
        let v = verdicts(&report);
        let context = format!("{backend} {design}: {v:?}");
        match design {
            Design::Naive => {
                assert_eq!(code, 1, "{context}");
                assert_eq!(status(&report, Check::SequentialDuplicate), Status::Fail, "{context}");
                assert_eq!(status(&report, Check::ConcurrentCopies), Status::Fail, "{context}");
                let a = report.audit_section().expect("audit");
                let seq = a.checks.iter().find(|c| c.check == Check::SequentialDuplicate).expect("seq");
                assert!(
                    seq.witnesses[0].problem.contains("duplicate: applied 2 times"),
                    "{:?}",
                    seq.witnesses[0]
                );
                assert_eq!(seq.witnesses[0].attempts.len(), 2, "both attempts named");
            }
            Design::CheckThenInsert => {
                assert_eq!(code, 1, "{context}");
                assert_eq!(status(&report, Check::SequentialDuplicate), Status::Pass, "{context}");
                assert_eq!(status(&report, Check::ConcurrentCopies), Status::Fail, "{context}");
            }
            Design::Atomic => {
                assert_eq!(code, 1, "{context}");
                for check in
                    [Check::SequentialDuplicate, Check::ConcurrentCopies, Check::LostAck, Check::LateReplay]
                {
                    assert_eq!(status(&report, check), Status::Pass, "{check:?}: {context}");
                }
                assert_eq!(status(&report, Check::OutOfOrder), Status::Fail, "{context}");
            }
            _ => {
                assert_eq!(code, 0, "{context}");
                assert_every_check_passed(&v, Status::Skipped);
                assert_eq!(v.len(), Check::ALL.len(), "{context}");
            }
        }
        drop(receiver);
        rt.block_on(db.cleanup());
    }
}

#[test]
fn the_designs_on_sqlite_fail_and_pass_the_checks_they_should() {
    audit_the_designs(Backend::Sqlite);
}

#[test]
fn the_designs_on_postgres_fail_and_pass_the_checks_they_should() {
    audit_the_designs(Backend::Postgres);
}

pub(crate) const TEMPLATE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/python-sqlite/template.json");

/// Audits the Python receiver on `dir/app.db` in `mode` through the SQL observer, with `applied`
/// as the applied query and `extra` flags.
fn python_sql_audit(dir: &Path, mode: &str, applied: &str, extra: &[&str]) -> (u8, Report) {
    let db = dir.join("app.db");
    let receiver = python_receiver(&db, mode, None);
    let url = format!("http://{}/webhooks", receiver.addr);
    template_audit(&url, &db, applied, extra)
}

/// An audit of the Python example at `url` with its template, observed in its SQLite file `db`
/// through `applied`, with `extra` flags: the exit status and the report.
pub(crate) fn template_audit(url: &str, db: &Path, applied: &str, extra: &[&str]) -> (u8, Report) {
    let observe = format!("sqlite://{}", db.display());
    let mut args = vec![url, "--payload", TEMPLATE, "--observe-db", &observe, "--applied-query", applied];
    args.extend_from_slice(extra);
    let (code, report) = audit(&args);
    (code, report.expect("a report"))
}

pub(crate) const COUNTS: &str = "SELECT event_id, count(*) FROM payments GROUP BY event_id";
const EVERY_CHECK: [&str; 6] =
    ["--state-query", "SELECT customer, version FROM subscriptions", "--copies", "4", "--stall-wait", "8s"];

#[test]
fn a_python_receiver_in_safe_mode_passes_every_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, report) = python_sql_audit(dir.path(), "safe", COUNTS, &EVERY_CHECK);
    let v = verdicts(&report);
    assert_eq!(code, 0, "{v:?}");
    assert_every_check_passed(&v, Status::Warn);
}

#[test]
fn a_python_receiver_in_unsafe_mode_fails_and_names_its_duplicates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, report) = python_sql_audit(dir.path(), "unsafe", COUNTS, &EVERY_CHECK);
    assert_eq!(code, 1);
    let a = report.audit_section().expect("audit");
    let copies = a.checks.iter().find(|c| c.check == Check::ConcurrentCopies).expect("concurrent copies");
    assert_eq!(copies.status, Status::Fail);
    let w = &copies.witnesses[0];
    assert!(w.problem.starts_with("duplicate: applied ") && w.observed.contains("sql: applied"), "{w:?}");
    assert_eq!(w.attempts.len(), 4, "every copy named");
    let ports: std::collections::BTreeSet<&str> = w.attempts.iter().map(|a| a.connection.as_str()).collect();
    assert_eq!(ports.len(), 4, "each copy on a connection of its own: {ports:?}");
    assert_eq!(status(&report, Check::OutOfOrder), Status::Fail);
}

#[test]
fn a_sink_sees_side_effects_outside_the_database() {
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
    let sink = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().expect("tempdir");
    // The safe receiver passes every check that ran, and exits 2 all the same: out-of-order was
    // named in --checks and could not run (a FAIL, the unsafe one's, comes first: 1).
    for (mode, expected) in [("unsafe", 1), ("safe", 2)] {
        let receiver = python_receiver(
            &dir.path().join(format!("{mode}.db")),
            mode,
            Some(&format!("http://{sink}/charges")),
        );
        let url = format!("http://{}/webhooks", receiver.addr);
        let checks = "sequential-duplicate,concurrent-copies,lost-ack,out-of-order,parallel-load";
        let (code, report) =
            audit(&[&url, "--payload", TEMPLATE, "--sink", &sink, "--checks", checks, "--copies", "4"]);
        let report = report.expect("a report");
        assert_eq!(code, expected, "{mode}: {:?}", verdicts(&report));
        // Without a state query the out-of-order check cannot run, and says why.
        let a = report.audit_section().expect("audit");
        let ooo = a.checks.iter().find(|c| c.check == Check::OutOfOrder).expect("out of order");
        assert_eq!(ooo.status, Status::Skipped);
        assert!(ooo.evidence.contains("--state-query"), "{}", ooo.evidence);
        if mode == "safe" {
            let others = a.checks.iter().filter(|c| c.check != Check::OutOfOrder);
            assert!(others.clone().all(|c| c.status == Status::Pass), "{:?}", verdicts(&report));
        }
        if mode == "unsafe" {
            let copies = a.checks.iter().find(|c| c.check == Check::ConcurrentCopies).expect("copies");
            assert!(copies.witnesses[0].observed.contains("sink: applied"), "{:?}", copies.witnesses[0]);
        }
    }
}

#[test]
fn an_unreachable_receiver_or_a_bad_query_is_exit_2_with_one_line() {
    let (code, report) = audit(&["http://127.0.0.1:1/webhooks", "--sink", "127.0.0.1:0"]);
    assert_eq!((code, report.is_none()), (2, true));
    // Its run directory in a temporary one, not in the checkout's reports/.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_hookbench"))
        .args(["audit", "http://127.0.0.1:1/webhooks", "--secret", SECRET, "--sink", "127.0.0.1:0"])
        .arg("--out")
        .arg(dir.path().join("audit"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unreachable"), "{stderr}");

    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let db = rt.block_on(Db::fresh(Backend::Sqlite));
    let receiver = serve(Design::Atomic, &db);
    let url = format!("http://{}/webhooks/acme", receiver.addr);
    let (code, _) =
        audit(&[&url, "--observe-db", &db.url, "--applied-query", "SELECT nope FROM credit_ledger"]);
    assert_eq!(code, 2);
    let (code, _) = audit(&[&url, "--observe-db", &db.url, "--applied-query", "SELECT 1, 2, 3"]);
    assert_eq!(code, 2, "a query of the wrong shape stops the audit");
    let (code, _) = audit(&[&url]);
    assert_eq!(code, 2, "no observer");
}

/// A `--retention-cmd` that empties `tables` of the Python example's database in `dir`.
fn purge_cmd(dir: &Path, tables: &[&str]) -> String {
    let deletes: String = tables.iter().map(|t| format!("c.execute('DELETE FROM {t}'); ")).collect();
    let db = dir.join("app.db");
    format!("python3 -c \"import sqlite3; c = sqlite3.connect('{}'); {deletes}c.commit()\"", db.display())
}

#[test]
fn a_purge_before_the_late_replay_lets_an_event_apply_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The user's purge job, too eager: it forgets every key.
    let purge = purge_cmd(dir.path(), &["handled_events"]);
    let checks = [
        "--checks",
        "sequential-duplicate,late-replay",
        "--retention-cmd",
        &purge,
        "--replay-after",
        "100ms",
    ];
    // One row per applied payment: the applied query's other shape.
    let (code, report) = python_sql_audit(dir.path(), "safe", "SELECT event_id FROM payments", &checks);
    assert_eq!(code, 1, "{:?}", verdicts(&report));
    assert_eq!(status(&report, Check::SequentialDuplicate), Status::Pass);
    let a = report.audit_section().expect("audit");
    let replay = a.checks.iter().find(|c| c.check == Check::LateReplay).expect("late replay");
    assert_eq!(replay.status, Status::Fail);
    assert!(replay.witnesses[0].problem.contains("duplicate: applied 2 times"), "{:?}", replay.witnesses[0]);
    assert!(replay.evidence.contains("--retention-cmd"), "{}", replay.evidence);
}

#[test]
fn a_purge_of_the_evidence_itself_is_not_judged_as_a_replay_applied_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A purge that removes the rows the applied query counts as well as the keys: a replay applied
    // again would then look applied once.
    let purge = purge_cmd(dir.path(), &["handled_events", "payments"]);
    let checks = ["--checks", "sequential-duplicate,late-replay", "--retention-cmd", &purge];
    let (code, report) = python_sql_audit(dir.path(), "safe", "SELECT event_id FROM payments", &checks);
    assert_eq!(code, 2, "late-replay named and not run: {:?}", verdicts(&report));
    let a = report.audit_section().expect("audit");
    let replay = a.checks.iter().find(|c| c.check == Check::LateReplay).expect("late replay");
    assert_eq!(replay.status, Status::Skipped, "{replay:?}");
    assert!(replay.evidence.contains("evidence changed before the replay"), "{}", replay.evidence);
}

#[test]
fn an_audit_that_passes_but_breaches_a_threshold_exits_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let metrics = dir.path().join("audit.prom");
    let checks = [
        "--checks",
        "sequential-duplicate,parallel-load",
        "--fail-on",
        "parallel-load:p50_ms>0",
        "--fail-on",
        "parallel-load:dup_events>0",
        "--metrics",
        metrics.to_str().expect("utf-8"),
    ];
    let (code, report) = python_sql_audit(dir.path(), "safe", COUNTS, &checks);
    assert_eq!(verdicts(&report).iter().filter(|(_, s)| *s == Status::Pass).count(), 2);
    assert_eq!(code, hookbench::cli::ExitStatus::Threshold as u8, "{:?}", report.header.thresholds);
    let [p50, dup] = &report.header.thresholds[..] else {
        panic!("two outcomes: {:?}", report.header.thresholds)
    };
    assert_eq!((p50.breached.len(), p50.breached[0].0.as_str()), (1, "parallel-load"));
    assert_eq!((dup.rows, dup.breached.len()), (1, 0));
    // The metrics carry each check's status and the load's figures, as the report has them.
    let text = std::fs::read_to_string(&metrics).expect("--metrics written");
    let load = load_figures(&report).expect("the load's figures");
    for line in [
        "hookbench_audit_check{check=\"parallel-load\",status=\"PASS\"} 1".to_string(),
        "hookbench_audit_check{check=\"parallel-load\",status=\"FAIL\"} 0".to_string(),
        format!("hookbench_audit_deliveries{{check=\"parallel-load\"}} {}", load.deliveries),
        "hookbench_audit_dup_events{check=\"parallel-load\"} 0".to_string(),
        "hookbench_audit_failed_checks{check=\"audit\"} 0".to_string(),
    ] {
        assert!(text.lines().any(|l| l.starts_with(&line)), "no {line:?} in\n{text}");
    }
}

/// The parallel load of an audit split over two shard processes, then `hookbench merge`, which
/// asks the receiver's database once: the same load as an unsharded audit's, judged whole.
#[test]
fn a_sharded_audit_merged_judges_the_whole_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python_receiver(&db, "safe", None);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", db.display());
    let state = "SELECT customer, version FROM subscriptions";
    // The load audit() sends (200 events at 400/s), in the receiver's own body format.
    let load = ["--events", "200", "--rate", "400", "--quiet", "300ms", "--payload", TEMPLATE];
    let observer = ["--observe-db", observe.as_str(), "--applied-query", COUNTS, "--state-query", state];
    // The same load unsharded, for its figures.
    let mut whole = vec![url.as_str(), "--checks", "parallel-load", "--payload", TEMPLATE];
    whole.extend(observer);
    let (code, report) = audit(&whole);
    let report = report.expect("a report");
    let unsharded = load_figures(&report).expect("load figures").clone();
    assert_eq!(code, 0, "{unsharded:?}");
    let shards = dir.path().join("shards");
    audit_shards(&url, &[&["--secret", SECRET_2][..], &load[..], &observer[..]].concat(), &shards);
    let merged = dir.path().join("merged");
    let (result, printed) = merge(&shards, &merged, &observer);
    assert!(result.is_ok(), "{result:?}\n{printed}");
    let report = Report::read_json(&merged.join("report.json")).expect("report.json");
    assert_eq!(verdicts(&report), vec![(Check::ParallelLoad, Status::Pass)], "{printed}");
    let f = load_figures(&report).expect("load figures");
    // Every event once, in one shard or the other: the unsharded load's events and attempts.
    assert_eq!((f.events, f.deliveries), (unsharded.events, unsharded.deliveries), "{printed}");
    assert_eq!((f.dup_events, f.lost, f.never_applied, f.stale_accounts), (0, 0, 0, Some(0)), "{printed}");
    assert_eq!(report.header.shards.as_ref().map(|s| s.count), Some(2));
    assert!(printed.contains("merged 2 shards") && printed.contains("parallel-load"), "{printed}");
    history_holds_the_load(&merged, &report);
    let md = std::fs::read_to_string(merged.join("report.md")).expect("report.md");
    assert!(md.contains("Merged from 2 shards"), "{md}");
}
