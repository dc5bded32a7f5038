//! [`Sink`]: a stand-in for the downstream service a receiver's side effect calls (the payments
//! API, the email sender). Every request it gets is one side effect, keyed by its
//! `Idempotency-Key` header or a field of its JSON body; it sees effects outside any database. It
//! counts every call, as a downstream whose effect repeats with each call would (an email, an SMS):
//! a receiver that calls twice under one `Idempotency-Key` is judged to apply twice, which a
//! downstream that dedupes on that key (Stripe's API) would absorb.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use futures_util::future::BoxFuture;
use tokio::net::TcpListener;

use super::{ObserveError, Observer, Record, Sees};

/// A stand-in for the downstream service the receiver's side effect calls: every request is one
/// side effect, keyed by its `Idempotency-Key` header or a field of its JSON body.
pub struct Sink {
    counts: Arc<Mutex<Counts>>,
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// How much of what callers send the sink keeps: every key it counts stays in memory for the whole
/// audit, and callers are the receiver under test, which may send anything (400 keys of 1.9 MB
/// each took 767 MB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkLimits {
    /// The longest key, in bytes (default 256: provider event ids are tens of bytes); a longer one
    /// is answered 400 and not kept.
    pub max_key_bytes: usize,
    /// The most distinct keys kept (default 1,000,000: at most about 300 MB with the longest
    /// keys); a call with a new key past it is answered 507 and not kept. Calls under a key
    /// already kept are still counted.
    pub max_keys: usize,
}

impl Default for SinkLimits {
    fn default() -> Self {
        Self { max_key_bytes: 256, max_keys: 1_000_000 }
    }
}

/// Calls per key, and the calls refused.
#[derive(Debug, Default)]
struct Counts {
    per_key: HashMap<String, u64>,
    refused: u64,
}

#[derive(Clone)]
struct SinkState {
    counts: Arc<Mutex<Counts>>,
    key_field: String,
    limits: SinkLimits,
    /// Only keys that start with this are kept (a run's id prefix); `None`: every key.
    only: Option<String>,
}

/// The call's key: its `Idempotency-Key` header, else the body's `key_field`.
fn key_of(headers: &HeaderMap, body: &[u8], key_field: &str) -> Option<String> {
    if let Some(v) = headers.get("idempotency-key") {
        return v.to_str().ok().map(str::to_string);
    }
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    json.get(key_field).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
}

async fn sink_call(State(s): State<SinkState>, headers: HeaderMap, body: axum::body::Bytes) -> StatusCode {
    let key = key_of(&headers, &body, &s.key_field);
    // A std Mutex: held for one count, never across an await.
    let Ok(mut counts) = s.counts.lock() else { return StatusCode::INTERNAL_SERVER_ERROR };
    let Some(key) = key else { return StatusCode::BAD_REQUEST };
    if s.only.as_deref().is_some_and(|p| !key.starts_with(p)) {
        // Another event's call (other traffic, an earlier run): answered as the downstream
        // would, and not kept, since no verdict of this run reads it.
        return StatusCode::OK;
    }
    if key.len() > s.limits.max_key_bytes {
        counts.refused += 1;
        return StatusCode::BAD_REQUEST;
    }
    if let Some(n) = counts.per_key.get_mut(&key) {
        *n += 1;
        return StatusCode::OK;
    }
    if counts.per_key.len() >= s.limits.max_keys {
        counts.refused += 1;
        return StatusCode::INSUFFICIENT_STORAGE;
    }
    counts.per_key.insert(key, 1);
    StatusCode::OK
}

impl Sink {
    /// Listens on `addr` and counts calls keyed by `Idempotency-Key` or the body's `key_field`,
    /// within the default [`SinkLimits`].
    pub async fn start(addr: &str, key_field: &str) -> Result<Self, ObserveError> {
        Self::start_with_limits(addr, key_field, SinkLimits::default()).await
    }

    /// Listens on `addr` and counts calls keyed by `Idempotency-Key` or the body's `key_field`,
    /// keeping keys within `limits`.
    pub async fn start_with_limits(
        addr: &str,
        key_field: &str,
        limits: SinkLimits,
    ) -> Result<Self, ObserveError> {
        Self::serve(addr, key_field, limits, None).await
    }

    /// Like [`Sink::start_with_limits`], keeping only keys that start with `prefix` (the run's
    /// ids): a receiver calling with keys of its own invention cannot fill the audit's memory
    /// unless they carry the run's prefix, and then at most [`SinkLimits::max_keys`] of them.
    pub async fn start_for_run(
        addr: &str,
        key_field: &str,
        limits: SinkLimits,
        prefix: &str,
    ) -> Result<Self, ObserveError> {
        Self::serve(addr, key_field, limits, Some(prefix.to_string())).await
    }

    async fn serve(
        addr: &str,
        key_field: &str,
        limits: SinkLimits,
        only: Option<String>,
    ) -> Result<Self, ObserveError> {
        let sink_error = |reason: String| ObserveError::Sink { addr: addr.to_string(), reason };
        let listener = TcpListener::bind(addr).await.map_err(|e| sink_error(e.to_string()))?;
        let bound = listener.local_addr().map_err(|e| sink_error(e.to_string()))?;
        let counts = Arc::new(Mutex::new(Counts::default()));
        let state = SinkState { counts: counts.clone(), key_field: key_field.to_string(), limits, only };
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
        self.counts.lock().map(|c| c.per_key.clone()).unwrap_or_default()
    }

    /// Calls refused so far: a key longer than [`SinkLimits::max_key_bytes`], or a new key past
    /// [`SinkLimits::max_keys`]. Their effects were not counted; a report should say so.
    pub fn refused(&self) -> u64 {
        self.counts.lock().map(|c| c.refused).unwrap_or(0)
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Sink {
    /// Its name as an observer, in evidence lines and snapshots.
    pub const NAME: &'static str = "sink";
}

impl Observer for Sink {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn sees(&self) -> Sees {
        Sees { applies: true, ..Sees::default() }
    }

    fn look<'a>(&'a self, into: &'a mut dyn Record) -> BoxFuture<'a, Result<(), ObserveError>> {
        Box::pin(async move {
            for (key, n) in self.applies() {
                into.applied(self.name(), &key, n);
            }
            Ok(())
        })
    }
}
