//! report.md: the article-style tables, model and real side by side for each design, Postgres and
//! SQLite side by side; the latency table; the run's parameters, versions and machine.

use std::fmt::Write;

use receivers::design::Design;
use receivers::store::Backend;

use super::{Report, Row};

/// The row of a cell, when it ran.
pub(super) fn row(report: &Report, backend: Backend, design: Design) -> Option<&Row> {
    report.rows.iter().find(|r| r.backend == backend && r.design == design)
}

/// The designs that have a row, in docs/design.md's order.
pub(super) fn designs(report: &Report) -> Vec<Design> {
    Design::ALL.into_iter().filter(|d| report.rows.iter().any(|r| r.design == *d)).collect()
}

/// The backends that have a row, Postgres first.
pub(super) fn backends(report: &Report) -> Vec<Backend> {
    Backend::ALL.into_iter().filter(|b| report.rows.iter().any(|r| r.backend == *b)).collect()
}

fn ms(us: u64) -> String {
    format!("{:.1}", us as f64 / 1000.0)
}

/// The `--fail-on` thresholds, each with the rows that breached it (nothing without thresholds).
pub(super) fn thresholds_section(outcomes: &[crate::threshold::Outcome]) -> String {
    if outcomes.is_empty() {
        return String::new();
    }
    let mut md = String::from("## Thresholds\n\n| threshold | rows | breached by |\n|---|---:|---|\n");
    for o in outcomes {
        let by: Vec<String> = o.breached.iter().map(|(row, v)| format!("{row} ({v})")).collect();
        let by = if by.is_empty() { "none".to_string() } else { by.join(", ") };
        let _ = writeln!(md, "| `{}` | {} | {by} |", o.threshold.replace('|', "\\|"), o.rows);
    }
    md.push('\n');
    md
}

/// The shards a merged report was made from (nothing for a run that was not sharded).
pub(super) fn shards_section(merged: Option<&crate::shard::Merged>) -> String {
    let Some(m) = merged else { return String::new() };
    let start =
        m.start_at.as_deref().map_or_else(|| "each on its own clock".to_string(), |t| format!("from {t}"));
    let mut md = format!(
        "## Shards\n\nMerged from {} shards (`hookbench merge`), sending {start}: their latency histograms \
         added count by count, their counters summed, the checker (or the audit's observers) asked once, when all were done.\n\n\
         | shard | groups | attempts | seconds | started late, s |\n|---|---:|---:|---:|---:|\n",
        m.count
    );
    for s in &m.shards {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1} | {:.3} |",
            s.shard, s.groups, s.deliveries, s.elapsed_s, s.late_by_s
        );
    }
    md.push('\n');
    md
}

/// The heading of a cell's witnesses (the verdict grid links to it).
pub(super) fn witnesses_heading(cell: &str) -> String {
    format!("Witnesses in {cell}")
}

/// Each cell's witnesses, under its name, each with its timeline (nothing without witnesses).
fn witnesses_section(cells: &[crate::explain::CellWitnesses]) -> String {
    if cells.iter().all(|c| c.witnesses.is_empty()) {
        return String::new();
    }
    let mut md = String::from(
        "\n## Witnesses\n\nThe first events of each anomaly in each cell, from the run's history \
         (`hookbench explain RUN_DIR --anomaly CLASS` lists more; times in ms from the cell's first send).\n",
    );
    for c in cells.iter().filter(|c| !c.witnesses.is_empty()) {
        let _ = writeln!(md, "\n### {}\n", witnesses_heading(&c.cell));
        for w in &c.witnesses {
            let _ = writeln!(md, "- {} `{}`: {}", w.class, w.id, w.problem.replace('|', "\\|"));
            for a in &w.attempts {
                let status = a.status.map_or("-".to_string(), |s| s.to_string());
                let why = a.detail.as_deref().map_or(String::new(), |d| format!(" ({d})"));
                let _ = writeln!(
                    md,
                    "  - `{}` attempt {}: sent {:.1}, answered {:.1}, worker {}, connection {}: {status} {}{why}",
                    a.event,
                    a.attempt,
                    a.sent_ms,
                    a.answered_ms,
                    a.worker,
                    a.connection,
                    a.outcome.as_str()
                );
            }
        }
    }
    md
}

/// Renders report.md.
pub fn render_markdown(report: &Report) -> String {
    if report.audit.is_some() {
        return super::audit_markdown(report);
    }
    let mut md = String::new();
    let p = &report.parameters;
    let _ = writeln!(md, "# hookbench run {}\n", report.run_id);
    let rate = p.rate.map_or_else(|| "unlimited".to_string(), |r| format!("{r} events/s"));
    let _ = writeln!(
        md,
        "{} events (seed {}), {} worker processes per cell, rate {rate}, {} in flight at most, work delay {}. \
         Real figures are counted by the checker from the database; model figures are the article's \
         simulation of the same workload (the inbox is compared with the version guard).\n",
        p.events, p.seed, p.workers, p.concurrency, p.work_delay
    );
    md.push_str(&super::verdict_grid::verdict_grid_markdown(report));
    md.push_str(&thresholds_section(&report.thresholds));
    md.push_str(&shards_section(report.shards.as_ref()));
    let backends = backends(report);
    let designs = designs(report);

    let _ = writeln!(md, "## Correctness: real (per backend) and model\n");
    let mut header = "| design | figure | model |".to_string();
    let mut rule = "|---|---|---:|".to_string();
    for b in &backends {
        let _ = write!(header, " {b} |");
        rule.push_str("---:|");
    }
    let _ = writeln!(md, "{header}\n{rule}");
    type Pick = fn(&crate::checker::Figures) -> String;
    let figures: [(&str, Pick); 7] = [
        ("dup events", |f| f.dup_events.to_string()),
        ("extra applies", |f| f.extra_applies.to_string()),
        ("lost", |f| f.lost.to_string()),
        ("stale writes", |f| f.stale_writes.to_string()),
        ("stale accounts", |f| f.stale_accounts.to_string()),
        ("ledger", |f| f.ledger.to_string()),
        ("expected", |f| f.expected.to_string()),
    ];
    for d in &designs {
        for (i, (name, pick)) in figures.iter().enumerate() {
            let first = backends.iter().find_map(|b| row(report, *b, *d));
            let model =
                first.and_then(|r| r.model.as_ref()).map_or_else(|| "-".to_string(), |m| pick(&m.figures));
            let label = if i == 0 { format!("**{d}**") } else { String::new() };
            let mut line = format!("| {label} | {name} | {model} |");
            for b in &backends {
                let v = row(report, *b, *d).map_or_else(|| "-".to_string(), |r| pick(&r.figures));
                let _ = write!(line, " {v} |");
            }
            let _ = writeln!(md, "{line}");
        }
    }

    md.push_str(&witnesses_section(&report.witnesses));
    let _ = writeln!(md, "\n## Deliveries and latency\n");
    let _ = writeln!(
        md,
        "Latency is from each attempt's planned send time to its response (corrected for coordinated \
         omission), in milliseconds.\n"
    );
    let _ = writeln!(
        md,
        "| backend | design | deliveries | 2xx | 4xx | 5xx | timeouts | retries | id conflicts | p50 | p90 | p99 | p99.9 | max | req/s | wall s |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for b in &backends {
        for d in &designs {
            if let Some(r) = row(report, *b, *d) {
                let l = &r.latency_us;
                let _ = writeln!(
                    md,
                    "| {b} | {d} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.1} |",
                    r.deliveries,
                    r.status_2xx,
                    r.status_4xx,
                    r.status_5xx,
                    r.timeouts,
                    r.retries,
                    r.id_conflicts,
                    ms(l.p50),
                    ms(l.p90),
                    ms(l.p99),
                    ms(l.p999),
                    ms(l.max),
                    r.throughput_per_s,
                    r.wall_s
                );
            }
        }
    }
    for (title, notes) in [("Skipped", &report.skipped), ("Broken", &report.broken)] {
        if !notes.is_empty() {
            let _ = writeln!(md, "\n## {title}\n");
            for n in notes.iter() {
                let _ = writeln!(md, "- {} {}: {}", n.backend, n.design, n.reason);
            }
        }
    }

    md.push_str(&super::sections::markdown(&super::sections::sections(report)));

    let _ = writeln!(md, "\n## Run\n");
    let v = &report.versions;
    let m = &report.machine;
    let mem = m.memory_bytes.map_or_else(String::new, |b| format!(", {:.0} GB", b as f64 / 1e9));
    let lines = [
        ("started", report.started_at.clone()),
        ("commit", report.git_sha.clone().unwrap_or_else(|| "-".into())),
        ("hookbench", v.hookbench.clone()),
        ("Postgres", v.postgres.clone().unwrap_or_else(|| "-".into())),
        ("Postgres from", v.postgres_origin.clone().unwrap_or_else(|| "-".into())),
        ("SQLite", v.sqlite.clone().unwrap_or_else(|| "-".into())),
        ("machine", format!("{} ({} cores{mem}), {} {}", m.cpu, m.cores, m.os, m.arch)),
        ("seed", p.seed.to_string()),
        ("events", p.events.to_string()),
        ("workers", p.workers.to_string()),
        ("concurrency", p.concurrency.to_string()),
        ("rate", rate),
        ("work delay", p.work_delay.clone()),
        ("timeout", p.timeout.clone()),
        (
            "retries",
            format!(
                "base {}, cap {}, {} attempts",
                humantime::format_duration(p.retry.base),
                humantime::format_duration(p.retry.cap),
                p.retry.max_attempts
            ),
        ),
        ("isolation", p.isolation.clone()),
        (
            "chaos",
            if p.chaos.is_empty() {
                "none".into()
            } else {
                p.chaos.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            },
        ),
        ("poison", p.poison.to_string()),
        (
            "fault chances",
            format!(
                "duplicate {}, ack lost {}, concurrent {}, shuffle {}",
                p.p_duplicate, p.p_ack_lost, p.p_concurrent, p.p_shuffle
            ),
        ),
    ];
    let _ = writeln!(md, "| | |\n|---|---|");
    for (k, v) in lines {
        let _ = writeln!(md, "| {k} | {v} |");
    }
    md
}
