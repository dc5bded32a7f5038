//! The events on the wire: the JSON bodies receivers accept and the harness sends.

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
    /// The body's id differs from the signed `webhook-id`.
    #[error("body id `{body}` does not match webhook-id `{header}`")]
    IdMismatch {
        /// The id in the body.
        body: String,
        /// The signed header's id.
        header: String,
    },
}

impl Event {
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
}
