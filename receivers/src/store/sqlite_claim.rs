//! A side effect on SQLite, with the atomic designs' claim of the key before it, in one round trip
//! to a pooled sqlx connection: what an in-memory database runs, which only the pool's connections
//! can reach, and what `hookbench perf`'s loop runs. A file's claims and credits run on its writer
//! thread instead (sqlite_writer.rs), which has no round trip inside the write turn at all; the
//! [`Write`]s are the same, and so are their statements' effects.
//!
//! sqlx runs each SQLite connection on a thread of its own, and every statement is a round trip
//! to it: a message, the thread woken, the answer, the task woken. Measured here
//! (reports/performance-history.md) a round trip costs about as much as SQLite's whole work for a credit, and the
//! file's writer holds the write turn through every one. So a claim that sent `BEGIN
//! IMMEDIATE`, the key, the credit, the ledger row and `COMMIT` one by one held up every other
//! writer of the file for five round trips; here they go as one string of statements (sqlx runs
//! them in turn, binding `?N` across them), each after the key doing nothing unless the one before
//! it changed a row. What commits is what the statement-by-statement claim committed: the key and
//! its side effect together, or, for a key already there, nothing (its conflict, if any, is read
//! and recorded after, still in the writer's turn).
//!
//! `COMMIT` is in the string, so nothing in it may be refused half-way: a credit that would
//! overflow the balance is refused by the key's own `WHERE` (the balance cannot move under
//! `BEGIN IMMEDIATE`), so neither the key nor the credit is written, and a key that is not there
//! afterwards says so. A statement that fails stops the string before `COMMIT`, and the second
//! round trip is `ROLLBACK`.
//!
//! The transaction is SQLite's own (`BEGIN IMMEDIATE` in the string), not an sqlx
//! `Transaction` that would roll itself back when dropped, so the claim runs as a task of its own:
//! a request dropped half-way (its client gone) does not leave a pooled connection inside an open
//! transaction, holding the file's write lock.

use std::sync::LazyLock;

use futures_util::TryStreamExt;
use sqlx::pool::PoolConnection;
use sqlx::{Executor, Sqlite};

use super::sqlite_sql::{Keys, guard_where, known_key};
use super::writers::Turn;
use super::{Applied, Guard, StoreError, overflow};
use crate::event::Event;

/// A credit claimed: ?1 the event id, ?2 its body hash, ?3 the account, ?4 the amount. The
/// statements' results come in order: `BEGIN`, the key, the credit, the ledger row, `COMMIT`. The
/// key is claimed only when the credit will not overflow the balance. (Public as
/// [`crate::store::SQLITE_CLAIM_CREDIT`], for `hookbench perf`'s loop to run the same.)
pub const CLAIM_CREDIT: &str = "BEGIN IMMEDIATE; \
     INSERT INTO processed_events (event_id, body_sha256) SELECT ?1, ?2 \
     WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE id = ?3 AND credits > 9223372036854775807 - ?4) \
     ON CONFLICT DO NOTHING; \
     INSERT INTO accounts (id, credits) SELECT ?3, ?4 WHERE changes() = 1 \
     ON CONFLICT (id) DO UPDATE SET credits = credits + excluded.credits \
     WHERE credits <= 9223372036854775807 - excluded.credits; \
     INSERT INTO credit_ledger (event_id, account_id, amount) SELECT ?1, ?3, ?4 WHERE changes() = 1; \
     COMMIT";

/// A plan update claimed under each guard: ?1 the event id, ?2 its body hash, ?3 the account,
/// ?4 the plan, ?5 its version, ?6 its creation time. Results: `BEGIN`, the key, the plan,
/// `COMMIT`.
fn claim_plan_sql(guard: Guard) -> &'static str {
    static SQL: LazyLock<[String; 4]> = LazyLock::new(|| {
        Guard::ALL.map(|guard| {
            format!(
                "BEGIN IMMEDIATE; \
                 INSERT INTO processed_events (event_id, body_sha256) VALUES (?1, ?2) ON CONFLICT DO NOTHING; \
                 INSERT INTO accounts (id, plan, plan_version, plan_created) SELECT ?3, ?4, ?5, ?6 \
                 WHERE changes() = 1 ON CONFLICT (id) DO UPDATE SET plan = excluded.plan, \
                 plan_version = excluded.plan_version, plan_created = excluded.plan_created{}; COMMIT",
                guard_where(guard)
            )
        })
    });
    &SQL[guard.index()]
}

/// A credit applied with no key (`naive`, `check-then-insert`): ?1 the event id, ?2 the
/// account, ?3 the amount. Results: `BEGIN`, the credit, the ledger row, `COMMIT`; a credit
/// refused for overflow writes neither.
const APPLY_CREDIT: &str = "BEGIN IMMEDIATE; \
     INSERT INTO accounts (id, credits) VALUES (?2, ?3) \
     ON CONFLICT (id) DO UPDATE SET credits = credits + excluded.credits \
     WHERE credits <= 9223372036854775807 - excluded.credits; \
     INSERT INTO credit_ledger (event_id, account_id, amount) SELECT ?1, ?2, ?3 WHERE changes() = 1; \
     COMMIT";

/// A write this module sends in one round trip.
#[derive(Debug, Clone)]
pub(super) enum Write {
    /// The atomic designs: `event`'s key claimed with its body hash, then the event applied
    /// under `guard`.
    Claim {
        /// The event.
        event: Event,
        /// The SHA-256 of its body, kept with the key.
        body_sha256: String,
        /// A plan update's ordering guard.
        guard: Guard,
    },
    /// `naive`'s and `check-then-insert`'s credit, with no key (a plan update without a key is
    /// one statement, sent on its own).
    Credit {
        /// The event id, in the ledger row.
        id: String,
        /// The account credited.
        account: i64,
        /// The credits.
        amount: i64,
    },
}

/// Runs `write` in one transaction on `conn` while `turn` is held: its outcome, as the
/// statement-by-statement transaction gives it.
pub(super) async fn apply(
    conn: PoolConnection<Sqlite>,
    turn: Turn,
    write: Write,
) -> Result<Applied, StoreError> {
    // Started once the turn is had: started before the turn it measured no faster (2,050, 1,705
    // and 1,667 deliveries/s in three 5 s `perf --only sqlite` runs, against 2,264, 1,966 and
    // 2,045; reports/performance-history.md).
    let task = tokio::spawn(async move {
        let done = run(conn, &write).await;
        drop(turn);
        done
    });
    task.await.map_err(|_| StoreError::Database(sqlx::Error::WorkerCrashed))?
}

async fn run(mut conn: PoolConnection<Sqlite>, write: &Write) -> Result<Applied, StoreError> {
    let query = match write {
        Write::Claim { event: Event::Credit { id, account, amount, .. }, body_sha256, .. } => {
            sqlx::query(CLAIM_CREDIT).bind(id).bind(body_sha256).bind(account).bind(amount)
        }
        Write::Claim { event: Event::Plan { id, account, plan, version, created }, body_sha256, guard } => {
            sqlx::query(claim_plan_sql(*guard))
                .bind(id)
                .bind(body_sha256)
                .bind(account)
                .bind(plan)
                .bind(version)
                .bind(created)
        }
        Write::Credit { id, account, amount } => {
            sqlx::query(APPLY_CREDIT).bind(id).bind(account).bind(amount)
        }
    };
    let changed: Result<Vec<u64>, sqlx::Error> =
        conn.execute_many(query).map_ok(|r| r.rows_affected()).try_collect().await;
    match changed {
        Ok(changed) => decide(&mut conn, write, &changed).await,
        Err(e) => {
            // Stopped before `COMMIT`: whatever it began is undone. If even that fails, the
            // connection is not handed out again: closed, SQLite rolls back what it left open.
            if conn.execute("ROLLBACK").await.is_err() {
                drop(conn.detach());
            }
            Err(e.into())
        }
    }
}

/// What the statements' counts (`BEGIN`, the key if claimed, the side effect's, `COMMIT`) say
/// happened, once committed.
async fn decide(
    conn: &mut PoolConnection<Sqlite>,
    write: &Write,
    changed: &[u64],
) -> Result<Applied, StoreError> {
    let rows = |i: usize| changed.get(i).copied().unwrap_or(0);
    match write {
        Write::Claim { event, body_sha256, .. } if rows(1) == 0 => {
            let refused = match event {
                Event::Credit { id, account, amount, .. } => Some(overflow(id, *account, *amount)),
                Event::Plan { .. } => None,
            };
            already_there_or(conn, event.id(), body_sha256, refused).await
        }
        // Claimed only with the credit: a key without its ledger row cannot commit from this
        // string, and if one did it is not acknowledged.
        Write::Claim { event: Event::Credit { id, account, amount, .. }, .. } if rows(3) == 0 => {
            Err(overflow(id, *account, *amount))
        }
        Write::Claim { event: Event::Credit { .. }, .. } => Ok(Applied::Applied),
        Write::Claim { event: Event::Plan { .. }, .. } => {
            Ok(if rows(2) == 1 { Applied::Applied } else { Applied::Stale })
        }
        // The ledger row is written only when the credit was: a credit refused was an overflow.
        Write::Credit { id, account, amount } if rows(2) == 0 => Err(overflow(id, *account, *amount)),
        Write::Credit { .. } => Ok(Applied::Applied),
    }
}

/// A claim that inserted no key: the key was there (a duplicate, or a conflict, recorded), or,
/// when it is not, the claim refused itself with `refused`.
async fn already_there_or(
    conn: &mut PoolConnection<Sqlite>,
    event_id: &str,
    body_sha256: &str,
    refused: Option<StoreError>,
) -> Result<Applied, StoreError> {
    if let Some(refused) = refused {
        let present: Option<i64> = sqlx::query_scalar("SELECT 1 FROM processed_events WHERE event_id = ?1")
            .bind(event_id)
            .fetch_optional(&mut **conn)
            .await?;
        if present.is_none() {
            return Err(refused);
        }
    }
    Ok(known_key(conn, Keys::Processed, event_id, body_sha256).await?.into())
}
