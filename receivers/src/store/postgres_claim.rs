//! A side effect on Postgres, with the atomic designs' claim of the key before it, as one
//! statement: one round trip, and its own transaction.
//!
//! A statement-by-statement claim is five round trips (`BEGIN`, the key, the credit, the ledger
//! row, `COMMIT`), and on a small machine each costs the server about as much as the work it
//! carries: pgbench ran those five statements at 2,001 to 3,023 tx/s here and the same work as one
//! statement at 4,495 to 5,953 (`-M prepared`, 32 clients, three interleaved 5 s rounds,
//! 2026-12-02; reports/performance-history.md). So the key, the credit and the ledger row go as
//! data-modifying `WITH` clauses of one statement, each reading the one before: nothing after the
//! key runs unless the key was inserted. A statement is atomic on its own, so what commits is what the
//! statement-by-statement transaction committed: the key and its side effect together, or, for a
//! key already there, nothing (its conflict, if any, is read and recorded after).
//!
//! Concurrent copies of one event serialise on the key's unique index as before: `ON CONFLICT DO
//! NOTHING` waits for the transaction that inserted the key and, if it committed, inserts
//! nothing, so the credit and the ledger row read no claimed row and write nothing.
//!
//! The credit that would overflow the balance cannot be refused by its own `WHERE` here, as it
//! is in [`super::postgres`]: the key would stay claimed with nothing applied. It is left to
//! Postgres, whose `bigint out of range` (22003) ends the whole statement with nothing written,
//! and is then reported as the same refusal.

use std::sync::LazyLock;

use sqlx::PgConnection;
use sqlx::postgres::PgDatabaseError;

use super::lease_pool::{PgPool as Pool, lease};
use super::postgres_keys::{Keys, guard_where, known_key};
use super::{Applied, Guard, StoreError, overflow};
use crate::event::Event;

/// A credit claimed: $1 the event id, $2 its body hash, $3 the account, $4 the amount; one row
/// affected (the ledger's) when the key was claimed, none when it was there. (Public as
/// [`crate::store::POSTGRES_CLAIM_CREDIT`], for `hookbench perf`'s pgbench to run the same.)
pub const CLAIM_CREDIT: &str = "WITH claim AS (\
     INSERT INTO processed_events (event_id, body_sha256) VALUES ($1, $2) \
     ON CONFLICT DO NOTHING RETURNING event_id), \
     credit AS (INSERT INTO accounts (id, credits) SELECT $3, $4 FROM claim \
     ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + EXCLUDED.credits RETURNING id) \
     INSERT INTO credit_ledger (event_id, account_id, amount) SELECT event_id, $3, $4 FROM claim";

/// A credit with no key (`naive`, `check-then-insert`): $1 the event id, $2 the account, $3 the
/// amount. The credit refuses an overflow by its own `WHERE`, and then the ledger row reads no
/// credited row: no row affected.
const APPLY_CREDIT: &str = "WITH credit AS (\
     INSERT INTO accounts (id, credits) VALUES ($2, $3) \
     ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + EXCLUDED.credits \
     WHERE accounts.credits <= 9223372036854775807 - EXCLUDED.credits RETURNING id) \
     INSERT INTO credit_ledger (event_id, account_id, amount) SELECT $1, id, $3 FROM credit";

/// A plan update claimed under each guard: $1 the event id, $2 its body hash, $3 the account,
/// $4 the plan, $5 its version, $6 its creation time. One row: whether the key was claimed, and
/// whether the plan was written (not when the guard found it stale).
fn claim_plan_sql(guard: Guard) -> &'static str {
    static SQL: LazyLock<[String; 4]> = LazyLock::new(|| {
        Guard::ALL.map(|guard| {
            format!(
                "WITH claim AS (\
                 INSERT INTO processed_events (event_id, body_sha256) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING RETURNING event_id), \
                 plan AS (INSERT INTO accounts (id, plan, plan_version, plan_created) \
                 SELECT $3, $4, $5, $6 FROM claim ON CONFLICT (id) DO UPDATE SET plan = EXCLUDED.plan, \
                 plan_version = EXCLUDED.plan_version, plan_created = EXCLUDED.plan_created{} \
                 RETURNING id) \
                 SELECT EXISTS (SELECT 1 FROM claim), EXISTS (SELECT 1 FROM plan)",
                guard_where(guard)
            )
        })
    });
    &SQL[guard.index()]
}

/// The atomic designs' claim of `event`'s key with its body hash and, when claimed, the event
/// applied under `guard`, in one statement.
pub(super) async fn apply_once(
    pool: &Pool,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
) -> Result<Applied, StoreError> {
    let mut conn = lease(pool).await?;
    let applied = claim(&mut conn, event, body_sha256, guard).await;
    conn.settle(applied).await
}

/// The claim's statement and, for a key already there, what the key says.
async fn claim(
    conn: &mut PgConnection,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
) -> Result<Applied, StoreError> {
    let claimed = match event {
        Event::Credit { id, account, amount, .. } => {
            let done = sqlx::query(CLAIM_CREDIT)
                .bind(id)
                .bind(body_sha256)
                .bind(account)
                .bind(amount)
                .execute(&mut *conn)
                .await
                .map_err(|e| refused_overflow(e, id, *account, *amount))?;
            (done.rows_affected() == 1).then_some(Applied::Applied)
        }
        Event::Plan { id, account, plan, version, created } => {
            let (claimed, written): (bool, bool) = sqlx::query_as(claim_plan_sql(guard))
                .bind(id)
                .bind(body_sha256)
                .bind(account)
                .bind(plan)
                .bind(version)
                .bind(created)
                .fetch_one(&mut *conn)
                .await?;
            claimed.then_some(if written { Applied::Applied } else { Applied::Stale })
        }
    };
    match claimed {
        Some(applied) => Ok(applied),
        None => already_there(conn, event.id(), body_sha256).await,
    }
}

/// A key that was there when the claim ran: it was committed (`ON CONFLICT` waited for it), so
/// it can be read, and what it says is a duplicate or a conflict (recorded).
async fn already_there(
    conn: &mut PgConnection,
    event_id: &str,
    body_sha256: &str,
) -> Result<Applied, StoreError> {
    Ok(known_key(conn, Keys::Processed, event_id, body_sha256).await?.into())
}

/// A credit with no key, in one statement: applied, or refused when it would overflow.
pub(super) async fn apply_credit(
    conn: &mut PgConnection,
    id: &str,
    account: i64,
    amount: i64,
) -> Result<Applied, StoreError> {
    let done = sqlx::query(APPLY_CREDIT).bind(id).bind(account).bind(amount).execute(&mut *conn).await?;
    if done.rows_affected() == 0 {
        return Err(overflow(id, account, amount));
    }
    Ok(Applied::Applied)
}

/// Postgres's `bigint out of range` on the claim's credit, as the refusal it stands for; any other
/// error as it is.
fn refused_overflow(e: sqlx::Error, id: &str, account: i64, amount: i64) -> StoreError {
    let out_of_range = e
        .as_database_error()
        .and_then(|d| d.try_downcast_ref::<PgDatabaseError>())
        .is_some_and(|d| d.code() == "22003");
    if out_of_range { overflow(id, account, amount) } else { e.into() }
}
