//! The text a report keeps for an error: the error and each of its causes, once.
//!
//! Errors here say what was being done and leave the cause to their source (or, for a foreign
//! error whose message already holds its cause, carry it in the message and not as a source), so
//! walking the chain reads each cause once, as `{:#}` does at the command line.

/// Why a cell or an experiment's part could not run, as the report records it: the error and each
/// of its causes, once, joined by ": " (what `{:#}` prints at the command line).
pub(crate) fn reason(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
