//! Connections lent without a ping when they come back, for the Postgres and MySQL stores.
//!
//! sqlx's pool pings every connection given back to it (Postgres's `Sync` and `ReadyForQuery`,
//! MySQL's `COM_PING`): one round trip more per use, so a delivery whose claim is one statement
//! made two round trips, and `check-then-insert`'s three calls made six. The ping is there because
//! the pool cannot tell how a connection was left: a statement whose future was dropped half-way,
//! or a transaction dropped with its `ROLLBACK` queued and not yet sent, which would hold its
//! locks until the connection's next use. On MySQL that ping can also wait forever: a statement
//! dropped after its answer was partly read leaves sqlx-mysql waiting for a result the server has
//! already sent, and the pool's `close` then waits for that connection (seen as a test that hung
//! in CI on MariaDB 10.11 after a cancelled claim). Here whoever borrowed the connection says how
//! it ended, by handing [`Lease::settle`] the result of what it did:
//!
//! - `Ok`: every statement ran to its end, and every transaction begun was ended (each function
//!   of `postgres.rs` and `mysql.rs` commits or rolls back before it returns `Ok`). The connection
//!   goes back as it is.
//! - an error: a `ROLLBACK` may be queued. The connection is pinged, which sends it and waits
//!   for the server to be ready, and goes back only if the ping answers within the pool timeout.
//! - never settled (the borrower's future was dropped, or it panicked): nothing says where it
//!   stopped, so the connection is closed. The server rolls back the transaction it had open (a
//!   statement already running may still finish, as when a client crashes: one statement is all
//!   or nothing either way). The pool opens another connection when one is next wanted.
//!
//! The pool itself is deadpool's: a bounded set of connections. Getting one, the wait for a free
//! one and a connect together, gives up after the store's pool timeout. A connection lives until
//! it fails or the pool closes (sqlx's pool also closed idle ones after 10 minutes).

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use deadpool::managed::{self, Metrics, Object, PoolError, RecycleResult};
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection, Executor};

use super::StoreError;
use crate::timing::{self, Stage};

/// A connection type the pool lends: how one is opened, and where it goes (for `Debug`, never
/// with the password).
pub(super) trait Open: Connection + Sized {
    /// A new connection, with the session's settings applied.
    fn open(
        options: &Self::Options,
        session: &[String],
    ) -> impl Future<Output = Result<Self, sqlx::Error>> + Send;

    /// The server and database the options name.
    fn describe(options: &Self::Options) -> String;
}

impl Open for PgConnection {
    /// Postgres takes its session settings in the startup packet (`PgConnectOptions::options`),
    /// so there is nothing to run after the connect.
    async fn open(options: &PgConnectOptions, _session: &[String]) -> Result<Self, sqlx::Error> {
        options.connect().await
    }

    fn describe(options: &PgConnectOptions) -> String {
        let database = options.get_database().unwrap_or_default();
        format!("postgres {}:{}/{database}", options.get_host(), options.get_port())
    }
}

impl Open for MySqlConnection {
    async fn open(options: &MySqlConnectOptions, session: &[String]) -> Result<Self, sqlx::Error> {
        let mut conn = options.connect().await?;
        for statement in session {
            conn.execute(sqlx::AssertSqlSafe(statement.clone())).await?;
        }
        Ok(conn)
    }

    fn describe(options: &MySqlConnectOptions) -> String {
        let database = options.get_database().unwrap_or_default();
        format!("mysql {}:{}/{database}", options.get_host(), options.get_port())
    }
}

/// Opens connections to one database.
pub(super) struct Connector<C: Open> {
    options: C::Options,
    /// Statements each new connection runs before it is lent (MySQL's session settings).
    session: Vec<String>,
    /// How long getting a connection, or the ping after an error, may take.
    timeout: Duration,
}

impl<C: Open> std::fmt::Debug for Connector<C> {
    /// The server and database, never the password the options hold.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("database", &C::describe(&self.options))
            .field("session", &self.session)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<C: Open> managed::Manager for Connector<C> {
    type Type = C;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<C, sqlx::Error> {
        C::open(&self.options, &self.session).await
    }

    /// A connection comes back to the pool only in a known state (see the module's docs), so
    /// nothing is checked when it is handed out again.
    async fn recycle(&self, _: &mut C, _: &Metrics) -> RecycleResult<sqlx::Error> {
        Ok(())
    }
}

/// The receivers' connections of one kind.
pub(super) type Pool<C> = managed::Pool<Connector<C>>;
/// The Postgres store's connections.
pub(super) type PgPool = Pool<PgConnection>;
/// The MySQL store's connections.
pub(super) type MySqlPool = Pool<MySqlConnection>;

/// A pool of at most `size` connections to `options`, each running `session` once opened;
/// getting one gives up after `timeout`. Opens no connection yet.
pub(super) fn pool<C: Open>(
    options: C::Options,
    session: Vec<String>,
    size: u32,
    timeout: Duration,
) -> Result<Pool<C>, StoreError> {
    managed::Pool::builder(Connector { options, session, timeout })
        .max_size(size as usize)
        .build()
        .map_err(|e| StoreError::Database(sqlx::Error::Configuration(e.into())))
}

/// A connection borrowed from the pool; see the module's docs for how it goes back.
pub(super) struct Lease<C: Open> {
    conn: Option<Object<Connector<C>>>,
    timeout: Duration,
}

/// A connection from the pool, the wait for it timed. The wait for a free connection and the
/// connect share one deadline, the pool timeout; past it, sqlx's `PoolTimedOut`.
pub(super) async fn lease<C: Open>(pool: &Pool<C>) -> Result<Lease<C>, StoreError> {
    let started = Instant::now();
    let timeout = pool.manager().timeout;
    let conn = tokio::time::timeout(timeout, pool.get())
        .await
        .map_err(|_| StoreError::Database(sqlx::Error::PoolTimedOut))?
        .map_err(pool_error)?;
    timing::since(Stage::Pool, started);
    Ok(Lease { conn: Some(conn), timeout })
}

/// A connection from the pool that answers a ping, for a health check: one the server ended (an
/// administrator's termination, a restart) is dropped unsettled, so closed and not handed out
/// again, and another tried, so that the answer is about the database now. A pool holds at most
/// its size of such connections; past that many, the last is returned as it is.
pub(super) async fn lease_answering<C: Open>(pool: &Pool<C>) -> Result<Lease<C>, StoreError> {
    let mut conn = lease(pool).await?;
    for _ in 0..pool.status().max_size {
        if conn.ping().await.is_ok() {
            break;
        }
        drop(conn);
        conn = lease(pool).await?;
    }
    Ok(conn)
}

/// deadpool's errors as sqlx's: a closed pool is sqlx's `PoolClosed`, so
/// [`StoreError::is_unavailable`] reads it alike.
fn pool_error(e: PoolError<sqlx::Error>) -> StoreError {
    StoreError::Database(match e {
        PoolError::Timeout(_) => sqlx::Error::PoolTimedOut,
        PoolError::Backend(e) => e,
        PoolError::Closed => sqlx::Error::PoolClosed,
        e @ (PoolError::NoRuntimeSpecified | PoolError::PostCreateHook(_)) => {
            sqlx::Error::Configuration(e.to_string().into())
        }
    })
}

impl<C: Open> Lease<C> {
    /// Gives the connection back after `result`, the outcome of what it was used for, and
    /// returns `result`: as it is after `Ok`, pinged first after an error (see the module's docs).
    pub(super) async fn settle<T>(mut self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if result.is_err() && !matches!(tokio::time::timeout(self.timeout, self.ping()).await, Ok(Ok(()))) {
            return result;
        }
        // Taken out of the lease, the object goes back to the pool when dropped.
        drop(self.conn.take());
        result
    }
}

impl<C: Open> Drop for Lease<C> {
    /// A lease dropped unsettled closes its connection (see the module's docs).
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            drop(Object::take(conn));
        }
    }
}

impl<C: Open> Deref for Lease<C> {
    type Target = C;

    fn deref(&self) -> &C {
        self.conn.as_ref().expect("a lease holds its connection until it is settled or dropped")
    }
}

impl<C: Open> DerefMut for Lease<C> {
    fn deref_mut(&mut self) -> &mut C {
        self.conn.as_mut().expect("a lease holds its connection until it is settled or dropped")
    }
}

/// Closes the pool: connections idle in it are ended politely (`Terminate`, `COM_QUIT`), later
/// borrowers get [`sqlx::Error::PoolClosed`], and connections still lent (none, when the caller's
/// requests are done) are closed as they come back, without waiting for them.
pub(super) async fn close<C: Open>(pool: &Pool<C>) {
    let idle = pool.retain(|_, _| false).removed;
    pool.close();
    for conn in idle {
        let _ = conn.close().await;
    }
}
