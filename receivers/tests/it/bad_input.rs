//! Bad input through the router, on real Postgres and SQLite: each refusal is a 4xx with its
//! reason, and the database is unchanged afterwards.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use receivers::app::{AppState, router};
use receivers::design::Design;
use receivers::signature::{HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP, Verifier};
use receivers::store::Backend;
use receivers::transport::DEFAULT_MAX_BODY_BYTES as MAX_BODY_BYTES;
use testkit::{Db, credit, now, secret};
use tower::ServiceExt;

struct Case {
    name: &'static str,
    path: String,
    id: Option<String>,
    timestamp: Option<i64>,
    signature: Option<String>,
    body: Vec<u8>,
    status: StatusCode,
    reason: &'static str,
}

const ACME: &str = "/webhooks/acme";

impl Case {
    /// A body signed correctly under its own id, posted to `path`, refused with 400 naming
    /// `reason`.
    fn signed(name: &'static str, path: &str, body: Vec<u8>, reason: &'static str) -> Self {
        let id = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["id"].as_str().map(str::to_string))
            .unwrap_or_else(|| "evt_000001".into());
        let t = now();
        Case {
            name,
            path: path.into(),
            signature: sign(&id, t, &body),
            id: Some(id),
            timestamp: Some(t),
            body,
            status: StatusCode::BAD_REQUEST,
            reason,
        }
    }
}

/// Bodies outside the wire's documented bounds (docs/design.md), each signed correctly.
fn out_of_bounds() -> Vec<Case> {
    let now = now();
    let credit = |id: &str, account: i64, amount: i64, created: i64| {
        serde_json::json!({"id": id, "type": "credit.added", "account": account, "amount": amount, "created": created})
            .to_string()
            .into_bytes()
    };
    let plan = |plan: &str, version: i64, created: i64| {
        serde_json::json!({"id": "evt_000001", "type": "plan.updated", "account": 7, "plan": plan, "version": version, "created": created})
            .to_string()
            .into_bytes()
    };
    let ok_created = 1_790_000_000;
    let long_id = format!("evt_{}", "a".repeat(2_996));
    vec![
        Case::signed("an id of 3,000 bytes", ACME, credit(&long_id, 7, 100, ok_created), "`id`"),
        Case::signed("an id with a space", ACME, credit("evt 1", 7, 100, ok_created), "`id`"),
        Case::signed("an id with a quote", ACME, credit("evt\"1", 7, 100, ok_created), "`id`"),
        Case::signed("a negative account", ACME, credit("evt_000001", -1, 100, ok_created), "`account`"),
        Case::signed(
            "an amount of i64::MAX",
            ACME,
            credit("evt_000001", 7, i64::MAX, ok_created),
            "`amount`",
        ),
        Case::signed(
            "an amount of i64::MIN",
            ACME,
            credit("evt_000001", 7, i64::MIN, ok_created),
            "`amount`",
        ),
        Case::signed("created before 2000", ACME, credit("evt_000001", 7, 100, -1), "`created`"),
        Case::signed("created at i64::MAX", ACME, credit("evt_000001", 7, 100, i64::MAX), "`created`"),
        Case::signed(
            "created two days ahead",
            ACME,
            credit("evt_000001", 7, 100, now + 2 * 86_400),
            "`created`",
        ),
        Case::signed("a version of i64::MAX", ACME, plan("plan_v2", i64::MAX, ok_created), "`version`"),
        Case::signed("a version of 0", ACME, plan("plan_v2", 0, ok_created), "`version`"),
        Case::signed("a negative version", ACME, plan("plan_v2", -3, ok_created), "`version`"),
        Case::signed("a plan name of 1,000 bytes", ACME, plan(&"p".repeat(1_000), 2, ok_created), "`plan`"),
        Case::signed("a plan name with a newline", ACME, plan("plan\nv2", 2, ok_created), "`plan`"),
        Case::signed(
            "a source of 10 KB",
            &format!("/webhooks/{}", "s".repeat(10_240)),
            credit("evt_000001", 7, 100, ok_created),
            "`source`",
        ),
        Case::signed(
            "a source with %00",
            "/webhooks/ac%00me",
            credit("evt_000001", 7, 100, ok_created),
            "`source`",
        ),
        Case::signed(
            "a source with a dot",
            "/webhooks/a.b",
            credit("evt_000001", 7, 100, ok_created),
            "`source`",
        ),
    ]
}

fn valid_body() -> Vec<u8> {
    serde_json::to_vec(&credit("evt_000001", 100)).expect("json")
}

fn sign(id: &str, ts: i64, body: &[u8]) -> Option<String> {
    Some(secret().sign(id, ts, body))
}

/// Timestamps are 400 s off rather than 301 s, so a second ticking over between signing and
/// checking cannot bring them back inside the tolerance (the exact 300/301 s edges are unit
/// tests of `receivers::signature`, with a fixed clock).
fn cases() -> Vec<Case> {
    let body = valid_body();
    let t = now();
    let id = "evt_000001";
    let mut changed = sign(id, t, &body).expect("signature");
    changed.replace_range(5..7, if &changed[5..7] == "AA" { "BB" } else { "AA" });
    let other_secret: receivers::signature::Secret =
        "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD".parse().expect("secret");
    let big = {
        let mut b =
            br#"{"id":"evt_000001","type":"credit.added","account":7,"amount":100,"created":1,"pad":""#
                .to_vec();
        b.resize(MAX_BODY_BYTES + 1, b'x');
        b
    };
    let malformed = br#"{"id":"evt_000001","type":"credit.added","account":7,"amount":"#.to_vec();
    let unknown = br#"{"id":"evt_000001","type":"invoice.paid","account":7,"created":1}"#.to_vec();
    let no_amount = br#"{"id":"evt_000001","type":"credit.added","account":7,"created":1}"#.to_vec();
    let other_id = serde_json::to_vec(&credit("evt_999999", 100)).expect("json");
    vec![
        Case {
            name: "changed signature",
            id: Some(id.into()),
            timestamp: Some(t),
            signature: Some(changed),
            body: body.clone(),
            path: ACME.into(),
            status: StatusCode::BAD_REQUEST,
            reason: "no signature matches",
        },
        Case {
            name: "wrong secret",
            id: Some(id.into()),
            timestamp: Some(t),
            signature: Some(other_secret.sign(id, t, &body)),
            body: body.clone(),
            path: ACME.into(),
            status: StatusCode::BAD_REQUEST,
            reason: "no signature matches",
        },
        Case {
            name: "stale timestamp",
            id: Some(id.into()),
            timestamp: Some(t - 400),
            signature: sign(id, t - 400, &body),
            body: body.clone(),
            path: ACME.into(),
            status: StatusCode::BAD_REQUEST,
            reason: "timestamp too old",
        },
        Case {
            name: "future timestamp",
            id: Some(id.into()),
            timestamp: Some(t + 400),
            signature: sign(id, t + 400, &body),
            body: body.clone(),
            path: ACME.into(),
            status: StatusCode::BAD_REQUEST,
            reason: "timestamp too new",
        },
        Case {
            name: "missing webhook-id",
            id: None,
            timestamp: Some(t),
            signature: sign(id, t, &body),
            body: body.clone(),
            path: ACME.into(),
            status: StatusCode::BAD_REQUEST,
            reason: "missing header `webhook-id`",
        },
        Case {
            name: "missing webhook-signature",
            id: Some(id.into()),
            timestamp: Some(t),
            signature: None,
            body: body.clone(),
            path: ACME.into(),
            status: StatusCode::BAD_REQUEST,
            reason: "missing header `webhook-signature`",
        },
        Case {
            name: "missing webhook-timestamp",
            id: Some(id.into()),
            timestamp: None,
            signature: sign(id, t, &body),
            body: body.clone(),
            path: ACME.into(),
            status: StatusCode::BAD_REQUEST,
            reason: "missing header `webhook-timestamp`",
        },
        Case {
            name: "body over 1 MiB",
            id: Some(id.into()),
            timestamp: Some(t),
            signature: sign(id, t, &big),
            body: big,
            path: ACME.into(),
            status: StatusCode::PAYLOAD_TOO_LARGE,
            reason: "over the limit of 1048576 bytes",
        },
        Case::signed("malformed JSON, valid signature", ACME, malformed, "malformed event"),
        Case::signed("credit without an amount, valid signature", ACME, no_amount, "malformed event"),
        Case::signed(
            "unknown event type, valid signature",
            ACME,
            unknown,
            "unknown event type `invoice.paid`",
        ),
        Case {
            name: "body id differs from the signed webhook-id",
            id: Some(id.into()),
            timestamp: Some(t),
            signature: sign(id, t, &other_id),
            body: other_id,
            path: ACME.into(),
            status: StatusCode::BAD_REQUEST,
            reason: "does not match webhook-id",
        },
    ]
    .into_iter()
    .chain(out_of_bounds())
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bad_request_gets_its_4xx_and_writes_nothing() {
    for backend in Backend::ALL {
        for design in Design::KNOWN {
            let db = Db::fresh(backend).await;
            let state = Arc::new(AppState::new(
                design,
                db.store.clone(),
                Verifier::new(vec![secret()]),
                Duration::ZERO,
            ));
            let app = router(state);
            for case in cases() {
                let mut request =
                    Request::post(case.path.as_str()).header("content-type", "application/json");
                if let Some(id) = &case.id {
                    request = request.header(HEADER_ID, id);
                }
                if let Some(ts) = case.timestamp {
                    request = request.header(HEADER_TIMESTAMP, ts.to_string());
                }
                if let Some(sig) = &case.signature {
                    request = request.header(HEADER_SIGNATURE, sig);
                }
                let response = app
                    .clone()
                    .oneshot(request.body(Body::from(case.body)).expect("request"))
                    .await
                    .expect("response");
                let status = response.status();
                let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.expect("body");
                let body = String::from_utf8_lossy(&body);
                assert_eq!(status, case.status, "{backend} {design} {}: {body}", case.name);
                assert!(body.contains(case.reason), "{backend} {design} {}: {body}", case.name);
            }
            tokio::time::sleep(Duration::from_millis(50)).await; // an inbox worker would have run by now
            assert_eq!(db.rows().await, [0; 5], "{backend} {design}: rows written by bad requests");
            // The same app accepts the good request, so the refusals above were about the input.
            let t = now();
            let body = valid_body();
            let good = Request::post("/webhooks/acme")
                .header(HEADER_ID, "evt_000001")
                .header(HEADER_TIMESTAMP, t.to_string())
                .header(HEADER_SIGNATURE, secret().sign("evt_000001", t, &body))
                .body(Body::from(body))
                .expect("request");
            assert_eq!(
                app.oneshot(good).await.expect("response").status(),
                StatusCode::OK,
                "{backend} {design}"
            );
            db.cleanup().await;
        }
    }
}
