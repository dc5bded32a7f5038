//! HTTP/1.1 connections to the workers, one request at a time each, kept for reuse.
//!
//! The task that sends an attempt owns its connection while it does: it writes the request's
//! head and body in one write and reads the answer itself, parsed by `httparse`. That is wrk's
//! way of sending. hyper's client puts a channel and a second task (the connection's) between a
//! request and its socket, and builds a header map for every request; on this 2-core machine that
//! left the sender at 0.8 of oha (reports/performance-history.md has both measurements).
//!
//! A response is always read to its end (`Content-Length`, chunked, or until the server closes)
//! so a connection goes back to the pool only at a response boundary; one the server closed while
//! it sat idle is noticed before reuse and dropped.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Buf as _, BytesMut};
use hyper::Uri;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Why a request got no response.
#[derive(Debug, PartialEq, Eq)]
pub enum SendError {
    /// No connection could be made (the worker is not listening).
    Connect,
    /// The connection broke, or what came back was not an HTTP/1.1 response.
    Broken,
}

/// Why a webhook URL is not one the pool sends to.
#[derive(Debug, thiserror::Error)]
pub enum BadTarget {
    /// It does not parse as a URI.
    #[error("{url}: {source}")]
    Invalid {
        /// The URL as given.
        url: String,
        /// The parser's reason.
        source: hyper::http::uri::InvalidUri,
    },
    /// Its scheme is not `http`: the pool speaks plain HTTP/1.1 only.
    #[error("{0}: only http:// is sent to")]
    NotHttp(String),
    /// It names no host to connect to.
    #[error("{0}: no host")]
    NoHost(String),
}

/// The most a response head may take; past it the answer is not HTTP.
const MAX_HEAD: usize = 64 * 1024;
/// Headers a response head may carry.
const MAX_HEADERS: usize = 64;

/// One open connection: its number, its socket, what was read but not yet consumed, and the
/// buffer its requests are written from (both reused from request to request).
#[derive(Debug)]
struct Conn {
    id: u64,
    stream: TcpStream,
    read: BytesMut,
    write: Vec<u8>,
}

/// One worker's address and idle connections.
#[derive(Debug)]
struct Target {
    authority: String,
    path: String,
    // A std Mutex: held for one push or pop, never across an await.
    idle: Mutex<Vec<Conn>>,
}

/// Connections to every worker.
#[derive(Debug)]
pub struct Pool {
    targets: Vec<Target>,
    /// What each request's path carries after it (Twilio's hash of a JSON body).
    query: crate::wire::PathQuery,
    /// Connections opened, by every pool of the send (they number connections in one series).
    opened: Arc<AtomicU64>,
}

/// Which connection a request went over, filled in by [`Pool::post`] as soon as it has one (so
/// a request that times out still names its connection).
#[derive(Debug, Default)]
pub struct Connection(AtomicU64);

impl Connection {
    /// The connection's number (1 for the pool's first), 0 if none was had.
    pub fn id(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a worker answered to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// Whether the answer named a database transaction conflict: hookbench's own receivers answer
    /// a serialization failure or a deadlock 5xx with the `hookbench-db-conflict` header (the
    /// isolation level refusing a transaction, retried like any 5xx). Another receiver never
    /// sends it.
    pub db_conflict: bool,
}

/// The header hookbench's receivers name a database transaction conflict in (the receivers'
/// app.rs, `DB_CONFLICT_HEADER`; the sender does not depend on the receivers, so it is spelled
/// here again, and a test of the bench holds the two together by counting the conflicts).
const DB_CONFLICT_HEADER: &str = "hookbench-db-conflict";

/// How a response's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// After this many bytes.
    Length(usize),
    /// After the last chunk of a chunked body.
    Chunked,
    /// When the server closes the connection.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    /// Its length in bytes.
    len: usize,
    status: u16,
    body: Body,
    /// Whether the server keeps the connection open after the body.
    keep_alive: bool,
    /// Whether the answer named a database transaction conflict ([`Answer::db_conflict`]).
    db_conflict: bool,
}

impl Pool {
    /// A pool for the webhook URLs (`http://host:port/path`), no connection opened yet;
    /// `opened` numbers its connections (shared by the send's pools).
    pub fn new(urls: &[String], opened: Arc<AtomicU64>) -> Result<Self, BadTarget> {
        let targets = urls
            .iter()
            .map(|u| {
                let uri: Uri = u.parse().map_err(|source| BadTarget::Invalid { url: u.clone(), source })?;
                if uri.scheme_str().is_some_and(|s| s != "http") {
                    return Err(BadTarget::NotHttp(u.clone()));
                }
                let authority = uri.authority().ok_or_else(|| BadTarget::NoHost(u.clone()))?.to_string();
                let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
                Ok(Target { authority, path, idle: Mutex::new(Vec::new()) })
            })
            .collect::<Result<_, BadTarget>>()?;
        Ok(Self { targets, opened, query: crate::wire::PathQuery::Plain })
    }

    /// The same pool posting each body to its path with `query` after it.
    pub fn with_query(self, query: crate::wire::PathQuery) -> Self {
        Self { query, ..self }
    }

    /// How many workers.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// Whether there is no worker.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// An idle connection that is still open, or a new one.
    async fn checkout(&self, t: &Target) -> Result<Conn, SendError> {
        loop {
            let idle = t.idle.lock().ok().and_then(|mut v| v.pop());
            match idle {
                Some(c) if c.is_open() => return Ok(c),
                Some(_) => continue,
                None => break,
            }
        }
        let stream = TcpStream::connect(&t.authority).await.map_err(|_| SendError::Connect)?;
        let _ = stream.set_nodelay(true);
        let id = self.opened.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(Conn { id, stream, read: BytesMut::with_capacity(4096), write: Vec::with_capacity(1024) })
    }

    /// POSTs `body` with `headers` to worker `worker`; the status once the whole response is read.
    /// `connection` learns which connection it went over.
    pub async fn post(
        &self,
        worker: usize,
        headers: &[(&'static str, String)],
        body: &[u8],
        connection: &Connection,
    ) -> Result<Answer, SendError> {
        let t = &self.targets[worker];
        let mut conn = self.checkout(t).await?;
        connection.0.store(conn.id, Ordering::Relaxed);
        request(&mut conn.write, t, &self.query.apply(&t.path, body), headers, body)?;
        conn.stream.write_all(&conn.write).await.map_err(|_| SendError::Broken)?;
        let head = conn.read_head().await?;
        let ends_open = conn.read_body(head.body).await?;
        if head.keep_alive
            && ends_open
            && let Ok(mut idle) = t.idle.lock()
        {
            idle.push(conn);
        }
        Ok(Answer { status: head.status, db_conflict: head.db_conflict })
    }
}

/// Writes the request into `out`: `POST`, `path` (the target's, with its query) and the target's
/// host, the body's length, then
/// `headers` and `body`. A header value with a control character is refused, not sent.
fn request(
    out: &mut Vec<u8>,
    t: &Target,
    path: &str,
    headers: &[(&'static str, String)],
    body: &[u8],
) -> Result<(), SendError> {
    out.clear();
    let _ =
        write!(out, "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-length: {}\r\n", path, t.authority, body.len());
    for (name, value) in headers {
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(SendError::Broken);
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    Ok(())
}

/// The response head at the start of `buf`, `None` while it is incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, SendError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    let len = match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Ok(None),
        _ => return Err(SendError::Broken),
    };
    let status = response.code.unwrap_or_default();
    let (mut length, mut chunked, mut close, mut keep_alive) = (None, false, false, false);
    let mut db_conflict = false;
    for h in response.headers.iter() {
        let value = std::str::from_utf8(h.value).map_err(|_| SendError::Broken)?.trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| SendError::Broken)?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.rsplit(',').next().is_some_and(|c| c.trim().eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            close |= value.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"));
            keep_alive |= value.split(',').any(|t| t.trim().eq_ignore_ascii_case("keep-alive"));
        } else if h.name.eq_ignore_ascii_case(DB_CONFLICT_HEADER) {
            db_conflict = true;
        }
    }
    let body = match (status, chunked, length) {
        (100..=199 | 204 | 304, _, _) => Body::Length(0),
        (_, true, _) => Body::Chunked,
        (_, false, Some(n)) => Body::Length(n),
        (_, false, None) => Body::UntilClose,
    };
    // HTTP/1.0 closes unless asked not to; HTTP/1.1 keeps the connection unless told otherwise.
    let keep_alive = !close && (response.version == Some(1) || keep_alive);
    Ok(Some(Head { len, status, body, keep_alive, db_conflict }))
}

impl Conn {
    /// Whether the server has not closed this idle connection (nor sent anything unasked).
    fn is_open(&self) -> bool {
        let mut probe = [0u8; 1];
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Reads more; how many bytes came (0: the server closed).
    async fn fill(&mut self) -> Result<usize, SendError> {
        self.read.reserve(4096);
        self.stream.read_buf(&mut self.read).await.map_err(|_| SendError::Broken)
    }

    /// Like [`Conn::fill`], but the server closing is an error.
    async fn fill_more(&mut self) -> Result<(), SendError> {
        match self.fill().await? {
            0 => Err(SendError::Broken),
            _ => Ok(()),
        }
    }

    /// The final response's head, consumed (interim 1xx responses are skipped).
    async fn read_head(&mut self) -> Result<Head, SendError> {
        loop {
            match parse_head(&self.read)? {
                Some(head) => {
                    self.read.advance(head.len);
                    if (100..200).contains(&head.status) && head.status != 101 {
                        continue;
                    }
                    return Ok(head);
                }
                None => self.fill_more().await?,
            }
        }
    }

    /// Reads and drops the body; whether the connection is still open after it.
    async fn read_body(&mut self, body: Body) -> Result<bool, SendError> {
        match body {
            Body::Length(n) => {
                self.skip(n).await?;
                Ok(true)
            }
            Body::Chunked => {
                self.skip_chunks().await?;
                Ok(true)
            }
            Body::UntilClose => {
                self.read.clear();
                while self.fill().await? > 0 {
                    self.read.clear();
                }
                Ok(false)
            }
        }
    }

    /// Drops the next `n` bytes.
    async fn skip(&mut self, mut n: usize) -> Result<(), SendError> {
        loop {
            let take = n.min(self.read.len());
            self.read.advance(take);
            n -= take;
            if n == 0 {
                return Ok(());
            }
            self.fill_more().await?;
        }
    }

    /// Drops a chunked body, its trailers included.
    async fn skip_chunks(&mut self) -> Result<(), SendError> {
        loop {
            match httparse::parse_chunk_size(&self.read) {
                Ok(httparse::Status::Complete((at, 0))) => {
                    self.read.advance(at);
                    return self.skip_trailers().await;
                }
                Ok(httparse::Status::Complete((at, size))) => {
                    self.read.advance(at);
                    let size = usize::try_from(size).map_err(|_| SendError::Broken)?;
                    self.skip(size).await?;
                    self.expect_crlf().await?;
                }
                Ok(httparse::Status::Partial) if self.read.len() < MAX_HEAD => self.fill_more().await?,
                _ => return Err(SendError::Broken),
            }
        }
    }

    /// Consumes the CRLF that ends a chunk's data.
    async fn expect_crlf(&mut self) -> Result<(), SendError> {
        while self.read.len() < 2 {
            self.fill_more().await?;
        }
        if &self.read[..2] != b"\r\n" {
            return Err(SendError::Broken);
        }
        self.read.advance(2);
        Ok(())
    }

    /// Consumes the trailers after the last chunk, up to the empty line that ends them.
    async fn skip_trailers(&mut self) -> Result<(), SendError> {
        loop {
            match self.read.windows(2).position(|w| w == b"\r\n") {
                // An empty line: the end.
                Some(0) => {
                    self.read.advance(2);
                    return Ok(());
                }
                Some(at) => self.read.advance(at + 2),
                None if self.read.len() < MAX_HEAD => self.fill_more().await?,
                None => return Err(SendError::Broken),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        parse_head(text.as_bytes()).ok().flatten().expect("a complete head")
    }

    #[test]
    fn a_head_says_how_its_body_ends_and_whether_the_connection_stays_open() {
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        assert_eq!((h.status, h.body, h.keep_alive, h.len), (200, Body::Length(2), true, 38));
        let h = head("HTTP/1.1 500 x\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n");
        assert_eq!((h.status, h.body, h.keep_alive), (500, Body::Chunked, false));
        let h = head("HTTP/1.0 200 OK\r\n\r\n");
        assert_eq!((h.body, h.keep_alive), (Body::UntilClose, false));
        let h = head("HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!((h.body, h.keep_alive), (Body::Length(0), true));
        assert!(matches!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-le"), Ok(None)));
        assert!(parse_head(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: ten\r\n\r\n").is_err());
    }

    /// A transaction conflict is told by its header alone, whatever its value or case; an
    /// answer without it, 5xx or not, is no conflict.
    #[test]
    fn a_database_conflict_is_read_from_its_header() {
        let h = head("HTTP/1.1 503 x\r\nHookbench-Db-Conflict: 40001\r\ncontent-length: 0\r\n\r\n");
        assert!(h.db_conflict);
        let h = head("HTTP/1.1 503 x\r\nhookbench-db-conflict: mysql 1213\r\n\r\n");
        assert!(h.db_conflict);
        let h = head("HTTP/1.1 503 x\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n");
        assert!(!h.db_conflict);
        assert!(!head("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").db_conflict);
    }

    #[test]
    fn a_request_is_written_whole_and_a_header_that_would_split_it_is_refused() {
        let t =
            Target { authority: "127.0.0.1:9".into(), path: "/webhooks/x".into(), idle: Mutex::default() };
        let mut out = Vec::new();
        assert!(request(&mut out, &t, "/webhooks/x", &[("webhook-id", "evt_1".into())], b"{}").is_ok());
        assert_eq!(
            String::from_utf8_lossy(&out),
            "POST /webhooks/x HTTP/1.1\r\nhost: 127.0.0.1:9\r\ncontent-length: 2\r\nwebhook-id: evt_1\r\n\r\n{}"
        );
        assert!(
            request(&mut out, &t, "/webhooks/x", &[("webhook-id", "evt_1\r\nx: y".into())], b"{}").is_err()
        );
    }

    /// Reads one request (head and `content-length` body) from `s`.
    async fn read_request(s: &mut TcpStream) {
        let mut buf = Vec::new();
        loop {
            let mut chunk = [0u8; 1024];
            let n = s.read(&mut chunk).await.expect("a request");
            assert!(n > 0, "the client closed before its request");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    return;
                }
            }
        }
    }

    /// A server that answers each connection's requests with `script`'s responses in turn, then
    /// closes it.
    async fn scripted(script: Vec<Vec<&'static str>>) -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}/webhooks/t", listener.local_addr().expect("an address"));
        let server = tokio::spawn(async move {
            for answers in script {
                let (mut s, _) = listener.accept().await.expect("a connection");
                for answer in answers {
                    read_request(&mut s).await;
                    s.write_all(answer.as_bytes()).await.expect("written");
                }
            }
        });
        (url, server)
    }

    #[tokio::test]
    async fn every_kind_of_response_is_read_whole_and_a_connection_is_reused_only_while_open() {
        let (url, server) = scripted(vec![
            vec![
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 5\r\n\r\nhello",
                "HTTP/1.1 202 Accepted\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-t: 1\r\n\r\n",
                "HTTP/1.1 503 Busy\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
            ],
            vec!["HTTP/1.0 200 OK\r\n\r\nuntil the server closes"],
            // Answered, then closed while idle in the pool.
            vec!["HTTP/1.1 204 No Content\r\n\r\n"],
            vec!["HTTP/1.1 400 Bad Request\r\ncontent-length: 3\r\n\r\nbad"],
        ])
        .await;
        let pool = Pool::new(&[url], Arc::default()).expect("a pool");
        let mut seen = Vec::new();
        for _ in 0..6 {
            let connection = Connection::default();
            let answer = pool.post(0, &[("webhook-id", "evt_1".into())], b"{}", &connection).await;
            seen.push((answer.ok().map(|a| a.status), connection.id()));
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(
            seen,
            vec![
                (Some(201), 1),
                (Some(202), 1),
                (Some(503), 1),
                (Some(200), 2),
                (Some(204), 3),
                (Some(400), 4)
            ]
        );
        server.await.expect("the server ran its script");
    }

    #[tokio::test]
    async fn a_response_cut_short_is_an_error_not_a_status() {
        let (url, server) = scripted(vec![vec!["HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"]]).await;
        let pool = Pool::new(&[url], Arc::default()).expect("a pool");
        let status = pool.post(0, &[], b"{}", &Connection::default()).await;
        assert!(matches!(status, Err(SendError::Broken)), "{status:?}");
        server.await.expect("the server ran its script");
    }

    /// Response bytes a hostile or broken server might send: a plausible head (any version,
    /// status, framing headers with any values) or raw noise, then any body.
    fn responses() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let name = prop::sample::select(vec![
            "content-length",
            "transfer-encoding",
            "connection",
            "Content-Length",
            "x-other",
        ]);
        let value = prop_oneof![
            Just("chunked".to_string()),
            Just("close".to_string()),
            Just("18446744073709551616".to_string()),
            "[0-9]{1,20}",
            "[ -~]{0,12}",
        ];
        let headers = prop::collection::vec((name, value), 0..6);
        let head = (0u8..=2, 0u16..1000, headers).prop_map(|(minor, status, headers)| {
            let mut text = format!("HTTP/1.{minor} {status} x\r\n");
            for (n, v) in headers {
                text.push_str(&format!("{n}: {v}\r\n"));
            }
            text.push_str("\r\n");
            text.into_bytes()
        });
        let start = prop_oneof![head, prop::collection::vec(any::<u8>(), 0..256)];
        (start, prop::collection::vec(any::<u8>(), 0..512)).prop_map(|(mut a, b)| {
            a.extend(b);
            a
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// The head parser faces the network: whatever comes, it answers without panicking and
        /// never claims a head longer than what it was given.
        #[test]
        fn the_head_parser_never_panics(bytes in responses()) {
            if let Ok(Some(h)) = parse_head(&bytes) {
                proptest::prop_assert!(h.len <= bytes.len());
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// A whole exchange with a server that sends `bytes` and closes ends, as a status or an
        /// error, without a panic and without waiting for more than the server sent.
        #[test]
        fn any_answer_then_a_close_ends_the_exchange(bytes in responses()) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
                let url = format!("http://{}/webhooks/t", listener.local_addr().expect("an address"));
                let server = tokio::spawn(async move {
                    let (mut s, _) = listener.accept().await.expect("a connection");
                    read_request(&mut s).await;
                    let _ = s.write_all(&bytes).await;
                });
                let pool = Pool::new(&[url], Arc::default()).expect("a pool");
                let connection = Connection::default();
                let post = pool.post(0, &[], b"{}", &connection);
                // A bound against a hang, not a measure of speed: the server has closed.
                let ended = tokio::time::timeout(std::time::Duration::from_secs(30), post).await;
                assert!(ended.is_ok(), "the exchange ended once the server closed");
                server.await.expect("the server ran");
            });
        }
    }
}
