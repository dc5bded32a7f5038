//! History across runs: `reports/index.md` and `reports/index.html` (a row per run and trend
//! charts of each cell's duplicate applies, stale accounts and p99 latency), and the comparison of
//! two runs that CI gates on.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::{Report, page};

/// Every run under `dir` (a folder per run holding report.json), oldest first.
pub fn load_runs(dir: &Path) -> std::io::Result<Vec<(PathBuf, Report)>> {
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let json = path.join("report.json");
        if json.is_file() {
            match Report::read_json(&json) {
                Ok(r) => runs.push((path, r)),
                Err(e) => eprintln!("hookbench: skipping {}: {e}", json.display()),
            }
        }
    }
    runs.sort_by(|a, b| a.1.started_at.cmp(&b.1.started_at).then_with(|| a.0.cmp(&b.0)));
    Ok(runs)
}

type Metric = fn(&super::Row) -> f64;

/// The trend charts of the index, by id, title, axis label and metric.
pub fn trend_charts() -> [(&'static str, &'static str, &'static str, Metric); 3] {
    [
        ("trend-duplicates", "Duplicate applies per run and cell", "extra applies (count)", |r| {
            r.figures.extra_applies as f64
        }),
        ("trend-stale", "Stale accounts per run and cell", "stale accounts (count)", |r| {
            r.figures.stale_accounts as f64
        }),
        ("trend-p99", "p99 latency per run and cell", "p99 latency (ms)", |r| {
            r.latency_us.p99 as f64 / 1000.0
        }),
    ]
}

fn trend_svg(
    runs: &[(PathBuf, Report)],
    title: &str,
    y_desc: &str,
    metric: Metric,
) -> Result<String, Box<dyn std::error::Error>> {
    let mut cells: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (i, (_, r)) in runs.iter().enumerate() {
        for row in &r.rows {
            let key = format!("{} {}", row.backend, row.design);
            let point = (i as f64, metric(row));
            match cells.iter_mut().find(|(k, _)| *k == key) {
                Some((_, pts)) => pts.push(point),
                None => cells.push((key, vec![point])),
            }
        }
    }
    let top = cells.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).fold(1.0, f64::max) * 1.15;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 460)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = super::html::frame(&root, title)
            .build_cartesian_2d(-0.3f64..(runs.len().max(2) as f64 - 0.7), 0f64..top)?;
        chart
            .configure_mesh()
            .x_desc("run (oldest to newest)")
            .y_desc(y_desc)
            .x_labels(runs.len().clamp(2, 12))
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 0.01 {
                    format!("#{}", x.round() as i64 + 1)
                } else {
                    String::new()
                }
            })
            .draw()?;
        for (k, (name, points)) in cells.into_iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            super::html::line_with_dots(&mut chart, points, color, &name)?;
        }
        super::html::legend(&mut chart, SeriesLabelPosition::UpperLeft, 11)?;
        root.present()?;
    }
    Ok(svg)
}

fn run_line(path: &Path, r: &Report) -> [String; 8] {
    let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let dups: u64 = r.rows.iter().map(|x| x.figures.extra_applies).sum();
    let lost: u64 = r.rows.iter().map(|x| x.figures.lost).sum();
    let worst_p99 = r.rows.iter().map(|x| x.latency_us.p99).max().unwrap_or(0);
    [
        name,
        r.started_at.clone(),
        r.git_sha.clone().unwrap_or_else(|| "-".into()),
        r.parameters.events.to_string(),
        format!("{}/{}", r.rows.len(), r.rows.len() + r.skipped.len() + r.broken.len()),
        dups.to_string(),
        lost.to_string(),
        format!("{:.1}", worst_p99 as f64 / 1000.0),
    ]
}

const RUN_HEADER: [&str; 8] = [
    "run",
    "started",
    "commit",
    "events",
    "cells run",
    "extra applies (all cells)",
    "lost (all cells)",
    "worst p99 ms",
];

/// Rebuilds `dir/index.md` and `dir/index.html` from every run under `dir`; returns the run count.
pub fn rebuild_index(dir: &Path) -> std::io::Result<usize> {
    let runs = load_runs(dir)?;
    let mut md = String::from("# hookbench runs\n\n");
    let _ = writeln!(md, "| {} |", RUN_HEADER.join(" | "));
    let _ = writeln!(md, "|{}", "---|".repeat(RUN_HEADER.len()));
    for (path, r) in runs.iter().rev() {
        let line = run_line(path, r);
        let name = &line[0];
        let _ = writeln!(md, "| [{name}]({name}/report.md) | {} |", line[1..].join(" | "));
    }
    std::fs::write(dir.join("index.md"), &md)?;

    let mut figures = Vec::new();
    for (id, title, y, metric) in trend_charts() {
        figures.push(match trend_svg(&runs, title, y, metric) {
            Ok(svg) => page::figure(id, title, &svg),
            Err(e) => page::note(&format!("{title}: not drawn ({e})")),
        });
    }
    let lines: Vec<_> = runs.iter().rev().map(|(path, r)| run_line(path, r)).collect();
    let body = maud::html! {
        @for f in &figures { (f) }
        table {
            tr { @for h in RUN_HEADER { th { (h) } } }
            @for line in &lines {
                tr {
                    td { a href=(format!("{}/report.html", line[0])) { (line[0]) } }
                    @for c in &line[1..] { td { (c) } }
                }
            }
        }
    };
    let html = page::page("hookbench runs", body);
    std::fs::write(dir.join("index.html"), html)?;
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
    let mut c = Comparison::default();
    for old in &a.rows {
        let cell = format!("{} {}", old.backend, old.design);
        let Some(new) = b.rows.iter().find(|r| r.backend == old.backend && r.design == old.design) else {
            c.regressions.push(format!("{cell}: ran in the first run, not in the second"));
            continue;
        };
        let (o, n) = (&old.figures, &new.figures);
        let figures = [
            ("dup_events", o.dup_events as i64, n.dup_events as i64),
            ("extra_applies", o.extra_applies as i64, n.extra_applies as i64),
            ("lost", o.lost as i64, n.lost as i64),
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
        if !a.rows.iter().any(|r| r.backend == new.backend && r.design == new.design) {
            c.changes.push(format!("{} {}: new in the second run", new.backend, new.design));
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
