//! The SQLite dialect: one file shared by several processes, WAL mode, a busy timeout, and the
//! write lock taken up front (`BEGIN IMMEDIATE`) in every writing transaction, so a transaction
//! never has to upgrade a read lock (which SQLite refuses with "database is locked" instead of
//! waiting). SQLite's transactions are serializable, so the version guard and the inbox claim
//! need no row locks.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Connection, SqlitePool};

use super::{
    Applied, Guard, INBOX_MAX_ATTEMPTS, InboxStep, StoreError, StoreOptions, check_side_effect,
    parse_inbox_payload,
};
use crate::event::Event;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<SqlitePool, StoreError> {
    let connect = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // WAL with synchronous=NORMAL survives any process crash (what the tests inflict); only
        // an operating-system crash can lose the last commits.
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(options.busy_timeout);
    Ok(SqlitePoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .connect_with(connect)
        .await?)
}

pub(super) async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    // Workers starting together on a new file may race to create the schema; the loser's
    // migration transaction rolls back, and on the next try it finds the schema applied.
    let mut tries = 0;
    loop {
        match MIGRATOR.run(pool).await {
            Ok(()) => return Ok(()),
            Err(_) if tries < 10 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50 * tries)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

const CREDIT: &str = "INSERT INTO accounts (id, credits) VALUES (?1, ?2) \
     ON CONFLICT (id) DO UPDATE SET credits = credits + excluded.credits";
const LEDGER: &str = "INSERT INTO credit_ledger (event_id, account_id, amount) VALUES (?1, ?2, ?3)";

fn plan_sql(guard: Guard) -> &'static str {
    match guard {
        Guard::None => {
            "INSERT INTO accounts (id, plan, plan_version, plan_created) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (id) DO UPDATE SET plan = excluded.plan, plan_version = excluded.plan_version, \
             plan_created = excluded.plan_created"
        }
        Guard::CreatedGte => {
            "INSERT INTO accounts (id, plan, plan_version, plan_created) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (id) DO UPDATE SET plan = excluded.plan, plan_version = excluded.plan_version, \
             plan_created = excluded.plan_created WHERE plan_created <= excluded.plan_created"
        }
        Guard::CreatedGt => {
            "INSERT INTO accounts (id, plan, plan_version, plan_created) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (id) DO UPDATE SET plan = excluded.plan, plan_version = excluded.plan_version, \
             plan_created = excluded.plan_created WHERE plan_created < excluded.plan_created"
        }
        Guard::Version => {
            "INSERT INTO accounts (id, plan, plan_version, plan_created) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (id) DO UPDATE SET plan = excluded.plan, plan_version = excluded.plan_version, \
             plan_created = excluded.plan_created WHERE plan_version < excluded.plan_version"
        }
    }
}

/// The side effect, inside the caller's transaction.
async fn apply_in(conn: &mut SqliteConnection, event: &Event, guard: Guard) -> Result<Applied, StoreError> {
    check_side_effect(event)?;
    match event {
        Event::Credit { id, account, amount, .. } => {
            sqlx::query(CREDIT).bind(account).bind(amount).execute(&mut *conn).await?;
            sqlx::query(LEDGER).bind(id).bind(account).bind(amount).execute(&mut *conn).await?;
            Ok(Applied::Applied)
        }
        Event::Plan { account, plan, version, created, .. } => {
            let done = sqlx::query(plan_sql(guard))
                .bind(account)
                .bind(plan)
                .bind(version)
                .bind(created)
                .execute(&mut *conn)
                .await?;
            Ok(if done.rows_affected() == 0 { Applied::Stale } else { Applied::Applied })
        }
    }
}

pub(super) async fn apply(pool: &SqlitePool, event: &Event, guard: Guard) -> Result<Applied, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let applied = apply_in(&mut tx, event, guard).await?;
    tx.commit().await?;
    Ok(applied)
}

pub(super) async fn is_processed(pool: &SqlitePool, event_id: &str) -> Result<bool, StoreError> {
    let found: Option<i32> = sqlx::query_scalar("SELECT 1 FROM processed_events WHERE event_id = ?1")
        .bind(event_id)
        .fetch_optional(pool)
        .await?;
    Ok(found.is_some())
}

pub(super) async fn mark_processed(pool: &SqlitePool, event_id: &str) -> Result<bool, StoreError> {
    match sqlx::query("INSERT INTO processed_events (event_id) VALUES (?1)")
        .bind(event_id)
        .execute(pool)
        .await
    {
        Ok(_) => Ok(true),
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn apply_once(
    pool: &SqlitePool,
    event: &Event,
    guard: Guard,
    after_key: &(dyn Fn() + Sync),
) -> Result<Applied, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let claimed = sqlx::query("INSERT INTO processed_events (event_id) VALUES (?1) ON CONFLICT DO NOTHING")
        .bind(event.id())
        .execute(&mut *tx)
        .await?;
    apply_if_claimed(tx, claimed.rows_affected() != 0, event, guard, after_key).await
}

/// Ends a claim transaction: commits and reports a duplicate when the key was already there;
/// otherwise calls `after_key`, applies the side effect and commits both together.
async fn apply_if_claimed(
    mut tx: sqlx::Transaction<'_, sqlx::Sqlite>,
    claimed: bool,
    event: &Event,
    guard: Guard,
    after_key: &(dyn Fn() + Sync),
) -> Result<Applied, StoreError> {
    if !claimed {
        tx.commit().await?;
        return Ok(Applied::Duplicate);
    }
    after_key();
    let applied = apply_in(&mut tx, event, guard).await?;
    tx.commit().await?;
    Ok(applied)
}

pub(super) async fn inbox_store(
    pool: &SqlitePool,
    source: &str,
    webhook_id: &str,
    payload: &str,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "INSERT INTO webhook_inbox (source, webhook_id, payload) VALUES (?1, ?2, ?3) \
         ON CONFLICT (source, webhook_id) DO NOTHING",
    )
    .bind(source)
    .bind(webhook_id)
    .bind(payload)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub(super) async fn inbox_step(
    pool: &SqlitePool,
    at_claim: &(dyn Fn(&str) + Sync),
) -> Result<Option<InboxStep>, StoreError> {
    // The write lock is the claim: no other process can take a row until this commits.
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let row: Option<(i64, String, String)> = sqlx::query_as(
        "SELECT id, webhook_id, payload FROM webhook_inbox WHERE processed_at IS NULL AND attempts < ?1 ORDER BY id LIMIT 1",
    )
    .bind(INBOX_MAX_ATTEMPTS)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((row, webhook_id, payload)) = row else {
        tx.commit().await?;
        return Ok(None);
    };
    at_claim(&webhook_id);
    // The side effect runs in a savepoint, so a failure is undone while the lock is still held,
    // and its attempt is counted in the same transaction: no other worker can take the row between.
    let mut effect = tx.begin().await?;
    let applied = match parse_inbox_payload(&payload) {
        Ok(event) => apply_in(&mut effect, &event, Guard::Version).await.map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    let step = match applied {
        Ok(applied) => {
            effect.commit().await?;
            sqlx::query(
                "UPDATE webhook_inbox SET processed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
            )
            .bind(row)
            .execute(&mut *tx)
            .await?;
            InboxStep::Processed { row, applied }
        }
        Err(error) => {
            effect.rollback().await?;
            let attempts: i64 = sqlx::query_scalar(
                "UPDATE webhook_inbox SET attempts = attempts + 1, last_error = ?2 WHERE id = ?1 RETURNING attempts",
            )
            .bind(row)
            .bind(&error)
            .fetch_one(&mut *tx)
            .await?;
            InboxStep::Failed { row, attempts, error }
        }
    };
    tx.commit().await?;
    Ok(Some(step))
}

pub(super) async fn apply_once_until(
    pool: &SqlitePool,
    event: &Event,
    now: f64,
    ttl: f64,
) -> Result<Applied, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    // A key whose time has passed counts as absent, purged or not.
    let claimed = sqlx::query(
        "INSERT INTO dedupe_keys (event_id, expires_at) VALUES (?1, ?2) ON CONFLICT (event_id) \
         DO UPDATE SET expires_at = excluded.expires_at WHERE dedupe_keys.expires_at <= ?3",
    )
    .bind(event.id())
    .bind(now + ttl)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    apply_if_claimed(tx, claimed.rows_affected() != 0, event, Guard::None, &|| {}).await
}

pub(super) async fn purge_expired(pool: &SqlitePool, now: f64) -> Result<u64, StoreError> {
    let done = sqlx::query("DELETE FROM dedupe_keys WHERE expires_at <= ?1").bind(now).execute(pool).await?;
    Ok(done.rows_affected())
}
