//! A receiver that answers as a test tells it to, for the audits whose verdict must not be
//! vacuous: one that answers 500 to everything, 200 and applies nothing, redirects, has nothing at
//! the path, or refuses the body. It runs in-process on 127.0.0.1:0 on a thread of its own; when
//! told to apply, it calls the audit's sink (the side effect), keyed by the delivery's id.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// What the stub was sent.
pub struct Delivery {
    /// The request's path.
    pub path: String,
    /// Its `webhook-id`.
    pub id: String,
    /// Whether it carried a `webhook-signature` the tests' first secret made.
    pub correctly_signed: bool,
    /// The body's `account`, when it has one.
    pub account: Option<i64>,
}

/// How the stub answers.
pub enum Reply {
    /// This status, nothing applied.
    Status(u16),
    /// This status after this long, nothing applied: an answer slower than the audit's timeout.
    Late(std::time::Duration, u16),
    /// A redirect to this `Location`.
    Redirect(&'static str),
    /// This status with this body: what a receiver said, for the tests of how it is quoted.
    Said(u16, String),
    /// A 302 to this `Location`, built at run time.
    RedirectTo(String),
    /// 200, after calling the sink at `sink` `times` times (applying the delivery).
    Apply {
        /// The sink's address.
        sink: String,
        /// How many times.
        times: u32,
    },
}

/// A running stub, stopped when dropped.
pub struct Stub {
    /// Its address.
    pub addr: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

type Decide = Arc<dyn Fn(&Delivery) -> Reply + Send + Sync>;

async fn handle(decide: Decide, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let delivery = Delivery {
        path: uri.path().to_string(),
        id: header("webhook-id").unwrap_or_default(),
        correctly_signed: correctly_signed(&headers, &body),
        account: serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v["account"].as_i64()),
    };
    match decide(&delivery) {
        Reply::Status(s) => {
            StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR).into_response()
        }
        Reply::Late(wait, s) => {
            tokio::time::sleep(wait).await;
            StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR).into_response()
        }
        Reply::Redirect(to) => (StatusCode::MOVED_PERMANENTLY, [("location", to)]).into_response(),
        Reply::Said(s, body) => {
            (StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body).into_response()
        }
        Reply::RedirectTo(to) => (StatusCode::FOUND, [("location", to)]).into_response(),
        Reply::Apply { sink, times } => {
            let client = reqwest::Client::new();
            for _ in 0..times {
                let url = format!("http://{sink}/effect");
                if client.post(url).header("idempotency-key", &delivery.id).send().await.is_err() {
                    return StatusCode::SERVICE_UNAVAILABLE.into_response();
                }
            }
            StatusCode::OK.into_response()
        }
    }
}

/// Whether `headers` carry a Standard Webhooks signature of `body` by `testkit::SECRET`, as the
/// receivers' own verifier checks it.
fn correctly_signed(headers: &HeaderMap, body: &[u8]) -> bool {
    let secret: receivers::signature::Secret = testkit::SECRET.parse().expect("the tests' secret");
    let get = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let signed = receivers::signature::SignedHeaders {
        id: get("webhook-id"),
        timestamp: get("webhook-timestamp"),
        signatures: get("webhook-signature").into_iter().collect(),
    };
    let now = jiff::Timestamp::now().as_second();
    receivers::signature::Verifier::new(vec![secret]).verify(&signed, body, now).is_ok()
}

impl Stub {
    /// Starts a stub answering every request as `decide` says.
    pub fn start(decide: impl Fn(&Delivery) -> Reply + Send + Sync + 'static) -> Self {
        let decide: Decide = Arc::new(decide);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("addr").to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
                    handle(decide.clone(), uri, headers, body)
                });
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        Self { addr, stop: Some(stop), thread: Some(thread) }
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A free port's address, for a sink.
pub fn free_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("addr").to_string()
}
