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
}
