//! What each provider's module (stripe.rs, github.rs, slack.rs, twilio.rs, ...) builds its bodies
//! with: an event type's [`EventSpec`], the [`Subject`] a body is built from, and the stable ids
//! and times in it. The providers and bodies.rs, which chooses among them, both import these from
//! here, so that no provider imports the module that imports it.

use std::fmt;

use serde_json::Value;

use super::Fields;
use super::mapping::FieldName;

/// Whose object an event is about, when [`Fields::object`] names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Owner {
    /// Each event's own (made by it): the token is the event id.
    Event,
    /// The account's standing object: the token is the account number.
    Account,
}

/// What a body is built from: the event, its object's token and the type it is sent as.
pub(super) struct Subject<'a> {
    /// The event.
    pub f: &'a Fields,
    /// The object's token: ids of the object are made from it.
    pub token: String,
    /// The type (`payment_intent.succeeded`, `issues.opened`, `orders/create`).
    pub event_type: &'a str,
    /// When the attempt is sent, Unix seconds (the event's creation time outside an attempt):
    /// only a body that carries its delivery's own time (Linear's `webhookTimestamp`) reads it.
    pub sent_at: i64,
}

impl Subject<'_> {
    /// A positive integer id for the object, stable for its token (GitHub and Shopify ids are
    /// integers): FNV-1a of the token, kept below 2^53 so that any JSON reader holds it exactly.
    pub fn numeric_id(&self, salt: &str) -> i64 {
        numeric_id(&format!("{salt}:{}", self.token))
    }

    /// `n` hex digits stable for the object's token and `salt` (a commit's sha, a secret's
    /// suffix).
    pub fn hex(&self, salt: &str, n: usize) -> String {
        hex(&self.token, salt, n)
    }

    /// `n` hex digits stable for the event itself and `salt` (what each event has of its own,
    /// whatever object it is about: its request's id).
    pub fn event_hex(&self, salt: &str, n: usize) -> String {
        hex(&self.f.id, salt, n)
    }

    /// `n` hex digits stable for the account and `salt` (its repository's node id).
    pub fn account_hex(&self, salt: &str, n: usize) -> String {
        hex(&self.f.account.to_string(), salt, n)
    }

    /// The event's creation time in RFC 3339 (`2026-12-01T16:00:00Z`).
    pub fn created_rfc3339(&self) -> String {
        rfc3339(self.f.created)
    }

    /// The event's creation time in RFC 3339 with `digits` fractional digits, all zero
    /// (`2026-12-01T16:00:00.000Z`), as the providers that always write a fraction do.
    pub fn created_fraction(&self, digits: usize) -> String {
        rfc3339_fraction(self.f.created, digits)
    }

    /// A UUID-shaped id (version 4, RFC 9562 variant) stable for the object's token and `salt`.
    pub fn uuid(&self, salt: &str) -> String {
        uuid(&hex(&self.token, salt, 32))
    }

    /// A UUID-shaped id stable for the account and `salt`.
    pub fn account_uuid(&self, salt: &str) -> String {
        uuid(&self.account_hex(salt, 32))
    }
}

/// 32 hex digits as a version 4 UUID (`xxxxxxxx-xxxx-4xxx-axxx-xxxxxxxxxxxx`).
fn uuid(h: &str) -> String {
    format!("{}-{}-4{}-a{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
}

/// Unix seconds in RFC 3339, UTC, with `digits` fractional digits (all zero: times are whole
/// seconds).
pub(super) fn rfc3339_fraction(seconds: i64, digits: usize) -> String {
    let whole = rfc3339(seconds);
    let stem = whole.strip_suffix('Z').unwrap_or(&whole);
    format!("{stem}.{}Z", "0".repeat(digits))
}

/// The keys of several objects in one (serde_json's `json!` recurses once per key, past the
/// compiler's limit for an object as large as a provider's, so large bodies are written in
/// parts).
pub(super) fn joined<const N: usize>(parts: [Value; N]) -> Value {
    let mut out = serde_json::Map::new();
    for part in parts {
        if let Value::Object(map) = part {
            out.extend(map);
        }
    }
    Value::Object(out)
}

/// Unix seconds in RFC 3339, UTC (the epoch for a time out of range).
pub(super) fn rfc3339(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds).unwrap_or(jiff::Timestamp::UNIX_EPOCH).to_string()
}

fn hex(text: &str, salt: &str, n: usize) -> String {
    let mut out = String::with_capacity(n + 16);
    let mut round = 0u32;
    while out.len() < n {
        out.push_str(&format!("{:016x}", fnv1a(&format!("{salt}:{round}:{text}"))));
        round += 1;
    }
    out.truncate(n);
    out
}

fn fnv1a(text: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    text.bytes().fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

fn numeric_id(text: &str) -> i64 {
    let masked = fnv1a(text) & ((1 << 53) - 1);
    i64::try_from(masked).unwrap_or(1).max(1)
}

/// One event type of a provider.
pub(super) struct EventSpec {
    /// Its name as `--event-type` takes it.
    pub name: &'static str,
    /// The event as the provider's header names it (`issues` for `issues.opened`), if it has one.
    pub header: &'static str,
    /// Whose object the event is about.
    pub owner: Owner,
    /// The body.
    pub build: fn(&Subject<'_>) -> Value,
    /// Where the account goes by default.
    pub account: &'static str,
    /// Where the amount goes by default (`None`: nowhere; the provider's object has no amount).
    pub amount: Option<&'static str>,
    /// Where the version goes by default (`None`: nowhere).
    pub version: Option<&'static str>,
}

impl fmt::Debug for EventSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl EventSpec {
    pub(super) fn default_place(&self, name: FieldName) -> Option<&'static str> {
        match name {
            FieldName::Account => Some(self.account),
            FieldName::Amount => self.amount,
            FieldName::Version => self.version,
        }
    }
}
