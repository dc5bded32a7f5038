//! The receiver's HTTP app: `POST /webhooks/{source}` and `GET /healthz`, and [`serve`].
//!
//! The request path, in order: the raw body (at most 1 MiB, else 413); the Standard Webhooks
//! signature over those raw bytes (400 with the reason, nothing written); the JSON event (400 when
//! malformed, of an unknown type, or its id differs from the signed `webhook-id`); then the
//! design. A database failure answers 503 when the database is out of reach and 500 otherwise, so
//! the sender retries; a 2xx means the event is stored or applied, or was a duplicate of one that
//! is.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use crate::design::{self, Delivery, Design, HandleError};
use crate::event::{Event, EventError};
use crate::fault::Faults;
use crate::signature::{HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP, SignedHeaders, Verifier, VerifyError};
use crate::store::Store;

/// The largest body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// What every request handler shares.
#[derive(Debug)]
pub struct AppState {
    /// The design on trial.
    pub design: Design,
    /// The database.
    pub store: Store,
    /// The signing secrets.
    pub verifier: Verifier,
    /// Simulated work per delivery.
    pub work_delay: Duration,
    /// Wakes this process's inbox workers when a row is stored.
    pub inbox_wake: Arc<Notify>,
    /// Whether `hookbench-fault` is honoured (off unless asked for).
    pub faults: Arc<Faults>,
}

impl AppState {
    /// State for `design` over `store`, verifying with `verifier`; faults are ignored.
    pub fn new(design: Design, store: Store, verifier: Verifier, work_delay: Duration) -> Self {
        Self {
            design,
            store,
            verifier,
            work_delay,
            inbox_wake: Arc::new(Notify::new()),
            faults: Arc::new(Faults::default()),
        }
    }

    /// The same state, honouring `hookbench-fault` (test receivers only).
    pub fn with_faults(mut self) -> Self {
        self.faults = Arc::new(Faults::enabled());
        self
    }
}

/// The router.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/webhooks/{source}", post(receive))
        .route("/healthz", get(healthz))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Why a request was refused.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("signature verification failed: {0}")]
    Signature(#[from] VerifyError),
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("body is not UTF-8")]
    NotUtf8,
    #[error(transparent)]
    Handle(#[from] HandleError),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let status = match &self {
            Refusal::Signature(_) | Refusal::Event(_) | Refusal::NotUtf8 => StatusCode::BAD_REQUEST,
            Refusal::Handle(HandleError::Store(e)) if e.is_unavailable() => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::Handle(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status.is_server_error() {
            tracing::warn!(error = %self, "delivery not acknowledged");
        }
        (status, axum::Json(json!({ "error": self.to_string() }))).into_response()
    }
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

async fn receive(
    State(state): State<Arc<AppState>>,
    Path(source): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Refusal> {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let signed = SignedHeaders {
        id: header(HEADER_ID),
        timestamp: header(HEADER_TIMESTAMP),
        signature: header(HEADER_SIGNATURE),
    };
    let webhook_id = state.verifier.verify(signed, &body, unix_now())?;
    let text = std::str::from_utf8(&body).map_err(|_| Refusal::NotUtf8)?;
    let event = Event::parse(&body)?;
    if event.id() != webhook_id {
        return Err(
            EventError::IdMismatch { body: event.id().to_string(), header: webhook_id.to_string() }.into()
        );
    }
    let fault = state.faults.requested(&headers);
    let delivery = Delivery { source: &source, event: &event, body: text, fault };
    let outcome =
        design::handle(state.design, &state.store, state.work_delay, &delivery, &state.faults).await?;
    if outcome == design::Outcome::Stored {
        state.inbox_wake.notify_one();
    }
    Ok(axum::Json(json!({ "outcome": outcome })).into_response())
}

async fn healthz(State(state): State<Arc<AppState>>) -> Response {
    let body =
        |status: &str| json!({ "status": status, "design": state.design, "backend": state.store.backend() });
    match state.store.ping().await {
        Ok(()) => axum::Json(body("ok")).into_response(),
        Err(e) => {
            let mut b = body("unavailable");
            b["error"] = json!(e.to_string());
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(b)).into_response()
        }
    }
}

/// Serves `state` on `listener` until `shutdown` completes, with `inbox_workers` claim loops
/// when the design is `inbox`. In-flight requests finish; then the workers stop and the pool
/// closes.
pub async fn serve(
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    state: Arc<AppState>,
    inbox_workers: usize,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let workers: Vec<_> = if state.design == Design::Inbox {
        (0..inbox_workers)
            .map(|_| {
                tokio::spawn(design::inbox::run_worker(
                    state.store.clone(),
                    state.inbox_wake.clone(),
                    state.faults.clone(),
                    stop_rx.clone(),
                ))
            })
            .collect()
    } else {
        Vec::new()
    };
    let served = axum::serve(listener, router(state.clone())).with_graceful_shutdown(shutdown).await;
    let _ = stop_tx.send(true);
    for w in workers {
        let _ = w.await;
    }
    state.store.close().await;
    served
}
