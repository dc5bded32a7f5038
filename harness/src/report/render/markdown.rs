//! report.md: the article-style tables, model and real side by side for each design, Postgres and
//! SQLite side by side; the latency table; the run's parameters, versions and machine. Every
//! value from the run goes in through [`super::escape`]: as text or a code span, never markup.

use std::fmt::Write;

use super::escape::{cell_code, code, text};
use super::verdict_grid::witnesses_heading;
use super::{BenchBody, Header, Report, RunBody};

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
        let by: Vec<String> = o.breached.iter().map(|(row, v)| format!("{} ({v})", text(row))).collect();
        let by = if by.is_empty() { "none".to_string() } else { by.join(", ") };
        let _ = writeln!(md, "| {} | {} | {by} |", cell_code(&o.threshold), o.rows);
    }
    md.push('\n');
    md
}

/// The shards a merged report was made from (nothing for a run that was not sharded).
pub(super) fn shards_section(merged: Option<&super::Merged>) -> String {
    let Some(m) = merged else { return String::new() };
    let start = m
        .start_at
        .as_deref()
        .map_or_else(|| "each on its own clock".to_string(), |t| format!("from {}", text(t)));
    let mut md = format!(
        "## Shards\n\nMerged from {} shards (`hookbench merge`), sending {start}: their latency histograms \
         added count by count, their counters summed, the judge run once (the observers asked once), when all were done.\n\n\
         | shard | groups | attempts | seconds | started late, s |\n|---|---:|---:|---:|---:|\n",
        m.count
    );
    for s in &m.shards {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1} | {:.3} |",
            text(&s.shard.to_string()),
            s.groups,
            s.deliveries,
            s.elapsed_s,
            s.late_by_s
        );
    }
    md.push('\n');
    md
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
        let _ = writeln!(md, "\n### {}\n", text(&witnesses_heading(&c.cell)));
        for w in &c.witnesses {
            let _ = writeln!(md, "- {} {}: {}", text(&w.class), code(&w.id), text(&w.problem));
            for a in &w.attempts {
                let status = a.status.map_or("-".to_string(), |s| s.to_string());
                let why = a.detail.as_deref().map_or(String::new(), |d| format!(" ({})", text(d)));
                let _ = writeln!(
                    md,
                    "  - {} attempt {}: sent {:.1}, answered {:.1}, worker {}, connection {}: {status} {}{why}",
                    code(&a.event),
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

/// The level each backend's cells ran at, `postgres read-committed, sqlite serialized`, from the
/// rows; `None` when no row names one (a report from before rows carried it, or `--targets`).
fn isolation_by_backend(b: &BenchBody) -> Option<String> {
    let mut said: Vec<String> = Vec::new();
    for r in &b.rows {
        let Some(level) = &r.isolation else { continue };
        let named = format!("{} {level}", r.backend);
        if !said.contains(&named) {
            said.push(named);
        }
    }
    (!said.is_empty()).then(|| said.join(", "))
}

/// Renders report.md.
pub fn render_markdown(report: &Report) -> String {
    match &report.body {
        RunBody::Bench(b) => bench_markdown(&report.header, b),
        RunBody::Audit { audit } => super::audit_markdown(&report.header, audit),
    }
}

fn bench_markdown(header: &Header, b: &BenchBody) -> String {
    let mut md = String::new();
    let p = &b.parameters;
    let _ = writeln!(md, "# hookbench run {}\n", text(&header.run_id));
    let rate = p.rate.map_or_else(|| "unlimited".to_string(), |r| format!("{r} events/s"));
    let _ = writeln!(
        md,
        "{} events (seed {}), {} worker processes per cell, rate {rate}, {} in flight at most, work delay {}. \
         Real figures are the judge's, from what the database holds; model figures are the article's \
         simulation of the same workload (the inbox is compared with the version guard).\n",
        p.events,
        p.seed,
        p.workers,
        p.concurrency,
        text(&p.work_delay)
    );
    md.push_str(&super::verdict_grid::verdict_grid_markdown(b));
    md.push_str(&thresholds_section(&header.thresholds));
    md.push_str(&shards_section(header.shards.as_ref()));
    let backends = b.columns();
    let designs = b.designs();

    let _ = writeln!(md, "## Correctness: real (per backend) and model\n");
    let mut head = "| design | figure | model |".to_string();
    let mut rule = "|---|---|---:|".to_string();
    for k in &backends {
        let _ = write!(head, " {k} |");
        rule.push_str("---:|");
    }
    let _ = writeln!(md, "{head}\n{rule}");
    type Pick = fn(&crate::judge::Figures) -> String;
    let figures: [(&str, Pick); 8] = [
        ("dup events", |f| f.dup_events.to_string()),
        ("extra applies", |f| f.extra_applies.to_string()),
        ("lost", |f| f.lost.to_string()),
        ("never applied", |f| f.never_applied.to_string()),
        ("stale writes", |f| f.stale_writes.to_string()),
        ("stale accounts", |f| f.stale_accounts.to_string()),
        ("ledger", |f| f.ledger.to_string()),
        ("expected", |f| f.expected.to_string()),
    ];
    for d in &designs {
        for (i, (name, pick)) in figures.iter().enumerate() {
            let first = backends.iter().find_map(|k| b.row(*k, *d));
            let model =
                first.and_then(|r| r.model.as_ref()).map_or_else(|| "-".to_string(), |m| pick(&m.figures));
            let label = if i == 0 { format!("**{d}**") } else { String::new() };
            let mut line = format!("| {label} | {name} | {model} |");
            for k in &backends {
                let v = b.row(*k, *d).map_or_else(|| "-".to_string(), |r| pick(&r.figures));
                let _ = write!(line, " {v} |");
            }
            let _ = writeln!(md, "{line}");
        }
    }

    md.push_str(&witnesses_section(&b.witnesses));
    let _ = writeln!(md, "\n## Deliveries and latency\n");
    let _ = writeln!(
        md,
        "Latency is from each attempt's planned send time to its response (corrected for coordinated \
         omission), in milliseconds; the answer columns are each answered attempt's own time from its \
         send to its answer (timeouts, refused connections and resets are no answer).\n"
    );
    let _ = writeln!(
        md,
        "| backend | design | deliveries | 2xx | 4xx | 5xx | db conflicts | timeouts | acks lost | no connection | resets | retries | id conflicts | p50 | p90 | p99 | p99.9 | max | answer p50 | answer p99 | req/s | wall s |"
    );
    let _ = writeln!(
        md,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let behind = super::behind::behind_cells(b);
    for k in &backends {
        for d in &designs {
            if let Some(r) = b.row(*k, *d) {
                let l = &r.latency_us;
                let d = text(&super::behind::design_cell(&behind, *k, *d));
                let _ = writeln!(
                    md,
                    "| {k} | {d} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.1} |",
                    r.deliveries,
                    r.status_2xx,
                    r.status_4xx,
                    r.status_5xx,
                    super::older::cell(header, "db_conflicts", r.db_conflicts),
                    r.timeouts,
                    super::older::cell(header, "acks_lost", r.acks_lost),
                    r.connect_errors,
                    super::older::cell(header, "resets", r.resets),
                    r.retries,
                    r.id_conflicts,
                    ms(l.p50),
                    ms(l.p90),
                    ms(l.p99),
                    ms(l.p999),
                    ms(l.max),
                    super::older::answer_ms(header, r.latency_actual_us.p50),
                    super::older::answer_ms(header, r.latency_actual_us.p99),
                    r.throughput_per_s,
                    r.wall_s
                );
            }
        }
    }
    let note = super::behind::note(&behind);
    if let Some((head, cells)) = note.split_first() {
        let _ = writeln!(md, "\n{}\n", text(head));
        for cell in cells {
            let _ = writeln!(md, "- {}", text(cell.trim_start()));
        }
    }
    if let Some(older) = super::older::note(header) {
        let _ = writeln!(md, "\n{}", text(&older));
    }
    for (title, notes) in [("Skipped", &b.skipped), ("Broken", &b.broken)] {
        if !notes.is_empty() {
            let _ = writeln!(md, "\n## {title}\n");
            for n in notes.iter() {
                let _ = writeln!(md, "- {} {}: {}", n.column(), n.design, text(&n.reason));
            }
        }
    }

    md.push_str(&super::sections::markdown(&super::sections::sections(b)));

    let _ = writeln!(md, "\n## Run\n");
    let v = &header.versions;
    let m = &header.machine;
    let mem = m.memory_bytes.map_or_else(String::new, |b| format!(", {:.0} GB", b as f64 / 1e9));
    let lines = [
        ("started", header.started_at.clone()),
        ("commit", header.git_sha.clone().unwrap_or_else(|| "-".into())),
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
        ("isolation", isolation_by_backend(b).unwrap_or_else(|| p.isolation.clone())),
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
        let _ = writeln!(md, "| {k} | {} |", text(&v));
    }
    md
}
