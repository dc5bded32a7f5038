//! hookbench as a client of a hostile receiver, through the real binary: answers with huge,
//! endless or until-close bodies, a receiver that never answers, a health URL that redirects, and
//! flags out of their bounds. The audit's own peak resident memory is measured from outside
//! (`testkit::measure`) and must stay under 100 MB whatever the receiver answers; every bad flag
//! is exit 2 naming it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use testkit::SECRET;
use testkit::measure::{Measured, peak_rss};

use super::stub::free_addr;

/// How a hostile receiver answers every request.
#[derive(Debug, Clone, Copy)]
pub enum Hostile {
    /// 200 with `Content-Length` of this many bytes, all sent.
    Sized(u64),
    /// 200, chunked, chunks without end.
    EndlessChunks,
    /// An HTTP/1.0 200 with no length: a body until the connection closes, which it never does.
    UntilClose,
    /// Accepts the connection, reads the request, and never answers.
    Silent,
}

/// A receiver answering every request as `how` on 127.0.0.1, one thread per connection, for as
/// long as the test process runs; with `sink`, it applies each request first (a call to the
/// audit's sink keyed by its `webhook-id`), so that the audit's preflight sees its credit applied
/// and the checks go on to read what it answers.
pub fn hostile(how: Hostile, sink: Option<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let sink = sink.clone();
            std::thread::spawn(move || answer(stream, how, sink.as_deref()));
        }
    });
    addr
}

/// One call to the sink at `sink` keyed by `id`, over a connection of its own.
fn apply(sink: &str, id: &str) {
    let Ok(mut s) = TcpStream::connect(sink) else { return };
    let call = format!(
        "POST /effect HTTP/1.1\r\nhost: {sink}\r\nidempotency-key: {id}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    let _ = s.write_all(call.as_bytes());
    let _ = s.read_to_end(&mut Vec::new());
}

/// Reads one request's head and body, then answers it as `how` (an error ends the connection:
/// the client went away), having applied it through `sink` when there is one.
fn answer(mut stream: TcpStream, how: Hostile, sink: Option<&str>) {
    let Some(id) = read_request(&mut stream) else { return };
    if let Some(sink) = sink {
        apply(sink, &id);
    }
    let zeros = vec![b'x'; 64 * 1024];
    let _ = match how {
        Hostile::Sized(n) => {
            let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {n}\r\n\r\n");
            stream.write_all(head.as_bytes()).and_then(|()| {
                let mut left = n;
                while left > 0 {
                    let k = left.min(zeros.len() as u64) as usize;
                    stream.write_all(&zeros[..k])?;
                    left -= k as u64;
                }
                Ok(())
            })
        }
        Hostile::EndlessChunks => {
            stream.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").and_then(|()| {
                let chunk = [format!("{:x}\r\n", zeros.len()).as_bytes(), &zeros, b"\r\n"].concat();
                loop {
                    stream.write_all(&chunk)?;
                }
            })
        }
        Hostile::UntilClose => stream.write_all(b"HTTP/1.0 200 OK\r\n\r\n").and_then(|()| {
            loop {
                stream.write_all(&zeros)?;
            }
        }),
        Hostile::Silent => {
            std::thread::sleep(Duration::from_secs(3600));
            Ok(())
        }
    };
}

/// Reads a request's head and its `content-length` body, and gives its `webhook-id`; `None` when
/// the connection ends first.
fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut byte).ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&byte[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let id = head.lines().find_map(|l| l.strip_prefix("webhook-id:")).unwrap_or_default().trim().to_string();
    let mut have = buf.len() - head_end;
    while have < length {
        let n = stream.read(&mut byte).ok().filter(|n| *n > 0)?;
        have += n;
    }
    Some(id)
}

/// The real binary's audit of `url` with the tests' secret, a sink that nothing calls, `args`,
/// its output in a temporary directory; killed after `limit`.
fn measured_audit(url: &str, args: &[&str], limit: Duration) -> Measured {
    measured_audit_sinking(url, &free_addr(), args, limit)
}

/// [`measured_audit`] with its sink at `sink`.
fn measured_audit_sinking(url: &str, sink: &str, args: &[&str], limit: Duration) -> Measured {
    let out = tempfile::tempdir().expect("tempdir");
    audit_into(&out.path().join("audit"), url, sink, args, limit)
}

/// [`measured_audit_sinking`] writing its report into `dir`.
fn audit_into(dir: &Path, url: &str, sink: &str, args: &[&str], limit: Duration) -> Measured {
    let base = ["audit", url, "--secret", SECRET, "--sink", sink, "--no-progress", "--out"];
    let all: Vec<&str> =
        base.iter().copied().chain([dir.to_str().expect("utf-8")]).chain(args.iter().copied()).collect();
    peak_rss(env!("CARGO_BIN_EXE_hookbench"), &all, limit)
}

/// The most an audit may hold resident, whatever the receiver answers.
const MAX_RSS_MIB: f64 = 100.0;

#[test]
fn huge_endless_and_until_close_answers_keep_the_audit_under_100_mb() {
    let cases = [
        ("a 1 GB body", Hostile::Sized(1 << 30), &["--checks", "sequential-duplicate"][..]),
        (
            "64 copies of 100 MB",
            Hostile::Sized(100 << 20),
            // Two trials: each releases its 64 copies together, which is what the bound is about;
            // the default 20 only repeat it (36 s of the test's 80 here).
            &["--checks", "concurrent-copies", "--copies", "64", "--trials", "2", "--probe-events", "1"][..],
        ),
        (
            "an endless chunked body",
            Hostile::EndlessChunks,
            &["--checks", "sequential-duplicate", "--probe-events", "1"][..],
        ),
        (
            "HTTP/1.0 until close",
            Hostile::UntilClose,
            &["--checks", "sequential-duplicate", "--probe-events", "1"][..],
        ),
    ];
    for (what, how, args) in cases {
        // It applies what it answers: the checks read its answers past the preflight.
        let sink = free_addr();
        let url = format!("http://{}/webhooks", hostile(how, Some(sink.clone())));
        let args: Vec<&str> = args.iter().copied().chain(["--timeout", "3s"]).collect();
        let run = measured_audit_sinking(&url, &sink, &args, Duration::from_secs(300));
        eprintln!("{what}: exit {:?}, peak {:.1} MiB", run.code, run.peak_rss_mib());
        assert!(run.code.is_some(), "{what}: the audit ended by itself: {}", run.stderr());
        assert!(
            run.peak_rss_mib() < MAX_RSS_MIB,
            "{what}: {:.1} MiB resident: {}",
            run.peak_rss_mib(),
            run.stderr()
        );
    }
}

#[test]
fn a_receiver_that_never_answers_stops_the_audit_at_the_preflight_naming_the_timeout() {
    let url = format!("http://{}/webhooks", hostile(Hostile::Silent, None));
    let run = measured_audit(&url, &["--timeout", "1s"], Duration::from_secs(120));
    assert_eq!(run.code, Some(2), "{}", run.stderr());
    assert!(
        run.stderr().contains("the receiver did not answer a signed delivery within --timeout 1s"),
        "{}",
        run.stderr()
    );
    assert!(run.peak_rss_mib() < MAX_RSS_MIB, "{:.1} MiB", run.peak_rss_mib());
}

#[test]
fn the_deadline_stops_the_audit_with_its_report_so_far() {
    let url = format!("http://{}/webhooks", hostile(Hostile::Silent, None));
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("audit");
    // An attempt's timeout longer than the deadline: only the deadline can stop it.
    // A load short enough for a 2 s deadline to be allowed (a deadline under the audit's own waits
    // is refused at the start).
    let args = ["--timeout", "5m", "--deadline", "2s", "--events", "10"];
    let run = audit_into(&dir, &url, &free_addr(), &args, Duration::from_secs(120));
    assert_eq!(run.code, Some(2), "{}", run.stderr());
    assert!(run.stderr().contains("it ran past --deadline 2s and stopped"), "{}", run.stderr());
    assert!(run.peak_rss_mib() < MAX_RSS_MIB, "{:.1} MiB", run.peak_rss_mib());
    let report = hookbench::report::Report::read_json(&dir.join("report.json")).expect("the report so far");
    let stopped = report.audit_section().and_then(|a| a.stopped.clone());
    assert!(stopped.is_some_and(|s| s.contains("--deadline")), "the report says why it stopped");
}

#[test]
fn a_health_url_that_redirects_is_not_healthy() {
    let sink = free_addr();
    let applier = sink.clone();
    // It applies what it acknowledges (the preflight sees its credit applied through the sink).
    let receiver =
        super::stub::Stub::start(move |_| super::stub::Reply::Apply { sink: applier.clone(), times: 1 });
    // The redirect leads to a server that answers 200: followed, it would count as healthy.
    let redirect = super::stub::Stub::start(|_| super::stub::Reply::Redirect("/elsewhere"));
    let url = format!("http://{}/webhooks", receiver.addr);
    let health = format!("http://{}/health", redirect.addr);
    let out = tempfile::tempdir().expect("tempdir");
    let args = [
        "audit",
        &url,
        "--secret",
        SECRET,
        "--sink",
        &sink,
        "--no-progress",
        "--checks",
        "crash",
        "--kill-cmd",
        "true",
        "--start-cmd",
        "true",
        "--health-url",
        &health,
        "--out",
    ];
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_hookbench"))
        .args(args)
        .arg(out.path().join("audit"))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--health-url") && stderr.contains("status 301, a redirect (not followed)"),
        "{stderr}"
    );
}

#[test]
fn every_flag_out_of_its_bounds_exits_2_naming_it_at_once() {
    // Each once panicked, aborted on an allocation, hung, or was accepted and broke every delivery.
    let cases: &[(&[&str], &str)] = &[
        (&["--rate", "1e-300"], "--rate 1e-300 is out of bounds"),
        (&["--rate", "NaN"], "--rate"),
        (&["--timeout", "0s"], "--timeout 0s is out of bounds"),
        (&["--replay-after", "500000y"], "--replay-after"),
        (&["--oversized-bytes", "100000000000"], "--oversized-bytes 100000000000 is out of bounds"),
        (&["--ramp", "1..1e12"], "--ramp 1000000000000.0 is out of bounds"),
        (&["--ramp", "1..100", "--step-duration", "500000y"], "--step-duration"),
        (&["--ramp", "10..100000", "--step-duration", "1h"], "more than 10000000"),
        (&["--id-prefix", "a\r\nx-injected: 1"], "--id-prefix"),
        (&["--account-base", "9223372036854775807"], "--account-base 9223372036854775807 is out of bounds"),
        (&["--deadline", "0s"], "--deadline 0s is out of bounds"),
        (
            &["--events", "100000", "--rate", "10", "--deadline", "1h"],
            "--deadline 1h is shorter than the audit's own waits (at least 2h 46m 41s",
        ),
        (&["--accounts", "4000000000"], "--accounts"),
        (&["--payload", "/dev/zero"], "--payload /dev/zero: not a regular file\n"),
        (
            &["--poison-account=-9223372036854775808"],
            "--poison-account -9223372036854775808 is out of bounds",
        ),
    ];
    // The retry storm's flags need the commands that disturb the receiver.
    let storm = ["--kill-cmd", "true", "--start-cmd", "true", "--health-url", "http://127.0.0.1:1/"];
    let storm_cases: [(&[&str], &str); 2] = [
        (&["--outage", "500000y"], "--outage"),
        (&["--outage", "1h", "--time-scale", "1e-300"], "--time-scale 1e-300 is out of bounds"),
    ];
    let storm_cases: Vec<(Vec<&str>, &str)> =
        storm_cases.iter().map(|(extra, says)| ([&storm[..], extra].concat(), *says)).collect();
    let all = cases.iter().map(|(f, says)| (f.to_vec(), *says)).chain(storm_cases);
    for (flags, says) in all {
        let run = measured_audit("http://127.0.0.1:1/webhooks", &flags, Duration::from_secs(60));
        assert_eq!(run.code, Some(2), "{flags:?}: {}", run.stderr());
        assert!(run.stderr().contains(says), "{flags:?}: {}", run.stderr());
        assert!(run.peak_rss_mib() < MAX_RSS_MIB, "{flags:?}: {:.1} MiB", run.peak_rss_mib());
    }
}

#[tokio::test]
async fn query_timeout_and_max_rows_stop_the_audit_naming_the_flag() {
    let db = testkit::Db::fresh(receivers::store::Backend::Postgres).await;
    let receiver = super::stub::Stub::start(|_| super::stub::Reply::Status(200));
    let url = format!("http://{}/webhooks", receiver.addr);
    let cases = [
        ("SELECT pg_sleep(3600)::text", "--query-timeout", "1s", "ran longer than 1s"),
        ("SELECT g::text FROM generate_series(1, 100000) g", "--max-rows", "10", "more than 10 rows"),
    ];
    for (sql, flag, limit, says) in cases {
        let args = ["--observe-db", &db.url, "--applied-query", sql, flag, limit];
        let run = measured_audit(&url, &args, Duration::from_secs(120));
        assert_eq!(run.code, Some(2), "{flag}: {}", run.stderr());
        assert!(run.stderr().contains(says) && run.stderr().contains(flag), "{flag}: {}", run.stderr());
    }
    db.cleanup().await;
}

#[test]
fn a_symlink_planted_in_out_is_not_written_through() {
    let sink = free_addr();
    let applier = sink.clone();
    let receiver =
        super::stub::Stub::start(move |_| super::stub::Reply::Apply { sink: applier.clone(), times: 1 });
    let url = format!("http://{}/webhooks", receiver.addr);
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("audit");
    std::fs::create_dir(&dir).expect("--out");
    let target = out.path().join("elsewhere");
    std::fs::write(&target, "keep").expect("the target");
    std::os::unix::fs::symlink(&target, dir.join("report.html")).expect("a planted link");
    let args = ["--checks", "sequential-duplicate", "--probe-events", "1", "--quiet", "100ms"];
    let run = audit_into(&dir, &url, &sink, &args, Duration::from_secs(120));
    assert_eq!(run.code, Some(2), "{}", run.stderr());
    assert!(run.stderr().contains("a symbolic link"), "{}", run.stderr());
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep", "the target is untouched");
}

#[test]
fn an_error_quoting_a_terminal_escape_prints_it_escaped() {
    let out = tempfile::tempdir().expect("tempdir");
    let path = out.path().join("run\u{1b}]0;owned\u{7}");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_hookbench"))
        .args(["report", "render"])
        .arg(&path)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains('\u{1b}') && !stderr.contains('\u{7}'), "raw escapes: {stderr:?}");
    assert!(stderr.contains("run\\u{1b}]0;owned\\u{7}"), "{stderr}");
}
