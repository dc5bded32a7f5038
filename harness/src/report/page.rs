//! The HTML pages (report.html, index.html): one self-contained page each, no script, stylesheet,
//! font or image fetched. Markup comes from maud (which escapes what it interpolates), Markdown
//! from pulldown-cmark, charts from plotters as inline SVG.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd, html as cmark_html};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222}\
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}\
td:first-child,th:first-child,td:nth-child(2){text-align:left}figure{margin:1.5rem 0}figcaption{font-weight:600}\
td.verdict{text-align:left}p{color:#555}";

/// A whole page: `title` as its title and heading, then `body`.
pub(super) fn page(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
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

/// Markdown (GitHub's tables included) as HTML; raw HTML in it is escaped, not passed through.
/// Every heading gets its [`slug`] as its id.
pub(super) fn markdown(md: &str) -> Markup {
    let mut events: Vec<Event> = Parser::new_ext(md, Options::ENABLE_TABLES)
        .map(|event| match event {
            Event::Html(text) | Event::InlineHtml(text) => Event::Text(text),
            other => other,
        })
        .collect();
    let mut heading_at = None;
    let mut text = String::new();
    for i in 0..events.len() {
        match &events[i] {
            Event::Start(Tag::Heading { .. }) => {
                heading_at = Some(i);
                text.clear();
            }
            Event::Text(t) | Event::Code(t) if heading_at.is_some() => text.push_str(t),
            Event::End(TagEnd::Heading(_)) => {
                if let Some(Event::Start(Tag::Heading { id, .. })) = heading_at.take().map(|h| &mut events[h])
                {
                    *id = Some(slug(&text).into());
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    cmark_html::push_html(&mut out, events.into_iter());
    PreEscaped(out)
}
