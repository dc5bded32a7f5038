//! The atomic design against pgbench running the same transaction, on identical fresh
//! databases of one Postgres server.

use provision::PostgresServer;

use super::{PerfConfig, PerfError, Ratio, atomic_rate, number_after, tool_output};

/// The statement the atomic design runs for a credit, as a pgbench script: the receivers' own
/// SQL with pgbench's variables for its parameters (a fresh event id each time, one of 500
/// accounts, a body hash of the receivers' length).
fn pgbench_script() -> String {
    // Highest first, so that a `$1` is never read out of a `$10`.
    let statement = receivers::store::POSTGRES_CLAIM_CREDIT
        .replace("$4", "100")
        .replace("$3", ":acct")
        .replace("$2", &format!("'{}'", "0".repeat(64)))
        .replace("$1", "'pgb_' || :id");
    format!("\\set id random(1, 2000000000)\n\\set acct random(0, 499)\n{statement};\n")
}

/// pgbench's transaction rate against hookbench's atomic design, on Postgres.
pub async fn postgres_ratio(config: &PerfConfig) -> Result<Ratio, PerfError> {
    let server = PostgresServer::start(&config.postgres).await?;
    // pgbench on one fresh database.
    let db = server.fresh_database().await?;
    crate::fleet::ready_schema(&db.url).await.map_err(|e| e.0)?;
    let script = tempfile::NamedTempFile::new()?;
    std::fs::write(script.path(), pgbench_script())?;
    let text = tool_output(
        "pgbench",
        tokio::process::Command::new("pgbench")
            // Prepared, as sqlx sends the receivers' statements: parsed once per connection.
            .args(["-n", "-M", "prepared", "-j", "2", "-c", &config.connections.to_string()])
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
    crate::fleet::ready_schema(&db.url).await.map_err(|e| e.0)?;
    let atomic = atomic_rate(config, &db.url, pgbench).await?;
    db.drop_database().await?;
    Ok(Ratio::of_atomic(pgbench, atomic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_runs_the_receivers_statement_with_its_own_variables() {
        let script = pgbench_script();
        let mut lines = script.lines();
        assert_eq!(lines.next(), Some("\\set id random(1, 2000000000)"));
        assert_eq!(lines.next(), Some("\\set acct random(0, 499)"));
        let statement = lines.next().expect("the statement");
        assert_eq!(lines.next(), None, "one statement, on one line: {script}");
        assert!(statement.starts_with("WITH claim AS (INSERT INTO processed_events"), "{statement}");
        assert!(!statement.contains('$'), "every parameter replaced: {statement}");
        assert_eq!(statement.matches(":acct").count(), 2, "{statement}");
        assert!(statement.ends_with(';'), "{statement}");
    }
}
