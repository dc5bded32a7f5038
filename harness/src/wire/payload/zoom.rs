//! Zoom's bodies: an event notification `{event, event_ts, payload: {account_id, object}}` about
//! a meeting (`meeting.started`, `meeting.ended`, `meeting.updated`), the delivery's id in
//! `x-zm-trackingid` (the signer's). Zoom's documented verifier signs
//! `JSON.stringify(request.body)`, the body as JavaScript parses and writes it back, so the body
//! is written exactly so: compact, its keys in the order serde_json writes them (sorted, none of
//! them a number, which JavaScript would move first), integers only, no escape JavaScript would
//! not write (the tests hold it to a JavaScript-like round trip).
//!
//! The account is Zoom's `payload.account_id` (a string); a meeting's amount is its `duration`
//! in minutes (minutes used); an update's version is the `payload.time_stamp` of the change (in
//! milliseconds, the order Zoom's changes come in). The meeting is the object.

use serde_json::{Value, json};

use super::spec::{EventSpec, Owner, Subject, rfc3339};

/// Zoom's event types hookbench writes.
pub(super) const EVENTS: &[EventSpec] = &[
    meeting_event("meeting.started", Owner::Event, meeting),
    meeting_event("meeting.ended", Owner::Event, meeting),
    meeting_event("meeting.updated", Owner::Account, updated),
];

const fn meeting_event(name: &'static str, owner: Owner, build: fn(&Subject<'_>) -> Value) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner,
        build,
        account: "/payload/account_id",
        amount: Some("/payload/object/duration"),
        version: Some("/payload/time_stamp"),
    }
}

/// The meeting's number (an integer of 11 digits) and its UUID (base64 of 16 bytes), made from
/// the object's token.
fn ids(s: &Subject<'_>) -> (i64, String) {
    use base64::Engine as _;
    let number = 80_000_000_000 + s.numeric_id("meeting") % 10_000_000_000;
    let bytes = hex::decode(s.hex("uuid", 32)).unwrap_or_default();
    (number, base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn host(s: &Subject<'_>) -> String {
    s.account_hex("host", 22)
}

fn notification(s: &Subject<'_>, payload: Value) -> Value {
    json!({ "event": s.event_type, "event_ts": s.f.created.saturating_mul(1000), "payload": payload })
}

fn meeting(s: &Subject<'_>) -> Value {
    let (id, uuid) = ids(s);
    let ended = s.event_type == "meeting.ended";
    let mut object = json!({
        "id": id, "uuid": uuid, "host_id": host(s), "topic": format!("hookbench event {}", s.token),
        "type": 2, "start_time": rfc3339(s.f.created - if ended { 3_600 } else { 0 }), "timezone": "UTC",
        "duration": s.f.amount,
    });
    if ended {
        object["end_time"] = Value::from(s.created_rfc3339());
    }
    notification(s, json!({ "account_id": s.f.account.to_string(), "object": object }))
}

fn updated(s: &Subject<'_>) -> Value {
    let (id, uuid) = ids(s);
    let topic = format!("hookbench {}", s.f.plan);
    notification(
        s,
        json!({
            "account_id": s.f.account.to_string(), "operator": "audit@hookbench.invalid",
            "operator_id": host(s), "operation": "single",
            "object": { "id": id, "uuid": uuid, "topic": topic, "duration": s.f.amount },
            "old_object": { "id": id, "uuid": uuid, "topic": "hookbench (before the update)" },
            "time_stamp": s.f.version,
        }),
    )
}
