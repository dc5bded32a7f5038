//! `hookbench jitter`: the article's sender experiment for real. Many deliveries fail at the same moment against a real HTTP receiver that answers 503
//! until a recovery time and 200 after; each retries with exponential backoff, without and with
//! full jitter. Each delivery's attempt times are drawn exactly as the model draws them
//! ([`crate::model::jitter::attempt_times`]), then sent for real with time divided by
//! `time_scale`; attempts, the peak of arrivals per (scaled) second after recovery and the last
//! delivery are measured at the receiver. Each request carries the time it was due, so the
//! receiver also measures how far the retries due after recovery trailed their schedule: a machine
//! that cannot put them through within a scaled second flattens the spike it is asked to show,
//! and the figures say so rather than hide it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;

use crate::stats::Latency;
use tokio::time::Instant;

/// The report's types: the experiment's section and what the receiver saw in one mode.
pub use crate::report::model::{JitterMeasured, JitterSection};

use crate::model::jitter::{JitterMode, attempt_times, rng_for};

/// How much faster than the article's clock the experiment runs by default (its 300 s take 3 s).
pub const TIME_SCALE: f64 = 100.0;

/// The header carrying the (scaled) second an attempt was due.
const DUE_HEADER: &str = "x-hookbench-due-s";

struct Receiver {
    /// Set once the connections are open; requests before it are the warm-up and not counted.
    start: std::sync::OnceLock<Instant>,
    scale: f64,
    recover_s: f64,
    arrivals: Mutex<Vec<Arrival>>,
}

/// One request as the receiver saw it, in scaled seconds from the start.
#[derive(Clone, Copy)]
struct Arrival {
    at: f64,
    due: f64,
    answered_ok: bool,
}

async fn arrive(State(r): State<Arc<Receiver>>, headers: axum::http::HeaderMap) -> StatusCode {
    let Some(start) = r.start.get() else {
        return StatusCode::NO_CONTENT;
    };
    let at = start.elapsed().as_secs_f64() * r.scale;
    let up = at >= r.recover_s;
    let due = headers.get(DUE_HEADER).and_then(|v| v.to_str().ok()?.parse().ok()).unwrap_or(at);
    // A std Mutex: held for one push, never across an await.
    if let Ok(mut a) = r.arrivals.lock() {
        a.push(Arrival { at, due, answered_ok: up });
    }
    if up { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }
}

/// Runs one mode: `deliveries` deliveries, receiver back at `recover_s` (scaled seconds).
pub async fn jitter(
    seed: u32,
    mode: JitterMode,
    deliveries: u32,
    recover_s: f64,
    time_scale: f64,
) -> std::io::Result<JitterMeasured> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/webhooks/jitter", listener.local_addr()?);
    // Every delivery's attempt times, drawn in the model's order from the model's generator.
    let mut rnd = rng_for(seed, mode);
    let schedules: Vec<Vec<f64>> =
        (0..deliveries).map(|_| attempt_times(mode, &mut rnd, recover_s)).collect();
    let receiver = Arc::new(Receiver {
        start: std::sync::OnceLock::new(),
        scale: time_scale,
        recover_s,
        arrivals: Mutex::new(Vec::new()),
    });
    let app = axum::Router::new().fallback(arrive).with_state(receiver.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app).with_graceful_shutdown(async { stopped.await.unwrap_or(()) }).await
    });
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::try_from(deliveries).unwrap_or(1000))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(std::io::Error::other)?;
    warm_up(&client, &url, deliveries).await;
    let start = Instant::now() + Duration::from_millis(200);
    receiver.start.get_or_init(|| start);
    let mut tasks = tokio::task::JoinSet::new();
    for times in schedules {
        let (client, url) = (client.clone(), url.clone());
        tasks.spawn(async move {
            for t in times {
                tokio::time::sleep_until(start + scaled(t, time_scale)).await;
                let attempt = client.post(&url).header(DUE_HEADER, t.to_string()).body("{}");
                if let Ok(r) = attempt.send().await
                    && r.status().is_success()
                {
                    return;
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let _ = stop.send(());
    let _ = server.await;
    let arrivals = receiver.arrivals.lock().map(|a| a.clone()).unwrap_or_default();
    // One pass: arrivals per second, and those at or after recovery per second (for the peak).
    let (mut arrivals_per_s, mut after_per_s) = (Vec::new(), Vec::new());
    for a in &arrivals {
        let second = a.at.max(0.0).floor() as usize;
        count_at(&mut arrivals_per_s, second);
        if a.at >= recover_s {
            count_at(&mut after_per_s, second);
        }
    }
    Ok(JitterMeasured {
        mode,
        attempts: arrivals.len() as u64,
        peak_after: after_per_s.iter().copied().max().unwrap_or(0),
        last_ok_s: arrivals.iter().filter(|a| a.answered_ok).map(|a| a.at).fold(0.0, f64::max),
        arrivals_per_s,
        recovery_late_p99_s: recovery_late_p99(&arrivals, recover_s, time_scale),
    })
}

/// `seconds` of the model's clock in real time: never negative, and a figure too large for a
/// `Duration` (or for an `Instant` to add) saturates at a year instead of panicking
/// (`--time-scale` and `--recover-s` are bounded too).
fn scaled(seconds: f64, time_scale: f64) -> Duration {
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    Duration::try_from_secs_f64((seconds / time_scale).max(0.0)).map_or(YEAR, |d| d.min(YEAR))
}

/// How late the attempts due at or after `recover_s` arrived, p99, in scaled seconds: recorded
/// in real time into the latency histogram the sender uses, then scaled back.
fn recovery_late_p99(arrivals: &[Arrival], recover_s: f64, time_scale: f64) -> f64 {
    let late = Latency::default();
    for a in arrivals.iter().filter(|a| a.due >= recover_s) {
        late.record(scaled(a.at - a.due, time_scale));
    }
    late.percentiles().p99 as f64 / 1e6 * time_scale
}

/// Opens one connection per delivery before the clock starts, as a sender's pool to a receiver it
/// has been delivering to already holds them: otherwise the first failures all arrive behind
/// `deliveries` TCP handshakes, and the lateness measured is connection setup, not the schedule.
async fn warm_up(client: &reqwest::Client, url: &str, deliveries: u32) {
    let mut opens = tokio::task::JoinSet::new();
    for _ in 0..deliveries {
        let (client, url) = (client.clone(), url.to_owned());
        opens.spawn(async move { client.get(&url).send().await.map(|_| ()) });
    }
    while opens.join_next().await.is_some() {}
}

/// Adds one to `counts[i]`, growing `counts` as needed.
fn count_at(counts: &mut Vec<u64>, i: usize) {
    if counts.len() <= i {
        counts.resize(i + 1, 0);
    }
    counts[i] += 1;
}
