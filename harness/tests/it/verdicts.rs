//! Audits whose verdict must not be vacuous, through the real command line: a receiver that
//! answers 500 to everything fails (exit 1) with never-applied witnesses; one that answers 200 and
//! applies nothing stops at the preflight (exit 2), naming the two causes it cannot tell apart; one
//! that cannot be audited as told (a wrong secret, a redirect, nothing at the path, a body it
//! refuses) stops at the preflight (exit 2) with one line naming the fix, and the
//! report of what ran is still written; a merged sharded audit of a receiver that fails every
//! delivery fails; the poison check judges its clean run too; a check named in `--checks` and
//! skipped exits 2, not 0; and a FAIL before the audit stopped still exits 1.

use std::path::Path;
use std::process::Command;

use hookbench::audit::{Check, Status};
use hookbench::cli::Exit;
use hookbench::judge::Class;
use hookbench::report::render::remedy::for_failure;
use hookbench::report::{CheckFigures, MALFORMED_BODY, Report};
use testkit::SECRET;

use super::audit::{audit_shards, load_figures, merge, python_receiver_holding, run_audit};
use super::stub::{Reply, Stub, free_addr};

/// An audit with a small, quick load (each event tried three times at most) and `args`.
fn audit(args: &[&str]) -> (u8, String, Option<Report>) {
    let quick = ["--events", "200", "--rate", "400", "--quiet", "300ms", "--max-attempts", "3"];
    run_audit(&[&quick[..], args].concat())
}

/// [`audit`] of `url` with the tests' secret, judged through a sink at `sink`, and `args`.
fn audit_sinking(url: &str, sink: &str, args: &[&str]) -> (u8, String, Option<Report>) {
    audit(&[&[url, "--secret", SECRET, "--sink", sink][..], args].concat())
}

fn result(report: &Report, check: Check) -> &hookbench::report::CheckResult {
    let a = report.audit_section().expect("an audit");
    a.checks.iter().find(|c| c.check == check).unwrap_or_else(|| panic!("{check:?} in {:?}", a.checks))
}

#[test]
fn a_receiver_that_answers_500_to_everything_fails_with_never_applied_witnesses() {
    let stub = Stub::start(|_| Reply::Status(500));
    let (sink, url) = (free_addr(), format!("http://{}/webhooks", stub.addr));
    let (code, said, report) =
        audit_sinking(&url, &sink, &["--checks", "sequential-duplicate,parallel-load"]);
    assert_eq!(code, 1, "{said}");
    assert_eq!(said, "audit FAILED: sequential-duplicate, parallel-load");
    let report = report.expect("a report");
    let load = result(&report, Check::ParallelLoad);
    assert_eq!(
        (load.status, load.anomalies.as_slice()),
        (Status::Fail, &[Class::NeverApplied][..]),
        "{load:?}"
    );
    assert!(
        load.evidence.contains("200 events") && load.evidence.contains("0 of 200 acknowledged, 0 applied"),
        "{}",
        load.evidence
    );
    let w = &load.witnesses[0];
    assert!(
        w.problem.starts_with("never-applied: never acknowledged (failed or given up: 3 attempts, last 500)"),
        "{w:?}"
    );
    assert_eq!(w.attempts.len(), 3, "every attempt named: {w:?}");
    let f = load_figures(&report).expect("the load's figures");
    // Every credit never applied (the updates' accounts are not observed without a state query).
    assert!(f.never_applied > 50 && (f.acked, f.applied, f.lost) == (0, 0, 0), "{f:?}");
    assert_eq!(result(&report, Check::SequentialDuplicate).anomalies, [Class::NeverApplied]);
}

#[test]
fn a_receiver_that_acknowledges_and_applies_nothing_stops_at_the_preflight_naming_both_causes() {
    // It may ignore the event (a body it routes nowhere) or the observers may not read its effect:
    // the audit cannot tell which, so it stops (exit 2), never a PASS and never "lost".
    let stub = Stub::start(|_| Reply::Status(200));
    let (sink, url) = (free_addr(), format!("http://{}/webhooks", stub.addr));
    let (code, said, report) =
        audit_sinking(&url, &sink, &["--checks", "parallel-load", "--settle-max", "2s"]);
    assert_eq!(code, 2, "{said}");
    assert!(
        said.contains("acknowledged the preflight credit")
            && said.contains("sink did not see it applied within --settle-max 2s")
            && said.contains("the handler ignores this event")
            && said.contains("the queries do not read its effect"),
        "{said}"
    );
    let a = report.expect("the report of an audit stopped after starting");
    let a = a.audit_section().expect("an audit");
    assert!(a.checks.iter().all(|c| c.status == Status::Skipped), "nothing judged: {:?}", a.checks);
    // The same receiver applying what it acknowledges goes on to its checks.
    let applies = applies_once(sink.clone());
    let url = format!("http://{}/webhooks", applies.addr);
    let (code, said, _) = audit_sinking(&url, &sink, &["--checks", "sequential-duplicate"]);
    assert_eq!((code, said.as_str()), (0, ""));
}

#[test]
fn a_wrong_secret_stops_the_audit_naming_the_secret_and_still_writes_its_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = python_receiver_holding(&dir.path().join("app.db"), "safe", None, &[SECRET]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", dir.path().join("app.db").display());
    let template = super::audit::TEMPLATE;
    let wrong = "whsec_bm90LXRoZS1yZWNlaXZlcnMtc2VjcmV0";
    let (code, said, report) = audit(&[
        &url,
        "--secret",
        wrong,
        "--payload",
        template,
        "--observe-db",
        &observe,
        "--applied-query",
        "SELECT event_id FROM payments",
    ]);
    drop(receiver);
    assert_eq!(code, 2, "{said}");
    assert!(
        said.contains(
            "answers a correctly signed delivery as it answers one signed with a secret it never had (400"
        ),
        "{said}"
    );
    assert!(said.contains("check --secret") && said.contains("--signing standard-webhooks"), "{said}");
    let report = report.expect("the report of an audit stopped after starting");
    let a = report.audit_section().expect("an audit");
    assert!(a.stopped.as_deref().is_some_and(|s| s.contains("--secret")), "{:?}", a.stopped);
    assert!(a.checks.iter().all(|c| c.status == Status::Skipped), "nothing judged: {:?}", a.checks);
}

#[test]
fn bodies_the_example_cannot_parse_stop_the_audit_naming_the_payload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = python_receiver_holding(&dir.path().join("app.db"), "safe", None, &[SECRET]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", dir.path().join("app.db").display());
    // It answers 400 both to a body it cannot parse and to a signature that matches no secret:
    // their words tell them apart.
    let applied = "SELECT event_id FROM payments";
    let (code, said, _) = audit(&[
        &url,
        "--secret",
        SECRET,
        "--payload",
        "stripe",
        "--observe-db",
        &observe,
        "--applied-query",
        applied,
    ]);
    drop(receiver);
    assert_eq!(code, 2, "{said}");
    assert!(
        said.contains("with 400 (\"{\"result\": \"malformed event\"}\")") && said.contains("check --payload"),
        "{said}"
    );
}

/// How a stub answers.
type Decide = dyn Fn(&super::stub::Delivery) -> Reply + Send + Sync;

#[test]
fn a_receiver_that_cannot_be_audited_as_told_stops_at_the_preflight_with_the_fix() {
    let cases: [(&str, Box<Decide>, &str); 4] = [
        (
            "a redirect",
            Box::new(
                |d| if d.path == "/webhooks" { Reply::Redirect("/webhooks/") } else { Reply::Status(200) },
            ),
            "add the trailing slash; audit /webhooks/",
        ),
        (
            "nothing at the path",
            Box::new(|_| Reply::Status(404)),
            "404 at /webhooks to a signed delivery, as at a path that cannot exist: nothing takes webhooks there; check the URL's path",
        ),
        (
            "an event it refuses with a 404 (an unknown account)",
            Box::new(|d| if d.path == "/webhooks" { Reply::Status(404) } else { Reply::Status(405) }),
            "unlike at a path that cannot exist (405): it refuses the event itself",
        ),
        (
            "a body it refuses",
            // Refuses what the tests' secret signed for its body, anything else for its signature.
            Box::new(|d| Reply::Status(if d.correctly_signed { 422 } else { 401 })),
            "refused a correctly signed delivery with 422, unlike one signed with a secret it never had (401): the signature passed and the body was refused; check --payload",
        ),
    ];
    for (what, decide, fix) in cases {
        let stub = Stub::start(decide);
        let (sink, url) = (free_addr(), format!("http://{}/webhooks", stub.addr));
        let (code, said, _) = audit_sinking(&url, &sink, &[]);
        assert_eq!(code, 2, "{what}: {said}");
        assert!(said.contains(fix), "{what}: {said}");
    }
    // The binary says it in one line.
    let stub = Stub::start(|_| Reply::Status(404));
    let out = tempfile::tempdir().expect("tempdir");
    let ran = Command::new(env!("CARGO_BIN_EXE_hookbench"))
        .args(["audit", &format!("http://{}/hooks", stub.addr), "--secret", SECRET, "--sink", &free_addr()])
        .arg("--out")
        .arg(out.path().join("a"))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    // Its step lines (`hookbench audit: preflight`) are progress; the error is one line of its own.
    let said: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("hookbench audit: ")).collect();
    assert_eq!((ran.status.code(), said.len()), (Some(2), 1), "{stderr}");
    assert!(
        said[0].starts_with("hookbench: error: the audit could not run: the receiver answered 404"),
        "{stderr}"
    );
    assert!(stderr.starts_with("hookbench audit: preflight\n"), "{stderr}");
}

/// An empty `applied(event_id)` table in a SQLite file under `dir`, as a receiver that applied
/// nothing would leave it: its `--observe-db` URL.
fn empty_applied_table(dir: &Path) -> String {
    let db = dir.join("app.db");
    let setup = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import sqlite3; sqlite3.connect('{}').execute('CREATE TABLE applied (event_id TEXT)')",
                db.display()
            ),
        ])
        .status()
        .expect("python3");
    assert!(setup.success());
    format!("sqlite://{}", db.display())
}

#[test]
fn shards_whose_attempts_timed_out_merge_and_are_judged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let observe = empty_applied_table(dir.path());
    // Half the load's events answered after the timeout, the rest (and the preflight) refused
    // with a 500: the shards' answer-time histograms hold fewer samples than their attempts.
    let stub = Stub::start(|d| {
        let odd = d.id.contains("_evt_") && d.id.ends_with(['1', '3', '5', '7', '9']);
        if odd { Reply::Late(std::time::Duration::from_millis(300), 200) } else { Reply::Status(500) }
    });
    let url = format!("http://{}/webhooks", stub.addr);
    let shards = dir.path().join("shards");
    let query = ["--applied-query", "SELECT event_id FROM applied"];
    let flags = ["--events", "40", "--max-attempts", "2", "--timeout", "100ms", "--observe-db", &observe];
    audit_shards(&url, &[&flags[..], &query[..]].concat(), &shards);
    let merged = dir.path().join("merged");
    let (merged_ok, printed) = merge(&shards, &merged, &query);
    let err = merged_ok.expect_err("a failed merged audit");
    let exit = err.downcast_ref::<Exit>().expect("an exit status");
    assert_eq!((exit.code(), exit.message.as_str()), (1, "audit FAILED: parallel-load"), "{printed}");
    let report = Report::read_json(&merged.join("report.json")).expect("report.json");
    let Some(CheckFigures::Load(f)) = &result(&report, Check::ParallelLoad).figures else {
        panic!("figures")
    };
    assert!(f.timeouts > 0 && f.status_5xx > 0 && f.acks_lost == 0, "{f:?}");
}

#[test]
fn a_merged_sharded_audit_of_a_receiver_that_fails_every_delivery_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let observe = empty_applied_table(dir.path());
    let stub = Stub::start(|_| Reply::Status(500));
    let url = format!("http://{}/webhooks", stub.addr);
    let shards = dir.path().join("shards");
    let flags = ["--events", "100", "--max-attempts", "2", "--observe-db", &observe];
    audit_shards(&url, &[&flags[..], &["--applied-query", "SELECT event_id FROM applied"]].concat(), &shards);
    let merged = dir.path().join("merged");
    let (merged_ok, printed) = merge(&shards, &merged, &["--applied-query", "SELECT event_id FROM applied"]);
    let err = merged_ok.expect_err("a failed merged audit");
    let exit = err.downcast_ref::<Exit>().expect("an exit status");
    assert_eq!((exit.code(), exit.message.as_str()), (1, "audit FAILED: parallel-load"), "{printed}");
    let report = Report::read_json(&merged.join("report.json")).expect("report.json");
    let load = result(&report, Check::ParallelLoad);
    assert_eq!(load.anomalies, [Class::NeverApplied], "{load:?}");
    assert!(load.evidence.contains("0 of 100 acknowledged, 0 applied"), "{}", load.evidence);
    assert!(
        !load.witnesses[0].attempts.is_empty(),
        "the shards' attempts in the witness: {:?}",
        load.witnesses[0]
    );
}

#[test]
fn the_poison_checks_clean_run_is_judged() {
    let sink = free_addr();
    let applier = sink.clone();
    // Poison (account 7) refused; the poisoned run's events applied once each, however often
    // delivered, and the clean run's applied twice on every delivery.
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    let stub = Stub::start(move |d| match d.account {
        Some(7) => Reply::Status(422),
        _ if d.id.contains("pclean_") => Reply::Apply { sink: applier.clone(), times: 2 },
        _ if seen.lock().is_ok_and(|mut s| s.insert(d.id.clone())) => {
            Reply::Apply { sink: applier.clone(), times: 1 }
        }
        _ => Reply::Status(200),
    });
    let url = format!("http://{}/webhooks", stub.addr);
    let (code, said, report) = audit_sinking(
        &url,
        &sink,
        &["--checks", "poison", "--poison-account", "7", "--poison", "0.1", "--poison-p99-factor", "50"],
    );
    assert_eq!((code, said.as_str()), (1, "audit FAILED: poison"));
    let report = report.expect("a report");
    let poison = result(&report, Check::Poison);
    assert_eq!(poison.anomalies, [Class::Duplicate], "{poison:?}");
    assert!(
        poison.witnesses.iter().all(|w| w.id.contains("pclean_")),
        "the clean run's witnesses: {:?}",
        poison.witnesses
    );
    let Some(CheckFigures::Poison(p)) = &poison.figures else { panic!("poison figures: {poison:?}") };
    assert!(p.clean.dup_events > 0 && p.load.dup_events == 0 && p.poison_applied == 0, "{p:?}");
}

/// A stub that applies each event once through `sink`, however often it is delivered.
fn applies_once(sink: String) -> Stub {
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    Stub::start(move |d| {
        if seen.lock().is_ok_and(|mut s| s.insert(d.id.clone())) {
            Reply::Apply { sink: sink.clone(), times: 1 }
        } else {
            Reply::Status(200)
        }
    })
}

#[test]
fn a_check_named_in_checks_and_skipped_is_not_a_pass() {
    let sink = free_addr();
    let stub = applies_once(sink.clone());
    let url = format!("http://{}/webhooks", stub.addr);
    let (code, said, _) = audit_sinking(&url, &sink, &["--checks", "sequential-duplicate"]);
    assert_eq!((code, said.as_str()), (0, ""), "the check that ran passes alone");
    // The crash check needs --kill-cmd: asked for by name and skipped, the audit could not run.
    let (code, said, report) = audit_sinking(&url, &sink, &["--checks", "sequential-duplicate,crash"]);
    assert_eq!(code, 2, "{said}");
    assert!(
        said.starts_with("the audit could not run: --checks named checks it could not run: crash ("),
        "{said}"
    );
    let report = report.expect("a report");
    assert_eq!(result(&report, Check::SequentialDuplicate).status, Status::Pass);
    assert_eq!(result(&report, Check::Crash).status, Status::Skipped);
}

#[test]
fn a_failure_before_the_audit_stopped_exits_as_a_failure() {
    let stub = Stub::start(|_| Reply::Status(500));
    let (sink, url) = (free_addr(), format!("http://{}/webhooks", stub.addr));
    let health = format!("http://{}/health", stub.addr);
    let (code, said, report) = audit_sinking(
        &url,
        &sink,
        &[
            "--checks",
            "sequential-duplicate,crash",
            "--kill-cmd",
            "false",
            "--start-cmd",
            "true",
            "--health-url",
            &health,
        ],
    );
    assert_eq!(code, 1, "the FAIL stands: {said}");
    assert!(said.starts_with("audit FAILED: sequential-duplicate (then stopped: "), "{said}");
    let report = report.expect("a report");
    assert_eq!(result(&report, Check::SequentialDuplicate).status, Status::Fail);
    assert!(report.audit_section().and_then(|a| a.stopped.as_deref()).is_some(), "stopped recorded");
}

#[test]
fn a_500_on_a_signed_body_that_is_not_json_gets_the_parse_errors_remedy() {
    let sink = free_addr();
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    let to = sink.clone();
    // Verifies, then parses without catching the error (a body with no account is not JSON here:
    // every body hookbench sends names one), then applies each event once.
    let stub = Stub::start(move |d| match (d.correctly_signed, d.account) {
        (false, _) => Reply::Status(400),
        (true, None) => Reply::Status(500),
        (true, Some(_)) if seen.lock().is_ok_and(|mut s| s.insert(d.id.clone())) => {
            Reply::Apply { sink: to.clone(), times: 1 }
        }
        (true, Some(_)) => Reply::Status(200),
    });
    let url = format!("http://{}/webhooks", stub.addr);
    let (code, said, report) =
        audit_sinking(&url, &sink, &["--checks", "hostile-input", "--stall-wait", "1s"]);
    assert_eq!(code, 1, "{said}");
    let report = report.expect("a report");
    let hostile = result(&report, Check::HostileInput);
    let malformed = hostile.witnesses.iter().find(|w| w.attempts.iter().any(|a| a.note == MALFORMED_BODY));
    let malformed = malformed.unwrap_or_else(|| panic!("the malformed body is a witness: {hostile:?}"));
    assert!(malformed.problem.starts_with("not-refused: "), "{malformed:?}");
    let anchors: Vec<&str> =
        for_failure(hostile.check, &hostile.anomalies, &hostile.witnesses).iter().map(|r| r.anchor).collect();
    assert!(
        anchors.contains(&"malformed-body") && !anchors.contains(&"not-refused"),
        "{anchors:?}: {hostile:?}"
    );
}
