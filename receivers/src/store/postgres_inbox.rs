//! The inbox on Postgres: a delivery stored as a row, and the claim loops' transactions, which
//! take pending rows with `FOR UPDATE SKIP LOCKED`, apply them under the version guard and mark
//! them processed before they commit.
//!
//! A claim takes up to [`INBOX_BATCH`] rows in one transaction: one `BEGIN`, one `SELECT`, one
//! statement per row's side effect, one `UPDATE` marking them all, one `COMMIT`. Taken one at a
//! time, a row cost eight round trips (`BEGIN`, the `SELECT`, a savepoint, the credit, the ledger
//! row, its release, the mark, `COMMIT`), and the claim loops drained the bench's backlog for
//! seconds after the last delivery (reports/performance-history.md). A row whose side effect is refused (a
//! malformed payload, a poison credit, an overflow) writes nothing, so its attempt is counted in
//! the same transaction with no savepoint. A statement that fails undoes the whole batch, and the
//! loop then takes the oldest pending row on its own, its side effect under a savepoint, as
//! before: every row is applied and marked in one commit, or neither, and a row's attempt is
//! counted while it is claimed.

use std::sync::LazyLock;

use sqlx::Connection;
use sqlx::postgres::PgConnection;

use super::inbox_order::{Claimed, in_account_order};
use super::lease_pool::{PgPool as Pool, lease};
use super::postgres::{apply_in, begin};
use super::postgres_keys::{Keys, known_key};
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
    let stored = store_row(&mut conn, source, webhook_id, body_sha256, payload).await;
    conn.settle(stored).await
}

/// Inserts the inbox row; `None` when inserted, else what the row already there says.
async fn store_row(
    conn: &mut PgConnection,
    source: &str,
    webhook_id: &str,
    body_sha256: &str,
    payload: &str,
) -> Result<Option<Known>, StoreError> {
    let done = sqlx::query(
        "INSERT INTO webhook_inbox (source, webhook_id, body_sha256, payload) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (webhook_id) DO NOTHING",
    )
    .bind(source)
    .bind(webhook_id)
    .bind(body_sha256)
    .bind(payload)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 1 {
        return Ok(None);
    }
    Ok(Some(known_key(conn, Keys::Inbox, webhook_id, body_sha256).await?))
}

/// Claims up to [`INBOX_BATCH`] pending rows and applies them in one transaction; after a
/// statement failed, the oldest pending row alone.
pub(super) async fn claim(
    pool: &Pool,
    at_claim: &(dyn Fn(&str) + Sync),
) -> Result<Vec<InboxStep>, StoreError> {
    let mut conn = lease(pool).await?;
    let batch = claim_batch(&mut conn, at_claim).await;
    match conn.settle(batch).await {
        Err(e) if !e.is_unavailable() => {
            tracing::debug!(error = %e, "an inbox batch failed and was undone: taking its rows one at a time");
            let mut conn = lease(pool).await?;
            let step = claim_one(&mut conn, at_claim).await;
            conn.settle(step).await.map(|step| step.into_iter().collect())
        }
        done => done,
    }
}

/// The pending rows, oldest first, that no other transaction holds, at most $1: `(id, webhook
/// id, payload)`. The attempts' bound is written into the statement, not bound, so that the
/// planner can see that the partial index `webhook_inbox_pending` covers it.
static PENDING: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT id, webhook_id, payload FROM webhook_inbox WHERE processed_at IS NULL \
         AND attempts < {INBOX_MAX_ATTEMPTS} ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1"
    )
});

/// Counts a failed attempt at a row and keeps its error; the attempts so far.
const FAILED: &str =
    "UPDATE webhook_inbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1 RETURNING attempts";

/// Marks the rows of an array of ids processed.
const PROCESSED: &str = "UPDATE webhook_inbox SET processed_at = now() WHERE id = ANY($1)";

async fn claim_batch(
    conn: &mut PgConnection,
    at_claim: &(dyn Fn(&str) + Sync),
) -> Result<Vec<InboxStep>, StoreError> {
    let mut tx = begin(conn).await?;
    let rows: Vec<(i64, String, String)> =
        sqlx::query_as(PENDING.as_str()).bind(INBOX_BATCH).fetch_all(&mut *tx).await?;
    let mut steps = Vec::with_capacity(rows.len());
    for Claimed { row, webhook_id, event } in in_account_order(rows) {
        at_claim(&webhook_id);
        let step = match event {
            Err(error) => failed(&mut tx, row, error.to_string()).await?,
            Ok(event) => match apply_in(&mut tx, &event, Guard::Version).await {
                Ok(applied) => InboxStep::Processed { row, applied },
                // Refused before anything was written: the transaction is whole, the rows held.
                Err(refused @ StoreError::Refused(_)) => failed(&mut tx, row, refused.to_string()).await?,
                Err(e) => return Err(e),
            },
        };
        steps.push(step);
    }
    let processed: Vec<i64> = steps.iter().filter_map(InboxStep::processed_row).collect();
    if !processed.is_empty() {
        sqlx::query(PROCESSED).bind(&processed).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(steps)
}

async fn failed(conn: &mut PgConnection, row: i64, error: String) -> Result<InboxStep, StoreError> {
    let attempts: i64 = sqlx::query_scalar(FAILED).bind(row).bind(&error).fetch_one(&mut *conn).await?;
    Ok(InboxStep::Failed { row, attempts, error })
}

/// Claims, applies and marks the oldest pending row in one transaction, its side effect under a
/// savepoint: a side effect that fails in any way is undone while the row stays claimed, and its
/// attempt is counted in the same transaction, so no other worker can take the row between.
async fn claim_one(
    conn: &mut PgConnection,
    at_claim: &(dyn Fn(&str) + Sync),
) -> Result<Option<InboxStep>, StoreError> {
    let mut tx = begin(conn).await?;
    let row: Option<(i64, String, String)> =
        sqlx::query_as(PENDING.as_str()).bind(1_i64).fetch_optional(&mut *tx).await?;
    let Some((row, webhook_id, payload)) = row else {
        tx.commit().await?;
        return Ok(None);
    };
    at_claim(&webhook_id);
    let mut effect = tx.begin().await?;
    let applied = match parse_inbox_payload(&payload) {
        Ok(event) => match apply_in(&mut effect, &event, Guard::Version).await {
            Err(e) => Err(row_failure(e)?),
            applied => applied.map_err(|e| e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    };
    let step = match applied {
        Ok(applied) => {
            effect.commit().await?;
            sqlx::query(PROCESSED).bind([row]).execute(&mut *tx).await?;
            InboxStep::Processed { row, applied }
        }
        Err(error) => {
            effect.rollback().await?;
            failed(&mut tx, row, error).await?
        }
    };
    tx.commit().await?;
    Ok(Some(step))
}
