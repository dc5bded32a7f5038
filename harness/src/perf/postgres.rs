//! The atomic design against pgbench running the same transaction, on identical fresh
//! databases of one Postgres server.

use std::sync::Arc;
use std::time::Duration;

use provision::PostgresServer;
use receivers::design::Design;
use receivers::signature::Secret;
use receivers::store::Isolation;

use super::{PerfConfig, PerfError, Ratio, closed_loop, number_after, plain_credits, tool_output};
use crate::fleet::{Fleet, WorkerSpec};
use crate::sender::{self, Progress};
use crate::wire::Wire;

/// The transaction the atomic design runs for a credit, as a pgbench script.
const PGBENCH_SCRIPT: &str = "\\set id random(1, 2000000000)
\\set acct random(0, 499)
BEGIN;
INSERT INTO processed_events (event_id) VALUES ('pgb_' || :id) ON CONFLICT DO NOTHING;
INSERT INTO accounts (id, credits) VALUES (:acct, 100) ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + EXCLUDED.credits;
INSERT INTO credit_ledger (event_id, account_id, amount) VALUES ('pgb_' || :id, :acct, 100);
COMMIT;
";

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
