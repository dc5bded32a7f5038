//! An audit's report: the verdict table (terminal and Markdown) and the witnesses under each
//! failing check. report.html is this Markdown as a page.

use std::fmt::Write;

use super::{Parameters, Report};
use crate::audit::AuditConfig;
use crate::audit::verdict::{AuditSection, Status, Witness};

impl Report {
    /// The report of an audit: its parameters (the load's), versions, machine and the audit section.
    pub fn of_audit(run_id: String, config: &AuditConfig, audit: AuditSection) -> Self {
        let w = &config.workload;
        let parameters = Parameters {
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
        };
        Self { audit: Some(audit), ..Self::new(run_id, parameters) }
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
        let _ = writeln!(md, "  - at {:.1} ms: {} on {}{note}", a.at_ms, cell(&a.outcome), a.connection);
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
    let _ = writeln!(md, "\nMachine: {}.", report.machine.summary());
    md
}
