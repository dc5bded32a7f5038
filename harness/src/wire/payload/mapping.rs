//! Field mappings (`--field NAME=POINTER`): where in a provider's body the account, the amount
//! and the version are written, as JSON pointers (RFC 6901).
//!
//! What a mapping writes depends on what the body holds at that place: a string is kept as an
//! id of the provider's form, its prefix up to and including its last `_` followed by the number
//! in decimal (`"cus_7"` holding account 42 becomes `"cus_42"`; a string without `_` becomes the
//! bare number as text, `"42"`); anything else (a number, `null`, a key the object lacks) becomes
//! the JSON number. A pointer must reach its place through objects only: into an array, through a
//! string, a number or `null`, or through a key the body lacks, it is refused before anything is
//! sent, naming the flag. The one array a pointer enters is a body that is an array itself (a
//! SendGrid batch): its first token is the index of an element the body has (`/0/account`).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};

/// What a mapping places.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldName {
    /// The account the event is for (in every body).
    Account,
    /// Credits added (in credit bodies).
    Amount,
    /// The plan version an update carries (in update bodies).
    Version,
}

impl FieldName {
    /// Every name, in the order `--help` lists them.
    pub const ALL: [Self; 3] = [Self::Account, Self::Amount, Self::Version];

    /// The name `--field` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Account => "account",
            Self::Amount => "amount",
            Self::Version => "version",
        }
    }
}

/// Why a JSON pointer is not one (RFC 6901).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadPointer {
    /// It does not start with `/` (the root, `""`, included: a body is an object, not a number).
    #[error("`{0}` is not a JSON pointer (RFC 6901): it starts with `/`")]
    NoSlash(String),
    /// A `~` in a token not followed by `0` or `1` (the token).
    #[error("`~` in `{0}` is followed by neither 0 nor 1 (RFC 6901)")]
    BadEscape(String),
}

/// Why a pointer's place cannot be reached in a body (where, as a pointer from the root).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreachable {
    /// The pointer has no token (never so for a parsed pointer).
    #[error("the pointer names no place")]
    NoPlace,
    /// A key on the way that the body lacks.
    #[error("the body has nothing at {0}")]
    Missing(String),
    /// An array on the way: a mapping goes through objects only.
    #[error("{0} is an array; a mapping goes through objects only")]
    Array(String),
    /// A body that is an array, entered by a token that is not the index of one of its elements
    /// (the token, the number of elements).
    #[error(
        "the body's root is an array of {len}; a mapping enters it by an element's index (/0/...), not `{token}`"
    )]
    RootIndex {
        /// The first token.
        token: String,
        /// The elements the body has.
        len: usize,
    },
    /// A string, a number, a boolean or `null` on the way.
    #[error("{at} is {kind}, not an object")]
    NotAnObject {
        /// Where.
        at: String,
        /// What is there instead, with its article.
        kind: &'static str,
    },
}

/// Why `--field` is not `NAME=POINTER`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadFieldMapping {
    /// No `=` (the text as given).
    #[error("`{0}` is not NAME=POINTER (NAME one of {names})", names = field_names())]
    NoEquals(String),
    /// A name that is not a field's.
    #[error("`{0}` is not a field; the fields are {names}", names = field_names())]
    UnknownField(String),
    /// The pointer.
    #[error(transparent)]
    Pointer(#[from] BadPointer),
}

/// The fields' names, as messages list them.
fn field_names() -> String {
    FieldName::ALL.map(FieldName::as_str).join(", ")
}

/// A JSON pointer (RFC 6901) to a place below the body's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    text: String,
    tokens: Vec<String>,
}

impl Pointer {
    /// Parses `text`: `/` then reference tokens separated by `/`, with `~1` for `/` and `~0` for
    /// `~` inside a token. The root itself (`""`) is refused: a body is an object, not a number.
    pub fn parse(text: &str) -> Result<Self, BadPointer> {
        let Some(rest) = text.strip_prefix('/') else {
            return Err(BadPointer::NoSlash(text.to_string()));
        };
        let tokens = rest.split('/').map(unescape).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { text: text.to_string(), tokens })
    }

    /// The pointer as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Writes `n` at this place in `body` by the module's rule, or says why the place cannot be
    /// reached.
    pub fn write(&self, body: &mut Value, n: i64) -> Result<(), Unreachable> {
        let (last, parents) = self.tokens.split_last().ok_or(Unreachable::NoPlace)?;
        let mut here = body;
        let mut walked = String::new();
        let mut parents = parents.iter();
        if let Value::Array(elements) = here {
            // A body that is an array (a batch of events): its first token indexes an element.
            let Some(token) = parents.next() else {
                return Err(Unreachable::Array("the body's root".to_string()));
            };
            let len = elements.len();
            let bad = || Unreachable::RootIndex { token: token.clone(), len };
            let index: usize = if token == "0" || !token.starts_with('0') {
                token.parse().map_err(|_| bad())?
            } else {
                return Err(bad());
            };
            walked.push('/');
            walked.push_str(token);
            here = elements.get_mut(index).ok_or_else(bad)?;
        }
        for token in parents {
            let map = as_object(here, &walked)?;
            walked.push('/');
            walked.push_str(token);
            here = map.get_mut(token.as_str()).ok_or_else(|| Unreachable::Missing(walked.clone()))?;
        }
        let map = as_object(here, &walked)?;
        let value = match map.get(last.as_str()) {
            Some(Value::String(held)) => Value::String(format!("{}{n}", id_prefix(held))),
            _ => Value::from(n),
        };
        map.insert(last.clone(), value);
        Ok(())
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The provider's prefix of an id held as a string: up to and including its last `_`.
fn id_prefix(held: &str) -> &str {
    held.rfind('_').map_or("", |i| &held[..=i])
}

fn as_object<'a>(v: &'a mut Value, walked: &str) -> Result<&'a mut Map<String, Value>, Unreachable> {
    let at = || if walked.is_empty() { "the body's root".to_string() } else { walked.to_string() };
    match v {
        Value::Object(map) => Ok(map),
        Value::Array(_) => Err(Unreachable::Array(at())),
        other => Err(Unreachable::NotAnObject { at: at(), kind: kind_of(other) }),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn unescape(token: &str) -> Result<String, BadPointer> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            _ => return Err(BadPointer::BadEscape(token.to_string())),
        }
    }
    Ok(out)
}

/// One `--field NAME=POINTER`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMapping {
    /// What is placed.
    pub name: FieldName,
    /// Where.
    pub pointer: Pointer,
}

impl fmt::Display for FieldMapping {
    /// As `--field` takes it: `amount=/data/object/amount_received`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name.as_str(), self.pointer)
    }
}

impl FromStr for FieldMapping {
    type Err = BadFieldMapping;

    /// `account=/data/object/customer`, `amount=/data/object/amount`, `version=/...`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, pointer) = s.split_once('=').ok_or_else(|| BadFieldMapping::NoEquals(s.to_string()))?;
        let name = FieldName::ALL
            .into_iter()
            .find(|n| n.as_str() == name)
            .ok_or_else(|| BadFieldMapping::UnknownField(name.to_string()))?;
        Ok(Self { name, pointer: Pointer::parse(pointer)? })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn written(body: Value, pointer: &str, n: i64) -> Result<Value, Unreachable> {
        let mut body = body;
        Pointer::parse(pointer).expect("a pointer").write(&mut body, n)?;
        Ok(body)
    }

    #[test]
    fn a_string_keeps_its_id_prefix_and_anything_else_becomes_a_number() {
        let body =
            json!({"data": {"object": {"customer": "cus_7", "name": "seven", "amount": 1, "x": null}}});
        let b = written(body.clone(), "/data/object/customer", 42).expect("written");
        assert_eq!(b["data"]["object"]["customer"], "cus_42");
        let b = written(body.clone(), "/data/object/name", 42).expect("written");
        assert_eq!(b["data"]["object"]["name"], "42", "no `_`: the bare number as text");
        let b = written(body.clone(), "/data/object/amount", 1500).expect("written");
        assert_eq!(b["data"]["object"]["amount"], 1500);
        let b = written(body.clone(), "/data/object/x", 3).expect("written");
        assert_eq!(b["data"]["object"]["x"], 3, "null becomes the number");
        let b = written(body, "/data/object/metadata_account", 9).expect("a new key of an object");
        assert_eq!(b["data"]["object"]["metadata_account"], 9);
    }

    #[test]
    fn a_pointer_through_an_array_or_a_non_object_or_a_missing_key_is_refused() {
        let body = json!({"items": [{"a": 1}], "s": "str", "n": null, "o": {}});
        let err = written(body.clone(), "/items/0/a", 1).expect_err("array").to_string();
        assert!(err.contains("/items is an array"), "{err}");
        let err = written(body.clone(), "/s/x", 1).expect_err("string").to_string();
        assert!(err.contains("/s is a string"), "{err}");
        let err = written(body.clone(), "/n/x", 1).expect_err("null").to_string();
        assert!(err.contains("/n is null"), "{err}");
        let err = written(body.clone(), "/o/missing/x", 1).expect_err("missing").to_string();
        assert!(err.contains("nothing at /o/missing"), "{err}");
        let err = written(json!([1]), "/x", 1).expect_err("root array").to_string();
        assert!(err.contains("root is an array"), "{err}");
        let err = written(json!([{"a": 1}]), "/x/a", 1).expect_err("not an index").to_string();
        assert!(err.contains("root is an array of 1") && err.contains("/0/"), "{err}");
        let err = written(json!([{"a": 1}]), "/1/a", 1).expect_err("no such element").to_string();
        assert!(err.contains("root is an array of 1"), "{err}");
        assert!(written(json!([{"a": 1}]), "/01/a", 1).is_err(), "no leading zero (RFC 6901)");
        let err = written(json!([{"a": [1]}]), "/0/a/0", 1).expect_err("an inner array").to_string();
        assert!(err.contains("/0/a is an array"), "{err}");
        assert!(written(body, "/o/new", 1).is_ok(), "a new key in an object that exists");
    }

    #[test]
    fn a_body_that_is_an_array_is_entered_by_an_elements_index() {
        let b = written(json!([{"sg_event_id": "e1", "account": "7"}]), "/0/account", 42).expect("written");
        assert_eq!(b[0]["account"], "42");
        let b = written(json!([{"e": 1}, {"e": 2}]), "/1/amount", 1500).expect("a new key");
        assert_eq!((b[0].get("amount"), &b[1]["amount"]), (None, &json!(1500)));
    }

    #[test]
    fn pointers_unescape_as_rfc_6901_says_and_refuse_what_it_does_not_allow() {
        let b = written(json!({"a/b": {"m~n": 0}}), "/a~1b/m~0n", 5).expect("escaped");
        assert_eq!(b["a/b"]["m~n"], 5);
        assert!(Pointer::parse("data/object").expect_err("no slash").to_string().contains("starts with `/`"));
        assert!(Pointer::parse("").is_err(), "the root is no place for a number");
        assert!(Pointer::parse("/a~2").expect_err("bad escape").to_string().contains("neither 0 nor 1"));
    }

    #[test]
    fn a_mapping_names_a_known_field() {
        let m: FieldMapping = "account=/data/object/customer".parse().expect("a mapping");
        assert_eq!((m.name, m.pointer.as_str()), (FieldName::Account, "/data/object/customer"));
        let err = "acount=/x".parse::<FieldMapping>().expect_err("typo").to_string();
        assert!(err.contains("`acount`") && err.contains("account, amount, version"), "{err}");
        let err = "account".parse::<FieldMapping>().expect_err("no pointer").to_string();
        assert!(err.contains("NAME=POINTER"), "{err}");
    }
}
