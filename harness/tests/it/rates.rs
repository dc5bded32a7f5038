//! Races as rates, against the Python example (examples/receivers/python-sqlite) through the real
//! command line: its unsafe mode (a 50 ms window between its check and its insert) doubles in some
//! of the concurrent trials and at small spacings of the race window, and the evidence gives k of
//! n with the interval; its safe mode doubles in none, and the evidence states the bound. The
//! crash check counts the deliveries in flight at each kill, and a crash audit whose kills caught
//! nothing in flight is not a PASS.

use hookbench::audit::{Check, Status};
use hookbench::report::{CheckFigures, CheckResult, Report, SpacingsFigures, TrialsFigures};

use super::audit::{COUNTS, load_figures, python_receiver_holding, template_audit};
use super::audit_faults::{crash, python};
use testkit::SECRET;

/// Few trials keep the tests quick; the defaults (20) are for users.
const TRIALS: &str = "4";

fn result(report: &Report, check: Check) -> &CheckResult {
    let a = report.audit_section().expect("an audit section");
    a.checks.iter().find(|c| c.check == check).unwrap_or_else(|| panic!("{check:?} in the report"))
}

fn trials(report: &Report) -> &TrialsFigures {
    match &result(report, Check::ConcurrentCopies).figures {
        Some(CheckFigures::Trials(t)) => t,
        other => panic!("no trials figures: {other:?}"),
    }
}

fn window(report: &Report) -> &SpacingsFigures {
    match &result(report, Check::RaceWindow).figures {
        Some(CheckFigures::Spacings(w)) => w,
        other => panic!("no race window figures: {other:?}"),
    }
}

/// The Python example in `mode`, audited with the race checks and the parallel load.
fn race_audit(mode: &str) -> (u8, Report) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python_receiver_holding(&db, mode, None, &[SECRET, super::audit::SECRET_2]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let races =
        ["--checks", "concurrent-copies,race-window,parallel-load", "--race-window", "--trials", TRIALS];
    template_audit(&url, &db, COUNTS, &races)
}

#[test]
fn an_unsafe_receiver_doubles_in_some_trials_and_the_evidence_says_how_often() {
    let (code, report) = race_audit("unsafe");
    assert_eq!(code, 1);
    let copies = result(&report, Check::ConcurrentCopies);
    assert_eq!(copies.status, Status::Fail, "{copies:?}");
    let t = trials(&report);
    assert_eq!((t.sent, t.copies), (4, 2));
    assert!(t.rate.doubled > 0 && t.rate.trials == 4, "{t:?}");
    let words = t.rate.rate().describe("trials", "doubled");
    assert!(copies.evidence.ends_with(&words) && words.contains("95 % CI"), "{}", copies.evidence);

    let race = result(&report, Check::RaceWindow);
    assert_eq!(race.status, Status::Fail, "{race:?}");
    let w = window(&report);
    let spacings: Vec<f64> = w.spacings.iter().map(|s| s.spacing_ms).collect();
    assert_eq!(spacings, [0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
    // Copies 0 ms apart land well inside the unsafe handler's 50 ms window.
    let together = &w.spacings[0].rate;
    assert!(together.doubled > 0 && together.low.is_some_and(|l| l > 0.0), "{together:?}");
    assert!(race.evidence.contains("doubled by spacing: 0 ms "), "{}", race.evidence);

    let load = result(&report, Check::ParallelLoad);
    let concurrent = load_figures(&report).and_then(|l| l.concurrent).expect("the load's concurrent copies");
    assert!(concurrent.trials > 0, "{concurrent:?}");
    let words = concurrent.rate().describe("events", "doubled");
    assert!(load.evidence.contains(&format!("concurrent copies: {words}")), "{}", load.evidence);
}

#[test]
fn a_safe_receiver_doubles_in_none_and_the_evidence_states_the_bound() {
    let (code, report) = race_audit("safe");
    assert_eq!(code, 0);
    let copies = result(&report, Check::ConcurrentCopies);
    assert_eq!(copies.status, Status::Pass, "{copies:?}");
    let t = trials(&report);
    assert_eq!((t.rate.doubled, t.rate.trials), (0, 4), "{t:?}");
    // 0 of 4: Wilson's upper end is 3.84 / 7.84, 49 %.
    assert!(copies.evidence.ends_with("0 of 4 trials doubled: under 49 % at 95 %"), "{}", copies.evidence);

    let race = result(&report, Check::RaceWindow);
    assert_eq!(race.status, Status::Pass, "{race:?}");
    let w = window(&report);
    assert!(w.spacings.iter().all(|s| s.rate.doubled == 0 && s.rate.trials == 4), "{w:?}");
    assert!(
        race.evidence.contains("no pair doubled at any spacing (0 of 28 pairs doubled: under 13 % at 95 %)"),
        "{}",
        race.evidence
    );
}

/// A crash audit of the Python example with `extra` flags: its result and figures.
fn crash_audit(mode: &str, receiver_extra: &str, extra: &[&str]) -> Report {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let receiver = python(&db, mode, receiver_extra);
    let mut flags = receiver.flags();
    flags.extend(["--checks", "crash"]);
    flags.extend_from_slice(extra);
    template_audit(&receiver.url, &db, COUNTS, &flags).1
}

#[test]
fn the_crash_check_counts_the_deliveries_in_flight_at_each_kill() {
    // The slow mode holds one lock 50 ms a delivery (20 a second at most): at 100 a second a
    // backlog forms at once, so the kills find deliveries waiting on it.
    let report = crash_audit("slow", "--delay 0.05", &["--events", "100", "--rate", "100", "--kills", "2"]);
    let c = result(&report, Check::Crash);
    let f = crash(&report);
    assert_eq!(f.restarts.len(), 2);
    assert!(f.in_flight > 0, "{:?}", f.restarts);
    assert_eq!(f.in_flight, f.restarts.iter().map(|r| r.in_flight).sum::<u64>());
    assert_eq!(c.status, Status::Pass, "{c:?}");
    assert_eq!(f.kills_to_first_loss, None);
    let each: Vec<String> = f.restarts.iter().map(|r| r.in_flight.to_string()).collect();
    let words = format!("2 kills, {} deliveries in flight at them ({})", f.in_flight, each.join(", "));
    assert!(c.evidence.contains(&words), "{}", c.evidence);
    // A kill that caught nothing says so between the counts and the losses.
    assert!(c.evidence.contains(", 0 lost;"), "{}", c.evidence);
}

#[test]
fn a_crash_audit_whose_kills_caught_nothing_in_flight_is_not_a_pass() {
    // A trickle: 4 events 0.5 s apart, each answered in milliseconds; a kill almost always falls
    // between deliveries.
    let report = crash_audit("safe", "", &["--events", "4", "--rate", "2", "--kills", "1"]);
    let c = result(&report, Check::Crash);
    let f = crash(&report);
    if f.in_flight == 0 {
        assert_eq!(c.status, Status::Skipped, "{c:?}");
        assert!(c.evidence.starts_with("not a PASS: no kill caught a delivery in flight"), "{}", c.evidence);
    } else {
        assert_eq!(c.status, Status::Pass, "{c:?}");
    }
}

#[test]
fn trials_out_of_their_bounds_are_refused_naming_the_flag() {
    use clap::Parser;
    for bad in ["0", "10001", "many"] {
        let args = ["hookbench", "audit", "http://127.0.0.1:9/webhooks", "--trials", bad];
        let err = hookbench::cli::Cli::try_parse_from(args).expect_err("refused");
        assert!(err.to_string().contains("--trials"), "{bad}: {err}");
    }
    let args = ["hookbench", "audit", "http://127.0.0.1:9/webhooks", "--trials", "10000", "--race-window"];
    assert!(hookbench::cli::Cli::try_parse_from(args).is_ok(), "the top of the range is taken");
}
