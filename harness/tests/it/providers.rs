//! Every provider held to its own library, end to end: for each of the ten schemes added beside
//! Stripe, GitHub, Shopify and Standard Webhooks, a receiver that accepts a delivery only when the
//! provider's own library verifies it (examples/receivers/providers/receiver.py: slack_sdk,
//! twilio, squareup, paddle-python-sdk, sendgrid, PyNaCl, @linear/sdk; GitLab's, Zoom's and
//! Twitch's documentation, written apart from hookbench's signer) is audited with
//! `--signing NAME` alone, which implies the provider's bodies and its timeout. The safe mode
//! passes sequential-duplicate, concurrent-copies and hostile-input, so hookbench's deliveries are
//! ones each library accepts, and its hostile cases expect refused only what each library refuses
//! (a stale timestamp where the library reads no clock, a tampered body under GitLab's token, are
//! not expected refused). The unsafe mode (a check, then the effect, then the record) fails
//! concurrent-copies under every scheme, and a mode that verifies nothing fails hostile-input
//! under every scheme: the same tests can fail.

use std::path::Path;
use std::process::Command;

use hookbench::audit::{Check, Status};

use super::audit::{Receiver, run_audit, start, verdicts};

const RECEIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/providers/receiver.py");
const PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/provider-vectors/.venv/bin/python");
const INSTALL: &str = "scripts/provider-vectors/install.sh";
const APPLIED: &str = "SELECT event_id, count(*) FROM effects GROUP BY event_id";

/// The ten schemes, each with the secret its receiver and the audit share (`None`: a key pair
/// `hookbench keys` makes, the private half for the audit, the public for the receiver), and
/// Twilio's JSON bodies beside its forms (`--payload twilio-json`, signed through `bodySHA256`).
const PROVIDERS: [(&str, Option<&str>); 11] = [
    ("slack", Some("8f742231b10e8888abcd99yyyzzz85a5")),
    ("twilio", Some("12345-twilio-auth-token")),
    ("twilio-json", Some("12345-twilio-auth-token")),
    ("square", Some("square-signature-key-audit")),
    ("paddle", Some("pdl_ntfset_audit_secret")),
    ("sendgrid", None),
    ("discord", None),
    ("linear", Some("lin_wh_audit_secret")),
    ("gitlab", Some("gitlab-secret-token")),
    ("zoom", Some("zoom-secret-token")),
    ("twitch", Some("twitch-eventsub-secret-0123456789")),
];

fn python() -> &'static str {
    assert!(
        Path::new(PYTHON).exists(),
        "{PYTHON} is missing: run {INSTALL} (PyPI and npm, versions pinned) first"
    );
    PYTHON
}

/// `mode`: safe, unsafe (check, then act), or lax (safe, and no signature verified at all).
fn receiver(provider: &str, db: &Path, mode: &str, key: (&str, &str)) -> Receiver {
    let mut cmd = Command::new(python());
    let (mode, lax) = if mode == "lax" { ("safe", true) } else { (mode, false) };
    cmd.arg(RECEIVER)
        .args(["--provider", provider, "--db", db.to_str().expect("utf-8"), "--mode", mode, "--port", "0"])
        .args([key.0, key.1]);
    if lax {
        cmd.arg("--no-verify");
    }
    start(cmd)
}

/// A key pair for an asymmetric scheme: (private for --secret, public for the receiver).
fn key_pair(provider: &str) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hookbench")).args(["keys", provider]).output().expect("keys");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_string()
    };
    (field("secret: "), field("public-key: "))
}

/// Audits the receiver of `name` (a scheme, or `twilio-json`: Twilio's scheme with its JSON
/// bodies) in `mode` with `checks`: the exit status and the verdicts.
fn audit(
    dir: &Path,
    name: &str,
    secret: Option<&str>,
    mode: &str,
    checks: &str,
) -> (u8, Vec<(Check, Status)>) {
    let (provider, payload) = (name.split('-').next().unwrap_or(name), name);
    let (secret, receiver_key) = match secret {
        Some(s) => (s.to_string(), ("--secret", s.to_string())),
        None => {
            let (private, public) = key_pair(provider);
            (private, ("--public-key", public))
        }
    };
    let db = dir.join(format!("{name}-{mode}.db"));
    let r = receiver(provider, &db, mode, (receiver_key.0, &receiver_key.1));
    let url = format!("http://{}/webhooks/{provider}", r.addr);
    let observe = format!("sqlite://{}", db.display());
    let args = [
        url.as_str(),
        "--signing",
        provider,
        "--payload",
        payload,
        "--secret",
        &secret,
        "--observe-db",
        &observe,
        "--applied-query",
        APPLIED,
        "--checks",
        checks,
        "--quiet",
        "300ms",
        "--copies",
        "4",
        "--stall-wait",
        "8s",
    ];
    let (code, said, report) = run_audit(&args);
    let report = report.unwrap_or_else(|| panic!("{name} {mode}: a report: {said}"));
    (code, verdicts(&report))
}

/// A receiver that verifies with the provider's own library and dedupes in one transaction passes
/// every scheme's duplicates, copies and hostile input.
#[test]
fn a_receiver_on_each_providers_library_passes_duplicates_copies_and_hostile_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failed = Vec::new();
    for (provider, secret) in PROVIDERS {
        let checks = "sequential-duplicate,concurrent-copies,hostile-input";
        let (code, v) = audit(dir.path(), provider, secret, "safe", checks);
        let all_pass = v.len() == 3 && v.iter().all(|(_, s)| *s == Status::Pass);
        if code != 0 || !all_pass {
            failed.push(format!("{provider}: exit {code}, {v:?}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The same receivers, checking the id before the effect and recording it after, apply copies
/// that arrive together twice: concurrent-copies fails under every scheme.
#[test]
fn a_check_then_act_receiver_fails_concurrent_copies_under_each_provider() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut passed = Vec::new();
    for (provider, secret) in PROVIDERS {
        let (code, v) = audit(dir.path(), provider, secret, "unsafe", "concurrent-copies");
        if code != 1 || v != [(Check::ConcurrentCopies, Status::Fail)] {
            passed.push(format!("{provider}: exit {code}, {v:?}"));
        }
    }
    assert!(passed.is_empty(), "{passed:#?}");
}

/// The same receivers verifying nothing take a tampered, wrongly signed or unsigned delivery:
/// hostile-input fails under every scheme, so its expectations are not too lax to notice.
#[test]
fn a_receiver_that_verifies_nothing_fails_hostile_input_under_each_provider() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut passed = Vec::new();
    for (provider, secret) in PROVIDERS {
        let (code, v) = audit(dir.path(), provider, secret, "lax", "hostile-input");
        if code != 1 || v != [(Check::HostileInput, Status::Fail)] {
            passed.push(format!("{provider}: exit {code}, {v:?}"));
        }
    }
    assert!(passed.is_empty(), "{passed:#?}");
}
