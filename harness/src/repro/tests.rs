use super::*;
use crate::report::model::{AttemptLog, Witness};
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
fn a_script_is_written_for_a_fail_and_holds_no_secret() {
    let report = failed_audit("standard-webhooks");
    let script = script(
        &report,
        Check::ConcurrentCopies,
        &Payload::Hookbench,
        &applied("SELECT event_id FROM t"),
        Form::Script,
    )
    .expect("a script");
    assert!(script.starts_with("#!/usr/bin/env python3\n# hookbench audit "), "{}", &script[..200]);
    assert!(!script.contains("__HOOKBENCH_EMBED__") && script.contains("\\\"copies\\\":4"));
    // A password in the audited URL's userinfo is not written either.
    let mut with_password = failed_audit("standard-webhooks");
    if let crate::report::model::RunBody::Audit { audit } = &mut with_password.body {
        audit.url = "http://hook:s3cret-pass@127.0.0.1:8000/webhooks".to_string();
    }
    let text = super::script(
        &with_password,
        Check::ConcurrentCopies,
        &Payload::Hookbench,
        &applied("q"),
        Form::Node,
    )
    .expect("a script");
    assert!(!text.contains("s3cret-pass") && text.contains("hook:***@127.0.0.1"), "the password is hidden");
    // The script reads its secret only from the environment (tests/it/repro.rs holds that a
    // written script contains none of the audit's).
    assert!(script.contains("os.environ.get(\"HOOKBENCH_SECRET\""));
}

#[test]
fn what_cannot_be_reproduced_is_refused_saying_why() {
    // A scheme this version does not know (a report from a later one).
    let report = failed_audit("acme");
    let err = script(&report, Check::ConcurrentCopies, &Payload::Hookbench, &applied("q"), Form::Script)
        .expect_err("an unknown scheme");
    assert!(err.to_string().contains("zoom, twitch, none only"), "{err}");
    let report = failed_audit("standard-webhooks");
    let err = script(&report, Check::SequentialDuplicate, &Payload::Hookbench, &applied("q"), Form::Script)
        .expect_err("not run");
    assert!(err.to_string().contains("did not run"), "{err}");
    let err = script(&report, Check::ParallelLoad, &Payload::Hookbench, &applied("q"), Form::Script)
        .expect_err("not yet");
    assert!(
        err.to_string().contains(
            "concurrent-copies, sequential-duplicate, lost-ack, race-window, out-of-order, semantic-duplicate, late-replay, hostile-input, crash, poison only"
        ),
        "{err}"
    );
}

/// [`failed_audit`] signed as Standard Webhooks, its one FAIL `check`'s, with no figures.
fn failed_as(check: Check) -> Report {
    let mut report = failed_audit("standard-webhooks");
    if let crate::report::model::RunBody::Audit { audit } = &mut report.body {
        audit.checks[0].check = check;
        audit.checks[0].figures = None;
    }
    report
}

/// Poison is written for an audit that named its poison account, which the script's poison events
/// credit; a poison template's body is not rebuilt, and the terminal names no command for it.
#[test]
fn poison_is_reproduced_for_a_poison_account_only() {
    let mut report = failed_as(Check::Poison);
    let dir = std::path::Path::new("reports/audit");
    assert!(commands(&report, dir).is_empty(), "a template's poison: nothing to name");
    let err = script(&report, Check::Poison, &Payload::Hookbench, &applied("q"), Form::Script)
        .expect_err("a template's poison");
    assert!(err.to_string().contains("--poison-account"), "{err}");
    if let crate::report::model::RunBody::Audit { audit } = &mut report.body {
        audit.repro.poison_account = Some(7);
    }
    assert_eq!(
        commands(&report, dir),
        ["hookbench repro reports/audit --check poison --out repro-poison.py"]
    );
    let queries = Queries { dead_letters: Some("SELECT id FROM parked".into()), ..applied("q") };
    let text = script(&report, Check::Poison, &Payload::Hookbench, &queries, Form::Script).expect("a script");
    assert!(text.contains("\\\"poison_account\\\":7") && text.contains("SELECT id FROM parked"));
}

/// The applied query alone.
fn applied(sql: &str) -> Queries {
    Queries { applied: Some(sql.to_string()), ..Queries::default() }
}

/// Without an applied query, a script judges by each account's change in balance, else in rows;
/// never a semantic duplicate, whose two events share an account; and never with no query at all.
#[test]
fn a_script_judges_by_the_applied_query_else_by_each_accounts_change() {
    let q = |applied: Option<&str>, balance: Option<&str>, count: Option<&str>| Queries {
        applied: applied.map(str::to_string),
        balance: balance.map(str::to_string),
        count: count.map(str::to_string),
        ..Queries::default()
    };
    let by = |check, queries: &Queries| needed_queries(check, queries).map(|(e, _)| e);
    let all = q(Some("a"), Some("b"), Some("c"));
    assert_eq!(by(Check::ConcurrentCopies, &all).ok(), Some(Some(Evidence::Applied("a".into()))));
    let aggregates = q(None, Some("b"), Some("c"));
    assert_eq!(by(Check::Crash, &aggregates).ok(), Some(Some(Evidence::Balance("b".into()))));
    assert_eq!(by(Check::LostAck, &q(None, None, Some("c"))).ok(), Some(Some(Evidence::Count("c".into()))));
    let err = by(Check::SemanticDuplicate, &aggregates).expect_err("two events on one account");
    assert!(err.to_string().contains("share an account"), "{err}");
    let err = by(Check::ConcurrentCopies, &q(None, None, None)).expect_err("nothing to judge by");
    assert!(
        err.to_string().starts_with("--applied-query: the report records no applied, balance or count"),
        "{err}"
    );
}

/// Out-of-order judges each account's version: its script needs the state query and embeds it,
/// with the update's body (a version and a plan where a credit has an amount and an object).
#[test]
fn an_out_of_order_script_judges_with_the_state_query() {
    let report = failed_as(Check::OutOfOrder);
    let err = script(&report, Check::OutOfOrder, &Payload::Hookbench, &applied("q"), Form::Script)
        .expect_err("no state query");
    assert!(err.to_string().starts_with("--state-query: the report records no state query"), "{err}");
    let queries =
        Queries { state: Some("SELECT account, version FROM plans".to_string()), ..Queries::default() };
    let text =
        script(&report, Check::OutOfOrder, &Payload::Hookbench, &queries, Form::Pytest).expect("a module");
    assert!(text.contains("SELECT account, version FROM plans") && text.contains("\\\"tag\\\":\\\"ooo\\\""));
    assert!(text.contains("def test_out_of_order_keeps_each_accounts_latest_version():"));
    let err = script(
        &failed_audit("stripe"),
        Check::ConcurrentCopies,
        &Payload::Hookbench,
        &Queries::default(),
        Form::Script,
    )
    .expect_err("no applied query");
    assert!(
        err.to_string().starts_with("--applied-query: the report records no applied, balance or count"),
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
    assert!(commands(&failed_audit("acme"), dir).is_empty(), "a scheme the scripts do not sign");
    let mut passed = failed_audit("standard-webhooks");
    if let crate::report::model::RunBody::Audit { audit } = &mut passed.body {
        audit.checks[0].status = Status::Pass;
    }
    assert!(commands(&passed, dir).is_empty(), "nothing to reproduce");
}

#[test]
fn hostile_input_resends_the_cases_its_witnesses_show() {
    let witness = |note: &str| Witness {
        id: "a_hos_0001".to_string(),
        problem: "applied".to_string(),
        attempts: vec![AttemptLog {
            at_ms: 1.0,
            outcome: "200".to_string(),
            connection: "1".to_string(),
            note: note.to_string(),
        }],
        observed: "applied 1 times".to_string(),
    };
    let result = |notes: &[&str]| CheckResult {
        status: Status::Fail,
        witnesses: notes.iter().map(|n| witness(n)).collect(),
        ..CheckResult::skipped(Check::HostileInput, "x")
    };
    let cases = hostile_cases(&result(&["wrong secret", "the same id with another body", "first body"]));
    assert_eq!(cases.expect("two cases"), ["wrong-secret", "rebodied"]);
    let past = format!("2048{}", crate::report::model::PAST_THE_LIMIT);
    let cases = hostile_cases(&result(&[crate::report::MALFORMED_BODY, "stalled body", &past]));
    assert_eq!(cases.expect("three cases"), ["malformed", "stalled", "oversized:2048"]);
    // A padded body a receiver may take (the provider's library would) is no case to re-send.
    let may = "8388608 byte body, signed (a receiver may take it: the provider's library would)";
    assert!(hostile_cases(&result(&[may])).is_err(), "nothing a script sends");
    // A timestamp the provider's library accepts was never a refusal: not re-sent as one.
    let err = hostile_cases(&result(&["timestamp an hour ahead (the provider's library accepts it)"]))
        .expect_err("nothing a script sends");
    assert!(err.to_string().contains("does not send yet"), "{err}");
    assert!(hostile_cases(&result(&[])).is_err(), "no witness, nothing to re-send");
}

/// Python with the cryptography package (SendGrid's and Discord's keys): the providers' libraries'
/// virtualenv, which scripts/provider-vectors/install.sh makes before the tests run.
const PYTHON_WITH_CRYPTOGRAPHY: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/provider-vectors/.venv/bin/python");

/// The signature headers the written script of `form` computes for `scheme` with `secrets`.
fn script_signature(
    form: Form,
    scheme: &str,
    secrets: &[String],
    (id, body, at, url): (&str, &str, i64, &str),
) -> std::collections::BTreeMap<String, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    // Twilio's scripts sign forms: its own payload's.
    let payload = if scheme == "twilio" {
        Payload::with("twilio", &[], &[]).expect("twilio's bodies")
    } else {
        Payload::Hookbench
    };
    let text = script(&failed_audit(scheme), Check::ConcurrentCopies, &payload, &applied("q"), form)
        .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    let path = dir.path().join(if form == Form::Node { "repro.js" } else { "repro.py" });
    std::fs::write(&path, text).expect("written");
    let mut cmd = if form == Form::Node {
        let probe = "const m = require(process.argv[1]); \
                     const [id, body, at, url] = process.argv.slice(2); \
                     console.log(JSON.stringify(m.signature(id, Buffer.from(body), m.secrets(), Number(at), url)))";
        let mut cmd = std::process::Command::new("node");
        cmd.args(["-e", probe, path.to_str().expect("utf-8")]);
        cmd
    } else {
        assert!(
            std::path::Path::new(PYTHON_WITH_CRYPTOGRAPHY).exists(),
            "{PYTHON_WITH_CRYPTOGRAPHY} is missing: run scripts/provider-vectors/install.sh"
        );
        let probe = "import importlib.util as u, json, sys\n\
                     s = u.spec_from_file_location('repro', sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m)\n\
                     print(json.dumps(m.signature(sys.argv[2], sys.argv[3].encode(), m.secrets(), int(sys.argv[4]), sys.argv[5])))";
        let mut cmd = std::process::Command::new(PYTHON_WITH_CRYPTOGRAPHY);
        cmd.args(["-I", "-c", probe, path.to_str().expect("utf-8")]);
        cmd
    };
    let out = cmd
        .args([id, body, &at.to_string(), url])
        .env("HOOKBENCH_SECRET", secrets.join(" "))
        .output()
        .expect("the interpreter runs");
    assert!(out.status.success(), "{scheme} {form:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the headers as JSON")
}

/// Every scheme a script signs: the signature headers the written Python and Node scripts compute
/// for a body, an id, a time and a URL are those hookbench's signer computes, header for header
/// (the signer is held to the providers' own libraries by tests/vectors/); SendGrid's ECDSA
/// signature, which is randomized, verifies under the key's public half instead.
#[test]
fn the_scripts_sign_as_the_audit_signs() {
    use crate::wire::signing::keys::{KeyKind, generate};
    use crate::wire::signing::{Attempt, Signer};
    use base64::Engine as _;
    let hmac = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"];
    let (id, at, url) = ("evt_sig_01", 1_764_000_000, "https://h.example/hooks?x=1");
    for name in SIGNS.iter().filter(|s| **s != "none") {
        let scheme = <Scheme as clap::ValueEnum>::from_str(name, false).expect("a scheme");
        let kind = scheme.key_kind();
        let pair = generate(kind);
        let secrets: Vec<String> = match &pair {
            Some(p) => vec![p.private.clone()],
            None if matches!(scheme, Scheme::StandardWebhooks | Scheme::Stripe) => {
                hmac.map(str::to_string).to_vec()
            }
            None => vec![hmac[0].to_string()],
        };
        // Twilio signs a form's pairs: a form, with a pair out of order and an escape.
        let body = if scheme == Scheme::Twilio {
            "To=%2B15005550006&From=%2B1&MessageSid=SM01&Body=a+b"
        } else {
            r#"{"id":"evt_sig_01","amount":5}"#
        };
        let signer = Signer::new(scheme, &secrets).expect("a signer").for_url(url);
        let attempt = Attempt {
            id,
            event_type: "",
            timestamp: at,
            body: body.as_bytes(),
            query: crate::wire::PathQuery::Plain,
        };
        let signed = skeleton::signature_headers(scheme).expect("a scheme scripts sign");
        let rust: std::collections::BTreeMap<String, String> = signer
            .headers(&attempt)
            .into_iter()
            .filter(|(n, _)| signed.contains(n))
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        for form in [Form::Script, Form::Node] {
            let written = script_signature(form, name, &secrets, (id, body, at, url));
            if kind == KeyKind::EcdsaP256 {
                let spki = base64::engine::general_purpose::STANDARD
                    .decode(&pair.as_ref().expect("a key pair").public)
                    .expect("base64");
                let sig = base64::engine::general_purpose::STANDARD
                    .decode(&written["x-twilio-email-event-webhook-signature"])
                    .expect("a base64 signature");
                let message = [at.to_string().as_bytes(), body.as_bytes()].concat();
                ring::signature::UnparsedPublicKey::new(
                    &ring::signature::ECDSA_P256_SHA256_ASN1,
                    &spki[26..],
                )
                .verify(&message, &sig)
                .unwrap_or_else(|_| panic!("{name} {form:?}: the signature verifies"));
                assert_eq!(written["x-twilio-email-event-webhook-timestamp"], at.to_string());
            } else {
                assert_eq!(written, rust, "{name} {form:?}");
            }
        }
    }
}
