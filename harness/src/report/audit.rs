//! An audit's report: the verdict table (terminal and Markdown) and the witnesses under each
//! failing check. report.html is this Markdown as a page.

use std::fmt::Write;

use super::{Parameters, Report};
use crate::audit::AuditConfig;
use crate::audit::verdict::{AuditSection, Status, Witness};

impl Report {
    /// The report of an audit: its parameters (the load's), versions, machine and the audit section.
    pub fn of_audit(run_id: String, config: &AuditConfig, audit: AuditSection) -> Self {
        Self { audit: Some(audit), ..Self::new(run_id, audit_parameters(config)) }
    }
}

/// An audit's parameters as a report keeps them (its load's).
pub fn audit_parameters(config: &AuditConfig) -> Parameters {
    let w = &config.workload;
    Parameters {
        seed: w.seed,
        events: w.events,
        workers: 0,
        concurrency: config.concurrency,
        rate: Some(config.rate),
        work_delay: String::new(),
        timeout: humantime::format_duration(config.timeout).to_string(),
        retry: config.retry,
        isolation: String::new(),
        inbox_workers: 0,
        p_duplicate: w.p_duplicate,
        p_ack_lost: w.p_ack_lost,
        p_concurrent: w.p_concurrent,
        p_shuffle: w.p_shuffle,
        chaos: Vec::new(),
        poison: 0.0,
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The verdict table: one line per check, then the load's figures.
pub fn render_audit_table(report: &Report) -> String {
    let Some(a) = &report.audit else { return String::new() };
    let mut out = String::new();
    let width = a.checks.iter().map(|c| c.check.as_str().len()).max().unwrap_or(5);
    let _ = writeln!(
        out,
        "audit of {} ({} signatures, {} payload; {:.1} s)",
        a.url, a.signing, a.payload, a.wall_s
    );
    let _ = writeln!(out, "{:<width$}  {:<7}  evidence", "check", "verdict");
    for c in &a.checks {
        let _ = writeln!(out, "{:<width$}  {:<7}  {}", c.check.as_str(), c.status.as_str(), c.evidence);
        for w in &c.witnesses {
            let _ = writeln!(out, "{:<width$}    witness {}: {}; {}", "", w.id, w.problem, w.observed);
        }
    }
    out
}

fn witness_md(md: &mut String, w: &Witness) {
    let _ = writeln!(md, "- `{}`: {} ({})", w.id, cell(&w.problem), cell(&w.observed));
    for a in &w.attempts {
        let note = if a.note.is_empty() { String::new() } else { format!(", {}", a.note) };
        let on = if a.connection.is_empty() { String::new() } else { format!(" on {}", a.connection) };
        let _ = writeln!(md, "  - at {:.1} ms: {}{on}{note}", a.at_ms, cell(&a.outcome));
    }
}

/// The audit's Markdown: the verdicts, the witnesses of each failure, the load's figures.
pub fn audit_markdown(report: &Report) -> String {
    let Some(a) = &report.audit else { return String::new() };
    let mut md = String::new();
    let _ = writeln!(md, "# hookbench audit {}\n", report.run_id);
    let _ = writeln!(
        md,
        "Receiver `{}`, {} signatures, {} payload, observed through {}. Ids start with `{}`; accounts \
         from {}. Wall time {:.1} s.\n",
        a.url,
        a.signing,
        a.payload,
        if a.observers.is_empty() { "nothing".to_string() } else { a.observers.join(", ") },
        a.id_prefix,
        a.account_base,
        a.wall_s
    );
    let _ = writeln!(md, "| check | verdict | evidence |\n|---|---|---|");
    for c in &a.checks {
        let _ = writeln!(md, "| {} | {} | {} |", c.check.as_str(), c.status.as_str(), cell(&c.evidence));
    }
    let _ = writeln!(md);
    md.push_str(&super::markdown::thresholds_section(&report.thresholds));
    md.push_str(&super::markdown::shards_section(report.shards.as_ref()));
    for c in a.checks.iter().filter(|c| c.status == Status::Fail) {
        let _ = writeln!(md, "\n## {}: witnesses\n", c.check.as_str());
        for w in &c.witnesses {
            witness_md(&mut md, w);
        }
    }
    if let Some(l) = &a.load {
        let _ = writeln!(md, "\n## Parallel load\n");
        let _ = writeln!(md, "| figure | value |\n|---|---:|");
        let stale = l.stale_accounts.map_or("not observed".to_string(), |s| s.to_string());
        for (name, value) in [
            ("events", l.events.to_string()),
            ("deliveries", l.deliveries.to_string()),
            (
                "2xx / 4xx / 5xx / timeouts",
                format!("{} / {} / {} / {}", l.status_2xx, l.status_4xx, l.status_5xx, l.timeouts),
            ),
            ("dup events", l.dup_events.to_string()),
            ("extra applies", l.extra_applies.to_string()),
            ("lost (acknowledged, never applied)", l.lost.to_string()),
            ("stale accounts", stale),
            ("refused and applied", l.refused_applied.to_string()),
            ("gave up", l.gave_up.to_string()),
            (
                "p50 / p99 / max ms (intended)",
                format!(
                    "{:.1} / {:.1} / {:.1}",
                    l.latency_us.p50 as f64 / 1e3,
                    l.latency_us.p99 as f64 / 1e3,
                    l.latency_us.max as f64 / 1e3
                ),
            ),
            ("attempts per second", format!("{:.0}", l.throughput_per_s)),
        ] {
            let _ = writeln!(md, "| {name} | {value} |");
        }
    }
    faults_markdown(&mut md, a);
    let _ = writeln!(md, "\nMachine: {}.", report.machine.summary());
    md
}

/// The crash, poison, capacity and retry-storm figures.
fn faults_markdown(md: &mut String, a: &AuditSection) {
    if let Some(c) = &a.crash {
        let _ = writeln!(md, "\n## Crash\n\n| kill | at (ms) | back after (ms) |\n|---:|---:|---:|");
        for (k, r) in c.restarts.iter().enumerate() {
            let _ = writeln!(md, "| {} | {:.0} | {:.0} |", k + 1, r.killed_at_ms, r.took_ms);
        }
        let l = &c.load;
        let _ = writeln!(
            md,
            "\n{} events, {} deliveries: {} dup events, {} lost, {} never applied, {} given up.",
            l.events, l.deliveries, l.dup_events, l.lost, l.unapplied, l.gave_up
        );
    }
    if let Some(p) = &a.poison {
        let dead =
            p.dead_lettered.map_or("not asked (no --dead-letter-query)".to_string(), |d| d.to_string());
        let _ = writeln!(md, "\n## Poison\n\n| figure | value |\n|---|---:|");
        for (name, value) in [
            ("poison", cell(&p.poison)),
            ("poison events", p.poison_events.to_string()),
            ("poison events applied", p.poison_applied.to_string()),
            ("poison events dead-lettered", dead),
            (
                "other events: dup / lost / never applied",
                format!("{} / {} / {}", p.load.dup_events, p.load.lost, p.load.unapplied),
            ),
            ("other events' p99 without poison (ms)", format!("{:.1}", p.baseline_p99_ms)),
            ("other events' p99 with poison (ms)", format!("{:.1}", p.poisoned_p99_ms)),
            ("factor allowed", format!("{}", p.p99_factor)),
        ] {
            let _ = writeln!(md, "| {name} | {value} |");
        }
    }
    if let Some(c) = &a.capacity {
        let held_to = c.provider.map_or("--timeout".to_string(), |p| p.as_str().to_string());
        let _ = writeln!(
            md,
            "\n## Capacity\n\nHeld to a {:.0} ms timeout ({held_to}); capacity: {}.\n",
            c.timeout_ms,
            c.capacity_per_s.map_or("none of the steps held".to_string(), |r| format!("{r:.1} events/s"))
        );
        let _ = writeln!(
            md,
            "| rate (/s) | deliveries | p50 ms | p99 ms | max ms | over the timeout | 5xx or no answer | held |\n|---:|---:|---:|---:|---:|---:|---:|---|"
        );
        for s in &c.steps {
            let _ = writeln!(
                md,
                "| {:.1} | {} | {:.1} | {:.1} | {:.1} | {:.1} % | {:.1} % | {} |",
                s.rate_per_s,
                s.deliveries,
                s.p50_ms,
                s.p99_ms,
                s.max_ms,
                s.over_timeout * 100.0,
                s.errors * 100.0,
                if s.held { "yes" } else { "no" }
            );
        }
    }
    if let Some(s) = &a.storm {
        let _ = writeln!(md, "\n## Retry storm\n\n| figure | value |\n|---|---:|");
        let provider = s.provider.map_or("-", |p| p.as_str());
        for (name, value) in [
            ("schedule", provider.to_string()),
            ("events", s.events.to_string()),
            ("outage (provider's time, s)", format!("{:.0}", s.outage_s)),
            ("time scale", format!("{}", s.time_scale)),
            ("attempts", s.attempts.to_string()),
            ("healthy again after (ms)", format!("{:.0}", s.recovered_ms)),
            ("peak attempts in a second after recovery", s.peak_per_s.to_string()),
            ("p99 after recovery (ms)", format!("{:.1}", s.p99_after_ms)),
            (
                "dup / lost / never acknowledged",
                format!("{} / {} / {}", s.dup_events, s.lost, s.unacknowledged),
            ),
        ] {
            let _ = writeln!(md, "| {name} | {value} |");
        }
    }
}
