//! `hookbench serve`: one receiver worker process.
//!
//! It connects to the database (applying migrations, creating a SQLite file if missing), binds,
//! prints one JSON line saying where it listens, and serves until SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use receivers::app::{self, AppState};
use receivers::signature::{Secret, Verifier};
use receivers::store::{Store, StoreOptions};
use receivers::transport::{LimitError, Limits};
use serde::Serialize;
use tokio::net::TcpListener;

use crate::matrix::{Backend, Design, Isolation};

/// Everything a worker needs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The design on trial.
    pub design: Design,
    /// The backend the URL must name.
    pub backend: Option<Backend>,
    /// The database.
    pub database_url: String,
    /// Where to listen (`127.0.0.1:0` picks a free port).
    pub listen: SocketAddr,
    /// Signing secrets; any may verify.
    pub secrets: Vec<Secret>,
    /// Simulated work per delivery.
    pub work_delay: Duration,
    /// How long `split`'s side effect takes after its key is committed.
    pub effect_delay: Duration,
    /// The transactions' isolation; `None`: the database's own default.
    pub isolation: Option<Isolation>,
    /// Inbox claim loops in this process.
    pub inbox_workers: usize,
    /// Pool size.
    pub max_connections: u32,
    /// Honour `hookbench-fault` request headers (the failure experiments; never in production).
    pub inject_faults: bool,
    /// The bounds clients are held to.
    pub limits: Limits,
    /// How long a request waits for a database connection before it is answered 503.
    pub pool_timeout: Duration,
}

/// The line a worker prints once it listens, for whoever started it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Listening {
    /// The bound address.
    pub listening: SocketAddr,
    /// The worker's process id.
    pub pid: u32,
    /// Its design.
    pub design: Design,
    /// Its backend.
    pub backend: Backend,
}

/// Why a worker could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--backend` and the URL disagree, or the URL names no backend.
    #[error("--backend {flag} does not match the database URL, which names {url}")]
    BackendMismatch {
        /// The flag.
        flag: Backend,
        /// What the URL names.
        url: String,
    },
    /// A limit that would refuse everything or wait for ever.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// The database could not be reached or migrated.
    #[error(transparent)]
    Store(#[from] receivers::store::StoreError),
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Serving failed.
    #[error("serving")]
    Io(#[from] std::io::Error),
}

/// Runs a worker until `shutdown` completes; `on_listening` gets the line to print.
pub async fn run(
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(&Listening),
) -> Result<(), ServeError> {
    let url_backend = Backend::of_url(&config.database_url);
    if let Some(flag) = config.backend
        && url_backend != Some(flag)
    {
        let url = url_backend.map_or_else(|| "no supported backend".to_string(), |b| b.to_string());
        return Err(ServeError::BackendMismatch { flag, url });
    }
    config.limits.validate()?;
    if config.pool_timeout.is_zero() {
        return Err(LimitError("--pool-timeout").into());
    }
    let options = StoreOptions {
        isolation: config.isolation.map(Into::into),
        max_connections: config.max_connections,
        acquire_timeout: config.pool_timeout,
        ..StoreOptions::default()
    };
    let store = Store::connect(&config.database_url, &options).await?;
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind { addr: config.listen, source })?;
    let listening = Listening {
        listening: listener.local_addr()?,
        pid: std::process::id(),
        design: config.design,
        backend: store.backend().into(),
    };
    let mut state =
        AppState::new(config.design.into(), store, Verifier::new(config.secrets), config.work_delay)
            .with_limits(config.limits)
            .with_effect_delay(config.effect_delay);
    if config.inject_faults {
        // An injected abort should not leave a core file behind.
        let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
        state = state.with_faults();
    }
    let state = Arc::new(state);
    on_listening(&listening);
    app::serve(listener, shutdown, state, config.inbox_workers).await?;
    Ok(())
}

/// A future that completes on SIGTERM or Ctrl-C (SIGINT). The handlers are installed now, before
/// the worker announces itself, so a signal sent right after the announcement is not lost.
#[cfg(unix)]
pub fn shutdown_signal() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// A future that completes on Ctrl-C.
#[cfg(not(unix))]
pub fn shutdown_signal() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// The harness's names as the receivers' types and back: the one place they meet. Each match
/// names every variant of the type it reads, so a design, backend or level added on either side
/// and not the other does not compile.
macro_rules! same_names {
    ($($ours:ident <=> $theirs:path { $($v:ident),+ $(,)? })+) => {$(
        impl From<$ours> for $theirs {
            fn from(x: $ours) -> Self {
                match x { $($ours::$v => <$theirs>::$v,)+ }
            }
        }

        impl From<$theirs> for $ours {
            fn from(x: $theirs) -> Self {
                match x { $(<$theirs>::$v => $ours::$v,)+ }
            }
        }
    )+};
}

same_names! {
    Design <=> receivers::design::Design {
        Naive, CheckThenInsert, Atomic, CreatedGte, CreatedGt, VersionGuard, Inbox, Split, CheckInTransaction,
    }
    Backend <=> receivers::store::Backend { Postgres, Sqlite, Mysql }
    Isolation <=> receivers::store::Isolation { ReadCommitted, RepeatableRead, Serializable }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The harness's names are the receivers': the same variants (the conversions' matches say
    /// that much), spelled the same on flags and in JSON, in the same order.
    #[test]
    fn the_harness_names_designs_backends_and_levels_as_the_receivers_do() {
        let theirs: Vec<receivers::design::Design> = Design::ALL.into_iter().map(Into::into).collect();
        assert_eq!(theirs, receivers::design::Design::ALL);
        let known: Vec<receivers::design::Design> = Design::KNOWN.iter().map(|&d| d.into()).collect();
        assert_eq!(known, receivers::design::Design::KNOWN);
        for d in receivers::design::Design::KNOWN {
            let ours = Design::from(d);
            assert_eq!(ours.as_str(), d.as_str());
            assert_eq!(serde_json::to_value(ours).ok(), serde_json::to_value(d).ok());
        }
        for b in receivers::store::Backend::ALL {
            let ours = Backend::from(b);
            assert_eq!(
                (ours.as_str(), serde_json::to_value(ours).ok()),
                (b.as_str(), serde_json::to_value(b).ok())
            );
        }
        for level in [
            receivers::store::Isolation::ReadCommitted,
            receivers::store::Isolation::RepeatableRead,
            receivers::store::Isolation::Serializable,
        ] {
            let ours = Isolation::from(level);
            assert_eq!(
                (ours.as_str(), serde_json::to_value(ours).ok()),
                (level.as_str(), serde_json::to_value(level).ok())
            );
        }
        assert_eq!(Isolation::default(), receivers::store::Isolation::default().into());
    }
}
