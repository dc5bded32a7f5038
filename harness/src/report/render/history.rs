//! History across runs: `reports/index.md` and `reports/index.html` (a row per run; trends of each
//! cell's duplicate applies, stale accounts and p99 latency as small multiples, a chart per design
//! and figure, only across runs of the same parameters), and the comparison of two runs that CI
//! gates on.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::matrix::Backend;
use crate::matrix::Design;
use plotters::prelude::*;

use super::chart::{COLORS, Svg, line_with_dots};
use super::{BenchBody, Report, Row, RunBody, escape, page};

/// Every run under `dir` (a folder per run holding report.json of at most `limit` bytes), oldest
/// first; one that cannot be read is skipped, with a line on stderr saying why.
pub fn load_runs(dir: &Path, limit: u64) -> std::io::Result<Vec<(PathBuf, Report)>> {
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let json = path.join("report.json");
        if json.is_file() {
            match Report::read_json_capped(&json, limit) {
                Ok(r) => runs.push((path, r)),
                Err(e) => {
                    let why = super::super::read_error_message(&json, &e);
                    eprintln!("hookbench: skipping {}", crate::printable::line(&why));
                }
            }
        }
    }
    runs.sort_by(|a, b| a.1.header.started_at.cmp(&b.1.header.started_at).then_with(|| a.0.cmp(&b.0)));
    Ok(runs)
}

type Metric = fn(&Row) -> f64;

/// The figures the index follows across runs, by id, name and metric.
pub const TREND_FIGURES: [(&str, &str, Metric); 3] = [
    ("duplicates", "extra applies", |r| r.figures.extra_applies as f64),
    ("stale", "stale accounts", |r| r.figures.stale_accounts as f64),
    ("p99", "p99 latency (ms)", |r| r.latency_us.p99 as f64 / 1000.0),
];

/// What makes two runs comparable on one trend line: the same events, rate, chaos, poison and
/// experiments. Runs that differ in any of these are drawn on separate trends.
pub fn trend_key(r: &Report) -> String {
    let Some(b) = r.bench_body() else {
        return r.audit_section().map_or_else(String::new, |a| format!("audit of {}", a.url));
    };
    let p = &b.parameters;
    let rate = p.rate.map_or_else(|| "unlimited rate".to_string(), |r| format!("{r} events/s"));
    let chaos = if p.chaos.is_empty() {
        "no chaos".to_string()
    } else {
        format!("chaos {}", p.chaos.iter().map(ToString::to_string).collect::<Vec<_>>().join(" + "))
    };
    let e = &b.experiments;
    let ran: Vec<&str> = [
        (!e.crash.is_empty(), "crash"),
        (e.jitter.is_some(), "jitter"),
        (!e.retention.is_empty(), "retention"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    let experiments = if ran.is_empty() {
        "no experiments".to_string()
    } else {
        format!("experiments {}", ran.join(" + "))
    };
    format!("{} events, {rate}, {chaos}, poison {}, {experiments}", p.events, p.poison)
}

/// A run as the index names it: the day it started and its commit.
pub fn run_label(r: &Report) -> String {
    let day = r.header.started_at.get(..10).unwrap_or(&r.header.started_at);
    let commit = r.header.git_sha.as_deref().map_or("no commit", |c| c.get(..7).unwrap_or(c));
    format!("{day} {commit}")
}

/// One small chart: `metric` of `design` in each run of a trend, a line per backend, from the
/// cells at each database's own level (levels `--isolation` listed are compared by `report
/// compare`, cell by cell).
fn small_multiple(runs: &[&Report], design: Design, metric: Metric) -> Svg {
    // Month and day: the year is in the trend's caption.
    let labels: Vec<String> =
        runs.iter().map(|r| run_label(r).get(5..).unwrap_or_default().to_string()).collect();
    let series: Vec<(Backend, Vec<(f64, f64)>)> = Backend::KNOWN
        .iter()
        .map(|&b| {
            let points = runs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let at_default = |x: &&Row| x.backend == b && x.design == design && x.level.is_none();
                    let row = r.rows().iter().find(at_default)?;
                    Some((i as f64, metric(row)))
                })
                .collect();
            (b, points)
        })
        .collect();
    let top = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(1.0, f64::max) * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (340, 210)).into_drawing_area();
        root.fill(&WHITE)?;
        // The figure's caption names the chart: none inside it, to leave the room to the data.
        let mut chart = ChartBuilder::on(&root)
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(44)
            .build_cartesian_2d(-0.4f64..(runs.len().max(2) as f64 - 0.6), 0f64..top)?;
        chart
            .configure_mesh()
            .x_labels(runs.len().clamp(2, 3))
            .label_style(("sans-serif", 10))
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 0.01 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()?;
        for (b, points) in series {
            line_with_dots(&mut chart, points, backend_color(b))?;
        }
        root.present()?;
    }
    Ok(svg)
}

/// Each backend's colour in the index's small multiples.
fn backend_color(b: Backend) -> RGBAColor {
    COLORS[Backend::KNOWN.iter().position(|x| *x == b).unwrap_or(0)].to_rgba()
}

/// Runs grouped by [`trend_key`], each group oldest first, the newest group first. Audits (no
/// rows) are on no trend.
fn trend_groups(runs: &[(PathBuf, Report)]) -> Vec<(String, Vec<&Report>)> {
    let mut groups: Vec<(String, Vec<&Report>)> = Vec::new();
    for (_, r) in runs.iter().filter(|(_, r)| !r.rows().is_empty()) {
        let key = trend_key(r);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    groups.sort_by(|a, b| b.1[b.1.len() - 1].header.started_at.cmp(&a.1[a.1.len() - 1].header.started_at));
    groups
}

/// The index's trends: for each set of comparable runs, a grid of small charts, a row per design
/// and a column per figure, both backends in each.
fn trends_html(runs: &[(PathBuf, Report)]) -> maud::Markup {
    let colour = |b: Backend| {
        let c = backend_color(b).rgb();
        format!("color:rgb({},{},{});font-weight:600", c.0, c.1, c.2)
    };
    maud::html! {
        @for (g, (key, list)) in trend_groups(runs).iter().enumerate() {
            section class="trend" id=(format!("trend-{g}")) {
                h2 { "Trend: " (key) }
                p {
                    (list.len()) " run" @if list.len() != 1 { "s" } " with these parameters, oldest to newest ("
                    (run_label(list[0])) " to " (run_label(list[list.len() - 1])) "). Lines: "
                    @for b in Backend::ALL { span style=(colour(b)) { "\u{2014} " (b.as_str()) } " " }
                }
                div style="display:grid;grid-template-columns:repeat(3,1fr);gap:.25rem" {
                    @for d in Design::ALL.into_iter().filter(|d| list.iter().any(|r| r.rows().iter().any(|x| x.design == *d))) {
                        @for (id, name, metric) in TREND_FIGURES {
                            @let title = format!("{d}: {name}");
                            @let fig_id = format!("trend-{g}-{d}-{id}");
                            @match small_multiple(list, d, metric) {
                                Ok(svg) => (page::figure(&fig_id, &title, &svg)),
                                Err(e) => (page::note(&format!("{title}: not drawn ({e})"))),
                            }
                        }
                    }
                }
            }
        }
    }
}

fn run_line(path: &Path, r: &Report) -> [String; 8] {
    let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let rows = r.rows();
    let dups: u64 = rows.iter().map(|x| x.figures.extra_applies).sum();
    let lost: u64 = rows.iter().map(|x| x.figures.lost + x.figures.never_applied).sum();
    let worst_p99 = rows.iter().map(|x| x.latency_us.p99).max().unwrap_or(0);
    let ran = match &r.body {
        RunBody::Bench(b) => format!("{}/{}", b.rows.len(), b.rows.len() + b.skipped.len() + b.broken.len()),
        RunBody::Audit { audit } => {
            let judged = audit.checks.iter().filter(|c| c.status != super::Status::Skipped).count();
            format!("{judged}/{} checks", audit.checks.len())
        }
    };
    [
        name,
        r.header.started_at.clone(),
        r.header.git_sha.clone().unwrap_or_else(|| "-".into()),
        trend_key(r),
        ran,
        dups.to_string(),
        lost.to_string(),
        format!("{:.1}", worst_p99 as f64 / 1000.0),
    ]
}

const RUN_HEADER: [&str; 8] = [
    "run",
    "started",
    "commit",
    "parameters",
    "cells run",
    "extra applies (all cells)",
    "lost (all cells)",
    "worst p99 ms",
];

/// Rebuilds `dir/index.md` and `dir/index.html` from every run under `dir` (each report.json of at
/// most `limit` bytes); returns the run count.
pub fn rebuild_index(dir: &Path, limit: u64) -> std::io::Result<usize> {
    let runs = load_runs(dir, limit)?;
    let lines: Vec<_> = runs.iter().rev().map(|(path, r)| run_line(path, r)).collect();
    let mut md = String::from("# hookbench runs\n\n");
    let _ = writeln!(md, "| {} |", RUN_HEADER.join(" | "));
    let _ = writeln!(md, "|{}", "---|".repeat(RUN_HEADER.len()));
    for line in &lines {
        let name = &line[0];
        let cells: Vec<String> = line[1..].iter().map(|c| escape::text(c)).collect();
        let (shown, link) = (escape::text(name), escape::path_segment(name));
        let _ = writeln!(md, "| [{shown}]({link}/report.md) | {} |", cells.join(" | "));
    }
    crate::files::write_nofollow(&dir.join("index.md"), md.as_bytes())?;

    let body = maud::html! {
        p {
            "Each trend holds only runs made with the same parameters (events, rate, chaos, poison, "
            "experiments); a run is labelled by the day it started and its commit."
        }
        (trends_html(&runs))
        h2 { "Runs" }
        table {
            tr { @for h in RUN_HEADER { th { (h) } } }
            @for line in &lines {
                tr {
                    td { a href=(format!("{}/report.html", escape::path_segment(&line[0]))) { (line[0]) } }
                    @for c in &line[1..] { td { (c) } }
                }
            }
        }
    };
    let html = page::page("hookbench runs", body);
    crate::files::write_nofollow(&dir.join("index.html"), html.as_bytes())?;
    Ok(runs.len())
}

/// What changed between two runs.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// One line per cell and figure that changed.
    pub changes: Vec<String>,
    /// The changes that are regressions (a correctness figure worse, p99 past the threshold, a
    /// cell that ran before and no longer does).
    pub regressions: Vec<String>,
}

/// Compares run `b` with run `a`. A correctness figure that grew is a regression (any growth from
/// zero; from a non-zero value, growth beyond `tolerance` as a fraction: 0 counts every increase);
/// p99 growing by more than `p99_threshold` (0.5 = +50 %) is one too.
pub fn compare(a: &Report, b: &Report, p99_threshold: f64, tolerance: f64) -> Comparison {
    let mut c = compare_bodies(a, b, p99_threshold, tolerance);
    if let Some(line) = meaning_changed(a.header.schema, b.header.schema) {
        c.changes.insert(0, line);
    }
    c
}

/// What changed meaning between a report of schema `a` and one of schema `b`, if anything did:
/// one sentence for each change between the two.
fn meaning_changed(a: u32, b: u32) -> Option<String> {
    let (older, lower, higher) = if a < b { ("first", a, b) } else { ("second", b, a) };
    let crossed = |to: u32| lower < to && higher >= to;
    let mut said = Vec::new();
    if crossed(2) {
        said.push(
            "schema 1's `timeouts` counted the lost acks (answers dropped on purpose) too, and its \
             latencies from the actual send counted attempts no answer came to; schema 2 counts lost \
             acks apart as `acks_lost` and times answers only: compare its timeouts with the other's \
             timeouts plus acks_lost",
        );
    }
    if crossed(3) {
        said.push(
            "before schema 3, `connect_errors` counted connections that broke before an answer too; \
             schema 3 counts those apart as `resets`: compare its connect_errors with the other's \
             connect_errors plus resets",
        );
    }
    (!said.is_empty()).then(|| {
        format!("the {older} run's report is of schema {lower}, the other's {higher}: {}", said.join("; "))
    })
}

fn compare_bodies(a: &Report, b: &Report, p99_threshold: f64, tolerance: f64) -> Comparison {
    match (&a.body, &b.body) {
        (RunBody::Bench(a), RunBody::Bench(b)) => compare_benches(a, b, p99_threshold, tolerance),
        (RunBody::Audit { audit: a }, RunBody::Audit { audit: b }) => compare_audits(a, b),
        _ => Comparison {
            changes: Vec::new(),
            regressions: vec!["one run is a bench and the other an audit: they cannot be compared".into()],
        },
    }
}

/// A check that passed in `a` and does not in `b` is a regression; one that passed and now warns
/// (an advisory finding) is a change.
fn compare_audits(a: &super::AuditSection, b: &super::AuditSection) -> Comparison {
    let mut c = Comparison::default();
    for old in &a.checks {
        let new = b.checks.iter().find(|n| n.check == old.check).map(|n| n.status);
        if new != Some(old.status) {
            let name = new.map_or("not run", |s| s.as_str());
            let line = format!("{}: {} -> {name}", old.check.as_str(), old.status.as_str());
            if old.status == super::Status::Pass && new != Some(super::Status::Warn) {
                c.regressions.push(line.clone());
            }
            c.changes.push(line);
        }
    }
    c
}

fn compare_benches(a: &BenchBody, b: &BenchBody, p99_threshold: f64, tolerance: f64) -> Comparison {
    let mut c = Comparison::default();
    for old in &a.rows {
        let cell = format!("{} {}", old.column(), old.design);
        let Some(new) = b.rows.iter().find(|r| r.column() == old.column() && r.design == old.design) else {
            c.regressions.push(format!("{cell}: ran in the first run, not in the second"));
            continue;
        };
        let (o, n) = (&old.figures, &new.figures);
        let figures = [
            ("dup_events", o.dup_events as i64, n.dup_events as i64),
            ("extra_applies", o.extra_applies as i64, n.extra_applies as i64),
            ("lost", o.lost as i64, n.lost as i64),
            ("never_applied", o.never_applied as i64, n.never_applied as i64),
            ("stale_writes", o.stale_writes as i64, n.stale_writes as i64),
            ("stale_accounts", o.stale_accounts as i64, n.stale_accounts as i64),
            ("ledger - expected", (o.ledger - o.expected).abs(), (n.ledger - n.expected).abs()),
        ];
        for (name, before, after) in figures {
            if after != before {
                let line = format!("{cell}: {name} {before} -> {after}");
                let growth = (after - before) as f64 / before.max(1) as f64;
                if after > before && (before == 0 || growth > tolerance) {
                    c.regressions.push(line.clone());
                }
                c.changes.push(line);
            }
        }
        let (p_old, p_new) = (old.latency_us.p99, new.latency_us.p99);
        if p_old != p_new {
            let growth = (p_new as f64 - p_old as f64) / (p_old.max(1) as f64);
            let line = format!(
                "{cell}: p99 {:.1} ms -> {:.1} ms ({:+.0} %)",
                p_old as f64 / 1000.0,
                p_new as f64 / 1000.0,
                growth * 100.0
            );
            if growth > p99_threshold {
                c.regressions.push(line.clone());
            }
            c.changes.push(line);
        }
    }
    for new in &b.rows {
        if !a.rows.iter().any(|r| r.column() == new.column() && r.design == new.design) {
            c.changes.push(format!("{} {}: new in the second run", new.column(), new.design));
        }
    }
    // The experiments are deterministic: any event the crash test newly loses is a regression,
    // and so is a retention figure that leaves the model's.
    for new in &b.experiments.crash {
        let old = a.experiments.crash.iter().find(|r| r.backend == new.backend && r.design == new.design);
        if let Some(old) = old
            && old.lost != new.lost
        {
            let line = format!("crash {} {}: lost {} -> {}", new.backend, new.design, old.lost, new.lost);
            if new.lost > old.lost {
                c.regressions.push(line.clone());
            }
            c.changes.push(line);
        }
    }
    for run in &b.experiments.retention {
        for r in run.rows.iter().filter(|r| r.duplicate_applies != r.model) {
            c.regressions.push(format!(
                "retention {} {} {}: {} duplicate applies where the model has {}",
                run.backend, r.schedule, r.ttl, r.duplicate_applies, r.model
            ));
        }
    }
    c.regressions.extend(b.experiments.errors.iter().map(|e| format!("experiment could not run: {e}")));
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_across_the_timeouts_change_says_so_and_one_within_a_schema_does_not() {
        let old_then_new = meaning_changed(1, 2).expect("a change of meaning");
        assert!(old_then_new.starts_with("the first run's report is of schema 1"), "{old_then_new}");
        assert!(meaning_changed(2, 1).expect("either way").starts_with("the second run's"));
        assert_eq!(meaning_changed(1, 1), None);
        assert_eq!(meaning_changed(2, 2), None);
        assert_eq!(meaning_changed(3, 3), None);
    }

    #[test]
    fn a_comparison_says_each_change_of_meaning_it_crosses_and_only_those() {
        let resets = meaning_changed(3, 2).expect("resets apart");
        assert!(resets.starts_with("the second run's report is of schema 2, the other's 3"), "{resets}");
        assert!(resets.contains("`resets`") && !resets.contains("acks_lost"), "{resets}");
        let both = meaning_changed(1, 3).expect("both changes");
        assert!(both.contains("acks_lost") && both.contains("`resets`"), "{both}");
        let lost_acks = meaning_changed(1, 2).expect("lost acks apart");
        assert!(!lost_acks.contains("`resets`"), "{lost_acks}");
    }

    #[test]
    fn a_report_without_a_schema_reads_as_schema_1_and_a_new_one_is_the_current() {
        let json = serde_json::json!({"kind":"audit","run_id":"a","started_at":"2026-12-01T10:00:00Z",
            "git_sha":null,"versions":{"hookbench":"0.1.0","postgres":null,"sqlite":null,"postgres_origin":null},
            "machine":{"cpu":"c","cores":2,"memory_bytes":null,"os":"linux","arch":"x86_64"},
            "audit":{"url":"http://x/","signing":"standard-webhooks","provider":null,"payload":"hookbench",
                "observers":[],"id_prefix":"a_","account_base":0,
                "parameters":{"seed":1,"events":10,"accounts":5,"p_credit":1.0,"rate":10.0,"concurrency":2,
                    "timeout":"1s","retry":{"base":"10ms","cap":"1s","max_attempts":3},"p_duplicate":0.0,
                    "p_ack_lost":0.0,"p_concurrent":0.0,"p_shuffle":0.0},
                "checks":[],"wall_s":1.0}});
        let old: Report = serde_json::from_value(json).expect("an old report");
        assert_eq!(old.header.schema, 1);
        assert_eq!(crate::report::model::Header::new("b".into()).schema, crate::report::model::SCHEMA);
    }
}
