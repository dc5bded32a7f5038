//! The body and headers a script sends, with sentinels where an event's values go.
//!
//! They are rendered by the audit's own payload and signing code, so a template's shape, a
//! provider's or hookbench's own is kept byte for byte; the script only replaces the sentinels,
//! and signs. What is proved before a skeleton is used: the same text rendered with a second set
//! of values equals the skeleton with those values put in. A provider's body also derives values
//! from the event's id by hashing (a GitHub issue's id and number) and writes times as dates; no
//! text substitution rebuilds those, so for a provider's body the proof is weaker and said: the
//! event's own id (where the provider puts it) and account are fresh, and every other place the
//! two renderings differ keeps the audit's value, listed in [`Skeleton::kept`] and in the
//! script's top comment.

use serde_json::Value;

use super::ReproError;
use crate::wire::signing::{Scheme, Signer};
use crate::wire::{Fields, IdSpace, Kind, Payload, Poison, Wire};

/// An event's id, account, amount, creation time and the object it is about; for an update, the
/// amount's place holds its version and the object's its plan.
pub(super) type Values = (&'static str, i64, i64, i64, &'static str);

/// Sentinels: values no real event has, whose text appears nowhere else in a body.
pub(super) const SENTINELS: Values =
    ("__HOOKBENCH_ID__", 987_654_321_012_345, 987_654_321_054_321, 987_654_321_077_777, "__HOOKBENCH_OBJ__");
/// A second set, to prove that putting values in the skeleton's text renders the event.
const PROOF: Values = (
    "__HOOKBENCH_PROOF__",
    123_456_789_012_345,
    123_456_789_054_321,
    123_456_789_077_777,
    "__HOOKBENCH_PROOF_OBJ__",
);

/// The headers a script computes itself, for each scheme it signs: the signature and the time
/// it signs at. Every other header of the scheme and the payload is in the skeleton.
pub(super) fn signature_headers(scheme: Scheme) -> Option<&'static [&'static str]> {
    Some(match scheme {
        Scheme::StandardWebhooks => &["webhook-timestamp", "webhook-signature"],
        Scheme::Stripe => &["stripe-signature"],
        Scheme::Github => &["x-hub-signature-256"],
        Scheme::Shopify => &["x-shopify-hmac-sha256"],
        Scheme::Slack => &["x-slack-signature", "x-slack-request-timestamp"],
        Scheme::Square => &["x-square-hmacsha256-signature"],
        Scheme::Paddle => &["paddle-signature"],
        Scheme::Gitlab => &["x-gitlab-token"],
        Scheme::Zoom => &["x-zm-signature", "x-zm-request-timestamp"],
        Scheme::Twitch => &["twitch-eventsub-message-signature", "twitch-eventsub-message-timestamp"],
        // Twilio signs the URL and the form's pairs; Linear's time is in its body, where the
        // creation time's sentinel puts it.
        Scheme::Twilio => &["x-twilio-signature"],
        Scheme::Linear => &["linear-signature"],
        // With a private key: the script needs Python's cryptography (Node's crypto has both).
        Scheme::Sendgrid => {
            &["x-twilio-email-event-webhook-signature", "x-twilio-email-event-webhook-timestamp"]
        }
        Scheme::Discord => &["x-signature-ed25519", "x-signature-timestamp"],
        Scheme::None => &[],
    })
}

/// What a script sends for one event, with [`SENTINELS`] in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    /// The event's body: a credit's, or an update's for an out-of-order reproduction.
    pub body: String,
    /// Every header but the signature's, the content type included, in the order sent.
    pub headers: Vec<(String, String)>,
    /// Where a provider's body keeps the audit's values (JSON pointers, and `header NAME`): what
    /// hookbench derives from the event's id by hashing, and times written as dates. Empty when
    /// the whole body is rebuilt.
    pub kept: Vec<String>,
    /// Whether the creation time's sentinel is in the skeleton: a body that carries the time it
    /// is created or sent at (a provider's dates keep the audit's time instead).
    pub fresh_created: bool,
    /// Whether the body carries the time it is sent at (Linear's webhookTimestamp), where the
    /// creation time's sentinel is: each attempt then puts its own time there.
    pub sent_at_in_body: bool,
}

/// One rendering: the body and the headers the script does not compute.
#[derive(Debug, PartialEq, Eq)]
struct Rendered {
    body: String,
    headers: Vec<(String, String)>,
}

impl Rendered {
    /// `values` rendered through `wire`, sent at `values.3`, the headers named in `signed` left
    /// out; created at `dated` when given (a provider's dates keep the audit's time, while a time
    /// the body carries of its sending, Linear's webhookTimestamp, is the script's own).
    fn of(
        wire: &Wire,
        kind: Kind,
        values: Values,
        dated: Option<i64>,
        signed: &[&str],
    ) -> Result<Self, ReproError> {
        let mut f = fields(kind, values);
        f.created = dated.unwrap_or(values.3);
        let body = wire.body(&f, values.3);
        let headers = wire.headers(&f, &body, values.3);
        let body = String::from_utf8(body.to_vec()).map_err(|_| ReproError::Skeleton)?;
        let headers = headers
            .into_iter()
            .filter(|(name, _)| !signed.contains(name))
            .map(|(name, value)| (name.to_string(), value))
            .collect();
        Ok(Self { body, headers })
    }

    /// This rendering of `from` with `to`'s values put in its text, as the script does.
    fn filled(&self, from: Values, to: Values) -> Self {
        let fill = |text: &str| {
            text.replace(from.4, to.4)
                .replace(from.0, to.0)
                .replace(&from.1.to_string(), &to.1.to_string())
                .replace(&from.2.to_string(), &to.2.to_string())
                .replace(&from.3.to_string(), &to.3.to_string())
        };
        Self {
            body: fill(&self.body),
            headers: self.headers.iter().map(|(n, v)| (n.clone(), fill(v))).collect(),
        }
    }

    fn mentions(&self, text: &str) -> bool {
        self.body.contains(text) || self.headers.iter().any(|(_, v)| v.contains(text))
    }
}

/// The skeleton of `payload`'s event of `kind` (a credit, or a plan update) signed as `scheme`,
/// once proved (see the module's comment). `at_s` is the time a provider's dates keep: the audit's.
pub fn skeleton(payload: &Payload, kind: Kind, scheme: Scheme, at_s: i64) -> Result<Skeleton, ReproError> {
    let signed = signature_headers(scheme).ok_or_else(|| {
        ReproError::Unsupported(format!("the scripts do not sign as {} yet", scheme.as_str()))
    })?;
    if scheme == Scheme::Twilio && !payload.content_type().ends_with("x-www-form-urlencoded") {
        // Twilio signs any other body through a hash of it in the URL's query.
        return Err(ReproError::Unsupported(
            "the audit signed a JSON body as Twilio (bodySHA256 in the URL); scripts sign Twilio's forms only"
                .to_string(),
        ));
    }
    let wire = Wire {
        // A key of no consequence: the signature headers are left out.
        signer: Signer::from_key(scheme, vec![0x5a; 32]),
        payload: payload.clone(),
        ids: IdSpace { prefix: String::new(), account_base: 0 },
        poison: Poison::default(),
        credit_base: None,
    };
    let text = Rendered::of(&wire, kind, SENTINELS, None, signed)?;
    if !text.mentions(SENTINELS.0) {
        return Err(ReproError::Skeleton);
    }
    // Created at another time, sent at the sentinel's: what still shows it is the sending time.
    let sent_at_in_body =
        Rendered::of(&wire, kind, SENTINELS, Some(PROOF.3), signed)?.body.contains(&SENTINELS.3.to_string());
    if text.filled(SENTINELS, PROOF) == Rendered::of(&wire, kind, PROOF, None, signed)? {
        return Ok(Skeleton {
            body: text.body,
            headers: text.headers,
            kept: Vec::new(),
            fresh_created: true,
            sent_at_in_body,
        });
    }
    if !matches!(payload, Payload::Provider(_)) {
        return Err(ReproError::Skeleton);
    }
    let text = Rendered::of(&wire, kind, SENTINELS, Some(at_s), signed)?;
    let filled = text.filled(SENTINELS, PROOF);
    let proof = Rendered::of(&wire, kind, PROOF, Some(at_s), signed)?;
    // The event's id must come out fresh: where the provider puts it, the text holds it.
    if !filled.mentions(PROOF.0) {
        return Err(ReproError::Skeleton);
    }
    let kept = kept(&filled, &proof)?;
    let fresh_created = text.mentions(&SENTINELS.3.to_string());
    Ok(Skeleton { body: text.body, headers: text.headers, kept, fresh_created, sent_at_in_body })
}

/// Where `filled` keeps a value `proof` renders otherwise.
fn kept(filled: &Rendered, proof: &Rendered) -> Result<Vec<String>, ReproError> {
    let parse = |body: &str| serde_json::from_str::<Value>(body).ok();
    let mut out = Vec::new();
    match (parse(&filled.body), parse(&proof.body)) {
        (Some(a), Some(b)) => differing(&a, &b, String::new(), &mut out),
        // Not JSON: a form (Twilio's), compared pair by pair.
        _ => form_differing(&filled.body, &proof.body, &mut out)?,
    }
    for ((name, a), (_, b)) in filled.headers.iter().zip(&proof.headers) {
        if a != b {
            out.push(format!("header {name}"));
        }
    }
    Ok(out)
}

/// The names of the form pairs whose values differ between `a` and `b` (`form NAME`); the two
/// must hold the same names in the same order.
fn form_differing(a: &str, b: &str, out: &mut Vec<String>) -> Result<(), ReproError> {
    let pairs = |body: &str| form_urlencoded::parse(body.as_bytes()).into_owned().collect::<Vec<_>>();
    let (a, b) = (pairs(a), pairs(b));
    if a.len() != b.len() || a.iter().zip(&b).any(|(x, y)| x.0 != y.0) {
        return Err(ReproError::Skeleton);
    }
    out.extend(a.iter().zip(&b).filter(|(x, y)| x.1 != y.1).map(|(x, _)| format!("form {}", x.0)));
    Ok(())
}

/// The JSON pointers under `path` where `a` and `b` differ (a whole subtree when its shape does).
fn differing(a: &Value, b: &Value, path: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if x.len() == y.len() && x.keys().all(|k| y.contains_key(k)) => {
            for (k, v) in x {
                differing(v, &y[k], format!("{path}/{k}"), out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                differing(v, w, format!("{path}/{i}"), out);
            }
        }
        _ if a != b => out.push(if path.is_empty() { "/".to_string() } else { path }),
        _ => {}
    }
}

/// An event of `kind` with these values: a credit of the amount about the object, or an update
/// to the version (the amount's place) and plan (the object's).
fn fields(kind: Kind, (id, account, amount, created, object): Values) -> Fields {
    let update = kind == Kind::Update;
    Fields {
        id: id.to_string(),
        kind,
        account,
        amount: if update { 0 } else { amount },
        plan: if update { object.to_string() } else { String::new() },
        version: if update { amount } else { 0 },
        created,
        poisoned: false,
        object: (!update).then(|| object.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hookbench_bodies_and_a_template_are_rebuilt_from_their_text() {
        let s = skeleton(&Payload::Hookbench, Kind::Credit, Scheme::StandardWebhooks, 0)
            .expect("hookbench's bodies");
        assert!(s.body.contains(SENTINELS.0) && s.body.contains(&SENTINELS.2.to_string()), "{}", s.body);
        assert!(s.kept.is_empty() && s.fresh_created);
        let names: Vec<&str> = s.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["webhook-id", "content-type"], "the signature is the script's");
        let text = r#"{"credit": {"event_id": "{{id}}", "customer": "cus_{{account}}", "amount": "{{amount}}"},
                       "update": {"event_id": "{{id}}"}}"#;
        let template = crate::wire::payload::Template::from_text(std::path::Path::new("t.json"), text)
            .expect("a template");
        let s = skeleton(&Payload::Template(template), Kind::Credit, Scheme::Stripe, 0)
            .expect("a template copying its values");
        assert!(s.body.contains(&format!("cus_{}", SENTINELS.1)), "{}", s.body);
        assert_eq!(s.headers, [("content-type".to_string(), "application/json".to_string())]);
    }

    /// An update's skeleton carries its version where the amount's sentinel goes and its plan
    /// where the object's does; a template's update keeps its own shape.
    #[test]
    fn an_updates_version_and_plan_are_put_in_as_a_credits_amount_and_object_are() {
        let s = skeleton(&Payload::Hookbench, Kind::Update, Scheme::StandardWebhooks, 0).expect("an update");
        assert!(s.body.contains(&SENTINELS.2.to_string()) && s.body.contains(SENTINELS.4), "{}", s.body);
        assert_ne!(
            s.body,
            skeleton(&Payload::Hookbench, Kind::Credit, Scheme::StandardWebhooks, 0).expect("a credit").body
        );
        let text = r#"{"credit": {"event_id": "{{id}}", "customer": "cus_{{account}}", "amount": "{{amount}}"},
                       "update": {"event_id": "{{id}}", "customer": "cus_{{account}}", "version": "{{version}}"}}"#;
        let template = crate::wire::payload::Template::from_text(std::path::Path::new("t.json"), text)
            .expect("a template");
        let s = skeleton(&Payload::Template(template), Kind::Update, Scheme::None, 0).expect("its update");
        let version = format!("\"version\":{}", SENTINELS.2);
        assert!(s.body.replace(' ', "").contains(&version), "{}", s.body);
    }

    #[test]
    fn a_providers_body_keeps_its_derived_values_and_says_where() {
        let github = Payload::with("github", &[], &[]).expect("github's bodies");
        let s = skeleton(&github, Kind::Credit, Scheme::Github, 1_764_000_000).expect("github's bodies");
        assert!(!s.fresh_created);
        let delivery = s.headers.iter().find(|(n, _)| n == "x-github-delivery").expect("the delivery header");
        assert_eq!(delivery.1, SENTINELS.0, "the delivery id is fresh");
        assert!(s.kept.iter().any(|p| p == "/issue/id"), "{:?}", s.kept);
        assert!(!s.kept.iter().any(|p| p == "/repository/id"), "the account is fresh: {:?}", s.kept);
        assert!(s.headers.iter().all(|(n, _)| n != "x-hub-signature-256"));
    }

    /// Linear's library refuses a body whose webhookTimestamp is a minute old: a script's
    /// Linear body carries the time it is sent at, never the audit's.
    #[test]
    fn a_linear_body_is_dated_when_the_script_sends_it() {
        let linear = Payload::with("linear", &[], &[]).expect("linear's bodies");
        let s = skeleton(&linear, Kind::Credit, Scheme::Linear, 1_764_000_000).expect("linear's bodies");
        assert!(s.kept.iter().all(|p| !p.contains("webhookTimestamp")), "{:?}", s.kept);
        assert!(s.fresh_created && s.sent_at_in_body, "{}", s.body);
        let hookbench = skeleton(&Payload::Hookbench, Kind::Credit, Scheme::Linear, 0).expect("hookbench's");
        assert!(
            !hookbench.sent_at_in_body,
            "hookbench's bodies carry their creation time, not their sending"
        );
    }

    #[test]
    fn only_the_schemes_a_script_signs_have_signature_headers() {
        for scheme in Scheme::ALL {
            let written = crate::report::model::REPRODUCIBLE_SIGNING.contains(&scheme.as_str());
            assert_eq!(signature_headers(*scheme).is_some(), written, "{}", scheme.as_str());
        }
    }
}
