//! The bodies deliveries carry (`--payload`): hookbench's own wire format, a Stripe Event object,
//! or the user's template with placeholders.
//!
//! A template is a JSON object with the keys `credit` and `update`, each the body for that kind of
//! event, in which `{{id}}`, `{{account}}`, `{{amount}}`, `{{plan}}`, `{{version}}` and
//! `{{created}}` are filled in: a string that is exactly one numeric placeholder (`"{{amount}}"`)
//! becomes that number; placeholders inside longer strings are filled in as text
//! (`"cus_{{account}}"`). Object keys are left as they are. docs/audit.md has a complete example.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Map, Value};

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
    /// A Stripe Event object: `id`, `object: "event"`, `type`, `created`, `data.object`.
    Stripe,
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
}

/// The largest template read (1 MiB): a template is two bodies; a webhook body is kilobytes.
pub const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

const PLACEHOLDERS: [&str; 6] = ["id", "account", "amount", "plan", "version", "created"];
const NUMERIC: [&str; 4] = ["account", "amount", "version", "created"];

impl FromStr for Payload {
    type Err = PayloadError;

    /// `hookbench`, `stripe`, or the path of a template file.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "hookbench" => Ok(Self::Hookbench),
            "stripe" => Ok(Self::Stripe),
            path => Template::read(Path::new(path)).map(Self::Template),
        }
    }
}

impl Payload {
    /// The name a report shows.
    pub fn name(&self) -> String {
        match self {
            Self::Hookbench => "hookbench".to_string(),
            Self::Stripe => "stripe".to_string(),
            Self::Template(t) => t.path.display().to_string(),
        }
    }

    /// The event type a provider names in a header (`X-GitHub-Event`, `X-Shopify-Topic`).
    pub fn event_type(&self, kind: Kind) -> &'static str {
        match (self, kind) {
            (Self::Stripe, Kind::Credit) => "payment_intent.succeeded",
            (Self::Stripe, Kind::Update) => "customer.subscription.updated",
            (_, Kind::Credit) => CREDIT_TYPE,
            (_, Kind::Update) => PLAN_TYPE,
        }
    }

    /// The body of `e`.
    pub fn render(&self, e: &Fields) -> Vec<u8> {
        let bytes = match self {
            // Straight from the typed event: no JSON tree in between.
            Self::Hookbench => serde_json::to_vec(&hookbench_event(e)),
            Self::Stripe => serde_json::to_vec(&stripe_event(self.event_type(e.kind), e)),
            Self::Template(t) => serde_json::to_vec(&t.render(e)),
        };
        bytes.unwrap_or_default()
    }
}

fn hookbench_event(e: &Fields) -> HookbenchBody<'_> {
    let (id, account, created) = (e.id.as_str(), e.account, e.created);
    match e.kind {
        Kind::Credit => HookbenchBody::Credit { id, account, amount: e.amount, created },
        Kind::Update => HookbenchBody::Plan { id, account, plan: &e.plan, version: e.version, created },
    }
}

fn stripe_event(event_type: &str, e: &Fields) -> Value {
    let object = match e.kind {
        Kind::Credit => serde_json::json!({
            "id": format!("pi_{}", e.id), "object": "payment_intent", "account": e.account,
            "amount": e.amount, "currency": "usd", "status": "succeeded",
        }),
        Kind::Update => serde_json::json!({
            "id": format!("sub_{}", e.account), "object": "subscription", "account": e.account,
            "plan": e.plan, "version": e.version, "status": "active",
        }),
    };
    serde_json::json!({
        "id": e.id, "object": "event", "api_version": "2025-10-29.clover", "type": event_type,
        "created": e.created, "livemode": false, "pending_webhooks": 1, "data": { "object": object },
    })
}

/// A template: the bodies of a credit and of an update, with placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    path: PathBuf,
    credit: Value,
    update: Value,
}

impl Template {
    /// Reads and checks a template file, at most [`MAX_TEMPLATE_BYTES`] of a regular file.
    pub fn read(path: &Path) -> Result<Self, PayloadError> {
        let text = crate::files::read_text_capped(path, MAX_TEMPLATE_BYTES, "a template")
            .map_err(|problem| PayloadError::Read { problem })?;
        Self::from_text(path, &text)
    }

    /// Checks the template `text` read from `path`: one JSON object with `credit` and `update`,
    /// no key twice at any depth (JSON parsers keep the last silently), no placeholder in a key
    /// (keys are not filled in: it would go out literally), no unknown placeholder.
    pub fn from_text(path: &Path, text: &str) -> Result<Self, PayloadError> {
        let shape = |problem: String| PayloadError::Shape { path: path.into(), problem };
        let value = match serde_json::from_str::<strict::Strict>(text) {
            Ok(strict) => strict.0,
            // A key twice is the strict reader's own error, in the data; else the JSON is bad.
            Err(e) if e.classify() == serde_json::error::Category::Data => return Err(shape(e.to_string())),
            Err(source) => return Err(PayloadError::NotJson { path: path.into(), source }),
        };
        let Value::Object(mut map) = value else {
            return Err(shape("a template is a JSON object with the keys `credit` and `update`".into()));
        };
        let mut take =
            |key: &str| map.remove(key).ok_or_else(|| shape(format!("the key `{key}` is missing")));
        let (credit, update) = (take("credit")?, take("update")?);
        if let Some(extra) = map.keys().next() {
            return Err(shape(format!("unknown key `{extra}` (a template has `credit` and `update`)")));
        }
        for (key, body) in [("credit", &credit), ("update", &update)] {
            if let Some(held) = placeholder_in_a_key(body) {
                return Err(shape(format!(
                    "`{key}` has the key `{held}`, which holds a placeholder; placeholders are filled in \
                     values only, and a key would go out literally"
                )));
            }
            if let Some(unknown) = unknown_placeholder(body) {
                return Err(shape(format!(
                    "`{key}` uses the placeholder {{{{{unknown}}}}}; the known ones are {}",
                    PLACEHOLDERS.map(|p| format!("{{{{{p}}}}}")).join(", ")
                )));
            }
        }
        Ok(Self { path: path.into(), credit, update })
    }

    /// The body of `e`.
    pub fn render(&self, e: &Fields) -> Value {
        let body = match e.kind {
            Kind::Credit => &self.credit,
            Kind::Update => &self.update,
        };
        fill(body, e)
    }
}

fn value_of(name: &str, e: &Fields) -> Option<Value> {
    Some(match name {
        "id" => Value::from(e.id.as_str()),
        "account" => Value::from(e.account),
        "amount" => Value::from(e.amount),
        "plan" => Value::from(e.plan.as_str()),
        "version" => Value::from(e.version),
        "created" => Value::from(e.created),
        _ => return None,
    })
}

fn fill(v: &Value, e: &Fields) -> Value {
    match v {
        Value::String(s) => fill_string(s, e),
        Value::Array(items) => Value::Array(items.iter().map(|i| fill(i, e)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), fill(v, e))).collect::<Map<_, _>>())
        }
        other => other.clone(),
    }
}

fn fill_string(s: &str, e: &Fields) -> Value {
    if let Some(name) = s.strip_prefix("{{").and_then(|r| r.strip_suffix("}}"))
        && NUMERIC.contains(&name)
    {
        return value_of(name, e).unwrap_or(Value::Null);
    }
    let mut out = s.to_string();
    for name in PLACEHOLDERS {
        let token = format!("{{{{{name}}}}}");
        if out.contains(&token) {
            let text = match value_of(name, e) {
                Some(Value::String(t)) => t,
                Some(other) => other.to_string(),
                None => String::new(),
            };
            out = out.replace(&token, &text);
        }
    }
    Value::String(out)
}

/// The first key in `v`, at any depth, that holds `{{`.
fn placeholder_in_a_key(v: &Value) -> Option<String> {
    match v {
        Value::Array(items) => items.iter().find_map(placeholder_in_a_key),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| if k.contains("{{") { Some(k.clone()) } else { placeholder_in_a_key(v) }),
        _ => None,
    }
}

/// JSON read as [`Value`] with every object's keys unique: a key given twice is an error naming
/// it, where `serde_json::Value` keeps the last one silently. Nesting stays bounded by
/// serde_json's own recursion limit (128).
mod strict {
    use std::fmt;

    use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde_json::{Map, Value};

    pub(super) struct Strict(pub(super) Value);

    impl<'de> Deserialize<'de> for Strict {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_any(StrictVisitor).map(Strict)
        }
    }

    struct StrictVisitor;

    impl<'de> Visitor<'de> for StrictVisitor {
        type Value = Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(Value::from(v))
        }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(Value::from(v))
        }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(Value::from(v))
        }
        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(Value::from(v))
        }
        fn visit_string<E>(self, v: String) -> Result<Value, E> {
            Ok(Value::String(v))
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(Strict(v)) = seq.next_element()? {
                items.push(v);
            }
            Ok(Value::Array(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut out = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if out.contains_key(&key) {
                    return Err(de::Error::custom(format!("the key `{key}` is given twice")));
                }
                let Strict(v) = map.next_value()?;
                out.insert(key, v);
            }
            Ok(Value::Object(out))
        }
    }
}

/// The first `{{name}}` in `v`'s strings that is not a known placeholder.
fn unknown_placeholder(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(start) = rest.find("{{") {
                let after = &rest[start + 2..];
                let end = after.find("}}")?;
                let name = &after[..end];
                if !PLACEHOLDERS.contains(&name) {
                    return Some(name.to_string());
                }
                rest = &after[end + 2..];
            }
            None
        }
        Value::Array(items) => items.iter().find_map(unknown_placeholder),
        Value::Object(map) => map.values().find_map(unknown_placeholder),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credit() -> Fields {
        Fields {
            id: "evt_7".into(),
            kind: Kind::Credit,
            account: 42,
            amount: 1500,
            plan: String::new(),
            version: 0,
            created: 1_764_460_800,
            poisoned: false,
            object: None,
        }
    }

    fn template(text: &str) -> Result<Template, PayloadError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.json");
        std::fs::write(&path, text).expect("write");
        Template::read(&path)
    }

    #[test]
    fn a_lone_numeric_placeholder_becomes_a_number_and_others_are_text() {
        let t = template(
            r#"{"credit": {"id": "{{id}}", "data": {"customer": "cus_{{account}}", "amount_cents": "{{amount}}", "tags": ["{{id}}-{{amount}}"]}},
                "update": {"id": "{{id}}", "plan": "{{plan}}", "version": "{{version}}"}}"#,
        )
        .expect("template");
        let body = t.render(&credit());
        assert_eq!(
            body,
            serde_json::json!({"id": "evt_7", "data": {"customer": "cus_42", "amount_cents": 1500, "tags": ["evt_7-1500"]}})
        );
    }

    #[test]
    fn a_template_names_what_is_wrong() {
        let err = template(r#"{"credit": {"a": "{{amount}}"}}"#).expect_err("no update").to_string();
        assert!(err.contains("the key `update` is missing"), "{err}");
        let err = template(r#"{"credit": {"a": "{{amout}}"}, "update": {}}"#).expect_err("typo").to_string();
        assert!(err.contains("{{amout}}") && err.contains("{{amount}}"), "{err}");
        let err = template("[1]").expect_err("not an object").to_string();
        assert!(err.contains("JSON object"), "{err}");
        let err = template("{").expect_err("not JSON");
        assert!(err.to_string().contains("is not JSON"), "{err}");
        assert!(std::error::Error::source(&err).is_some(), "the parser's message is the cause");
    }

    #[test]
    fn a_placeholder_in_a_key_is_refused_naming_the_key() {
        let err =
            template(r#"{"credit": {"data": {"{{id}}": 1}}, "update": {}}"#).expect_err("key").to_string();
        assert!(err.contains("`{{id}}`") && err.contains("credit") && err.contains("key"), "{err}");
        let err = template(r#"{"credit": {}, "update": {"x_{{oops}}": 1}}"#).expect_err("key").to_string();
        assert!(err.contains("`x_{{oops}}`") && err.contains("update"), "{err}");
    }

    #[test]
    fn a_key_given_twice_is_refused_naming_it() {
        let err = template(r#"{"credit": {"id": "{{id}}", "id": "x"}, "update": {}}"#)
            .expect_err("twice")
            .to_string();
        assert!(err.contains("`id`") && err.contains("twice"), "{err}");
        let err = template(r#"{"credit": {}, "update": {}, "credit": {}}"#).expect_err("twice").to_string();
        assert!(err.contains("`credit`") && err.contains("twice"), "{err}");
        let err = template(r#"{"credit": {"d": [{"a": 1, "a": 2}]}, "update": {}}"#)
            .expect_err("twice")
            .to_string();
        assert!(err.contains("`a`") && err.contains("twice"), "{err}");
    }

    #[test]
    fn a_template_is_read_within_its_limit_and_never_from_a_device() {
        let err = Template::read(Path::new("/dev/zero")).expect_err("a device").to_string();
        assert!(err.contains("--payload") && err.contains("not a regular file"), "{err}");
        let big = format!(
            r#"{{"credit": {{"pad": "{}"}}, "update": {{}}}}"#,
            "x".repeat(MAX_TEMPLATE_BYTES as usize)
        );
        let err = template(&big).expect_err("too large").to_string();
        assert!(err.contains("--payload") && err.contains(&MAX_TEMPLATE_BYTES.to_string()), "{err}");
    }

    proptest::proptest! {
        /// Whatever the file holds, reading a template returns, never panics.
        #[test]
        fn any_text_is_a_template_or_an_error(text in "\\PC{0,200}") {
            let _ = Template::from_text(Path::new("t.json"), &text);
        }

        /// Text shaped like a template (braces, quotes, placeholders, keys repeated) included.
        #[test]
        fn template_like_text_never_panics(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "{", "}", "[", "]", ",", ":", "\"credit\"", "\"update\"", "\"{{id}}\"",
                    "\"{{amount}}\"", "\"{{\"", "\"}}\"", "\"a{{plan}}b\"", "1", "null", "\"k\"",
                ]),
                0..40,
            )
        ) {
            let text = parts.concat();
            if let Ok(t) = Template::from_text(Path::new("t.json"), &text) {
                let _ = t.render(&credit());
            }
        }
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

    /// The sender's bodies are byte for byte those the receivers' test parses back into the same
    /// fields (receivers/tests/it/golden.rs reads the same file).
    #[test]
    fn hookbench_bodies_are_the_golden_ones() {
        let golden: Golden =
            serde_json::from_str(include_str!("../../../testkit/golden/hookbench-bodies.json"))
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

    #[test]
    fn a_stripe_event_carries_the_fields_in_data_object() {
        let body: Value = serde_json::from_slice(&Payload::Stripe.render(&credit())).expect("json");
        assert_eq!(body["object"], "event");
        assert_eq!(body["type"], "payment_intent.succeeded");
        assert_eq!(body["data"]["object"]["amount"], 1500);
        assert_eq!(body["data"]["object"]["account"], 42);
    }
}
