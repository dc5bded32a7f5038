//! The article's single-process model, reproduced exactly.
//!
//! [`ModelReport::run`] computes every figure the article's script prints: the handler table, the
//! traced event, the same-second pairs, the retention table, the crash table and the sender's
//! jitter lines. [`ModelReport::render`] prints them as the script does, line for line, from its
//! `events:` line on; the figures serialize to JSON as well.

pub mod crash;
mod handlers;
pub mod jitter;
pub mod retention;

use std::fmt::Write;

use crate::matrix::Design;

use serde::Serialize;

pub use handlers::{Handler, HandlerResult, run_handler};

use crate::workload::{EventKind, GroupKind, Workload, WorkloadConfig, WorkloadError, js_number};
use crash::{CrashDesign, CrashResult};
use jitter::{JitterMode, JitterResult};
use retention::RetentionRow;

/// The handler table alone (no traces, no retention, crash or jitter): what a bench puts beside
/// its real rows.
pub fn handler_table(w: &Workload) -> Vec<HandlerResult> {
    Handler::MODELLED.iter().map(|&h| run_handler(h, w, None, None)).collect()
}

/// The model handler a real design is compared with: its own, and for `inbox` the version guard
/// (the inbox applies with it; the model has no inbox).
pub fn handler_for_design(design: Design) -> Option<Handler> {
    let design = if design == Design::Inbox { Design::VersionGuard } else { design };
    Handler::MODELLED.into_iter().find(|h| h.design() == design)
}

/// The traced credit event.
#[derive(Debug, Clone, Serialize)]
pub struct TracedEvent {
    /// Its id.
    pub id: String,
    /// Its account.
    pub account: u32,
    /// Credits it adds.
    pub amount: i64,
}

/// The first same-second pair delivered newer-first.
#[derive(Debug, Clone, Serialize)]
pub struct TieExample {
    /// The account both update.
    pub account: u32,
    /// The older update's id and version.
    pub older_id: String,
    /// Version the older update sets.
    pub older_version: u32,
    /// The newer update's id.
    pub newer_id: String,
    /// Version the newer update sets.
    pub newer_version: u32,
    /// The second both were created in.
    pub created: u64,
}

/// A schedule's retention rows.
#[derive(Debug, Clone, Serialize)]
pub struct RetentionTable {
    /// The schedule's name.
    pub schedule: &'static str,
    /// One row per key lifetime.
    pub rows: Vec<RetentionRow>,
    /// When the schedule's last retry comes, in seconds.
    pub last_retry_s: f64,
}

/// Every figure the article's script prints, for one workload.
#[derive(Debug, Clone, Serialize)]
pub struct ModelReport {
    /// The workload's parameters.
    pub config: WorkloadConfig,
    /// Logical events.
    pub events: usize,
    /// Credit events.
    pub credit_events: usize,
    /// Plan updates.
    pub plan_events: usize,
    /// Same-second plan pairs.
    pub same_second_pairs: usize,
    /// One row per handler, in the script's order.
    pub handlers: Vec<HandlerResult>,
    /// The traced credit event (none when the workload has no credit event).
    pub traced: Option<TracedEvent>,
    /// How many same-second pairs arrive newer-first.
    pub reversed_pairs: usize,
    /// The first of those.
    pub tie_example: Option<TieExample>,
    /// The retention test.
    pub retention: Vec<RetentionTable>,
    /// The crash test.
    pub crash: Vec<CrashResult>,
    /// The sender's jitter experiment.
    pub jitter: Vec<JitterResult>,
}

impl ModelReport {
    /// Runs the whole model for `config`.
    pub fn run(config: &WorkloadConfig) -> Result<Self, WorkloadError> {
        let w = Workload::generate(config)?;
        let seed = config.seed;

        // Traced event: the first credit event delivered as a concurrent pair, else the credit
        // event with the most scheduled copies (the first such in event order).
        let concurrent = w
            .groups
            .iter()
            .find(|g| g.kind == GroupKind::FirstConcurrent && w.events[g.event as usize].is_credit())
            .map(|g| g.event as usize);
        let trace = concurrent.or_else(|| {
            let mut copies = vec![0u32; w.events.len()];
            for g in &w.groups {
                copies[g.event as usize] += u32::from(g.copies);
            }
            let mut best: Option<usize> = None;
            for e in w.events.iter().filter(|e| e.is_credit()) {
                let i = e.idx as usize;
                if best.is_none_or(|b| copies[i] > copies[b]) {
                    best = Some(i);
                }
            }
            best
        });

        let reversed = w.reversed_ties();
        let tie_trace = reversed.first().map(|&(older, _)| older);

        let handlers = Handler::ALL.iter().map(|&h| run_handler(h, &w, trace, tie_trace)).collect();

        let traced = trace.map(|i| {
            let e = &w.events[i];
            let amount = match e.kind {
                EventKind::Credit { amount } => amount,
                EventKind::Plan { .. } => 0,
            };
            TracedEvent { id: e.id().to_string(), account: e.account, amount }
        });
        let tie_example = reversed.first().map(|&(older, newer)| {
            let version = |i: usize| match w.events[i].kind {
                EventKind::Plan { version, .. } => version,
                EventKind::Credit { .. } => 0,
            };
            TieExample {
                account: w.events[newer].account,
                older_id: w.events[older].id().to_string(),
                older_version: version(older),
                newer_id: w.events[newer].id().to_string(),
                newer_version: version(newer),
                created: w.events[newer].created,
            }
        });

        let retention = retention::run(seed, config.events)
            .into_iter()
            .map(|(schedule, rows)| RetentionTable {
                schedule: schedule.name,
                rows,
                last_retry_s: schedule.offsets.last().copied().unwrap_or(0.0),
            })
            .collect();

        let credit_events = w.credit_count();
        Ok(Self {
            config: config.clone(),
            events: w.events.len(),
            credit_events,
            plan_events: w.events.len() - credit_events,
            same_second_pairs: w.tie_count(),
            handlers,
            traced,
            reversed_pairs: reversed.len(),
            tie_example,
            retention,
            crash: [CrashDesign::Split, CrashDesign::Atomic].map(|d| crash::run(seed, d)).to_vec(),
            jitter: [JitterMode::NoJitter, JitterMode::FullJitter].map(|m| jitter::run(seed, m)).to_vec(),
        })
    }

    /// The figures for the handler a design runs, if the model has one.
    pub fn for_design(&self, design: Design) -> Option<&HandlerResult> {
        self.handlers.iter().find(|r| r.handler.design() == design)
    }

    /// The script's output from its `events:` line to the end, line for line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = self.write_text(&mut out);
        out
    }

    fn write_text(&self, out: &mut String) -> std::fmt::Result {
        let c = &self.config;
        writeln!(
            out,
            "events: {} ({} credit, {} plan), accounts: {}, same-second plan pairs: {}",
            self.events, self.credit_events, self.plan_events, c.accounts, self.same_second_pairs
        )?;
        writeln!(
            out,
            "chances per delivery: duplicate {}, response lost after commit {}, concurrent redelivery {}, shuffled {} (window {})",
            js_number(c.p_duplicate),
            js_number(c.p_ack_lost),
            js_number(c.p_concurrent),
            js_number(c.p_shuffle),
            c.shuffle_window
        )?;

        writeln!(out, "\n== handlers (simulation)")?;
        writeln!(
            out,
            "{:<22}{:>11}{:>6}{:>11}{:>14}{:>6}{:>13}{:>12}{:>10}{:>10}",
            "handler",
            "deliveries",
            "5xx",
            "dup events",
            "extra applies",
            "lost",
            "stale writes",
            "stale accts",
            "ledger",
            "expected"
        )?;
        for r in &self.handlers {
            writeln!(
                out,
                "{:<22}{:>11}{:>6}{:>11}{:>14}{:>6}{:>13}{:>12}{:>10}{:>10}",
                r.label,
                r.deliveries,
                r.errors,
                r.figures.dup_events,
                r.figures.extra_applies,
                r.figures.lost,
                r.figures.stale_writes,
                r.figures.stale_accounts,
                r.figures.ledger,
                r.figures.expected
            )?;
        }

        if let Some(t) = &self.traced {
            writeln!(out, "\n== traced event {}: add {} credits to acct_{:04}", t.id, t.amount, t.account)?;
            for r in self.handlers.iter().take(3) {
                writeln!(out, "{}: applied {}x", r.label, r.traced_applied)?;
                for line in &r.trace_log {
                    writeln!(out, "  {line}")?;
                }
            }
        }

        writeln!(
            out,
            "\n== same-second pairs delivered newer-first: {} of {}",
            self.reversed_pairs, self.same_second_pairs
        )?;
        if let Some(x) = &self.tie_example {
            writeln!(
                out,
                "example acct_{:04}: {} sets plan_v{}, {} sets plan_v{}, both created {}; arrival order {} then {}",
                x.account,
                x.older_id,
                x.older_version,
                x.newer_id,
                x.newer_version,
                x.created,
                x.newer_id,
                x.older_id
            )?;
            for r in &self.handlers {
                let after = r.tie_after.map_or_else(|| "null".to_string(), |v| v.to_string());
                writeln!(out, "  {}: plan_v{after} after both arrived", r.label)?;
            }
        }

        writeln!(out, "\n== retention: duplicate applies that got past the dedupe store (simulation)")?;
        writeln!(
            out,
            "chances: response lost after processing {} per attempt, later attempt unreachable {}, manual resend {} (3-day row only, 1 to 15 days later)",
            js_number(retention::P_LOST),
            js_number(retention::P_UNREACHABLE),
            js_number(retention::P_MANUAL)
        )?;
        for table in &self.retention {
            for row in &table.rows {
                writeln!(out, "{:<38}{:<15}{:>8}", table.schedule, row.ttl, row.duplicate_applies)?;
            }
            writeln!(
                out,
                "{:<38}{:<15}{:>8}",
                table.schedule,
                "last retry at",
                retention::hms(table.last_retry_s)
            )?;
        }

        writeln!(
            out,
            "\n== crash after dedupe insert, before side effect (simulation, file-backed SQLite, chance {} per delivery)",
            js_number(crash::P_CRASH)
        )?;
        writeln!(
            out,
            "{:<34}{:>7}{:>8}{:>6}{:>8}{:>6}{:>8}{:>9}",
            "design", "events", "crashes", "keys", "applied", "lost", "ledger", "expected"
        )?;
        for r in &self.crash {
            writeln!(
                out,
                "{:<34}{:>7}{:>8}{:>6}{:>8}{:>6}{:>8}{:>9}",
                r.design.label(),
                r.events,
                r.crashes,
                r.keys,
                r.applied,
                r.lost,
                r.ledger,
                r.expected
            )?;
        }

        writeln!(
            out,
            "\n== sender retries: 1,000 failed deliveries, receiver back at t={} s (simulation)",
            jitter::RECOVER_S
        )?;
        for r in &self.jitter {
            writeln!(
                out,
                "{:<26} attempts {}, peak per second after recovery {}, last delivered at t={} s",
                r.mode.label(),
                r.attempts,
                r.peak_after,
                r.last_ok_s
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(config: WorkloadConfig) -> ModelReport {
        ModelReport::run(&config).expect("valid config")
    }

    #[test]
    fn article_table_deliveries() {
        let r = report(WorkloadConfig::default());
        let deliveries: Vec<u64> = r.handlers.iter().map(|h| h.deliveries).collect();
        assert_eq!(deliveries, [10_633, 10_747, 10_633, 10_633, 10_633, 10_633]);
        assert_eq!(r.for_design(Design::CheckThenInsert).map(|h| h.errors), Some(106));
        assert_eq!(
            r.for_design(Design::VersionGuard).map(|h| (h.figures.stale_writes, h.figures.stale_accounts)),
            Some((0, 0))
        );
    }

    #[test]
    fn concurrent_copies_interleave_at_the_await() {
        // Every first delivery is a concurrent pair and nothing else goes wrong: both copies pass
        // check-then-insert's SELECT before either INSERTs, so every credit applies twice and
        // every second copy answers 500; the atomic insert applies each once.
        let config = WorkloadConfig {
            events: 300,
            p_concurrent: 1.0,
            p_duplicate: 0.0,
            p_ack_lost: 0.0,
            p_shuffle: 0.0,
            ..WorkloadConfig::default()
        };
        let r = report(config);
        let credits = r.credit_events as u64;
        let cti = r.for_design(Design::CheckThenInsert).expect("row");
        assert_eq!((cti.figures.dup_events, cti.errors), (credits, 300));
        assert_eq!(cti.deliveries, 300 * 3);
        let atomic = r.for_design(Design::Atomic).expect("row");
        assert_eq!((atomic.figures.dup_events, atomic.errors, atomic.deliveries), (0, 0, 600));
        assert_eq!(r.for_design(Design::Naive).map(|h| h.figures.extra_applies), Some(credits));
    }

    /// check-in-transaction's twin runs its transaction whole, as the script runs every
    /// transaction: copies of a concurrent group both await, then one transaction inserts the id
    /// and the other finds it, so nothing doubles, where check-then-insert's twin (its check
    /// before the await) doubles every credit of the same groups. On the default workload it is
    /// exactly once like atomic, with the same stale accounts (neither guards a plan update).
    #[test]
    fn check_in_transaction_twin_is_serial_where_check_then_insert_doubles() {
        let raced = WorkloadConfig {
            p_concurrent: 1.0,
            p_duplicate: 0.0,
            p_ack_lost: 0.0,
            p_shuffle: 0.0,
            events: 300,
            ..WorkloadConfig::default()
        };
        let w = Workload::generate(&raced).expect("workload");
        let credits = w.events.iter().filter(|e| e.is_credit()).count() as u64;
        let run = |h| run_handler(h, &w, None, None);
        let (twin, check_then_insert) = (run(Handler::CheckInTransaction), run(Handler::CheckThenInsert));
        assert_eq!(twin.deliveries, 600, "every event went as two concurrent copies");
        assert_eq!((twin.figures.dup_events, twin.figures.lost, twin.errors), (0, 0, 0));
        assert_eq!(twin.figures.ledger, twin.figures.expected);
        assert_eq!(
            check_then_insert.figures.dup_events, credits,
            "the same groups double without one transaction"
        );

        let w = Workload::generate(&WorkloadConfig::default()).expect("workload");
        let (twin, atomic) = (
            run_handler(Handler::CheckInTransaction, &w, None, None),
            run_handler(Handler::Atomic, &w, None, None),
        );
        assert_eq!(
            (twin.deliveries, twin.errors, twin.figures),
            (atomic.deliveries, atomic.errors, atomic.figures)
        );
        assert_eq!(handler_for_design(Design::CheckInTransaction), Some(Handler::CheckInTransaction));
        assert_eq!(handler_table(&w).len(), Handler::MODELLED.len());
    }

    #[test]
    fn crash_and_jitter_are_the_articles() {
        let r = report(WorkloadConfig::default());
        let split = &r.crash[0];
        assert_eq!((split.crashes, split.lost, split.keys), (15, 15, 2000));
        assert_eq!((r.crash[1].crashes, r.crash[1].lost), (15, 0));
        assert_eq!(
            (r.jitter[0].attempts, r.jitter[0].peak_after, r.jitter[0].last_ok_s),
            (10_000, 1000, 511)
        );
        assert_eq!((r.jitter[1].attempts, r.jitter[1].peak_after, r.jitter[1].last_ok_s), (10_790, 11, 1781));
    }
}
