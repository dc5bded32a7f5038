//! [`Tables`]: the observer of hookbench's own receivers, reading their schema with connections
//! of its own. The statements are plain SQL that Postgres and SQLite spell alike, so the one
//! dialect difference here is which pool runs them.

use std::str::FromStr;
use std::time::Duration;

use futures_util::TryStreamExt;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{PgPool, SqlitePool};

use receivers::store::INBOX_MAX_ATTEMPTS;

use super::Observer;

/// How the observer introduces itself to Postgres: not as a receiver, so chaos ending the
/// receivers' connections spares it.
pub const APPLICATION_NAME: &str = "hookbench-checker";

/// How long the observer waits for a connection: the harness waits for its database rather than
/// give up after a receiver's 2 s.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// The observer could not read the evidence.
#[derive(Debug, thiserror::Error)]
pub enum TablesError {
    /// The URL names no database the receivers use.
    #[error("unsupported database URL (expected postgres://... or sqlite:///path/file.db): {0}")]
    Url(String),
    /// A query or connection failed (sqlx's message carries its cause; it is not chained again).
    #[error("{0}")]
    Database(sqlx::Error),
}

impl From<sqlx::Error> for TablesError {
    fn from(e: sqlx::Error) -> Self {
        TablesError::Database(e)
    }
}

/// A connection pool to the receivers' database, Postgres or SQLite.
#[derive(Debug, Clone)]
enum Pool {
    Postgres(PgPool),
    Sqlite(SqlitePool),
}

/// Runs the same SQL on whichever pool the observer holds.
macro_rules! on_pool {
    ($pool:expr, |$p:ident| $body:expr) => {
        match $pool {
            Pool::Postgres($p) => $body,
            Pool::Sqlite($p) => $body,
        }
    };
}

/// hookbench's schema, read directly.
#[derive(Debug, Clone)]
pub struct Tables {
    pool: Pool,
}

impl Tables {
    /// Connects to the receivers' database at `url` (which must already hold their schema).
    pub async fn connect(url: &str) -> Result<Self, TablesError> {
        let pool = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options = PgConnectOptions::from_str(url)?.application_name(APPLICATION_NAME);
            Pool::Postgres(
                PgPoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .connect_with(options)
                    .await?,
            )
        } else if url.starts_with("sqlite:") {
            // Never create the file: an observer that finds no database says so.
            let options = SqliteConnectOptions::from_str(url)?.create_if_missing(false);
            Pool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .connect_with(options)
                    .await?,
            )
        } else {
            return Err(TablesError::Url(url.to_string()));
        };
        Ok(Self { pool })
    }

    /// One number from a `SELECT` of a single BIGINT-compatible value (NULL as 0).
    async fn number(&self, sql: &'static str) -> Result<i64, TablesError> {
        let n: Option<i64> = on_pool!(&self.pool, |pool| sqlx::query_scalar(sql).fetch_one(pool).await?);
        Ok(n.unwrap_or(0))
    }

    async fn count(&self, sql: &'static str) -> Result<u64, TablesError> {
        Ok(self.number(sql).await?.max(0) as u64)
    }

    /// Inbox rows by how their attempts compare with the dead-letter limit (`$1`).
    async fn inbox_rows(&self, sql: &'static str) -> Result<u64, TablesError> {
        let n: i64 = on_pool!(&self.pool, |pool| {
            sqlx::query_scalar(sql).bind(INBOX_MAX_ATTEMPTS).fetch_one(pool).await?
        });
        Ok(n.max(0) as u64)
    }

    /// The database's version (`SHOW server_version` on Postgres, `sqlite_version()` on SQLite).
    pub async fn version(&self) -> Result<String, TablesError> {
        Ok(match &self.pool {
            Pool::Postgres(pool) => sqlx::query_scalar("SHOW server_version").fetch_one(pool).await?,
            Pool::Sqlite(pool) => sqlx::query_scalar("SELECT sqlite_version()").fetch_one(pool).await?,
        })
    }

    /// Dedupe keys held: `processed_events`, inbox and expiring keys.
    pub async fn dedupe_keys(&self) -> Result<u64, TablesError> {
        self.count(
            "SELECT (SELECT count(*) FROM processed_events) + (SELECT count(*) FROM webhook_inbox) \
             + (SELECT count(*) FROM dedupe_keys)",
        )
        .await
    }

    /// Expiring dedupe keys held (purged or not yet).
    pub async fn expiring_keys(&self) -> Result<u64, TablesError> {
        self.count("SELECT count(*) FROM dedupe_keys").await
    }

    /// Closes the pool.
    pub async fn close(&self) {
        on_pool!(&self.pool, |pool| pool.close().await)
    }
}

impl Observer for Tables {
    async fn applies(&self, f: &mut (dyn FnMut(&str, u64) + Send)) -> Result<(), TablesError> {
        let sql = "SELECT event_id, count(*) FROM credit_ledger GROUP BY event_id";
        on_pool!(&self.pool, |pool| {
            let mut rows = sqlx::query_as::<_, (String, i64)>(sql).fetch(pool);
            while let Some((id, n)) = rows.try_next().await? {
                f(&id, n.max(0) as u64);
            }
        });
        Ok(())
    }

    async fn plan_versions(&self, f: &mut (dyn FnMut(i64, i64) + Send)) -> Result<(), TablesError> {
        let sql = "SELECT id, plan_version FROM accounts";
        on_pool!(&self.pool, |pool| {
            let mut rows = sqlx::query_as::<_, (i64, i64)>(sql).fetch(pool);
            while let Some((account, version)) = rows.try_next().await? {
                f(account, version);
            }
        });
        Ok(())
    }

    async fn plan_changes(&self, f: &mut (dyn FnMut(i64, i64, i64, i64) + Send)) -> Result<(), TablesError> {
        // The trigger numbers its rows as it writes them: their id is the order of the changes.
        let sql = "SELECT id, account_id, old_version, new_version FROM plan_changes ORDER BY id";
        on_pool!(&self.pool, |pool| {
            let mut rows = sqlx::query_as::<_, (i64, i64, i64, i64)>(sql).fetch(pool);
            while let Some((seq, account, old, new)) = rows.try_next().await? {
                f(seq, account, old, new);
            }
        });
        Ok(())
    }

    async fn stale_writes(&self) -> Result<u64, TablesError> {
        self.count("SELECT count(*) FROM plan_changes WHERE new_version < old_version").await
    }

    async fn credits_total(&self) -> Result<i64, TablesError> {
        self.number("SELECT CAST(sum(credits) AS BIGINT) FROM accounts").await
    }

    async fn ledger_total(&self) -> Result<i64, TablesError> {
        self.number("SELECT CAST(sum(amount) AS BIGINT) FROM credit_ledger").await
    }

    async fn dead_letters(&self) -> Result<u64, TablesError> {
        self.inbox_rows("SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL AND attempts >= $1")
            .await
    }

    async fn id_conflicts(&self) -> Result<u64, TablesError> {
        self.count("SELECT count(*) FROM id_conflicts").await
    }

    async fn pending(&self) -> Result<u64, TablesError> {
        self.inbox_rows("SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL AND attempts < $1")
            .await
    }
}
