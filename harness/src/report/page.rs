//! The HTML pages (report.html, index.html): one self-contained page each, no script, stylesheet,
//! font or image fetched. Markup comes from maud (which escapes what it interpolates), Markdown
//! from pulldown-cmark, charts from plotters as inline SVG.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use pulldown_cmark::{Options, Parser, html as cmark_html};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222}\
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}\
td:first-child,th:first-child,td:nth-child(2){text-align:left}figure{margin:1.5rem 0}figcaption{font-weight:600}\
p{color:#555}";

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

/// Markdown (GitHub's tables included) as HTML; raw HTML in it is escaped, not passed through.
pub(super) fn markdown(md: &str) -> Markup {
    let events = Parser::new_ext(md, Options::ENABLE_TABLES).map(|event| match event {
        pulldown_cmark::Event::Html(text) | pulldown_cmark::Event::InlineHtml(text) => {
            pulldown_cmark::Event::Text(text)
        }
        other => other,
    });
    let mut out = String::new();
    cmark_html::push_html(&mut out, events);
    PreEscaped(out)
}
