//! The verdict grid a bench's report.md and report.html open with: designs by backend, each cell
//! saying whether every event was applied exactly once, whether every account ended on its latest
//! plan, and its p99, so the answer comes before the charts and tables.

use std::fmt::Write;

use maud::{Markup, html};

use super::page::slug;
use super::{BenchBody, Row};

/// A verdict that held, as a cell's background.
pub(super) const GREEN: &str = "background:#d9f2d9";
/// A verdict that held only in part, or an advisory finding.
pub(super) const AMBER: &str = "background:#fcefc7";
/// A verdict that did not hold.
pub(super) const RED: &str = "background:#f8d0d0";
/// Nothing judged.
pub(super) const GREY: &str = "background:#ececec";

/// A link to witnesses in a grid's cell, as report.md writes it.
pub(super) fn witnesses_link_markdown(anchor: &str) -> String {
    format!("([witnesses]({anchor}))")
}

/// A link to witnesses in a grid's cell, as report.html shows it.
pub(super) fn witnesses_link_html(anchor: &str) -> Markup {
    html! { " (" a href=(anchor) { "witnesses" } ")" }
}

/// The heading of a cell's witnesses in report.md (the grid links to it).
pub(super) fn witnesses_heading(cell: &str) -> String {
    format!("Witnesses in {cell}")
}

/// One cell's verdict.
struct Verdict {
    exactly_once: bool,
    latest: bool,
    words: String,
    /// The anchor of the cell's witnesses in the report, when it has any.
    witnesses: Option<String>,
}

fn verdict(report: &BenchBody, r: &Row) -> Verdict {
    let name = r.cell();
    let witnesses = report
        .witnesses
        .iter()
        .any(|c| c.cell == name && !c.witnesses.is_empty())
        .then(|| format!("#{}", slug(&witnesses_heading(&name))));
    let f = &r.figures;
    let p99 = format!("p99 {:.1} ms", r.latency_us.p99 as f64 / 1e3);
    let Some(v) = &r.verdict else {
        // A report written before the judge kept its verdict: nothing to colour it by.
        return Verdict {
            exactly_once: false,
            latest: false,
            words: format!("not judged; {p99}"),
            witnesses,
        };
    };
    let once = if v.exactly_once {
        "exactly once".to_string()
    } else {
        format!("not exactly once ({} dup, {} lost, {} never applied)", f.dup_events, f.lost, f.never_applied)
    };
    let state = if v.latest_state {
        "latest state".to_string()
    } else {
        format!("{} stale accounts", f.stale_accounts)
    };
    let words = format!("{once}; {state}; {p99}");
    Verdict { exactly_once: v.exactly_once, latest: v.latest_state, words, witnesses }
}

/// The grid as a Markdown table (nothing without rows).
pub fn verdict_grid_markdown(report: &BenchBody) -> String {
    let backends = report.columns();
    if backends.is_empty() {
        return String::new();
    }
    let mut md = String::from("## Verdict\n\n| design |");
    for b in &backends {
        let _ = write!(md, " {b} |");
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(backends.len()));
    md.push('\n');
    for d in report.designs() {
        let _ = write!(md, "| **{d}** |");
        for &b in &backends {
            let text = report.row(b, d).map_or("did not run".to_string(), |r| {
                let v = verdict(report, r);
                match v.witnesses {
                    Some(link) => format!("{} {}", v.words, witnesses_link_markdown(&link)),
                    None => v.words,
                }
            });
            let _ = write!(md, " {text} |");
        }
        md.push('\n');
    }
    md.push('\n');
    md
}

/// The grid as HTML, each cell coloured: green when exactly once and on the latest state, amber
/// when exactly once only, red when not exactly once.
pub fn verdict_grid_html(report: &BenchBody) -> Markup {
    let backends = report.columns();
    let colour = |v: &Verdict| match (v.exactly_once, v.latest) {
        (true, true) => GREEN,
        (true, false) => AMBER,
        _ => RED,
    };
    html! {
        @if !backends.is_empty() {
            section id="verdict-grid" {
                h2 { "Verdict" }
                table {
                    tr { th { "design" } @for b in &backends { th { (b.to_string()) } } }
                    @for d in report.designs() {
                        tr {
                            td { b { (d.as_str()) } }
                            @for &b in &backends {
                                @match report.row(b, d) {
                                    Some(r) => {
                                        @let v = verdict(report, r);
                                        td class="verdict" style=(colour(&v)) {
                                            (v.words)
                                            @if let Some(link) = &v.witnesses {
                                                (witnesses_link_html(link))
                                            }
                                        }
                                    }
                                    None => td { "did not run" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
