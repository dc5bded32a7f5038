//! The audit's own HTTP client for single deliveries: each attempt on a fresh connection, so that
//! copies really arrive on separate connections and every attempt can name its connection (the
//! local port), plus the raw requests no well-behaved client sends: one dropped before its answer
//! is read, and one whose body stalls.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::Pulse;
use crate::history::Fate;
use crate::printable::QUOTED_BYTES;
use crate::report::AttemptLog;
use crate::wire::PathQuery;

/// How much of an answer is read ahead per connection (a head must fit in it).
const READ_BUFFER: usize = 64 * 1024;

/// Where the receiver is, and how long an answer may take.
#[derive(Debug, Clone)]
pub struct Probe {
    authority: String,
    path: String,
    timeout: Duration,
    start: Instant,
    pulse: Arc<Pulse>,
    /// What each request's path carries after it (Twilio's hash of a JSON body).
    query: PathQuery,
}

/// The receiver's URL is not `http://host:port/path`.
#[derive(Debug, thiserror::Error)]
#[error("the receiver URL `{url}` is not http://host[:port]/path: {reason}")]
pub struct BadUrl {
    url: String,
    reason: String,
}

impl BadUrl {
    /// Why, without the URL: for an error that names it already.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// A receiver's URL's `host:port` and path (with its query), or why it is not one the audit can
/// send to: `http://host[:port]/path` only. The command line's parser of the URL, so that a bad
/// one (from a flag or a config file's `url`) is refused before anything starts.
pub fn authority_and_path(url: &str) -> Result<(String, String), BadUrl> {
    let bad = |reason: &str| BadUrl { url: url.to_string(), reason: reason.to_string() };
    let uri: Uri = url.parse().map_err(|e: hyper::http::uri::InvalidUri| bad(&e.to_string()))?;
    if uri.scheme_str() != Some("http") {
        return Err(bad("only http:// is supported (put a TLS-terminating proxy's plain side here)"));
    }
    let host = uri.host().ok_or_else(|| bad("no host"))?;
    let port = uri.port_u16().unwrap_or(80);
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    Ok((format!("{host}:{port}"), path))
}

/// One attempt's result.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status, when one came with the whole answer (an answer cut short has none: the
    /// receiver's acknowledgement never arrived whole, as the load's sender counts it too).
    pub status: Option<u16>,
    /// The log line for witnesses.
    pub log: AttemptLog,
    /// Milliseconds from the send to the answer (or to giving up on one).
    pub took_ms: f64,
    /// A redirect's `Location`.
    pub location: Option<String>,
    /// The start of the answer's body (its first line, at most 200 bytes), to quote a refusal.
    pub said: String,
    /// How it ended: answered, timed out (its `--timeout` ran out with no whole answer), no
    /// connection, or the connection broke first.
    pub fate: Fate,
}

/// An exchange's end: the answer heard and the connection's name, or what happened instead and
/// the connection's name.
type Exchanged = Result<(Heard, String), (String, String)>;

/// A whole answer: its status, `Location` and the start of its body.
struct Heard {
    status: u16,
    location: Option<String>,
    said: String,
}

impl Answer {
    /// Whether it was a 2xx.
    pub fn acked(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// Whether it was a 4xx.
    pub fn refused(&self) -> bool {
        self.status.is_some_and(|s| (400..500).contains(&s))
    }
}

impl Probe {
    /// A probe of `url`, its clock started at `start`, counting its attempts into `pulse`.
    pub fn new(url: &str, timeout: Duration, start: Instant, pulse: Arc<Pulse>) -> Result<Self, BadUrl> {
        let (authority, path) = authority_and_path(url)?;
        Ok(Self { authority, path, timeout, start, pulse, query: PathQuery::Plain })
    }

    /// The same probe posting each body to its path with `query` after it.
    pub fn with_query(self, query: PathQuery) -> Self {
        Self { query, ..self }
    }

    /// What the audit has done so far.
    pub fn pulse(&self) -> &Pulse {
        &self.pulse
    }

    /// The URL's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// One attempt's timeout (`--timeout`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Milliseconds since the audit started.
    pub fn now_ms(&self) -> f64 {
        self.ms_at(Instant::now())
    }

    /// The instant `at` on the audit's clock, in milliseconds.
    pub fn ms_at(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.start).as_secs_f64() * 1e3
    }

    fn log(&self, at_ms: f64, outcome: String, connection: String, note: &str) -> AttemptLog {
        AttemptLog { at_ms, outcome, connection, note: note.to_string() }
    }

    /// Whether anything listens at the URL's host and port.
    pub async fn reachable(&self) -> Result<(), std::io::Error> {
        tokio::time::timeout(self.timeout, TcpStream::connect(&self.authority))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer to connect"))?
            .map(drop)
    }

    /// POSTs `body` with `headers` to `path` (the URL's own when `None`) on a new connection.
    pub async fn post(
        &self,
        path: Option<&str>,
        headers: &[(&'static str, String)],
        body: Bytes,
        note: &str,
    ) -> Answer {
        let at_ms = self.now_ms();
        let path = self.query.apply(path.unwrap_or(&self.path), &body).into_owned();
        let result = tokio::time::timeout(self.timeout, self.exchange(&path, headers, body)).await;
        self.answer(at_ms, result, note)
    }

    /// POSTs `body` with `headers` to the URL on a connection opened and handshaken first, sent
    /// only once `release` is ready: two such attempts released a set time apart arrive that far
    /// apart, the connect no part of the spacing. The attempt's time is the release's.
    pub async fn post_released(
        &self,
        headers: &[(&'static str, String)],
        body: Bytes,
        release: impl Future<Output = ()>,
        note: &str,
    ) -> Answer {
        let path = self.query.apply(&self.path, &body).into_owned();
        let opened = tokio::time::timeout(self.timeout, self.handshake()).await;
        let ready = match opened {
            Ok(Ok(ready)) => Ok(ready),
            Ok(Err((reason, port))) => Err((reason, port)),
            Err(_) => {
                Err((format!("timeout after {:?} opening the connection", self.timeout), String::new()))
            }
        };
        release.await;
        let at_ms = self.now_ms();
        let result = match ready {
            Ok((send, port)) => {
                tokio::time::timeout(self.timeout, self.request(send, port, &path, headers, body)).await
            }
            Err(e) => Ok(Err(e)),
        };
        self.answer(at_ms, result, note)
    }

    /// The answer of an attempt sent at `at_ms`, from its exchange's result.
    fn answer(
        &self,
        at_ms: f64,
        result: Result<Exchanged, tokio::time::error::Elapsed>,
        note: &str,
    ) -> Answer {
        let (heard, fate, outcome, connection) = match result {
            Ok(Ok((heard, port))) => {
                let fate = Fate::Answered(heard.status);
                (Some(heard), fate, fate.to_string(), port)
            }
            // A connection is named as soon as it is made: one with no name was never made.
            Ok(Err((reason, port))) if port.is_empty() => (None, Fate::NoConnection, reason, port),
            Ok(Err((reason, port))) => (None, Fate::Reset, reason, port),
            Err(_) => (None, Fate::TimedOut, format!("timeout after {:?}", self.timeout), String::new()),
        };
        let took_ms = self.now_ms() - at_ms;
        self.pulse.probe_answered(fate);
        let log = self.log(at_ms, outcome, connection, note);
        match heard {
            Some(h) => {
                Answer { status: Some(h.status), log, took_ms, location: h.location, said: h.said, fate }
            }
            None => Answer { status: None, log, took_ms, location: None, said: String::new(), fate },
        }
    }

    async fn exchange(&self, path: &str, headers: &[(&'static str, String)], body: Bytes) -> Exchanged {
        let (send, port) = self.handshake().await?;
        self.request(send, port, path, headers, body).await
    }

    /// A new connection, its HTTP/1.1 handshake done, and its name.
    async fn handshake(&self) -> Result<(SendRequest<Full<Bytes>>, String), (String, String)> {
        let (stream, port) = self.open().await.map_err(|e| (format!("no connection: {e}"), String::new()))?;
        // hyper reads up to ~400 KB ahead by default; 64 copies in flight at that would hold
        // 25 MB of a hostile receiver's body at once. A response head is capped the same way.
        let (send, conn) = hyper::client::conn::http1::Builder::new()
            .max_buf_size(READ_BUFFER)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|e| (format!("handshake: {e}"), port.clone()))?;
        tokio::spawn(conn);
        Ok((send, port))
    }

    /// One request on a handshaken connection, and the start of its answer.
    async fn request(
        &self,
        mut send: SendRequest<Full<Bytes>>,
        port: String,
        path: &str,
        headers: &[(&'static str, String)],
        body: Bytes,
    ) -> Exchanged {
        let fail = |what: &str, e: hyper::Error| (format!("{what}: {e}"), port.clone());
        let mut req = Request::post(path).header(hyper::header::HOST, self.authority.as_str());
        for (name, value) in headers {
            req = req.header(*name, value.as_str());
        }
        let req = req.body(Full::new(body)).map_err(|e| (format!("bad request: {e}"), port.clone()))?;
        let response = send.send_request(req).await.map_err(|e| fail("closed before an answer", e))?;
        let status = response.status().as_u16();
        // A Location is quoted in the preflight's fix: cut, as the body is (a 60 KB one was quoted
        // whole, twice).
        let location = response
            .headers()
            .get(hyper::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|to| crate::printable::cut(to).into_owned());
        let start = read_to_end_keeping_start(response.into_body())
            .await
            .map_err(|e| fail(&format!("{status} cut short"), e))?;
        let text = String::from_utf8_lossy(&start);
        let said = crate::printable::line(text.lines().next().unwrap_or_default().trim()).into_owned();
        Ok((Heard { status, location, said }, port))
    }

    /// A new connection and the name a witness gives it (its local port).
    async fn open(&self) -> std::io::Result<(TcpStream, String)> {
        let stream = TcpStream::connect(&self.authority).await?;
        let port = stream.local_addr().map(|a| format!("port {}", a.port())).unwrap_or_default();
        Ok((stream, port))
    }

    /// A request written by hand: a head declaring `content_length` body bytes, then `body`
    /// (which may be fewer); the URL's query is made from `signed`, the whole body as signed.
    fn raw_request(
        &self,
        headers: &[(&'static str, String)],
        content_length: usize,
        body: &[u8],
        signed: &[u8],
    ) -> Vec<u8> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-length: {content_length}\r\n",
            self.query.apply(&self.path, signed),
            self.authority
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("connection: close\r\n\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        bytes
    }

    /// Sends the whole request, waits `linger` (long enough for the request to arrive and short of
    /// any answer a database write needs), and drops the connection without reading the answer.
    pub async fn post_and_drop(
        &self,
        headers: &[(&'static str, String)],
        body: &[u8],
        linger: Duration,
    ) -> AttemptLog {
        let at_ms = self.now_ms();
        let Ok((mut stream, port)) = self.open().await else {
            return self.log(at_ms, "no connection".into(), String::new(), "lost ack");
        };
        let outcome = match stream.write_all(&self.raw_request(headers, body.len(), body, body)).await {
            Ok(()) => {
                tokio::time::sleep(linger).await;
                "dropped before the answer".to_string()
            }
            Err(e) => format!("write failed: {e}"),
        };
        drop(stream);
        self.log(at_ms, outcome, port, "lost ack: connection dropped")
    }

    /// Sends the head and the first `sent` bytes of `body` as `declared` body bytes, then nothing.
    /// The result is how long the receiver took to answer or close, or `None` when it still held
    /// the connection after `wait`. The URL is the one `body` as signed goes to (Twilio's carries
    /// its hash), so a receiver cannot refuse the stalled request from its head alone.
    pub async fn stall(
        &self,
        headers: &[(&'static str, String)],
        declared: usize,
        (body, sent): (&[u8], usize),
        wait: Duration,
    ) -> (Option<Duration>, AttemptLog) {
        let sent = &body[..sent.min(body.len())];
        let at_ms = self.now_ms();
        let Ok((mut stream, port)) = self.open().await else {
            return (None, self.log(at_ms, "no connection".into(), String::new(), "stalled body"));
        };
        let began = Instant::now();
        if stream.write_all(&self.raw_request(headers, declared, sent, body)).await.is_err() {
            return (
                Some(began.elapsed()),
                self.log(at_ms, "closed while sending".into(), port, "stalled body"),
            );
        }
        let mut buf = [0u8; 512];
        match tokio::time::timeout(wait, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                let took = began.elapsed();
                (
                    Some(took),
                    self.log(
                        at_ms,
                        format!("closed after {:.1} s", took.as_secs_f64()),
                        port,
                        "stalled body",
                    ),
                )
            }
            Ok(Ok(n)) => {
                let took = began.elapsed();
                let line = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_string();
                (
                    Some(took),
                    self.log(
                        at_ms,
                        format!("`{line}` after {:.1} s", took.as_secs_f64()),
                        port,
                        "stalled body",
                    ),
                )
            }
            Err(_) => (
                None,
                self.log(
                    at_ms,
                    format!("still open after {:.0} s", wait.as_secs_f64()),
                    port,
                    "stalled body",
                ),
            ),
        }
    }
}

/// Reads `body` to its end, keeping only its first [`QUOTED_BYTES`]: the rest is dropped frame by
/// frame as it arrives, so a receiver answering with a gigabyte, an endless chunked body or a
/// body until a close that never comes costs one frame of memory (the attempt's timeout ends the
/// last two).
async fn read_to_end_keeping_start(mut body: hyper::body::Incoming) -> Result<Vec<u8>, hyper::Error> {
    let mut start = Vec::with_capacity(QUOTED_BYTES);
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            let room = QUOTED_BYTES - start.len();
            start.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    Ok(start)
}
