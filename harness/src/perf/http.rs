//! The sender against wrk and oha on a trivial endpoint that answers 200: each tool's top request
//! rate at the same connection count with the same request (method, headers, body), taken in
//! turn in one run; then the latency each reports at one fixed rate all three sustain (half of
//! wrk's top rate), so hookbench's own overhead is a number.

use std::process::Stdio;
use std::sync::Arc;

use receivers::signature::Secret;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{PerfConfig, PerfError, Ratio, closed_loop, number_after, plain_credits, tool_output};
use crate::sender::{self, Progress};
use crate::wire::Wire;

/// One tool's latency at the fixed rate, milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct ToolLatency {
    /// wrk, oha or hookbench.
    pub tool: &'static str,
    /// Median, when the tool can send at a fixed rate.
    pub p50_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// How it was measured, or why it was not.
    pub how: String,
}

/// The HTTP comparison.
#[derive(Debug, Clone, Serialize)]
pub struct HttpFigures {
    /// The sender against wrk, requests per second.
    pub wrk: Ratio,
    /// The sender against oha, requests per second.
    pub oha: Ratio,
    /// The fixed rate of the latency line, requests per second.
    pub fixed_rate_per_s: f64,
    /// Each tool's latency at that rate.
    pub latency: Vec<ToolLatency>,
}

/// The request every tool sends: hookbench's first credit, signed, as the sender sends it.
struct Request {
    body: String,
    headers: Vec<(&'static str, String)>,
}

/// The trivial endpoint (`hookbench serve-ok`), as a process, and its webhook URL.
async fn endpoint(config: &PerfConfig) -> Result<(tokio::process::Child, String), PerfError> {
    let mut server = tokio::process::Command::new(&config.exe)
        .args(["serve-ok", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = server.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?;
    let line = BufReader::new(stdout).lines().next_line().await?.unwrap_or_default();
    let addr: serde_json::Value = serde_json::from_str(&line).map_err(std::io::Error::other)?;
    let url = format!("http://{}/webhooks/perf", addr["listening"].as_str().unwrap_or_default());
    Ok((server, url))
}

/// wrk's top rate with `request`, requests per second.
async fn wrk(config: &PerfConfig, url: &str, request: &Request) -> Result<f64, PerfError> {
    let mut lua = format!("wrk.method = \"POST\"\nwrk.body = [[{}]]\n", request.body);
    for (name, value) in &request.headers {
        lua.push_str(&format!("wrk.headers[\"{name}\"] = \"{value}\"\n"));
    }
    let script = tempfile::Builder::new().suffix(".lua").tempfile()?;
    std::fs::write(script.path(), lua)?;
    let text = tool_output(
        "wrk",
        tokio::process::Command::new("wrk")
            .args(["-t", "2", "-c", &config.connections.to_string(), "-d", &format!("{}s", config.seconds)])
            .arg("-s")
            .arg(script.path())
            .arg(url),
    )
    .await?;
    number_after(&text, "Requests/sec:").ok_or_else(|| PerfError::Tool {
        tool: "wrk",
        reason: format!("no Requests/sec in its output: {text}"),
    })
}

/// oha's figures with `request`: at its top rate, or at `rate` with its latency correction.
async fn oha(
    config: &PerfConfig,
    url: &str,
    request: &Request,
    rate: Option<f64>,
) -> Result<serde_json::Value, PerfError> {
    let mut cmd = tokio::process::Command::new("oha");
    cmd.args(["--no-tui", "--output-format", "json", "-m", "POST"])
        .args(["-c", &config.connections.to_string(), "-z", &format!("{}s", config.seconds)])
        .args(["-d", &request.body]);
    for (name, value) in &request.headers {
        cmd.args(["-H", &format!("{name}: {value}")]);
    }
    if let Some(rate) = rate {
        cmd.args(["-q", &format!("{rate:.0}"), "--latency-correction"]);
    }
    let text = tool_output("oha", cmd.arg(url)).await?;
    serde_json::from_str(&text)
        .map_err(|e| PerfError::Tool { tool: "oha", reason: format!("its JSON output: {e}: {text}") })
}

/// The sender's figures: at its top rate (closed loop), or open loop at `rate`.
async fn hookbench(
    config: &PerfConfig,
    url: &str,
    wire: &Arc<Wire>,
    rate: Option<f64>,
    top_hint: f64,
) -> Result<sender::SendReport, PerfError> {
    let events = rate.unwrap_or(top_hint * 1.5);
    let workload = Arc::new(plain_credits(events, config.seconds));
    let sender = sender::SenderConfig { rate, ..closed_loop(config.connections) };
    let progress = Arc::new(Progress::default());
    Ok(sender::run(workload, vec![url.to_string()], wire.clone(), sender, progress).await?)
}

fn per_second(sent: &sender::SendReport) -> f64 {
    sent.counters.status_2xx as f64 / sent.elapsed.as_secs_f64().max(1e-9)
}

/// The sender against wrk and oha, and each one's latency at half of wrk's top rate.
pub async fn http_comparison(config: &PerfConfig) -> Result<HttpFigures, PerfError> {
    let (mut server, url) = endpoint(config).await?;
    // Every tool sends the same request the sender sends.
    let wire = Arc::new(Wire::hookbench(&Secret::from_bytes(b"hookbench-perf".to_vec()).to_whsec())?);
    let sample = wire.fields(&plain_credits(1.0, 1), 0);
    let body = wire.body(&sample, jiff::Timestamp::now().as_second());
    let headers = wire.headers(&sample, &body, jiff::Timestamp::now().as_second());
    let request = Request { body: String::from_utf8_lossy(&body).into_owned(), headers };

    // Top rates, in turn.
    let wrk_top = wrk(config, &url, &request).await?;
    let oha_top = oha(config, &url, &request, None).await?;
    let oha_top = oha_top["summary"]["requestsPerSec"].as_f64().unwrap_or(0.0);
    let ours_top = per_second(&hookbench(config, &url, &wire, None, wrk_top).await?);

    // Latency at one fixed rate all three sustain.
    let rate = (wrk_top / 2.0).round();
    let at_rate = oha(config, &url, &request, Some(rate)).await?;
    let ms = |k: &str| at_rate["metrics"]["latency_ms"][k].as_f64();
    let ours = hookbench(config, &url, &wire, Some(rate), wrk_top).await?;
    let latency = vec![
        ToolLatency {
            tool: "wrk",
            p50_ms: None,
            p99_ms: None,
            how: "no fixed-rate mode (Debian's wrk is not wrk2)".into(),
        },
        ToolLatency {
            tool: "oha",
            p50_ms: ms("p50"),
            p99_ms: ms("p99"),
            how: format!("-q {rate:.0} --latency-correction"),
        },
        // oha's correction counts from the moment its timer fired (tokio's timer ticks each
        // millisecond), hookbench's from the plan's exact time: the second line is the like for
        // like, the first the stricter figure.
        ToolLatency {
            tool: "hookbench",
            p50_ms: Some(ours.latency_intended.p50 as f64 / 1e3),
            p99_ms: Some(ours.latency_intended.p99 as f64 / 1e3),
            how: format!(
                "open loop at {rate:.0}/s, from the plan's exact time ({:.0} req/s sent)",
                per_second(&ours)
            ),
        },
        ToolLatency {
            tool: "hookbench",
            p50_ms: Some(ours.latency_actual.p50 as f64 / 1e3),
            p99_ms: Some(ours.latency_actual.p99 as f64 / 1e3),
            how: "the same run, from each request's release, as oha counts".into(),
        },
    ];
    let _ = server.start_kill();
    let _ = server.wait().await;
    Ok(HttpFigures {
        wrk: Ratio::new(wrk_top, ours_top),
        oha: Ratio::new(oha_top, ours_top),
        fixed_rate_per_s: rate,
        latency,
    })
}

/// The trivial endpoint: 200 to every request, nothing else.
pub fn ok_router() -> axum::Router {
    axum::Router::new().fallback(|| async { "ok" })
}
