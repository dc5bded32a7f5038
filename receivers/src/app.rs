//! The receiver's HTTP app: `POST /webhooks/{source}`, `GET /healthz`, `GET /stats` (where the
//! worker's time has gone, timing.rs), and [`serve`].
//!
//! The request path, in order, cheapest refusal first:
//!
//! 1. the `{source}` path segment within its bounds (400 naming `source`);
//! 2. a `Content-Length` over the body limit (413, before any of the body is read);
//! 3. the signature headers present, each once, the timestamp within the tolerance and the
//!    `webhook-id` within its bounds (400), so no unsigned client makes the receiver hold a body;
//! 4. the body, read within the body timeout (408) and the size limit (413);
//! 5. the Standard Webhooks signature over those raw bytes (400 with the reason);
//! 6. the JSON event, of a known type, its id the signed `webhook-id`, every field within the
//!    wire's bounds (400 naming the field);
//! 7. the design.
//!
//! Nothing is written before step 7. A database failure answers 503 when the database is out of
//! reach or cannot take writes and 500 otherwise, so the sender retries; an id already stored
//! with another body answers 409. A 2xx means the event is stored or applied, or was a duplicate
//! of one that is.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use crate::design::{self, Delivery, Design, HandleError};
use crate::event::{self, Event, EventError};
use crate::fault::Faults;
use crate::signature::{HEADER_ID, HEADER_SIGNATURE, HEADER_TIMESTAMP, SignedHeaders, Verifier, VerifyError};
use crate::store::Store;
use crate::timing::{self, Stage};
pub use crate::transport::Limits;

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
    /// The bounds clients are held to.
    pub limits: Limits,
    /// How long `split`'s side effect takes after its key is committed.
    pub effect_delay: Duration,
}

impl AppState {
    /// State for `design` over `store`, verifying with `verifier`, with the default limits;
    /// faults are ignored.
    pub fn new(design: Design, store: Store, verifier: Verifier, work_delay: Duration) -> Self {
        Self {
            design,
            store,
            verifier,
            work_delay,
            inbox_wake: Arc::new(Notify::new()),
            faults: Arc::new(Faults::default()),
            limits: Limits::default(),
            effect_delay: Duration::ZERO,
        }
    }

    /// The same state, `split`'s side effect taking `delay` after its key is committed.
    pub fn with_effect_delay(mut self, delay: Duration) -> Self {
        self.effect_delay = delay;
        self
    }

    /// The same state, holding clients to `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
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
        .route("/stats", get(stats))
        .with_state(state)
}

/// Where this worker's time has gone so far, per stage of a delivery (timing.rs).
async fn stats() -> Response {
    axum::Json(json!({ "stages": timing::snapshot() })).into_response()
}

/// Why a request was refused.
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("signature verification failed: {0}")]
    Signature(VerifyError),
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("body is not UTF-8")]
    NotUtf8,
    #[error("body over the limit of {0} bytes")]
    TooLarge(usize),
    #[error("the body did not arrive within {0:?}")]
    BodyTimeout(Duration),
    #[error("the body could not be read: {0}")]
    BodyRead(String),
    #[error(transparent)]
    Handle(#[from] HandleError),
}

impl From<VerifyError> for Refusal {
    fn from(e: VerifyError) -> Self {
        Refusal::Signature(e)
    }
}

/// The header a 5xx carries when a transaction conflict caused it: a serialization failure or a
/// deadlock, named as the database names it (`40001`, `40P01`, `mysql-1213`, `mysql-1205`).
pub const DB_CONFLICT_HEADER: &str = "hookbench-db-conflict";

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let status = match &self {
            Refusal::Signature(_) | Refusal::Event(_) | Refusal::NotUtf8 | Refusal::BodyRead(_) => {
                StatusCode::BAD_REQUEST
            }
            Refusal::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            Refusal::Handle(HandleError::IdConflict(_)) => StatusCode::CONFLICT,
            Refusal::Handle(HandleError::Store(e)) if e.is_unavailable() => StatusCode::SERVICE_UNAVAILABLE,
            Refusal::Handle(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status.is_server_error() {
            tracing::warn!(error = %self, "delivery not acknowledged");
        }
        let mut body = json!({ "error": self.to_string() });
        if let Refusal::Handle(HandleError::IdConflict(c)) = &self {
            body["stored_sha256"] = json!(c.stored_sha256);
            body["received_sha256"] = json!(c.received_sha256);
        }
        let conflict = match &self {
            Refusal::Handle(HandleError::Store(e)) => e.conflict(),
            _ => None,
        };
        let mut response = (status, axum::Json(body)).into_response();
        if let Some(value) = conflict.and_then(|c| axum::http::HeaderValue::from_str(&c).ok()) {
            response.headers_mut().insert(DB_CONFLICT_HEADER, value);
        }
        response
    }
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The Standard Webhooks headers: `webhook-id` and `webhook-timestamp` at most once each, every
/// `webhook-signature` line.
fn signed_headers(headers: &HeaderMap) -> Result<SignedHeaders<'_>, VerifyError> {
    let once = |name: &'static str| {
        let mut values = headers.get_all(name).iter();
        let first = values.next().and_then(|v| v.to_str().ok());
        if values.next().is_some() { Err(VerifyError::RepeatedHeader(name)) } else { Ok(first) }
    };
    Ok(SignedHeaders {
        id: once(HEADER_ID)?,
        timestamp: once(HEADER_TIMESTAMP)?,
        signatures: headers.get_all(HEADER_SIGNATURE).iter().filter_map(|v| v.to_str().ok()).collect(),
    })
}

/// Refuses a declared `Content-Length` over the limit before any of the body is read.
fn check_declared_length(headers: &HeaderMap, limit: usize) -> Result<(), Refusal> {
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    match declared {
        Some(n) if n > limit as u64 => Err(Refusal::TooLarge(limit)),
        _ => Ok(()),
    }
}

/// Reads the whole body within the time and size limits.
async fn read_body(body: Body, limits: &Limits) -> Result<Bytes, Refusal> {
    let limited = Limited::new(body, limits.max_body_bytes);
    match tokio::time::timeout(limits.body_timeout, limited.collect()).await {
        Err(_) => Err(Refusal::BodyTimeout(limits.body_timeout)),
        Ok(Err(e)) if e.is::<LengthLimitError>() => Err(Refusal::TooLarge(limits.max_body_bytes)),
        Ok(Err(e)) => Err(Refusal::BodyRead(e.to_string())),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// One delivery, its time counted (timing.rs) whatever it answers.
async fn receive(
    state: State<Arc<AppState>>,
    source: Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    let started = Instant::now();
    let answer = deliver(state, source, headers, body).await;
    timing::since(Stage::Request, started);
    answer
}

async fn deliver(
    State(state): State<Arc<AppState>>,
    Path(source): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refusal> {
    event::check_source(&source)?;
    check_declared_length(&headers, state.limits.max_body_bytes)?;
    let signed = signed_headers(&headers)?;
    let now = unix_now();
    let (webhook_id, _) = state.verifier.check_headers(&signed, now)?;
    event::check_id(webhook_id)?;
    let body = read_body(body, &state.limits).await?;
    let verifying = Instant::now();
    state.verifier.verify(&signed, &body, now)?;
    timing::since(Stage::Verify, verifying);
    let parsing = Instant::now();
    let text = std::str::from_utf8(&body).map_err(|_| Refusal::NotUtf8)?;
    let event = Event::parse(&body)?;
    if event.id() != webhook_id {
        return Err(
            EventError::IdMismatch { body: event.id().to_string(), header: webhook_id.to_string() }.into()
        );
    }
    event.validate(now)?;
    timing::since(Stage::Parse, parsing);
    let body_sha256 = hex::encode(Sha256::digest(&body));
    let fault = state.faults.requested(&headers);
    let delivery = Delivery {
        source: &source,
        event: &event,
        body: text,
        body_sha256: &body_sha256,
        fault,
        effect_delay: state.effect_delay,
    };
    let handled =
        design::handle(state.design, &state.store, state.work_delay, &delivery, &state.faults).await;
    match handled {
        Ok(outcome) => {
            if outcome == design::Outcome::Stored {
                state.inbox_wake.notify_one();
            }
            Ok(axum::Json(json!({ "outcome": outcome })).into_response())
        }
        Err(HandleError::IdConflict(c)) => {
            if c.first_seen {
                tracing::warn!(
                    event_id = %c.event_id,
                    stored_sha256 = %c.stored_sha256,
                    received_sha256 = %c.received_sha256,
                    source = %source,
                    "id already stored with another body; not applied"
                );
            }
            Err(HandleError::IdConflict(c).into())
        }
        Err(e) => Err(e.into()),
    }
}

async fn healthz(State(state): State<Arc<AppState>>) -> Response {
    let body =
        |status: &str| json!({ "status": status, "design": state.design, "backend": state.store.backend() });
    match state.store.health().await {
        Ok(()) => axum::Json(body("ok")).into_response(),
        Err(e) => {
            let mut b = body("unavailable");
            b["error"] = json!(e.to_string());
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(b)).into_response()
        }
    }
}

/// Serves `state` on `listener` until `shutdown` completes, with `inbox_workers` claim loops
/// when the design is `inbox`, holding clients to `state.limits`. In-flight requests finish;
/// then the workers stop and the pool closes.
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
    let served = crate::transport::serve(listener, router(state.clone()), &state.limits, shutdown).await;
    let _ = stop_tx.send(true);
    for w in workers {
        let _ = w.await;
    }
    state.store.close().await;
    served
}
