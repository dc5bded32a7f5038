//! Text from outside (a receiver's answer, a database's error, a history's ids, a shard's fields)
//! printed to a terminal with its control characters escaped: an ESC from a hostile receiver must
//! not recolour, move or retitle the user's terminal, and a CR must not overwrite the line it is
//! on. What is printable is kept as it is.

use std::borrow::Cow;

/// `text` with every control character (C0, DEL, C1) written as `\u{..}`; a newline too, so that
/// one line of output stays one line.
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// `text` with every control character but newline and tab escaped, for several lines of output.
pub fn lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// The most of a text from outside that hookbench quotes in a message, a report or a CI file: a
/// receiver's answer, a redirect's `Location`, a config file's unknown key.
pub const QUOTED_BYTES: usize = 200;

/// `text` cut to at most [`QUOTED_BYTES`] at a character boundary, with how much was left out, so
/// that whatever a receiver or a file holds, a message quoting it stays a line.
pub fn cut(text: &str) -> Cow<'_, str> {
    if text.len() <= QUOTED_BYTES {
        return Cow::Borrowed(text);
    }
    let end = text.floor_char_boundary(QUOTED_BYTES);
    Cow::Owned(format!("{}… ({} more bytes)", &text[..end], text.len() - end))
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() && !keep(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_carriage_returns_are_written_out_and_plain_text_is_kept() {
        assert_eq!(line("evt_1 \u{1b}]0;owned\u{7}\r"), "evt_1 \\u{1b}]0;owned\\u{7}\\u{d}");
        assert_eq!(line("a\nb"), "a\\u{a}b");
        assert_eq!(lines("a\nb\tc\u{9b}2J"), "a\nb\tc\\u{9b}2J");
        assert!(matches!(line("café ✓"), Cow::Borrowed("café ✓")));
    }

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary_saying_how_much_is_left_out() {
        assert!(matches!(cut("short"), Cow::Borrowed("short")));
        let exact = "x".repeat(QUOTED_BYTES);
        assert_eq!(cut(&exact), exact.as_str());
        let long = format!("{}é{}", "x".repeat(QUOTED_BYTES - 1), "y".repeat(60_000));
        let said = cut(&long);
        // The two-byte é would straddle the limit: it is left out with the rest.
        assert_eq!(said, format!("{}… (60002 more bytes)", "x".repeat(QUOTED_BYTES - 1)));
    }
}
