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

impl Observer for Sink {
    fn name(&self) -> &'static str {
        "sink"
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
