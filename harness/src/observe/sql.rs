//! [`SqlObserver`]: the receiver's own database, opened read-only (Postgres sessions with
//! `default_transaction_read_only`, SQLite opened read-only, MySQL and MariaDB sessions whose
//! transactions are read-only, each query in a `START TRANSACTION READ ONLY` of its own), asked
//! the user's questions:
//! `--applied-query`, `--update-applied-query`, `--state-query`, `--dead-letter-query`,
//! `--balance-query` and `--count-query`. Each query's shape (how many columns, and on Postgres
//! and MySQL their types) is checked when the observer connects, by preparing it, so a wrong
//! query is refused whatever the database holds, before anything is sent. Each query must parse
//! as one read-only query ([`super::readonly`]), runs under a statement timeout and a row limit
//! ([`QueryLimits`]), and streams: no query's rows are collected before they are counted.

use std::str::FromStr;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use futures_util::future::BoxFuture;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlPool, MySqlPoolOptions, MySqlRow};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{
    Column, ConnectOptions, Connection, Executor, MySql, Postgres, Row, SqlSafeStr, Statement, TypeInfo,
};

use super::readonly::{self, Dialects};
use super::{ObserveError, Observer, Record, Sees};
use crate::judge::Measure;
use crate::printable;

/// How long past the timeout hookbench waits for the database to stop a query itself before it
/// gives up on the connection (and on Postgres and MySQL cancels the query from another).
const GRACE: Duration = Duration::from_secs(5);

/// How long a MySQL connection may take to open (sqlx's default is 30 s, spent retrying a server
/// that refuses connections).
const MYSQL_ACQUIRE: Duration = Duration::from_secs(10);

/// How many SQLite virtual-machine steps run between two looks at the clock.
const SQLITE_STEPS: i32 = 10_000;

/// A read-only pool of any database the observer reads.
pub(super) enum Pool {
    Postgres(PgPool),
    Sqlite(SqlitePool),
    /// MySQL or MariaDB, and which (their statement timeouts differ).
    Mysql(MySqlPool, Flavor),
}

/// Which server a `mysql://` URL reached, from `SELECT VERSION()`: MariaDB stops a statement at
/// the session's `max_statement_time` (seconds), MySQL a SELECT at its `max_execution_time` (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    Mariadb,
    Mysql,
}

/// The receiver's database, read-only, asked the user's questions.
pub struct SqlObserver {
    pool: Pool,
    queries: Queries,
    limits: QueryLimits,
    notes: Vec<String>,
}

/// Bounds on every query the observer runs. A receiver's database is the user's, and so are the
/// queries: one that never ends, or returns a table of millions of rows, must end the check with
/// an error naming the flag, not hang it or fill the machine's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    /// How long one query may run (`--query-timeout`; default 30 s). Postgres stops the query
    /// itself (the session's `statement_timeout`, so its backend stops even if hookbench is gone),
    /// and so do MariaDB (`max_statement_time`) and MySQL (`max_execution_time`); SQLite is
    /// interrupted by a progress handler. At least 1 ms (0 would turn the servers' off).
    pub timeout: Duration,
    /// How many rows one query may return (`--max-rows`; default 100,000,000), counted as they
    /// stream in, the run's own or not: the table may hold every earlier run and production's
    /// rows, which cost time, not memory (a run's snapshots keep only its own ids).
    pub max_rows: u64,
}

impl QueryLimits {
    /// The flag that sets [`QueryLimits::timeout`].
    pub const TIMEOUT_FLAG: &'static str = "--query-timeout";
    /// The flag that sets [`QueryLimits::max_rows`].
    pub const MAX_ROWS_FLAG: &'static str = "--max-rows";
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(30), max_rows: 100_000_000 }
    }
}

/// The user's questions of their database.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Queries {
    /// Rows of applied side effects: `(event id)` per apply or `(event id, count)`.
    pub applied: Option<String>,
    /// Rows of applied updates alone, in the applied query's shapes (`--update-applied-query`).
    pub update_applied: Option<String>,
    /// `(account, version)` per account.
    pub state: Option<String>,
    /// `(event id)` per dead letter.
    pub dead_letters: Option<String>,
    /// `(account, balance)` per account: the sum of the amounts credited to it.
    pub balance: Option<String>,
    /// `(account, rows)` per account: how many effect rows it has.
    pub count: Option<String>,
}

impl Queries {
    /// The per-account aggregates asked for, each with its query.
    pub fn aggregates(&self) -> impl Iterator<Item = (Measure, &str)> {
        [(Measure::Balance, &self.balance), (Measure::Rows, &self.count)]
            .into_iter()
            .filter_map(|(m, q)| Some((m, q.as_deref()?)))
    }
}

/// One query and what it must return.
#[derive(Debug, Clone, Copy)]
struct Shape {
    flag: &'static str,
    /// How many columns it may have.
    columns: &'static [usize],
    /// Which columns must hold integers.
    integers: &'static [usize],
    wanted: &'static str,
}

const APPLIED: Shape = Shape {
    flag: "--applied-query",
    columns: &[1, 2],
    integers: &[1],
    wanted: "one row per applied side effect (event id) or (event id, count) rows",
};
const UPDATE_APPLIED: Shape = Shape {
    flag: "--update-applied-query",
    columns: &[1, 2],
    integers: &[1],
    wanted: "one row per applied update (event id) or (event id, count) rows",
};
const STATE: Shape = Shape {
    flag: "--state-query",
    columns: &[2],
    integers: &[0, 1],
    wanted: "(account, version) rows of integers",
};
const BALANCE: Shape = Shape {
    flag: "--balance-query",
    columns: &[2],
    integers: &[0, 1],
    wanted: "(account, balance) rows of integers: the sum of the amounts credited to each account",
};
const COUNT: Shape = Shape {
    flag: "--count-query",
    columns: &[2],
    integers: &[0, 1],
    wanted: "(account, rows) rows of integers: how many effect rows each account has",
};
const DEAD_LETTERS: Shape = Shape {
    flag: "--dead-letter-query",
    columns: &[1],
    integers: &[],
    wanted: "one row (event id) per dead letter",
};

/// Postgres types a column read as an integer may have: integers, or text holding one.
const INTEGER_TYPES: [&str; 7] = ["INT2", "INT4", "INT8", "TEXT", "VARCHAR", "BPCHAR", "NAME"];

/// MySQL types (as sqlx names them) a column read as an integer may have: integers, signed or
/// not; DECIMAL, which `SUM()` of an integer column returns (a value with a fraction is refused
/// when it is read); or text holding one.
const MYSQL_INTEGER_TYPES: [&str; 18] = [
    "TINYINT",
    "SMALLINT",
    "MEDIUMINT",
    "INT",
    "BIGINT",
    "TINYINT UNSIGNED",
    "SMALLINT UNSIGNED",
    "MEDIUMINT UNSIGNED",
    "INT UNSIGNED",
    "BIGINT UNSIGNED",
    "BOOLEAN",
    "DECIMAL",
    "CHAR",
    "VARCHAR",
    "TINYTEXT",
    "TEXT",
    "MEDIUMTEXT",
    "LONGTEXT",
];

impl SqlObserver {
    /// Connects to `url` (postgres://, sqlite:, mysql:// or mariadb://) read-only and checks every
    /// query, under the default [`QueryLimits`].
    pub async fn connect(url: &str, queries: Queries) -> Result<Self, ObserveError> {
        Self::connect_with_limits(url, queries, QueryLimits::default()).await
    }

    /// Connects to `url` (postgres://, sqlite:, mysql:// or mariadb://) read-only, refuses any query
    /// that is not one read-only query, and checks every query's shape; each query then runs under
    /// `limits`.
    pub async fn connect_with_limits(
        url: &str,
        queries: Queries,
        limits: QueryLimits,
    ) -> Result<Self, ObserveError> {
        let shown = provision::hide_password(url);
        let connect = |reason: String| ObserveError::Connect {
            flag: "--observe-db",
            url: shown.clone(),
            reason: printable::line(&reason).into_owned(),
        };
        let Some((dialect, url)) = dialect_of(url) else {
            return Err(connect(
                "only postgres://, mysql:// (mariadb://) and sqlite: URLs are served".to_string(),
            ));
        };
        let mut observer = Self {
            pool: Pool::open(&url, dialect, limits).await.map_err(|e| connect(e.to_string()))?,
            queries,
            limits,
            notes: Vec::new(),
        };
        for (sql, shape) in observer.asked() {
            readonly::check(sql, dialect)
                .map_err(|reason| ObserveError::Refused { flag: shape.flag, reason: reason.to_string() })?;
        }
        for (sql, shape) in observer.asked() {
            observer.check_shape(sql, shape).await?;
        }
        if let Some(note) = observer.warning().await? {
            eprintln!("hookbench: warning: {}", printable::line(&note));
            observer.notes.push(note);
        }
        Ok(observer)
    }

    /// Warnings about how the observer connects (a superuser role), one line each, for the caller
    /// to put in its report.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// A warning when the observer connects as a user whose powers reach past a read-only session
    /// (a Postgres superuser, a MySQL user with FILE or SUPER).
    async fn warning(&self) -> Result<Option<String>, ObserveError> {
        match &self.pool {
            Pool::Postgres(p) => Ok(pg_superuser(p).await?.map(|role| {
                format!(
                    "--observe-db connects as the superuser {role}, whose functions reach the server's files \
                     even in a read-only session: observe with a read-only role (docs/audit.md, Observers)"
                )
            })),
            Pool::Mysql(p, _) => Ok(mysql_powers(p).await?.map(|(user, powers)| {
                format!(
                    "--observe-db connects as the user {user} with FILE/SUPER privilege ({powers}), whose \
                     queries reach the server's files even in a read-only transaction: observe with a \
                     read-only user (docs/audit.md, Observers)"
                )
            })),
            Pool::Sqlite(_) => Ok(None),
        }
    }

    /// The queries given, each with its shape.
    fn asked(&self) -> impl Iterator<Item = (&str, Shape)> {
        let q = &self.queries;
        [
            (&q.applied, APPLIED),
            (&q.update_applied, UPDATE_APPLIED),
            (&q.state, STATE),
            (&q.dead_letters, DEAD_LETTERS),
            (&q.balance, BALANCE),
            (&q.count, COUNT),
        ]
        .into_iter()
        .filter_map(|(sql, shape)| Some((sql.as_deref()?, shape)))
    }

    /// Prepares `sql` and refuses it unless its columns fit `shape`.
    async fn check_shape(&self, sql: &str, shape: Shape) -> Result<(), ObserveError> {
        let query_error = |e: sqlx::Error| query_error(shape.flag, &e);
        let text = sqlx::AssertSqlSafe(sql.to_string()).into_sql_str();
        // Column types: known on Postgres and MySQL; SQLite's are per value, so only the count is
        // checked.
        let types: Vec<Option<String>> = match &self.pool {
            Pool::Postgres(p) => {
                let s = p.prepare(text).await.map_err(query_error)?;
                s.columns().iter().map(|c| Some(c.type_info().name().to_string())).collect()
            }
            Pool::Mysql(p, _) => {
                let s = p.prepare(text).await.map_err(query_error)?;
                s.columns().iter().map(|c| Some(c.type_info().name().to_string())).collect()
            }
            Pool::Sqlite(p) => {
                let s = p.prepare(text).await.map_err(query_error)?;
                vec![None; s.columns().len()]
            }
        };
        let shape_error =
            |found: String| ObserveError::Shape { flag: shape.flag, found, wanted: shape.wanted };
        if !shape.columns.contains(&types.len()) {
            return Err(shape_error(format!("rows of {} columns", types.len())));
        }
        let (integers, cast): (&[&str], &str) = match &self.pool {
            Pool::Mysql(..) => (&MYSQL_INTEGER_TYPES, "CAST(... AS SIGNED)"),
            _ => (&INTEGER_TYPES, "cast it to bigint"),
        };
        for &i in shape.integers.iter().filter(|&&i| i < types.len()) {
            if let Some(t) = &types[i]
                && !integers.contains(&t.as_str())
            {
                return Err(shape_error(format!("column {} of type {t} ({cast})", i + 1)));
            }
        }
        Ok(())
    }

    /// Runs the user's own query, handing `each` its rows one at a time as they stream in, under
    /// the observer's limits. `AssertSqlSafe`: the SQL is the user's, against the user's database,
    /// parsed as one read-only query and run on connections that cannot write (Postgres
    /// `default_transaction_read_only`, SQLite opened read-only, MySQL sessions whose
    /// transactions are read-only and an explicit read-only transaction around the query).
    async fn each_row(
        &self,
        sql: &str,
        flag: &'static str,
        each: &mut (dyn FnMut(&[Cell]) -> Result<(), ObserveError> + Send),
    ) -> Result<(), ObserveError> {
        let deadline = Instant::now() + self.limits.timeout;
        let timed_out = || ObserveError::Timeout {
            flag,
            limit: humantime::format_duration(self.limits.timeout).to_string(),
        };
        // Past the deadline, whatever the database said is the timeout's doing.
        let failed =
            |e: sqlx::Error| if Instant::now() >= deadline { timed_out() } else { query_error(flag, &e) };
        let mut rows = Rows { flag, max: self.limits.max_rows, seen: 0 };
        let backstop = tokio::time::Instant::from_std(deadline + GRACE);
        match &self.pool {
            Pool::Postgres(p) => {
                let mut conn = p.acquire().await.map_err(failed)?;
                // Set again per query: the session's value is the one a query cannot have changed.
                let set = format!("SET statement_timeout = {}", Pool::timeout_ms(self.limits));
                conn.execute(sqlx::AssertSqlSafe(set)).await.map_err(failed)?;
                let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(failed)?;
                let stream = sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).fetch(&mut *conn);
                let cells =
                    |row: &sqlx::postgres::PgRow| (0..row.len()).map(|i| Cell::of_pg(row, i)).collect();
                let streamed =
                    tokio::time::timeout_at(backstop, drain(stream, cells, &mut rows, each, &failed))
                        .await
                        .unwrap_or_else(|_| Err(timed_out()));
                if streamed.is_err() {
                    abandon_pg(p, conn, pid).await;
                }
                streamed
            }
            Pool::Mysql(p, flavor) => {
                let mut conn = p.acquire().await.map_err(failed)?;
                // Set again per query, as on Postgres.
                conn.execute(sqlx::AssertSqlSafe(flavor.timeout_sql(self.limits))).await.map_err(failed)?;
                let id: u64 = sqlx::query_scalar("SELECT CAST(CONNECTION_ID() AS UNSIGNED)")
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(failed)?;
                // An explicit read-only transaction, not only the session's default: MariaDB's
                // `SET STATEMENT tx_read_only = 0 FOR ...` lifts the session's for one statement,
                // but not a transaction's (error 1792).
                conn.execute("START TRANSACTION READ ONLY").await.map_err(failed)?;
                let stream = sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).fetch(&mut *conn);
                let cells = |row: &MySqlRow| (0..row.len()).map(|i| Cell::of_mysql(row, i)).collect();
                let streamed =
                    tokio::time::timeout_at(backstop, drain(stream, cells, &mut rows, each, &failed))
                        .await
                        .unwrap_or_else(|_| Err(timed_out()));
                let streamed = match streamed {
                    Ok(()) => conn.execute("ROLLBACK").await.map(drop).map_err(failed),
                    refused => refused,
                };
                if streamed.is_err() {
                    abandon_mysql(p, conn, id).await;
                }
                streamed
            }
            Pool::Sqlite(p) => {
                let mut conn = p.acquire().await.map_err(failed)?;
                let interrupt_at = deadline;
                conn.lock_handle()
                    .await
                    .map_err(failed)?
                    .set_progress_handler(SQLITE_STEPS, move || Instant::now() < interrupt_at);
                let stream = sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).fetch(&mut *conn);
                let cells =
                    |row: &sqlx::sqlite::SqliteRow| (0..row.len()).map(|i| Cell::of_sqlite(row, i)).collect();
                let streamed =
                    tokio::time::timeout_at(backstop, drain(stream, cells, &mut rows, each, &failed))
                        .await
                        .unwrap_or_else(|_| Err(timed_out()));
                if streamed.is_ok()
                    && let Ok(mut handle) = conn.lock_handle().await
                {
                    handle.remove_progress_handler();
                } else {
                    // Mid-query or stuck: never handed to the next query.
                    drop(conn.detach());
                }
                streamed
            }
        }
    }

    /// Runs an applied query of `shape` (`(event id)` per apply or `(event id, count)` rows),
    /// handing each id and its count to `each`.
    async fn applies(
        &self,
        sql: &str,
        shape: Shape,
        each: &mut (dyn FnMut(&str, u64) + Send),
    ) -> Result<(), ObserveError> {
        let wrong = |found: String| ObserveError::Shape {
            flag: shape.flag,
            found: printable::line(&found).into_owned(),
            wanted: shape.wanted,
        };
        self.each_row(sql, shape.flag, &mut |row| {
            match row {
                [id] => each(&id.text(), 1),
                [id, n] => {
                    let n = n.integer().ok_or_else(|| wrong(format!("a count of {}", n.text())))?;
                    each(&id.text(), u64::try_from(n).unwrap_or(0));
                }
                other => return Err(wrong(format!("rows of {} columns", other.len()))),
            }
            Ok(())
        })
        .await
    }

    /// Runs a query of `shape` returning `(account, integer)` rows, handing each pair to `each`;
    /// `what` names the second column in an error (`a version`).
    async fn accounts(
        &self,
        sql: &str,
        shape: Shape,
        what: &str,
        each: &mut (dyn FnMut(i64, i64) + Send),
    ) -> Result<(), ObserveError> {
        let wrong = |found: String| ObserveError::Shape {
            flag: shape.flag,
            found: printable::line(&found).into_owned(),
            wanted: shape.wanted,
        };
        self.each_row(sql, shape.flag, &mut |row| {
            let [account, value] = row else {
                return Err(wrong(format!("rows of {} columns", row.len())));
            };
            let a = account.integer().ok_or_else(|| wrong(format!("an account of {}", account.text())))?;
            let v = value.integer().ok_or_else(|| wrong(format!("{what} of {}", value.text())))?;
            each(a, v);
            Ok(())
        })
        .await
    }

    async fn look_into(&self, into: &mut dyn Record) -> Result<(), ObserveError> {
        let name = self.name();
        if let Some(sql) = &self.queries.applied {
            self.applies(sql, APPLIED, &mut |id, n| into.applied(name, id, n)).await?;
        }
        if let Some(sql) = &self.queries.update_applied {
            self.applies(sql, UPDATE_APPLIED, &mut |id, n| into.update_applied(name, id, n)).await?;
        }
        if let Some(sql) = &self.queries.state {
            self.accounts(sql, STATE, "a version", &mut |a, v| into.state(a, v)).await?;
        }
        for (measure, sql) in self.queries.aggregates() {
            let shape = if measure == Measure::Balance { BALANCE } else { COUNT };
            into.aggregate(measure, None);
            self.accounts(sql, shape, "a value", &mut |a, v| into.aggregate(measure, Some((a, v)))).await?;
        }
        if let Some(sql) = &self.queries.dead_letters {
            self.each_row(sql, DEAD_LETTERS.flag, &mut |row| {
                let [id] = row else {
                    let found = format!("rows of {} columns", row.len());
                    return Err(ObserveError::Shape {
                        flag: DEAD_LETTERS.flag,
                        found,
                        wanted: DEAD_LETTERS.wanted,
                    });
                };
                into.dead_letter(&id.text());
                Ok(())
            })
            .await?;
        }
        Ok(())
    }
}

/// The dialect a URL names by its scheme, and the URL as sqlx takes it (`mariadb://` is read as
/// `mysql://`, which sqlx knows).
pub(super) fn dialect_of(url: &str) -> Option<(Dialects, String)> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Some((Dialects::Postgres, url.to_string()))
    } else if url.starts_with("sqlite:") {
        Some((Dialects::Sqlite, url.to_string()))
    } else if url.starts_with("mysql://") {
        Some((Dialects::Mysql, url.to_string()))
    } else {
        url.strip_prefix("mariadb://").map(|rest| (Dialects::Mysql, format!("mysql://{rest}")))
    }
}

impl Pool {
    /// Opens `url` read-only: Postgres sessions with `default_transaction_read_only` and the
    /// statement timeout, SQLite opened read-only, MySQL sessions whose transactions are read-only
    /// and whose statements stop at the timeout. sqlx's own error says why it cannot (a URL that
    /// does not parse, a server that does not answer, a file that is not there): the caller names
    /// the flag and the URL around it.
    pub(super) async fn open(url: &str, dialect: Dialects, limits: QueryLimits) -> Result<Self, sqlx::Error> {
        match dialect {
            Dialects::Postgres => {
                let timeout = Self::timeout_ms(limits).to_string();
                let options = PgConnectOptions::from_str(url)?.options([
                    ("default_transaction_read_only", "on"),
                    ("statement_timeout", timeout.as_str()),
                ]);
                // Two: one runs the query, the other can cancel it.
                let pool = PgPoolOptions::new().max_connections(2).connect_with(options).await?;
                Ok(Self::Postgres(pool))
            }
            Dialects::Sqlite => {
                let options = SqliteConnectOptions::from_str(url)?.read_only(true);
                let pool = SqlitePoolOptions::new().max_connections(1).connect_with(options).await?;
                Ok(Self::Sqlite(pool))
            }
            Dialects::Mysql => {
                let options = MySqlConnectOptions::from_str(url)?;
                // One connection of its own first, so a server that refuses connections fails
                // here at once with its cause: the pool would retry it until its timeout and say
                // only that it timed out.
                let probe = tokio::time::timeout(MYSQL_ACQUIRE, options.connect())
                    .await
                    .map_err(|_| sqlx::Error::PoolTimedOut)??;
                probe.close().await?;
                // Two: one runs the query, the other can kill it. Each connection is read-only
                // and under the timeout before the pool hands it out.
                let pool = MySqlPoolOptions::new()
                    .max_connections(2)
                    .acquire_timeout(MYSQL_ACQUIRE)
                    .after_connect(move |conn, _| Box::pin(Flavor::prepare_session(conn, limits)))
                    .connect_with(options)
                    .await?;
                let flavor = Flavor::of(&mut *pool.acquire().await?).await?;
                Ok(Self::Mysql(pool, flavor))
            }
        }
    }

    /// The timeout in Postgres's milliseconds: at least 1 (0 turns it off), at most its maximum.
    fn timeout_ms(limits: QueryLimits) -> u128 {
        limits.timeout.as_millis().clamp(1, i32::MAX as u128)
    }
}

impl Flavor {
    /// Which server `conn` is connected to.
    async fn of(conn: &mut MySqlConnection) -> Result<Self, sqlx::Error> {
        let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(&mut *conn).await?;
        Ok(if version.contains("MariaDB") { Self::Mariadb } else { Self::Mysql })
    }

    /// A new connection made read-only (every transaction after, a lone statement's included:
    /// the server refuses a write itself) and put under the statement timeout.
    async fn prepare_session(conn: &mut MySqlConnection, limits: QueryLimits) -> Result<(), sqlx::Error> {
        conn.execute("SET SESSION TRANSACTION READ ONLY").await?;
        let flavor = Self::of(conn).await?;
        conn.execute(sqlx::AssertSqlSafe(flavor.timeout_sql(limits))).await?;
        Ok(())
    }

    /// The statement that puts a session under `limits.timeout`: MariaDB's
    /// `max_statement_time` in seconds (fractional, at least 1 ms: 0 turns it off, at most a
    /// year, its maximum), MySQL's `max_execution_time` in milliseconds (1 to 2^32 - 1).
    fn timeout_sql(self, limits: QueryLimits) -> String {
        let ms = limits.timeout.as_millis();
        match self {
            Self::Mariadb => {
                let ms = ms.clamp(1, 31_536_000_000);
                format!("SET SESSION max_statement_time = {}.{:03}", ms / 1000, ms % 1000)
            }
            Self::Mysql => format!("SET SESSION max_execution_time = {}", ms.clamp(1, u128::from(u32::MAX))),
        }
    }
}

/// Rows counted as they stream in, refused past the limit.
struct Rows {
    flag: &'static str,
    max: u64,
    seen: u64,
}

impl Rows {
    fn count(&mut self) -> Result<(), ObserveError> {
        self.seen += 1;
        if self.seen > self.max {
            return Err(ObserveError::TooManyRows { flag: self.flag, max: self.max });
        }
        Ok(())
    }
}

/// A query stopped mid-way (past its rows or its time): its backend is cancelled from the pool's
/// Each row of `stream`, counted against the row limit as it comes, made `cells` and handed to
/// `each`: nothing is collected first. `failed` says what a database error means.
async fn drain<R>(
    mut stream: impl futures_util::Stream<Item = Result<R, sqlx::Error>> + Unpin,
    cells: impl Fn(&R) -> Vec<Cell>,
    rows: &mut Rows,
    each: &mut (dyn FnMut(&[Cell]) -> Result<(), ObserveError> + Send),
    failed: &impl Fn(sqlx::Error) -> ObserveError,
) -> Result<(), ObserveError> {
    while let Some(row) = stream.try_next().await.map_err(failed)? {
        rows.count()?;
        each(&cells(&row))?;
    }
    Ok(())
}

/// other connection and its own connection closed, never handed to the next query.
async fn abandon_pg(pool: &PgPool, conn: PoolConnection<Postgres>, pid: i32) {
    let cancel = sqlx::query("SELECT pg_cancel_backend($1)").bind(pid).execute(pool);
    let _ = tokio::time::timeout(GRACE, cancel).await;
    drop(conn.detach());
}

/// A MySQL query stopped mid-way: killed (`KILL QUERY`) from the pool's other connection and its
/// own connection closed, never handed to the next query.
async fn abandon_mysql(pool: &MySqlPool, conn: PoolConnection<MySql>, id: u64) {
    let kill = pool.execute(sqlx::AssertSqlSafe(format!("KILL QUERY {id}")));
    let _ = tokio::time::timeout(GRACE, kill).await;
    drop(conn.detach());
}

/// The Postgres role the pool connects as, if that role is a superuser.
async fn pg_superuser(p: &PgPool) -> Result<Option<String>, ObserveError> {
    let (role, is_superuser): (String, String) =
        sqlx::query_as("SELECT current_user::text, current_setting('is_superuser')")
            .fetch_one(p)
            .await
            .map_err(|e| query_error("--observe-db", &e))?;
    Ok((is_superuser == "on").then(|| format!("role {role:?}")))
}

/// The MySQL user the pool connects as and its privileges that reach past a read-only
/// transaction (FILE: `INTO OUTFILE`, `LOAD_FILE`; SUPER), if it holds any, as `SHOW GRANTS`
/// lists them.
async fn mysql_powers(p: &MySqlPool) -> Result<Option<(String, String)>, ObserveError> {
    let failed = |e: sqlx::Error| query_error("--observe-db", &e);
    let user: String = sqlx::query_scalar("SELECT CURRENT_USER()").fetch_one(p).await.map_err(failed)?;
    let grants = sqlx::query("SHOW GRANTS").fetch_all(p).await.map_err(failed)?;
    let mut powers: Vec<&str> = Vec::new();
    for grant in grants.iter().filter_map(|row| row.try_get_unchecked::<String, _>(0).ok()) {
        for power in global_powers(&grant) {
            if !powers.contains(&power) {
                powers.push(power);
            }
        }
    }
    Ok((!powers.is_empty()).then(|| (user, powers.join(", "))))
}

/// Of one `SHOW GRANTS` line, the powers it grants on every database (`ON *.*`) that a read-only
/// transaction does not hold back: `ALL PRIVILEGES ON *.*`, `FILE`, `SUPER`.
fn global_powers(grant: &str) -> Vec<&'static str> {
    let Some(rest) = grant.strip_prefix("GRANT ") else { return Vec::new() };
    let Some((privileges, on)) = rest.split_once(" ON ") else { return Vec::new() };
    if !on.starts_with("*.*") {
        return Vec::new();
    }
    let mut powers = Vec::new();
    for privilege in privileges.split(',').map(str::trim) {
        match privilege {
            "ALL PRIVILEGES" | "ALL" => powers.push("ALL PRIVILEGES ON *.*"),
            "FILE" => powers.push("FILE"),
            "SUPER" => powers.push("SUPER"),
            _ => {}
        }
    }
    powers
}

/// A database's error as the observer reports it: control characters escaped.
fn query_error(flag: &'static str, e: &sqlx::Error) -> ObserveError {
    ObserveError::Query { flag, reason: printable::line(&e.to_string()).into_owned() }
}

impl Observer for SqlObserver {
    fn name(&self) -> &'static str {
        "sql"
    }

    fn sees(&self) -> Sees {
        let q = &self.queries;
        Sees {
            applies: q.applied.is_some(),
            states: q.state.is_some(),
            dead_letters: q.dead_letters.is_some(),
            update_applies: q.update_applied.is_some(),
            recorded_applies: q.applied.is_some(),
            aggregates: q.balance.is_some() || q.count.is_some(),
            ..Sees::default()
        }
    }

    fn look<'a>(&'a self, into: &'a mut dyn Record) -> BoxFuture<'a, Result<(), ObserveError>> {
        Box::pin(self.look_into(into))
    }
}

/// One value of a result row, whatever its column's type.
#[derive(Debug, Clone)]
enum Cell {
    Int(i64),
    Text(String),
    Null,
}

impl Cell {
    fn of_pg(row: &sqlx::postgres::PgRow, i: usize) -> Self {
        let type_name = row.column(i).type_info().name().to_string();
        match type_name.as_str() {
            "INT2" => {
                row.try_get::<Option<i16>, _>(i).ok().flatten().map_or(Self::Null, |v| Self::Int(v.into()))
            }
            "INT4" => {
                row.try_get::<Option<i32>, _>(i).ok().flatten().map_or(Self::Null, |v| Self::Int(v.into()))
            }
            "INT8" => row.try_get::<Option<i64>, _>(i).ok().flatten().map_or(Self::Null, Self::Int),
            _ => row.try_get::<Option<String>, _>(i).ok().flatten().map_or(Self::Null, Self::Text),
        }
    }

    /// A MySQL value: integers (unsigned ones past `i64` kept as text, which no integer column
    /// takes), DECIMAL as an integer when it has no fraction (`SUM()` of an integer column),
    /// anything else as text. Read unchecked: a VARBINARY id is text to the observer too.
    fn of_mysql(row: &MySqlRow, i: usize) -> Self {
        let type_name = row.column(i).type_info().name().to_string();
        let text = || row.try_get_unchecked::<Option<String>, _>(i).ok().flatten();
        match type_name.as_str() {
            "DECIMAL" => text().map_or(Self::Null, |t| Self::of_decimal(&t)),
            t if t.ends_with(" UNSIGNED") => {
                row.try_get_unchecked::<Option<u64>, _>(i).ok().flatten().map_or(Self::Null, |v| {
                    i64::try_from(v).map_or_else(|_| Self::Text(v.to_string()), Self::Int)
                })
            }
            "TINYINT" | "SMALLINT" | "MEDIUMINT" | "INT" | "BIGINT" | "BOOLEAN" => {
                row.try_get_unchecked::<Option<i64>, _>(i).ok().flatten().map_or(Self::Null, Self::Int)
            }
            _ => text().map_or(Self::Null, Self::Text),
        }
    }

    /// A DECIMAL's text: an integer when its fraction is only zeros (`12`, `12.000`), else the
    /// text (which reads as no integer).
    fn of_decimal(text: &str) -> Self {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        match whole.parse() {
            Ok(v) if fraction.chars().all(|c| c == '0') => Self::Int(v),
            _ => Self::Text(text.to_string()),
        }
    }

    fn of_sqlite(row: &sqlx::sqlite::SqliteRow, i: usize) -> Self {
        if let Ok(Some(v)) = row.try_get::<Option<i64>, _>(i) {
            return Self::Int(v);
        }
        row.try_get::<Option<String>, _>(i).ok().flatten().map_or(Self::Null, Self::Text)
    }

    fn text(&self) -> String {
        match self {
            Self::Int(v) => v.to_string(),
            Self::Text(t) => t.clone(),
            Self::Null => "NULL".to_string(),
        }
    }

    fn integer(&self) -> Option<i64> {
        match self {
            Self::Int(v) => Some(*v),
            Self::Text(t) => t.trim().parse().ok(),
            Self::Null => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_urls_and_mariadb_urls_are_read_as_mysql() {
        let (d, url) = dialect_of("mariadb://u:p@h:3306/app").expect("mariadb");
        assert_eq!((d, url.as_str()), (Dialects::Mysql, "mysql://u:p@h:3306/app"));
        let (d, url) = dialect_of("mysql://u@h/app").expect("mysql");
        assert_eq!((d, url.as_str()), (Dialects::Mysql, "mysql://u@h/app"));
        assert!(matches!(dialect_of("postgresql://h/app"), Some((Dialects::Postgres, _))));
        assert!(matches!(dialect_of("sqlite:///tmp/x.db"), Some((Dialects::Sqlite, _))));
        assert!(dialect_of("mssql://h/app").is_none());
    }

    #[test]
    fn each_server_gets_its_own_timeout_in_its_own_unit() {
        let limits = |ms| QueryLimits { timeout: Duration::from_millis(ms), ..QueryLimits::default() };
        assert_eq!(Flavor::Mariadb.timeout_sql(limits(2500)), "SET SESSION max_statement_time = 2.500");
        assert_eq!(Flavor::Mariadb.timeout_sql(limits(0)), "SET SESSION max_statement_time = 0.001");
        assert_eq!(Flavor::Mysql.timeout_sql(limits(2500)), "SET SESSION max_execution_time = 2500");
        assert_eq!(Flavor::Mysql.timeout_sql(limits(0)), "SET SESSION max_execution_time = 1");
        let long = QueryLimits { timeout: Duration::from_secs(1 << 40), ..QueryLimits::default() };
        assert_eq!(Flavor::Mysql.timeout_sql(long), "SET SESSION max_execution_time = 4294967295");
        assert_eq!(Flavor::Mariadb.timeout_sql(long), "SET SESSION max_statement_time = 31536000.000");
    }

    #[test]
    fn a_decimal_is_an_integer_only_without_a_fraction() {
        assert!(matches!(Cell::of_decimal("1500"), Cell::Int(1500)));
        assert!(matches!(Cell::of_decimal("-7.000"), Cell::Int(-7)));
        assert!(matches!(Cell::of_decimal("12.5"), Cell::Text(ref t) if t == "12.5"));
        assert_eq!(Cell::of_decimal("12.5").integer(), None);
        assert_eq!(Cell::of_decimal("99999999999999999999").integer(), None);
    }

    #[test]
    fn file_and_super_are_read_from_global_grants_only() {
        let powers = |g| global_powers(g);
        assert_eq!(
            powers("GRANT ALL PRIVILEGES ON *.* TO `root`@`%` WITH GRANT OPTION"),
            ["ALL PRIVILEGES ON *.*"]
        );
        assert_eq!(powers("GRANT SELECT, FILE ON *.* TO `obs`@`%`"), ["FILE"]);
        assert_eq!(powers("GRANT SUPER, PROCESS ON *.* TO 'obs'@'%'"), ["SUPER"]);
        assert!(powers("GRANT USAGE ON *.* TO `obs`@`%` IDENTIFIED BY PASSWORD '*AB'").is_empty());
        assert!(powers("GRANT ALL PRIVILEGES ON `app`.* TO `obs`@`%`").is_empty());
        assert!(powers("GRANT SELECT (FILE, id) ON `app`.`t` TO `obs`@`%`").is_empty());
        assert!(powers("GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION").is_empty());
    }
}
