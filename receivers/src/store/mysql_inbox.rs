//! The inbox on MySQL and MariaDB: a delivery stored as a row, and the claim loops' transactions,
//! which take pending rows with `FOR UPDATE SKIP LOCKED` (MySQL 8.0, MariaDB 10.6 and later),
//! apply them under the version guard and mark them processed before they commit, as on Postgres
//! (postgres_inbox.rs, whose batch and fallback this follows).
//!
//! MySQL's `UPDATE` returns no rows, so a failed attempt's count is read back after it is counted.
//!
//! A claim runs at READ COMMITTED whatever the session's level. Under InnoDB's REPEATABLE READ a
//! locking read takes next-key locks, gaps included, so the claim's scan of the pending rows locked
//! the gap where every new delivery's row goes, and the deliveries' inserts deadlocked with it:
//! 7,008 answers of 5xx (error 1213) in one default bench cell on MariaDB 10.11, and 27 events
//! whose every retry was refused. READ COMMITTED takes no gap locks; the rows a claim reads are
//! still locked (`FOR UPDATE`), and the version guard is what keeps an update from going back,
//! so the design's guarantees do not rest on the level.

use sqlx::mysql::MySqlConnection;
use sqlx::{Connection, Executor, QueryBuilder};

use super::inbox_order::{Claimed, in_account_order};
use super::lease_pool::lease;
use super::mysql::{Pool, apply_in, committed};
use super::mysql_keys::{DUPLICATE_KEY, Keys, error_number, known_key};
use super::{
    Guard, INBOX_BATCH, INBOX_MAX_ATTEMPTS, InboxStep, Known, StoreError, parse_inbox_payload, row_failure,
};

pub(super) async fn store(
    pool: &Pool,
    source: &str,
    webhook_id: &str,
    body_sha256: &str,
    payload: &str,
) -> Result<Option<Known>, StoreError> {
    let mut conn = lease(pool).await?;
    let stored = store_on(&mut conn, source, webhook_id, body_sha256, payload).await;
    conn.settle(stored).await
}

async fn store_on(
    conn: &mut MySqlConnection,
    source: &str,
    webhook_id: &str,
    body_sha256: &str,
    payload: &str,
) -> Result<Option<Known>, StoreError> {
    let inserted = sqlx::query(
        "INSERT INTO webhook_inbox (source, webhook_id, body_sha256, payload) VALUES (?, ?, ?, ?)",
    )
    .bind(source)
    .bind(webhook_id)
    .bind(body_sha256)
    .bind(payload)
    .execute(&mut *conn)
    .await;
    match inserted {
        Ok(_) => Ok(None),
        Err(e) if error_number(&e) == Some(DUPLICATE_KEY) => {
            Ok(Some(known_key(conn, Keys::Inbox, webhook_id, body_sha256).await?))
        }
        Err(e) => Err(e.into()),
    }
}

/// The pending rows, oldest first, that no other transaction holds, at most `?`.
static PENDING: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT id, webhook_id, payload FROM webhook_inbox WHERE processed_at IS NULL \
         AND attempts < {INBOX_MAX_ATTEMPTS} ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED"
    )
});

/// Claims up to [`INBOX_BATCH`] pending rows and applies them in one transaction; after a
/// statement failed (the batch rolled back), the oldest pending row alone.
pub(super) async fn claim(
    pool: &Pool,
    at_claim: &(dyn Fn(&str) + Sync),
) -> Result<Vec<InboxStep>, StoreError> {
    let mut conn = lease(pool).await?;
    let claimed = claim_on(&mut conn, at_claim).await;
    conn.settle(claimed).await
}

async fn claim_on(
    conn: &mut MySqlConnection,
    at_claim: &(dyn Fn(&str) + Sync),
) -> Result<Vec<InboxStep>, StoreError> {
    let batch = committed!(tx = read_committed(conn) => claim_batch(&mut tx, at_claim).await);
    match batch {
        Ok(steps) => Ok(steps),
        Err(e) if e.is_unavailable() => Err(e),
        Err(e) => {
            tracing::debug!(error = %e, "an inbox batch failed and was undone: taking its rows one at a time");
            let one = committed!(tx = read_committed(conn) => claim_one(&mut tx, at_claim).await);
            one.map(|step: Option<InboxStep>| step.into_iter().collect())
        }
    }
}

/// A transaction at READ COMMITTED on `conn` (the level set for the next transaction only).
async fn read_committed(
    conn: &mut MySqlConnection,
) -> Result<sqlx::Transaction<'_, sqlx::MySql>, StoreError> {
    let started = std::time::Instant::now();
    conn.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED").await?;
    let tx = conn.begin().await?;
    crate::timing::since(crate::timing::Stage::Begin, started);
    Ok(tx)
}

async fn claim_batch(
    conn: &mut MySqlConnection,
    at_claim: &(dyn Fn(&str) + Sync),
) -> Result<Vec<InboxStep>, StoreError> {
    let rows: Vec<(i64, String, String)> =
        sqlx::query_as(sqlx::AssertSqlSafe(PENDING.as_str())).bind(INBOX_BATCH).fetch_all(&mut *conn).await?;
    let mut steps = Vec::with_capacity(rows.len());
    for Claimed { row, webhook_id, event } in in_account_order(rows) {
        at_claim(&webhook_id);
        let step = match event {
            Err(error) => failed(conn, row, error.to_string()).await?,
            Ok(event) => match apply_in(conn, &event, Guard::Version).await {
                Ok(applied) => InboxStep::Processed { row, applied },
                // Refused before anything was written: the transaction is whole, the rows held.
                Err(refused @ StoreError::Refused(_)) => failed(conn, row, refused.to_string()).await?,
                Err(e) => return Err(e),
            },
        };
        steps.push(step);
    }
    let processed: Vec<i64> = steps.iter().filter_map(InboxStep::processed_row).collect();
    mark_processed(conn, &processed).await?;
    Ok(steps)
}

/// Marks the rows processed.
async fn mark_processed(conn: &mut MySqlConnection, rows: &[i64]) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut update =
        QueryBuilder::new("UPDATE webhook_inbox SET processed_at = CURRENT_TIMESTAMP(6) WHERE id IN (");
    let mut ids = update.separated(", ");
    for row in rows {
        ids.push_bind(*row);
    }
    update.push(")");
    update.build().execute(&mut *conn).await?;
    Ok(())
}

/// Counts a failed attempt at a row and keeps its error.
async fn failed(conn: &mut MySqlConnection, row: i64, error: String) -> Result<InboxStep, StoreError> {
    sqlx::query("UPDATE webhook_inbox SET attempts = attempts + 1, last_error = ? WHERE id = ?")
        .bind(&error)
        .bind(row)
        .execute(&mut *conn)
        .await?;
    let attempts: i64 = sqlx::query_scalar("SELECT attempts FROM webhook_inbox WHERE id = ?")
        .bind(row)
        .fetch_one(&mut *conn)
        .await?;
    Ok(InboxStep::Failed { row, attempts, error })
}

/// Claims, applies and marks the oldest pending row, its side effect under a savepoint: a side
/// effect that fails in any way is undone while the row stays claimed, and its attempt is counted
/// in the same transaction.
async fn claim_one(
    conn: &mut MySqlConnection,
    at_claim: &(dyn Fn(&str) + Sync),
) -> Result<Option<InboxStep>, StoreError> {
    let row: Option<(i64, String, String)> =
        sqlx::query_as(sqlx::AssertSqlSafe(PENDING.as_str())).bind(1_i64).fetch_optional(&mut *conn).await?;
    let Some((row, webhook_id, payload)) = row else {
        return Ok(None);
    };
    at_claim(&webhook_id);
    let mut effect = conn.begin().await?;
    let applied = match parse_inbox_payload(&payload) {
        Ok(event) => match apply_in(&mut effect, &event, Guard::Version).await {
            Err(e) => Err(row_failure(e)?),
            applied => applied.map_err(|e| e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    };
    Ok(Some(match applied {
        Ok(applied) => {
            effect.commit().await?;
            mark_processed(conn, &[row]).await?;
            InboxStep::Processed { row, applied }
        }
        Err(error) => {
            effect.rollback().await?;
            failed(conn, row, error).await?
        }
    }))
}
