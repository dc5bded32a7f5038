//! A provider's own bodies (`--payload stripe|github|shopify|standard-webhooks|slack|...`, one
//! [`Format`] each): the event types a credit and an update are sent as (`--event-type`), where
//! the account, the amount and the version go (`--field`), the headers the provider sends beside
//! its body, and how the body is written (JSON; Twilio's form-encoded).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "kebab-case")]
pub enum Format {
    /// A Stripe Event (`object: "event"`, `data.object` of the named type).
    Stripe,
    /// A GitHub webhook payload, its event in `X-GitHub-Event`.
    Github,
    /// A Shopify webhook payload, its topic in `X-Shopify-Topic`.
    Shopify,
    /// The Standard Webhooks envelope `{type, timestamp, data}`.
    StandardWebhooks,
    /// A Slack Events API `event_callback`, its delivery id in `event_id`.
    Slack,
    /// A Twilio Messaging status callback, form-encoded.
    Twilio,
    /// The same callback as JSON, which Twilio signs through `bodySHA256` in the URL.
    TwilioJson,
    /// A Square webhook event, its delivery id in `event_id`.
    Square,
    /// A Paddle Billing notification, its delivery id in `event_id`.
    Paddle,
    /// A SendGrid Event Webhook batch: a JSON array of one event, its id in `sg_event_id`.
    Sendgrid,
    /// A Discord interaction, its delivery id in `id`.
    Discord,
    /// A Linear data change webhook, carrying the attempt's time in `webhookTimestamp`.
    Linear,
    /// A GitLab Push Hook or Issue Hook, its event in `X-Gitlab-Event`.
    Gitlab,
    /// A Zoom event notification, written as JavaScript's `JSON.stringify` writes it back.
    Zoom,
    /// A Twitch EventSub notification, its subscription in `Twitch-Eventsub-Subscription-*`.
    Twitch,
}

impl Format {
    /// Every format, as `--payload` names them.
    pub const ALL: &[Self] = <Self as strum::VariantArray>::VARIANTS;

    /// The name `--payload` takes.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The body's media type: `application/x-www-form-urlencoded` for Twilio's, JSON for the
    /// others'.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Twilio => super::twilio::CONTENT_TYPE,
            _ => "application/json",
        }
    }

    /// Whether a body depends on the attempt's time, not only the event's (Linear's carries
    /// the attempt's `webhookTimestamp`, which its library holds to a minute of its clock).
    pub fn timestamped(self) -> bool {
        self == Self::Linear
    }

    /// The format `--payload` names `s`, if it names one.
    pub fn named(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|f| f.as_str() == s)
    }

    /// The bodies of the provider whose signatures `scheme` makes (`None` for an unsigned one).
    pub fn signed_by(scheme: crate::wire::Scheme) -> Option<Self> {
        use crate::wire::Scheme;
        match scheme {
            Scheme::Stripe => Some(Self::Stripe),
            Scheme::Github => Some(Self::Github),
            Scheme::Shopify => Some(Self::Shopify),
            Scheme::StandardWebhooks => Some(Self::StandardWebhooks),
            Scheme::Slack => Some(Self::Slack),
            Scheme::Twilio => Some(Self::Twilio),
            Scheme::Square => Some(Self::Square),
            Scheme::Paddle => Some(Self::Paddle),
            Scheme::Sendgrid => Some(Self::Sendgrid),
            Scheme::Discord => Some(Self::Discord),
            Scheme::Linear => Some(Self::Linear),
            Scheme::Gitlab => Some(Self::Gitlab),
            Scheme::Zoom => Some(Self::Zoom),
            Scheme::Twitch => Some(Self::Twitch),
            Scheme::None => None,
        }
    }

    fn specs(self) -> &'static [EventSpec] {
        match self {
            Self::Stripe => super::stripe::EVENTS,
            Self::Github => super::github::EVENTS,
            Self::Shopify => super::shopify::EVENTS,
            Self::StandardWebhooks => super::standard::EVENTS,
            Self::Slack => super::slack::EVENTS,
            Self::Twilio | Self::TwilioJson => super::twilio::EVENTS,
            Self::Square => super::square::EVENTS,
            Self::Paddle => super::paddle::EVENTS,
            Self::Sendgrid => super::sendgrid::EVENTS,
            Self::Discord => super::discord::EVENTS,
            Self::Linear => super::linear::EVENTS,
            Self::Gitlab => super::gitlab::EVENTS,
            Self::Zoom => super::zoom::EVENTS,
            Self::Twitch => super::twitch::EVENTS,
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
            (Self::Slack, Kind::Credit) => "message",
            (Self::Slack, Kind::Update) => "message_metadata_updated",
            (Self::Twilio | Self::TwilioJson, Kind::Credit) => "delivered",
            (Self::Twilio | Self::TwilioJson, Kind::Update) => "read",
            (Self::Square, Kind::Credit) => "payment.created",
            (Self::Square, Kind::Update) => "customer.updated",
            (Self::Paddle, Kind::Credit) => "transaction.completed",
            (Self::Paddle, Kind::Update) => "subscription.updated",
            (Self::Sendgrid, Kind::Credit) => "delivered",
            (Self::Sendgrid, Kind::Update) => "group_resubscribe",
            (Self::Discord, _) => "message_component",
            (Self::Linear, Kind::Credit) => "Issue.create",
            (Self::Linear, Kind::Update) => "Issue.update",
            (Self::Gitlab, Kind::Credit) => "issue.open",
            (Self::Gitlab, Kind::Update) => "issue.update",
            (Self::Zoom, Kind::Credit) => "meeting.ended",
            (Self::Zoom, Kind::Update) => "meeting.updated",
            (Self::Twitch, Kind::Credit) => "channel.channel_points_custom_reward_redemption.add",
            (Self::Twitch, Kind::Update) => "channel.subscription.message",
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
            let mut body = (t.spec.build)(&self.subject(t, &f, f.created));
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

    fn subject<'a>(&self, t: &'a EventType, f: &'a Fields, sent_at: i64) -> Subject<'a> {
        let token = f.object.clone().unwrap_or_else(|| match t.spec.owner {
            Owner::Event => f.id.clone(),
            Owner::Account => f.account.to_string(),
        });
        Subject { f, token, event_type: &t.name, sent_at }
    }

    /// The body of `f` as a tree (Twilio's: the form's pairs as an object), outside an attempt:
    /// [`Self::render_at`] the event's creation time.
    pub fn render(&self, f: &Fields) -> Value {
        self.render_at(f, f.created)
    }

    /// The body of `f` in an attempt sent at `sent_at_s` (Unix seconds; only a
    /// [`Format::timestamped`] body reads it): the type's body, then each field written at its
    /// place.
    pub fn render_at(&self, f: &Fields, sent_at_s: i64) -> Value {
        let t = self.event_type_of(f.kind);
        let mut body = (t.spec.build)(&self.subject(t, f, sent_at_s));
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

    /// The bytes of `f`'s body in an attempt sent at `sent_at_s`: JSON, or Twilio's form.
    pub fn encode_at(&self, f: &Fields, sent_at_s: i64) -> Vec<u8> {
        let body = self.render_at(f, sent_at_s);
        match self.format {
            Format::Twilio => super::twilio::form(&body).into_bytes(),
            _ => serde_json::to_vec(&body).unwrap_or_default(),
        }
    }

    /// The headers the provider sends with `f`'s body, beside its signature (the delivery's id
    /// and the signature are the signer's).
    pub fn headers(&self, f: &Fields) -> Vec<(&'static str, String)> {
        let event = self.header_event(f.kind);
        match self.format {
            Format::Github => super::github::headers(event, f),
            Format::Shopify => super::shopify::headers(event, f),
            Format::Gitlab => super::gitlab::headers(event),
            Format::Twitch => super::twitch::headers(&self.event_type_of(f.kind).name),
            Format::Stripe
            | Format::StandardWebhooks
            | Format::Slack
            | Format::Twilio
            | Format::TwilioJson
            | Format::Square
            | Format::Paddle
            | Format::Sendgrid
            | Format::Discord
            | Format::Linear
            | Format::Zoom => Vec::new(),
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
