//! The MySQL and MariaDB dialect: `?` parameters, `ON DUPLICATE KEY UPDATE`, a duplicate key
//! told by its error (1062) rather than `INSERT IGNORE`, which also turns truncations, bad values
//! and foreign-key failures into warnings and so would acknowledge an event it did not store.
//!
//! Connections come from the store's lease pool (lease_pool.rs), each set up as it opens: the session's isolation level
//! when one is asked for (else the server's own, REPEATABLE READ), and `innodb_lock_wait_timeout`
//! of [`LOCK_WAIT_TIMEOUT_S`], below the sender's 10 s timeout (the server's default, 50 s, is
//! above it: a delivery would time out while its transaction still waited, and the retry would
//! wait behind it); on MariaDB also `max_statement_time` of [`MARIADB_STATEMENT_TIMEOUT_S`],
//! since a lock wait's timeout starts again each time the wait is woken.
//!
//! A statement that fails inside a MySQL transaction does not abort it (unlike Postgres): the
//! duplicate key's error leaves the transaction open, and the code below goes on in it.
//!
//! `rows_affected` counts rows found, not rows changed (sqlx asks for `CLIENT_FOUND_ROWS`), so
//! an upsert cannot say whether it inserted or found an unchanged row: a plan update is an upsert
//! that makes sure the account exists and then a guarded `UPDATE`, whose count of rows found says
//! whether the guard let it through.

use std::str::FromStr;
use std::sync::LazyLock;

use sqlx::error::DatabaseError;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlDatabaseError};
use sqlx::{ConnectOptions, Connection};

use super::lease_pool::{self, lease, lease_answering};

use super::mysql_keys::{DUPLICATE_KEY, Keys, OUT_OF_RANGE, error_number, insert_key, known_key};
use super::{Applied, Guard, Isolation, Known, StoreError, StoreOptions, check_side_effect, overflow};
use crate::event::Event;
use crate::timing::{self, Stage};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/mysql");

/// How long a statement waits for another transaction's row lock before it fails (error 1205),
/// in seconds: below the sender's default timeout of 10 s.
pub const LOCK_WAIT_TIMEOUT_S: u32 = 5;

/// How long one statement may run on MariaDB before the server stops it (error 1969), in
/// seconds: above [`LOCK_WAIT_TIMEOUT_S`], so that an ordinary lock wait still ends as 1205, and
/// below the sender's 10 s. The lock wait's timeout alone does not bound a statement: InnoDB
/// starts it again each time the wait is woken and the lock is still not free. Under SERIALIZABLE,
/// check-in-transaction's inserts at the end of its index were woken again and again by the
/// deadlocks of newer deliveries: one `INSERT` waited 70 s, its transaction's lock list growing,
/// which made it never the deadlock's victim, and while it held its locks no other delivery
/// committed (14 of 5,935 credits applied in one cell at 64 in flight). MySQL has no such limit for writes
/// (its `max_execution_time` is for `SELECT`s), so there a statement waits as long as InnoDB lets it.
pub const MARIADB_STATEMENT_TIMEOUT_S: u32 = 6;

/// The pool: connections lent without a ping (lease_pool.rs).
pub(super) type Pool = lease_pool::MySqlPool;

pub(super) async fn connect(url: &str, options: &StoreOptions) -> Result<Pool, StoreError> {
    let connect = MySqlConnectOptions::from_str(url)?;
    // One connection of its own first, so a wrong URL or a server out of reach fails here with
    // its cause (a refused connection, a denied user): the pool would retry until its timeout
    // and say only that it timed out. It also says which server this is.
    let mut probe = tokio::time::timeout(options.acquire_timeout, connect.connect())
        .await
        .map_err(|_| StoreError::Database(sqlx::Error::PoolTimedOut))??;
    let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(&mut probe).await?;
    probe.close().await?;
    let mut session = vec![format!("SET SESSION innodb_lock_wait_timeout = {LOCK_WAIT_TIMEOUT_S}")];
    if version.contains("MariaDB") {
        session.push(format!("SET SESSION max_statement_time = {MARIADB_STATEMENT_TIMEOUT_S}"));
    }
    if let Some(level) = options.isolation {
        let level = match level {
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::Serializable => "SERIALIZABLE",
        };
        session.push(format!("SET SESSION TRANSACTION ISOLATION LEVEL {level}"));
    }
    lease_pool::pool(connect, session, options.max_connections, options.acquire_timeout)
}

pub(super) async fn migrate(pool: &Pool) -> Result<(), StoreError> {
    // sqlx takes a named lock (GET_LOCK) around MySQL migrations: workers starting together are safe.
    let mut conn = lease(pool).await?;
    let migrated = MIGRATOR.run(&mut *conn).await.map_err(StoreError::from);
    conn.settle(migrated).await
}

/// Whether a server error says the database cannot serve now rather than refusing one statement:
/// too many connections (1040), a server shutting down (1053), a read-only server (1290, 1836),
/// or a server that cannot take connections now (1129 host blocked, 1203 user's connections).
pub(super) fn is_unavailable(e: &dyn DatabaseError) -> bool {
    e.try_downcast_ref::<MySqlDatabaseError>()
        .is_some_and(|e| matches!(e.number(), 1040 | 1053 | 1129 | 1203 | 1290 | 1836))
}

/// A write made and rolled back, on a connection that answers a ping (lease_pool.rs's
/// `lease_answering`): fails when the database is out of reach or read-only.
pub(super) async fn probe_write(pool: &Pool) -> Result<(), StoreError> {
    let mut conn = lease_answering(pool).await?;
    let probed = rolled_back_write(&mut conn).await;
    conn.settle(probed).await
}

async fn rolled_back_write(conn: &mut MySqlConnection) -> Result<(), StoreError> {
    let mut tx = conn.begin().await?;
    sqlx::query("INSERT INTO receiver_probe (id) VALUES (1)").execute(&mut *tx).await?;
    tx.rollback().await?;
    Ok(())
}

/// `BEGIN` on a leased connection, timed.
pub(super) async fn begin(
    conn: &mut MySqlConnection,
) -> Result<sqlx::Transaction<'_, sqlx::MySql>, StoreError> {
    let started = std::time::Instant::now();
    let tx = conn.begin().await?;
    timing::since(Stage::Begin, started);
    Ok(tx)
}

/// Makes sure the account's row exists (a new account's plan is version 0, created 0, which
/// every guard lets the first update past).
const ENSURE_ACCOUNT: &str = "INSERT INTO accounts (id) VALUES (?) ON DUPLICATE KEY UPDATE id = id";

/// The guarded plan update under each guard: ? the plan, its version, its creation time, the
/// account. One row found when the guard let it through, none when it found the update stale.
fn plan_sql(guard: Guard) -> &'static str {
    static SQL: LazyLock<[String; 4]> = LazyLock::new(|| {
        Guard::ALL.map(|guard| {
            let applies_when = match guard {
                Guard::None => "",
                Guard::CreatedGte => " AND plan_created <= ?",
                Guard::CreatedGt => " AND plan_created < ?",
                Guard::Version => " AND plan_version < ?",
            };
            format!(
                "UPDATE accounts SET plan = ?, plan_version = ?, plan_created = ? WHERE id = ?{applies_when}"
            )
        })
    });
    &SQL[guard.index()]
}

/// A credit: the balance grows, or the statement fails with 1690 when it would overflow a
/// BIGINT (strict mode), writing nothing.
pub(super) const CREDIT: &str = "INSERT INTO accounts (id, credits) VALUES (?, ?) ON DUPLICATE KEY UPDATE credits = credits + VALUES(credits)";
pub(super) const LEDGER: &str = "INSERT INTO credit_ledger (event_id, account_id, amount) VALUES (?, ?, ?)";

/// The side effect, inside the caller's transaction: a credit and its ledger row, a plan update
/// under `guard`. A side effect refused ([`StoreError::Refused`]) has written nothing.
pub(super) async fn apply_in(
    conn: &mut MySqlConnection,
    event: &Event,
    guard: Guard,
) -> Result<Applied, StoreError> {
    check_side_effect(event)?;
    match event {
        Event::Credit { id, account, amount, .. } => {
            sqlx::query(CREDIT).bind(account).bind(amount).execute(&mut *conn).await.map_err(|e| {
                if error_number(&e) == Some(OUT_OF_RANGE) {
                    overflow(id, *account, *amount)
                } else {
                    e.into()
                }
            })?;
            sqlx::query(LEDGER).bind(id).bind(account).bind(amount).execute(&mut *conn).await?;
            Ok(Applied::Applied)
        }
        Event::Plan { account, plan, version, created, .. } => {
            sqlx::query(ENSURE_ACCOUNT).bind(account).execute(&mut *conn).await?;
            let mut update =
                sqlx::query(plan_sql(guard)).bind(plan).bind(version).bind(created).bind(account);
            update = match guard {
                Guard::None => update,
                Guard::CreatedGte | Guard::CreatedGt => update.bind(created),
                Guard::Version => update.bind(version),
            };
            let found = update.execute(&mut *conn).await?.rows_affected();
            Ok(if found == 0 { Applied::Stale } else { Applied::Applied })
        }
    }
}

/// Runs `work` in the transaction `$begin` opens: committed when it returns `Ok`, rolled back
/// when it fails (a statement's failure leaves a MySQL transaction open, so it is ended here).
macro_rules! committed {
    ($tx:ident = $begin:expr => $work:expr) => {{
        let mut $tx = $begin.await?;
        match $work {
            Ok(done) => {
                $tx.commit().await?;
                Ok(done)
            }
            Err(e) => {
                let _ = $tx.rollback().await;
                Err(e)
            }
        }
    }};
}
pub(super) use committed;

/// Runs `work` in a transaction of its own on a connection leased for it, and gives the
/// connection back with the outcome (lease_pool.rs).
macro_rules! in_transaction {
    ($pool:expr, |$tx:ident| $work:expr) => {{
        let mut conn = lease($pool).await?;
        let done: Result<_, StoreError> = async { committed!($tx = begin(&mut conn) => $work) }.await;
        conn.settle(done).await
    }};
}

pub(super) async fn apply(pool: &Pool, event: &Event, guard: Guard) -> Result<Applied, StoreError> {
    // A credit is two statements and a plan update two: one transaction, so both or neither.
    in_transaction!(pool, |tx| apply_in(&mut tx, event, guard).await)
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
    conn: &mut MySqlConnection,
    event_id: &str,
    body_sha256: &str,
) -> Result<Option<Known>, StoreError> {
    let present: Option<i32> = sqlx::query_scalar("SELECT 1 FROM processed_events WHERE event_id = ?")
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
    conn: &mut MySqlConnection,
    event_id: &str,
    body_sha256: &str,
) -> Result<Option<Known>, StoreError> {
    if insert_key(conn, event_id, body_sha256).await? {
        return Ok(None);
    }
    Ok(Some(known_key(conn, Keys::Processed, event_id, body_sha256).await?))
}

/// The atomic designs: the key inserted and, only if it was, `after_key` and the side effect, in
/// one transaction. A copy whose key another transaction holds waits on its row lock; when that
/// one commits, the insert fails with a duplicate key and nothing is applied.
pub(super) async fn apply_once(
    pool: &Pool,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
    after_key: Option<&(dyn Fn() + Sync)>,
) -> Result<Applied, StoreError> {
    in_transaction!(pool, |tx| claim(&mut tx, event, body_sha256, guard, after_key).await)
}

async fn claim(
    conn: &mut MySqlConnection,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
    after_key: Option<&(dyn Fn() + Sync)>,
) -> Result<Applied, StoreError> {
    if !insert_key(conn, event.id(), body_sha256).await? {
        return Ok(known_key(conn, Keys::Processed, event.id(), body_sha256).await?.into());
    }
    if let Some(after_key) = after_key {
        after_key();
    }
    apply_in(conn, event, guard).await
}

pub(super) async fn apply_once_until(
    pool: &Pool,
    event: &Event,
    now: f64,
    ttl: f64,
) -> Result<Applied, StoreError> {
    in_transaction!(pool, |tx| claim_expiring(&mut tx, event, now, ttl).await)
}

/// The claim of an expiring key: a key whose time has passed counts as absent, purged or not.
/// The key's row is read with a lock, so a concurrent copy waits for this transaction.
async fn claim_expiring(
    conn: &mut MySqlConnection,
    event: &Event,
    now: f64,
    ttl: f64,
) -> Result<Applied, StoreError> {
    let held: Option<f64> =
        sqlx::query_scalar("SELECT expires_at FROM dedupe_keys WHERE event_id = ? FOR UPDATE")
            .bind(event.id())
            .fetch_optional(&mut *conn)
            .await?;
    let claimed = match held {
        Some(expires_at) if expires_at > now => false,
        Some(_) => {
            sqlx::query("UPDATE dedupe_keys SET expires_at = ? WHERE event_id = ?")
                .bind(now + ttl)
                .bind(event.id())
                .execute(&mut *conn)
                .await?;
            true
        }
        None => match sqlx::query("INSERT INTO dedupe_keys (event_id, expires_at) VALUES (?, ?)")
            .bind(event.id())
            .bind(now + ttl)
            .execute(&mut *conn)
            .await
        {
            Ok(_) => true,
            Err(e) if error_number(&e) == Some(DUPLICATE_KEY) => false,
            Err(e) => return Err(e.into()),
        },
    };
    if !claimed {
        return Ok(Applied::Duplicate);
    }
    apply_in(conn, event, Guard::None).await
}

pub(super) async fn purge_expired(pool: &Pool, now: f64) -> Result<u64, StoreError> {
    let mut conn = lease(pool).await?;
    let purged = sqlx::query("DELETE FROM dedupe_keys WHERE expires_at <= ?")
        .bind(now)
        .execute(&mut *conn)
        .await
        .map(|done| done.rows_affected())
        .map_err(StoreError::from);
    conn.settle(purged).await
}

/// check-in-transaction: in one transaction, the id looked up in `checked_events` (a consistent
/// read under REPEATABLE READ and READ COMMITTED, a shared lock under SERIALIZABLE), and when it is not there the side effect and the id's row. The table's index is not
/// unique, so what keeps two copies from both applying is the isolation level alone.
pub(super) async fn apply_checked(
    pool: &Pool,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
) -> Result<Applied, StoreError> {
    in_transaction!(pool, |tx| check_in_transaction(&mut tx, event, body_sha256, guard).await)
}

async fn check_in_transaction(
    conn: &mut MySqlConnection,
    event: &Event,
    body_sha256: &str,
    guard: Guard,
) -> Result<Applied, StoreError> {
    let seen: Option<i32> = sqlx::query_scalar("SELECT 1 FROM checked_events WHERE event_id = ? LIMIT 1")
        .bind(event.id())
        .fetch_optional(&mut *conn)
        .await?;
    if seen.is_some() {
        return Ok(known_key(conn, Keys::Checked, event.id(), body_sha256).await?.into());
    }
    let applied = apply_in(conn, event, guard).await?;
    sqlx::query("INSERT INTO checked_events (event_id, body_sha256) VALUES (?, ?)")
        .bind(event.id())
        .bind(body_sha256)
        .execute(&mut *conn)
        .await?;
    Ok(applied)
}
