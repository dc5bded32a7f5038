//! The article's six handlers replayed in one simulated process (the script's `runHandler`), and
//! the twin of a design the article does not have, check-in-transaction.
//!
//! The script runs each handler as an `async` function with one `await io()`; two copies of a
//! concurrent group both run up to that `await`, then resume in order. Here each handler is two
//! steps, [`Handler::before_await`] and [`Handler::after_await`], and a group runs every copy's
//! first step before any copy's second, which is exactly that interleaving. The database is an
//! in-memory picture of the script's tables; nothing here needs SQLite.

use std::collections::VecDeque;

use crate::matrix::Design;
use serde::Serialize;

use crate::judge::Figures;
use crate::workload::{EventKind, Group, GroupKind, Workload};

/// The ordering guard of a transactional handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guard {
    None,
    CreatedGte,
    CreatedGt,
    Version,
}

/// One of the article's handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Handler {
    /// (a) apply on every delivery.
    Naive,
    /// (b) SELECT, await, apply, INSERT (a conflict answers 500).
    CheckThenInsert,
    /// (c) one transaction: INSERT ... ON CONFLICT DO NOTHING, apply if inserted.
    Atomic,
    /// (d) atomic + apply a plan update only if created >= stored created.
    CreatedGte,
    /// (d) atomic + only if created > stored created.
    CreatedGt,
    /// (d) atomic + only if version > stored version.
    VersionGuard,
    /// Not in the article: await, then one transaction: SELECT the id, apply, INSERT the id (no
    /// unique key). The script's transactions run one at a time (better-sqlite3 is synchronous
    /// and nothing awaits inside one), so the simulation runs this as the real design runs on
    /// SQLite or under SERIALIZABLE: exactly once. What weaker levels let through, it cannot show.
    CheckInTransaction,
}

impl Handler {
    /// The six handlers in the script's order.
    pub const ALL: [Handler; 6] = [
        Handler::Naive,
        Handler::CheckThenInsert,
        Handler::Atomic,
        Handler::CreatedGte,
        Handler::CreatedGt,
        Handler::VersionGuard,
    ];

    /// The article's six and the twin of the design it does not have, check-in-transaction.
    pub const MODELLED: [Handler; 7] = {
        let mut modelled = [Handler::CheckInTransaction; 7];
        let mut i = 0;
        while i < Handler::ALL.len() {
            modelled[i] = Handler::ALL[i];
            i += 1;
        }
        modelled
    };

    /// The row label the script prints.
    pub fn label(self) -> &'static str {
        match self {
            Handler::Naive => "a naive",
            Handler::CheckThenInsert => "b check-then-insert",
            Handler::Atomic => "c atomic insert",
            Handler::CreatedGte => "d order by created>=",
            Handler::CreatedGt => "d order by created>",
            Handler::VersionGuard => "d version guard",
            Handler::CheckInTransaction => "check in one transaction (serial)",
        }
    }

    /// The design that runs this handler for real.
    pub fn design(self) -> Design {
        match self {
            Handler::Naive => Design::Naive,
            Handler::CheckThenInsert => Design::CheckThenInsert,
            Handler::Atomic => Design::Atomic,
            Handler::CreatedGte => Design::CreatedGte,
            Handler::CreatedGt => Design::CreatedGt,
            Handler::VersionGuard => Design::VersionGuard,
            Handler::CheckInTransaction => Design::CheckInTransaction,
        }
    }

    fn guard(self) -> Guard {
        match self {
            Handler::CreatedGte => Guard::CreatedGte,
            Handler::CreatedGt => Guard::CreatedGt,
            Handler::VersionGuard => Guard::Version,
            _ => Guard::None,
        }
    }

    /// Up to the `await`: `Some(status)` when the handler returned before reaching it.
    fn before_await(self, db: &Db, event: usize) -> Option<u16> {
        match self {
            Handler::CheckThenInsert if db.processed[event] => Some(200),
            _ => None,
        }
    }

    /// After the `await`, to the end.
    fn after_await(self, db: &mut Db, w: &Workload, event: usize) -> u16 {
        match self {
            Handler::Naive => {
                db.apply(w, event, Guard::None);
                200
            }
            Handler::CheckThenInsert => {
                db.apply(w, event, Guard::None);
                if db.processed[event] {
                    return 500; // the primary key refuses the second INSERT
                }
                db.processed[event] = true;
                200
            }
            _ => {
                // BEGIN IMMEDIATE; INSERT ... ON CONFLICT DO NOTHING; apply if inserted; COMMIT.
                // check-in-transaction's SELECT, apply, INSERT is the same step: whole, with no
                // await inside, it runs before or after the other copy's, never between.
                if !db.processed[event] {
                    db.processed[event] = true;
                    db.apply(w, event, self.guard());
                }
                200
            }
        }
    }
}

/// The script's tables: accounts, `processed_events` and `applied`.
struct Db {
    credits: Vec<i64>,
    plan_version: Vec<u32>,
    plan_created: Vec<u64>,
    processed: Vec<bool>,
    applied: Vec<u32>,
    stale_writes: u64,
}

impl Db {
    fn new(w: &Workload) -> Self {
        let accounts = w.config.accounts as usize;
        Self {
            credits: vec![0; accounts],
            plan_version: vec![0; accounts],
            plan_created: vec![0; accounts],
            processed: vec![false; w.events.len()],
            applied: vec![0; w.events.len()],
            stale_writes: 0,
        }
    }

    /// The script's `apply(s, e, guard)`.
    fn apply(&mut self, w: &Workload, event: usize, guard: Guard) {
        let e = &w.events[event];
        let a = e.account as usize;
        match e.kind {
            EventKind::Credit { amount } => self.credits[a] += amount,
            EventKind::Plan { version, .. } => {
                let ok = match guard {
                    Guard::None => true,
                    Guard::Version => version > self.plan_version[a],
                    Guard::CreatedGte => e.created >= self.plan_created[a],
                    Guard::CreatedGt => e.created > self.plan_created[a],
                };
                if !ok {
                    return; // stale: recorded as processed, not applied
                }
                if version < self.plan_version[a] {
                    self.stale_writes += 1;
                }
                self.plan_version[a] = version;
                self.plan_created[a] = e.created;
            }
        }
        self.applied[event] += 1;
    }
}

/// What one handler's run leaves, as the script counts it.
#[derive(Debug, Clone, Serialize)]
pub struct HandlerResult {
    /// Which handler.
    pub handler: Handler,
    /// The script's row label.
    pub label: &'static str,
    /// Every attempt that reached the handler.
    pub deliveries: u64,
    /// Attempts answered 5xx.
    pub errors: u64,
    /// The correctness figures (dup events, extra applies, lost, stale writes, stale accounts,
    /// ledger, expected).
    #[serde(flatten)]
    pub figures: Figures,
    /// The traced event's attempts, as the script logs them.
    pub trace_log: Vec<String>,
    /// How many times the traced event was applied.
    pub traced_applied: u32,
    /// The tie example's account plan version right after its older update's first attempt.
    pub tie_after: Option<u32>,
}

/// Replays the plan through one handler (the script's `runHandler`).
pub fn run_handler(
    handler: Handler,
    w: &Workload,
    trace: Option<usize>,
    tie_trace: Option<usize>,
) -> HandlerResult {
    let mut db = Db::new(w);
    let mut queue: VecDeque<Group> = w.groups.iter().copied().collect();
    let mut attempts = vec![0u32; w.events.len()];
    let (mut deliveries, mut errors) = (0u64, 0u64);
    let mut trace_log = Vec::new();
    let mut tie_after = None;
    let mut outcomes: Vec<(Option<u16>, u32)> = Vec::with_capacity(2);

    while let Some(g) = queue.pop_front() {
        let ev = g.event as usize;
        let e = &w.events[ev];
        outcomes.clear();
        for _ in 0..g.copies {
            attempts[ev] += 1;
            outcomes.push((handler.before_await(&db, ev), attempts[ev]));
        }
        for outcome in &mut outcomes {
            if outcome.0.is_none() {
                outcome.0 = Some(handler.after_await(&mut db, w, ev));
            }
        }
        for &(status, n) in &outcomes {
            let status = status.unwrap_or(200);
            deliveries += 1;
            let traced = trace == Some(ev);
            if traced {
                trace_log.push(format!("{} attempt {n}: {status}", g.kind));
            }
            if tie_trace == Some(ev) && n == 1 {
                tie_after = Some(db.plan_version[e.account as usize]);
            }
            let retry = if status >= 500 {
                errors += 1;
                Some(GroupKind::RetryAfter500)
            } else if w.ack_lost(e.id(), n) {
                if let (true, Some(last)) = (traced, trace_log.last_mut()) {
                    last.push_str(" (response lost, sender retries)");
                }
                Some(GroupKind::RetryAfterTimeout)
            } else {
                None
            };
            if let Some(kind) = retry {
                let at = w.retry_at(e.id(), n, g.at);
                // Before the first queued group planned later: after any planned at the same time.
                let i = queue.iter().position(|q| q.at > at).unwrap_or(queue.len());
                queue.insert(i, Group { at, event: g.event, copies: 1, kind });
            }
        }
    }

    let (mut dup_events, mut extra_applies, mut lost) = (0, 0, 0);
    for e in w.events.iter().filter(|e| e.is_credit()) {
        let c = u64::from(db.applied[e.idx as usize]);
        if c == 0 {
            lost += 1;
        }
        if c > 1 {
            dup_events += 1;
            extra_applies += c - 1;
        }
    }
    let stale_accounts = w
        .latest_plan
        .iter()
        .zip(&db.plan_version)
        .filter(|&(&latest, &now)| latest > 0 && now != latest)
        .count() as u64;
    HandlerResult {
        handler,
        label: handler.label(),
        deliveries,
        errors,
        figures: Figures {
            dup_events,
            extra_applies,
            lost,
            never_applied: 0,
            stale_writes: db.stale_writes,
            stale_accounts,
            ledger: db.credits.iter().sum(),
            expected: w.expected_ledger(),
        },
        trace_log,
        traced_applied: trace.map_or(0, |t| db.applied[t]),
        tie_after,
    }
}

impl From<&HandlerResult> for crate::report::model::ModelFigures {
    fn from(h: &HandlerResult) -> Self {
        Self {
            handler: h.label.to_string(),
            deliveries: h.deliveries,
            status_5xx: h.errors,
            figures: h.figures,
        }
    }
}
