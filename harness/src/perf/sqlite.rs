//! The atomic design on SQLite against the same transaction run straight through sqlx, each on
//! its own fresh database file: what HTTP, the signature, the JSON and the worker processes cost
//! over SQLite's own work. SQLite has no pgbench; the reference is this small loop, with the
//! receivers' connection settings (WAL, `synchronous = NORMAL`, the busy timeout) and their
//! schema.

use std::str::FromStr;
use std::time::{Duration, Instant};

use provision::SqliteFile;
use receivers::store::StoreOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::{PerfConfig, PerfError, Ratio, atomic_rate};

/// The transaction the atomic design runs for a credit on SQLite, statement by statement.
const KEY: &str =
    "INSERT INTO processed_events (event_id, body_sha256) VALUES (?1, ?2) ON CONFLICT DO NOTHING";
const CREDIT: &str = "INSERT INTO accounts (id, credits) VALUES (?1, ?2) \
     ON CONFLICT (id) DO UPDATE SET credits = credits + excluded.credits";
const LEDGER: &str = "INSERT INTO credit_ledger (event_id, account_id, amount) VALUES (?1, ?2, ?3)";

/// The reference loop's transactions per second against the atomic design's deliveries per
/// second, on SQLite.
pub async fn sqlite_ratio(config: &PerfConfig) -> Result<Ratio, PerfError> {
    let file = SqliteFile::create(None)?;
    crate::fleet::ready_schema(&file.url()).await?;
    let reference = reference_loop(&file.url(), config).await?;
    drop(file);

    let file = SqliteFile::create(None)?;
    crate::fleet::ready_schema(&file.url()).await?;
    let hookbench = atomic_rate(config, &file.url(), reference).await?;
    Ok(Ratio::new(reference, hookbench))
}

/// `config.connections` tasks running the transaction over as many pooled connections for
/// `config.seconds`; transactions per second.
async fn reference_loop(url: &str, config: &PerfConfig) -> Result<f64, PerfError> {
    let options = StoreOptions::default();
    let connect = SqliteConnectOptions::from_str(url)
        .map_err(receivers::store::StoreError::from)?
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(options.busy_timeout);
    let pool = SqlitePoolOptions::new()
        .max_connections(u32::try_from(config.connections).unwrap_or(32))
        .connect_with(connect)
        .await
        .map_err(receivers::store::StoreError::from)?;
    let start = Instant::now();
    let until = start + Duration::from_secs(config.seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..config.connections {
        let pool = pool.clone();
        // Each client counts its own transactions; the counts are added when they finish.
        tasks.spawn(async move {
            let mut i = 0u64;
            while Instant::now() < until {
                let id = format!("ref_{client}_{i}");
                let account = i64::try_from(i % 500).unwrap_or(0);
                let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
                sqlx::query(KEY).bind(&id).bind("").execute(&mut *tx).await?;
                sqlx::query(CREDIT).bind(account).bind(100_i64).execute(&mut *tx).await?;
                sqlx::query(LEDGER).bind(&id).bind(account).bind(100_i64).execute(&mut *tx).await?;
                tx.commit().await?;
                i += 1;
            }
            Ok::<u64, sqlx::Error>(i)
        });
    }
    let mut done = 0;
    while let Some(result) = tasks.join_next().await {
        done += result
            .map_err(|e| PerfError::Tool { tool: "sqlite reference", reason: e.to_string() })?
            .map_err(receivers::store::StoreError::from)?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    pool.close().await;
    Ok(done as f64 / elapsed)
}
