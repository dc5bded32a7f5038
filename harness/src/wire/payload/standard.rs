//! The Standard Webhooks envelope: `{type, timestamp, data}` as the specification's payload
//! structure has it (`type` full-stop delimited, `timestamp` in RFC 3339, `data` the event's
//! own). The types are the sender's own, so any of the specification's shape is accepted; the
//! data holds the object's id, the account, and the amount or the plan and its version.

use serde_json::{Value, json};

use super::Kind;
use super::spec::{EventSpec, Owner, Subject};

/// What `--event-type` accepts for standard-webhooks, as messages say it.
pub(super) const ANY_TYPE: &str = "any type of letters, digits, `_` and `-` in full-stop delimited parts (user.created), at most 128 characters";

/// One shape per kind; the type's name is the user's.
pub(super) const EVENTS: &[EventSpec] = &[CREDIT, UPDATE];

const CREDIT: EventSpec = EventSpec {
    name: super::CREDIT_TYPE,
    header: "",
    owner: Owner::Event,
    build: credit,
    account: "/data/account",
    amount: Some("/data/amount"),
    version: None,
};

const UPDATE: EventSpec = EventSpec {
    name: super::PLAN_TYPE,
    header: "",
    owner: Owner::Account,
    build: update,
    account: "/data/account",
    amount: None,
    version: Some("/data/version"),
};

/// The shape `kind`'s events are sent in.
pub(super) fn spec(kind: Kind) -> &'static EventSpec {
    match kind {
        Kind::Credit => &CREDIT,
        Kind::Update => &UPDATE,
    }
}

/// A name that is not a type of the specification's shape (the name as given).
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a Standard Webhooks type; a type is {ANY_TYPE}")]
pub(super) struct NotAType(String);

/// Whether `name` is a type of the specification's shape.
pub(super) fn check_type(name: &str) -> Result<(), NotAType> {
    let part_ok =
        |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if name.len() <= 128 && name.split('.').all(part_ok) { Ok(()) } else { Err(NotAType(name.to_string())) }
}

fn envelope(s: &Subject<'_>, data: Value) -> Value {
    json!({ "type": s.event_type, "timestamp": s.created_rfc3339(), "data": data })
}

fn credit(s: &Subject<'_>) -> Value {
    envelope(s, json!({ "id": s.token, "account": s.f.account, "amount": s.f.amount }))
}

fn update(s: &Subject<'_>) -> Value {
    envelope(s, json!({ "id": s.token, "account": s.f.account, "plan": s.f.plan, "version": s.f.version }))
}
