//! The preflight confirms the evidence: a receiver that acknowledges a credit must be seen to
//! apply it before any check runs. A GitHub App routes only the event types it handles and answers
//! 200 to the rest; `--signing github` alone sends GitHub's own bodies, which it applies, and a
//! body it ignores (hookbench's own, a template) stops the audit at the preflight with exit 2
//! naming `--payload`, never a FAIL of "lost" events.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use hmac::{KeyInit, Mac};

use super::audit::run_audit;
use super::stub::free_addr;
use hookbench::audit::{Check, Status};

const GITHUB_SECRET: &str = "the-apps-webhook-secret";

/// A GitHub App's webhook route, in-process: it verifies `X-Hub-Signature-256` (401 when it does
/// not match), handles `issues` `opened` by calling the downstream service at `sink` once per
/// `X-GitHub-Delivery` (it dedupes), and answers 200 to every other event without doing anything,
/// as apps built on a router of event types do. Its address.
fn github_app(sink: String) -> String {
    let seen: Arc<Mutex<HashSet<String>>> = Arc::default();
    let handler = move |headers: HeaderMap, body: Bytes| {
        let (sink, seen) = (sink.clone(), seen.clone());
        async move {
            let header =
                |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
            let mut mac =
                hmac::Hmac::<sha2::Sha256>::new_from_slice(GITHUB_SECRET.as_bytes()).expect("a key");
            mac.update(&body);
            let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
            if header("x-hub-signature-256") != expected {
                return StatusCode::UNAUTHORIZED;
            }
            let action = serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v["action"].as_str().map(str::to_string));
            let delivery = header("x-github-delivery");
            let handled = header("x-github-event") == "issues" && action.as_deref() == Some("opened");
            if handled && seen.lock().expect("seen").insert(delivery.clone()) {
                let called = reqwest::Client::new()
                    .post(format!("http://{sink}/effect"))
                    .header("idempotency-key", delivery)
                    .send()
                    .await;
                if called.is_err() {
                    return StatusCode::SERVICE_UNAVAILABLE;
                }
            }
            StatusCode::OK
        }
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.set_nonblocking(true).expect("non-blocking");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let app = axum::Router::new().route("/api/github/webhooks", axum::routing::post(handler));
            let _ = axum::serve(listener, app).await;
        });
    });
    addr
}

/// An audit of a fresh GitHub App, through a sink, with `args`.
fn audit_github_app(args: &[&str]) -> (u8, String, Option<hookbench::report::Report>) {
    let sink = free_addr();
    let url = format!("http://{}/api/github/webhooks", github_app(sink.clone()));
    let base = [url.as_str(), "--signing", "github", "--secret", GITHUB_SECRET, "--sink", &sink];
    let quick =
        ["--checks", "sequential-duplicate", "--probe-events", "2", "--quiet", "300ms", "--settle-max", "3s"];
    run_audit(&[&base[..], &quick, args].concat())
}

#[test]
fn signing_github_alone_sends_githubs_bodies_which_a_github_app_applies() {
    let (code, said, report) = audit_github_app(&[]);
    assert_eq!((code, said.as_str()), (0, ""));
    let a = report.expect("a report");
    let a = a.audit_section().expect("an audit");
    assert!(
        a.payload.starts_with("github (credit=issues.opened"),
        "the provider's own bodies: {}",
        a.payload
    );
    let seq = a.checks.iter().find(|c| c.check == Check::SequentialDuplicate).expect("the check");
    assert_eq!(seq.status, Status::Pass, "{seq:?}");
}

#[test]
fn a_body_the_app_ignores_stops_the_audit_at_the_preflight_naming_the_payload() {
    let (code, said, report) = audit_github_app(&["--payload", "hookbench"]);
    assert_eq!(code, 2, "{said}");
    assert!(
        said.contains("sink did not see it applied")
            && said.contains("--signing github with --payload hookbench sent hookbench's own body")
            && said.contains("give --payload github"),
        "{said}"
    );
    assert!(!said.contains("lost") && !said.contains("FAILED"), "{said}");
    let report = report.expect("the report of an audit stopped after starting");
    let a = report.audit_section().expect("an audit");
    assert!(a.stopped.as_deref().is_some_and(|s| s.contains("--payload")), "{:?}", a.stopped);
    assert!(a.checks.iter().all(|c| c.status != Status::Fail), "{:?}", a.checks);
    // A template the app does not route: the same.
    let dir = tempfile::tempdir().expect("tempdir");
    let template = dir.path().join("template.json");
    std::fs::write(
        &template,
        r#"{"credit": {"id": "{{id}}", "kind": "payment", "account": "{{account}}", "amount": "{{amount}}"},
            "update": {"id": "{{id}}", "kind": "plan", "account": "{{account}}", "version": "{{version}}"}}"#,
    )
    .expect("a template");
    let (code, said, _) = audit_github_app(&["--payload", template.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("check --payload") && said.contains("template.json"), "{said}");
}

#[test]
fn a_balance_query_needs_bodies_that_carry_the_amount() {
    let args = ["http://127.0.0.1:9/w", "--signing", "github", "--secret", GITHUB_SECRET];
    let db = ["--observe-db", "sqlite:///nowhere.db", "--balance-query", "SELECT id, balance FROM customers"];
    let (code, said, _) = run_audit(&[&args[..], &db].concat());
    assert_eq!(code, 2, "{said}");
    assert!(
        said.contains("--balance-query needs bodies that carry the credit's amount")
            && said.contains("GitHub's bodies carry no amount")
            && said.contains("--field amount=POINTER"),
        "{said}"
    );
    // Placed by --field, it is past that refusal (and on to the unreachable receiver).
    let (code, said, _) = run_audit(&[&args[..], &db, &["--field", "amount=/issue/number"]].concat());
    assert_eq!(code, 2, "{said}");
    assert!(!said.contains("carry the credit's amount"), "{said}");
}
