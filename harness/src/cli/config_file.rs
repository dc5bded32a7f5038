//! `--config FILE` for `audit` and `bench`: a TOML file whose keys are the command's long flags
//! without `--` (the positional URL is `url`), turned into arguments that clap parses exactly as
//! it parses the command line, so the file and the flags can never disagree on what a value means
//! or whether it is valid. The clap definitions are the only list of keys: the file's keys, their
//! types, `--print-config` and the JSON Schema ([`json_schema`]) are all read from the `Command`.
//!
//! Precedence: the command line, then the environment (`HOOKBENCH_AUDIT_SECRET`, `DATABASE_URL`,
//! ...), then the file, then the defaults. A repeatable flag given on the command line replaces
//! the file's list, never adds to it.

use std::any::TypeId;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command, CommandFactory, FromArgMatches};
use serde_json::json;
use toml::{Spanned, Value};

use super::Cli;

/// The commands that take `--config`.
pub const COMMANDS: [&str; 2] = ["audit", "bench"];

/// The largest config file read: a few kilobytes hold every flag.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// How alike an unknown key must be to a known one to be suggested (clap's own threshold).
const SUGGESTION_CONFIDENCE: f64 = 0.7;

/// `--config` and `--print-config`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArgs {
    /// Read this command's flags from a TOML file: each key a long flag without `--`
    /// (`applied-query = "SELECT ..."`; the URL is `url`), switches as booleans, repeatable flags
    /// as non-empty arrays, durations as strings ("30s"). Precedence: the command line, then
    /// environment variables (HOOKBENCH_AUDIT_SECRET, DATABASE_URL, ...; one set to nothing counts
    /// as unset), then the file, then the defaults; a repeatable flag on the command line replaces
    /// the file's list. Unknown keys are refused, and so is a second --config: one file per run.
    /// Paths in it are relative to where hookbench runs, as on the command line. Its JSON Schema:
    /// `hookbench report config-schema COMMAND` (committed in docs/schema/).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the effective configuration (command line, environment, --config file and defaults)
    /// as TOML and exit without running; given back as --config it makes the same run. A secret
    /// taken from the environment is named in a comment, never printed.
    #[arg(long)]
    pub print_config: bool,
}

/// The ids of the arguments that are not keys: the config's own flags, help and version.
const NOT_KEYS: [&str; 4] = ["config", "print_config", "help", "version"];

/// What the process's arguments ask for.
#[derive(Debug)]
pub enum Invocation {
    /// Run this command.
    Run(Box<Cli>),
    /// Print this (the effective configuration) and exit 0.
    Print(String),
}

/// Arguments that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// clap refused the arguments, or was asked for `--help` or `--version`: printed and ended as
    /// clap does (`clap::Error::exit`).
    #[error(transparent)]
    Args(#[from] clap::Error),
    /// clap refused the arguments with words that would have quoted a hidden value (a secret):
    /// these words instead, which name the flag or the variable and not the value.
    #[error(transparent)]
    Hidden(super::hidden_values::Reworded),
    /// The config file: unreadable, not TOML, an unknown key, or a value of the wrong type or
    /// refused by the flag's parser.
    #[error("{place}: {message}")]
    File {
        /// `FILE:LINE`, or `--config` when the file could not be read (the message names it).
        place: String,
        /// What is wrong and, for an unknown key, what was perhaps meant.
        message: String,
    },
}

/// Why a key's value is not one its flag takes (said after `key "NAME": `).
#[derive(Debug, thiserror::Error)]
enum BadValue {
    /// A scalar of another TOML type than the flag's values (`expected an integer, found a
    /// string`).
    #[error("expected {expected}, found {found}")]
    WrongType { expected: &'static str, found: String },
    /// A switch given anything but a boolean.
    #[error("expected a boolean (true or false), found {0}")]
    NotABoolean(String),
    /// A repeatable flag given an empty array: read as no flag at all, `checks = []` would have
    /// meant every check without a word.
    #[error("an empty array gives the flag no value: leave the key out for its default")]
    EmptyArray,
    /// A repeatable flag given anything but an array (the items' JSON type, what was found).
    #[error("expected an array of {0}s, found {1}")]
    NotAnArray(&'static str, String),
    /// The flag's own parser refused the value: clap's words (for a hidden argument, why without
    /// the value).
    #[error("{0}")]
    Refused(String),
}

/// The type a key's value has in the file, read from its argument's action and value parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A switch: a boolean.
    Switch,
    /// A flag given once: one value.
    One(Scalar),
    /// A repeatable flag: an array.
    List(Scalar),
}

/// One value's TOML type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Integer,
    Float,
    String,
}

impl Scalar {
    /// The scalar an argument's value parser produces: integers and floats as TOML's numbers,
    /// everything else (durations, paths, URLs, enums) as a string.
    fn of(arg: &Arg) -> Self {
        let produced = arg.get_value_parser().type_id();
        let integers = [
            TypeId::of::<u8>(),
            TypeId::of::<u16>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<usize>(),
            TypeId::of::<i8>(),
            TypeId::of::<i16>(),
            TypeId::of::<i32>(),
            TypeId::of::<i64>(),
            TypeId::of::<isize>(),
        ];
        if integers.iter().any(|t| produced == *t) {
            Self::Integer
        } else if produced == TypeId::of::<f64>() || produced == TypeId::of::<f32>() {
            Self::Float
        } else {
            Self::String
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Self::Integer => "an integer",
            Self::Float => "a number",
            Self::String => "a string",
        }
    }

    /// The file's `value` as the text the command line would carry, or why it is the wrong type.
    fn text(self, value: &Value) -> Result<String, BadValue> {
        match (self, value) {
            (Self::Integer, Value::Integer(i)) | (Self::Float, Value::Integer(i)) => Ok(i.to_string()),
            // Rust prints an f64 as the shortest text that reads back as the same number.
            (Self::Float, Value::Float(f)) => Ok(f.to_string()),
            (Self::String, Value::String(s)) => Ok(s.clone()),
            // `start-at = 2026-12-01T10:00:00Z` is a TOML datetime; the flag takes its RFC 3339 text.
            (Self::String, Value::Datetime(d)) => Ok(d.to_string()),
            (want, got) => Err(BadValue::WrongType { expected: want.noun(), found: noun(got) }),
        }
    }

    /// The command line's `raw` text as a TOML value of this type (kept a string if it is not
    /// one, which no value clap accepted is).
    fn typed(self, raw: &str) -> Value {
        match self {
            Self::Integer => raw.parse().map_or_else(|_| Value::String(raw.into()), Value::Integer),
            Self::Float => raw.parse().map_or_else(|_| Value::String(raw.into()), Value::Float),
            Self::String => Value::String(raw.into()),
        }
    }

    fn json_type(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Float => "number",
            Self::String => "string",
        }
    }
}

/// A TOML value's type, with its article.
fn noun(value: &Value) -> String {
    let t = value.type_str();
    let article = if t.starts_with(['a', 'i']) { "an" } else { "a" };
    format!("{article} {t}")
}

impl Kind {
    /// The kind of a key's value, or `None` for an argument that is no key.
    fn of(arg: &Arg) -> Option<Self> {
        if NOT_KEYS.contains(&arg.get_id().as_str()) {
            return None;
        }
        match arg.get_action() {
            ArgAction::SetTrue => Some(Self::Switch),
            ArgAction::Set => Some(Self::One(Scalar::of(arg))),
            ArgAction::Append => Some(Self::List(Scalar::of(arg))),
            _ => None,
        }
    }
}

/// An argument's key: its long flag, or a positional's id (`url`).
fn key_of(arg: &Arg) -> String {
    arg.get_long().map_or_else(|| arg.get_id().to_string(), str::to_string)
}

/// Every key of `command`, with its argument and kind, in the command's order.
fn keys(command: &Command) -> impl Iterator<Item = (String, &Arg, Kind)> {
    command.get_arguments().filter_map(|arg| Kind::of(arg).map(|kind| (key_of(arg), arg, kind)))
}

/// The full command line, built as clap builds it before parsing (defaults of switches included),
/// with the environment variables set to nothing left unread.
fn built_command() -> Command {
    let mut root = without_empty_env(Cli::command());
    root.build();
    root
}

/// `command` with every argument whose environment variable is set but empty reading it no more:
/// an empty variable is as unset (a GitLab job whose variable is undefined sets it to nothing,
/// and `HOOKBENCH_AUDIT_SECRET=` must not replace the file's secrets with an empty one).
fn without_empty_env(command: Command) -> Command {
    let empty = |arg: &Arg| arg.get_env().and_then(std::env::var_os).is_some_and(|v| v.is_empty());
    command.mut_args(|arg| if empty(&arg) { arg.env(None) } else { arg }).mut_subcommands(without_empty_env)
}

/// `command` reading no environment variable: the copy that checks a file's values, so that a bad
/// value in the environment is not blamed on the file's key (the whole command line, read after,
/// names it).
fn without_env(command: &Command) -> Command {
    command.clone().mut_args(|arg| arg.env(None))
}

/// clap's error from parsing `argv` with `command`, without any hidden value in its words.
fn guarded(e: clap::Error, command: &Command, argv: &[OsString]) -> ConfigError {
    match super::hidden_values::guard(e, command, argv) {
        Ok(e) => ConfigError::Args(e),
        Err(words) => ConfigError::Hidden(words),
    }
}

/// Parses the process's arguments, reading `--config` when `audit` or `bench` is given one.
pub fn parse_from<I, T>(argv: I) -> Result<Invocation, ConfigError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    let mut root = built_command();
    // A first look, forgiving (the URL may be in the file): which command, which `--config`, and
    // which keys the command line and the environment already give.
    let probe = root.clone().ignore_errors(true).try_get_matches_from(&argv).ok();
    let looked = probe.as_ref().and_then(ArgMatches::subcommand).filter(|(name, _)| COMMANDS.contains(name));
    let Some((name, given)) = looked else {
        let cli = parse_matches(&mut root, &argv).map_err(|e| guarded(e, &root, &argv))?;
        return Ok(Invocation::Run(Box::new(cli)));
    };
    let name = name.to_string();
    refuse_a_second_config(&argv)?;
    let from_file = match given.get_one::<PathBuf>("config") {
        Some(path) => file_arguments(subcommand(&root, &name), given, path)?,
        None => Vec::new(),
    };
    let argv = splice(argv, &name, from_file);
    let matches = root.try_get_matches_from_mut(&argv).map_err(|e| guarded(e, &root, &argv))?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| guarded(e.format(&mut root), &root, &argv))?;
    match matches.subcommand_matches(&name) {
        Some(m) if m.get_flag("print_config") => {
            Ok(Invocation::Print(effective_config(subcommand(&root, &name), m, &name)))
        }
        _ => Ok(Invocation::Run(Box::new(cli))),
    }
}

fn parse_matches(root: &mut Command, argv: &[OsString]) -> Result<Cli, clap::Error> {
    let matches = root.try_get_matches_from_mut(argv)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(root))
}

/// Refuses `--config` given twice: clap keeps the last of a flag given twice, so `--config A
/// --config B` read only B without a word. One file; the command line overrides its keys.
fn refuse_a_second_config(argv: &[OsString]) -> Result<(), ConfigError> {
    let before_values = argv.iter().take_while(|a| *a != "--");
    let mut files = Vec::new();
    let mut next_is_file = false;
    for token in before_values.map(|a| a.to_string_lossy()) {
        if next_is_file {
            files.push(token.into_owned());
            next_is_file = false;
        } else if token == "--config" {
            next_is_file = true;
        } else if let Some(file) = token.strip_prefix("--config=") {
            files.push(file.to_string());
        }
    }
    if files.len() < 2 {
        return Ok(());
    }
    Err(ConfigError::File {
        place: "--config".into(),
        message: format!(
            "given {} times ({}): give one file (flags on the command line override its keys)",
            files.len(),
            files.iter().map(|f| crate::printable::cut(f).into_owned()).collect::<Vec<_>>().join(", ")
        ),
    })
}

/// One of [`COMMANDS`]; each is a subcommand of [`Cli`] (a unit test holds it).
fn subcommand<'a>(root: &'a Command, name: &str) -> &'a Command {
    root.find_subcommand(name).unwrap_or(root)
}

/// `argv` with the file's arguments right after the command's name, before the command line's
/// own (which the file's never repeat).
fn splice(mut argv: Vec<OsString>, name: &str, from_file: Vec<OsString>) -> Vec<OsString> {
    let at = argv.iter().skip(1).position(|a| a == name).map_or(argv.len(), |i| i + 2);
    argv.splice(at..at, from_file);
    argv
}

/// The arguments the file at `path` gives `command`, each value checked by its flag's own parser,
/// leaving out the keys the command line or the environment (`given`) already set.
fn file_arguments(
    command: &Command,
    given: &ArgMatches,
    path: &std::path::Path,
) -> Result<Vec<OsString>, ConfigError> {
    let shown = path.display().to_string();
    let text = crate::files::read_text_capped(path, MAX_FILE_BYTES, "a config file")
        .map_err(|e| ConfigError::File { place: "--config".into(), message: e.to_string() })?;
    let mut entries = parse_table(&text, &shown)?;
    entries.sort_by_key(|(key, _)| key.span().start);
    // One copy of the command checks every value (a copy per value made a 60,000-secret file
    // take 52 s).
    let mut checker = without_env(command);
    let mut arguments = Vec::new();
    for (key, value) in entries {
        let at = |message: String| ConfigError::File {
            place: format!("{shown}:{}", line_of(&text, key.span().start)),
            message,
        };
        let name = key.get_ref();
        let (arg, kind) = find(command, name).ok_or_else(|| at(unknown_key(command, name)))?;
        let tokens = tokens(&mut checker, arg, kind, value.get_ref())
            .map_err(|why| at(format!("key \"{name}\": {why}")))?;
        if !set_elsewhere(given, arg) {
            arguments.extend(tokens);
        }
    }
    Ok(arguments)
}

/// A key of the file and its value, each with its place in the text.
type Entry = (Spanned<String>, Spanned<Value>);

/// The file's top-level keys and values, with their places; a syntax error names its line.
fn parse_table(text: &str, shown: &str) -> Result<Vec<Entry>, ConfigError> {
    let table: std::collections::BTreeMap<Spanned<String>, Spanned<Value>> =
        toml::from_str(text).map_err(|e| ConfigError::File {
            place: format!("{shown}:{}", e.span().map_or(1, |s| line_of(text, s.start))),
            message: format!("not valid TOML: {}", e.message().trim_end()),
        })?;
    Ok(table.into_iter().collect())
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes().iter().take(offset).filter(|&&b| b == b'\n').count() + 1
}

fn find<'a>(command: &'a Command, key: &str) -> Option<(&'a Arg, Kind)> {
    keys(command).find(|(k, _, _)| k == key).map(|(_, arg, kind)| (arg, kind))
}

/// `unknown key "KEY"`, with the likeliest key meant when one is close; a key past
/// [`crate::printable::QUOTED_BYTES`] is quoted cut.
fn unknown_key(command: &Command, key: &str) -> String {
    let key = &crate::printable::cut(key);
    let best = keys(command)
        .map(|(k, _, _)| (strsim::jaro_winkler(key, &k), k))
        .filter(|(confidence, _)| *confidence > SUGGESTION_CONFIDENCE)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, meant)) => format!("unknown key \"{key}\" (did you mean \"{meant}\"?)"),
        None => format!("unknown key \"{key}\" (`hookbench {} --help` lists the flags)", command.get_name()),
    }
}

/// Whether the command line or the environment set `arg`: those win over the file.
fn set_elsewhere(given: &ArgMatches, arg: &Arg) -> bool {
    matches!(
        given.value_source(arg.get_id().as_str()),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    )
}

/// The command-line arguments a key's `value` stands for, checked by the flag's own parser.
fn tokens(checker: &mut Command, arg: &Arg, kind: Kind, value: &Value) -> Result<Vec<OsString>, BadValue> {
    let tokens: Vec<OsString> = match (kind, value) {
        (Kind::Switch, Value::Boolean(on)) => {
            return Ok(on.then(|| format!("--{}", key_of(arg)).into()).into_iter().collect());
        }
        (Kind::Switch, other) => return Err(BadValue::NotABoolean(noun(other))),
        (Kind::One(scalar), value) => vec![token(arg, &scalar.text(value)?)],
        (Kind::List(_), Value::Array(items)) if items.is_empty() => return Err(BadValue::EmptyArray),
        (Kind::List(scalar), Value::Array(items)) => {
            items.iter().map(|item| Ok(token(arg, &scalar.text(item)?))).collect::<Result<_, BadValue>>()?
        }
        (Kind::List(scalar), other) => return Err(BadValue::NotAnArray(scalar.json_type(), noun(other))),
    };
    check_values(checker, arg, &tokens)?;
    Ok(tokens)
}

/// `--key=text`, or a positional's text.
fn token(arg: &Arg, text: &str) -> OsString {
    match arg.get_long() {
        Some(long) => format!("--{long}={text}").into(),
        None => text.into(),
    }
}

/// Whether the command (`checker`) takes one key's (`arg`'s) `tokens` alone, in one parse (a value at a
/// time made a 60,000-secret file take 22 s): clap parses them with the flag's own value parser
/// (its possible values, its range). Only a refused value counts here; what the tokens lack (the
/// flags they require, the URL) is the whole command line's to judge, once the file is read in.
fn check_values(checker: &mut Command, arg: &Arg, tokens: &[OsString]) -> Result<(), BadValue> {
    let name = OsString::from(checker.get_name());
    // A positional's value after `--`, so that the parser judges `url = "--strict"` as a value
    // (and refuses it) instead of reading it as the flag.
    let positional = arg.get_long().is_none().then(|| OsString::from("--"));
    match checker.try_get_matches_from_mut(std::iter::once(&name).chain(&positional).chain(tokens)) {
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::InvalidUtf8
            ) =>
        {
            // A secret's value is never quoted: only why it was refused.
            Err(BadValue::Refused(if super::hidden_values::is_hidden(arg) {
                super::hidden_values::reason(&e)
            } else {
                clap_reason(&e)
            }))
        }
        _ => Ok(()),
    }
}

/// The first line of clap's message, without its `error: `.
fn clap_reason(e: &clap::Error) -> String {
    let rendered = e.to_string();
    let first = rendered.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// The effective configuration of a parsed `name` command as TOML: every key that has a value
/// (given or by default), in `--help`'s order; a value from an environment variable clap hides
/// (a secret, a database URL) named in a comment instead.
fn effective_config(command: &Command, matches: &ArgMatches, name: &str) -> String {
    let mut out = format!(
        "# The effective configuration of `hookbench {name}`: command line, environment, --config\n\
         # file and defaults. `hookbench {name} --config FILE` makes the same run.\n"
    );
    for (key, arg, kind) in keys(command) {
        let id = arg.get_id().as_str();
        match matches.value_source(id) {
            None => {
                if let Some(value) = resolved(name, id, matches) {
                    let _ = writeln!(out, "{key} = {}", Value::String(value));
                }
                continue;
            }
            Some(ValueSource::EnvVariable) if arg.is_hide_env_values_set() => {
                let var = arg.get_env().map_or_else(String::new, |v| v.to_string_lossy().into_owned());
                let _ = writeln!(out, "# {key}: from {var}, not printed (read from there again)");
                continue;
            }
            Some(_) => {}
        }
        let raw: Vec<String> = matches
            .get_raw(id)
            .map(|values| values.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let value = match kind {
            Kind::Switch => Value::Boolean(matches.get_flag(id)),
            Kind::One(scalar) => match raw.first() {
                Some(raw) => scalar.typed(raw),
                None => continue,
            },
            Kind::List(scalar) => Value::Array(raw.iter().map(|r| scalar.typed(r)).collect()),
        };
        let _ = writeln!(out, "{key} = {value}");
    }
    out
}

/// The value an audit uses for `id` when none was given, where it has no single default: the
/// signing scheme's and the payload, which `--signing` implies (the provider's own bodies).
fn resolved(name: &str, id: &str, matches: &ArgMatches) -> Option<String> {
    if name != "audit" {
        return None;
    }
    let signing = matches.get_one::<crate::wire::Scheme>("signing").copied();
    match id {
        "signing" => Some(signing.unwrap_or_default().as_str().to_string()),
        "payload" => Some(crate::wire::Payload::implied(None, signing)),
        _ => None,
    }
}

/// The JSON Schema of `name`'s config file, from its clap arguments: each key's type from its
/// action and value parser, its possible values as an enum, its help as the description, its
/// default; no other key allowed. `None` for a command that takes no `--config`.
pub fn json_schema(name: &str) -> Option<serde_json::Value> {
    let root = built_command();
    let command = root.find_subcommand(name).filter(|_| COMMANDS.contains(&name))?;
    let properties: serde_json::Map<String, serde_json::Value> =
        keys(command).map(|(key, arg, kind)| (key, property(arg, kind))).collect();
    Some(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": format!("hookbench {name} --config"),
        "description": format!(
            "A TOML file of `hookbench {name}`'s flags: each key a long flag without `--`. \
             Generated by `hookbench report config-schema {name}`."
        ),
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    }))
}

/// One key's schema.
fn property(arg: &Arg, kind: Kind) -> serde_json::Value {
    let mut p = match kind {
        Kind::Switch => json!({ "type": "boolean" }),
        Kind::One(scalar) => scalar_schema(arg, scalar),
        Kind::List(scalar) => json!({ "type": "array", "items": scalar_schema(arg, scalar) }),
    };
    let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
    let env = arg.get_env().map(|v| format!(" [env: {}]", v.to_string_lossy())).unwrap_or_default();
    p["description"] = json!(format!("{help}{env}"));
    let defaults: Vec<String> =
        arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
    let default = match kind {
        Kind::Switch => Some(Value::Boolean(defaults.first().is_some_and(|d| d == "true"))),
        Kind::One(scalar) => defaults.first().map(|d| scalar.typed(d)),
        Kind::List(scalar) if !defaults.is_empty() => Some(Value::Array(
            defaults.iter().flat_map(|d| split_default(arg, d)).map(|d| scalar.typed(&d)).collect(),
        )),
        Kind::List(_) => None,
    };
    if let Some(default) = default {
        p["default"] = serde_json::to_value(default).unwrap_or_default();
    }
    p
}

/// A repeatable flag's default, split at its delimiter as clap splits it (`postgres,sqlite`).
fn split_default(arg: &Arg, default: &str) -> Vec<String> {
    match arg.get_value_delimiter() {
        Some(d) => default.split(d).map(str::to_string).collect(),
        None => vec![default.to_string()],
    }
}

/// A value's schema: its type, and its possible values when the parser has a fixed set.
fn scalar_schema(arg: &Arg, scalar: Scalar) -> serde_json::Value {
    let mut s = json!({ "type": scalar.json_type() });
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if !values.is_empty() {
        s["enum"] = json!(values);
    }
    s
}

#[cfg(test)]
mod tests;
