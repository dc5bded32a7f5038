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
    for format in Format::ALL.iter().copied() {
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

/// A form-encoded body's pairs.
fn form(p: &Payload, f: &Fields) -> std::collections::BTreeMap<String, String> {
    form_urlencoded::parse(&p.render(f)).into_owned().collect()
}

#[test]
fn every_signing_scheme_of_a_provider_implies_its_bodies() {
    for scheme in crate::wire::Scheme::ALL.iter().copied() {
        match Format::signed_by(scheme) {
            Some(format) => assert_eq!(format.as_str(), scheme.as_str()),
            None => assert_eq!(scheme, crate::wire::Scheme::None),
        }
    }
    assert_eq!(Format::ALL.len(), 15);
    for format in Format::ALL.iter().copied() {
        assert_eq!(Format::named(format.as_str()), Some(format));
    }
    let names =
        ["slack", "twilio", "square", "paddle", "sendgrid", "discord", "linear", "gitlab", "zoom", "twitch"];
    for name in names {
        assert!(Format::named(name).is_some(), "{name}");
        let scheme = crate::wire::Scheme::ALL.iter().copied().find(|s| s.as_str() == name).expect("a scheme");
        assert_eq!(Payload::implied(None, Some(scheme)), name);
    }
}

#[test]
fn only_twilio_is_form_encoded_and_only_linear_is_timestamped() {
    for format in Format::ALL.iter().copied() {
        let p = Payload::provider(format);
        let form = format == Format::Twilio;
        let expected = if form { "application/x-www-form-urlencoded" } else { "application/json" };
        assert_eq!(p.content_type(), expected, "{}", format.as_str());
        assert_eq!(p.timestamped(), format == Format::Linear, "{}", format.as_str());
        if !form {
            let _ = body(&p, &credit());
            let _ = body(&p, &update());
        }
    }
    assert_eq!(Payload::Hookbench.content_type(), "application/json");
    assert!(!Payload::Hookbench.timestamped());
}

#[test]
fn a_slack_body_is_an_event_callback_with_the_fields_in_the_messages_metadata() {
    let p = Payload::provider(Format::Slack);
    let b = body(&p, &credit());
    assert_eq!((b["type"].as_str(), b["event_id"].as_str()), (Some("event_callback"), Some("a1_evt_000007")));
    assert_eq!(b["event_time"], 1_764_460_800);
    assert!(b["token"].is_string() && b["team_id"].is_string() && b["api_app_id"].is_string());
    assert_eq!(b["authorizations"][0]["is_bot"], true);
    assert_eq!(b["event"]["type"], "message");
    let m = &b["event"]["metadata"]["event_payload"];
    assert_eq!((m["account"].as_i64(), m["amount"].as_i64()), (Some(42), Some(1500)));
    let u = body(&p, &update());
    assert_eq!(
        (u["event"]["type"].as_str(), u["event_id"].as_str()),
        (Some("message_metadata_updated"), Some("a1_evt_000008"))
    );
    let m = &u["event"]["metadata"]["event_payload"];
    assert_eq!((m["account"].as_i64(), m["version"].as_i64()), (Some(42), Some(3)));
    assert!(p.headers(&credit()).is_empty(), "the signer's headers are all there is");
    for t in ["message", "message_metadata_posted", "message_metadata_updated"] {
        let p = payload("slack", &[&format!("credit={t}")], &[]).expect(t);
        let b = body(&p, &credit());
        assert_eq!((b["event"]["type"].as_str(), b["event_id"].as_str()), (Some(t), Some("a1_evt_000007")));
        assert_eq!(b["event"]["metadata"]["event_payload"]["amount"], 1500, "{t}");
    }
}

/// Twilio's JSON variant holds the same callback's pairs as a JSON object of strings.
#[test]
fn a_twilio_json_body_is_the_forms_pairs_as_json() {
    let (form, json) = (Payload::provider(Format::Twilio), Payload::provider(Format::TwilioJson));
    let pairs: std::collections::BTreeMap<String, String> =
        form_urlencoded::parse(&form.render(&credit())).into_owned().collect();
    let object: std::collections::BTreeMap<String, String> =
        serde_json::from_slice(&json.render(&credit())).expect("a JSON object of strings");
    assert_eq!(pairs, object);
    assert_eq!(json.content_type(), "application/json");
}

#[test]
fn a_twilio_body_is_a_form_encoded_status_callback() {
    let p = Payload::provider(Format::Twilio);
    let raw = String::from_utf8(p.render(&credit())).expect("utf-8");
    assert!(raw.contains("MessageStatus=delivered") && raw.contains("ApiVersion=2010-04-01"), "{raw}");
    assert!(serde_json::from_str::<Value>(&raw).is_err(), "not JSON: {raw}");
    let b = form(&p, &credit());
    assert!(b["MessageSid"].starts_with("SM") && b["MessageSid"].len() == 34, "{b:?}");
    assert_eq!(b["SmsSid"], b["MessageSid"]);
    assert_eq!((b["AccountSid"].as_str(), b["NumSegments"].as_str()), ("42", "1500"));
    assert!(b["From"].starts_with("+1555") && b["To"].starts_with("+1555"), "{b:?}");
    assert!(!raw.contains("a1_evt_000007"), "the id is in I-Twilio-Idempotency-Token, not the body");
    let u = form(&p, &update());
    assert_eq!((u["MessageStatus"].as_str(), u["RawDlrDoneDate"].as_str()), ("read", "3"));
    let received = payload("twilio", &["credit=received"], &[]).expect("received");
    let b = form(&received, &credit());
    assert_eq!((b["SmsStatus"].as_str(), b["NumSegments"].as_str()), ("received", "1500"));
    assert!(b.contains_key("Body") && b.contains_key("NumMedia"), "{b:?}");
    let mapped = payload("twilio", &[], &["account=/To", "amount=/NumMedia"]).expect("one key deep");
    let b = form(&mapped, &credit());
    assert_eq!((b["To"].as_str(), b["NumMedia"].as_str()), ("42", "1500"));
    assert!(b["AccountSid"].starts_with("AC"), "the sid stays Twilio's when the account goes elsewhere");
    let err = payload("twilio", &[], &["account=/To/x"]).expect_err("a string").to_string();
    assert!(err.contains("--field account=/To/x") && err.contains("is a string"), "{err}");
    // A text with `&`, `=`, `+` and spaces survives the encoding.
    let tricky = form(&received, &Fields { object: Some("a&b=c+d e".into()), ..credit() });
    assert_eq!(tricky["Body"], "hookbench event a&b=c+d e");
}

#[test]
fn a_square_body_is_an_event_with_its_object_under_its_type() {
    let p = Payload::provider(Format::Square);
    let b = body(&p, &credit());
    assert_eq!(
        (b["type"].as_str(), b["event_id"].as_str()),
        (Some("payment.created"), Some("a1_evt_000007"))
    );
    assert_eq!(b["created_at"], "2025-11-30T00:00:00.000Z");
    assert!(b["merchant_id"].is_string());
    assert_eq!(b["data"]["type"], "payment");
    let o = &b["data"]["object"]["payment"];
    assert_eq!(b["data"]["id"], o["id"]);
    assert_eq!((o["reference_id"].as_str(), o["amount_money"]["amount"].as_i64()), (Some("42"), Some(1500)));
    assert_eq!(o["amount_money"]["currency"], "USD");
    let u = body(&p, &update());
    assert_eq!(
        (u["type"].as_str(), u["data"]["type"].as_str()),
        (Some("customer.updated"), Some("customer"))
    );
    let c = &u["data"]["object"]["customer"];
    assert_eq!((c["reference_id"].as_str(), c["version"].as_i64()), (Some("42"), Some(3)));
    let updated = payload("square", &["credit=payment.updated"], &[]).expect("payment.updated");
    assert_eq!(body(&updated, &credit())["data"]["object"]["payment"]["amount_money"]["amount"], 1500);
}

#[test]
fn a_paddle_body_is_a_notification_with_its_entity_in_data() {
    let p = Payload::provider(Format::Paddle);
    let b = body(&p, &credit());
    assert_eq!(
        (b["event_type"].as_str(), b["event_id"].as_str()),
        (Some("transaction.completed"), Some("a1_evt_000007"))
    );
    assert_eq!(b["occurred_at"], "2025-11-30T00:00:00.000000Z");
    assert!(b["notification_id"].as_str().is_some_and(|n| n.starts_with("ntf_")));
    let d = &b["data"];
    assert!(d["id"].as_str().is_some_and(|id| id.starts_with("txn_")));
    assert_eq!(
        (d["customer_id"].as_str(), d["details"]["totals"]["total"].as_str()),
        (Some("ctm_42"), Some("1500"))
    );
    assert_eq!(d["status"], "completed");
    let u = body(&p, &update());
    let d = &u["data"];
    assert_eq!(
        (u["event_type"].as_str(), d["status"].as_str()),
        (Some("subscription.updated"), Some("active"))
    );
    assert_eq!((d["customer_id"].as_str(), d["custom_data"]["version"].as_i64()), (Some("ctm_42"), Some(3)));
    assert_eq!(d["items"][0]["price"]["id"], "pri_v3");
    let canceled = payload("paddle", &["update=subscription.canceled"], &[]).expect("canceled");
    assert_eq!(body(&canceled, &update())["data"]["status"], "canceled");
}

#[test]
fn a_sendgrid_body_is_an_array_of_one_event_its_fields_custom_arguments() {
    let p = Payload::provider(Format::Sendgrid);
    let b = body(&p, &credit());
    let events = b.as_array().expect("an array");
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!((e["event"].as_str(), e["sg_event_id"].as_str()), (Some("delivered"), Some("a1_evt_000007")));
    assert_eq!((e["account"].as_str(), e["amount"].as_str()), (Some("42"), Some("1500")));
    assert_eq!(e["timestamp"], 1_764_460_800);
    assert!(e["sg_message_id"].is_string() && e["smtp-id"].is_string() && e["email"].is_string());
    let u = body(&p, &update());
    assert_eq!((u[0]["event"].as_str(), u[0]["version"].as_str()), (Some("group_resubscribe"), Some("3")));
    let mapped =
        payload("sendgrid", &[], &["account=/0/tenant", "amount=/0/tls"]).expect("into the one event");
    let b = body(&mapped, &credit());
    assert_eq!((b[0]["tenant"].as_i64(), b[0]["tls"].as_i64()), (Some(42), Some(1500)));
    let err = payload("sendgrid", &[], &["account=/account"]).expect_err("not an index").to_string();
    assert!(err.contains("--field account=/account") && err.contains("root is an array"), "{err}");
    let err = payload("sendgrid", &[], &["account=/1/account"]).expect_err("one event").to_string();
    assert!(err.contains("array of 1"), "{err}");
}

#[test]
fn a_discord_body_is_an_interaction_its_amount_in_the_components_custom_id() {
    let p = Payload::provider(Format::Discord);
    let b = body(&p, &credit());
    assert_eq!(
        (b["id"].as_str(), b["type"].as_i64(), b["version"].as_i64()),
        (Some("a1_evt_000007"), Some(3), Some(1))
    );
    assert_eq!((b["guild_id"].as_str(), b["data"]["custom_id"].as_str()), (Some("42"), Some("credit_1500")));
    assert!(b["application_id"].is_string() && b["token"].is_string() && b["channel_id"].is_string());
    assert!(b["member"]["user"]["id"].is_string());
    let u = body(&p, &update());
    assert_eq!(u["data"]["custom_id"], "plan_3");
    let command = payload("discord", &["credit=application_command"], &[]).expect("a command");
    assert!(!command.carries_amount(), "its amount is in data.options, an array");
    let b = body(&command, &credit());
    assert_eq!((b["type"].as_i64(), b["guild_id"].as_str()), (Some(2), Some("42")));
    assert_eq!(
        (b["data"]["options"][0]["name"].as_str(), b["data"]["options"][0]["value"].as_i64()),
        (Some("amount"), Some(1500))
    );
    let modal = payload("discord", &["credit=modal_submit"], &[]).expect("a modal");
    assert_eq!(body(&modal, &credit())["type"], 5);
}

#[test]
fn a_linear_body_carries_the_attempts_time_and_no_delivery_id() {
    let p = Payload::provider(Format::Linear);
    let sent = 1_764_470_000;
    let b: Value = serde_json::from_slice(&p.render_at(&credit(), sent)).expect("JSON");
    assert_eq!(b["webhookTimestamp"], sent * 1000, "the attempt's time, in milliseconds");
    assert_eq!(body(&p, &credit())["webhookTimestamp"], 1_764_460_800_000_i64, "render: the event's time");
    assert_ne!(p.render_at(&credit(), sent), p.render_at(&credit(), sent + 1), "each attempt its own");
    assert_eq!((b["action"].as_str(), b["type"].as_str()), (Some("create"), Some("Issue")));
    assert_eq!(b["createdAt"], "2025-11-30T00:00:00.000Z");
    assert!(b["organizationId"].is_string() && b["webhookId"].is_string() && b["url"].is_string());
    let d = &b["data"];
    assert_eq!((d["team"]["key"].as_str(), d["estimate"].as_i64()), (Some("42"), Some(1500)));
    assert!(d["id"].as_str().is_some_and(|id| id.len() == 36));
    assert_eq!(p.event_type(Kind::Credit), "Issue", "Linear-Event: Issue");
    assert!(p.headers(&credit()).is_empty(), "Linear-Delivery and Linear-Event are the signer's");
    let u = body(&p, &update());
    assert_eq!((u["action"].as_str(), u["data"]["estimate"].as_i64()), (Some("update"), Some(3)));
    assert!(u["updatedFrom"].is_object());
    let removed = payload("linear", &["update=Issue.remove"], &[]).expect("remove");
    assert_eq!(body(&removed, &update())["action"], "remove");
}

#[test]
fn a_gitlab_body_is_its_hook_named_in_x_gitlab_event() {
    let p = Payload::provider(Format::Gitlab);
    let b = body(&p, &credit());
    assert_eq!((b["object_kind"].as_str(), b["project"]["id"].as_i64()), (Some("issue"), Some(42)));
    let a = &b["object_attributes"];
    assert_eq!(
        (a["action"].as_str(), a["state"].as_str(), a["weight"].as_i64()),
        (Some("open"), Some("opened"), Some(1500))
    );
    assert_eq!(a["created_at"], "2025-11-30 00:00:00 UTC");
    let headers: std::collections::BTreeMap<_, _> = p.headers(&credit()).into_iter().collect();
    assert_eq!(headers["x-gitlab-event"], "Issue Hook");
    assert_eq!(p.event_type(Kind::Update), "Issue Hook");
    let u = body(&p, &update());
    assert_eq!(
        (u["object_attributes"]["action"].as_str(), u["object_attributes"]["lock_version"].as_i64()),
        (Some("update"), Some(3))
    );
    let push = payload("gitlab", &["credit=push"], &[]).expect("push");
    let b = body(&push, &credit());
    assert_eq!(
        (b["object_kind"].as_str(), b["project"]["id"].as_i64(), b["total_commits_count"].as_i64()),
        (Some("push"), Some(42), Some(1500))
    );
    assert!(push.headers(&credit()).contains(&("x-gitlab-event", "Push Hook".to_string())));
    let closed = payload("gitlab", &["update=issue.close"], &[]).expect("close");
    assert_eq!(body(&closed, &update())["object_attributes"]["state"], "closed");
}

#[test]
fn a_twitch_body_is_a_notification_with_its_subscription_in_headers() {
    let p = Payload::provider(Format::Twitch);
    let b = body(&p, &credit());
    let s = &b["subscription"];
    assert_eq!(
        (s["type"].as_str(), s["version"].as_str(), s["status"].as_str()),
        (Some("channel.channel_points_custom_reward_redemption.add"), Some("1"), Some("enabled"))
    );
    assert_eq!((s["transport"]["method"].as_str(), s["cost"].as_i64()), (Some("webhook"), Some(0)));
    let e = &b["event"];
    assert_eq!((e["broadcaster_user_id"].as_str(), e["reward"]["cost"].as_i64()), (Some("42"), Some(1500)));
    let headers: std::collections::BTreeMap<_, _> = p.headers(&credit()).into_iter().collect();
    assert_eq!(
        headers["twitch-eventsub-subscription-type"],
        "channel.channel_points_custom_reward_redemption.add"
    );
    assert_eq!(headers["twitch-eventsub-subscription-version"], "1");
    let u = body(&p, &update());
    assert_eq!(
        (u["subscription"]["type"].as_str(), u["event"]["cumulative_months"].as_i64()),
        (Some("channel.subscription.message"), Some(3))
    );
    let follow = payload("twitch", &["update=channel.follow"], &[]).expect("follow");
    assert!(follow.headers(&update()).contains(&("twitch-eventsub-subscription-version", "2".to_string())));
    assert_eq!(body(&follow, &update())["subscription"]["version"], "2");
    let cheer = payload("twitch", &["credit=channel.cheer"], &[]).expect("cheer");
    assert_eq!(body(&cheer, &credit())["event"]["bits"], 1500);
}

#[test]
fn a_zoom_body_has_its_fields_in_payload() {
    let p = Payload::provider(Format::Zoom);
    let b = body(&p, &credit());
    assert_eq!(
        (b["event"].as_str(), b["event_ts"].as_i64()),
        (Some("meeting.ended"), Some(1_764_460_800_000))
    );
    let o = &b["payload"]["object"];
    assert_eq!((b["payload"]["account_id"].as_str(), o["duration"].as_i64()), (Some("42"), Some(1500)));
    assert!(o["id"].as_i64().is_some_and(|id| id > 80_000_000_000) && o["uuid"].is_string());
    let u = body(&p, &update());
    assert_eq!(
        (u["event"].as_str(), u["payload"]["time_stamp"].as_i64()),
        (Some("meeting.updated"), Some(3))
    );
}

/// JSON as JavaScript holds it: objects keep their keys in the order parsed (JavaScript moves
/// keys that are array indices first), numbers are doubles.
#[derive(Debug)]
enum Js {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Arr(Vec<Js>),
    Obj(Vec<(String, Js)>),
}

impl<'de> serde::Deserialize<'de> for Js {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Js;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Js, E> {
                Ok(Js::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Js, E> {
                Ok(Js::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Js, E> {
                Ok(Js::Int(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Js, E> {
                Ok(Js::Int(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Js, E> {
                Ok(Js::Float(n))
            }
            fn visit_str<E>(self, s: &str) -> Result<Js, E> {
                Ok(Js::Str(s.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Js, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Js::Arr(out))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Js, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, Js>()? {
                    out.push(entry);
                }
                Ok(Js::Obj(out))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// What `JSON.stringify(JSON.parse(body))` gives back (ECMA-262's SerializeJSONProperty and
/// QuoteJSONString), for the JSON a body can hold; a number JavaScript would not write back as
/// it was is an error.
fn js_stringify(v: &Js, out: &mut String) -> Result<(), String> {
    match v {
        Js::Null => out.push_str("null"),
        Js::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Js::Int(n) if n.unsigned_abs() <= 1 << 53 => out.push_str(&n.to_string()),
        Js::Int(n) => return Err(format!("{n} is past 2^53: JavaScript rounds it")),
        Js::Float(n) => return Err(format!("{n} is not an integer")),
        Js::Str(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Js::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                js_stringify(item, out)?;
            }
            out.push(']');
        }
        Js::Obj(entries) => {
            let index = |k: &str| k.parse::<u32>().ok().filter(|n| n.to_string() == k && *n != u32::MAX);
            let mut keys: Vec<&(String, Js)> = entries.iter().filter(|(k, _)| index(k).is_some()).collect();
            keys.sort_by_key(|(k, _)| index(k));
            keys.extend(entries.iter().filter(|(k, _)| index(k).is_none()));
            out.push('{');
            for (i, (k, v)) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                js_stringify(&Js::Str(k.clone()), out)?;
                out.push(':');
                js_stringify(v, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn js_round_trip(body: &[u8]) -> Result<String, String> {
    let parsed: Js = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let mut out = String::new();
    js_stringify(&parsed, &mut out)?;
    Ok(out)
}

#[test]
fn the_js_round_trip_is_not_vacuous() {
    assert_eq!(js_round_trip(br#"{"b":1,"a":[true,null]}"#).as_deref(), Ok(r#"{"b":1,"a":[true,null]}"#));
    assert_eq!(js_round_trip(br#"{"b":1,"0":2}"#).as_deref(), Ok(r#"{"0":2,"b":1}"#), "an index moves first");
    assert_eq!(js_round_trip(br#"{"a": 1}"#).as_deref(), Ok(r#"{"a":1}"#), "no spaces");
    assert_eq!(js_round_trip(br#"["\u00e9\/\u001F"]"#).as_deref(), Ok("[\"é/\\u001f\"]"));
    assert!(js_round_trip(b"[1.5]").is_err() && js_round_trip(b"[9007199254740993]").is_err());
}

/// Zoom's verifier signs `JSON.stringify(req.body)`: every Zoom body, whatever its strings hold,
/// is what JavaScript writes back from it, byte for byte.
#[test]
fn every_zoom_body_is_what_javascript_writes_back() {
    let strange = Fields {
        plan: "plan_v3 \"ü\" \\ \u{1}\u{7f}\u{2028}\t/é😀".into(),
        object: Some("tok<&>".into()),
        ..update()
    };
    for t in Format::Zoom.known_types().split(", ") {
        for (kind, f) in [("credit", credit()), ("update", update()), ("update", strange.clone())] {
            let p = payload("zoom", &[&format!("{kind}={t}")], &[]).expect(t);
            let f = Fields { kind: if kind == "credit" { Kind::Credit } else { Kind::Update }, ..f };
            let bytes = p.render(&f);
            let text = String::from_utf8(bytes.clone()).expect("utf-8");
            assert_eq!(js_round_trip(&bytes).as_deref(), Ok(text.as_str()), "{t} {kind}");
        }
    }
    let p = payload("zoom", &[], &["account=/payload/10", "version=/payload/9"]).expect("index-like keys");
    let bytes = p.render(&update());
    assert_ne!(
        js_round_trip(&bytes).as_deref(),
        Ok(String::from_utf8(bytes.clone()).expect("utf-8").as_str()),
        "a key JavaScript moves is caught"
    );
}

#[test]
fn the_ten_providers_objects_follow_fields_object_and_otherwise_the_event() {
    let with =
        |id: &str, object: Option<&str>| Fields { id: id.into(), object: object.map(Into::into), ..credit() };
    for (name, pointer) in [
        ("slack", "/event/ts"),
        ("square", "/data/id"),
        ("paddle", "/data/id"),
        ("sendgrid", "/0/sg_message_id"),
        ("discord", "/message/id"),
        ("linear", "/data/id"),
        ("gitlab", "/object_attributes/id"),
        ("zoom", "/payload/object/id"),
        ("twitch", "/event/id"),
    ] {
        let p = payload(name, &[], &[]).expect(name);
        let (a, b) = (body(&p, &with("e1", Some("tok9"))), body(&p, &with("e2", Some("tok9"))));
        assert_ne!(a.pointer(pointer), None, "{name}");
        assert_eq!(a.pointer(pointer), b.pointer(pointer), "{name}: one object under two event ids");
        let (a, b) = (body(&p, &with("e1", None)), body(&p, &with("e2", None)));
        assert_ne!(a.pointer(pointer), b.pointer(pointer), "{name}: without an object, each event's own");
    }
    let twilio = Payload::provider(Format::Twilio);
    let (a, b) = (form(&twilio, &with("e1", Some("tok9"))), form(&twilio, &with("e2", Some("tok9"))));
    assert_eq!(a["MessageSid"], b["MessageSid"]);
    let (a, b) = (form(&twilio, &with("e1", None)), form(&twilio, &with("e2", None)));
    assert_ne!(a["MessageSid"], b["MessageSid"]);
}

#[test]
fn a_reports_payload_name_rebuilds_the_same_bodies() {
    let types =
        ["credit=issues.opened".parse().expect("a type"), "update=issues.closed".parse().expect("a type")];
    let fields = ["amount=/issue/comments".parse().expect("a mapping")];
    let given = Payload::with("github", &types, &fields).expect("github's bodies");
    let Payload::Provider(bodies) = &given else { panic!("a provider's bodies") };
    let rebuilt = Payload::from_report_name(&bodies.name()).expect("the recorded name");
    assert_eq!(rebuilt.render(&credit()), given.render(&credit()));
    assert!(matches!(Payload::from_report_name("hookbench"), Ok(Payload::Hookbench)));
    let err = Payload::from_report_name("github (credit=nope.nope, update=issues.edited)").map(|_| ());
    assert!(err.expect_err("an unknown type").to_string().contains("nope.nope"));
}
