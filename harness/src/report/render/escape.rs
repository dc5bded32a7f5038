//! Values from a run, a shard or a receiver as they enter report.md and the GitHub step summary:
//! as text, never as markup. Markdown comes only from hookbench's templates; a value is escaped
//! where it is put into them, so that report.md shows it as it is (on GitHub too) and report.html
//! renders it as text. [`super::page::markdown`] then refuses raw HTML, images and foreign links in
//! what reaches it, in case a value was put in unescaped.
//!
//! GitHub renders with cmark-gfm, whose autolink extension makes links of bare text no markup
//! marks: `http://`, `https://` and `ftp://` URLs, `www.` names, e-mail addresses and `mailto:` or
//! `xmpp:` ones. A receiver's answer quoted in a verdict must not become a link in a job's summary,
//! so [`text`] breaks each trigger: every `:` is backslash-escaped (no scheme is recognised), the
//! `.` after `www` too, and every `@` is written as a code span of its own (cmark-gfm finds e-mail
//! addresses in the text once escapes are resolved, so only a node of another kind between the two
//! halves stops it; it also stops an @mention). harness/tests/it/ci_outputs.rs renders the result
//! with cmark-gfm itself.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// The ASCII punctuation that can start Markdown inline markup (emphasis, code, links, images,
/// raw HTML, entities, autolinks, strikethrough, table cells) or a heading; every ASCII
/// punctuation character may be backslash-escaped in CommonMark, these are the ones that must.
const INLINE: &[char] = &['\\', '`', '*', '_', '[', ']', '<', '>', '!', '&', '|', '~', '#'];

/// A line ending (or any control character) in a value would end the line it is on: a table row,
/// a list item, a paragraph, and a blank line would start a block of the value's own.
fn one_line(c: char) -> char {
    if c.is_control() { ' ' } else { c }
}

/// `value` as Markdown text: shown as it is, on one line, never markup, and never a link
/// (module docs): an `@` shows in a code span of its own.
pub(super) fn text(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars().map(one_line) {
        match c {
            '@' => out.push_str("`@`"),
            ':' => out.push_str("\\:"),
            '.' if ends_with_www(&out) => out.push_str("\\."),
            c if INLINE.contains(&c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether `out` ends with `www` in any case: a `.` next would start a `www.` autolink.
fn ends_with_www(out: &str) -> bool {
    let bytes = out.as_bytes();
    bytes.len() >= 3 && bytes[bytes.len() - 3..].eq_ignore_ascii_case(b"www")
}

/// `value` as a Markdown code span outside a table: fenced by one backtick more than the longest
/// run of them in it (nothing ends the span early), padded with a space when it starts or ends
/// with a backtick or a space (CommonMark strips one from each side), on one line. An empty value
/// is a span of one space: two backticks with nothing between are no span but an opening fence
/// of two, which the next value's fence would close, leaving what lies between as markup.
pub(super) fn code(value: &str) -> String {
    if value.is_empty() {
        return "` `".to_string();
    }
    let value: String = value.chars().map(one_line).collect();
    let longest = value.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if value.starts_with(['`', ' ']) || value.ends_with(['`', ' ']) { " " } else { "" };
    format!("{fence}{pad}{value}{pad}{fence}")
}

/// `value` as a code span in a table cell: a pipe ends a cell even inside a code span, unless
/// it is escaped (GitHub's tables; the backslash is not shown).
pub(super) fn cell_code(value: &str) -> String {
    code(value).replace('|', "\\|")
}

/// A run's directory name in a relative link to its files: every byte but letters, digits and
/// `-._~` percent-encoded, so that no colon makes a scheme of it, no slash leaves the directory
/// and no space or parenthesis ends the link.
pub(super) fn path_segment(name: &str) -> String {
    const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    utf8_percent_encode(name, SEGMENT).to_string()
}

/// Whether `dest` is a link hookbench writes: an anchor in the page (`#...`) or a path relative
/// to the page's directory into it (no scheme, no absolute path, no `..`, no backslash).
pub(super) fn own_link(dest: &str) -> bool {
    if let Some(anchor) = dest.strip_prefix('#') {
        return !anchor.contains(['"', '<', '>', ' ']);
    }
    !dest.is_empty()
        && !dest.contains([':', '\\'])
        && !dest.starts_with('/')
        && !dest.split('/').any(|segment| segment == "..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulldown_cmark::{Event, Options, Parser};

    /// What `md` parses to: the text shown, and any markup that is not a paragraph or a table.
    fn parsed(md: &str) -> (String, Vec<String>) {
        let (mut shown, mut markup) = (String::new(), Vec::new());
        for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
            match event {
                Event::Text(t) => shown.push_str(&t),
                Event::Code(c) => shown.push_str(&format!("<code>{c}</code>")),
                Event::Start(tag) => markup.push(format!("{tag:?}")),
                Event::SoftBreak | Event::HardBreak => shown.push('\n'),
                Event::End(_) => {}
                other => markup.push(format!("{other:?}")),
            }
        }
        markup.retain(|m| !m.starts_with("Paragraph") && !m.starts_with("Table") && !m.contains("Cell"));
        (shown, markup.into_iter().filter(|m| !m.starts_with("TableRow")).collect())
    }

    #[test]
    fn text_is_shown_as_it_is_and_makes_no_markup() {
        let value = "[x](javascript:a) ![i](http://e/i.png) <b>&amp; `c` *e* _u_ ~s~ | # h \\";
        let (shown, markup) = parsed(&format!("a {} b", text(value)));
        assert_eq!(shown, format!("a {value} b"));
        assert_eq!(markup, Vec::<String>::new());
        let (shown, _) = parsed(&text("x\n\n[r]: http://e/r\n\n![r]"));
        assert_eq!(shown, "x  [r]: http://e/r  ![r]");
    }

    #[test]
    fn what_github_would_make_a_link_of_is_broken_where_it_would_start() {
        let value = "see http://127.0.0.1:9/a www.evil.example WWW.x foo@evil.example mailto:a@b.c";
        assert_eq!(
            text(value),
            "see http\\://127.0.0.1\\:9/a www\\.evil.example WWW\\.x foo`@`evil.example mailto\\:a`@`b.c"
        );
        // Shown as it was: the `@`s in spans of their own, nothing else but text.
        let (shown, markup) = parsed(&text(value));
        assert_eq!(shown, value.replace('@', "<code>@</code>"));
        assert_eq!(markup, Vec::<String>::new());
        // Plain words keep their dots and take no escapes.
        assert_eq!(text("p50 31.5 ms, swww.x"), "p50 31.5 ms, swww\\.x");
    }

    #[test]
    fn a_code_span_holds_any_value_its_backticks_and_spaces_included() {
        for value in ["plain", "`", "a ` b", "`` x ```", " lead", "trail ", "a\nb", "<img src=x>"] {
            let (shown, markup) = parsed(&format!("v {} w", code(value)));
            assert_eq!(shown, format!("v <code>{}</code> w", value.replace('\n', " ")), "{value:?}");
            assert_eq!(markup, Vec::<String>::new(), "{value:?}");
        }
    }

    #[test]
    fn an_empty_value_is_a_code_span_that_ends_where_it_starts() {
        let (shown, markup) = parsed(&format!("{} <b> {}", code(""), code("x")));
        // The tag between the spans (hookbench's, in this test) is outside both, as written.
        assert_eq!(shown, "<code> </code>  <code>x</code>");
        assert!(markup.len() == 1 && markup[0].contains("<b>"), "{markup:?}");
    }

    #[test]
    fn a_pipe_in_a_value_stays_in_its_cell() {
        let md = format!("| a | b |\n|---|---|\n| {} | {} |\n", text("x | y"), cell_code("p | `q`"));
        let mut cells: Vec<String> = Vec::new();
        for event in Parser::new_ext(&md, Options::ENABLE_TABLES) {
            match event {
                Event::Start(pulldown_cmark::Tag::TableCell) => cells.push(String::new()),
                Event::Text(t) => cells.last_mut().expect("in a cell").push_str(&t),
                Event::Code(c) => cells.last_mut().expect("in a cell").push_str(&format!("<code>{c}</code>")),
                _ => {}
            }
        }
        assert_eq!(cells, ["a", "b", "x | y", "<code>p | `q`</code>"]);
    }

    #[test]
    fn a_run_name_is_one_relative_segment_and_only_such_links_are_hookbenchs() {
        assert_eq!(path_segment("javascript:alert(1)"), "javascript%3Aalert%281%29");
        assert_eq!(path_segment("../x y"), "..%2Fx%20y");
        assert!(own_link("#witnesses-in-sqlitenaive") && own_link("run%20two/report.html"));
        for foreign in ["javascript:alert(1)", "http://e/x", "//e/x", "/etc/passwd", "../x", "a\\b", ""] {
            assert!(!own_link(foreign), "{foreign}");
        }
    }
}
