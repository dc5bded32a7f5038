//! The Postgres dialect: `$n` parameters, `EXCLUDED`, `FOR UPDATE SKIP LOCKED`, isolation levels.

use std::str::FromStr;
use std::sync::LazyLock;

use sqlx::Connection;
use sqlx::error::DatabaseError;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgDatabaseError};

use super::lease_pool::{PgPool as Pool, lease, lease_answering};
use super::postgres_keys::{Keys, guard_where, known_key};
use super::{Applied, Guard, Isolation, Known, StoreError, StoreOptions, check_side_effect, postgres_claim};
use crate::event::Event;
use crate::timing::{self, Stage};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<Pool, StoreError> {
    let mut connect = PgConnectOptions::from_str(url)?.application_name(&options.application_name);
    if let Some(level) = options.isolation {
        let level = match level {
            Isolation::ReadCommitted => "read committed",
            Isolation::RepeatableRead => "repeatable read",
            Isolation::Serializable => "serializable",
        };
        connect = connect.options([("default_transaction_isolation", level)]);
    }
    // No ping before a connection is handed out, nor after it comes back (lease_pool.rs). A
    // connection the server dropped fails the delivery's first statement instead; that delivery
    // answers 5xx (nothing stored, nothing acknowledged), the connection is closed, and the
    // sender's retry gets another.
    super::lease_pool::pool(connect, Vec::new(), options.max_connections, options.acquire_timeout)
}

pub(super) async fn migrate(pool: &Pool) -> Result<(), StoreError> {
    // Postgres migrations take an advisory lock, so workers starting together are safe.
    let mut conn = lease(pool).await?;
    let migrated = MIGRATOR.run(&mut *conn).await.map_err(StoreError::from);
    conn.settle(migrated).await
}

/// Whether a server error says the database cannot serve now rather than refusing one
/// statement: a connection exception (class 08), an administrator or crash shutdown or a server
/// still starting (57P01-57P03), too many connections (53300), or a read-only database (25006).
pub(super) fn is_unavailable(e: &dyn DatabaseError) -> bool {
    e.try_downcast_ref::<PgDatabaseError>().is_some_and(|e| {
        let code = e.code();
        code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300" | "25006")
    })
}

/// A write made and rolled back, on a connection that answers a ping (lease_pool.rs's
/// `lease_answering`): fails when the database is out of reach or read-only.
pub(super) async fn probe_write(pool: &Pool) -> Result<(), StoreError> {
    let mut conn = lease_answering(pool).await?;
    let probed = rolled_back_write(&mut conn).await;
    conn.settle(probed).await
}

async fn rolled_back_write(conn: &mut PgConnection) -> Result<(), StoreError> {
    let mut tx = conn.begin().await?;
    sqlx::query("INSERT INTO receiver_probe (id) VALUES (1)").execute(&mut *tx).await?;
    tx.rollback().await?;
    Ok(())
}

/// `BEGIN` on `conn`, timed (one round trip).
pub(super) async fn begin(
    conn: &mut PgConnection,
) -> Result<sqlx::Transaction<'_, sqlx::Postgres>, StoreError> {
    let started = std::time::Instant::now();
    let tx = conn.begin().await?;
    timing::since(Stage::Begin, started);
    Ok(tx)
}

fn plan_sql(guard: Guard) -> &'static str {
    static SQL: LazyLock<[String; 4]> = LazyLock::new(|| {
        Guard::ALL.map(|guard| {
            format!(
                "INSERT INTO accounts (id, plan, plan_version, plan_created) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (id) DO UPDATE SET plan = EXCLUDED.plan, plan_version = EXCLUDED.plan_version, \
                 plan_created = EXCLUDED.plan_created{}",
                guard_where(guard)
            )
        })
    });
    &SQL[guard.index()]
}

/// The side effect, inside the caller's transaction: a credit and its ledger row as one statement
/// (postgres_claim.rs), a plan update under `guard`. A side effect refused ([`StoreError::Refused`])
/// has written nothing.
pub(super) async fn apply_in(
    conn: &mut PgConnection,
    event: &Event,
    guard: Guard,
) -> Result<Applied, StoreError> {
    check_side_effect(event)?;
    match event {
        Event::Credit { id, account, amount, .. } => {
            postgres_claim::apply_credit(conn, id, *account, *amount).await
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

pub(super) async fn apply(pool: &Pool, event: &Event, guard: Guard) -> Result<Applied, StoreError> {
    let mut conn = lease(pool).await?;
    // One statement, or a refusal before any: on its own, Postgres makes it a transaction.
    let applied = apply_in(&mut conn, event, guard).await;
    conn.settle(applied).await
}

/// Inserts the event's key with its body hash, doing nothing when it is there; whether it was
/// inserted.
async fn insert_key(conn: &mut PgConnection, event_id: &str, body_sha256: &str) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "INSERT INTO processed_events (event_id, body_sha256) VALUES ($1, $2) ON CONFLICT DO NOTHING",
    )
    .bind(event_id)
    .bind(body_sha256)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub(super) async fn check_key(
    pool: &Pool,
    event_id: &str,
    body_sha256: &str,
) -> Result<Option<Known>, StoreError> {
    let mut conn = lease(pool).await?;
    let known = key_there(&mut conn, event_id, body_sha256).await;
    conn.settle(known).await
}

/// What the event's key says, if it is there.
async fn key_there(
    conn: &mut PgConnection,
    event_id: &str,
    body_sha256: &str,
) -> Result<Option<Known>, StoreError> {
    let present: Option<i32> = sqlx::query_scalar("SELECT 1 FROM processed_events WHERE event_id = $1")
        .bind(event_id)
        .fetch_optional(&mut *conn)
        .await?;
    if present.is_none() {
        return Ok(None);
    }
    Ok(Some(known_key(conn, Keys::Processed, event_id, body_sha256).await?))
}

pub(super) async fn mark_processed(
    pool: &Pool,
    event_id: &str,
    body_sha256: &str,
) -> Result<Option<Known>, StoreError> {
    let mut conn = lease(pool).await?;
    let marked = mark(&mut conn, event_id, body_sha256).await;
    conn.settle(marked).await
}

/// Inserts the key; `None` when inserted, else what the key already there says.
async fn mark(
    conn: &mut PgConnection,
    event_id: &str,
    body_sha256: &str,
) -> Result<Option<Known>, StoreError> {
    if insert_key(conn, event_id, body_sha256).await? {
        return Ok(None);
    }
    Ok(Some(known_key(conn, Keys::Processed, event_id, body_sha256).await?))
}

pub(super) async fn apply_once(
    pool: &Pool,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
    after_key: Option<&(dyn Fn() + Sync)>,
) -> Result<Applied, StoreError> {
    // Nothing to run between the key and a side effect that can apply: both go in one statement
    // (postgres_claim.rs). A poison event takes the path below, which refuses it only once its key
    // is claimed.
    let after_key = match after_key {
        None if check_side_effect(event).is_ok() => {
            return postgres_claim::apply_once(pool, event, body_sha256, guard).await;
        }
        None => &|| {},
        Some(after_key) => after_key,
    };
    let mut conn = lease(pool).await?;
    let applied = claim_step_by_step(&mut conn, event, body_sha256, guard, after_key).await;
    conn.settle(applied).await
}

/// The claim statement by statement, with `after_key` between the key and the side effect.
async fn claim_step_by_step(
    conn: &mut PgConnection,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
    after_key: &(dyn Fn() + Sync),
) -> Result<Applied, StoreError> {
    let mut tx = begin(conn).await?;
    if !insert_key(&mut tx, event.id(), body_sha256).await? {
        // The key's transaction has committed (ON CONFLICT waited for it), so it can be read.
        let known = known_key(&mut tx, Keys::Processed, event.id(), body_sha256).await?;
        tx.commit().await?;
        return Ok(known.into());
    }
    apply_if_claimed(tx, true, event, guard, after_key).await
}

/// Ends a claim transaction: commits and reports a duplicate when the key was already there;
/// otherwise calls `after_key`, applies the side effect and commits both together.
async fn apply_if_claimed(
    mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
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

pub(super) async fn apply_once_until(
    pool: &Pool,
    event: &Event,
    now: f64,
    ttl: f64,
) -> Result<Applied, StoreError> {
    let mut conn = lease(pool).await?;
    let applied = claim_expiring(&mut conn, event, now, ttl).await;
    conn.settle(applied).await
}

/// The claim of an expiring key and, when claimed, the side effect, in one transaction.
async fn claim_expiring(
    conn: &mut PgConnection,
    event: &Event,
    now: f64,
    ttl: f64,
) -> Result<Applied, StoreError> {
    let mut tx = begin(conn).await?;
    // A key whose time has passed counts as absent, purged or not.
    let claimed = sqlx::query(
        "INSERT INTO dedupe_keys (event_id, expires_at) VALUES ($1, $2) ON CONFLICT (event_id) \
         DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE dedupe_keys.expires_at <= $3",
    )
    .bind(event.id())
    .bind(now + ttl)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    apply_if_claimed(tx, claimed.rows_affected() != 0, event, Guard::None, &|| {}).await
}

pub(super) async fn purge_expired(pool: &Pool, now: f64) -> Result<u64, StoreError> {
    let mut conn = lease(pool).await?;
    let purged = sqlx::query("DELETE FROM dedupe_keys WHERE expires_at <= $1")
        .bind(now)
        .execute(&mut *conn)
        .await
        .map(|done| done.rows_affected())
        .map_err(StoreError::from);
    conn.settle(purged).await
}

/// check-in-transaction: in one transaction, the id looked up in `checked_events` (a plain
/// read), and when it is not there the side effect and the id's row. The table's index is not
/// unique, so what keeps two copies from both applying is the isolation level alone.
pub(super) async fn apply_checked(
    pool: &Pool,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
) -> Result<Applied, StoreError> {
    let mut conn = lease(pool).await?;
    let applied = check_in_transaction(&mut conn, event, body_sha256, guard).await;
    conn.settle(applied).await
}

async fn check_in_transaction(
    conn: &mut PgConnection,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
) -> Result<Applied, StoreError> {
    let mut tx = begin(conn).await?;
    let seen: Option<i32> = sqlx::query_scalar("SELECT 1 FROM checked_events WHERE event_id = $1 LIMIT 1")
        .bind(event.id())
        .fetch_optional(&mut *tx)
        .await?;
    if seen.is_some() {
        let known = known_key(&mut tx, Keys::Checked, event.id(), body_sha256).await?;
        tx.commit().await?;
        return Ok(known.into());
    }
    let applied = apply_in(&mut tx, event, guard).await?;
    sqlx::query("INSERT INTO checked_events (event_id, body_sha256) VALUES ($1, $2)")
        .bind(event.id())
        .bind(body_sha256)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(applied)
}
