//! [`SqlObserver`]: the receiver's own database, opened read-only (Postgres sessions with
//! `default_transaction_read_only`, SQLite opened read-only), asked the user's questions:
//! `--applied-query`, `--state-query`, `--dead-letter-query`. Each query's shape (how many columns,
//! and on Postgres their types) is checked when the observer connects, by preparing it, so a wrong
//! query is refused whatever the database holds, before anything is sent.

use std::str::FromStr;

use futures_util::future::BoxFuture;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{Column, Executor, Row, SqlSafeStr, Statement, TypeInfo};

use super::{ObserveError, Observer, Record, Sees};

enum Pool {
    Postgres(PgPool),
    Sqlite(SqlitePool),
}

/// The receiver's database, read-only, asked the user's questions.
pub struct SqlObserver {
    pool: Pool,
    queries: Queries,
}

/// The user's questions of their database.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Queries {
    /// Rows of applied side effects: `(event id)` per apply or `(event id, count)`.
    pub applied: Option<String>,
    /// `(account, version)` per account.
    pub state: Option<String>,
    /// `(event id)` per dead letter.
    pub dead_letters: Option<String>,
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
const STATE: Shape = Shape {
    flag: "--state-query",
    columns: &[2],
    integers: &[0, 1],
    wanted: "(account, version) rows of integers",
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
    /// Connects to `url` (postgres:// or sqlite:) read-only and checks every query's shape.
    pub async fn connect(url: &str, queries: Queries) -> Result<Self, ObserveError> {
        let shown = provision::hide_password(url);
        let connect =
            |reason: String| ObserveError::Connect { flag: "--observe-db", url: shown.clone(), reason };
        let pool = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options = PgConnectOptions::from_str(url)
                .map_err(|e| connect(e.to_string()))?
                .options([("default_transaction_read_only", "on")]);
            Pool::Postgres(
                PgPoolOptions::new()
                    .max_connections(2)
                    .connect_with(options)
                    .await
                    .map_err(|e| connect(e.to_string()))?,
            )
        } else if url.starts_with("sqlite:") {
            let options =
                SqliteConnectOptions::from_str(url).map_err(|e| connect(e.to_string()))?.read_only(true);
            Pool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(options)
                    .await
                    .map_err(|e| connect(e.to_string()))?,
            )
        } else {
            return Err(connect("only postgres:// and sqlite: URLs are served".to_string()));
        };
        let observer = Self { pool, queries };
        for (sql, shape) in observer.asked() {
            observer.check_shape(sql, shape).await?;
        }
        Ok(observer)
    }

    /// The queries given, each with its shape.
    fn asked(&self) -> impl Iterator<Item = (&str, Shape)> {
        let q = &self.queries;
        [(&q.applied, APPLIED), (&q.state, STATE), (&q.dead_letters, DEAD_LETTERS)]
            .into_iter()
            .filter_map(|(sql, shape)| Some((sql.as_deref()?, shape)))
    }

    /// Prepares `sql` and refuses it unless its columns fit `shape`.
    async fn check_shape(&self, sql: &str, shape: Shape) -> Result<(), ObserveError> {
        let query_error = |e: sqlx::Error| ObserveError::Query { flag: shape.flag, reason: e.to_string() };
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

    /// Runs the user's own query. `AssertSqlSafe`: the SQL is the user's, against the user's
    /// database, on connections that cannot write (Postgres `default_transaction_read_only`,
    /// SQLite opened read-only).
    async fn rows(&self, sql: &str, flag: &'static str) -> Result<Vec<Vec<Cell>>, ObserveError> {
        let query_error = |e: sqlx::Error| ObserveError::Query { flag, reason: e.to_string() };
        match &self.pool {
            Pool::Postgres(p) => {
                let rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
                    .fetch_all(p)
                    .await
                    .map_err(query_error)?;
                Ok(rows.iter().map(|r| (0..r.len()).map(|i| Cell::of_pg(r, i)).collect()).collect())
            }
            Pool::Sqlite(p) => {
                let rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
                    .fetch_all(p)
                    .await
                    .map_err(query_error)?;
                Ok(rows.iter().map(|r| (0..r.len()).map(|i| Cell::of_sqlite(r, i)).collect()).collect())
            }
        }
    }

    async fn look_into(&self, into: &mut dyn Record) -> Result<(), ObserveError> {
        if let Some(sql) = &self.queries.applied {
            let shape =
                |found: String| ObserveError::Shape { flag: APPLIED.flag, found, wanted: APPLIED.wanted };
            for row in self.rows(sql, APPLIED.flag).await? {
                match row.as_slice() {
                    [id] => into.applied(self.name(), &id.text(), 1),
                    [id, n] => {
                        let n = n.integer().ok_or_else(|| shape(format!("a count of {}", n.text())))?;
                        into.applied(self.name(), &id.text(), u64::try_from(n).unwrap_or(0));
                    }
                    other => return Err(shape(format!("rows of {} columns", other.len()))),
                }
            }
        }
        if let Some(sql) = &self.queries.state {
            let shape = |found: String| ObserveError::Shape { flag: STATE.flag, found, wanted: STATE.wanted };
            for row in self.rows(sql, STATE.flag).await? {
                let [account, version] = row.as_slice() else {
                    return Err(shape(format!("rows of {} columns", row.len())));
                };
                let a =
                    account.integer().ok_or_else(|| shape(format!("an account of {}", account.text())))?;
                let v = version.integer().ok_or_else(|| shape(format!("a version of {}", version.text())))?;
                into.state(a, v);
            }
        }
        if let Some(sql) = &self.queries.dead_letters {
            for row in self.rows(sql, DEAD_LETTERS.flag).await? {
                let [id] = row.as_slice() else {
                    let found = format!("rows of {} columns", row.len());
                    return Err(ObserveError::Shape {
                        flag: DEAD_LETTERS.flag,
                        found,
                        wanted: DEAD_LETTERS.wanted,
                    });
                };
                into.dead_letter(&id.text());
            }
        }
        Ok(())
    }
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
