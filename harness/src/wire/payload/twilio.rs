//! Twilio's bodies: a Messaging status callback (`sent`, `delivered`, `read`, `undelivered`,
//! `failed`) or an incoming message (`received`), form-encoded
//! (`application/x-www-form-urlencoded`) as Twilio posts them. The delivery's id travels in
//! `I-Twilio-Idempotency-Token` (the signer's), not in the body.
//!
//! The body is built as a flat JSON object of the form's pairs, so that `--field` places fields
//! with the same JSON pointers as every other provider's (`/AccountSid`, one key deep; a number
//! is written as its decimal text), and is form-encoded last, its pairs in the object's order.
//! Twilio's callbacks carry nothing of a sender's own, so the fields take the places that come
//! nearest: the account is the `AccountSid` (the subaccount a platform gives each of its
//! customers, which is how it tells their callbacks apart), the amount the `NumSegments` billed,
//! and the version `RawDlrDoneDate` (the carrier's time of the status, the order statuses come
//! in). The message (`MessageSid`) is the object an event is about.

use serde_json::{Map, Value};

use super::spec::{EventSpec, Owner, Subject};

/// The media type of Twilio's bodies.
pub(super) const CONTENT_TYPE: &str = "application/x-www-form-urlencoded";

/// The API version Twilio's callbacks name.
const API_VERSION: &str = "2010-04-01";

/// Twilio's statuses hookbench writes (`received`: an incoming message).
pub(super) const EVENTS: &[EventSpec] = &[
    status("sent", Owner::Event),
    status("delivered", Owner::Event),
    status("received", Owner::Event),
    status("read", Owner::Account),
    status("undelivered", Owner::Account),
    status("failed", Owner::Account),
];

const fn status(name: &'static str, owner: Owner) -> EventSpec {
    EventSpec {
        name,
        header: "",
        owner,
        build: callback,
        account: "/AccountSid",
        amount: Some("/NumSegments"),
        version: Some("/RawDlrDoneDate"),
    }
}

/// The body's pairs, form-encoded in the object's order: a string as it is, a number or a
/// boolean as its text, `null` left out, anything else as its JSON.
pub(super) fn form(body: &Value) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    if let Value::Object(pairs) = body {
        for (name, value) in pairs {
            match value {
                Value::Null => {}
                Value::String(text) => {
                    out.append_pair(name, text);
                }
                other => {
                    out.append_pair(name, &other.to_string());
                }
            }
        }
    }
    out.finish()
}

/// The form's pairs as a JSON object of strings.
fn pairs<const N: usize>(pairs: [(&str, String); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), Value::String(v))).collect()
}

/// `+1555` and seven digits made from `n`: a number in the range reserved for fiction.
fn phone(n: i64) -> String {
    format!("+1555{:07}", n.rem_euclid(10_000_000))
}

fn callback(s: &Subject<'_>) -> Value {
    let sid = format!("SM{}", s.hex("message", 32));
    let account_sid = format!("AC{}", s.account_hex("account", 32));
    let service = format!("MG{}", s.account_hex("service", 32));
    let (ours, theirs) = (phone(s.f.account), phone(s.numeric_id("to")));
    let incoming = s.event_type == "received";
    let (from, to) = if incoming { (theirs, ours) } else { (ours, theirs) };
    let mut body = pairs([
        ("AccountSid", account_sid),
        ("ApiVersion", API_VERSION.to_string()),
        ("From", from),
        ("MessageSid", sid.clone()),
        ("MessageStatus", s.event_type.to_string()),
        ("MessagingServiceSid", service),
        ("NumSegments", s.f.amount.max(1).to_string()),
        ("SmsSid", sid.clone()),
        ("SmsStatus", s.event_type.to_string()),
        ("To", to),
    ]);
    if incoming {
        body.extend(pairs([
            ("Body", format!("hookbench event {}", s.token)),
            ("NumMedia", "0".to_string()),
            ("SmsMessageSid", sid),
            ("FromCountry", "US".to_string()),
            ("ToCountry", "US".to_string()),
        ]));
    } else {
        // The carrier's time of the status: YYMMDDhhmm.
        let at = jiff::Timestamp::from_second(s.f.created).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        body.extend(pairs([("RawDlrDoneDate", at.strftime("%y%m%d%H%M").to_string())]));
        if matches!(s.event_type, "undelivered" | "failed") {
            body.extend(pairs([("ErrorCode", "30003".to_string())]));
        }
    }
    Value::Object(body)
}
