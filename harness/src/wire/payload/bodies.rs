//! A provider's own bodies (`--payload stripe|github|shopify|standard-webhooks`): the event types
//! a credit and an update are sent as (`--event-type`), where the account, the amount and the
//! version go (`--field`), and the headers the provider sends beside its body.
//!
//! Each provider's module lists its event types as [`EventSpec`]s: how the body is built from an
//! event's [`Fields`], and the default place of each field. The object an event is about (a
//! PaymentIntent, an issue, an order) has an id made from a token: [`Fields::object`] when the
//! event names one (two events about one object), else the event's id for objects each event
//! makes anew (a payment, an opened issue, an order) and the account for objects an account keeps
//! (a subscription, its issue being edited, a customer).

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::mapping::{FieldMapping, FieldName, Pointer};
use super::spec::{EventSpec, Owner, Subject};
use super::{Fields, Kind, PayloadError};

/// The providers hookbench writes bodies for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A Stripe Event (`object: "event"`, `data.object` of the named type).
    Stripe,
    /// A GitHub webhook payload, its event in `X-GitHub-Event`.
    Github,
    /// A Shopify webhook payload, its topic in `X-Shopify-Topic`.
    Shopify,
    /// The Standard Webhooks envelope `{type, timestamp, data}`.
    StandardWebhooks,
}

impl Format {
    /// Every format, as `--payload` names them.
    pub const ALL: [Self; 4] = [Self::Stripe, Self::Github, Self::Shopify, Self::StandardWebhooks];

    /// The name `--payload` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::Github => "github",
            Self::Shopify => "shopify",
            Self::StandardWebhooks => "standard-webhooks",
        }
    }

    /// The format `--payload` names `s`, if it names one.
    pub fn named(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The bodies of the provider whose signatures `scheme` makes (`None` for an unsigned one).
    pub fn signed_by(scheme: crate::wire::Scheme) -> Option<Self> {
        use crate::wire::Scheme;
        match scheme {
            Scheme::Stripe => Some(Self::Stripe),
            Scheme::Github => Some(Self::Github),
            Scheme::Shopify => Some(Self::Shopify),
            Scheme::StandardWebhooks => Some(Self::StandardWebhooks),
            // Filled in as each provider's bodies land.
            Scheme::Slack
            | Scheme::Twilio
            | Scheme::Square
            | Scheme::Paddle
            | Scheme::Sendgrid
            | Scheme::Discord
            | Scheme::Linear
            | Scheme::Gitlab
            | Scheme::Zoom
            | Scheme::Twitch
            | Scheme::None => None,
        }
    }

    fn specs(self) -> &'static [EventSpec] {
        match self {
            Self::Stripe => super::stripe::EVENTS,
            Self::Github => super::github::EVENTS,
            Self::Shopify => super::shopify::EVENTS,
            Self::StandardWebhooks => super::standard::EVENTS,
        }
    }

    /// The type each kind is sent as without `--event-type`.
    fn default_type(self, kind: Kind) -> &'static str {
        match (self, kind) {
            (Self::Stripe, Kind::Credit) => "payment_intent.succeeded",
            (Self::Stripe, Kind::Update) => "customer.subscription.updated",
            (Self::Github, Kind::Credit) => "issues.opened",
            (Self::Github, Kind::Update) => "issues.edited",
            (Self::Shopify, Kind::Credit) => "orders/create",
            (Self::Shopify, Kind::Update) => "customers/update",
            (Self::StandardWebhooks, Kind::Credit) => super::CREDIT_TYPE,
            (Self::StandardWebhooks, Kind::Update) => super::PLAN_TYPE,
        }
    }

    /// The event types `--event-type` accepts, for messages and `--help`.
    pub fn known_types(self) -> String {
        match self {
            Self::StandardWebhooks => super::standard::ANY_TYPE.to_string(),
            _ => self.specs().iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
        }
    }
}

/// One `--event-type KIND=TYPE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventTypeChoice {
    /// Which kind of event.
    pub kind: Kind,
    /// The provider's type it is sent as.
    pub name: String,
}

impl fmt::Display for EventTypeChoice {
    /// As `--event-type` takes it: `credit=payment_intent.succeeded`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Credit => "credit",
            Kind::Update => "update",
        };
        write!(f, "{kind}={}", self.name)
    }
}

/// An `--event-type` that is not `credit=TYPE` or `update=TYPE`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadEventType {
    /// No `=`.
    #[error("`{0}` is not credit=TYPE or update=TYPE")]
    NotKindType(String),
    /// A kind there is not.
    #[error("`{0}` is not a kind of event; the kinds are credit and update")]
    UnknownKind(String),
    /// Nothing after the `=`.
    #[error("`{0}` names no type")]
    NoType(String),
}

impl FromStr for EventTypeChoice {
    type Err = BadEventType;

    /// `credit=payment_intent.succeeded`, `update=customer.subscription.updated`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, name) = s.split_once('=').ok_or_else(|| BadEventType::NotKindType(s.to_string()))?;
        let kind = match kind {
            "credit" => Kind::Credit,
            "update" => Kind::Update,
            other => return Err(BadEventType::UnknownKind(other.to_string())),
        };
        if name.is_empty() {
            return Err(BadEventType::NoType(s.to_string()));
        }
        Ok(Self { kind, name: name.to_string() })
    }
}

/// The type one kind of event is sent as.
#[derive(Debug, Clone)]
struct EventType {
    spec: &'static EventSpec,
    name: String,
}

/// A provider's bodies: the two types and the field mappings, checked against each other.
#[derive(Debug, Clone)]
pub struct Bodies {
    format: Format,
    credit: EventType,
    update: EventType,
    fields: Vec<FieldMapping>,
}

impl PartialEq for Bodies {
    fn eq(&self, other: &Self) -> bool {
        self.format == other.format
            && self.credit.name == other.credit.name
            && self.update.name == other.update.name
            && self.fields == other.fields
    }
}

impl Bodies {
    /// `format`'s bodies with its default types and places.
    pub fn new(format: Format) -> Self {
        Self::with(format, &[], &[]).unwrap_or_else(|e| unreachable!("a provider's defaults are valid: {e}"))
    }

    /// `format`'s bodies sent as `types` say (the defaults for a kind they do not name), with
    /// `fields` written where they point: every choice checked now, naming its flag. A kind given
    /// twice, or a field given twice, is refused.
    pub fn with(
        format: Format,
        types: &[EventTypeChoice],
        fields: &[FieldMapping],
    ) -> Result<Self, PayloadError> {
        let pick = |kind: Kind| -> Result<EventType, PayloadError> {
            let mut named = types.iter().filter(|c| c.kind == kind);
            let choice = named.next();
            if let Some(again) = named.next() {
                return Err(PayloadError::Flag {
                    flag: "--event-type",
                    value: format!("{}={}", kind_name(kind), again.name),
                    problem: format!("{} is given twice", kind_name(kind)),
                });
            }
            let name = choice.map_or(format.default_type(kind), |c| c.name.as_str());
            event_type(format, kind, name)
        };
        let (credit, update) = (pick(Kind::Credit)?, pick(Kind::Update)?);
        for name in FieldName::ALL {
            if let [_, again, ..] = fields.iter().filter(|m| m.name == name).collect::<Vec<_>>()[..] {
                return Err(PayloadError::Flag {
                    flag: "--field",
                    value: format!("{}={}", name.as_str(), again.pointer),
                    problem: format!("{} is given twice", name.as_str()),
                });
            }
        }
        let bodies = Self { format, credit, update, fields: fields.to_vec() };
        bodies.check_places()?;
        Ok(bodies)
    }

    /// Each field's place reached in a body of each type it goes in, before anything is sent.
    fn check_places(&self) -> Result<(), PayloadError> {
        for kind in [Kind::Credit, Kind::Update] {
            let f = sample(kind);
            let t = self.event_type_of(kind);
            let mut body = (t.spec.build)(&self.subject(t, &f));
            for (name, pointer, given) in self.places(kind, t) {
                pointer.write(&mut body, 0).map_err(|problem| {
                    let problem = format!("in the {} body ({}): {problem}", t.name, self.format.as_str());
                    if given {
                        PayloadError::Flag {
                            flag: "--field",
                            value: format!("{}={pointer}", name.as_str()),
                            problem,
                        }
                    } else {
                        PayloadError::Flag { flag: "--event-type", value: t.name.clone(), problem }
                    }
                })?;
            }
        }
        Ok(())
    }

    /// The provider.
    pub fn format(&self) -> Format {
        self.format
    }

    fn event_type_of(&self, kind: Kind) -> &EventType {
        match kind {
            Kind::Credit => &self.credit,
            Kind::Update => &self.update,
        }
    }

    /// The type `kind` is sent as (`payment_intent.succeeded`).
    pub fn type_name(&self, kind: Kind) -> &str {
        &self.event_type_of(kind).name
    }

    /// The event as the provider's header names it (`X-GitHub-Event: issues`, `X-Shopify-Topic:
    /// orders/create`; a Stripe or Standard Webhooks type as it is).
    pub fn header_event(&self, kind: Kind) -> &str {
        let t = self.event_type_of(kind);
        if t.spec.header.is_empty() { &t.name } else { t.spec.header }
    }

    /// The fields `kind`'s bodies carry and where: the flag's place, else the type's default.
    /// Whether a credit's body carries its amount (at `--field amount=` or the type's own place):
    /// GitHub's bodies carry none.
    pub fn carries_amount(&self) -> bool {
        self.places(Kind::Credit, &self.credit).iter().any(|(name, _, _)| *name == FieldName::Amount)
    }

    fn places(&self, kind: Kind, t: &EventType) -> Vec<(FieldName, Pointer, bool)> {
        let names: &[FieldName] = match kind {
            Kind::Credit => &[FieldName::Account, FieldName::Amount],
            Kind::Update => &[FieldName::Account, FieldName::Version],
        };
        names
            .iter()
            .filter_map(|&name| match self.fields.iter().find(|m| m.name == name) {
                Some(m) => Some((name, m.pointer.clone(), true)),
                None => {
                    let place = t.spec.default_place(name)?;
                    Some((
                        name,
                        Pointer::parse(place).unwrap_or_else(|e| unreachable!("{place}: {e}")),
                        false,
                    ))
                }
            })
            .collect()
    }

    fn subject<'a>(&self, t: &'a EventType, f: &'a Fields) -> Subject<'a> {
        let token = f.object.clone().unwrap_or_else(|| match t.spec.owner {
            Owner::Event => f.id.clone(),
            Owner::Account => f.account.to_string(),
        });
        Subject { f, token, event_type: &t.name }
    }

    /// The body of `f`: the type's body, then each field written at its place.
    pub fn render(&self, f: &Fields) -> Value {
        let t = self.event_type_of(f.kind);
        let mut body = (t.spec.build)(&self.subject(t, f));
        for (name, pointer, _) in self.places(f.kind, t) {
            let n = match name {
                FieldName::Account => f.account,
                FieldName::Amount => f.amount,
                FieldName::Version => f.version,
            };
            // Every place was reached in a body of this type when the payload was made, and a
            // type's bodies all have one shape.
            let _ = pointer.write(&mut body, n);
        }
        body
    }

    /// The headers the provider sends with `f`'s body, beside its signature.
    pub fn headers(&self, f: &Fields) -> Vec<(&'static str, String)> {
        match self.format {
            Format::Github => super::github::headers(self.header_event(f.kind), f),
            Format::Shopify => super::shopify::headers(self.header_event(f.kind), f),
            Format::Stripe | Format::StandardWebhooks => Vec::new(),
        }
    }

    /// The name a report shows: the provider, the types, the mappings given.
    pub fn name(&self) -> String {
        let mut name =
            format!("{} (credit={}, update={}", self.format.as_str(), self.credit.name, self.update.name);
        for m in &self.fields {
            name.push_str(&format!(", {}={}", m.name.as_str(), m.pointer));
        }
        name.push(')');
        name
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Credit => "credit",
        Kind::Update => "update",
    }
}

fn event_type(format: Format, kind: Kind, name: &str) -> Result<EventType, PayloadError> {
    let unknown = |problem: String| PayloadError::Flag {
        flag: "--event-type",
        value: format!("{}={name}", kind_name(kind)),
        problem,
    };
    if format == Format::StandardWebhooks {
        let spec = super::standard::spec(kind);
        return super::standard::check_type(name)
            .map(|()| EventType { spec, name: name.to_string() })
            .map_err(|e| unknown(e.to_string()));
    }
    let spec = format.specs().iter().find(|s| s.name == name).ok_or_else(|| {
        unknown(format!(
            "{} has no event type `{name}`; the known ones are {}",
            format.as_str(),
            format.known_types()
        ))
    })?;
    Ok(EventType { spec, name: name.to_string() })
}

/// An event of `kind` to build a body of the type's shape from, when checking places.
fn sample(kind: Kind) -> Fields {
    Fields {
        id: "evt_check".to_string(),
        kind,
        account: 1,
        amount: 1,
        plan: "plan_v1".to_string(),
        version: 1,
        created: 0,
        poisoned: false,
        object: None,
    }
}
