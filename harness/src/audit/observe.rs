//! How an audit sees what a receiver it cannot look inside applied: the receiver's own database
//! through the user's queries (read-only), or a sink that stands in for the downstream service
//! its side effect calls. Neither shares code or schema with what it observes.

use std::collections::{BTreeSet, HashMap};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::{Column, Row, TypeInfo};
use tokio::net::TcpListener;

/// An observer that could not answer: the audit cannot go on (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// `--observe-db` could not be opened.
    #[error("--observe-db {url}: {reason}")]
    Connect {
        /// The URL, password hidden.
        url: String,
        /// Why.
        reason: String,
    },
    /// A query failed.
    #[error("{flag} failed: {reason}")]
    Query {
        /// `--applied-query` or `--state-query`.
        flag: &'static str,
        /// The database's message.
        reason: String,
    },
    /// A query returned rows of the wrong shape.
    #[error("{flag} returned {found}; it must return {wanted}")]
    Shape {
        /// `--applied-query` or `--state-query`.
        flag: &'static str,
        /// What came back.
        found: String,
        /// What is expected.
        wanted: &'static str,
    },
    /// The sink could not listen.
    #[error("--sink {addr}: {reason}")]
    Sink {
        /// The address.
        addr: String,
        /// Why.
        reason: String,
    },
}

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
#[derive(Debug, Clone, Default)]
pub struct Queries {
    /// Rows of applied side effects: `(event id)` per apply or `(event id, count)`.
    pub applied: Option<String>,
    /// `(account, version)` per account.
    pub state: Option<String>,
    /// `(event id)` per dead letter.
    pub dead_letters: Option<String>,
}

const APPLIED_SHAPE: &str = "one row per applied side effect (event id) or (event id, count) rows";
const STATE_SHAPE: &str = "(account, version) rows of integers";

impl SqlObserver {
    /// Connects to `url` (postgres:// or sqlite:) read-only.
    pub async fn connect(url: &str, queries: Queries) -> Result<Self, ObserveError> {
        let shown = provision::hide_password(url);
        let connect = |reason: String| ObserveError::Connect { url: shown.clone(), reason };
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
        Ok(Self { pool, queries })
    }

    /// Whether it can count applies.
    pub fn sees_applies(&self) -> bool {
        self.queries.applied.is_some()
    }

    /// Whether it can read each account's version.
    pub fn sees_state(&self) -> bool {
        self.queries.state.is_some()
    }

    /// Whether it can list dead letters.
    pub fn sees_dead_letters(&self) -> bool {
        self.queries.dead_letters.is_some()
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

    /// How many times each event id was applied.
    pub async fn applies(&self) -> Result<HashMap<String, u64>, ObserveError> {
        let Some(sql) = &self.queries.applied else { return Ok(HashMap::new()) };
        let flag = "--applied-query";
        let mut counts = HashMap::new();
        for row in self.rows(sql, flag).await? {
            let shape = |found: String| ObserveError::Shape { flag, found, wanted: APPLIED_SHAPE };
            match row.as_slice() {
                [id] => *counts.entry(id.text()).or_insert(0) += 1,
                [id, n] => {
                    let n = n.integer().ok_or_else(|| shape(format!("a count of {}", n.text())))?;
                    *counts.entry(id.text()).or_insert(0) += u64::try_from(n).unwrap_or(0);
                }
                other => return Err(shape(format!("rows of {} columns", other.len()))),
            }
        }
        Ok(counts)
    }

    /// Each account's version, as the receiver holds it.
    pub async fn states(&self) -> Result<HashMap<i64, i64>, ObserveError> {
        let Some(sql) = &self.queries.state else { return Ok(HashMap::new()) };
        let flag = "--state-query";
        let mut states = HashMap::new();
        for row in self.rows(sql, flag).await? {
            let shape = |found: String| ObserveError::Shape { flag, found, wanted: STATE_SHAPE };
            match row.as_slice() {
                [account, version] => {
                    let a = account
                        .integer()
                        .ok_or_else(|| shape(format!("an account of {}", account.text())))?;
                    let v =
                        version.integer().ok_or_else(|| shape(format!("a version of {}", version.text())))?;
                    states.insert(a, v);
                }
                other => return Err(shape(format!("rows of {} columns", other.len()))),
            }
        }
        Ok(states)
    }

    /// The event ids in the receiver's dead-letter store.
    pub async fn dead_letters(&self) -> Result<BTreeSet<String>, ObserveError> {
        let Some(sql) = &self.queries.dead_letters else { return Ok(BTreeSet::new()) };
        let flag = "--dead-letter-query";
        let mut ids = BTreeSet::new();
        for row in self.rows(sql, flag).await? {
            match row.as_slice() {
                [id] => ids.insert(id.text()),
                other => {
                    let found = format!("rows of {} columns", other.len());
                    return Err(ObserveError::Shape {
                        flag,
                        found,
                        wanted: "one row (event id) per dead letter",
                    });
                }
            };
        }
        Ok(ids)
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

/// A stand-in for the downstream service the receiver's side effect calls: every request is one
/// side effect, keyed by its `Idempotency-Key` header or a field of its JSON body.
pub struct Sink {
    counts: Arc<Mutex<HashMap<String, u64>>>,
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

#[derive(Clone)]
struct SinkState {
    counts: Arc<Mutex<HashMap<String, u64>>>,
    key_field: String,
}

async fn sink_call(State(s): State<SinkState>, headers: HeaderMap, body: axum::body::Bytes) -> StatusCode {
    let key =
        headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_string).or_else(|| {
            let json: serde_json::Value = serde_json::from_slice(&body).ok()?;
            json.get(&s.key_field).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        });
    let Some(key) = key else { return StatusCode::BAD_REQUEST };
    // A std Mutex: held for one increment, never across an await.
    if let Ok(mut counts) = s.counts.lock() {
        *counts.entry(key).or_insert(0) += 1;
    }
    StatusCode::OK
}

impl Sink {
    /// Listens on `addr` and counts calls keyed by `Idempotency-Key` or the body's `key_field`.
    pub async fn start(addr: &str, key_field: &str) -> Result<Self, ObserveError> {
        let sink_error = |reason: String| ObserveError::Sink { addr: addr.to_string(), reason };
        let listener = TcpListener::bind(addr).await.map_err(|e| sink_error(e.to_string()))?;
        let bound = listener.local_addr().map_err(|e| sink_error(e.to_string()))?;
        let counts = Arc::new(Mutex::new(HashMap::new()));
        let state = SinkState { counts: counts.clone(), key_field: key_field.to_string() };
        let app = axum::Router::new().fallback(sink_call).with_state(state);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self { counts, addr: bound, stop: Some(stop) })
    }

    /// Calls so far, per key.
    pub fn applies(&self) -> HashMap<String, u64> {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Every observer an audit was given.
#[derive(Default)]
pub struct Observers {
    /// The receiver's database.
    pub sql: Option<SqlObserver>,
    /// The downstream stand-in.
    pub sink: Option<Sink>,
}

/// What the observers saw at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// Per observer that counts applies (`sql`, `sink`), the count per event id.
    pub applied: Vec<(&'static str, HashMap<String, u64>)>,
    /// Each account's version (empty without a state query).
    pub states: HashMap<i64, i64>,
    /// The event ids in the dead-letter store (empty without a dead-letter query).
    pub dead_letters: BTreeSet<String>,
}

impl Observation {
    /// The fewest and the most times any observer saw `id` applied.
    pub fn applied(&self, id: &str) -> (u64, u64) {
        let counts = self.applied.iter().map(|(_, m)| m.get(id).copied().unwrap_or(0));
        (counts.clone().min().unwrap_or(0), counts.max().unwrap_or(0))
    }

    /// `id`'s counts in words, per observer.
    pub fn describe(&self, id: &str) -> String {
        self.applied
            .iter()
            .map(|(name, m)| format!("{name}: applied {} times", m.get(id).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Observers {
    /// Whether any observer counts applies.
    pub fn sees_applies(&self) -> bool {
        self.sql.as_ref().is_some_and(SqlObserver::sees_applies) || self.sink.is_some()
    }

    /// Whether the state query was given.
    pub fn sees_state(&self) -> bool {
        self.sql.as_ref().is_some_and(SqlObserver::sees_state)
    }

    /// Whether the dead-letter query was given.
    pub fn sees_dead_letters(&self) -> bool {
        self.sql.as_ref().is_some_and(SqlObserver::sees_dead_letters)
    }

    /// Names for the report.
    pub fn names(&self) -> Vec<String> {
        let mut names = Vec::new();
        if let Some(sql) = &self.sql {
            if sql.sees_applies() {
                names.push("sql applied-query".to_string());
            }
            if sql.sees_state() {
                names.push("sql state-query".to_string());
            }
            if sql.sees_dead_letters() {
                names.push("sql dead-letter-query".to_string());
            }
        }
        if let Some(sink) = &self.sink {
            names.push(format!("sink at {}", sink.addr));
        }
        names
    }

    /// Asks every observer.
    pub async fn observe(&self) -> Result<Observation, ObserveError> {
        let mut o = Observation::default();
        if let Some(sql) = &self.sql {
            if sql.sees_applies() {
                o.applied.push(("sql", sql.applies().await?));
            }
            o.states = sql.states().await?;
            o.dead_letters = sql.dead_letters().await?;
        }
        if let Some(sink) = &self.sink {
            o.applied.push(("sink", sink.applies()));
        }
        Ok(o)
    }

    /// Observes until two looks `quiet` apart agree (a receiver that applies later, from a queue,
    /// has finished), or `max` has passed.
    pub async fn settled(
        &self,
        quiet: std::time::Duration,
        max: std::time::Duration,
    ) -> Result<Observation, ObserveError> {
        let deadline = tokio::time::Instant::now() + max;
        let mut last = self.observe().await?;
        loop {
            tokio::time::sleep(quiet).await;
            let now = self.observe().await?;
            if now == last || tokio::time::Instant::now() >= deadline {
                return Ok(now);
            }
            last = now;
        }
    }
}
