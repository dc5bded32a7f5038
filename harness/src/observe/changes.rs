//! What the receiver's database holds and what changed in it, read-only, for `hookbench
//! discover`, which proposes an audit's queries from what one credit did: the tables and their
//! columns, which columns are unique, and the rows changed since a [`Mark`].
//!
//! Postgres: the rows whose `xmin` is newer than the mark (inserted or updated since), and each
//! table's row count; a table the role cannot read, by the server's per-table counters
//! (`pg_stat_user_tables`: they count aborted inserts too, and a writer's idle connection can
//! hold them back up to 10 s, so they are read only after that long a wait). SQLite: each table's
//! row count and the rows past its last rowid (an update in place shows only when the rows of a
//! known account are read again, [`Changes::rows_where`]). Nothing here writes: the connections
//! are the observer's read-only ones, and every table and column name is quoted as an
//! identifier.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use sqlx::{Column, Executor, Row};

use super::ObserveError;
use super::readonly::Dialects;
use super::sql::{Pool, QueryLimits};
use crate::printable;

/// One row, by column.
pub type Values = BTreeMap<String, Value>;

/// The most changed rows read of one table: a credit changes a few.
const MOST_ROWS: i64 = 100;

/// The most tables looked at.
const MOST_TABLES: usize = 1_000;

/// How long a writer's idle connection can hold back Postgres's per-table counters.
pub const COUNTERS_LAG: Duration = Duration::from_secs(11);

/// A table, as the catalog describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Its name as a query names it (`credits`, `billing.credits`), quoted where it must be.
    pub name: String,
    /// Its columns, in order.
    pub columns: Vec<String>,
    /// Each unique index's (or primary key's) columns.
    pub unique: Vec<Vec<String>>,
    /// Whether the role can read its rows (else only its counters are read).
    pub readable: bool,
    /// Postgres: its oid, for the counters. SQLite: whether it has rowids.
    key: i64,
}

impl Table {
    /// Whether `column` alone is unique: one row per value.
    pub fn unique_alone(&self, column: &str) -> bool {
        self.unique.iter().any(|u| u.len() == 1 && u[0] == column)
    }
}

#[cfg(test)]
impl Table {
    /// A readable table whose `unique` columns are each unique alone.
    pub fn for_tests(name: &str, unique: &[&str]) -> Self {
        Self {
            name: name.to_string(),
            columns: Vec::new(),
            unique: unique.iter().map(|c| vec![c.to_string()]).collect(),
            readable: true,
            key: 1,
        }
    }
}

/// The database at one moment, to read what changed after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// Postgres: the first transaction id not yet started (rows with a newer `xmin` changed).
    xmax: i64,
    /// Per table: its row count, and on SQLite its last rowid.
    rows: BTreeMap<String, (i64, i64)>,
    /// Postgres: per table the role cannot read, its inserted, updated and deleted counters.
    counters: BTreeMap<String, [i64; 3]>,
    /// SQLite: `PRAGMA data_version`, which moves when another connection commits (an update in
    /// place included).
    version: i64,
}

/// What changed in one table since a mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The table.
    pub table: String,
    /// Rows inserted less rows deleted (the row count's change).
    pub added: i64,
    /// The rows changed (inserted or, on Postgres, updated), up to [`MOST_ROWS`].
    pub rows: Vec<Values>,
    /// The counters' changes (inserted, updated, deleted), where the rows cannot be read.
    pub counted: Option<[i64; 3]>,
}

impl Changed {
    /// Rows inserted, or updated (Postgres), or counted.
    pub fn touched(&self) -> i64 {
        match self.counted {
            Some([i, u, d]) => i + u + d,
            None => (self.rows.len() as i64).max(self.added.abs()),
        }
    }
}

/// The receiver's database, read-only, for what a delivery changes.
pub struct Changes {
    pool: Pool,
    tables: Vec<Table>,
    timeout: Duration,
}

/// An identifier quoted for a query: `"credits"`, `"odd""name"`.
pub fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A name as a query writes it: bare when it is a plain lower-case word, else [`quoted`].
pub fn identifier(name: &str) -> String {
    let plain = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain { name.to_string() } else { quoted(name) }
}

/// A table's name as a query writes it, its schema before it unless `public`.
fn table_name(schema: Option<&str>, name: &str) -> String {
    match schema {
        Some(s) if s != "public" => format!("{}.{}", identifier(s), identifier(name)),
        _ => identifier(name),
    }
}

impl Changes {
    /// Opens `url` (postgres:// or sqlite:) read-only and reads its tables.
    pub async fn open(url: &str, limits: QueryLimits) -> Result<Self, ObserveError> {
        let connect = |reason: String| ObserveError::Connect {
            flag: "--observe-db",
            url: provision::hide_password(url),
            reason: printable::line(&reason).into_owned(),
        };
        let dialect = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Dialects::Postgres
        } else if url.starts_with("sqlite:") {
            Dialects::Sqlite
        } else {
            return Err(connect("only postgres:// and sqlite: URLs are served".to_string()));
        };
        let pool = Pool::open(url, dialect, limits).await.map_err(|e| connect(e.to_string()))?;
        let mut changes = Self { pool, tables: Vec::new(), timeout: limits.timeout };
        changes.tables = changes.read_tables().await?;
        Ok(changes)
    }

    /// The tables, as the catalog describes them.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// Whether some table's rows cannot be read (its counters are, after [`COUNTERS_LAG`]).
    pub fn counts_only(&self) -> bool {
        self.tables.iter().any(|t| !t.readable)
    }

    fn failed(&self, e: impl std::fmt::Display) -> ObserveError {
        ObserveError::Query { flag: "--observe-db", reason: printable::line(&e.to_string()).into_owned() }
    }

    async fn within<T>(&self, work: impl Future<Output = Result<T, sqlx::Error>>) -> Result<T, ObserveError> {
        match tokio::time::timeout(self.timeout, work).await {
            Ok(done) => done.map_err(|e| self.failed(e)),
            Err(_) => Err(ObserveError::Timeout {
                flag: "--observe-db",
                limit: humantime::format_duration(self.timeout).to_string(),
            }),
        }
    }

    async fn read_tables(&self) -> Result<Vec<Table>, ObserveError> {
        match &self.pool {
            Pool::Postgres(p) => {
                let rows: Vec<(i64, String, String, bool)> = self
                    .within(
                        sqlx::query_as(
                            "SELECT c.oid::bigint, n.nspname::text, c.relname::text, \
                             has_table_privilege(c.oid, 'SELECT') \
                             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                             WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
                             AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 2, 3 LIMIT $1",
                        )
                        .bind(MOST_TABLES as i64)
                        .fetch_all(p),
                    )
                    .await?;
                let mut tables = Vec::new();
                for (oid, schema, name, readable) in rows {
                    let columns: Vec<String> = self
                        .within(
                            sqlx::query_scalar(
                                "SELECT attname::text FROM pg_attribute WHERE attrelid = $1::oid \
                                 AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                            )
                            .bind(oid)
                            .fetch_all(p),
                        )
                        .await?;
                    let unique: Vec<Vec<String>> = self
                        .within(
                            sqlx::query_scalar(
                                "SELECT ARRAY(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n) \
                                 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n) \
                                 FROM pg_index i WHERE i.indrelid = $1::oid AND i.indisunique",
                            )
                            .bind(oid)
                            .fetch_all(p),
                        )
                        .await?;
                    tables.push(Table {
                        name: table_name(Some(&schema), &name),
                        columns,
                        unique,
                        readable,
                        key: oid,
                    });
                }
                Ok(tables)
            }
            Pool::Sqlite(p) => {
                let rows: Vec<(String, Option<String>)> = self
                    .within(
                        sqlx::query_as(
                            "SELECT name, sql FROM sqlite_master WHERE type = 'table' \
                             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT ?",
                        )
                        .bind(MOST_TABLES as i64)
                        .fetch_all(p),
                    )
                    .await?;
                let mut tables = Vec::new();
                for (name, sql) in rows {
                    let info: Vec<(String, i64)> = self
                        .within(
                            sqlx::query_as("SELECT name, pk FROM pragma_table_info(?)")
                                .bind(&name)
                                .fetch_all(p),
                        )
                        .await?;
                    let mut unique: Vec<Vec<String>> = Vec::new();
                    let pk: Vec<String> =
                        info.iter().filter(|(_, pk)| *pk > 0).map(|(c, _)| c.clone()).collect();
                    if !pk.is_empty() {
                        unique.push(pk);
                    }
                    let indexes: Vec<String> = self
                        .within(
                            sqlx::query_scalar("SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1")
                                .bind(&name)
                                .fetch_all(p),
                        )
                        .await?;
                    for index in indexes {
                        let cols: Vec<String> = self
                            .within(
                                sqlx::query_scalar("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
                                    .bind(&index)
                                    .fetch_all(p),
                            )
                            .await?;
                        unique.push(cols);
                    }
                    let rowid = !sql.unwrap_or_default().to_ascii_uppercase().contains("WITHOUT ROWID");
                    tables.push(Table {
                        name: table_name(None, &name),
                        columns: info.into_iter().map(|(c, _)| c).collect(),
                        unique,
                        readable: true,
                        key: i64::from(rowid),
                    });
                }
                Ok(tables)
            }
            // `Changes::open` refuses MySQL URLs: discover reads Postgres and SQLite.
            Pool::Mysql(..) => Ok(Vec::new()),
        }
    }

    /// The database now.
    pub async fn mark(&self) -> Result<Mark, ObserveError> {
        let mut mark = Mark { xmax: 0, rows: BTreeMap::new(), counters: BTreeMap::new(), version: 0 };
        match &self.pool {
            Pool::Postgres(p) => {
                mark.xmax = self
                    .within(
                        sqlx::query_scalar("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
                            .fetch_one(p),
                    )
                    .await?;
                for t in self.tables.iter().filter(|t| t.readable) {
                    let n: i64 = self
                        .within(
                            sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                                "SELECT count(*) FROM {}",
                                t.name
                            )))
                            .fetch_one(p),
                        )
                        .await?;
                    mark.rows.insert(t.name.clone(), (n, 0));
                }
                mark.counters = self.counters().await?;
            }
            Pool::Sqlite(p) => {
                mark.version = self.within(sqlx::query_scalar("PRAGMA data_version").fetch_one(p)).await?;
                for t in &self.tables {
                    let last = if t.key == 1 { "max(rowid)" } else { "0" };
                    let sql = format!("SELECT count(*), coalesce({last}, 0) FROM {}", t.name);
                    let (n, last): (i64, i64) =
                        self.within(sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_one(p)).await?;
                    mark.rows.insert(t.name.clone(), (n, last));
                }
            }
            Pool::Mysql(..) => {}
        }
        Ok(mark)
    }

    /// Postgres's counters of the tables the role cannot read.
    async fn counters(&self) -> Result<BTreeMap<String, [i64; 3]>, ObserveError> {
        let Pool::Postgres(p) = &self.pool else { return Ok(BTreeMap::new()) };
        let unreadable: BTreeMap<i64, &Table> =
            self.tables.iter().filter(|t| !t.readable).map(|t| (t.key, t)).collect();
        if unreadable.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut conn = p.acquire().await.map_err(|e| self.failed(e))?;
        // A session sees the counters as of its first read of them, until told to look again.
        self.within(conn.execute("SELECT pg_stat_clear_snapshot()")).await?;
        let rows: Vec<(i64, i64, i64, i64)> = self
            .within(
                sqlx::query_as(
                    "SELECT relid::bigint, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables",
                )
                .fetch_all(&mut *conn),
            )
            .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(oid, i, u, d)| Some((unreadable.get(&oid)?.name.clone(), [i, u, d])))
            .collect())
    }

    /// Whether another connection committed a write since `mark` (SQLite; on Postgres every
    /// change shows in [`Changes::since`]).
    pub async fn committed_since(&self, mark: &Mark) -> Result<bool, ObserveError> {
        Ok(self.mark().await?.version != mark.version)
    }

    /// Every table that changed since `mark`: its rows changed, and how many were added.
    pub async fn since(&self, mark: &Mark) -> Result<Vec<Changed>, ObserveError> {
        let mut changed = Vec::new();
        let now = self.mark().await?;
        for t in &self.tables {
            if !t.readable {
                let (Some(before), Some(after)) = (mark.counters.get(&t.name), now.counters.get(&t.name))
                else {
                    continue;
                };
                let counted = [after[0] - before[0], after[1] - before[1], after[2] - before[2]];
                if counted != [0, 0, 0] {
                    changed.push(Changed {
                        table: t.name.clone(),
                        added: counted[0] - counted[2],
                        rows: Vec::new(),
                        counted: Some(counted),
                    });
                }
                continue;
            }
            let (before, last) = mark.rows.get(&t.name).copied().unwrap_or((0, 0));
            let (after, _) = now.rows.get(&t.name).copied().unwrap_or((0, 0));
            let rows = self.changed_rows(t, mark.xmax, last).await?;
            if after != before || !rows.is_empty() {
                changed.push(Changed { table: t.name.clone(), added: after - before, rows, counted: None });
            }
        }
        Ok(changed)
    }

    /// The rows of `t` changed after a mark at `xmax` (Postgres) or past rowid `last` (SQLite).
    async fn changed_rows(&self, t: &Table, xmax: i64, last: i64) -> Result<Vec<Values>, ObserveError> {
        match &self.pool {
            Pool::Postgres(p) => {
                // xmin is 32 bits and wraps: newer is less than 2^31 ahead of the mark's xmax.
                let sql = format!(
                    "SELECT row_to_json(t)::text FROM {} AS t WHERE t.xmin::text::bigint > 2 \
                     AND ((t.xmin::text::bigint - $1 + 4294967296) % 4294967296) < 2147483648 LIMIT $2",
                    t.name
                );
                let texts: Vec<String> = self
                    .within(
                        sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                            .bind(xmax.rem_euclid(1 << 32))
                            .bind(MOST_ROWS)
                            .fetch_all(p),
                    )
                    .await?;
                Ok(texts.iter().filter_map(|t| serde_json::from_str(t).ok()).collect())
            }
            Pool::Sqlite(p) if t.key == 1 => {
                let sql = format!("SELECT * FROM {} WHERE rowid > ? ORDER BY rowid LIMIT ?", t.name);
                let rows = self
                    .within(sqlx::query(sqlx::AssertSqlSafe(sql)).bind(last).bind(MOST_ROWS).fetch_all(p))
                    .await?;
                Ok(rows.iter().map(sqlite_values).collect())
            }
            Pool::Sqlite(_) | Pool::Mysql(..) => Ok(Vec::new()),
        }
    }

    /// The rows of `table` whose `column` holds `value` (compared as text), up to [`MOST_ROWS`].
    pub async fn rows_where(
        &self,
        table: &str,
        column: &str,
        value: &Value,
    ) -> Result<Vec<Values>, ObserveError> {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match &self.pool {
            Pool::Postgres(p) => {
                let sql = format!(
                    "SELECT row_to_json(t)::text FROM {table} AS t WHERE t.{}::text = $1 LIMIT $2",
                    quoted(column)
                );
                let texts: Vec<String> = self
                    .within(
                        sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(text).bind(MOST_ROWS).fetch_all(p),
                    )
                    .await?;
                Ok(texts.iter().filter_map(|t| serde_json::from_str(t).ok()).collect())
            }
            Pool::Sqlite(p) => {
                let sql = format!("SELECT * FROM {table} WHERE CAST({} AS TEXT) = ? LIMIT ?", quoted(column));
                let rows = self
                    .within(sqlx::query(sqlx::AssertSqlSafe(sql)).bind(text).bind(MOST_ROWS).fetch_all(p))
                    .await?;
                Ok(rows.iter().map(sqlite_values).collect())
            }
            Pool::Mysql(..) => Ok(Vec::new()),
        }
    }

    /// Whether the dialect is Postgres's (for the queries proposed).
    pub fn is_postgres(&self) -> bool {
        matches!(self.pool, Pool::Postgres(_))
    }
}

/// A SQLite row's values: integers, reals and text as JSON; anything else (a blob) as null.
fn sqlite_values(row: &sqlx::sqlite::SqliteRow) -> Values {
    row.columns()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let v = if let Ok(Some(n)) = row.try_get::<Option<i64>, _>(i) {
                Value::from(n)
            } else if let Ok(Some(x)) = row.try_get::<Option<f64>, _>(i) {
                Value::from(x)
            } else if let Ok(Some(s)) = row.try_get::<Option<String>, _>(i) {
                Value::from(s)
            } else {
                Value::Null
            };
            (c.name().to_string(), v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_unless_plain() {
        assert_eq!(table_name(None, "credits"), "credits");
        assert_eq!(table_name(Some("public"), "credits"), "credits");
        assert_eq!(table_name(Some("billing"), "Credits"), "billing.\"Credits\"");
        assert_eq!(table_name(None, "odd\"name"), "\"odd\"\"name\"");
        assert_eq!(quoted("a b"), "\"a b\"");
    }
}
