//! The databases behind the receivers: Postgres, SQLite, and MySQL or MariaDB.
//!
//! Every SQL statement and every dialect difference lives in this module: `postgres.rs`,
//! `sqlite.rs` and `mysql.rs` implement the same operations, and [`Store`] picks one by the URL's
//! scheme. The
//! designs above it only say what to do (apply, check, claim), never how a database spells it.
//!
//! The side effect is the same everywhere: a credit adds to `accounts.credits` and writes a
//! `credit_ledger` row in the same transaction; a plan update upserts the account's plan, and a
//! trigger records each `plan_version` change in `plan_changes`. Accounts are created by the first
//! event that names them, so receivers need no seeding.
//!
//! What identifies an event is its id alone, in every design (docs/design.md): the atomic
//! designs' `processed_events`, check-then-insert's and split's, and the inbox's `webhook_inbox`
//! all key on it, and each key keeps the SHA-256 of the body it was first stored with. A delivery
//! whose id is known with another body is not applied: it is an [`IdConflict`], recorded in
//! `id_conflicts`.
//!
//! A SQLite store also watches its file: a write is acknowledged only if the file at the path is
//! still the one the connections have open (see `sqlite.rs`).

mod inbox_order;
mod lease_pool;
mod mysql;
mod mysql_inbox;
mod mysql_keys;
mod postgres;
mod postgres_claim;
mod postgres_inbox;
mod postgres_keys;
mod sqlite;
mod sqlite_claim;
mod sqlite_inbox;
mod sqlite_sql;
mod sqlite_writer;
mod writers;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::event::{Event, EventError};

/// Runs a dialect's operation on the store's database: Postgres and MySQL directly; SQLite on the file's
/// current pool, checking the file before and, for a write, after (see `sqlite.rs`); a SQLite
/// write takes its turn with the file's other writers (writers.rs). A write's time is counted as
/// [`Stage::Write`](crate::timing::Stage::Write).
macro_rules! dialect {
    ($store:expr, write, |$pool:ident| $pg:expr, $lite:expr, $my:expr) => {
        dialect!(@run $store, true, |$pool| $pg, $lite, $my)
    };
    ($store:expr, read, |$pool:ident| $pg:expr, $lite:expr, $my:expr) => {
        dialect!(@run $store, false, |$pool| $pg, $lite, $my)
    };
    (@run $store:expr, $wrote:expr, |$pool:ident| $pg:expr, $lite:expr, $my:expr) => {
        match &$store.inner {
            Inner::Postgres($pool) => {
                let started = std::time::Instant::now();
                let result = $pg;
                counted($wrote, started);
                result
            }
            Inner::Mysql($pool) => {
                let started = std::time::Instant::now();
                let result = $my;
                counted($wrote, started);
                result
            }
            Inner::Sqlite(db) => {
                let started = std::time::Instant::now();
                let attached = db.attached().await?;
                let $pool = &db.on(&attached);
                let result = $lite;
                let settled = db.settle(&attached, result, $wrote);
                counted($wrote, started);
                settled
            }
        }
    };
}

/// The atomic designs' credit on SQLite as the receivers send it: `BEGIN IMMEDIATE`, the key,
/// the credit, the ledger row and `COMMIT` in one string of statements (?1 the event id, ?2 its
/// body hash, ?3 the account, ?4 the amount), the key claimed only when the credit will not
/// overflow, each statement after it doing nothing unless the one before changed a row.
pub const SQLITE_CLAIM_CREDIT: &str = sqlite_claim::CLAIM_CREDIT;

/// The SQLite writer thread's connection and transaction on the caller's thread, for `hookbench
/// perf`'s loop through SQLite's C API (sqlite_writer.rs).
pub use sqlite_writer::Direct as SqliteDirect;

/// The atomic designs' credit on Postgres as the receivers send it: the key, the credit and the
/// ledger row as one statement ($1 the event id, $2 its body hash, $3 the account, $4 the amount),
/// each part writing nothing unless the key was inserted.
pub const POSTGRES_CLAIM_CREDIT: &str = postgres_claim::CLAIM_CREDIT;

/// The atomic design's claim of a credit on MySQL, statement by statement in one transaction:
/// the key (? id, body hash), the credit (? account, amount) and its ledger row (? id, account,
/// amount). (For `hookbench perf`'s mysqlslap to run the same.)
pub const MYSQL_CLAIM_CREDIT: [&str; 3] = [mysql_keys::INSERT_KEY, mysql::CREDIT, mysql::LEDGER];

/// Counts a write's time from `started` (reads are not counted).
fn counted(wrote: bool, started: std::time::Instant) {
    if wrote {
        crate::timing::since(crate::timing::Stage::Write, started);
    }
}

/// Which database a store talks to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Backend {
    /// PostgreSQL, shared by every worker over the network.
    Postgres,
    /// SQLite, one file shared by every worker process.
    Sqlite,
    /// MySQL or MariaDB (InnoDB), shared by every worker over the network.
    Mysql,
}

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; 3] = [Backend::Postgres, Backend::Sqlite, Backend::Mysql];

    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Sqlite => "sqlite",
            Backend::Mysql => "mysql",
        }
    }

    /// The backend a URL names by its scheme (`postgres://`, `postgresql://`, `sqlite:`,
    /// `mysql://`, `mariadb://`).
    pub fn of_url(url: &str) -> Option<Self> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            Some(Backend::Mysql)
        } else {
            None
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A backend name that is none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown backend `{0}` (expected postgres, sqlite or mysql)")]
pub struct UnknownBackend(pub String);

impl FromStr for Backend {
    type Err = UnknownBackend;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "postgres" => Ok(Backend::Postgres),
            "sqlite" => Ok(Backend::Sqlite),
            "mysql" => Ok(Backend::Mysql),
            other => Err(UnknownBackend(other.to_string())),
        }
    }
}

/// The isolation level of the receivers' transactions, on Postgres and MySQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Isolation {
    /// READ COMMITTED, Postgres's default.
    #[default]
    ReadCommitted,
    /// REPEATABLE READ.
    RepeatableRead,
    /// SERIALIZABLE.
    Serializable,
}

impl Isolation {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read-committed",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::Serializable => "serializable",
        }
    }
}

/// An isolation level's name that is none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown isolation `{0}` (expected read-committed, repeatable-read or serializable)")]
pub struct UnknownIsolation(pub String);

impl FromStr for Isolation {
    type Err = UnknownIsolation;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-committed" => Ok(Isolation::ReadCommitted),
            "repeatable-read" => Ok(Isolation::RepeatableRead),
            "serializable" => Ok(Isolation::Serializable),
            other => Err(UnknownIsolation(other.to_string())),
        }
    }
}

/// How a store connects.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// The isolation level of every transaction; `None`: the database's own default (Postgres's
    /// READ COMMITTED, MySQL's REPEATABLE READ). SQLite's writers are serialized whatever it is.
    pub isolation: Option<Isolation>,
    /// Connections in this process's pool.
    pub max_connections: u32,
    /// How long a request waits for a pooled connection (opening one included) before it
    /// answers 503: how fast a worker says its database is out of reach.
    pub acquire_timeout: Duration,
    /// How long SQLite waits for another process's write lock before giving up.
    pub busy_timeout: Duration,
    /// The Postgres `application_name` ([`RECEIVER_APPLICATION`] for receivers, so chaos can find
    /// their connections and spare the harness's own).
    pub application_name: String,
}

/// How long a request waits for a database connection by default before it answers 503.
pub const DEFAULT_POOL_TIMEOUT: Duration = Duration::from_secs(2);

/// The `application_name` receivers connect to Postgres with.
pub const RECEIVER_APPLICATION: &str = "hookbench-receiver";

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            isolation: None,
            max_connections: 8,
            acquire_timeout: DEFAULT_POOL_TIMEOUT,
            busy_timeout: Duration::from_secs(30),
            application_name: RECEIVER_APPLICATION.to_string(),
        }
    }
}

/// A database failure. The receivers answer 5xx for each, so the sender retries.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL names no supported database. The URL is not quoted: it may hold a password, or be
    /// a secret given to the wrong variable.
    #[error("unsupported database URL (expected postgres://..., mysql://... or sqlite:///path/file.db)")]
    Url,
    /// A query or connection failed. (sqlx's message already carries its cause, so it is not
    /// chained as a source too: each cause reads once.)
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// A statement on the SQLite writer thread's connection failed (sqlite_writer.rs).
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
    /// The schema migrations failed.
    #[error("migration failed: {0}")]
    Migrate(sqlx::migrate::MigrateError),
    /// The side effect refuses the event, and will every time (a poison event, or a credit that
    /// would overflow the balance).
    #[error("side effect refused: {0}")]
    Refused(String),
    /// No write turn on the SQLite file within the busy timeout: other writers held it.
    #[error("no turn to write the SQLite file within {0:?}: other writers held it")]
    Busy(Duration),
    /// The SQLite file at the path is not the one this store's connections have open (deleted,
    /// replaced, or not yet back), or cannot be written.
    #[error("SQLite file {path} unavailable: {why}")]
    FileUnavailable {
        /// The file's path.
        path: String,
        /// What was found.
        why: String,
    },
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Database(e)
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e)
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        StoreError::Migrate(e)
    }
}

/// What an inbox row's failed side effect means: a transaction conflict (a deadlock, a lock
/// wait's timeout) is the database's moment, not the row's fault, and is handed back, the claim
/// undone whole and the row left pending, since counted as an attempt five of them would
/// dead-letter an event already acknowledged; any other failure is the row's, kept as its error.
fn row_failure(e: StoreError) -> Result<String, StoreError> {
    if e.conflict().is_some() { Err(e) } else { Ok(e.to_string()) }
}

impl StoreError {
    /// The transaction conflict this error is, if any, as the database names it: Postgres's
    /// SQLSTATE `40001` (serialization failure) or `40P01` (deadlock), MySQL's error `1213`
    /// (deadlock) or `1205` (lock wait timeout), MariaDB's `1020` (a row changed since the
    /// snapshot, under `innodb_snapshot_isolation`, on by default from 11.6.2) or `1969` (a
    /// statement stopped at `max_statement_time`, which the store sets to bound a lock wait
    /// InnoDB keeps starting again: mysql.rs). Such a transaction (or, for 1205 and 1969, its
    /// statement) was undone and a retry may succeed; the receivers name it in the 5xx's
    /// `Hookbench-Db-Conflict` header.
    pub fn conflict(&self) -> Option<String> {
        let StoreError::Database(sqlx::Error::Database(e)) = self else { return None };
        if let Some(e) = e.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
            return matches!(e.code(), "40001" | "40P01").then(|| e.code().to_string());
        }
        let e = e.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()?;
        matches!(e.number(), 1020 | 1205 | 1213 | 1969).then(|| format!("mysql-{}", e.number()))
    }

    /// Whether the database is out of reach or cannot take writes now (rather than refusing one
    /// statement): a 503, and a worker that stops acknowledging until it can again.
    pub fn is_unavailable(&self) -> bool {
        match self {
            StoreError::FileUnavailable { .. } | StoreError::Busy(_) => true,
            StoreError::Database(
                sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::Io(_)
                | sqlx::Error::Tls(_),
            ) => true,
            StoreError::Database(sqlx::Error::Database(e)) => {
                postgres::is_unavailable(e.as_ref())
                    || sqlite::is_unavailable(e.as_ref())
                    || mysql::is_unavailable(e.as_ref())
            }
            StoreError::Sqlite(e) => sqlite_writer::is_unavailable(e),
            _ => false,
        }
    }
}

/// A plan update's ordering guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Always apply.
    None,
    /// Apply if created >= the stored created.
    CreatedGte,
    /// Apply if created > the stored created.
    CreatedGt,
    /// Apply if version > the stored version.
    Version,
}

impl Guard {
    /// Every guard, in [`Guard::index`]'s order.
    pub const ALL: [Guard; 4] = [Guard::None, Guard::CreatedGte, Guard::CreatedGt, Guard::Version];

    /// This guard's place in [`Guard::ALL`], and so in the dialects' tables of statements built
    /// per guard.
    pub(crate) fn index(self) -> usize {
        match self {
            Guard::None => 0,
            Guard::CreatedGte => 1,
            Guard::CreatedGt => 2,
            Guard::Version => 3,
        }
    }
}

/// A delivery whose id is already stored with another body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdConflict {
    /// The event id.
    pub event_id: String,
    /// The SHA-256 (hex) of the body the id was first stored with.
    pub stored_sha256: String,
    /// The SHA-256 (hex) of the body just received.
    pub received_sha256: String,
    /// Whether this is the first delivery of this id with this body (so it is logged once).
    pub first_seen: bool,
}

/// What a known key says about a delivery: the same body again, or another one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// Already stored with this body (or with a body stored before hashes were kept).
    Duplicate,
    /// Already stored with another body; recorded in `id_conflicts`.
    Conflict(IdConflict),
}

/// What a delivery did to the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The side effect happened.
    Applied,
    /// The event's key was already there with this body; nothing happened.
    Duplicate,
    /// An ordering guard refused an older plan update (the key is recorded).
    Stale,
    /// The event's key was already there with another body; nothing happened but the record.
    Conflict(IdConflict),
}

impl From<Known> for Applied {
    fn from(k: Known) -> Self {
        match k {
            Known::Duplicate => Applied::Duplicate,
            Known::Conflict(c) => Applied::Conflict(c),
        }
    }
}

/// Compares a stored body hash with a received one; a key stored before hashes were kept
/// (`None`) cannot be told apart and counts as a duplicate.
fn compare_bodies(event_id: &str, stored: Option<String>, received: &str) -> Option<IdConflict> {
    match stored {
        Some(stored) if stored != received => Some(IdConflict {
            event_id: event_id.to_string(),
            stored_sha256: stored,
            received_sha256: received.to_string(),
            first_seen: true,
        }),
        _ => None,
    }
}

/// What a claim did with one inbox row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboxStep {
    /// A row was applied (or found stale) and marked processed.
    Processed {
        /// The inbox row.
        row: i64,
        /// What applying it did.
        applied: Applied,
    },
    /// A row failed; its attempt is counted and its error recorded.
    Failed {
        /// The inbox row.
        row: i64,
        /// Attempts so far (a dead letter at 5).
        attempts: i64,
        /// Why.
        error: String,
    },
}

impl InboxStep {
    /// The row, if it applied (or was found stale) and is to be marked processed.
    fn processed_row(&self) -> Option<i64> {
        match self {
            InboxStep::Processed { row, .. } => Some(*row),
            InboxStep::Failed { .. } => None,
        }
    }
}

/// How many failed attempts leave an inbox row as a dead letter. The migrations' partial index
/// `webhook_inbox_pending` repeats the 5 (an index predicate cannot take a parameter): change both.
pub const INBOX_MAX_ATTEMPTS: i64 = 5;

/// How many pending inbox rows one claim transaction takes at most. It bounds what one SQLite
/// turn holds up: the other writers of the file wait for the whole batch.
pub const INBOX_BATCH: i64 = 32;

/// The receivers' handle on their database, Postgres, SQLite or MySQL.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Inner,
}

#[derive(Debug, Clone)]
enum Inner {
    Postgres(lease_pool::PgPool),
    Sqlite(Arc<sqlite::SqliteDb>),
    Mysql(mysql::Pool),
}

impl Store {
    /// Connects to `url` and applies the migrations (a fresh database just works; a SQLite file
    /// is created if missing, and only then: once open, a store never creates its file again).
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Self, StoreError> {
        let inner = match Backend::of_url(url) {
            Some(Backend::Postgres) => {
                let pool = postgres::connect(url, options).await?;
                postgres::migrate(&pool).await?;
                Inner::Postgres(pool)
            }
            Some(Backend::Sqlite) => Inner::Sqlite(Arc::new(sqlite::SqliteDb::open(url, options).await?)),
            Some(Backend::Mysql) => {
                let pool = mysql::connect(url, options).await?;
                mysql::migrate(&pool).await?;
                Inner::Mysql(pool)
            }
            None => return Err(StoreError::Url),
        };
        Ok(Self { inner })
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        match self.inner {
            Inner::Postgres(_) => Backend::Postgres,
            Inner::Sqlite(_) => Backend::Sqlite,
            Inner::Mysql(_) => Backend::Mysql,
        }
    }

    /// The health check: the database answers and takes a write (made and rolled back), and for
    /// SQLite the file at the path is the one the store has open.
    pub async fn health(&self) -> Result<(), StoreError> {
        dialect!(
            self,
            read,
            |pool| postgres::probe_write(pool).await,
            sqlite::probe_write(pool).await,
            mysql::probe_write(pool).await
        )
    }

    /// Applies the side effect in its own transaction, with no dedupe (`naive`,
    /// `check-then-insert`).
    pub async fn apply(&self, event: &Event, guard: Guard) -> Result<Applied, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres::apply(pool, event, guard).await,
            sqlite::apply(pool, event, guard).await,
            mysql::apply(pool, event, guard).await
        )
    }

    /// What the event's key in `processed_events` says about a delivery of `body_sha256`: `None`
    /// when there is no key (a conflict is recorded as it is found).
    pub async fn check_key(&self, event_id: &str, body_sha256: &str) -> Result<Option<Known>, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres::check_key(pool, event_id, body_sha256).await,
            sqlite::check_key(pool, event_id, body_sha256).await,
            mysql::check_key(pool, event_id, body_sha256).await
        )
    }

    /// Inserts the event's key with its body hash; `None` when inserted, else what the key
    /// already there says.
    pub async fn mark_processed(
        &self,
        event_id: &str,
        body_sha256: &str,
    ) -> Result<Option<Known>, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres::mark_processed(pool, event_id, body_sha256).await,
            sqlite::mark_processed(pool, event_id, body_sha256).await,
            mysql::mark_processed(pool, event_id, body_sha256).await
        )
    }

    /// One transaction: the id looked up in `checked_events`, and when absent the side effect
    /// and the id's row (`check-in-transaction`). No unique key: the isolation level decides.
    pub async fn apply_checked(
        &self,
        event: &Event,
        body_sha256: &str,
        guard: Guard,
    ) -> Result<Applied, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres::apply_checked(pool, event, body_sha256, guard).await,
            sqlite::apply_checked(pool, event, body_sha256, guard).await,
            mysql::apply_checked(pool, event, body_sha256, guard).await
        )
    }

    /// One transaction: insert the key (doing nothing on conflict) and apply only if it was
    /// inserted (the atomic designs). `after_key`, if any, runs once the key is inserted and
    /// before the side effect, inside the open transaction (where an injected crash strikes);
    /// without it the key and the side effect go together (one statement on Postgres, one string
    /// of statements on SQLite).
    pub async fn apply_once(
        &self,
        event: &Event,
        body_sha256: &str,
        guard: Guard,
        after_key: Option<&(dyn Fn() + Sync)>,
    ) -> Result<Applied, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres::apply_once(pool, event, body_sha256, guard, after_key).await,
            sqlite::apply_once(pool, event, body_sha256, guard, after_key).await,
            mysql::apply_once(pool, event, body_sha256, guard, after_key).await
        )
    }

    /// [`Store::apply_once`] against keys that expire: the key is kept until `now + ttl` on the
    /// caller's clock (seconds), and a key whose time has come counts as absent whether or not
    /// [`Store::purge_expired`] has deleted it yet.
    pub async fn apply_once_until(&self, event: &Event, now: f64, ttl: f64) -> Result<Applied, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres::apply_once_until(pool, event, now, ttl).await,
            sqlite::apply_once_until(pool, event, now, ttl).await,
            mysql::apply_once_until(pool, event, now, ttl).await
        )
    }

    /// Deletes the expiring keys whose time is `now` or earlier; returns how many.
    pub async fn purge_expired(&self, now: f64) -> Result<u64, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres::purge_expired(pool, now).await,
            sqlite::purge_expired(pool, now).await,
            mysql::purge_expired(pool, now).await
        )
    }

    /// Stores a verified delivery in the inbox, keyed by its id alone; `None` when stored now,
    /// else what the row already there says.
    pub async fn inbox_store(
        &self,
        source: &str,
        webhook_id: &str,
        body_sha256: &str,
        payload: &str,
    ) -> Result<Option<Known>, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres_inbox::store(pool, source, webhook_id, body_sha256, payload).await,
            sqlite_inbox::store(pool, source, webhook_id, body_sha256, payload).await,
            mysql_inbox::store(pool, source, webhook_id, body_sha256, payload).await
        )
    }

    /// Claims up to [`INBOX_BATCH`] pending inbox rows, oldest first, applies each with the
    /// version guard and marks it processed, all in one transaction; a row whose side effect is
    /// refused has its attempt counted and its error recorded instead. After a statement failed
    /// (the batch undone), the oldest pending row alone, its side effect under a savepoint. Empty
    /// when no row is pending. `at_claim` gets each claimed row's webhook id before its side
    /// effect, inside the open transaction (where an injected crash strikes).
    pub async fn inbox_claim(&self, at_claim: &(dyn Fn(&str) + Sync)) -> Result<Vec<InboxStep>, StoreError> {
        dialect!(
            self,
            write,
            |pool| postgres_inbox::claim(pool, at_claim).await,
            sqlite_inbox::claim(pool, at_claim).await,
            mysql_inbox::claim(pool, at_claim).await
        )
    }

    /// Closes the store's connections: those idle now, and those in use as they come back (on
    /// Postgres without waiting for them: close once the requests are done).
    pub async fn close(&self) {
        match &self.inner {
            Inner::Postgres(pool) => lease_pool::close(pool).await,
            Inner::Sqlite(db) => db.close().await,
            Inner::Mysql(pool) => lease_pool::close(pool).await,
        }
    }
}

/// The side effect's own rule: a credit adds a positive amount. An event breaking it passes the
/// signature and the wire format and then fails every time it is applied (a poison event).
fn check_side_effect(event: &Event) -> Result<(), StoreError> {
    match event {
        Event::Credit { id, amount, .. } if *amount <= 0 => {
            Err(StoreError::Refused(format!("credit {id} has amount {amount}; a credit must be positive")))
        }
        _ => Ok(()),
    }
}

/// Parses an inbox payload, so a row that can never apply fails every attempt (its error is
/// recorded on the row, as text).
fn parse_inbox_payload(payload: &str) -> Result<Event, EventError> {
    Event::parse(payload.as_bytes())
}

/// Why a credit is refused rather than applied: it would push the balance past what a BIGINT
/// holds. Both dialects check it in the UPSERT itself (`WHERE credits <= max - amount`), so the
/// balance is never wrapped, never an error half-way, and on SQLite never turned into a float;
/// the one-statement claim on Postgres leaves it to Postgres's own `bigint out of range`, which
/// ends the statement with nothing written (postgres_claim.rs).
fn overflow(event_id: &str, account: i64, amount: i64) -> StoreError {
    StoreError::Refused(format!(
        "credit {event_id} of {amount} would overflow account {account}'s balance (at most {}); refused",
        i64::MAX
    ))
}
