//! An audit's report: the verdict table for the terminal, report.md (the verdict grid first, then
//! the witnesses of each failing or warning check, and each check's figures), and report.html:
//! the coloured grid, then this Markdown without its grid.

use std::fmt::Write;

use crate::printable::line;

use super::audit_grid::{audit_grid_markdown, flagged, remedies_by_check, witnesses_heading};
use super::escape::{code, text as cell};
use super::{AuditSection, CheckFigures, Header, Report, Witness};

/// The verdict table: one line per check. What the receiver chose (its URL, its answers quoted
/// in the evidence, the ids) is printed with its control characters escaped.
pub fn render_audit_table(report: &Report) -> String {
    let Some(a) = report.audit_section() else { return String::new() };
    let mut out = String::new();
    let width = a.checks.iter().map(|c| c.check.as_str().len()).max().unwrap_or(5);
    let _ = writeln!(
        out,
        "audit of {} ({} signatures, {} payload; {:.1} s)",
        line(&a.url),
        line(&a.signing),
        line(&a.payload),
        a.wall_s
    );
    let _ = writeln!(out, "{:<width$}  {:<7}  evidence", "check", "verdict");
    for c in &a.checks {
        let _ =
            writeln!(out, "{:<width$}  {:<7}  {}", c.check.as_str(), c.status.as_str(), line(&c.evidence));
        for w in &c.witnesses {
            let (id, problem, observed) = (line(&w.id), line(&w.problem), line(&w.observed));
            let _ = writeln!(out, "{:<width$}    witness {id}: {problem}; {observed}", "");
        }
    }
    if let Some(why) = &a.stopped {
        let _ = writeln!(out, "stopped: {}", line(why));
    }
    remedies_text(&mut out, a);
    out
}

/// What to change, one line per remedy the failing and warning checks call for. The remedies
/// are hookbench's own text; nothing from the receiver is in them.
fn remedies_text(out: &mut String, a: &AuditSection) {
    let remedies = remedies_by_check(a);
    if remedies.is_empty() {
        return;
    }
    let _ = writeln!(out, "what to change:");
    for (r, checks) in remedies {
        let checks: Vec<&str> = checks.iter().map(|c| c.as_str()).collect();
        let _ = writeln!(out, "  {} ({}): {} [{}]", r.anchor, checks.join(", "), r.change, r.docs());
    }
}

fn witness_md(md: &mut String, w: &Witness) {
    let _ = writeln!(md, "- {}: {} ({})", code(&w.id), cell(&w.problem), cell(&w.observed));
    for a in &w.attempts {
        let note = if a.note.is_empty() { String::new() } else { format!(", {}", cell(&a.note)) };
        let on = if a.connection.is_empty() { String::new() } else { format!(" on {}", cell(&a.connection)) };
        let _ = writeln!(md, "  - at {:.1} ms: {}{on}{note}", a.at_ms, cell(&a.outcome));
    }
}

/// The audit's Markdown: the verdicts, the witnesses of each failure, each check's figures.
pub fn audit_markdown(header: &Header, a: &AuditSection) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# hookbench audit {}\n", cell(&header.run_id));
    // The answer first: the verdict grid and what to change, then what was audited and how.
    md.push_str(&audit_grid_markdown(a));
    let _ = writeln!(
        md,
        "Receiver {}, {} signatures, {} payload, observed through {}. Ids start with {}; accounts \
         from {}. Wall time {:.1} s.\n",
        code(&a.url),
        cell(&a.signing),
        cell(&a.payload),
        if a.observers.is_empty() {
            "nothing".to_string()
        } else {
            a.observers.iter().map(|o| cell(o)).collect::<Vec<_>>().join(", ")
        },
        code(&a.id_prefix),
        a.account_base,
        a.wall_s
    );
    if let Some(why) = &a.stopped {
        let _ = writeln!(
            md,
            "**The audit stopped before it finished**: {}. The checks below are those that ran.\n",
            cell(why)
        );
    }
    md.push_str(&super::markdown::thresholds_section(&header.thresholds));
    md.push_str(&super::markdown::shards_section(header.shards.as_ref()));
    // Every check the grid links to has its section, so that no link is left dangling.
    for c in a.checks.iter().filter(|c| flagged(c.status)) {
        let _ = writeln!(md, "\n## {}\n", witnesses_heading(c.check));
        if c.witnesses.is_empty() {
            let _ = writeln!(md, "No event to show: the evidence and the figures say what failed.");
        }
        for w in &c.witnesses {
            witness_md(&mut md, w);
        }
        if a.reproducible_fails().contains(&c.check) {
            let name: &'static str = c.check.into();
            let _ = writeln!(
                md,
                "\nReproduce it without hookbench, as a script the receiver's maintainers can run: {} \
                 (docs/audit.md, \"Reproducing a FAIL without hookbench\").",
                code(&format!("hookbench repro {} --check {name} --out repro-{name}.py", header.run_id))
            );
        }
    }
    for c in &a.checks {
        if let Some(f) = &c.figures {
            figures_markdown(&mut md, header, f);
        }
    }
    if let Some(older) = super::older::note(header) {
        let _ = writeln!(md, "\n{}", cell(&older));
    }
    let _ = writeln!(md, "\nMachine: {}.", cell(&header.machine.summary()));
    md
}

fn load_rows(header: &Header, l: &super::LoadFigures) -> Vec<(&'static str, String)> {
    let stale = match (l.stale_accounts, l.accounts_observed) {
        (Some(s), Some(o)) => format!("{s} ({o} accounts observed)"),
        _ => "not observed (no --state-query)".to_string(),
    };
    vec![
        ("events", l.events.to_string()),
        ("deliveries", l.deliveries.to_string()),
        (
            "2xx / 4xx / 5xx / timeouts / acks lost / no connection / resets",
            format!(
                "{} / {} / {} / {} / {} / {} / {}",
                l.status_2xx,
                l.status_4xx,
                l.status_5xx,
                l.timeouts,
                super::older::cell(header, "acks_lost", l.acks_lost),
                // An audit's loads count refused connections since schema 3.
                super::older::cell_since(header, 3, l.connect_errors),
                super::older::cell(header, "resets", l.resets)
            ),
        ),
        ("events acknowledged / applied", format!("{} / {}", l.acked, l.applied)),
        ("dup events", l.dup_events.to_string()),
        ("extra applies", l.extra_applies.to_string()),
        ("lost (acknowledged, never applied)", l.lost.to_string()),
        ("never applied (not acknowledged)", l.never_applied.to_string()),
        ("stale accounts", stale),
        ("refused and applied", l.refused_applied.to_string()),
        ("deliveries given up on (a duplicate delivery is one more)", l.gave_up.to_string()),
        (
            "p50 / p99 / max ms (intended)",
            format!(
                "{:.1} / {:.1} / {:.1}",
                l.latency_us.p50 as f64 / 1e3,
                l.latency_us.p99 as f64 / 1e3,
                l.latency_us.max as f64 / 1e3
            ),
        ),
        (
            "answers p50 / p99 / max ms (send to answer, answered attempts only)",
            l.answer_latency_us.map_or_else(
                || "none answered".to_string(),
                |a| {
                    format!(
                        "{:.1} / {:.1} / {:.1}",
                        a.p50 as f64 / 1e3,
                        a.p99 as f64 / 1e3,
                        a.max as f64 / 1e3
                    )
                },
            ),
        ),
        ("attempts per second", format!("{:.0}", l.throughput_per_s)),
        (
            "events per second planned / achieved",
            match (l.planned_rate, l.achieved_rate) {
                (Some(p), Some(a)) => format!("{p:.1} / {a:.1}"),
                _ => "not measured".to_string(),
            },
        ),
    ]
}

fn table(md: &mut String, rows: &[(&str, String)]) {
    let _ = writeln!(md, "| figure | value |\n|---|---:|");
    for (name, value) in rows {
        let _ = writeln!(md, "| {name} | {value} |");
    }
}

/// A check's figures.
fn figures_markdown(md: &mut String, header: &Header, f: &CheckFigures) {
    match f {
        CheckFigures::Load(l) => {
            let _ = writeln!(md, "\n## Parallel load\n");
            table(md, &load_rows(header, l));
            super::rates::load_markdown(md, l);
        }
        CheckFigures::Crash(c) => crash_markdown(md, header, c),
        CheckFigures::Poison(p) => poison_markdown(md, p),
        CheckFigures::Capacity(c) => capacity_markdown(md, c),
        CheckFigures::Storm(s) => storm_markdown(md, s),
        CheckFigures::Trials(t) => super::rates::trials_markdown(md, t),
        CheckFigures::Spacings(w) => super::rates::window_markdown(md, w),
    }
}

fn crash_markdown(md: &mut String, header: &Header, c: &super::CrashFigures) {
    {
        let _ = writeln!(
            md,
            "\n## Crash\n\n| kill | at (ms) | in flight | back after (ms) |\n|---:|---:|---:|---:|"
        );
        for (k, r) in c.restarts.iter().enumerate() {
            let _ =
                writeln!(md, "| {} | {:.0} | {} | {:.0} |", k + 1, r.killed_at_ms, r.in_flight, r.took_ms);
        }
        let _ = writeln!(md);
        table(md, &load_rows(header, &c.load));
    }
}

fn poison_markdown(md: &mut String, p: &super::PoisonFigures) {
    {
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
                format!("{} / {} / {}", p.load.dup_events, p.load.lost, p.load.never_applied),
            ),
            (
                "clean run: dup / lost / never applied",
                format!("{} / {} / {}", p.clean.dup_events, p.clean.lost, p.clean.never_applied),
            ),
            ("other events' p99 without poison (ms)", format!("{:.1}", p.baseline_p99_ms)),
            ("other events' p99 with poison (ms)", format!("{:.1}", p.poisoned_p99_ms)),
            ("factor allowed", format!("{}", p.p99_factor)),
        ] {
            let _ = writeln!(md, "| {name} | {value} |");
        }
    }
}

fn capacity_markdown(md: &mut String, c: &super::CapacityFigures) {
    {
        let held_to = c.provider.map_or("--timeout".to_string(), |p| p.as_str().to_string());
        let _ = writeln!(
            md,
            "\n## Capacity\n\nHeld to a {:.0} ms timeout ({held_to}); capacity: {}.\n",
            c.timeout_ms,
            c.capacity_per_s.map_or("none of the steps held".to_string(), |r| {
                if c.at_least {
                    format!("at least {r:.1} events/s (the ramp's top held)")
                } else {
                    format!("{r:.1} events/s")
                }
            })
        );
        let _ = writeln!(
            md,
            "| rate (/s) | sent at (/s) | deliveries | p50 ms | p99 ms | max ms | answers p99 ms | over the timeout | not 2xx or no answer | held |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
        );
        let or_dash = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
        for s in &c.steps {
            let behind = crate::report::model::behind(Some(s.rate_per_s), s.achieved_rate).is_some();
            let _ = writeln!(
                md,
                "| {:.1} | {}{} | {} | {:.1} | {:.1} | {:.1} | {} | {:.1} % | {:.1} % | {} |",
                s.rate_per_s,
                or_dash(s.achieved_rate),
                if behind { " (behind)" } else { "" },
                s.deliveries,
                s.p50_ms,
                s.p99_ms,
                s.max_ms,
                or_dash(s.answer_p99_ms),
                s.over_timeout * 100.0,
                s.errors * 100.0,
                if s.held { "yes" } else { "no" }
            );
        }
    }
}

fn storm_markdown(md: &mut String, s: &super::StormFigures) {
    {
        let _ = writeln!(md, "\n## Retry storm\n\n| figure | value |\n|---|---:|");
        let provider = s.provider.map_or("-", |p| p.as_str());
        for (name, value) in [
            ("schedule", provider.to_string()),
            ("events", s.events.to_string()),
            ("outage (provider's time, s)", format!("{:.0}", s.outage_s)),
            ("time scale", format!("{}", s.time_scale)),
            ("attempts", s.attempts.to_string()),
            ("healthy again after (ms)", format!("{:.0}", s.recovered_ms)),
            ("attempts after recovery", s.after_recovery.to_string()),
            (
                "peak attempts in a second after recovery",
                s.peak_per_s.map_or("none arrived after it".to_string(), |p| p.to_string()),
            ),
            (
                "their busiest second as the schedule planned it / as sent",
                match (s.planned_rate, s.achieved_rate) {
                    (Some(p), Some(a)) => format!("{p:.0} / {a:.0}"),
                    _ => "not measured".to_string(),
                },
            ),
            (
                "p99 after recovery (ms)",
                s.p99_after_ms.map_or("none arrived after it".to_string(), |p| format!("{p:.1}")),
            ),
            (
                "dup / lost / never acknowledged",
                format!("{} / {} / {}", s.dup_events, s.lost, s.unacknowledged),
            ),
        ] {
            let _ = writeln!(md, "| {name} | {value} |");
        }
    }
}
