//! The verdict grid an audit's report.md and report.html open with: one row per check, PASS,
//! FAIL, WARN or SKIPPED (coloured in the HTML), each FAIL and WARN linked to its witnesses and
//! followed by what to change for each class it found ([`super::remedy`]), so that the answer
//! and what to do about it come before the figures.

use std::fmt::Write;

use maud::{Markup, html};

use super::escape::{code, text};
use super::page::slug;
use super::remedy::{self, Remedy};
use super::verdict_grid::{AMBER, GREEN, GREY, RED, witnesses_link_html, witnesses_link_markdown};
use super::{AuditSection, Check, CheckResult, Status};

/// The heading of a check's witnesses in report.md (the grid links to it).
pub(super) fn witnesses_heading(check: Check) -> String {
    format!("{}: witnesses", check.as_str())
}

/// Whether a check's row links to its witnesses and says what to change: a FAIL, or a WARN's
/// advisory finding.
pub(super) fn flagged(status: Status) -> bool {
    match status {
        Status::Fail | Status::Warn => true,
        Status::Pass | Status::Skipped => false,
    }
}

/// One check's row of the grid.
struct Row<'a> {
    result: &'a CheckResult,
    /// The in-page anchor of its witnesses, for a flagged check.
    witnesses: Option<String>,
    /// What to change, for a flagged check.
    remedies: Vec<Remedy>,
}

fn rows(a: &AuditSection) -> Vec<Row<'_>> {
    a.checks
        .iter()
        .map(|c| {
            let flag = flagged(c.status);
            Row {
                result: c,
                witnesses: flag.then(|| format!("#{}", slug(&witnesses_heading(c.check)))),
                remedies: if flag {
                    remedy::for_failure(c.check, &c.anomalies, &c.witnesses)
                } else {
                    Vec::new()
                },
            }
        })
        .collect()
}

/// Each remedy the flagged checks call for, once, with the checks that call for it, in the order
/// the checks first do.
pub(super) fn remedies_by_check(a: &AuditSection) -> Vec<(Remedy, Vec<Check>)> {
    let mut out: Vec<(Remedy, Vec<Check>)> = Vec::new();
    for row in rows(a) {
        for r in row.remedies {
            match out.iter_mut().find(|(seen, _)| *seen == r) {
                Some((_, checks)) => checks.push(row.result.check),
                None => out.push((r, vec![row.result.check])),
            }
        }
    }
    out
}

/// The grid's first line: how many checks had each verdict, or that nothing was judged.
fn summary(a: &AuditSection) -> String {
    let count = |s: Status| a.checks.iter().filter(|c| c.status == s).count();
    if a.checks.is_empty() {
        return "No check ran: nothing was judged.".to_string();
    }
    if count(Status::Skipped) == a.checks.len() {
        return "Every check was skipped: nothing was judged.".to_string();
    }
    let counts = format!(
        "{} FAIL, {} WARN, {} PASS, {} SKIPPED, of {} checks.",
        count(Status::Fail),
        count(Status::Warn),
        count(Status::Pass),
        count(Status::Skipped),
        a.checks.len()
    );
    // A stopped audit's verdicts are those of the checks that ran: said with the answer, not
    // only further down where its reason is.
    match a.stopped {
        Some(_) => format!("{counts} The audit stopped before it finished: these are the checks that ran."),
        None => counts,
    }
}

/// The background of a verdict's cell.
fn colour(status: Status) -> &'static str {
    match status {
        Status::Pass => GREEN,
        Status::Warn => AMBER,
        Status::Fail => RED,
        Status::Skipped => GREY,
    }
}

/// One remedy as a list item of report.md, its docs named as text (report.html keeps no link out
/// of the run's directory).
fn remedy_markdown(r: &Remedy) -> String {
    format!("**{}**: {} (see {})", text(r.anchor), text(r.change), code(&r.docs()))
}

/// The grid as Markdown: the summary, a table of the checks, then what to change for each FAIL
/// and WARN.
pub fn audit_grid_markdown(a: &AuditSection) -> String {
    let mut md = format!("## Verdict\n\n{}\n\n", summary(a));
    let rows = rows(a);
    if rows.is_empty() {
        return md;
    }
    md.push_str("| check | verdict | evidence |\n|---|---|---|\n");
    for row in &rows {
        let c = row.result;
        let verdict = match row.witnesses.as_deref() {
            Some(anchor) => format!("**{}** {}", c.status.as_str(), witnesses_link_markdown(anchor)),
            None => format!("**{}**", c.status.as_str()),
        };
        let _ = writeln!(md, "| {} | {verdict} | {} |", c.check.as_str(), text(&c.evidence));
    }
    let flagged: Vec<&Row> = rows.iter().filter(|r| r.witnesses.is_some()).collect();
    if !flagged.is_empty() {
        md.push_str("\nWhat to change:\n\n");
    }
    for row in flagged {
        let c = row.result;
        let link = row.witnesses.as_deref().map(witnesses_link_markdown).unwrap_or_default();
        let _ = writeln!(md, "- {} ({}) {link}", c.check.as_str(), c.status.as_str());
        if row.remedies.is_empty() {
            let _ = writeln!(md, "  - no remedy to name: the witnesses and the evidence say what failed");
        }
        for r in &row.remedies {
            let _ = writeln!(md, "  - {}", remedy_markdown(r));
        }
    }
    md.push('\n');
    md
}

/// What to change for one flagged row, as the grid's row under it.
fn remedies_html(row: &Row<'_>) -> Markup {
    html! {
        tr class="remedy" {
            td colspan="3" style="text-align:left" {
                b { "What to change" }
                @if row.remedies.is_empty() {
                    ": no remedy to name; the witnesses and the evidence say what failed."
                } @else {
                    ul {
                        @for r in &row.remedies {
                            li { b { (r.anchor) } ": " (r.change) " (see " code { (r.docs()) } ")" }
                        }
                    }
                }
            }
        }
    }
}

/// The grid as HTML: each verdict's cell coloured (green PASS, amber WARN, red FAIL, grey
/// SKIPPED), each FAIL and WARN linking to its witnesses, with a row saying what to change under
/// it.
pub fn audit_grid_html(a: &AuditSection) -> Markup {
    let rows = rows(a);
    html! {
        section id="verdict-grid" {
            h2 { "Verdict" }
            p { (summary(a)) }
            @if !rows.is_empty() {
                table {
                    tr {
                        th style="text-align:left" { "check" }
                        th style="text-align:left" { "verdict" }
                        th style="text-align:left" { "evidence" }
                    }
                    @for row in &rows {
                        @let c = row.result;
                        tr class="check" {
                            td style="white-space:nowrap" { (c.check.as_str()) }
                            td class="verdict" style=(colour(c.status)) {
                                b { (c.status.as_str()) }
                                @if let Some(link) = &row.witnesses { (witnesses_link_html(link)) }
                            }
                            td style="text-align:left" { (c.evidence) }
                        }
                        @if row.witnesses.is_some() { (remedies_html(row)) }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Class;

    /// An audit of `checks`, each `(check, status, classes)`, a FAIL or WARN with one witness.
    fn audit(checks: &[(&str, &str, &[&str])]) -> AuditSection {
        let checks: Vec<serde_json::Value> = checks
            .iter()
            .map(|(check, status, classes)| {
                let witnesses = if matches!(*status, "FAIL" | "WARN") {
                    serde_json::json!([{"id":"evt_1","problem":"p","observed":"o","attempts":[]}])
                } else {
                    serde_json::json!([])
                };
                serde_json::json!({"check":check,"status":status,"evidence":format!("{check} said <b>"),
                    "anomalies":classes,"witnesses":witnesses})
            })
            .collect();
        serde_json::from_value(serde_json::json!({"url":"http://127.0.0.1:1/","signing":"standard-webhooks",
            "provider":null,"payload":"hookbench","observers":["sql"],"id_prefix":"a_","account_base":0,
            "parameters":{"seed":1,"events":10,"accounts":5,"p_credit":1.0,"rate":10.0,"concurrency":2,
                "timeout":"1s","retry":{"base":"10ms","cap":"1s","max_attempts":3},"p_duplicate":0.0,
                "p_ack_lost":0.0,"p_concurrent":0.0,"p_shuffle":0.0},
            "checks":checks,"wall_s":1.0}))
        .expect("an audit section")
    }

    /// The grid's rows as the HTML has them: each check's row and, under a flagged one, its
    /// remedies' row.
    fn html_rows(a: &AuditSection) -> Vec<String> {
        let html = audit_grid_html(a).into_string();
        html.split("<tr class=")
            .skip(1)
            .map(|r| r.split("</tr>").next().unwrap_or_default().to_string())
            .collect()
    }

    const DUPLICATE: &str = "record the id and apply the effect in one transaction";

    #[test]
    fn a_fail_links_to_its_witnesses_and_is_followed_by_its_classes_remedies() {
        let a = audit(&[("concurrent-copies", "FAIL", &["duplicate", "lost"])]);
        let rows = html_rows(&a);
        assert_eq!(rows.len(), 2, "the check's row and its remedies': {rows:?}");
        assert!(rows[0].contains(RED) && rows[0].contains("<b>FAIL</b>"), "{}", rows[0]);
        assert!(rows[0].contains("<a href=\"#concurrent-copies-witnesses\">witnesses</a>"), "{}", rows[0]);
        assert!(rows[0].contains("concurrent-copies said &lt;b&gt;"), "evidence escaped: {}", rows[0]);
        assert!(rows[1].starts_with("\"remedy\"") && rows[1].contains(DUPLICATE), "{}", rows[1]);
        assert!(
            rows[1].contains(for_lost().change) && rows[1].contains("<code>docs/remedies.md#lost</code>")
        );
        let md = audit_grid_markdown(&a);
        assert!(
            md.contains("| concurrent-copies | **FAIL** ([witnesses](#concurrent-copies-witnesses)) |"),
            "{md}"
        );
        assert!(md.contains("  - **duplicate**: record the id"), "{md}");
        assert!(md.contains("(see `docs/remedies.md#duplicate`)"), "{md}");
        assert_eq!(witnesses_heading(Check::ConcurrentCopies), "concurrent-copies: witnesses");
    }

    fn for_lost() -> Remedy {
        remedy::for_class(Class::Lost)
    }

    #[test]
    fn a_pass_has_no_link_and_no_remedy() {
        let a = audit(&[("sequential-duplicate", "PASS", &[])]);
        let rows = html_rows(&a);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert!(
            rows[0].contains(GREEN) && rows[0].contains("<b>PASS</b>") && !rows[0].contains("<a "),
            "{}",
            rows[0]
        );
        let md = audit_grid_markdown(&a);
        assert!(!md.contains("What to change") && !md.contains("](#"), "{md}");
        assert!(md.contains("0 FAIL, 0 WARN, 1 PASS, 0 SKIPPED, of 1 checks."), "{md}");
        assert!(remedies_by_check(&a).is_empty());
    }

    #[test]
    fn a_warn_is_amber_linked_and_says_what_to_change_and_a_skipped_is_grey_and_says_nothing() {
        let a = audit(&[("parallel-load", "WARN", &["id-conflict"]), ("crash", "SKIPPED", &[])]);
        let rows = html_rows(&a);
        assert_eq!(rows.len(), 3, "WARN, its remedy, SKIPPED: {rows:?}");
        assert!(
            rows[0].contains(AMBER)
                && rows[0].contains("<b>WARN</b>")
                && rows[0].contains("#parallel-load-witnesses")
        );
        assert!(rows[1].contains(remedy::for_class(Class::IdConflict).change), "{}", rows[1]);
        assert!(
            rows[2].contains(GREY) && rows[2].contains("<b>SKIPPED</b>") && !rows[2].contains("<a "),
            "{}",
            rows[2]
        );
        let md = audit_grid_markdown(&a);
        assert!(md.contains("| crash | **SKIPPED** |") && md.contains("- parallel-load (WARN)"), "{md}");
    }

    #[test]
    fn a_fail_without_a_class_has_its_checks_remedy_or_says_there_is_none() {
        let a = audit(&[("capacity", "FAIL", &[]), ("hostile-input", "FAIL", &[])]);
        let md = audit_grid_markdown(&a);
        assert!(
            md.contains(
                "- capacity (FAIL) ([witnesses](#capacity-witnesses))\n  - **too-slow**: answer within"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "- hostile-input (FAIL) ([witnesses](#hostile-input-witnesses))\n  - no remedy to name"
            ),
            "{md}"
        );
        let rows = html_rows(&a);
        assert!(rows[3].contains("no remedy to name"), "{rows:?}");
    }

    #[test]
    fn an_audit_whose_every_check_was_skipped_says_nothing_was_judged() {
        let a = audit(&[("crash", "SKIPPED", &[]), ("poison", "SKIPPED", &[])]);
        let md = audit_grid_markdown(&a);
        assert!(md.contains("Every check was skipped: nothing was judged."), "{md}");
        assert!(!md.contains("What to change") && md.contains("| poison | **SKIPPED** |"), "{md}");
        let html = audit_grid_html(&a).into_string();
        assert!(
            html.contains("Every check was skipped") && !html.contains(RED) && !html.contains(GREEN),
            "{html}"
        );
    }

    #[test]
    fn an_audit_with_no_checks_says_no_check_ran_and_draws_no_table() {
        let a = audit(&[]);
        let md = audit_grid_markdown(&a);
        assert_eq!(md, "## Verdict\n\nNo check ran: nothing was judged.\n\n");
        let html = audit_grid_html(&a).into_string();
        assert!(html.contains("No check ran") && !html.contains("<table"), "{html}");
    }

    #[test]
    fn a_stopped_audit_says_so_with_its_verdicts() {
        let mut a = audit(&[("sequential-duplicate", "PASS", &[])]);
        assert!(!audit_grid_markdown(&a).contains("stopped"));
        a.stopped = Some("the kill command failed".to_string());
        let md = audit_grid_markdown(&a);
        assert!(md.contains("1 PASS, 0 SKIPPED, of 1 checks. The audit stopped before it finished"), "{md}");
    }

    /// The in-page links of `md` and the anchors of its headings, as page.rs gives them.
    fn links_and_anchors(md: &str) -> (Vec<String>, Vec<String>) {
        use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
        let (mut links, mut anchors, mut heading) = (Vec::new(), Vec::new(), None::<String>);
        for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
            match event {
                Event::Start(Tag::Link { dest_url, .. }) => links.push(dest_url.to_string()),
                Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
                Event::Text(t) | Event::Code(t) => heading.iter_mut().for_each(|h| h.push_str(&t)),
                Event::End(TagEnd::Heading(_)) => {
                    anchors.extend(heading.take().map(|h| format!("#{}", slug(&h))))
                }
                _ => {}
            }
        }
        (links, anchors)
    }

    #[test]
    fn every_link_of_the_grid_lands_on_a_witnesses_heading_even_one_without_witnesses() {
        let mut a = audit(&[
            ("concurrent-copies", "FAIL", &["duplicate"]),
            ("parallel-load", "WARN", &["id-conflict"]),
            ("capacity", "FAIL", &[]),
            ("lost-ack", "PASS", &[]),
        ]);
        a.checks[2].witnesses.clear();
        let md = super::super::audit_markdown(&super::super::Header::new("r".to_string()), &a);
        let (links, anchors) = links_and_anchors(&md);
        let linked: std::collections::BTreeSet<&str> = links.iter().map(String::as_str).collect();
        let flagged = ["#capacity-witnesses", "#concurrent-copies-witnesses", "#parallel-load-witnesses"];
        assert_eq!(linked.into_iter().collect::<Vec<_>>(), flagged, "each flagged check linked: {links:?}");
        assert_eq!(links.len(), 6, "from its row and from what to change: {links:?}");
        for link in &links {
            assert!(anchors.contains(link), "{link} has no heading in {md}");
        }
        assert!(md.contains("## capacity: witnesses\n\nNo event to show"), "{md}");
        assert!(!anchors.contains(&"#lost-ack-witnesses".to_string()), "a PASS has no witnesses section");
    }

    #[test]
    fn the_terminal_table_ends_with_the_remedies_only_when_a_check_failed() {
        let report = |a| super::super::Report::audit("r".to_string(), a);
        let failing =
            report(audit(&[("concurrent-copies", "FAIL", &["duplicate"]), ("lost-ack", "PASS", &[])]));
        let table = super::super::render_audit_table(&failing);
        let change = remedy::for_class(Class::Duplicate).change;
        let last = format!(
            "what to change:\n  duplicate (concurrent-copies): {change} [docs/remedies.md#duplicate]\n"
        );
        assert!(table.ends_with(&last), "{table}");
        let passing = report(audit(&[("lost-ack", "PASS", &[]), ("crash", "SKIPPED", &[])]));
        assert!(!super::super::render_audit_table(&passing).contains("what to change"));
    }

    #[test]
    fn the_terminals_remedies_name_each_remedy_once_with_every_check_that_calls_for_it() {
        let a = audit(&[
            ("sequential-duplicate", "FAIL", &["duplicate"]),
            ("concurrent-copies", "FAIL", &["duplicate"]),
            ("lost-ack", "PASS", &[]),
            ("crash", "FAIL", &["lost", "duplicate"]),
        ]);
        let by: Vec<(&str, Vec<Check>)> =
            remedies_by_check(&a).into_iter().map(|(r, c)| (r.anchor, c)).collect();
        assert_eq!(
            by,
            [
                ("duplicate", vec![Check::SequentialDuplicate, Check::ConcurrentCopies, Check::Crash]),
                ("lost", vec![Check::Crash])
            ]
        );
    }
}
