//! Postgres connections lent without a ping when they come back.
//!
//! sqlx's pool pings every connection given back to it (a `Sync` message and the server's
//! `ReadyForQuery`): one round trip more per use, so a delivery whose claim is one statement made
//! two round trips, and `check-then-insert`'s three calls made six. The ping is there because the
//! pool cannot tell how a connection was left: a statement whose future was dropped half-way, or
//! a transaction dropped with its `ROLLBACK` queued and not yet sent, which would hold its locks
//! until the connection's next use. Here whoever borrowed the connection says how it ended, by
//! handing [`Lease::settle`] the result of what it did:
//!
//! - `Ok`: every statement ran to its end, and every transaction begun was ended (each function
//!   of `postgres.rs` commits or rolls back before it returns `Ok`). The connection goes back as
//!   it is.
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

use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use deadpool::managed::{self, Metrics, Object, PoolError, RecycleResult};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{ConnectOptions, Connection};

use super::StoreError;
use crate::timing::{self, Stage};

/// Opens connections to one database.
pub(super) struct Connector {
    options: PgConnectOptions,
    /// How long getting a connection, or the ping after an error, may take.
    timeout: Duration,
}

impl std::fmt::Debug for Connector {
    /// The server and database, never the password the options hold.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("host", &self.options.get_host())
            .field("port", &self.options.get_port())
            .field("database", &self.options.get_database())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl managed::Manager for Connector {
    type Type = PgConnection;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<PgConnection, sqlx::Error> {
        self.options.connect().await
    }

    /// A connection comes back to the pool only in a known state (see the module's docs), so
    /// nothing is checked when it is handed out again.
    async fn recycle(&self, _: &mut PgConnection, _: &Metrics) -> RecycleResult<sqlx::Error> {
        Ok(())
    }
}

/// The receivers' Postgres connections.
pub(super) type Pool = managed::Pool<Connector>;

/// A pool of at most `size` connections to `options`; getting one gives up after `timeout`.
/// Opens no connection yet.
pub(super) fn pool(options: PgConnectOptions, size: u32, timeout: Duration) -> Result<Pool, StoreError> {
    managed::Pool::builder(Connector { options, timeout })
        .max_size(size as usize)
        .build()
        .map_err(|e| StoreError::Database(sqlx::Error::Configuration(e.into())))
}

/// A connection borrowed from the pool; see the module's docs for how it goes back.
pub(super) struct Lease {
    conn: Option<Object<Connector>>,
    timeout: Duration,
}

/// A connection from the pool, the wait for it timed. The wait for a free connection and the
/// connect share one deadline, the pool timeout; past it, sqlx's `PoolTimedOut`.
pub(super) async fn lease(pool: &Pool) -> Result<Lease, StoreError> {
    let started = Instant::now();
    let timeout = pool.manager().timeout;
    let conn = tokio::time::timeout(timeout, pool.get())
        .await
        .map_err(|_| StoreError::Database(sqlx::Error::PoolTimedOut))?
        .map_err(pool_error)?;
    timing::since(Stage::Pool, started);
    Ok(Lease { conn: Some(conn), timeout })
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

impl Lease {
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

impl Drop for Lease {
    /// A lease dropped unsettled closes its connection (see the module's docs).
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            drop(Object::take(conn));
        }
    }
}

impl Deref for Lease {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        self.conn.as_ref().expect("a lease holds its connection until it is settled or dropped")
    }
}

impl DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn.as_mut().expect("a lease holds its connection until it is settled or dropped")
    }
}

/// Closes the pool: connections idle in it are ended politely (`Terminate`), later borrowers get
/// [`sqlx::Error::PoolClosed`], and connections still lent (none, when the caller's requests are
/// done) are closed as they come back, without waiting for them.
pub(super) async fn close(pool: &Pool) {
    let idle = pool.retain(|_, _| false).removed;
    pool.close();
    for conn in idle {
        let _ = conn.close().await;
    }
}
