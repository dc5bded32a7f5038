//! The values hookbench never prints: those of the arguments whose environment values clap hides
//! (`hide_env_values`: the signing secrets, the shard key, the database URLs, which may hold a
//! password). The clap definitions are the only list of them. clap's own error for a refused value
//! quotes it (`invalid value 'my-github-webhook-secret' for '--secret <SECRET>'`); for these
//! arguments the error is reworded to name the flag or the variable and what is wrong, and any
//! other error of clap's that would carry one of these values is said without it.

use std::error::Error as _;
use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, Command};

/// What is printed in place of a hidden value, where an error would have quoted it.
const HIDDEN: &str = "(a hidden value)";

/// Whether `arg`'s values are never printed.
pub(super) fn is_hidden(arg: &Arg) -> bool {
    arg.is_hide_env_values_set()
}

/// Why clap refused a value, without the value: the value parser's own words (`a signing secret
/// starts with whsec_`), else the kind of refusal.
pub(super) fn reason(e: &clap::Error) -> String {
    match (e.source(), e.kind()) {
        (Some(source), _) => source.to_string(),
        (None, ErrorKind::InvalidUtf8) => "not UTF-8".to_string(),
        (None, ErrorKind::InvalidValue) => "not a value it takes".to_string(),
        (None, kind) => kind.to_string(),
    }
}

/// clap's refusal reworded so that it holds no hidden value.
#[derive(Debug, thiserror::Error)]
pub enum Reworded {
    /// A hidden argument refused its value: where the value came from and why, never the value.
    #[error("{from}: {reason}")]
    Refused {
        /// The environment variable that held the value, else the flag (`--secret`).
        from: String,
        /// The value parser's words, or the kind of refusal ([`reason`]).
        reason: String,
    },
    /// Any other error of clap's whose words quoted a hidden value: those words, without
    /// `error: `, each hidden value replaced by `(a hidden value)`.
    #[error("{0}")]
    Redacted(String),
}

/// clap's error `e` from parsing `argv` with `command`, said without any hidden value: `Ok(e)`
/// when it holds none (clap prints it as it does), else the words to print instead: for a value a
/// hidden argument refused, `HOOKBENCH_SECRET: a signing secret starts with whsec_` (or
/// `--secret: ...` when it came from the command line).
pub(super) fn guard(e: clap::Error, command: &Command, argv: &[OsString]) -> Result<clap::Error, Reworded> {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return Ok(e);
    }
    if let Some(arg) = refused_arg(&e, command) {
        return Err(Reworded::Refused { from: source_of(&e, arg), reason: reason(&e) });
    }
    let rendered = e.to_string();
    let values = given(command, argv);
    let found: Vec<&String> = values.iter().filter(|v| rendered.contains(v.as_str())).collect();
    if found.is_empty() {
        return Ok(e);
    }
    let mut said = rendered.trim_end().strip_prefix("error: ").unwrap_or(rendered.trim_end()).to_string();
    for value in found {
        said = said.replace(value.as_str(), HIDDEN);
    }
    Err(Reworded::Redacted(said))
}

/// The hidden argument whose value `e` refused, if it is about one.
fn refused_arg<'a>(e: &clap::Error, command: &'a Command) -> Option<&'a Arg> {
    if !matches!(e.kind(), ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::InvalidUtf8) {
        return None;
    }
    let Some(ContextValue::String(shown)) = e.get(ContextKind::InvalidArg) else { return None };
    // `--secret <SECRET>` or `--secret=<SECRET>`: the long flag's name.
    let long = shown.strip_prefix("--")?.split([' ', '=']).next()?;
    all_args(command).find(|arg| arg.get_long() == Some(long) && is_hidden(arg))
}

/// Where a refused value came from: the environment variable when it holds that value, else the
/// flag.
fn source_of(e: &clap::Error, arg: &Arg) -> String {
    let value = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(v)) => Some(v.as_str()),
        _ => None,
    };
    let from_env = arg.get_env().filter(|name| {
        std::env::var_os(name).is_some_and(|set| value.is_some_and(|v| set.to_string_lossy().contains(v)))
    });
    match from_env {
        Some(name) => name.to_string_lossy().into_owned(),
        None => format!("--{}", arg.get_long().unwrap_or_default()),
    }
}

/// Every argument of `command` and of its subcommands.
fn all_args(command: &Command) -> Box<dyn Iterator<Item = &Arg> + '_> {
    Box::new(command.get_arguments().chain(command.get_subcommands().flat_map(all_args)))
}

/// The hidden values the process was given, in its environment and on its command line (a flag's
/// next argument, or what follows its `=`), each whole and split at whitespace (a list of
/// secrets in one variable); none shorter than 4 bytes, which would match words of the message.
fn given(command: &Command, argv: &[OsString]) -> Vec<String> {
    let mut values = Vec::new();
    for arg in all_args(command).filter(|a| is_hidden(a)) {
        if let Some(set) = arg.get_env().and_then(std::env::var_os) {
            values.push(set.to_string_lossy().into_owned());
        }
        let Some(long) = arg.get_long() else { continue };
        let flag = format!("--{long}");
        for (i, token) in argv.iter().enumerate() {
            let token = token.to_string_lossy();
            if let Some(value) = token.strip_prefix(&format!("{flag}=")) {
                values.push(value.to_string());
            } else if token == flag
                && let Some(next) = argv.get(i + 1)
            {
                values.push(next.to_string_lossy().into_owned());
            }
        }
    }
    let split: Vec<String> = values.iter().flat_map(|v| v.split_whitespace().map(str::to_string)).collect();
    values.extend(split);
    values.retain(|v| v.len() >= 4);
    // The longest first, so that a whole value is hidden before a piece of it.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn command() -> Command {
        let mut c = super::super::Cli::command();
        c.build();
        c
    }

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_refused_secret_on_the_command_line_is_named_by_its_flag_and_not_quoted() {
        let argv = args(&["hookbench", "sign", "--id", "x", "--secret", "SENTINEL-value"]);
        let mut c = command();
        // `sign` takes any text; `serve` parses a whsec_ secret.
        let argv_serve =
            args(&["hookbench", "serve", "--database-url", "sqlite:///x.db", "--secret", "SENTINEL-value"]);
        let e = c.try_get_matches_from_mut(&argv_serve).expect_err("not whsec_");
        let said = guard(e, &c, &argv_serve).expect_err("reworded");
        assert_eq!(said.to_string(), "--secret: a signing secret starts with `whsec_`");
        assert!(c.try_get_matches_from_mut(&argv).is_ok());
    }

    #[test]
    fn an_error_that_quotes_no_hidden_value_is_clap_s_own() {
        let argv = args(&["hookbench", "serve", "--database-url", "sqlite:///x.db", "--listen", "nowhere"]);
        let mut c = command();
        let e = c.try_get_matches_from_mut(&argv).expect_err("not an address");
        let kept = guard(e, &c, &argv).expect("no hidden value in it");
        assert!(kept.to_string().contains("'nowhere'"), "{kept}");
    }

    #[test]
    fn any_other_error_holding_a_hidden_value_is_said_without_it() {
        // The secret given where the flag takes no value: clap would quote it as unexpected.
        let argv =
            args(&["hookbench", "sign", "--id", "x", "--secret=SENTINEL-one", "--", "a", "SENTINEL-one"]);
        let mut c = command();
        let e = c.try_get_matches_from_mut(&argv).expect_err("two bodies");
        let said = guard(e, &c, &argv).expect_err("reworded").to_string();
        assert!(!said.contains("SENTINEL-one") && said.contains(HIDDEN), "{said}");
    }

    #[test]
    fn the_values_given_are_found_whole_split_and_not_when_tiny() {
        let c = command();
        let argv = args(&["hookbench", "serve", "--secret", "whsec_aaaa whsec_bbbb", "--database-url=abc"]);
        let values = given(&c, &argv);
        assert!(values.contains(&"whsec_aaaa whsec_bbbb".to_string()), "{values:?}");
        assert!(values.contains(&"whsec_bbbb".to_string()), "{values:?}");
        assert!(!values.contains(&"abc".to_string()), "{values:?}");
    }
}
