//! What goes on the wire for one attempt: the body (`payload`) and the provider's signature
//! headers (`signing`), for hookbench's own receivers and for anyone's.
//!
//! [`Wire`] is the sender's one source of bodies and headers. A bench uses hookbench's format and
//! Standard Webhooks; an audit chooses both, and puts every id and account of its run in a space of
//! its own ([`IdSpace`]) so that a receiver with a long-lived database never sees an id twice across
//! audits.

pub mod payload;
pub mod provider;
pub mod query;
pub mod signing;
mod whsec;

use bytes::Bytes;

use crate::workload::{EventKind, Workload};
pub use payload::{EventTypeChoice, FieldMapping, Fields, Format, Kind, Payload, PayloadError};
pub use provider::{IdFrom, Provider, RetryOn, Signatures, Timestamps, Verification};
pub use query::PathQuery;
pub use signing::{Scheme, SecretError, Signer};
pub use whsec::{NotWhsec, Whsec};

/// Where a run's ids and accounts live.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdSpace {
    /// Put before every workload id (`evt_000132` becomes `<prefix>evt_000132`).
    pub prefix: String,
    /// Added to every workload account.
    pub account_base: i64,
}

/// What a poison event looks like on the wire: signed like the rest, and refused by the handler.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Poison {
    /// A credit with its amount negated (what hookbench's own receivers refuse).
    #[default]
    NegativeAmount,
    /// A credit to this account, which the user's handler is known to refuse (taken as is, not
    /// moved into the run's id space).
    Account(i64),
    /// The credit body of this template instead of the run's payload.
    Template(Payload),
}

/// Bodies and signatures for a run.
#[derive(Debug, Clone)]
pub struct Wire {
    /// How attempts are signed.
    pub signer: Signer,
    /// What bodies look like.
    pub payload: Payload,
    /// The run's ids and accounts.
    pub ids: IdSpace,
    /// How the workload's poison events are made.
    pub poison: Poison,
    /// Where the workload's credits' accounts count from, when not from `ids.account_base`: an
    /// audit's scarce layout puts every credit on the run's shared accounts, from the run's base,
    /// while a load's updates keep accounts of their own.
    pub credit_base: Option<i64>,
}

impl Wire {
    /// hookbench's format signed with Standard Webhooks under `whsec` (`whsec_<base64>`), ids as
    /// the workload has them (what a bench sends its own receivers).
    pub fn hookbench(whsec: &str) -> Result<Self, SecretError> {
        let signer = Signer::new(Scheme::StandardWebhooks, &[whsec.to_string()])?;
        Ok(Self {
            signer,
            payload: Payload::Hookbench,
            ids: IdSpace::default(),
            poison: Poison::NegativeAmount,
            credit_base: None,
        })
    }

    /// The fields of `workload`'s event `i` in this run's id space. A poison credit is made as
    /// [`Wire::poison`] says: it passes the signature and the wire format, and the handler refuses
    /// it.
    pub fn fields(&self, workload: &Workload, i: usize) -> Fields {
        let e = &workload.events[i];
        let id = format!("{}{}", self.ids.prefix, e.id());
        let account = i64::from(e.account) + self.ids.account_base;
        let created = i64::try_from(e.created).unwrap_or(i64::MAX);
        match e.kind {
            EventKind::Credit { amount } => {
                let account = i64::from(e.account) + self.credit_base.unwrap_or(self.ids.account_base);
                let poisoned = workload.is_poisoned(i);
                let (account, amount) = match &self.poison {
                    Poison::NegativeAmount if poisoned => (account, -amount),
                    Poison::Account(a) if poisoned => (*a, amount),
                    _ => (account, amount),
                };
                let plan = String::new();
                Fields {
                    id,
                    kind: Kind::Credit,
                    account,
                    amount,
                    plan,
                    version: 0,
                    created,
                    poisoned,
                    object: None,
                }
            }
            EventKind::Plan { version, .. } => Fields {
                id,
                kind: Kind::Update,
                account,
                amount: 0,
                plan: format!("plan_v{version}"),
                version: i64::from(version),
                created,
                poisoned: false,
                object: None,
            },
        }
    }

    /// The body of `f` in an attempt sent at `sent_at_s`, Unix seconds (from the poison template
    /// for a poison event, when there is one). Only a timestamped body (Linear's) depends on
    /// the time: [`Payload::timestamped`].
    pub fn body(&self, f: &Fields, sent_at_s: i64) -> Bytes {
        match &self.poison {
            Poison::Template(p) if f.poisoned => Bytes::from(p.render_at(f, sent_at_s)),
            _ => Bytes::from(self.payload.render_at(f, sent_at_s)),
        }
    }

    /// The headers of one attempt of `f` with `body` at `timestamp` (Unix seconds), the
    /// content type included.
    /// The payload's own headers (`X-GitHub-Event`, `X-Shopify-Topic`) go beside the signer's,
    /// and replace a signer's header of the same name: a GitHub signer names the event from the
    /// same type, so the two agree, and a header is never sent twice. A poison event's body may
    /// come from its template; its headers are the run's payload's, as for every event.
    pub fn headers(&self, f: &Fields, body: &[u8], timestamp: i64) -> Vec<(&'static str, String)> {
        let attempt = signing::Attempt {
            id: &f.id,
            event_type: self.payload.event_type(f.kind),
            timestamp,
            body,
            query: self.path_query(),
        };
        let mut headers = self.signer.headers(&attempt);
        for (name, value) in self.payload.headers(f) {
            match headers.iter_mut().find(|(held, _)| *held == name) {
                Some(held) => held.1 = value,
                None => headers.push((name, value)),
            }
        }
        headers.push(("content-type", self.payload.content_type().to_string()));
        headers
    }

    /// What the delivery's URL carries after its path: Twilio signs a body that is not a form
    /// through its hash in the URL.
    pub fn path_query(&self) -> PathQuery {
        let form = self.payload.content_type().ends_with("x-www-form-urlencoded");
        if self.signer.scheme() == Scheme::Twilio && !form { PathQuery::BodySha256 } else { PathQuery::Plain }
    }

    /// What the signing provider adds to its `n`th retry (1-based) of a delivery whose attempt
    /// before ended as `last` (Slack's `x-slack-retry-num` and `-reason`).
    pub fn retry_headers(&self, n: usize, last: crate::report::model::Fate) -> Vec<(&'static str, String)> {
        self.signer.scheme().provider().map_or_else(Vec::new, |p| p.retry_headers(n, last))
    }

    /// One attempt of `f` at `timestamp`: its body and headers.
    pub fn attempt(&self, f: &Fields, timestamp: i64) -> (Bytes, Vec<(&'static str, String)>) {
        let body = self.body(f, timestamp);
        let headers = self.headers(f, &body, timestamp);
        (body, headers)
    }

    /// The same wire signed by `signer` instead (one secret alone, or one no receiver holds).
    pub fn signed_by(&self, signer: Signer) -> Self {
        Self { signer, ..self.clone() }
    }

    /// The workload index of an id this run sent (`None` for anything else).
    pub fn workload_index(&self, id: &str) -> Option<usize> {
        id.strip_prefix(self.ids.prefix.as_str())?.strip_prefix("evt_")?.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadConfig;

    fn poisoned_workload() -> (Workload, usize) {
        let mut w = Workload::generate(&WorkloadConfig { events: 200, ..WorkloadConfig::default() })
            .expect("a workload");
        assert!(w.poison(0.2) > 0, "some credits drew poison");
        let i = (0..w.events.len()).find(|&i| w.is_poisoned(i)).expect("a poison event");
        (w, i)
    }

    fn wire(poison: Poison) -> Wire {
        let ids = IdSpace { prefix: "t_".into(), account_base: 1000 };
        Wire { ids, poison, ..Wire::hookbench("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("a secret") }
    }

    /// Twilio signs a form's pairs after the URL and a JSON body through its hash in the URL:
    /// the wire asks the transports for that query exactly when the body is not a form.
    #[test]
    fn twilio_signs_a_json_body_through_its_hash_in_the_url() {
        let (w, _) = poisoned_workload();
        let signer = Signer::new(Scheme::Twilio, &["token".to_string()]).expect("a signer");
        let signer = signer.for_url("http://h/twilio");
        let form = Wire { signer, payload: Payload::provider(Format::Twilio), ..wire(Poison::default()) };
        let json = Wire { payload: Payload::provider(Format::TwilioJson), ..form.clone() };
        assert_eq!(form.path_query(), PathQuery::Plain);
        assert_eq!(json.path_query(), PathQuery::BodySha256);
        let i =
            (0..w.events.len()).find(|&i| w.events[i].is_credit() && !w.is_poisoned(i)).expect("a credit");
        let f = json.fields(&w, i);
        let (body, headers) = json.attempt(&f, 1);
        let sig =
            |h: &[(&str, String)]| h.iter().find(|(n, _)| *n == "x-twilio-signature").map(|(_, v)| v.clone());
        // The signature is over the URL with the body's hash: another body, another signature.
        let mut other = f.clone();
        other.amount += 1;
        let (other_body, other_headers) = json.attempt(&other, 1);
        assert_ne!(body, other_body);
        assert_ne!(sig(&headers), sig(&other_headers));
        assert!(headers.contains(&("content-type", "application/json".to_string())));
        let (_, form_headers) = form.attempt(&f, 1);
        assert!(form_headers.contains(&("content-type", "application/x-www-form-urlencoded".to_string())));
    }

    #[test]
    fn poison_is_made_as_the_wire_says_and_only_for_poison_events() {
        let (w, i) = poisoned_workload();
        let clean =
            (0..w.events.len()).find(|&j| w.events[j].is_credit() && !w.is_poisoned(j)).expect("clean");
        let negative = wire(Poison::NegativeAmount).fields(&w, i);
        assert!(negative.amount < 0 && negative.poisoned);
        let to_account = wire(Poison::Account(7)).fields(&w, i);
        assert_eq!(
            (to_account.account, to_account.amount > 0),
            (7, true),
            "taken as is, not moved by the base"
        );
        let untouched = wire(Poison::Account(7)).fields(&w, clean);
        assert!(!untouched.poisoned && untouched.account >= 1000 && untouched.amount > 0);
        // A template poison changes the body alone, and only a poison event's.
        let template = wire(Poison::Template(Payload::provider(Format::Stripe)));
        let body = String::from_utf8(template.body(&template.fields(&w, i), 0).to_vec()).expect("utf-8");
        assert!(body.contains("\"object\":\"event\""), "the poison template's body: {body}");
        let body = String::from_utf8(template.body(&template.fields(&w, clean), 0).to_vec()).expect("utf-8");
        assert!(body.contains("credit.added"), "the run's own payload: {body}");
    }
}
