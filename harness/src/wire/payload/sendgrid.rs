//! SendGrid's bodies: an Event Webhook batch, a JSON array of events, here of one: `[{email,
//! timestamp, event, sg_event_id, sg_message_id, ...}]`, the delivery's id in the event's
//! `sg_event_id`. SendGrid puts a message's custom arguments among each event's own keys, as
//! strings: the account, the amount and the version are such arguments (`/0/account`,
//! `/0/amount`, `/0/version`). The message (`sg_message_id`, `smtp-id`) is the object an event is
//! about.

use serde_json::{Value, json};

use super::Kind;
use super::spec::{EventSpec, Owner, Subject, joined};

/// SendGrid's event types hookbench writes (delivery and engagement events).
pub(super) const EVENTS: &[EventSpec] = &[
    event_type("processed", Owner::Event),
    event_type("delivered", Owner::Event),
    event_type("open", Owner::Event),
    event_type("click", Owner::Event),
    event_type("bounce", Owner::Event),
    event_type("unsubscribe", Owner::Account),
    event_type("group_unsubscribe", Owner::Account),
    event_type("group_resubscribe", Owner::Account),
];

const fn event_type(name: &'static str, owner: Owner) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner,
        build: batch,
        account: "/0/account",
        amount: Some("/0/amount"),
        version: Some("/0/version"),
    }
}

fn batch(s: &Subject<'_>) -> Value {
    let account = s.f.account;
    let message = s.hex("message", 22);
    let event = json!({
        "email": format!("customer-{account}@hookbench.invalid"),
        "timestamp": s.f.created,
        "smtp-id": format!("<{message}@hookbench.invalid>"),
        "event": s.event_type,
        "category": ["hookbench"],
        "sg_event_id": s.f.id,
        "sg_message_id": format!("{message}.recvd-{}", s.hex("filter", 10)),
        "account": account.to_string(),
    });
    let extra = match s.f.kind {
        Kind::Credit => json!({ "amount": s.f.amount.to_string() }),
        Kind::Update => json!({ "plan": s.f.plan, "version": s.f.version.to_string() }),
    };
    let client = json!({ "useragent": "Mozilla/5.0 (hookbench)", "ip": "192.0.2.10" });
    let own = match s.event_type {
        "processed" => json!({ "pool": { "name": "hookbench", "id": 210 } }),
        "delivered" => json!({ "response": "250 OK", "ip": "192.0.2.1", "tls": 1 }),
        "open" => joined([client, json!({ "sg_machine_open": false })]),
        "click" => joined([
            client,
            json!({ "url": "https://hookbench.invalid/", "url_offset": { "index": 0, "type": "html" } }),
        ]),
        "bounce" => json!({
            "reason": "550 5.1.1 The email account that you tried to reach does not exist.",
            "status": "5.1.1", "type": "bounce", "bounce_classification": "Invalid Address",
            "ip": "192.0.2.1", "tls": 1,
        }),
        "group_unsubscribe" | "group_resubscribe" => joined([client, json!({ "asm_group_id": 1 })]),
        _ => client,
    };
    Value::Array(vec![joined([event, extra, own])])
}
