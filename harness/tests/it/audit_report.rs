//! A real audit's report leads with the answer: the Python receiver (examples/receivers/
//! python-sqlite) in its unsafe mode, audited through SQL, writes a report.md and report.html
//! that open with the verdict grid, each FAIL linked to witnesses the page holds and followed by
//! what to change; the terminal ends with the remedies; and Chromium lays the grid out without
//! fetching anything.

use std::path::Path;

use clap::Parser;
use hookbench::audit::{Check, Status};
use hookbench::cli::{Cli, Exit, run};
use hookbench::judge::Class;
use hookbench::report::{Report, remedy};
use testkit::{SECRET, browser};

use super::audit::{COUNTS, SECRET_2, TEMPLATE, python_receiver_holding};

/// The audit of the unsafe receiver into `out`: its exit status and what it printed.
fn audit_unsafe_receiver(dir: &Path, out: &Path) -> (u8, String) {
    let db = dir.join("app.db");
    let receiver = python_receiver_holding(&db, "unsafe", None, &[SECRET, SECRET_2]);
    let url = format!("http://{}/webhooks", receiver.addr);
    let observe = format!("sqlite://{}", db.display());
    let args = [
        "hookbench",
        "audit",
        &url,
        "--no-progress",
        "--out",
        out.to_str().expect("utf-8"),
        "--secret",
        SECRET,
        "--secret",
        SECRET_2,
        "--events",
        "200",
        "--rate",
        "400",
        "--quiet",
        "300ms",
        "--payload",
        TEMPLATE,
        "--observe-db",
        &observe,
        "--applied-query",
        COUNTS,
        "--state-query",
        "SELECT customer, version FROM subscriptions",
        "--copies",
        "4",
        "--stall-wait",
        "8s",
    ];
    let cli = Cli::try_parse_from(args).expect("arguments parse");
    let mut printed = Vec::new();
    let code = match run(cli, &mut printed) {
        Ok(()) => 0,
        Err(e) => e.downcast_ref::<Exit>().unwrap_or_else(|| panic!("not an exit status: {e:#}")).code(),
    };
    (code, String::from_utf8(printed).expect("utf-8"))
}

/// Every in-page link of `html` (`href="#..."`) and whether the page has an element of that id.
fn in_page_links(html: &str) -> Vec<(String, bool)> {
    html.split("href=\"#")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(|id| (id.to_string(), html.contains(&format!("id=\"{id}\""))))
        .collect()
}

#[test]
fn a_real_audits_report_leads_with_the_grid_its_failures_linked_and_remedied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("audit");
    let (code, printed) = audit_unsafe_receiver(dir.path(), &out);
    assert_eq!(code, 1, "the unsafe receiver fails: {printed}");
    let report = Report::read_json(&out.join("report.json")).expect("report.json");
    let a = report.audit_section().expect("an audit");
    let copies = a.checks.iter().find(|c| c.check == Check::ConcurrentCopies).expect("concurrent copies");
    assert!(copies.status == Status::Fail && copies.anomalies.contains(&Class::Duplicate), "{copies:?}");
    let failed: Vec<&str> =
        a.checks.iter().filter(|c| c.status == Status::Fail).map(|c| c.check.as_str()).collect();
    let duplicate = remedy::for_class(Class::Duplicate);

    // report.md: the grid straight after the title, each FAIL linked and its remedy named.
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    let after_title = md.split_once('\n').map_or("", |(_, rest)| rest).trim_start();
    assert!(after_title.starts_with("## Verdict\n"), "{md}");
    assert!(md.find("## Verdict") < md.find("Receiver `http"), "the grid before the run's description");
    for check in &failed {
        let row = format!("| {check} | **FAIL** ([witnesses](#{check}-witnesses)) |");
        assert!(md.contains(&row), "{row} in {md}");
        assert!(md.contains(&format!("\n## {check}: witnesses\n")), "{check}'s witnesses in {md}");
    }
    assert!(md.contains(&format!("(see `{}`)", duplicate.docs())), "{md}");

    // report.html: the coloured grid first, every in-page link landing on an id the page has.
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    let body = html.split_once("</h1>").map_or("", |(_, rest)| rest);
    assert!(body.starts_with("<section id=\"verdict-grid\">"), "{body}");
    let links = in_page_links(&html);
    for check in &failed {
        assert!(links.contains(&(format!("{check}-witnesses"), true)), "{check}: {links:?}");
    }
    assert!(links.iter().all(|(_, lands)| *lands), "{links:?}");
    let flagged = a.checks.iter().filter(|c| matches!(c.status, Status::Fail | Status::Warn)).count();
    assert_eq!(html.matches("<tr class=\"remedy\">").count(), flagged, "a remedy row per FAIL and WARN");
    assert!(html.contains(duplicate.change), "{html}");
    assert!(!html.contains("| check | verdict |"), "report.md's grid is not shown twice: {html}");

    // The terminal ends with what to change.
    let tail = printed.split_once("what to change:\n").map_or("", |(_, rest)| rest);
    assert!(
        tail.lines().any(|l| l.starts_with("  duplicate (") && l.contains(duplicate.change)),
        "{printed}"
    );

    // Chromium lays the grid out, a verdict cell per check, and fetches nothing.
    let page =
        browser::render(&out.join("report.html"), &["#verdict-grid table", "#verdict-grid td.verdict"]);
    assert!(page.page_requests().is_empty() && page.resources.is_empty(), "{page:?}");
    let grid = page.boxes("#verdict-grid table");
    assert!(grid.len() == 1 && grid[0].0 > 0 && grid[0].1 > 0, "the grid is laid out: {page:?}");
    assert_eq!(page.boxes("#verdict-grid td.verdict").len(), a.checks.len(), "{page:?}");
}
