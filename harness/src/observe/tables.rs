//! [`Tables`]: the observer of hookbench's own receivers, reading their schema with connections
//! of its own: applies from `credit_ledger`, final versions from `accounts`, dead letters from the
//! inbox, the change log from `plan_changes`, the balances and the ledger, and `id_conflicts`.
//! The statements are plain SQL that Postgres, SQLite and MySQL spell alike (a sum is cast to a
//! 64-bit integer by [`Tables::sum`], the one spelling that differs), so the dialect difference
//! here is which pool runs them.

use std::str::FromStr;
use std::time::Duration;

use futures_util::TryStreamExt;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{MySqlPool, PgPool, SqlitePool};

use futures_util::future::BoxFuture;

use super::{ObserveError, Observer, Record, Sees};
use crate::judge::{Change, Ledger};

/// Attempts after which the receivers' inbox leaves a row as a dead letter. The harness's own
/// figure: a test holds it equal to the receivers' (`tests/it/judge.rs`), and one below holds it
/// equal to the `5` written into this module's statements (MySQL's `?` and Postgres's `$1` differ,
/// so the bound is not a parameter).
pub const INBOX_MAX_ATTEMPTS: i64 = 5;

/// What the observer's queries are called in errors.
const FLAG: &str = "hookbench's tables";

/// How the observer introduces itself to Postgres: not as a receiver, so chaos ending the
/// receivers' connections spares it.
pub const APPLICATION_NAME: &str = "hookbench-checker";

/// How long the observer waits for a connection: the harness waits for its database rather than
/// give up after a receiver's 2 s.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

fn query_error(e: sqlx::Error) -> ObserveError {
    ObserveError::Query { flag: FLAG, reason: e.to_string() }
}

/// A connection pool to the receivers' database, Postgres, SQLite or MySQL.
#[derive(Debug, Clone)]
enum Pool {
    Postgres(PgPool),
    Sqlite(SqlitePool),
    Mysql(MySqlPool),
}

/// Runs the same SQL on whichever pool the observer holds.
macro_rules! on_pool {
    ($pool:expr, |$p:ident| $body:expr) => {
        match $pool {
            Pool::Postgres($p) => $body,
            Pool::Sqlite($p) => $body,
            Pool::Mysql($p) => $body,
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
    pub async fn connect(url: &str) -> Result<Self, ObserveError> {
        let connect = |e: sqlx::Error| ObserveError::Connect {
            flag: "--database-url",
            url: provision::hide_password(url),
            reason: e.to_string(),
        };
        let pool = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options =
                PgConnectOptions::from_str(url).map_err(connect)?.application_name(APPLICATION_NAME);
            Pool::Postgres(
                PgPoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .connect_with(options)
                    .await
                    .map_err(connect)?,
            )
        } else if url.starts_with("sqlite:") {
            // Never create the file: an observer that finds no database says so.
            let options = SqliteConnectOptions::from_str(url).map_err(connect)?.create_if_missing(false);
            Pool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .connect_with(options)
                    .await
                    .map_err(connect)?,
            )
        } else if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            let url = url.replacen("mariadb://", "mysql://", 1);
            let options = MySqlConnectOptions::from_str(&url).map_err(connect)?;
            // Each read in its own statement: READ COMMITTED sees every transaction committed
            // before it, as the other databases' reads do (REPEATABLE READ's snapshot is per
            // transaction, and autocommit makes each statement one anyway).
            Pool::Mysql(
                MySqlPoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(ACQUIRE_TIMEOUT)
                    .connect_with(options)
                    .await
                    .map_err(connect)?,
            )
        } else {
            return Err(ObserveError::Url);
        };
        Ok(Self { pool })
    }

    /// One number from a `SELECT` of a single BIGINT-compatible value (NULL as 0).
    async fn number(&self, sql: &str) -> Result<i64, ObserveError> {
        let n: Option<i64> =
            on_pool!(&self.pool, |pool| sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
                .fetch_one(pool)
                .await
                .map_err(query_error)?);
        Ok(n.unwrap_or(0))
    }

    /// The sum of `column` over `table` as a 64-bit integer: `BIGINT` on Postgres and SQLite,
    /// `SIGNED` on MySQL (whose `SUM` of a BIGINT is a DECIMAL).
    async fn sum(&self, column: &str, table: &str) -> Result<i64, ObserveError> {
        let as_type = if matches!(self.pool, Pool::Mysql(_)) { "SIGNED" } else { "BIGINT" };
        self.number(&format!("SELECT CAST(sum({column}) AS {as_type}) FROM {table}")).await
    }

    async fn count(&self, sql: &'static str) -> Result<u64, ObserveError> {
        Ok(self.number(sql).await?.max(0) as u64)
    }

    /// The database's version (`SHOW server_version` on Postgres, `sqlite_version()` on SQLite).
    pub async fn version(&self) -> Result<String, ObserveError> {
        Ok(match &self.pool {
            Pool::Postgres(pool) => {
                sqlx::query_scalar("SHOW server_version").fetch_one(pool).await.map_err(query_error)?
            }
            Pool::Sqlite(pool) => {
                sqlx::query_scalar("SELECT sqlite_version()").fetch_one(pool).await.map_err(query_error)?
            }
            Pool::Mysql(pool) => {
                sqlx::query_scalar("SELECT VERSION()").fetch_one(pool).await.map_err(query_error)?
            }
        })
    }

    /// Dedupe keys held: `processed_events`, inbox and expiring keys.
    pub async fn dedupe_keys(&self) -> Result<u64, ObserveError> {
        self.count(
            "SELECT (SELECT count(*) FROM processed_events) + (SELECT count(*) FROM webhook_inbox) \
             + (SELECT count(*) FROM dedupe_keys)",
        )
        .await
    }

    /// Expiring dedupe keys held (purged or not yet).
    pub async fn expiring_keys(&self) -> Result<u64, ObserveError> {
        self.count("SELECT count(*) FROM dedupe_keys").await
    }

    /// Closes the pool.
    pub async fn close(&self) {
        on_pool!(&self.pool, |pool| pool.close().await)
    }

    /// The sum of every account's credits.
    pub async fn credits_total(&self) -> Result<i64, ObserveError> {
        self.sum("credits", "accounts").await
    }

    /// Credit events applied at least once.
    pub async fn applied_events(&self) -> Result<u64, ObserveError> {
        self.count("SELECT count(DISTINCT event_id) FROM credit_ledger").await
    }

    async fn look_into(&self, into: &mut dyn Record) -> Result<(), ObserveError> {
        let name = self.name();
        let applies = "SELECT event_id, count(*) FROM credit_ledger GROUP BY event_id";
        on_pool!(&self.pool, |pool| {
            let mut rows = sqlx::query_as::<_, (String, i64)>(applies).fetch(pool);
            while let Some((id, n)) = rows.try_next().await.map_err(query_error)? {
                into.applied(name, &id, n.max(0) as u64);
            }
        });
        on_pool!(&self.pool, |pool| {
            let mut rows =
                sqlx::query_as::<_, (i64, i64)>("SELECT id, plan_version FROM accounts").fetch(pool);
            while let Some((account, version)) = rows.try_next().await.map_err(query_error)? {
                into.state(account, version);
            }
        });
        let dead = "SELECT webhook_id FROM webhook_inbox WHERE processed_at IS NULL AND attempts >= 5";
        on_pool!(&self.pool, |pool| {
            let mut rows = sqlx::query_scalar::<_, String>(dead).fetch(pool);
            while let Some(id) = rows.try_next().await.map_err(query_error)? {
                into.dead_letter(&id);
            }
        });
        // The trigger numbers its rows as it writes them: their id is the order of the changes.
        let changes = "SELECT id, account_id, old_version, new_version FROM plan_changes ORDER BY id";
        on_pool!(&self.pool, |pool| {
            let mut rows = sqlx::query_as::<_, (i64, i64, i64, i64)>(changes).fetch(pool);
            while let Some((seq, account, old, new)) = rows.try_next().await.map_err(query_error)? {
                into.change(Change { seq, account, old, new });
            }
        });
        let balances = self.credits_total().await?;
        let rows = self.sum("amount", "credit_ledger").await?;
        into.ledger(Ledger { balances, rows });
        into.id_conflicts(self.count("SELECT count(*) FROM id_conflicts").await?);
        Ok(())
    }
}

impl Observer for Tables {
    fn name(&self) -> &'static str {
        "tables"
    }

    fn sees(&self) -> Sees {
        Sees {
            applies: true,
            states: true,
            dead_letters: true,
            changes: true,
            ledger: true,
            id_conflicts: true,
            update_applies: false,
            recorded_applies: true,
            aggregates: false,
        }
    }

    fn look<'a>(&'a self, into: &'a mut dyn Record) -> BoxFuture<'a, Result<(), ObserveError>> {
        Box::pin(self.look_into(into))
    }

    fn pending(&self) -> BoxFuture<'_, Result<Option<u64>, ObserveError>> {
        Box::pin(async {
            let sql = "SELECT count(*) FROM webhook_inbox WHERE processed_at IS NULL AND attempts < 5";
            let n: i64 = on_pool!(&self.pool, |pool| {
                sqlx::query_scalar(sql).fetch_one(pool).await.map_err(query_error)?
            });
            Ok(Some(n.max(0) as u64))
        })
    }
}

#[cfg(test)]
mod tests {
    /// The dead-letter bound written into the statements is [`super::INBOX_MAX_ATTEMPTS`].
    #[test]
    fn the_statements_dead_letter_bound_is_the_constant() {
        let source = include_str!("tables.rs");
        let written = format!("attempts >= {}", super::INBOX_MAX_ATTEMPTS);
        assert!(source.contains(&written) && source.contains(&written.replace(">=", "<")));
        assert!(!source.contains(&format!("attempts >= {}", super::INBOX_MAX_ATTEMPTS + 1)));
    }
}
