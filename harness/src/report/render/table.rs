//! The article-style table, with latency columns and the model's figures beside the real ones.

use std::fmt::Write;

use super::{BenchBody, Report};
use crate::printable::line;

/// The table a reader of the article recognises: one block per backend.
pub fn render_table(report: &Report) -> String {
    let Some(b) = report.bench_body() else { return super::render_audit_table(report) };
    bench_table(report, b)
}

fn bench_table(report: &Report, b: &BenchBody) -> String {
    let mut out = String::new();
    let p = &b.parameters;
    let rate = p.rate.map_or_else(|| "unlimited".to_string(), |r| format!("{r}/s"));
    let _ = writeln!(
        out,
        "hookbench bench: {} events (seed {}), {} workers per cell, rate {rate}, concurrency {}, work delay {}",
        p.events,
        p.seed,
        p.workers,
        p.concurrency,
        line(&p.work_delay)
    );
    let behind = super::behind::behind_cells(b);
    for column in b.columns() {
        let backend = column.backend;
        let version = match backend {
            crate::matrix::Backend::Postgres => report.header.versions.postgres.clone(),
            crate::matrix::Backend::Sqlite => report.header.versions.sqlite.clone(),
            crate::matrix::Backend::Mysql => report.header.versions.mysql.clone(),
        };
        // The rows of one column share one level; a mixed set names none.
        let mut levels = b.rows.iter().filter(|r| r.column() == column).map(|r| r.isolation.as_deref());
        let first = levels.next().flatten();
        let isolation = match first {
            Some(level) if levels.all(|l| l == Some(level)) => format!(", isolation {}", line(level)),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "\n== {backend} {}{isolation} (real, judged from the database)",
            line(&version.unwrap_or_default())
        );
        let _ = writeln!(
            out,
            "{:<18}{:>11}{:>6}{:>10}{:>9}{:>10}{:>11}{:>14}{:>6}{:>7}{:>13}{:>12}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}{:>9}{:>9} | {:>10}{:>12}{:>14}{:>14}",
            "design",
            "deliveries",
            "5xx",
            "conflicts",
            "timeouts",
            "acks lost",
            "dup events",
            "extra applies",
            "lost",
            "never",
            "stale writes",
            "stale accts",
            "ledger",
            "expected",
            "plan p50",
            "plan p99",
            "plan max",
            "ans p50",
            "ans p99",
            "req/s",
            "model dup",
            "model extra",
            "model stale w",
            "model stale a"
        );
        for r in b.rows.iter().filter(|r| r.column() == column) {
            let ms = |us: u64| format!("{:.1}", us as f64 / 1000.0);
            let (md, me, mw, ma) = r.model.as_ref().map_or_else(
                || ("-".to_string(), "-".to_string(), "-".to_string(), "-".to_string()),
                |m| {
                    (
                        m.figures.dup_events.to_string(),
                        m.figures.extra_applies.to_string(),
                        m.figures.stale_writes.to_string(),
                        m.figures.stale_accounts.to_string(),
                    )
                },
            );
            let _ = writeln!(
                out,
                "{:<18}{:>11}{:>6}{:>10}{:>9}{:>10}{:>11}{:>14}{:>6}{:>7}{:>13}{:>12}{:>10}{:>10}{:>10}{:>10}{:>10}{:>9}{:>9}{:>9.0} | {:>10}{:>12}{:>14}{:>14}",
                super::behind::design_cell(&behind, column, r.design),
                r.deliveries,
                r.status_5xx,
                super::older::cell(&report.header, "db_conflicts", r.db_conflicts),
                r.timeouts,
                super::older::cell(&report.header, "acks_lost", r.acks_lost),
                r.figures.dup_events,
                r.figures.extra_applies,
                r.figures.lost,
                r.figures.never_applied,
                r.figures.stale_writes,
                r.figures.stale_accounts,
                r.figures.ledger,
                r.figures.expected,
                ms(r.latency_us.p50),
                ms(r.latency_us.p99),
                ms(r.latency_us.max),
                super::older::answer_ms(&report.header, r.latency_actual_us.p50),
                super::older::answer_ms(&report.header, r.latency_actual_us.p99),
                r.throughput_per_s,
                md,
                me,
                mw,
                ma
            );
        }
    }
    let _ = writeln!(
        out,
        "\nplan: latency from each attempt's planned send (a backlog's wait included); ans: each answered \
         attempt's own time from its send to its answer"
    );
    for line in super::behind::note(&behind).into_iter().chain(super::older::note(&report.header)) {
        let _ = writeln!(out, "{line}");
    }
    out.push_str(&super::sections::text(&super::sections::sections(b)));
    for note in &b.skipped {
        let _ = writeln!(out, "skipped {} {}: {}", note.column(), note.design, line(&note.reason));
    }
    for note in &b.broken {
        let _ = writeln!(out, "BROKEN {} {}: {}", note.column(), note.design, line(&note.reason));
    }
    out
}
