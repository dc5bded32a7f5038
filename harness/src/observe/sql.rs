//! [`SqlObserver`]: the receiver's own database, opened read-only (Postgres sessions with
//! `default_transaction_read_only`, SQLite opened read-only), asked the user's questions:
//! `--applied-query`, `--update-applied-query`, `--state-query`, `--dead-letter-query`,
//! `--balance-query` and `--count-query`. Each query's shape (how many columns,
//! and on Postgres their types) is checked when the observer connects, by preparing it, so a wrong
//! query is refused whatever the database holds, before anything is sent. Each query must parse
//! as one read-only query ([`super::readonly`]), runs under a statement timeout and a row limit
//! ([`QueryLimits`]), and streams: no query's rows are collected before they are counted.

use std::str::FromStr;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use futures_util::future::BoxFuture;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{Column, Executor, Postgres, Row, SqlSafeStr, Statement, TypeInfo};

use super::readonly::{self, Dialects};
use super::{ObserveError, Observer, Record, Sees};
use crate::judge::Measure;
use crate::printable;

/// How long past the timeout hookbench waits for the database to stop a query itself before it
/// gives up on the connection (and on Postgres cancels the backend from another).
const GRACE: Duration = Duration::from_secs(5);

/// How many SQLite virtual-machine steps run between two looks at the clock.
const SQLITE_STEPS: i32 = 10_000;

/// A read-only pool of either database.
pub(super) enum Pool {
    Postgres(PgPool),
    Sqlite(SqlitePool),
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
    /// itself (the session's `statement_timeout`, so its backend stops even if hookbench is gone);
    /// SQLite is interrupted by a progress handler. At least 1 ms (0 would turn Postgres's off).
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

impl SqlObserver {
    /// Connects to `url` (postgres:// or sqlite:) read-only and checks every query, under the
    /// default [`QueryLimits`].
    pub async fn connect(url: &str, queries: Queries) -> Result<Self, ObserveError> {
        Self::connect_with_limits(url, queries, QueryLimits::default()).await
    }

    /// Connects to `url` (postgres:// or sqlite:) read-only, refuses any query that is not one
    /// read-only query, and checks every query's shape; each query then runs under `limits`.
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
        let is_postgres = url.starts_with("postgres://") || url.starts_with("postgresql://");
        if !is_postgres && !url.starts_with("sqlite:") {
            return Err(connect("only postgres:// and sqlite: URLs are served".to_string()));
        }
        let dialect = if is_postgres { Dialects::Postgres } else { Dialects::Sqlite };
        let mut observer = Self {
            pool: Pool::open(url, dialect, limits).await.map_err(|e| connect(e.to_string()))?,
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
        if let Some(role) = observer.superuser().await? {
            let note = format!(
                "--observe-db connects as the superuser {role}, whose functions reach the server's files \
                 even in a read-only session: observe with a read-only role (docs/audit.md, Observers)"
            );
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

    /// The Postgres role it connects as, if that role is a superuser.
    async fn superuser(&self) -> Result<Option<String>, ObserveError> {
        let Pool::Postgres(p) = &self.pool else { return Ok(None) };
        let (role, is_superuser): (String, String) =
            sqlx::query_as("SELECT current_user::text, current_setting('is_superuser')")
                .fetch_one(p)
                .await
                .map_err(|e| query_error("--observe-db", &e))?;
        Ok((is_superuser == "on").then(|| format!("role {role:?}")))
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
        // Column types: known on Postgres; SQLite's are per value, so only the count is checked.
        let types: Vec<Option<String>> = match &self.pool {
            Pool::Postgres(p) => {
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
        for &i in shape.integers.iter().filter(|&&i| i < types.len()) {
            if let Some(t) = &types[i]
                && !INTEGER_TYPES.contains(&t.as_str())
            {
                return Err(shape_error(format!("column {} of type {t} (cast it to bigint)", i + 1)));
            }
        }
        Ok(())
    }

    /// Runs the user's own query, handing `each` its rows one at a time as they stream in, under
    /// the observer's limits. `AssertSqlSafe`: the SQL is the user's, against the user's database,
    /// parsed as one read-only query and run on connections that cannot write (Postgres
    /// `default_transaction_read_only`, SQLite opened read-only).
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

impl Pool {
    /// Opens `url` read-only: Postgres sessions with `default_transaction_read_only` and the
    /// statement timeout, SQLite opened read-only. sqlx's own error says why it cannot (a URL
    /// that does not parse, a server that does not answer, a file that is not there): the caller
    /// names the flag and the URL around it.
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
        }
    }

    /// The timeout in Postgres's milliseconds: at least 1 (0 turns it off), at most its maximum.
    fn timeout_ms(limits: QueryLimits) -> u128 {
        limits.timeout.as_millis().clamp(1, i32::MAX as u128)
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
