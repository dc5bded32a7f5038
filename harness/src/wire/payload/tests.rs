//! The providers' bodies: their shapes, the types and places chosen, the object rule, the
//! headers. (The bodies against the providers' published schemas and types are in
//! harness/tests/it/provider_bodies.rs.)

use serde_json::Value;

use super::*;

fn credit() -> Fields {
    Fields {
        id: "a1_evt_000007".into(),
        kind: Kind::Credit,
        account: 42,
        amount: 1500,
        plan: String::new(),
        version: 0,
        created: 1_764_460_800,
        poisoned: false,
        object: None,
    }
}

fn update() -> Fields {
    Fields {
        id: "a1_evt_000008".into(),
        kind: Kind::Update,
        account: 42,
        amount: 0,
        plan: "plan_v3".into(),
        version: 3,
        created: 1_764_460_801,
        poisoned: false,
        object: None,
    }
}

fn body(p: &Payload, f: &Fields) -> Value {
    serde_json::from_slice(&p.render(f)).expect("a body is JSON")
}

fn payload(name: &str, types: &[&str], fields: &[&str]) -> Result<Payload, PayloadError> {
    let types: Vec<EventTypeChoice> = types.iter().map(|t| t.parse().expect("KIND=TYPE")).collect();
    let fields: Vec<FieldMapping> = fields.iter().map(|f| f.parse().expect("NAME=POINTER")).collect();
    Payload::with(name, &types, &fields)
}

#[test]
fn a_stripe_event_is_an_event_with_its_object_in_data() {
    let p = Payload::provider(Format::Stripe);
    let b = body(&p, &credit());
    assert_eq!((b["id"].as_str(), b["object"].as_str()), (Some("a1_evt_000007"), Some("event")));
    assert_eq!(b["type"], "payment_intent.succeeded");
    assert_eq!(b["api_version"], stripe::API_VERSION);
    assert_eq!((b["livemode"].as_bool(), b["pending_webhooks"].as_i64()), (Some(false), Some(1)));
    assert!(b["request"]["id"].as_str().is_some_and(|r| r.starts_with("req_")));
    assert!(b["request"]["idempotency_key"].as_str().is_some_and(|k| k.len() == 36));
    let o = &b["data"]["object"];
    assert_eq!((o["id"].as_str(), o["object"].as_str()), (Some("pi_a1_evt_000007"), Some("payment_intent")));
    assert_eq!((o["customer"].as_str(), o["amount"].as_i64()), (Some("cus_42"), Some(1500)));
    let u = body(&p, &update());
    assert_eq!(u["type"], "customer.subscription.updated");
    let o = &u["data"]["object"];
    assert_eq!((o["id"].as_str(), o["object"].as_str()), (Some("sub_42"), Some("subscription")));
    assert_eq!((o["customer"].as_str(), o["current_period_end"].as_i64()), (Some("cus_42"), Some(3)));
    assert_eq!(o["items"]["data"][0]["plan"]["id"], "plan_v3");
    assert_eq!(o["items"]["data"][0]["price"]["id"], "price_v3");
}

#[test]
fn every_stripe_type_has_its_object_and_its_amount_where_the_default_says() {
    let cases = [
        ("payment_intent.succeeded", "payment_intent", "pi_", Some("amount")),
        ("charge.succeeded", "charge", "ch_", Some("amount")),
        ("invoice.paid", "invoice", "in_", Some("amount_paid")),
        ("invoice.payment_succeeded", "invoice", "in_", Some("amount_paid")),
        ("checkout.session.completed", "checkout.session", "cs_", Some("amount_total")),
        ("customer.subscription.created", "subscription", "sub_", None),
        ("customer.subscription.updated", "subscription", "sub_", None),
        ("customer.subscription.deleted", "subscription", "sub_", None),
    ];
    for (t, object, prefix, amount) in cases {
        let p = payload("stripe", &[&format!("credit={t}")], &[]).expect(t);
        let o = body(&p, &credit())["data"]["object"].clone();
        assert_eq!(o["object"], object, "{t}");
        assert!(o["id"].as_str().is_some_and(|id| id.starts_with(prefix)), "{t}: {}", o["id"]);
        assert_eq!(o["customer"], "cus_42", "{t}");
        if let Some(key) = amount {
            assert_eq!(o[key], 1500, "{t}");
        }
    }
    let deleted = payload("stripe", &["update=customer.subscription.deleted"], &[]).expect("deleted");
    assert_eq!(body(&deleted, &update())["data"]["object"]["status"], "canceled");
}

#[test]
fn a_github_payload_is_the_events_with_its_action_and_headers() {
    let p = Payload::provider(Format::Github);
    let b = body(&p, &credit());
    assert_eq!((b["action"].as_str(), b["repository"]["id"].as_i64()), (Some("opened"), Some(42)));
    assert_eq!(b["issue"]["state"], "open");
    assert!(b["issue"]["number"].as_i64().is_some_and(|n| n > 0));
    assert_eq!(p.event_type(Kind::Credit), "issues");
    let headers = p.headers(&credit());
    assert!(headers.contains(&("x-github-event", "issues".to_string())), "{headers:?}");
    assert!(headers.contains(&("x-github-delivery", "a1_evt_000007".to_string())), "{headers:?}");
    let u = body(&p, &update());
    assert_eq!((u["action"].as_str(), u["issue"]["comments"].as_i64()), (Some("edited"), Some(3)));
    assert!(u["changes"]["title"]["from"].is_string());
    let push = payload("github", &["update=push"], &[]).expect("push");
    assert_eq!(push.event_type(Kind::Update), "push");
    let b = body(&push, &update());
    assert_eq!(
        (b["repository"]["pushed_at"].as_i64(), b["after"].as_str().map(str::len)),
        (Some(3), Some(40))
    );
    let star = payload("github", &["update=star.created"], &[]).expect("star");
    assert_eq!(body(&star, &update())["repository"]["stargazers_count"], 3);
}

#[test]
fn a_shopify_payload_is_the_topics_resource_with_its_headers() {
    let p = Payload::provider(Format::Shopify);
    let b = body(&p, &credit());
    assert_eq!((b["customer"]["id"].as_i64(), b["total_price"].as_str()), (Some(42), Some("1500")));
    assert!(b["id"].as_i64().is_some_and(|id| id > 0));
    let headers: std::collections::BTreeMap<_, _> = p.headers(&credit()).into_iter().collect();
    assert_eq!(headers["x-shopify-topic"], "orders/create");
    assert_eq!(headers["x-shopify-webhook-id"], "a1_evt_000007");
    assert_eq!(headers["x-shopify-event-id"], "a1_evt_000007");
    assert_eq!(headers["x-shopify-triggered-at"], "2025-11-30T00:00:00Z");
    assert!(headers.contains_key("x-shopify-shop-domain") && headers.contains_key("x-shopify-api-version"));
    let u = body(&p, &update());
    assert_eq!((u["id"].as_i64(), u["orders_count"].as_i64()), (Some(42), Some(3)));
    assert_eq!(p.event_type(Kind::Update), "customers/update");
}

#[test]
fn a_standard_webhooks_body_is_the_specs_envelope() {
    let p = payload("standard-webhooks", &["credit=invoice.paid"], &[]).expect("any type");
    let b = body(&p, &credit());
    assert_eq!(
        (b["type"].as_str(), b["timestamp"].as_str()),
        (Some("invoice.paid"), Some("2025-11-30T00:00:00Z"))
    );
    assert_eq!((b["data"]["account"].as_i64(), b["data"]["amount"].as_i64()), (Some(42), Some(1500)));
    assert!(p.headers(&credit()).is_empty(), "the signer's headers are all there is");
    let u = body(&p, &update());
    assert_eq!((u["type"].as_str(), u["data"]["version"].as_i64()), (Some("plan.updated"), Some(3)));
    let err = payload("standard-webhooks", &["credit=no spaces"], &[]).expect_err("bad").to_string();
    assert!(err.contains("--event-type credit=no spaces") && err.contains("full-stop"), "{err}");
}

#[test]
fn an_unknown_type_names_the_flag_and_the_known_ones() {
    let err = payload("stripe", &["credit=payment_intent.suceeded"], &[]).expect_err("typo").to_string();
    assert!(err.contains("--event-type credit=payment_intent.suceeded"), "{err}");
    assert!(
        err.contains("payment_intent.succeeded") && err.contains("invoice.paid"),
        "the known ones: {err}"
    );
    let err = payload("github", &["update=orders/create"], &[]).expect_err("Shopify's").to_string();
    assert!(
        err.contains("github has no event type `orders/create`") && err.contains("issues.edited"),
        "{err}"
    );
    let err = payload("shopify", &["credit=orders/create", "credit=orders/paid"], &[]).expect_err("twice");
    assert!(err.to_string().contains("credit is given twice"), "{err}");
    assert!("debit=x".parse::<EventTypeChoice>().is_err_and(|e| e.to_string().contains("credit and update")));
    assert!("credit".parse::<EventTypeChoice>().is_err_and(|e| e.to_string().contains("credit=TYPE")));
}

#[test]
fn event_types_and_fields_are_refused_without_a_provider() {
    let err = payload("hookbench", &["credit=x"], &[]).expect_err("hookbench").to_string();
    assert!(err.contains("--event-type is for a provider's bodies") && err.contains("hookbench"), "{err}");
    let err = payload("hookbench", &[], &["account=/a"]).expect_err("hookbench").to_string();
    assert!(err.contains("--field is for a provider's bodies"), "{err}");
    assert_eq!(payload("hookbench", &[], &[]).expect("plain"), Payload::Hookbench);
}

#[test]
fn a_field_is_written_where_it_points_and_the_provider_keeps_its_own() {
    let p = payload(
        "stripe",
        &[],
        &["account=/data/object/metadata/account", "version=/data/object/metadata/version"],
    )
    .expect("metadata is an object of the body");
    let b = body(&p, &credit());
    assert_eq!(b["data"]["object"]["metadata"]["account"], 42);
    assert_eq!(b["data"]["object"]["customer"], "cus_42", "the customer stays the account");
    let u = body(&p, &update());
    assert_eq!(u["data"]["object"]["metadata"]["version"], 3);
    assert!(
        u["data"]["object"]["current_period_end"].as_i64().is_some_and(|t| t > 3),
        "no longer the version"
    );
    let amount = payload("shopify", &[], &["amount=/total_weight"]).expect("an integer place");
    assert_eq!(body(&amount, &credit())["total_weight"], 1500);
    assert!(p.name().contains("account=/data/object/metadata/account"), "{}", p.name());
}

#[test]
fn a_field_that_cannot_be_reached_is_refused_at_start_naming_the_flag() {
    let err = payload("stripe", &[], &["version=/data/object/items/data/0/id"]).expect_err("array");
    let err = err.to_string();
    assert!(err.contains("--field version=/data/object/items/data/0/id") && err.contains("array"), "{err}");
    let err = payload("stripe", &[], &["amount=/data/object/customer/id"]).expect_err("a string").to_string();
    assert!(err.contains("--field amount=") && err.contains("is a string"), "{err}");
    let err = payload("github", &[], &["version=/nothing/here"]).expect_err("missing").to_string();
    assert!(err.contains("--field version=/nothing/here") && err.contains("issues.edited"), "{err}");
    let err = payload("github", &[], &["account=/a", "account=/b"]).expect_err("twice").to_string();
    assert!(err.contains("account is given twice"), "{err}");
}

#[test]
fn every_types_default_places_are_reached() {
    for format in Format::ALL {
        let types: Vec<&str> = match format {
            Format::StandardWebhooks => vec!["credit.added"],
            _ => format
                .known_types()
                .split(", ")
                .map(|t| Box::leak(t.to_string().into_boxed_str()) as &str)
                .collect(),
        };
        for t in types {
            for kind in ["credit", "update"] {
                let choice = format!("{kind}={t}");
                let p = payload(format.as_str(), &[&choice], &[]);
                assert!(p.is_ok(), "{} {choice}: {:?}", format.as_str(), p.err());
            }
        }
    }
}

#[test]
fn an_events_object_follows_fields_object_and_otherwise_its_owner() {
    let shared = |mut f: Fields, id: &str| {
        f.id = id.into();
        f.object = Some("tok9".into());
        f
    };
    for (name, pointer) in [
        ("stripe", "/data/object/id"),
        ("github", "/issue/id"),
        ("shopify", "/id"),
        ("standard-webhooks", "/data/id"),
    ] {
        let p = payload(name, &[], &[]).expect(name);
        let (a, b) = (body(&p, &shared(credit(), "e1")), body(&p, &shared(credit(), "e2")));
        assert_eq!(a.pointer(pointer), b.pointer(pointer), "{name}: one object under two event ids");
        assert_ne!(a.pointer(pointer), None, "{name}");
        let (a, b) = (
            body(&p, &Fields { id: "e1".into(), ..credit() }),
            body(&p, &Fields { id: "e2".into(), ..credit() }),
        );
        assert_ne!(a.pointer(pointer), b.pointer(pointer), "{name}: without an object, each event's own");
    }
    let stripe = Payload::provider(Format::Stripe);
    let o = body(&stripe, &shared(credit(), "e1"));
    assert_eq!(o["data"]["object"]["id"], "pi_tok9");
    let (a, b) = (
        body(&stripe, &Fields { id: "e1".into(), ..update() }),
        body(&stripe, &Fields { id: "e2".into(), ..update() }),
    );
    assert_eq!(a["data"]["object"]["id"], b["data"]["object"]["id"], "an account keeps one subscription");
}

#[test]
fn the_wire_sends_the_providers_headers_once() {
    use crate::wire::{IdSpace, Poison, Scheme, Signer, Wire};
    let signer = Signer::new(Scheme::Github, &["s3cret".into()]).expect("a signer");
    let wire = Wire {
        signer,
        payload: Payload::provider(Format::Github),
        ids: IdSpace::default(),
        poison: Poison::default(),
        credit_base: None,
    };
    let (_, headers) = wire.attempt(&credit(), 1);
    let events: Vec<_> = headers.iter().filter(|(n, _)| *n == "x-github-event").collect();
    assert_eq!(events, [&("x-github-event", "issues".to_string())], "{headers:?}");
    assert!(headers.iter().any(|(n, _)| *n == "x-hub-signature-256"));
}

#[test]
fn what_is_each_events_own_differs_and_what_the_account_keeps_does_not() {
    let stripe = Payload::provider(Format::Stripe);
    let (a, b) = (
        body(&stripe, &Fields { id: "e1".into(), object: Some("tok".into()), ..credit() }),
        body(&stripe, &Fields { id: "e2".into(), object: Some("tok".into()), ..credit() }),
    );
    assert_eq!(a["data"]["object"]["id"], b["data"]["object"]["id"]);
    assert_ne!(a["request"]["id"], b["request"]["id"], "two events, two requests");
    assert_ne!(a["request"]["idempotency_key"], b["request"]["idempotency_key"]);
    let github = Payload::provider(Format::Github);
    let (a, b) = (body(&github, &credit()), body(&github, &Fields { id: "e2".into(), ..credit() }));
    assert_ne!(a["issue"]["id"], b["issue"]["id"], "two issues opened");
    assert_eq!(a["repository"]["node_id"], b["repository"]["node_id"], "in the account's one repository");
    let other = body(&github, &Fields { account: 43, ..credit() });
    assert_ne!(a["repository"]["node_id"], other["repository"]["node_id"]);
}
