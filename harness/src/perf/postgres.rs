//! The atomic design against pgbench running the same transaction, on identical fresh
//! databases of one Postgres server.

use provision::PostgresServer;

use super::{PerfConfig, PerfError, Ratio, atomic_rate, number_after, tool_output};

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
    let atomic = atomic_rate(config, &db.url, pgbench).await?;
    db.drop_database().await?;
    Ok(Ratio::of_atomic(pgbench, atomic))
}
