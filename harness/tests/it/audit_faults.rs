//! The audit's checks that disturb the receiver, through the real command line against receivers
//! started and killed only through the shell commands a user would give (`--kill-cmd`,
//! `--start-cmd`, `--health-url`): hookbench's own `serve` workers on Postgres and SQLite (split
//! loses events to a kill, atomic and inbox do not; inbox dead-letters poison; a short ramp), and
//! the Python example (kills, poison, a retry storm, and a capacity that follows its handler's
//! delay).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hookbench::audit::{Check, Status};
use hookbench::report::{
    AuditSection, CapacityFigures, CheckFigures, CheckResult, CrashFigures, PoisonFigures, Report,
    StormFigures,
};
use receivers::design::Design;
use receivers::store::Backend;
use testkit::{Db, SECRET};

use super::audit::{APPLIED, COUNTS, SECRET_2, TEMPLATE, audit, status, verdicts};

/// The poison check's latency rule, loosened: these tests share two cores with other tests, and
/// judge whether poison is applied, dead-lettered and keeps the rest flowing, not how fast.
const LOOSE_P99: [&str; 2] = ["--poison-p99-factor", "50"];

/// An account whose balance cannot take another credit: every credit to it is poison to
/// hookbench's receivers (the side effect refuses to overflow).
const FULL_ACCOUNT: &str = "4242";
const FILL_ACCOUNT: &str = "INSERT INTO accounts (id, credits) VALUES (4242, 9223372036854775807)";
const PYTHON_DEAD_LETTERS: &str = "SELECT event_id FROM dead_letters";
const INBOX_DEAD_LETTERS: &str =
    "SELECT webhook_id FROM webhook_inbox WHERE processed_at IS NULL AND attempts >= 5";

/// A receiver run by a start script that writes its pid file; killed through it when dropped.
pub(crate) struct Supervised {
    _dir: tempfile::TempDir,
    kill_cmd: String,
    start_cmd: String,
    health_url: String,
    pub(crate) url: String,
}

impl Supervised {
    /// Writes `command` (run in the background, its pid kept) as the start script, runs it and
    /// waits until `/healthz` answers on `port`.
    fn start(command: &str, port: u16, path: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let pid = dir.path().join("app.pid");
        let script = dir.path().join("start.sh");
        let text = format!("#!/bin/sh\n{command} >/dev/null 2>&1 &\necho $! > {}\n", pid.display());
        std::fs::write(&script, text).expect("start script");
        let start_cmd = format!("sh {}", script.display());
        let kill_cmd = format!("kill -9 $(cat {})", pid.display());
        let s = Self {
            _dir: dir,
            kill_cmd,
            start_cmd,
            health_url: format!("http://127.0.0.1:{port}/healthz"),
            url: format!("http://127.0.0.1:{port}{path}"),
        };
        assert!(Command::new("sh").arg("-c").arg(&s.start_cmd).status().expect("sh").success());
        wait_healthy(port);
        s
    }

    /// The crash flags.
    pub(crate) fn flags(&self) -> Vec<&str> {
        let mut flags = self.commands();
        flags.extend(["--health-url", &self.health_url]);
        flags
    }

    /// The kill and start commands alone, as a reproduction script takes them.
    pub(crate) fn commands(&self) -> Vec<&str> {
        vec!["--kill-cmd", &self.kill_cmd, "--start-cmd", &self.start_cmd]
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        let _ = Command::new("sh").arg("-c").arg(&self.kill_cmd).status();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("addr").port()
}

fn wait_healthy(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.write_all(b"GET /healthz HTTP/1.0\r\nhost: x\r\n\r\n");
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200") {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing healthy on port {port}");
}

/// `hookbench serve` of `design` on `db`, its side effect taking 30 ms after split's key.
fn serve(design: Design, db: &Db) -> Supervised {
    let port = free_port();
    let command = format!(
        "'{}' serve --design {} --database-url '{}' --listen 127.0.0.1:{port} --secret '{SECRET} {SECRET_2}' --effect-delay 30ms --work-delay 20ms",
        env!("CARGO_BIN_EXE_hookbench"),
        design.as_str(),
        db.url
    );
    Supervised::start(&command, port, "/webhooks/acme")
}

/// The Python example on `db` in `mode`, with `extra` arguments.
pub(crate) fn python(db: &Path, mode: &str, extra: &str) -> Supervised {
    let port = free_port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/python-sqlite/receiver.py");
    let command = format!(
        "python3 '{script}' --db '{}' --secret {SECRET} --secret {SECRET_2} --mode {mode} --port {port} {extra}",
        db.display()
    );
    Supervised::start(&command, port, "/webhooks")
}

fn section(report: &Report) -> &AuditSection {
    report.audit_section().expect("an audit section")
}

fn result(report: &Report, check: Check) -> &CheckResult {
    section(report).checks.iter().find(|c| c.check == check).expect("the check in the report")
}

pub(crate) fn crash(report: &Report) -> &CrashFigures {
    match section(report).figures(Check::Crash) {
        Some(CheckFigures::Crash(c)) => c,
        other => panic!("no crash figures: {other:?}"),
    }
}

fn poison(report: &Report) -> &PoisonFigures {
    match section(report).figures(Check::Poison) {
        Some(CheckFigures::Poison(p)) => p,
        other => panic!("no poison figures: {other:?}"),
    }
}

fn capacity(report: &Report) -> &CapacityFigures {
    match section(report).figures(Check::Capacity) {
        Some(CheckFigures::Capacity(c)) => c,
        other => panic!("no capacity figures: {other:?}"),
    }
}

fn storm(report: &Report) -> &StormFigures {
    match section(report).figures(Check::RetryStorm) {
        Some(CheckFigures::Storm(s)) => s,
        other => panic!("no storm figures: {other:?}"),
    }
}

/// Split loses events to kills; atomic and inbox do not; inbox also dead-letters poison, and
/// atomic holds a short ramp.
fn serve_under_faults(backend: Backend) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for design in [Design::Split, Design::Atomic, Design::Inbox] {
        let db = rt.block_on(Db::fresh(backend));
        rt.block_on(db.execute(FILL_ACCOUNT));
        let receiver = serve(design, &db);
        let mut args = vec![receiver.url.as_str(), "--observe-db", &db.url, "--applied-query", APPLIED];
        args.extend(receiver.flags());
        // 400 events/s, twice the default: with 20 ms of work a delivery, about nine in flight,
        // so a kill catches some (at 200/s a SQLite inbox run saw none at any of three kills,
        // a SKIPPED crash check, on 2026-12-02).
        args.extend(["--rate", "400"]);
        match design {
            Design::Inbox => args.extend([
                "--checks",
                "crash,poison",
                "--poison-account",
                FULL_ACCOUNT,
                "--poison",
                "0.1",
                "--dead-letter-query",
                INBOX_DEAD_LETTERS,
                LOOSE_P99[0],
                LOOSE_P99[1],
            ]),
            Design::Atomic => args.extend([
                "--checks",
                "crash,capacity",
                "--ramp",
                "100..300",
                "--ramp-steps",
                "2",
                "--step-duration",
                "1s",
            ]),
            _ => args.extend(["--checks", "crash"]),
        }
        let (code, report) = audit(&args);
        let report = report.expect("a report");
        let context = format!("{backend} {design}: {:?}", verdicts(&report));
        let figures = crash(&report);
        let crash = result(&report, Check::Crash);
        assert_eq!(figures.restarts.len(), 3, "three kills: {context}");
        assert!(figures.restarts.iter().all(|r| r.took_ms > 0.0), "{context}");
        if design == Design::Split {
            assert_eq!(code, 1, "{context}");
            assert_eq!(crash.status, Status::Fail, "{context}");
            assert!(figures.load.lost > 0, "{context}");
            let w = &crash.witnesses[0];
            assert!(w.problem.starts_with("lost:"), "{w:?}");
            assert!(
                w.attempts.iter().any(|a| a.outcome == "receiver killed"),
                "the kill in its timeline: {w:?}"
            );
            assert!(w.attempts.iter().any(|a| a.outcome == "200"), "acknowledged: {w:?}");
        } else {
            assert_eq!(code, 0, "{context}; {}", crash.evidence);
            assert!(verdicts(&report).iter().all(|(_, s)| *s == Status::Pass), "{context}");
        }
        if design == Design::Inbox {
            let p = poison(&report);
            assert!(p.poison_events > 0, "{p:?}");
            assert_eq!(
                (p.clean.dup_events, p.clean.lost, p.clean.never_applied),
                (0, 0, 0),
                "the clean run judged: {p:?}"
            );
            assert_eq!((p.poison_applied, p.dead_lettered), (0, Some(p.poison_events)), "{p:?}");
        }
        if design == Design::Atomic {
            let c = capacity(&report);
            assert_eq!(c.steps.len(), 2, "{c:?}");
            assert_eq!(c.capacity_per_s, Some(300.0), "{c:?}");
        }
        drop(receiver);
        rt.block_on(db.cleanup());
    }
}

#[test]
fn serve_on_sqlite_under_kills_poison_and_a_ramp() {
    serve_under_faults(Backend::Sqlite);
}

#[test]
fn serve_on_postgres_under_kills_poison_and_a_ramp() {
    serve_under_faults(Backend::Postgres);
}

fn python_audit(db: &Path, receiver: &Supervised, extra: &[&str]) -> (u8, Report) {
    super::audit::template_audit(&receiver.url, db, COUNTS, extra)
}

#[test]
fn a_python_receiver_survives_kills_poison_and_a_retry_storm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python(&db, "safe", "--refuse-account 7");
    let mut extra = receiver.flags();
    extra.extend([
        "--checks",
        "crash,poison,retry-storm",
        "--poison-account",
        "7",
        "--poison",
        "0.1",
        "--dead-letter-query",
        PYTHON_DEAD_LETTERS,
        LOOSE_P99[0],
        LOOSE_P99[1],
        "--outage",
        "10m",
        "--time-scale",
        "1000",
        "--storm-events",
        "50",
    ]);
    let (code, report) = python_audit(&db, &receiver, &extra);
    let v = verdicts(&report);
    assert_eq!(code, 0, "{v:?}: {:?}", section(&report).checks);
    let p = poison(&report);
    assert_eq!((p.poison_applied, p.dead_lettered), (0, Some(p.poison_events)), "{p:?}");
    let s = storm(&report);
    // Svix's schedule: the retries due at 5 s and 5 min fail within the 10 min outage; the one at
    // 35 min finds the receiver back, every event of the batch at once.
    assert_eq!(s.attempts, 50 * 5, "{s:?}");
    assert!(s.peak_per_s.is_some_and(|p| p >= 50) && s.after_recovery >= 50, "{s:?}");
    assert_eq!((s.dup_events, s.lost, s.unacknowledged), (0, 0, 0), "{s:?}");
}

#[test]
fn a_receiver_without_dead_letters_fails_the_poison_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python(&db, "unsafe", "--refuse-account 7");
    let extra = ["--checks", "poison", "--poison-account", "7", "--poison", "0.1", "--max-attempts", "2"];
    let extra = [&extra[..], &["--dead-letter-query", PYTHON_DEAD_LETTERS]].concat();
    let (code, report) = python_audit(&db, &receiver, &extra);
    assert_eq!(code, 1);
    let poison = result(&report, Check::Poison);
    assert_eq!(poison.status, Status::Fail);
    assert!(poison.witnesses.iter().any(|w| w.problem.contains("dead-letter store")), "{poison:?}");
}

#[test]
fn a_poison_template_is_refused_and_never_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    // The example's own shape, with an amount its handler refuses: text, not a number of cents.
    let template = std::fs::read_to_string(TEMPLATE).expect("the example's template");
    let poison_file = dir.path().join("poison.json");
    std::fs::write(&poison_file, template.replace("\"{{amount}}\"", "\"{{amount}} cents\"")).expect("write");
    let receiver = python(&db, "safe", "");
    let template = poison_file.to_str().expect("utf-8");
    let extra = ["--checks", "poison", "--poison-template", template, "--poison", "0.1", "--events", "100"];
    let extra = [&extra[..], &LOOSE_P99[..]].concat();
    let (code, report) = python_audit(&db, &receiver, &extra);
    let p = poison(&report).clone();
    assert_eq!(code, 0, "{:?}: {p:?}", section(&report).checks);
    assert!(p.poison_events > 0 && p.poison.contains("poison.json"), "{p:?}");
    assert_eq!((p.poison_applied, p.dead_lettered), (0, None), "{p:?}");
    assert!(p.load.status_4xx >= p.poison_events, "each poison event refused: {p:?}");
}

/// The capacity of the slow mode's handler, holding its one lock `delay` seconds per delivery.
fn capacity_with_delay(delay: &str) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python(&db, "slow", &format!("--delay {delay}"));
    let extra = [
        "--checks",
        "capacity",
        "--ramp",
        "4..40",
        "--ramp-steps",
        "10",
        "--step-duration",
        "2s",
        "--timeout",
        "1s",
    ];
    let (_, report) = python_audit(&db, &receiver, &extra);
    let c = capacity(&report).clone();
    assert!(!c.steps.is_empty() && c.steps.len() <= 10, "{c:?}");
    assert_eq!(status(&report, Check::Capacity), Status::Pass, "{c:?}");
    c.capacity_per_s.expect("a capacity")
}

#[test]
fn capacity_follows_the_handlers_delay() {
    // 100 ms and 50 ms: 10 and 20 deliveries a second at most, measured in steps of 4 a second,
    // with a timeout long enough that a busy test machine's hiccups do not decide a step.
    let slow = capacity_with_delay("0.1");
    let fast = capacity_with_delay("0.05");
    // Half the delay, about twice the capacity.
    assert!(fast >= 1.5 * slow, "100 ms: {slow}/s, 50 ms: {fast}/s");
}

#[test]
fn fault_flags_that_do_not_go_together_are_refused() {
    let refused = |extra: &[&str], names: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hookbench"))
            .args(["audit", "http://127.0.0.1:1/webhooks", "--secret", SECRET, "--sink", "127.0.0.1:0"])
            .args(extra)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(names.iter().all(|n| stderr.contains(n)), "{extra:?}: {stderr}");
    };
    refused(&["--kill-cmd", "true"], &["--start-cmd", "--health-url"]);
    refused(&["--ramp", "200..100"], &["--ramp", "ramps down"]);
    refused(&["--poison-account", "7", "--poison-template", "x.json"], &["--poison-template"]);
    refused(&["--poison-account", "7", "--poison", "1.5"], &["--poison"]);
}
