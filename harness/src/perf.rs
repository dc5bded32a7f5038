//! `hookbench perf`: how close hookbench gets to the machine's limits, as two ratios measured
//! side by side in one run.
//!
//! 1. Postgres: the `atomic` design (HTTP, signature, JSON, one transaction) at N deliveries in
//!    flight, against pgbench running the same transaction with N clients on an identical fresh
//!    database.
//! 2. HTTP: the sender's request rate against wrk's, on a trivial endpoint that answers 200, at
//!    the same connection count.
//!
//! pgbench and wrk must be installed (`just perf` installs them on Debian).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use receivers::design::Design;
use receivers::signature::Secret;
use receivers::store::Isolation;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::fleet::{Fleet, WorkerSpec};
use crate::sender::{self, Progress, RetryPolicy, SenderConfig};
use crate::wire::Wire;
use crate::workload::{Workload, WorkloadConfig};
use provision::{PostgresServer, PostgresSettings};

/// What `perf` needs.
#[derive(Debug, Clone)]
pub struct PerfConfig {
    /// Seconds per measurement.
    pub seconds: u64,
    /// Connections (clients, requests in flight).
    pub connections: usize,
    /// Worker processes for the atomic design.
    pub workers: usize,
    /// Where Postgres comes from.
    pub postgres: PostgresSettings,
    /// hookbench's executable (for workers and the trivial server).
    pub exe: PathBuf,
}

/// One side-by-side measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    /// What the reference tool measured, per second.
    pub reference_per_s: f64,
    /// What hookbench measured, per second.
    pub hookbench_per_s: f64,
    /// hookbench / reference.
    pub ratio: f64,
}

impl Ratio {
    fn new(reference_per_s: f64, hookbench_per_s: f64) -> Self {
        Self { reference_per_s, hookbench_per_s, ratio: hookbench_per_s / reference_per_s.max(1e-9) }
    }
}

/// Why a measurement could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// A tool is missing or failed.
    #[error("{tool}: {reason}")]
    Tool {
        /// pgbench or wrk.
        tool: &'static str,
        /// What happened.
        reason: String,
    },
    /// Provisioning failed.
    #[error(transparent)]
    Provision(#[from] provision::ProvisionError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] receivers::store::StoreError),
    /// The workers failed.
    #[error(transparent)]
    Fleet(#[from] crate::fleet::FleetError),
    /// The sender failed.
    #[error(transparent)]
    Sender(#[from] sender::SendError),
    /// A file could not be written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The transaction the atomic design runs for a credit, as a pgbench script.
const PGBENCH_SCRIPT: &str = "\\set id random(1, 2000000000)
\\set acct random(0, 499)
BEGIN;
INSERT INTO processed_events (event_id) VALUES ('pgb_' || :id) ON CONFLICT DO NOTHING;
INSERT INTO accounts (id, credits) VALUES (:acct, 100) ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + EXCLUDED.credits;
INSERT INTO credit_ledger (event_id, account_id, amount) VALUES ('pgb_' || :id, :acct, 100);
COMMIT;
";

/// A credit-only workload with no faults, sized to take about `seconds` at `rate_hint` per second.
fn plain_credits(rate_hint: f64, seconds: u64) -> Workload {
    let events = ((rate_hint * seconds as f64) as usize).clamp(1000, 5_000_000);
    let config = WorkloadConfig {
        events,
        p_credit: 1.0,
        p_tie: 0.0,
        p_duplicate: 0.0,
        p_ack_lost: 0.0,
        p_concurrent: 0.0,
        p_shuffle: 0.0,
        ..WorkloadConfig::default()
    };
    Workload::generate(&config).expect("valid perf workload")
}

fn closed_loop(connections: usize) -> SenderConfig {
    SenderConfig {
        rate: None,
        concurrency: connections,
        timeout: Duration::from_secs(30),
        retry: RetryPolicy::default(),
        source: "perf".to_string(),
        record: false,
        history: None,
    }
}

async fn tool_output(tool: &'static str, cmd: &mut tokio::process::Command) -> Result<String, PerfError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| PerfError::Tool { tool, reason: format!("cannot run it ({e}); is it installed?") })?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(PerfError::Tool { tool, reason: format!("{}: {err}", out.status) });
    }
    Ok(text)
}

/// The number after `key` on the first line containing it (`tps = 8523.1`, `Requests/sec: 4.5`).
fn number_after(text: &str, key: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.contains(key))?;
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// pgbench's transaction rate against hookbench's atomic design, on Postgres.
pub async fn postgres_ratio(config: &PerfConfig) -> Result<Ratio, PerfError> {
    let server = PostgresServer::start(&config.postgres).await?;
    // pgbench on one fresh database.
    let db = server.fresh_database().await?;
    crate::fleet::ready_schema(&db.url).await?;
    let script = tempfile::NamedTempFile::new()?;
    std::fs::write(script.path(), PGBENCH_SCRIPT)?;
    let text = tool_output(
        "pgbench",
        tokio::process::Command::new("pgbench")
            .args(["-n", "-j", "2", "-c", &config.connections.to_string()])
            .args(["-T", &config.seconds.to_string(), "-f"])
            .arg(script.path())
            .arg(&db.url),
    )
    .await?;
    let pgbench = number_after(&text, "tps = ").ok_or_else(|| PerfError::Tool {
        tool: "pgbench",
        reason: format!("no tps in its output: {text}"),
    })?;
    db.drop_database().await?;

    // hookbench's atomic design on another, just as fresh.
    let db = server.fresh_database().await?;
    crate::fleet::ready_schema(&db.url).await?;
    let secret = Secret::from_bytes(b"hookbench-perf".to_vec());
    let spec = WorkerSpec {
        exe: config.exe.clone(),
        design: Design::Atomic,
        database_url: db.url.clone(),
        secrets: vec![secret.to_whsec()],
        work_delay: Duration::ZERO,
        isolation: Isolation::ReadCommitted,
        inbox_workers: 0,
        max_connections: u32::try_from(config.connections.div_ceil(config.workers)).unwrap_or(8).max(2),
        log: None,
        inject_faults: false,
        pool_timeout: crate::fleet::WORKER_POOL_TIMEOUT,
    };
    let fleet = Fleet::start(spec, config.workers).await?;
    let urls = fleet.workers().iter().map(|w| w.webhook_url("perf")).collect();
    let workload = Arc::new(plain_credits(pgbench * 0.6, config.seconds));
    let sent = sender::run(
        workload,
        urls,
        Arc::new(Wire::hookbench(&secret)),
        closed_loop(config.connections),
        Arc::new(Progress::default()),
    )
    .await?;
    fleet.stop().await?;
    db.drop_database().await?;
    let hookbench = sent.counters.status_2xx as f64 / sent.elapsed.as_secs_f64();
    Ok(Ratio::new(pgbench, hookbench))
}

/// wrk's request rate against the sender's, on a trivial endpoint answering 200.
pub async fn http_ratio(config: &PerfConfig) -> Result<Ratio, PerfError> {
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

    // wrk POSTs the same body with the same headers the sender sends.
    let wire = Arc::new(Wire::hookbench(&Secret::from_bytes(b"hookbench-perf".to_vec())));
    let sample = wire.fields(&plain_credits(1.0, 1), 0);
    let body = wire.body(&sample);
    let mut lua = format!("wrk.method = \"POST\"\nwrk.body = [[{}]]\n", String::from_utf8_lossy(&body));
    for (name, value) in wire.headers(&sample, &body, jiff::Timestamp::now().as_second()) {
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
            .arg(&url),
    )
    .await?;
    let wrk = number_after(&text, "Requests/sec:").ok_or_else(|| PerfError::Tool {
        tool: "wrk",
        reason: format!("no Requests/sec in its output: {text}"),
    })?;

    let workload = Arc::new(plain_credits(wrk * 0.6, config.seconds));
    let sent = sender::run(
        workload,
        vec![url],
        wire,
        closed_loop(config.connections),
        Arc::new(Progress::default()),
    )
    .await?;
    let _ = server.start_kill();
    let _ = server.wait().await;
    let hookbench = sent.counters.status_2xx as f64 / sent.elapsed.as_secs_f64();
    Ok(Ratio::new(wrk, hookbench))
}

/// The trivial endpoint: 200 to every request, nothing else.
pub fn ok_router() -> axum::Router {
    axum::Router::new().fallback(|| async { "ok" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_tools_figures() {
        let pgbench = "number of transactions actually processed: 85231\nlatency average = 3.754 ms\n\
                       tps = 8523.118301 (without initial connection time)\n";
        assert_eq!(number_after(pgbench, "tps = "), Some(8523.118301));
        let wrk =
            "  Latency   812.32us  1.02ms  30.11ms   94.51%\nRequests/sec:  40123.55\nTransfer/sec: 4.5MB\n";
        assert_eq!(number_after(wrk, "Requests/sec:"), Some(40123.55));
        assert_eq!(number_after("nothing", "tps = "), None);
    }
}
