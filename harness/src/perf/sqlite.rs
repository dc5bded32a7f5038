//! The atomic design on SQLite against the same transaction run straight through sqlx, each on
//! its own fresh database file: what HTTP, the signature, the JSON and the worker processes cost
//! over SQLite's own work. SQLite has no pgbench; the reference is this small loop, with the
//! receivers' connection settings (WAL, `synchronous = NORMAL`, the busy timeout) and their
//! schema.
//!
//! Beside it, the stricter reference: the receivers' writer-thread transaction itself
//! ([`SqliteDirect`]) in a loop on one connection through SQLite's C API, on the calling thread.
//! sqlx reaches each connection through a thread of its own, a hop per statement string that the
//! receivers' writer thread does not pay; this loop does not pay it either, and one connection
//! never waits for SQLite's lock. It is the fastest this file takes the transaction here.

use std::str::FromStr;
use std::time::{Duration, Instant};

use futures_util::TryStreamExt;
use provision::SqliteFile;
use receivers::store::{SQLITE_CLAIM_CREDIT, SqliteDirect, StoreOptions};
use sqlx::Executor;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use super::stages::LoopTimer;
use super::{PerfConfig, PerfError, Ratio, Stages, atomic_rate};

/// The reference loop's transactions per second against the atomic design's deliveries per
/// second, on SQLite; the loop on one connection beside them.
pub async fn sqlite_ratio(config: &PerfConfig) -> Result<Ratio, PerfError> {
    let (reference, timer) =
        on_fresh_file(|url| reference_loop(url, config.connections, config.seconds)).await?;
    let (alone, _) = on_fresh_file(|url| reference_loop(url, 1, config.seconds)).await?;
    let direct = on_fresh_file(|url| direct_loop(url, config.seconds)).await?;
    // Sized from the faster reference: sized from the sqlx loop's rate, the atomic design, three
    // times as fast, finished its workload in a fifth of the measurement's seconds.
    let hint = reference.max(direct);
    let atomic = on_fresh_file(|url| async move { atomic_rate(config, &url, hint).await }).await?;
    let mut ratio = Ratio::of_atomic(reference, atomic);
    let transactions = timer.totals().get("transaction").map_or(0, |t| t.count);
    ratio.reference_stages = Some(Stages::of(timer.totals(), transactions));
    ratio.one_connection_per_s = Some(alone);
    ratio.direct_per_s = Some(direct);
    Ok(ratio)
}

/// `measure` on a fresh file with the receivers' schema, removed after.
async fn on_fresh_file<T, F, Fut>(measure: F) -> Result<T, PerfError>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<T, PerfError>>,
{
    let file = SqliteFile::create(None)?;
    crate::fleet::ready_schema(&file.url()).await.map_err(|e| e.0)?;
    let measured = measure(file.url()).await;
    drop(file);
    measured
}

/// The receivers' writer-thread transaction in a loop on one connection for `seconds`, on a
/// blocking thread: transactions per second.
async fn direct_loop(url: String, seconds: u64) -> Result<f64, PerfError> {
    let path = url.strip_prefix("sqlite://").unwrap_or(&url).to_string();
    let looped = tokio::task::spawn_blocking(move || {
        let conn = SqliteDirect::open(std::path::Path::new(&path), StoreOptions::default().busy_timeout)?;
        let start = Instant::now();
        let until = start + Duration::from_secs(seconds);
        let mut done = 0u64;
        while Instant::now() < until {
            let account = i64::try_from(done % 500).unwrap_or(0);
            conn.claim_credit(&format!("direct_{done}"), "", account, 100)?;
            done += 1;
        }
        Ok::<f64, receivers::store::StoreError>(done as f64 / start.elapsed().as_secs_f64())
    });
    let per_s =
        looped.await.map_err(|e| PerfError::Tool { tool: "sqlite C API loop", reason: e.to_string() })??;
    Ok(per_s)
}

/// `connections` tasks running the transaction over as many pooled connections for `seconds`:
/// transactions per second, and where their time went.
async fn reference_loop(
    url: String,
    connections: usize,
    seconds: u64,
) -> Result<(f64, LoopTimer), PerfError> {
    let options = StoreOptions::default();
    let connect = SqliteConnectOptions::from_str(&url)
        .map_err(receivers::store::StoreError::from)?
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(options.busy_timeout);
    let pool = SqlitePoolOptions::new()
        .max_connections(u32::try_from(connections).unwrap_or(32))
        .connect_with(connect)
        .await
        .map_err(receivers::store::StoreError::from)?;
    let start = Instant::now();
    let until = start + Duration::from_secs(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..connections {
        let pool = pool.clone();
        // Each client counts and times its own transactions; they are added when they finish.
        tasks.spawn(async move {
            let mut timer = LoopTimer::default();
            let mut i = 0u64;
            while Instant::now() < until {
                let id = format!("ref_{client}_{i}");
                let account = i64::try_from(i % 500).unwrap_or(0);
                let mut conn = pool.acquire().await?;
                let began = Instant::now();
                // The receivers' own statements, `COMMIT` with them, in their one round trip.
                let claim = sqlx::query(SQLITE_CLAIM_CREDIT).bind(&id).bind("").bind(account).bind(100_i64);
                conn.execute_many(claim).try_collect::<Vec<_>>().await?;
                timer.since("transaction", began);
                i += 1;
            }
            Ok::<(u64, LoopTimer), sqlx::Error>((i, timer))
        });
    }
    let (mut done, mut timer) = (0, LoopTimer::default());
    while let Some(result) = tasks.join_next().await {
        let (n, t) = result
            .map_err(|e| PerfError::Tool { tool: "sqlite reference", reason: e.to_string() })?
            .map_err(receivers::store::StoreError::from)?;
        done += n;
        timer.add(&t);
    }
    let elapsed = start.elapsed().as_secs_f64();
    pool.close().await;
    Ok((done as f64 / elapsed, timer))
}
