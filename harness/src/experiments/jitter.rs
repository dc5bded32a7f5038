//! `hookbench jitter`: the article's sender experiment for real. Many deliveries fail at the same moment against a real HTTP receiver that answers 503
//! until a recovery time and 200 after; each retries with exponential backoff, without and with
//! full jitter. Each delivery's attempt times are drawn exactly as the model draws them
//! ([`crate::model::jitter::attempt_times`]), then sent for real with time divided by
//! `time_scale`; attempts, the peak of arrivals per (scaled) second after recovery and the last
//! delivery are measured at the receiver.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

use crate::model::jitter::JitterResult;
use tokio::time::Instant;

use crate::model::jitter::{JitterMode, attempt_times, rng_for};

/// How much faster than the article's clock the experiment runs by default (its 300 s take 3 s).
pub const TIME_SCALE: f64 = 100.0;

/// What the receiver saw in one mode.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct JitterMeasured {
    /// Without or with full jitter.
    pub mode: JitterMode,
    /// Requests that reached the receiver.
    pub attempts: u64,
    /// Most arrivals in one scaled second at or after recovery.
    pub peak_after: u64,
    /// When the last 200 was answered, in scaled seconds.
    pub last_ok_s: f64,
    /// Arrivals in each scaled second from the start (index = whole second).
    #[serde(default)]
    pub arrivals_per_s: Vec<u64>,
}

struct Receiver {
    start: Instant,
    scale: f64,
    recover_s: f64,
    arrivals: Mutex<Vec<(f64, bool)>>,
}

async fn arrive(State(r): State<Arc<Receiver>>) -> StatusCode {
    let t = r.start.elapsed().as_secs_f64() * r.scale;
    let up = t >= r.recover_s;
    if let Ok(mut a) = r.arrivals.lock() {
        a.push((t, up));
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
    let start = Instant::now() + Duration::from_millis(200);
    let receiver =
        Arc::new(Receiver { start, scale: time_scale, recover_s, arrivals: Mutex::new(Vec::new()) });
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
    let mut tasks = tokio::task::JoinSet::new();
    for times in schedules {
        let (client, url) = (client.clone(), url.clone());
        tasks.spawn(async move {
            for t in times {
                tokio::time::sleep_until(start + Duration::from_secs_f64(t / time_scale)).await;
                if let Ok(r) = client.post(&url).body("{}").send().await
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
    for &(t, _) in &arrivals {
        let second = t.max(0.0).floor() as usize;
        count_at(&mut arrivals_per_s, second);
        if t >= recover_s {
            count_at(&mut after_per_s, second);
        }
    }
    Ok(JitterMeasured {
        mode,
        attempts: arrivals.len() as u64,
        peak_after: after_per_s.iter().copied().max().unwrap_or(0),
        last_ok_s: arrivals.iter().filter(|(_, ok)| *ok).map(|(t, _)| *t).fold(0.0, f64::max),
        arrivals_per_s,
    })
}

/// Adds one to `counts[i]`, growing `counts` as needed.
fn count_at(counts: &mut Vec<u64>, i: usize) {
    if counts.len() <= i {
        counts.resize(i + 1, 0);
    }
    counts[i] += 1;
}

/// The jitter experiment as a report section: both modes, measured and modelled.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct JitterSection {
    /// Deliveries failing together.
    pub deliveries: u32,
    /// When the receiver came back, in (unscaled) seconds.
    pub recover_s: f64,
    /// How much faster than the article's clock it ran.
    pub time_scale: f64,
    /// Measured at the receiver, one per mode.
    pub real: Vec<JitterMeasured>,
    /// The model's figures, one per mode.
    pub model: Vec<JitterResult>,
}
