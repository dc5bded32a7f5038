//! The failure experiments' sections of a report: chaos and poison (from the bench's own cells),
//! crash, jitter and retention. Each is a titled table with a sentence saying what it shows; the
//! Markdown, the HTML (through the Markdown) and the terminal render the same tables.

use std::fmt::Write;

use super::{BenchBody, escape};
use crate::experiments::Experiments;
use crate::printable;

/// One titled table.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The heading.
    pub title: String,
    /// What it shows, in a sentence or two.
    pub intro: String,
    /// Column names.
    pub header: Vec<String>,
    /// Cells, as text.
    pub rows: Vec<Vec<String>>,
}

fn strings<const N: usize>(cells: [&str; N]) -> Vec<String> {
    cells.iter().map(|c| (*c).to_string()).collect()
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// The experiment sections this report has, in a fixed order.
pub fn sections(report: &BenchBody) -> Vec<Section> {
    let mut out = Vec::new();
    let p = &report.parameters;
    if !p.chaos.is_empty() {
        let chaos: Vec<String> = p.chaos.iter().map(ToString::to_string).collect();
        out.push(Section {
            title: "Chaos".into(),
            intro: {
                let mut what = vec![format!("During every cell: {}.", chaos.join(", "))];
                if p.chaos.iter().any(|c| c.kind == crate::chaos::ChaosKind::KillWorker) {
                    what.push(
                        "kill-worker SIGKILLs a random worker and restarts it on the same address.".into(),
                    );
                }
                if p.chaos.iter().any(|c| c.kind == crate::chaos::ChaosKind::PgTerminate) {
                    what.push(
                        "pg-terminate ends every receiver connection to the cell's Postgres database \
                         (SQLite cells have none)."
                            .into(),
                    );
                }
                what.push("The figures are the judge's, from what the database holds afterwards.".into());
                what.join(" ")
            },
            header: strings([
                "backend",
                "design",
                "workers killed",
                "connections ended",
                "connect errors",
                "5xx",
                "gave up",
                "dup events",
                "lost",
                "never applied",
                "ledger",
                "expected",
            ]),
            rows: report
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.backend.to_string(),
                        r.design.to_string(),
                        r.chaos.worker_kills.to_string(),
                        r.chaos.pg_terminations.to_string(),
                        r.connect_errors.to_string(),
                        r.status_5xx.to_string(),
                        r.gave_up.to_string(),
                        r.figures.dup_events.to_string(),
                        r.figures.lost.to_string(),
                        r.figures.never_applied.to_string(),
                        r.figures.ledger.to_string(),
                        r.figures.expected.to_string(),
                    ]
                })
                .collect(),
        });
    }
    if p.poison > 0.0 {
        out.push(Section {
            title: "Poison events".into(),
            intro: format!(
                "Each credit event was poison with chance {}: sent with a negative amount, which passes \
                 the signature and the wire format and which the side effect refuses every time. \
                 The inbox acknowledges it and keeps it as a dead letter after 5 attempts; a \
                 synchronous design answers 500 until the sender gives up. Lost and never applied \
                 count only the healthy events.",
                p.poison
            ),
            header: strings([
                "backend",
                "design",
                "poison events",
                "their attempts",
                "non-2xx to them",
                "dead letters",
                "poison applied",
                "lost (healthy)",
                "never applied (healthy)",
                "dup events",
            ]),
            rows: report
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.backend.to_string(),
                        r.design.to_string(),
                        r.poisoned.to_string(),
                        r.poison_attempts.to_string(),
                        r.poison_non_2xx.to_string(),
                        r.dead_letters.to_string(),
                        r.poison_applied.to_string(),
                        r.figures.lost.to_string(),
                        r.figures.never_applied.to_string(),
                        r.figures.dup_events.to_string(),
                    ]
                })
                .collect(),
        });
    }
    out.extend(experiment_sections(&report.experiments));
    out
}

/// The sections of the experiments that ran (crash, jitter, retention).
pub fn experiment_sections(e: &Experiments) -> Vec<Section> {
    let mut out = Vec::new();
    if !e.crash.is_empty() {
        out.push(Section {
            title: "Crash after the dedupe key, before the side effect".into(),
            intro: "The article's crash test with real process deaths: a worker aborts (SIGABRT) at the \
                    injected point with chance 0.01 per delivery, keyed as in the article; the fleet \
                    restarts it and the delivery is retried. Crashes are counted from the workers' exit \
                    statuses; the rest is read from the database. Model columns are the article's."
                .into(),
            header: strings([
                "backend",
                "design",
                "events",
                "crashes",
                "keys",
                "applied",
                "lost",
                "ledger",
                "expected",
                "model crashes",
                "model lost",
                "model ledger",
            ]),
            rows: e
                .crash
                .iter()
                .map(|r| {
                    vec![
                        r.backend.to_string(),
                        r.design.to_string(),
                        r.events.to_string(),
                        r.crashes.to_string(),
                        r.keys.to_string(),
                        r.applied.to_string(),
                        r.lost.to_string(),
                        r.ledger.to_string(),
                        r.expected.to_string(),
                        opt(r.model.as_ref().map(|m| m.crashes)),
                        opt(r.model.as_ref().map(|m| m.lost)),
                        opt(r.model.as_ref().map(|m| m.ledger)),
                    ]
                })
                .collect(),
        });
    }
    if let Some(j) = &e.jitter {
        out.push(Section {
            title: "Sender retries: the synchronized spike".into(),
            intro: format!(
                "{} deliveries fail at the same moment against a real HTTP receiver that answers 503 \
                 until t={} s and 200 after, retrying with exponential backoff from 1 s, with time \
                 scaled 1/{}. Measured at the receiver, beside the model; \"late after recovery\" is how \
                 far the retries due after recovery arrived behind their schedule (p99): above 1 s \
                 the machine could not put them through as fast as they fell due at this time \
                 scale, and the measured peak understates the spike.",
                j.deliveries, j.recover_s, j.time_scale
            ),
            header: strings([
                "mode",
                "attempts",
                "peak per s after recovery",
                "last delivered (s)",
                "late after recovery p99 (s)",
                "model attempts",
                "model peak",
                "model last (s)",
            ]),
            rows: j
                .real
                .iter()
                .zip(&j.model)
                .map(|(r, m)| {
                    vec![
                        r.mode.label().to_string(),
                        r.attempts.to_string(),
                        r.peak_after.to_string(),
                        format!("{:.1}", r.last_ok_s),
                        format!("{:.2}", r.recovery_late_p99_s),
                        m.attempts.to_string(),
                        m.peak_after.to_string(),
                        m.last_ok_s.to_string(),
                    ]
                })
                .collect(),
        });
    }
    if !e.retention.is_empty() {
        let runs = &e.retention;
        let mut header = strings(["schedule", "keys kept", "model"]);
        header.extend(runs.iter().map(|r| r.backend.to_string()));
        let rows = runs[0]
            .rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let mut cells = vec![row.schedule.clone(), row.ttl.clone(), row.model.to_string()];
                cells.extend(runs.iter().map(|r| opt(r.rows.get(i).map(|x| x.duplicate_applies))));
                cells
            })
            .collect();
        let purge: Vec<String> = runs
            .iter()
            .map(|r| {
                format!(
                    "{}: {} attempts replayed in {:.1} s, {} purges deleted {} keys (at most {} held), {} left",
                    r.backend, r.visits, r.wall_s, r.purges, r.keys_purged, r.peak_keys, r.keys_left
                )
            })
            .collect();
        out.push(Section {
            title: "Key retention: duplicates past an expiring dedupe store".into(),
            intro: format!(
                "{} events per schedule, each attempt drawn as the article draws it, replayed on a \
                 virtual clock against a real store whose keys carry expires_at and are purged every \
                 virtual hour. Duplicate applies are counted from the ledger. {}.",
                runs[0].events,
                purge.join("; ")
            ),
            header,
            rows,
        });
    }
    if !e.errors.is_empty() {
        out.push(Section {
            title: "Experiments that could not run".into(),
            intro: "Each line is one part and why.".into(),
            header: strings(["part and reason"]),
            rows: e.errors.iter().map(|x| vec![x.clone()]).collect(),
        });
    }
    out
}

/// The sections as Markdown, every title, sentence and cell as text (they carry a run's values:
/// its chaos, a retention schedule, an experiment's error).
pub fn markdown(sections: &[Section]) -> String {
    let cells = |cells: &[String]| cells.iter().map(|c| escape::text(c)).collect::<Vec<_>>().join(" | ");
    let mut md = String::new();
    for s in sections {
        let _ = writeln!(md, "\n## {}\n\n{}\n", escape::text(&s.title), escape::text(&s.intro));
        let _ = writeln!(md, "| {} |", cells(&s.header));
        let _ = writeln!(md, "|{}", "---|".repeat(s.header.len()));
        for r in &s.rows {
            let _ = writeln!(md, "| {} |", cells(r));
        }
    }
    md
}

/// The sections as aligned plain text.
pub fn text(sections: &[Section]) -> String {
    let mut out = String::new();
    for s in sections {
        let mut widths: Vec<usize> = s.header.iter().map(|h| h.chars().count()).collect();
        for r in &s.rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            cells
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (c, &w))| if i < 2 { format!("{c:<w$}") } else { format!("{c:>w$}") })
                .collect::<Vec<_>>()
                .join("  ")
        };
        let _ = writeln!(out, "\n== {}\n{}", s.title.to_lowercase(), printable::line(&s.intro));
        let _ = writeln!(out, "{}", printable::line(&line(&s.header)));
        for r in &s.rows {
            let _ = writeln!(out, "{}", printable::line(&line(r)));
        }
    }
    out
}
