//! The bodies deliveries carry (`--payload`): hookbench's own wire format, a provider's own
//! bodies (Stripe, GitHub, Shopify, Standard Webhooks, Slack, Twilio, Square, Paddle, SendGrid,
//! Discord, Linear, GitLab, Zoom, Twitch: [`bodies`], one module per provider), or the user's
//! template with placeholders ([`template`]).

pub mod bodies;
mod discord;
mod github;
mod gitlab;
mod linear;
pub mod mapping;
mod paddle;
mod sendgrid;
mod shopify;
mod slack;
mod spec;
mod square;
mod standard;
pub mod stripe;
pub mod template;
mod twilio;
mod twitch;
mod zoom;

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;

pub use bodies::{Bodies, EventTypeChoice, Format};
pub use mapping::{FieldMapping, FieldName, Pointer};
pub use template::{MAX_TEMPLATE_BYTES, Template};

/// hookbench's own credit `type`.
pub const CREDIT_TYPE: &str = "credit.added";
/// hookbench's own plan update `type`.
pub const PLAN_TYPE: &str = "plan.updated";

/// A body in hookbench's own wire format, as the sender writes it: the harness's own type, held
/// to what the receivers parse by a golden file both crates test against
/// (`testkit/golden/hookbench-bodies.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
enum HookbenchBody<'a> {
    #[serde(rename = "credit.added")]
    Credit { id: &'a str, account: i64, amount: i64, created: i64 },
    #[serde(rename = "plan.updated")]
    Plan { id: &'a str, account: i64, plan: &'a str, version: i64, created: i64 },
}

/// One event as the sender knows it, before it becomes a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    /// The delivery id, the same on every attempt.
    pub id: String,
    /// A credit or a plan update.
    pub kind: Kind,
    /// The account the event is for.
    pub account: i64,
    /// Credits added (credits only; 0 for updates).
    pub amount: i64,
    /// The plan's name (updates only; empty for credits).
    pub plan: String,
    /// The account's plan version this update carries (updates only; 0 for credits).
    pub version: i64,
    /// Creation time, Unix seconds.
    pub created: i64,
    /// A poison event: its body comes from the run's poison template, when it has one.
    pub poisoned: bool,
    /// The provider object the event is about (a Stripe PaymentIntent's id, a GitHub issue's
    /// number), when two events share one: the same change sent twice under two event ids (a
    /// semantic duplicate). `None`: the event's own object, derived from its id.
    pub object: Option<String>,
}

/// The two kinds of event every workload has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Adds `amount` to an account: applying it twice is visible.
    Credit,
    /// Sets an account's plan at `version`: applying an older one late is visible.
    Update,
}

/// What `--payload` names.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// hookbench's wire format (`credit.added`, `plan.updated`).
    Hookbench,
    /// A provider's own bodies: Stripe Events, GitHub and Shopify payloads, the Standard
    /// Webhooks envelope, and the ten others [`Format`] lists.
    Provider(Bodies),
    /// The user's template.
    Template(Template),
}

/// A template file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    /// The file could not be read within its limit ([`MAX_TEMPLATE_BYTES`], a regular file).
    #[error("--payload {problem}")]
    Read {
        /// Why (the file named in it). Not the error's source: its text is already said, and a
        /// chain would print it twice.
        problem: crate::files::ReadError,
    },
    /// The file is not JSON.
    #[error("--payload {path} is not JSON")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// Where and why.
        source: serde_json::Error,
    },
    /// The JSON is not an object with `credit` and `update`, or names an unknown placeholder.
    #[error("--payload {path}: {problem}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A flag's value a provider's bodies cannot take (an unknown event type, a field's place
    /// the body cannot reach).
    #[error("{flag} {value}: {problem}")]
    Flag {
        /// The flag (`--event-type`, `--field`).
        flag: &'static str,
        /// Its value as given.
        value: String,
        /// What is wrong, with what would be right.
        problem: String,
    },
    /// `--event-type` or `--field` with a payload that is not a provider's.
    #[error("{flag} is for a provider's bodies (--payload {providers}), not --payload {payload}", providers = provider_names())]
    NotAProvider {
        /// The flag given.
        flag: &'static str,
        /// The payload named.
        payload: String,
    },
}

/// The providers `--payload` names, as messages list them.
fn provider_names() -> String {
    Format::ALL.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")
}

impl FromStr for Payload {
    type Err = PayloadError;

    /// `hookbench`, a provider (`stripe`, `github`, ..., [`Format::ALL`]: its default types and
    /// places), or the path of a template file.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::with(s, &[], &[])
    }
}

impl Payload {
    /// The payload a report names (`audit.payload`): `hookbench`, a template's path, or a
    /// provider's bodies as [`Bodies::name`] writes them, `github (credit=issues.opened,
    /// update=issues.edited, amount=/x)`, rebuilt with the same types and fields.
    pub fn from_report_name(recorded: &str) -> Result<Self, PayloadError> {
        let Some((name, rest)) = recorded.split_once(" (").filter(|(n, _)| Format::named(n).is_some()) else {
            return Self::with(recorded, &[], &[]);
        };
        let (mut types, mut fields) = (Vec::new(), Vec::new());
        for part in rest.trim_end_matches(')').split(", ") {
            let bad = |problem: String| PayloadError::Flag {
                flag: "--payload",
                value: recorded.to_string(),
                problem,
            };
            if part.starts_with("credit=") || part.starts_with("update=") {
                types.push(part.parse::<EventTypeChoice>().map_err(|e| bad(e.to_string()))?);
            } else {
                fields.push(part.parse::<FieldMapping>().map_err(|e| bad(e.to_string()))?);
            }
        }
        Self::with(name, &types, &fields)
    }

    /// The payload `--payload name` names, its types chosen by `types` (`--event-type`) and its
    /// fields placed by `fields` (`--field`); both are for a provider's bodies only.
    pub fn with(
        name: &str,
        types: &[EventTypeChoice],
        fields: &[FieldMapping],
    ) -> Result<Self, PayloadError> {
        if let Some(format) = Format::named(name) {
            return Bodies::with(format, types, fields).map(Self::Provider);
        }
        let flag = match (types.first(), fields.first()) {
            (Some(_), _) => "--event-type",
            (None, Some(_)) => "--field",
            (None, None) if name == "hookbench" => return Ok(Self::Hookbench),
            (None, None) => return Template::read(Path::new(name)).map(Self::Template),
        };
        Err(PayloadError::NotAProvider { flag, payload: name.to_string() })
    }

    /// A provider's bodies with its default types and places.
    pub fn provider(format: Format) -> Self {
        Self::Provider(Bodies::new(format))
    }

    /// Whether its credit bodies carry the object an event is about ([`Fields::object`]), so
    /// that two events of one change can say so: every provider's body does, a template with
    /// `{{object}}` does, hookbench's own format does not.
    pub fn carries_object(&self) -> bool {
        match self {
            Self::Hookbench => false,
            Self::Provider(_) => true,
            Self::Template(t) => t.names_object(),
        }
    }

    /// Whether its credit bodies carry the credit's amount: hookbench's own do, a provider's where
    /// the type has an amount or `--field amount=` places one (GitHub's have none), a template
    /// with `{{amount}}` does.
    pub fn carries_amount(&self) -> bool {
        match self {
            Self::Hookbench => true,
            Self::Provider(b) => b.carries_amount(),
            Self::Template(t) => t.names_amount(),
        }
    }

    /// The payload `--payload` names or, without one, the provider's own bodies when `--signing`
    /// names a provider (`stripe`, `github`, `shopify`, `standard-webhooks` given explicitly),
    /// else hookbench's: a receiver that routes the provider's event types would ignore anything
    /// else, and an audit would read its silence as lost events.
    pub fn implied(payload: Option<&str>, signing: Option<super::Scheme>) -> String {
        payload
            .map(str::to_string)
            .or_else(|| signing.and_then(Format::signed_by).map(|f| f.as_str().to_string()))
            .unwrap_or_else(|| "hookbench".to_string())
    }

    /// The name a report shows.
    pub fn name(&self) -> String {
        match self {
            Self::Hookbench => "hookbench".to_string(),
            Self::Provider(b) => b.name(),
            Self::Template(t) => t.path().display().to_string(),
        }
    }

    /// The event type a provider names in a header (`X-GitHub-Event`, `X-Shopify-Topic`).
    pub fn event_type(&self, kind: Kind) -> &str {
        match (self, kind) {
            (Self::Provider(b), kind) => b.header_event(kind),
            (_, Kind::Credit) => CREDIT_TYPE,
            (_, Kind::Update) => PLAN_TYPE,
        }
    }

    /// The headers the payload's provider sends beside `e`'s body and its signature
    /// (`X-GitHub-Event`, the `X-Shopify-*` headers; none for the others).
    pub fn headers(&self, e: &Fields) -> Vec<(&'static str, String)> {
        match self {
            Self::Provider(b) => b.headers(e),
            Self::Hookbench | Self::Template(_) => Vec::new(),
        }
    }

    /// The body of `e` outside an attempt: [`Self::render_at`] its creation time.
    pub fn render(&self, e: &Fields) -> Vec<u8> {
        self.render_at(e, e.created)
    }

    /// The body of `e` in an attempt sent at `sent_at_s` (Unix seconds). Only a
    /// [`Self::timestamped`] body (Linear's `webhookTimestamp`, in milliseconds) depends on it;
    /// every other is the same for every attempt.
    pub fn render_at(&self, e: &Fields, sent_at_s: i64) -> Vec<u8> {
        let bytes = match self {
            // Straight from the typed event: no JSON tree in between.
            Self::Hookbench => serde_json::to_vec(&hookbench_event(e)),
            Self::Provider(b) => return b.encode_at(e, sent_at_s),
            Self::Template(t) => serde_json::to_vec(&t.render(e)),
        };
        bytes.unwrap_or_default()
    }

    /// Whether a body depends on the attempt's time (so each attempt's is rendered anew):
    /// Linear's.
    pub fn timestamped(&self) -> bool {
        matches!(self, Self::Provider(b) if b.format().timestamped())
    }

    /// The body's media type (`content-type`): Twilio's bodies are
    /// `application/x-www-form-urlencoded`, every other `application/json`.
    pub fn content_type(&self) -> &'static str {
        match self {
            Self::Provider(b) => b.format().content_type(),
            Self::Hookbench | Self::Template(_) => "application/json",
        }
    }
}

fn hookbench_event(e: &Fields) -> HookbenchBody<'_> {
    let (id, account, created) = (e.id.as_str(), e.account, e.created);
    match e.kind {
        Kind::Credit => HookbenchBody::Credit { id, account, amount: e.amount, created },
        Kind::Update => HookbenchBody::Plan { id, account, plan: &e.plan, version: e.version, created },
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod golden {
    use super::*;

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

    /// The sender's bodies are byte for byte those the receivers' test parses back into the same
    /// fields (receivers/tests/it/golden.rs reads the same file).
    #[test]
    fn hookbench_bodies_are_the_golden_ones() {
        let golden: Golden =
            serde_json::from_str(include_str!("../../../../testkit/golden/hookbench-bodies.json"))
                .expect("JSON");
        assert!(golden.bodies.len() >= 2);
        for g in golden.bodies {
            let kind = if g.kind == "credit" { Kind::Credit } else { Kind::Update };
            let f = Fields {
                id: g.id,
                kind,
                account: g.account,
                amount: g.amount,
                plan: g.plan,
                version: g.version,
                created: g.created,
                poisoned: false,
                object: None,
            };
            assert_eq!(String::from_utf8(Payload::Hookbench.render(&f)).expect("utf-8"), g.body);
        }
    }
}
