//! The receivers' HTTP transport under abusive clients (issue 10, finding 3), on both backends:
//! header and body read timeouts, idle keep-alive connections closed, an oversized
//! `Content-Length` refused before its body, a cap on connections, HTTP/1 only. Every wait is
//! bounded. (A worker's memory after abusers leave needs a process: `hookbench`'s
//! `worker_process` tests.)

use std::time::{Duration, Instant};

use receivers::app::Limits;
use receivers::design::Design;
use receivers::store::Backend;
use testkit::{Db, Server, send, signed_looking_head, state};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Short limits, so the waits below stay short.
fn short_limits() -> Limits {
    Limits {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        ..Limits::default()
    }
}

async fn server_with(backend: Backend, limits: Limits) -> (Db, Server) {
    let db = Db::fresh(backend).await;
    let server =
        Server::start_state(state(Design::Atomic, db.store.clone(), Duration::ZERO).with_limits(limits))
            .await;
    (db, server)
}

/// What came back on a connection, and when (if ever) the server closed it.
struct Exchange {
    received: Vec<u8>,
    closed_after: Option<Duration>,
}

impl Exchange {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.received).to_string()
    }
}

/// Reads from `stream` until the server closes it or `deadline` passes.
async fn read_until_closed(stream: &mut TcpStream, deadline: Duration) -> Exchange {
    let start = Instant::now();
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_sub(start.elapsed());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Exchange { received, closed_after: Some(start.elapsed()) },
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
            Err(_) => return Exchange { received, closed_after: None },
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_header_section_is_closed_after_the_header_timeout() {
    for backend in Backend::ALL {
        let (db, server) = server_with(backend, short_limits()).await;
        let mut s =
            send(server.addr, b"POST /webhooks/acme HTTP/1.1\r\nhost: 127.0.0.1\r\nwebhook-id: ev").await;
        let got = read_until_closed(&mut s, Duration::from_secs(6)).await;
        assert!(got.closed_after.is_some(), "{backend}: still open after 6 s: {:?}", got.text());
        server.stop().await;
        db.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed() {
    for backend in Backend::ALL {
        let (db, server) = server_with(backend, short_limits()).await;
        let mut s = send(server.addr, b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").await;
        let got = read_until_closed(&mut s, Duration::from_secs(6)).await;
        assert!(got.text().starts_with("HTTP/1.1 200"), "{backend}: {:?}", got.text());
        assert!(got.closed_after.is_some(), "{backend}: an idle keep-alive connection still open after 6 s");
        server.stop().await;
        db.cleanup().await;
    }
}

/// A request whose head is `framing` and whose body stops after `started`: answered 408 naming
/// the body, closed, nothing written.
async fn a_stalled_body_is_answered_408_and_closed(framing: &str, started: &str) {
    for backend in Backend::ALL {
        let (db, server) = server_with(backend, short_limits()).await;
        let head = signed_looking_head(framing);
        let mut s = send(server.addr, format!("{head}{started}").as_bytes()).await;
        let got = read_until_closed(&mut s, Duration::from_secs(6)).await;
        assert!(got.text().starts_with("HTTP/1.1 408"), "{backend} {framing}: {:?}", got.text());
        assert!(got.text().contains("body"), "{backend} {framing}: {:?}", got.text());
        assert!(got.closed_after.is_some(), "{backend} {framing}: still open after 6 s");
        assert_eq!(db.rows().await, [0; 5], "{backend} {framing}");
        server.stop().await;
        db.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_is_answered_408() {
    a_stalled_body_is_answered_408_and_closed("content-length: 1000000\r\n", "{\"id\":\"ev").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_chunked_body_is_answered_408() {
    a_stalled_body_is_answered_408_and_closed("transfer-encoding: chunked\r\n", "a\r\n0123456789\r\n").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_content_length_over_the_limit_is_refused_413_before_the_body() {
    for backend in Backend::ALL {
        // Long read timeouts: the 413 must come from the header alone, not from a timeout.
        let limits = Limits {
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            ..Limits::default()
        };
        let (db, server) = server_with(backend, limits).await;
        let mut s =
            send(server.addr, signed_looking_head("content-length: 10000000000\r\n").as_bytes()).await;
        let got = read_until_closed(&mut s, Duration::from_secs(5)).await;
        assert!(got.text().starts_with("HTTP/1.1 413"), "{backend}: {:?}", got.text());
        assert!(got.text().contains("1048576"), "{backend}: the answer names the limit: {:?}", got.text());
        server.stop().await;
        db.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_until_one_closes() {
    for backend in Backend::ALL {
        let limits =
            Limits { max_connections: 4, header_timeout: Duration::from_secs(30), ..Limits::default() };
        let (db, server) = server_with(backend, limits).await;
        let mut holders = Vec::new();
        for _ in 0..4 {
            holders.push(send(server.addr, b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n").await);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut fifth =
            send(server.addr, b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n").await;
        let waiting = read_until_closed(&mut fifth, Duration::from_secs(1)).await;
        assert!(waiting.received.is_empty(), "{backend}: served beyond the cap: {:?}", waiting.text());
        drop(holders.pop());
        let served = read_until_closed(&mut fifth, Duration::from_secs(5)).await;
        assert!(served.text().starts_with("HTTP/1.1 200"), "{backend}: {:?}", served.text());
        drop(holders); // else stopping waits for their header timeout
        server.stop().await;
        db.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_with_prior_knowledge_is_not_served() {
    // The client preface, then an empty SETTINGS frame.
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    for backend in Backend::ALL {
        let (db, server) = server_with(backend, short_limits()).await;
        let mut s = send(server.addr, preface).await;
        let got = read_until_closed(&mut s, Duration::from_secs(5)).await;
        // An HTTP/2 server answers with its own SETTINGS frame: type 0x04 in the fourth byte.
        let h2_settings = got.received.len() >= 9 && got.received[3] == 0x04;
        assert!(!h2_settings, "{backend}: answered HTTP/2: {:?}", got.received);
        assert!(got.closed_after.is_some(), "{backend}: the connection stayed open");
        server.stop().await;
        db.cleanup().await;
    }
}
