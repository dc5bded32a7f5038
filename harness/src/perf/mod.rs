//! `hookbench perf`: how close hookbench gets to the machine's limits, measured side by side in
//! one run.
//!
//! 1. Postgres (postgres.rs): the `atomic` design (HTTP, signature, JSON, one transaction) at N
//!    deliveries in flight, against pgbench running the same transaction with N clients on an
//!    identical fresh database.
//! 2. SQLite (sqlite.rs): the atomic design against the same transaction run by a small sqlx
//!    loop with N connections on an identical fresh file (SQLite has no pgbench), and against
//!    the receivers' own transaction through SQLite's C API on one connection.
//! 3. HTTP (http.rs): the sender's request rate against wrk's and oha's, on a trivial endpoint
//!    that answers 200, at the same connection count, with the same request; then the latency
//!    each reports at one fixed rate all of them sustain.
//! 4. MySQL or MariaDB (mysql.rs), only with `--only mysql`: the atomic design against mysqlslap
//!    running the same transaction with N clients on an identical fresh database.
//!
//! Each database measurement also says where a delivery's time went in the workers (stages.rs,
//! from their `GET /stats`), and the SQLite loop where its transactions' time went.
//!
//! With `--rounds N` (rounds.rs) each runs once per round, in turn, and each ratio is given as
//! its median and range over the rounds.
//!
//! pgbench, wrk and oha must be installed (`just perf` installs them); mysqlslap comes with
//! Debian's mariadb-client.

mod http;
mod mysql;
mod postgres;
mod rounds;
mod sqlite;
mod stages;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use crate::matrix::Design;
use provision::PostgresSettings;
use receivers::signature::Secret;
use serde::Serialize;

pub use http::{HttpFigures, http_comparison, ok_router};
pub use mysql::mysql_ratio;
pub use postgres::postgres_ratio;
pub use rounds::{Round, Summary};
pub use sqlite::sqlite_ratio;
pub use stages::Stages;

use crate::fleet::{Fleet, WorkerSpec};
use crate::sender::{self, Progress, RetryPolicy, SenderConfig};
use crate::wire::Wire;
use crate::workload::{Workload, WorkloadConfig};

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
    /// Where the atomic design's time went in the workers, per delivery (the databases only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<Stages>,
    /// Where the reference's time went, per transaction (the sqlx loop; pgbench is not timed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_stages: Option<Stages>,
    /// The sqlx loop on one connection, transactions per second (SQLite only): SQLite's single
    /// writer with no lock to wait for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_connection_per_s: Option<f64>,
    /// The receivers' own SQLite transaction through SQLite's C API, one connection, in process,
    /// transactions per second (SQLite only): the stricter reference (sqlite.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direct_per_s: Option<f64>,
}

impl Ratio {
    fn new(reference_per_s: f64, hookbench_per_s: f64) -> Self {
        Self {
            reference_per_s,
            hookbench_per_s,
            ratio: hookbench_per_s / reference_per_s.max(1e-9),
            workers: None,
            reference_stages: None,
            one_connection_per_s: None,
            direct_per_s: None,
        }
    }

    /// The atomic design's rate against the reference's, with where its time went.
    fn of_atomic(reference_per_s: f64, atomic: Atomic) -> Self {
        Self { workers: Some(atomic.stages), ..Self::new(reference_per_s, atomic.per_s) }
    }
}

/// The atomic design's rate and where its time went.
struct Atomic {
    per_s: f64,
    stages: Stages,
}

/// Why a measurement could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// A tool is missing or failed.
    #[error("{tool}: {reason}")]
    Tool {
        /// pgbench, wrk or oha.
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
    /// The run's secret.
    #[error(transparent)]
    Secret(#[from] crate::wire::SecretError),
    /// A file could not be written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A credit-only workload with no faults, sized to take about `seconds` at `rate_hint` per second.
pub(crate) fn plain_credits(rate_hint: f64, seconds: u64) -> Workload {
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
        shard: crate::workload::Shard::WHOLE,
        start_at: None,
    }
}

/// The atomic design's deliveries per second on the database at `url` (schema ready): a fleet of
/// `config.workers` workers holding `config.connections` connections between them, sent credits
/// closed loop with `config.connections` in flight for about `config.seconds` (sized from
/// `rate_hint`, the reference's rate).
async fn atomic_rate(config: &PerfConfig, url: &str, rate_hint: f64) -> Result<Atomic, PerfError> {
    let secret = Secret::from_bytes(b"hookbench-perf".to_vec());
    let spec = WorkerSpec {
        exe: config.exe.clone(),
        design: Design::Atomic,
        database_url: url.to_string(),
        secrets: vec![secret.to_whsec()],
        work_delay: Duration::ZERO,
        isolation: None,
        inbox_workers: 0,
        max_connections: u32::try_from(config.connections.div_ceil(config.workers)).unwrap_or(8).max(2),
        log: None,
        inject_faults: false,
        pool_timeout: crate::fleet::WORKER_POOL_TIMEOUT,
    };
    let fleet = Fleet::start(spec, config.workers).await?;
    let urls = fleet.workers().iter().map(|w| w.webhook_url("perf")).collect();
    let workload = Arc::new(plain_credits(rate_hint * 0.6, config.seconds));
    let sent = sender::run(
        workload,
        urls,
        Arc::new(Wire::hookbench(&secret.to_whsec())?),
        closed_loop(config.connections),
        Arc::new(Progress::default()),
    )
    .await?;
    let totals = fleet.stages().await;
    fleet.stop().await?;
    let requests = totals.as_ref().ok().and_then(|t| t.get("request")).map_or(0, |r| r.count);
    Ok(Atomic {
        per_s: sent.counters.status_2xx as f64 / sent.elapsed.as_secs_f64(),
        stages: Stages::of(&totals?, requests),
    })
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
