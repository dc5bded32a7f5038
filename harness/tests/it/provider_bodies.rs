//! The providers' bodies held to what the providers publish, and an audit driven by them end to
//! end. GitHub's bodies are validated against `@octokit/webhooks-schemas`; Stripe's and
//! Shopify's objects are compared, key by key and kind by kind, with the `stripe` package's type
//! declarations and `@shopify/shopify-api`'s Admin REST resources (shapes.json, made from them by
//! scripts/provider-schemas/install.sh, which these tests name when it has not been run). Then a
//! Stripe receiver of its own (examples/receivers/stripe-sqlite), reading real Event objects, is
//! audited with `--payload stripe --signing stripe --event-type ... --field ...`.

use std::path::Path;
use std::process::Command;

use hookbench::audit::{Check, Status};
use hookbench::wire::{EventTypeChoice, FieldMapping, Fields, Format, Kind, Payload};
use serde_json::Value;

use super::audit::{Receiver, run_audit, start, verdicts};

const SCHEMAS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/provider-schemas");
const INSTALL: &str = "scripts/provider-schemas/install.sh";

/// A file the install script writes, or a failure naming the script: never a vacuous pass.
fn installed(relative: &str) -> Value {
    let path = Path::new(SCHEMAS).join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{} is missing ({e}): run {INSTALL} (npm, versions pinned) first", path.display())
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn event(kind: Kind, object: Option<&str>) -> Fields {
    Fields {
        id: "a1_evt_000042".into(),
        kind,
        account: 1042,
        amount: 1500,
        plan: "plan_v3".into(),
        version: 3,
        created: 1_764_460_800,
        poisoned: false,
        object: object.map(str::to_string),
    }
}

fn payload(format: Format, kind: Kind, name: &str) -> Payload {
    let kind_word = if kind == Kind::Credit { "credit" } else { "update" };
    let choice: EventTypeChoice = format!("{kind_word}={name}").parse().expect("KIND=TYPE");
    Payload::with(format.as_str(), &[choice], &[]).expect("a known type")
}

fn body(p: &Payload, f: &Fields) -> Value {
    serde_json::from_slice(&p.render(f)).expect("JSON")
}

fn types(format: Format) -> Vec<String> {
    format.known_types().split(", ").map(str::to_string).collect()
}

/// Every GitHub type hookbench writes, as a credit and as an update, is valid against the
/// published schema of its event and action; and the validation is not vacuous: a body without
/// its repository fails it.
#[test]
fn github_bodies_validate_against_octokit_webhooks_schemas() {
    let schema = installed("node_modules/@octokit/webhooks-schemas/schema.json");
    let definitions = schema["definitions"].clone();
    for name in types(Format::Github) {
        let definition = match name.split_once('.') {
            Some((event, action)) => format!("{event}${action}"),
            None => format!("{name}$event"),
        };
        let mut one =
            definitions.get(&definition).unwrap_or_else(|| panic!("no schema {definition}")).clone();
        one["definitions"] = definitions.clone();
        let validator = jsonschema::validator_for(&one).expect("a valid schema");
        for kind in [Kind::Credit, Kind::Update] {
            let b = body(&payload(Format::Github, kind, &name), &event(kind, None));
            let errors: Vec<String> =
                validator.iter_errors(&b).map(|e| format!("{} at {}", e, e.instance_path())).collect();
            assert!(errors.is_empty(), "{name} ({kind:?}): {errors:?}");
            let mut broken = b.clone();
            broken.as_object_mut().expect("an object").remove("repository");
            assert!(!validator.is_valid(&broken), "{name}: the schema requires the repository");
        }
    }
}

/// The JSON kind of `v` as shapes.json names kinds.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Holds `ours` to a published declaration: every required key is there, every key is declared,
/// and each value is of a kind its declared type allows. The problems, each named by `what`.
fn against(declared: &Value, ours: &Value, what: &str) -> Vec<String> {
    against_but(declared, ours, what, &[])
}

/// [`against`], with `inputs` (keys a resource takes when it is written, never sent) not required.
fn against_but(declared: &Value, ours: &Value, what: &str, inputs: &[&str]) -> Vec<String> {
    let declared = declared.as_object().unwrap_or_else(|| panic!("{what}: no declaration"));
    let ours = ours.as_object().unwrap_or_else(|| panic!("{what}: not an object"));
    let mut problems = Vec::new();
    for (key, d) in declared {
        if d["optional"] == false && !ours.contains_key(key) && !inputs.contains(&key.as_str()) {
            problems.push(format!("{what}: required key `{key}` missing"));
        }
    }
    for (key, v) in ours {
        match declared.get(key) {
            None => problems.push(format!("{what}: `{key}` is not declared")),
            Some(d) => {
                let kinds: Vec<&str> =
                    d["kinds"].as_array().expect("kinds").iter().filter_map(Value::as_str).collect();
                if !kinds.contains(&kind_of(v)) {
                    problems.push(format!("{what}: `{key}` is {}, declared {kinds:?}", kind_of(v)));
                }
            }
        }
    }
    problems
}

/// Each Stripe type's Event, its `data.object` and the subscription's item, plan and price
/// match the `stripe` package's declarations, and the object is the one that package says the
/// type carries; a body missing a required key would be found.
#[test]
fn stripe_bodies_match_the_stripe_packages_types() {
    let shapes = installed("shapes.json");
    let objects = &shapes["stripe"];
    let mut problems = Vec::new();
    for name in types(Format::Stripe) {
        for kind in [Kind::Credit, Kind::Update] {
            let b = body(&payload(Format::Stripe, kind, &name), &event(kind, None));
            problems.extend(against(&objects["event"], &b, &format!("{name} event")));
            let object = &b["data"]["object"];
            let declared = shapes["stripe_event_objects"][&name]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: unknown to the package"));
            // `Checkout.Session` is `checkout.session`, `PaymentIntent` is `payment_intent`.
            let expected = snake(declared);
            assert_eq!(object["object"], expected.as_str(), "{name} carries a {declared}");
            problems.extend(against(&objects[&expected], object, &format!("{name} {expected}")));
            if expected == "subscription" {
                let item = &object["items"]["data"][0];
                problems.extend(against(&objects["subscription_item"], item, "subscription item"));
                problems.extend(against(&objects["plan"], &item["plan"], "plan"));
                problems.extend(against(&objects["price"], &item["price"], "price"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    let mut broken = body(&Payload::provider(Format::Stripe), &event(Kind::Credit, None));
    broken["data"]["object"].as_object_mut().expect("object").remove("amount");
    assert!(!against(&objects["payment_intent"], &broken["data"]["object"], "broken").is_empty());
}

fn snake(declared: &str) -> String {
    let mut out = String::new();
    for (i, part) in declared.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        for (j, c) in part.chars().enumerate() {
            if c.is_ascii_uppercase() && j > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// What the Customer resource takes when a customer is written through the Admin API, and a
/// webhook never carries: a password and its confirmation, and a metafield to create with it.
const CUSTOMER_INPUTS: [&str; 3] = ["password", "password_confirmation", "metafield"];

/// Each Shopify topic's resource (an order with its customer, a customer) has only the keys
/// the Admin REST resources declare, each of a declared kind, and all of them but the
/// customer's inputs.
#[test]
fn shopify_bodies_match_the_admin_rest_resources() {
    let shapes = installed("shapes.json");
    let resources = &shapes["shopify"];
    let mut problems = Vec::new();
    for name in types(Format::Shopify) {
        for kind in [Kind::Credit, Kind::Update] {
            let b = body(&payload(Format::Shopify, kind, &name), &event(kind, None));
            if name.starts_with("orders/") {
                problems.extend(against(&resources["order"], &b, &format!("{name} order")));
                let what = format!("{name} order.customer");
                problems.extend(against_but(&resources["customer"], &b["customer"], &what, &CUSTOMER_INPUTS));
            } else {
                let what = format!("{name} customer");
                problems.extend(against_but(&resources["customer"], &b, &what, &CUSTOMER_INPUTS));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    let mut broken = body(&Payload::provider(Format::Shopify), &event(Kind::Credit, None));
    broken["made_up"] = Value::from(1);
    assert!(!against(&resources["order"], &broken, "broken").is_empty(), "an undeclared key is found");
}

/// The Stripe example receiver on `db` in `mode`, holding `secrets`.
fn stripe_receiver(db: &Path, mode: &str, secrets: &[&str]) -> Receiver {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/receivers/stripe-sqlite/receiver.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).args(["--db", db.to_str().expect("utf-8"), "--mode", mode, "--port", "0"]);
    for s in secrets {
        cmd.args(["--secret", s]);
    }
    start(cmd)
}

const STRIPE_SECRETS: [&str; 2] = ["whsec_stripe-audit-old", "whsec_stripe-audit-new"];
/// The receiver keeps Stripe's `cus_<n>`; the state query takes the number after the prefix.
const STRIPE_STATE: &str = "SELECT CAST(substr(customer, 5) AS INTEGER), version FROM subscriptions";
const STRIPE_APPLIED: &str = "SELECT event_id, count(*) FROM payments GROUP BY event_id";

fn stripe_audit(dir: &Path, mode: &str) -> (u8, Vec<(Check, Status)>, i64) {
    let db = dir.join("app.db");
    let receiver = stripe_receiver(&db, mode, &STRIPE_SECRETS);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", db.display());
    let args = [
        url.as_str(),
        "--signing",
        "stripe",
        "--secret",
        STRIPE_SECRETS[0],
        "--secret",
        STRIPE_SECRETS[1],
        "--payload",
        "stripe",
        "--event-type",
        "credit=payment_intent.succeeded",
        "--event-type",
        "update=customer.subscription.updated",
        "--field",
        "account=/data/object/customer",
        "--field",
        "version=/data/object/current_period_end",
        "--observe-db",
        &observe,
        "--applied-query",
        STRIPE_APPLIED,
        "--state-query",
        STRIPE_STATE,
        "--events",
        "200",
        "--rate",
        "400",
        "--quiet",
        "300ms",
        "--copies",
        "4",
        "--stall-wait",
        "8s",
    ];
    let (code, said, report) = run_audit(&args);
    let report = report.unwrap_or_else(|| panic!("a report: {said}"));
    let conn = Command::new("python3")
        .args(["-c", &format!("import sqlite3; print(sqlite3.connect('{}').execute('SELECT count(*) FROM payments').fetchone()[0])", db.display())])
        .output()
        .expect("python3 reads the database");
    let payments = String::from_utf8_lossy(&conn.stdout).trim().parse().unwrap_or(-1);
    (code, verdicts(&report), payments)
}

/// A safe Stripe handler, reading `data.object.customer`, `data.object.amount` and
/// `data.object.current_period_end` from real Event objects, passes every check: the bodies are
/// ones a Stripe handler accepts (every delivery applied, none refused).
#[test]
fn a_safe_stripe_handler_passes_every_check_on_stripe_bodies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, v, payments) = stripe_audit(dir.path(), "safe");
    assert_eq!(code, 0, "{v:?}");
    let ran: Vec<Check> = v.iter().filter(|(_, s)| *s != Status::Skipped).map(|(c, _)| *c).collect();
    // It dedupes on the event id, as the checklist says: two Events for one PaymentIntent both
    // apply, an advisory WARN that leaves the exit status at 0.
    assert!(v.contains(&(Check::SemanticDuplicate, Status::Warn)), "{v:?}");
    let others = v.iter().filter(|(c, _)| *c != Check::SemanticDuplicate);
    assert!(others.clone().all(|(_, s)| matches!(s, Status::Pass | Status::Skipped)), "{v:?}");
    // Every check these flags allow ran (the crash, poison, capacity and storm checks need flags
    // of their own).
    for c in [
        Check::SequentialDuplicate,
        Check::ConcurrentCopies,
        Check::LostAck,
        Check::OutOfOrder,
        Check::LateReplay,
        Check::SecretRotation,
        Check::HostileInput,
        Check::ParallelLoad,
    ] {
        assert!(ran.contains(&c), "{c:?} ran: {v:?}");
    }
    assert!(payments > 0, "the handler applied the payments: {payments}");
}

/// The same handler checking before it records fails on the same bodies: the audit sees its
/// duplicates through them.
#[test]
fn an_unsafe_stripe_handler_fails_on_stripe_bodies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, v, _) = stripe_audit(dir.path(), "unsafe");
    assert_eq!(code, 1, "{v:?}");
    assert!(v.iter().any(|(c, s)| *c == Check::ConcurrentCopies && *s == Status::Fail), "{v:?}");
}

/// The semantic-duplicate rule: two events naming one object carry one object id in every
/// provider's body.
#[test]
fn two_events_about_one_object_carry_its_one_id() {
    for (format, pointer) in
        [(Format::Stripe, "/data/object/id"), (Format::Github, "/issue/id"), (Format::Shopify, "/id")]
    {
        let p = Payload::provider(format);
        let a = body(&p, &Fields { id: "e_1".into(), ..event(Kind::Credit, Some("tok")) });
        let b = body(&p, &Fields { id: "e_2".into(), ..event(Kind::Credit, Some("tok")) });
        assert_eq!(a.pointer(pointer), b.pointer(pointer), "{}", format.as_str());
        assert!(a.pointer(pointer).is_some_and(|v| !v.is_null()), "{}", format.as_str());
    }
    let mapping: FieldMapping = "amount=/data/object/amount_received".parse().expect("a mapping");
    let p = Payload::with("stripe", &[], &[mapping]).expect("a payload");
    assert_eq!(body(&p, &event(Kind::Credit, None))["data"]["object"]["amount_received"], 1500);
}

/// Paddle's and Square's bodies, every type as a credit and as an update, read by the providers'
/// own Python libraries (scripts/provider-schemas/check-bodies.py: paddle-python-sdk's
/// `Event.from_dict` reads each into the entity its type names; squareup's pydantic model of each
/// event type validates it with no key the model lacks, and a made-up key is found).
#[test]
fn paddle_and_square_bodies_are_read_by_their_own_libraries() {
    let python = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/provider-vectors/.venv/bin/python");
    assert!(
        Path::new(python).exists(),
        "{python} is missing: run scripts/provider-vectors/install.sh (PyPI, versions pinned) first"
    );
    let mut cases = Vec::new();
    for format in [Format::Paddle, Format::Square] {
        for name in format.known_types().split(", ") {
            for kind in [Kind::Credit, Kind::Update] {
                let p = payload(format, kind, name);
                let text = String::from_utf8(p.render(&event(kind, None))).expect("utf-8");
                let kind = if kind == Kind::Credit { "credit" } else { "update" };
                cases.push(serde_json::json!({
                    "provider": format.as_str(), "type": name, "kind": kind,
                    "content_type": p.content_type(), "body": text,
                }));
            }
        }
    }
    let file = tempfile::NamedTempFile::new().expect("tempfile");
    std::fs::write(file.path(), serde_json::to_vec(&cases).expect("JSON")).expect("write");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/provider-schemas/check-bodies.py");
    let out = Command::new(python).arg(script).arg(file.path()).output().expect("python runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("{} Paddle and Square bodies checked, 0 problems", cases.len())),
        "{said}"
    );
}
