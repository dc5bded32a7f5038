use super::*;
use crate::report::model::{CheckResult, RateFigure, TrialsFigures};

/// A report of an audit whose concurrent-copies failed, read from the JSON an audit wrote (a
/// Slack receiver's, its checks replaced).
fn failed_audit(signing: &str) -> Report {
    let mut report: Report = serde_json::from_str(include_str!("../../tests/fixtures/repro-audit.json"))
        .expect("the fixture is an audit's report.json");
    if let crate::report::model::RunBody::Audit { audit } = &mut report.body {
        audit.signing = signing.to_string();
        audit.checks = vec![CheckResult {
            figures: Some(CheckFigures::Trials(TrialsFigures {
                sent: 20,
                copies: 4,
                rate: RateFigure::default(),
            })),
            status: Status::Fail,
            ..CheckResult::skipped(Check::ConcurrentCopies, "20 of 20 trials doubled")
        }];
    }
    report
}

#[test]
fn hookbench_bodies_and_a_template_are_rebuilt_from_their_text() {
    let body = skeleton(&Payload::Hookbench).expect("hookbench's bodies");
    assert!(body.contains(SENTINELS.0) && body.contains(&SENTINELS.2.to_string()), "{body}");
    let text = r#"{"credit": {"event_id": "{{id}}", "customer": "cus_{{account}}", "amount": "{{amount}}"},
                   "update": {"event_id": "{{id}}"}}"#;
    let template =
        crate::wire::payload::Template::from_text(std::path::Path::new("t.json"), text).expect("a template");
    let body = skeleton(&Payload::Template(template)).expect("a template copying its values");
    assert!(body.contains(&format!("cus_{}", SENTINELS.1)), "{body}");
}

#[test]
fn a_script_is_written_for_a_fail_and_holds_no_secret() {
    let report = failed_audit("standard-webhooks");
    let script = python_script(
        &report,
        Check::ConcurrentCopies,
        &Payload::Hookbench,
        "SELECT event_id FROM t",
        Form::Script,
    )
    .expect("a script");
    assert!(script.starts_with("#!/usr/bin/env python3\n# hookbench audit "), "{}", &script[..200]);
    assert!(!script.contains("__HOOKBENCH_EMBED__") && script.contains("\\\"copies\\\":4"));
    // The script reads its secret only from the environment (tests/it/repro.rs holds that a
    // written script contains none of the audit's).
    assert!(script.contains("os.environ.get(\"HOOKBENCH_SECRET\""));
}

#[test]
fn what_cannot_be_reproduced_is_refused_saying_why() {
    let report = failed_audit("github");
    let err = python_script(&report, Check::ConcurrentCopies, &Payload::Hookbench, "q", Form::Script)
        .expect_err("stripe");
    assert!(err.to_string().contains("standard-webhooks, stripe, none only"), "{err}");
    let report = failed_audit("standard-webhooks");
    let err = python_script(&report, Check::SequentialDuplicate, &Payload::Hookbench, "q", Form::Script)
        .expect_err("not run");
    assert!(err.to_string().contains("did not run"), "{err}");
    let err = python_script(&report, Check::OutOfOrder, &Payload::Hookbench, "q", Form::Script)
        .expect_err("not yet");
    assert!(
        err.to_string().contains(
            "concurrent-copies, sequential-duplicate, lost-ack, race-window, semantic-duplicate only"
        ),
        "{err}"
    );
}

#[test]
fn the_terminal_names_the_command_for_each_reproducible_fail_only() {
    let dir = std::path::Path::new("reports/audit");
    let report = failed_audit("standard-webhooks");
    assert_eq!(
        commands(&report, dir),
        ["hookbench repro reports/audit --check concurrent-copies --out repro-concurrent-copies.py"]
    );
    assert!(commands(&failed_audit("github"), dir).is_empty(), "a scheme the scripts do not sign");
    let mut passed = failed_audit("standard-webhooks");
    if let crate::report::model::RunBody::Audit { audit } = &mut passed.body {
        audit.checks[0].status = Status::Pass;
    }
    assert!(commands(&passed, dir).is_empty(), "nothing to reproduce");
}
