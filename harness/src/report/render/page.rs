//! The HTML pages (report.html, index.html): one self-contained page each, no script, stylesheet,
//! font or image fetched. Markup comes from maud (which escapes what it interpolates), Markdown
//! from pulldown-cmark (raw HTML shown as text, no image, no link but hookbench's own), charts
//! from plotters as inline SVG; a Content-Security-Policy forbids the page to fetch or run
//! anything, so that even a value that slipped through unescaped could do neither.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd, html as cmark_html};

use super::escape;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222}\
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}\
td:first-child,th:first-child,td:nth-child(2){text-align:left}figure{margin:1.5rem 0}figcaption{font-weight:600}\
td.verdict{text-align:left}p{color:#555}";

/// What a page may do: nothing but apply its own inline styles (the `<style>` in its head and the
/// `style` attributes of the verdict grid and the SVG charts). No script, image, font, frame or
/// connection; no `<base>` to move its relative links; no form to send.
pub(super) const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// A whole page: `title` as its title and heading, then `body`.
pub(super) fn page(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(CSP);
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { (title) }
                (body)
            }
        }
    }
    .into_string()
}

/// A titled chart: `svg` (plotters' output) in a figure with an id.
pub(super) fn figure(id: &str, title: &str, svg: &str) -> Markup {
    html! {
        figure id=(id) {
            figcaption { (title) }
            (PreEscaped(svg))
        }
    }
}

/// A line saying what could not be drawn.
pub(super) fn note(text: &str) -> Markup {
    html! { p { (text) } }
}

/// A heading's anchor as GitHub makes it, so that one `#link` works in report.md on GitHub and in
/// report.html: lower case, spaces to hyphens, other punctuation dropped.
pub(super) fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// hookbench's Markdown (GitHub's tables included) as HTML: raw HTML in it is shown as text, not
/// passed through; an image is dropped (its text kept), and so is a link that is not one
/// hookbench writes ([`escape::own_link`]: an in-page anchor or a path into the run's
/// directory). Values are escaped where they enter the Markdown; this holds if one was not.
/// Every heading gets its [`slug`] as its id.
pub(super) fn markdown(md: &str) -> Markup {
    let events = with_heading_ids(only_text_from_data(Parser::new_ext(md, Options::ENABLE_TABLES)));
    let mut out = String::new();
    cmark_html::push_html(&mut out, events);
    PreEscaped(out)
}

/// `events` with every heading given its [`slug`] as its id, streamed: only a heading's own
/// events are held until its end (a report of many witnesses is millions of events; collected,
/// they took several times the memory of the page).
fn with_heading_ids<'a>(mut events: impl Iterator<Item = Event<'a>>) -> impl Iterator<Item = Event<'a>> {
    let mut held = std::collections::VecDeque::new();
    std::iter::from_fn(move || {
        if let Some(event) = held.pop_front() {
            return Some(event);
        }
        let event = events.next()?;
        if !matches!(event, Event::Start(Tag::Heading { .. })) {
            return Some(event);
        }
        held.push_back(event);
        let mut text = String::new();
        for inner in events.by_ref() {
            if let Event::Text(t) | Event::Code(t) = &inner {
                text.push_str(t);
            }
            let end = matches!(inner, Event::End(TagEnd::Heading(_)));
            held.push_back(inner);
            if end {
                break;
            }
        }
        if let Some(Event::Start(Tag::Heading { id, .. })) = held.front_mut() {
            *id = Some(slug(&text).into());
        }
        held.pop_front()
    })
}

/// `events` with raw HTML turned to text and every image and foreign link taken out, the text
/// inside them kept. A link's end is dropped with its start: links do not nest, so the next
/// `End(Link)` is its own.
fn only_text_from_data<'a>(events: impl Iterator<Item = Event<'a>>) -> impl Iterator<Item = Event<'a>> {
    let mut dropped_link = false;
    events.filter_map(move |event| match event {
        Event::Html(text) | Event::InlineHtml(text) => Some(Event::Text(text)),
        Event::Start(Tag::Image { .. }) | Event::End(TagEnd::Image) => None,
        Event::Start(Tag::Link { ref dest_url, .. }) if !escape::own_link(dest_url) => {
            dropped_link = true;
            None
        }
        Event::End(TagEnd::Link) if dropped_link => {
            dropped_link = false;
            None
        }
        other => Some(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Markdown that was not escaped (as if a value had slipped in raw) still renders no tag,
    /// image or foreign link; hookbench's own links survive.
    #[test]
    fn raw_markdown_renders_no_markup_but_hookbenchs_own_links() {
        let md = "# t\n\n[a](javascript:alert(1)) ![i](http://e.test/i.png) <img src=http://e.test/r.png> \
                  <http://e.test/auto> [own](#t) [run](run%20two/report.html) [up](../x) [abs](/etc)\n\n\
                  [r]: http://e.test/ref\n\n![r] <script>fetch('http://e.test/s')</script>\n";
        let html = markdown(md).into_string();
        for tag in ["<img", "<script", "javascript:alert(1)\"", "href=\"http", "href=\"..", "href=\"/"] {
            assert!(!html.contains(tag), "{tag} in {html}");
        }
        assert!(
            html.contains("<a href=\"#t\">own</a>") && html.contains("<a href=\"run%20two/report.html\">")
        );
        assert!(html.contains("&lt;img src=http://e.test/r.png&gt;"), "raw HTML shown as text: {html}");
    }

    #[test]
    fn every_page_carries_the_content_security_policy_before_its_title() {
        let page = page("t", html! { p { "x" } });
        let meta = format!("<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">");
        assert!(page.find(&meta).is_some_and(|at| page.find("<title>").is_some_and(|t| at < t)), "{page}");
    }
}
