//! The events on the wire: the JSON bodies receivers accept and the harness sends, and the
//! bounds every field must keep (docs/design.md, "What the wire accepts").
//!
//! The bounds exist so that no signed delivery can fail for ever (an id too long for an index, a
//! source path with a NUL), freeze an account (a plan version of `i64::MAX`) or push arithmetic
//! past what the database holds. A body outside them is a 400 naming the field, before anything
//! is written, the same on both backends.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

/// Credit events' `type`.
pub const CREDIT_TYPE: &str = "credit.added";
/// Plan updates' `type`.
pub const PLAN_TYPE: &str = "plan.updated";

/// A webhook body.
///
/// `{"id":"evt_000132","type":"credit.added","account":243,"amount":100,"created":1790000039}` or
/// `{"id":"evt_000091","type":"plan.updated","account":388,"plan":"plan_v2","version":2,"created":1790000039}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    /// Add `amount` credits to `account`.
    #[serde(rename = "credit.added")]
    Credit {
        /// Event id, also sent as `webhook-id`.
        id: String,
        /// Account id.
        account: i64,
        /// Credits to add.
        amount: i64,
        /// Creation time in Unix seconds.
        created: i64,
    },
    /// Set `account`'s plan to `plan`, which is its `version`-th plan.
    #[serde(rename = "plan.updated")]
    Plan {
        /// Event id, also sent as `webhook-id`.
        id: String,
        /// Account id.
        account: i64,
        /// Plan name.
        plan: String,
        /// The account's plan version this update carries.
        version: i64,
        /// Creation time in Unix seconds.
        created: i64,
    },
}

/// Why a body is not an event. Each is a 400 at the receiver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Not JSON, or not an event of a known shape.
    #[error("malformed event: {0}")]
    Malformed(String),
    /// A `type` this receiver does not handle.
    #[error("unknown event type `{0}`")]
    UnknownType(String),
    /// A field is outside its documented bounds.
    #[error("field `{field}` {problem}")]
    OutOfBounds {
        /// The field (`id`, `account`, `amount`, `plan`, `version`, `created`, or `source` for the
        /// path segment).
        field: &'static str,
        /// What is wrong with it, and the bound.
        problem: String,
    },
    /// The body's id differs from the signed `webhook-id`.
    #[error("body id `{body}` does not match webhook-id `{header}`")]
    IdMismatch {
        /// The id in the body.
        body: String,
        /// The signed header's id.
        header: String,
    },
}

/// An event id (and so a `webhook-id`): 1 to 255 bytes of ASCII letters, digits, `_`, `-`, `.`
/// and `:`. Stripe's `evt_...`, Svix's `msg_...`, GitHub's and Shopify's UUIDs all fit.
pub const ID_MAX_BYTES: usize = 255;
/// The `{source}` path segment: 1 to 64 bytes of ASCII letters, digits, `_` and `-`.
pub const SOURCE_MAX_BYTES: usize = 64;
/// A plan name: 1 to 64 bytes of printable ASCII (no control characters).
pub const PLAN_MAX_BYTES: usize = 64;
/// Account ids: non-negative and exact in a JSON double (up to 2^53 - 1).
pub const ACCOUNTS: RangeInclusive<i64> = 0..=9_007_199_254_740_991;
/// Credit amounts: at most a trillion either way. Negative amounts pass the wire and are refused
/// by the side effect every time (they are the poison events of the failure experiments).
pub const AMOUNTS: RangeInclusive<i64> = -1_000_000_000_000..=1_000_000_000_000;
/// Plan versions: positive, at most a billion.
pub const VERSIONS: RangeInclusive<i64> = 1..=1_000_000_000;
/// The earliest `created` accepted: 2000-01-01T00:00:00Z, in Unix seconds.
pub const CREATED_MIN: i64 = 946_684_800;
/// How far ahead of the receiver's clock `created` may be, in seconds (a day of clock skew).
pub const CREATED_AHEAD_MAX_S: i64 = 86_400;

fn out_of_bounds(field: &'static str, problem: String) -> EventError {
    EventError::OutOfBounds { field, problem }
}

fn check_range(field: &'static str, value: i64, range: &RangeInclusive<i64>) -> Result<(), EventError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(out_of_bounds(field, format!("is {value}, outside {}..={}", range.start(), range.end())))
    }
}

fn check_text(
    field: &'static str,
    value: &str,
    max: usize,
    allowed: fn(u8) -> bool,
    allowed_text: &str,
) -> Result<(), EventError> {
    if value.is_empty() || value.len() > max {
        return Err(out_of_bounds(field, format!("is {} bytes long; it must be 1 to {max}", value.len())));
    }
    match value.bytes().position(|b| !allowed(b)) {
        None => Ok(()),
        Some(at) => Err(out_of_bounds(
            field,
            format!("has a byte it may not hold at offset {at}; it may hold only {allowed_text}"),
        )),
    }
}

fn id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')
}

fn source_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

fn plan_byte(b: u8) -> bool {
    b.is_ascii_graphic() || b == b' '
}

/// Checks the `{source}` path segment against its bounds.
pub fn check_source(source: &str) -> Result<(), EventError> {
    check_text("source", source, SOURCE_MAX_BYTES, source_byte, "ASCII letters, digits, `_` and `-`")
}

/// Checks an event id (or a `webhook-id`) against its bounds.
pub fn check_id(id: &str) -> Result<(), EventError> {
    check_text("id", id, ID_MAX_BYTES, id_byte, "ASCII letters, digits, `_`, `-`, `.` and `:`")
}

impl Event {
    /// Checks every field against the wire's bounds; `now` is the receiver's clock in Unix
    /// seconds (for `created`).
    pub fn validate(&self, now: i64) -> Result<(), EventError> {
        check_id(self.id())?;
        check_range("account", self.account(), &ACCOUNTS)?;
        let created = match self {
            Event::Credit { amount, created, .. } => {
                check_range("amount", *amount, &AMOUNTS)?;
                *created
            }
            Event::Plan { plan, version, created, .. } => {
                check_text("plan", plan, PLAN_MAX_BYTES, plan_byte, "printable ASCII")?;
                check_range("version", *version, &VERSIONS)?;
                *created
            }
        };
        check_range("created", created, &(CREATED_MIN..=now.saturating_add(CREATED_AHEAD_MAX_S)))
    }

    /// Parses a body, telling an unknown `type` apart from a malformed body.
    pub fn parse(body: &[u8]) -> Result<Self, EventError> {
        serde_json::from_slice(body).map_err(|err| {
            #[derive(Deserialize)]
            struct Typed {
                #[serde(rename = "type")]
                kind: String,
            }
            match serde_json::from_slice::<Typed>(body) {
                Ok(t) if t.kind != CREDIT_TYPE && t.kind != PLAN_TYPE => EventError::UnknownType(t.kind),
                _ => EventError::Malformed(err.to_string()),
            }
        })
    }

    /// The event id.
    pub fn id(&self) -> &str {
        match self {
            Event::Credit { id, .. } | Event::Plan { id, .. } => id,
        }
    }

    /// The account it applies to.
    pub fn account(&self) -> i64 {
        match self {
            Event::Credit { account, .. } | Event::Plan { account, .. } => *account,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_design_examples() {
        let credit =
            br#"{"id":"evt_000132","type":"credit.added","account":243,"amount":100,"created":1790000039}"#;
        assert_eq!(
            Event::parse(credit),
            Ok(Event::Credit { id: "evt_000132".into(), account: 243, amount: 100, created: 1_790_000_039 })
        );
        let plan = br#"{"id":"evt_000091","type":"plan.updated","account":388,"plan":"plan_v2","version":2,"created":1790000039}"#;
        let e = Event::parse(plan).expect("plan");
        assert_eq!((e.id(), e.account()), ("evt_000091", 388));
        assert_eq!(serde_json::to_vec(&e).ok().as_deref().map(Event::parse), Some(Ok(e)));
    }

    fn field_of(e: Result<(), EventError>) -> Option<&'static str> {
        match e {
            Err(EventError::OutOfBounds { field, .. }) => Some(field),
            _ => None,
        }
    }

    #[test]
    fn the_bounds_name_the_field_they_refuse() {
        let now = 1_790_000_100;
        let credit =
            |id: &str, account, amount, created| Event::Credit { id: id.into(), account, amount, created };
        let plan = |plan: &str, version| Event::Plan {
            id: "evt_1".into(),
            account: 1,
            plan: plan.into(),
            version,
            created: 1_790_000_000,
        };
        assert_eq!(credit("evt_000001", 0, 100, 1_790_000_000).validate(now), Ok(()));
        assert_eq!(
            credit("evt_1", 1, -100, now + CREATED_AHEAD_MAX_S).validate(now),
            Ok(()),
            "poison passes"
        );
        assert_eq!(plan("plan_v1", 1).validate(now), Ok(()));
        assert_eq!(field_of(credit(&"a".repeat(256), 1, 1, now).validate(now)), Some("id"));
        assert_eq!(credit(&"a".repeat(255), 1, 1, now).validate(now), Ok(()));
        assert_eq!(field_of(credit("evt/1", 1, 1, now).validate(now)), Some("id"));
        assert_eq!(field_of(credit("evt_1", -1, 1, now).validate(now)), Some("account"));
        assert_eq!(field_of(credit("evt_1", 1, i64::MAX, now).validate(now)), Some("amount"));
        assert_eq!(field_of(credit("evt_1", 1, 1, CREATED_MIN - 1).validate(now)), Some("created"));
        assert_eq!(
            field_of(credit("evt_1", 1, 1, now + CREATED_AHEAD_MAX_S + 1).validate(now)),
            Some("created")
        );
        assert_eq!(field_of(plan("plan_v1", 0).validate(now)), Some("version"));
        assert_eq!(field_of(plan("plan_v1", i64::MAX).validate(now)), Some("version"));
        assert_eq!(field_of(plan("", 1).validate(now)), Some("plan"));
        assert_eq!(field_of(plan("a\u{7f}", 1).validate(now)), Some("plan"));
        assert_eq!(check_source("acme-2_b"), Ok(()));
        for bad in ["", "a.b", "a\0b", "é", &"s".repeat(65)] {
            assert_eq!(field_of(check_source(bad)), Some("source"), "{bad:?}");
        }
    }

    #[test]
    fn tells_unknown_types_from_malformed_bodies() {
        assert_eq!(
            Event::parse(br#"{"id":"x","type":"invoice.paid","account":1}"#),
            Err(EventError::UnknownType("invoice.paid".into()))
        );
        assert!(matches!(Event::parse(b"{not json"), Err(EventError::Malformed(_))));
        assert!(matches!(
            Event::parse(br#"{"id":"x","type":"credit.added","account":1}"#),
            Err(EventError::Malformed(_))
        ));
    }

    #[derive(serde::Deserialize)]
    struct Golden {
        bodies: Vec<GoldenBody>,
    }

    #[derive(serde::Deserialize)]
    struct GoldenBody {
        kind: String,
        id: String,
        account: i64,
        amount: i64,
        plan: String,
        version: i64,
        created: i64,
        body: String,
    }

    /// The bodies hookbench's sender writes (held to the same file by its own test) parse into
    /// their fields, and these events serialize back into them byte for byte.
    #[test]
    fn the_golden_bodies_parse_into_their_fields() {
        let golden: Golden =
            serde_json::from_str(include_str!("../../testkit/golden/hookbench-bodies.json")).expect("JSON");
        for g in golden.bodies {
            let expected = match g.kind.as_str() {
                "credit" => {
                    Event::Credit { id: g.id, account: g.account, amount: g.amount, created: g.created }
                }
                _ => Event::Plan {
                    id: g.id,
                    account: g.account,
                    plan: g.plan,
                    version: g.version,
                    created: g.created,
                },
            };
            assert_eq!(Event::parse(g.body.as_bytes()), Ok(expected.clone()), "{}", g.body);
            assert_eq!(serde_json::to_string(&expected).expect("serializes"), g.body);
        }
    }
}
