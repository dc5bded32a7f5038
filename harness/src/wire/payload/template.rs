//! A template (`--payload FILE`): a JSON object with the keys `credit` and `update`, each the body
//! for that kind of event, in which `{{id}}`, `{{account}}`, `{{amount}}`, `{{plan}}`, `{{version}}`
//! `{{created}}` and `{{object}}` (the object the event is about: two events of one change share
//! it; without one, the event's id) are filled in: a string that is exactly one numeric placeholder
//! (`"{{amount}}"`) becomes that number; placeholders inside longer strings are filled in as text
//! (`"cus_{{account}}"`). Object keys are left as they are. docs/audit.md has a complete example.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Fields, Kind, PayloadError};

/// The largest template read (1 MiB): a template is two bodies; a webhook body is kilobytes.
pub const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

const PLACEHOLDERS: [&str; 7] = ["id", "account", "amount", "plan", "version", "created", "object"];
const NUMERIC: [&str; 4] = ["account", "amount", "version", "created"];

/// A template: the bodies of a credit and of an update, with placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    path: PathBuf,
    credit: Value,
    update: Value,
}

impl Template {
    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether its credit body carries `{{object}}`: without it, two events of one change differ
    /// in nothing but their ids and amounts a receiver could not tell from two payments.
    pub fn names_object(&self) -> bool {
        self.credit_names("{{object}}")
    }

    /// Whether its credit body carries `{{amount}}`.
    pub fn names_amount(&self) -> bool {
        self.credit_names("{{amount}}")
    }

    /// Whether a string of its credit body holds `placeholder`.
    fn credit_names(&self, placeholder: &str) -> bool {
        fn names(v: &Value, p: &str) -> bool {
            match v {
                Value::String(s) => s.contains(p),
                Value::Array(items) => items.iter().any(|v| names(v, p)),
                Value::Object(map) => map.values().any(|v| names(v, p)),
                _ => false,
            }
        }
        names(&self.credit, placeholder)
    }

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
        "object" => Value::from(e.object.as_deref().unwrap_or(&e.id)),
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
    use crate::wire::Payload;

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
    fn the_object_placeholder_is_the_events_object_or_its_id() {
        let with = template(r#"{"credit": {"payment": "pay_{{object}}"}, "update": {}}"#).expect("template");
        assert!(with.names_object());
        assert_eq!(with.render(&credit()), serde_json::json!({"payment": "pay_evt_7"}));
        let shared = Fields { object: Some("obj_1".into()), ..credit() };
        assert_eq!(with.render(&shared), serde_json::json!({"payment": "pay_obj_1"}));
        assert!(Payload::Template(with).carries_object());
        // In the update body alone, a credit's pair would still differ in nothing but its ids.
        let without =
            template(r#"{"credit": {"id": "{{id}}"}, "update": {"o": "{{object}}"}}"#).expect("template");
        assert!(!without.names_object());
        assert!(!Payload::Template(without).carries_object());
        assert!(!Payload::Hookbench.carries_object());
        assert!("stripe".parse::<Payload>().expect("stripe").carries_object());
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
}
