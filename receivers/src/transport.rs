//! The receivers' HTTP transport: HTTP/1.1 only, with every wait bounded.
//!
//! A receiver faces senders it does not control. Without bounds, a client that sends half a header
//! section, stalls a body, announces a `Content-Length` of ten gigabytes or simply keeps a
//! connection idle holds a connection (and the memory behind it) for ever. So:
//!
//! - at most [`Limits::max_connections`] connections are served at once; the next ones wait in
//!   the listener's backlog until one closes (a permit is taken before `accept`);
//! - a connection must deliver a request's whole header section within
//!   [`Limits::header_timeout`], counted from when it is ready for one: hyper's header read
//!   timeout, which also closes an idle keep-alive connection after that long;
//! - the body must arrive within [`Limits::body_timeout`] (408) and be at most
//!   [`Limits::max_body_bytes`] (413; a larger `Content-Length` is refused before any of the body
//!   is read). Those two are enforced by the app, which reads the body itself ([`crate::app`]).
//!
//! Only HTTP/1 is served: the connection builder is hyper's HTTP/1 one, so a client speaking
//! HTTP/2 with prior knowledge is refused at its preface. axum's own `serve` negotiates HTTP/2
//! whenever the feature is compiled in anywhere in the build, and sets no timeouts.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The bounds a receiver holds its clients to (`hookbench serve`'s flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The largest body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How long a connection may take to deliver a request's header section, counted from when
    /// it is ready for one (so also how long an idle keep-alive connection is kept).
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive once its header section has.
    pub body_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

/// The largest body accepted by default, in bytes.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_connections: 1024,
        }
    }
}

/// A limit that would make the receiver refuse everything or wait for ever.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} must be greater than zero")]
pub struct LimitError(pub &'static str);

impl Limits {
    /// Checks that every limit allows something (the flag named in the error).
    pub fn validate(&self) -> Result<(), LimitError> {
        if self.max_body_bytes == 0 {
            return Err(LimitError("--max-body"));
        }
        if self.header_timeout.is_zero() {
            return Err(LimitError("--header-timeout"));
        }
        if self.body_timeout.is_zero() {
            return Err(LimitError("--body-timeout"));
        }
        if self.max_connections == 0 {
            return Err(LimitError("--max-clients"));
        }
        Ok(())
    }
}

/// Serves `router` on `listener` over HTTP/1.1 within `limits` until `shutdown` completes; then
/// stops accepting, lets requests in flight finish, and returns.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: &Limits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.map_err(std::io::Error::other)?,
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    pause_after_accept_error(&e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let connection = graceful
            .watch(builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone())));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// After a failed `accept`: nothing for an error of that one connection; a second's pause when
/// the process is out of file descriptors or memory, so the loop does not spin.
async fn pause_after_accept_error(e: &std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    tracing::error!(error = %e, "accept failed; pausing a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
