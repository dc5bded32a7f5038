//! Chaos during a bench: worker processes SIGKILLed and restarted, and receivers' Postgres
//! connections ended with `pg_terminate_backend`, while the sender delivers.
//!
//! `--chaos kill-worker=RATE` kills a worker RATE times a second (which one is a seeded draw) and
//! restarts it on the same address; `--chaos pg-terminate=RATE` ends every receiver connection to
//! the cell's database RATE times a second (Postgres cells only). The first strike comes one
//! period after the sender starts; the last before it finishes. The checker's figures then show
//! what each design lost or doubled.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::matrix::Backend;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tokio::sync::{Mutex, watch};

use crate::fleet::{Fleet, FleetError};
/// The report's types: the chaos asked for and what it did, as a report records them.
pub use crate::report::model::{Chaos, ChaosCounts, ChaosKind};
use crate::workload::rng::keyed;

/// The Postgres `application_name` the receivers connect with, so that chaos ends their
/// connections and spares the harness's own (held to the receivers' by a test).
pub const RECEIVER_APPLICATION: &str = "hookbench-receiver";

impl fmt::Display for Chaos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ChaosKind::KillWorker => "kill-worker",
            ChaosKind::PgTerminate => "pg-terminate",
        };
        write!(f, "{kind}={}", self.rate)
    }
}

/// Strikes per second: at least one every 1000 s (a slower one never strikes in a run; 1e-300
/// once made a period no `Duration` holds, and the lane panicked), at most 100.
pub const RATE: std::ops::RangeInclusive<f64> = 0.001..=100.0;

/// A `--chaos` value that is not `KIND=RATE` within bounds.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadChaos {
    /// No `=`.
    #[error("`{0}`: expected KIND=RATE, such as kill-worker=0.5")]
    NotKindRate(String),
    /// A kind there is not.
    #[error("unknown chaos `{0}` (expected kill-worker or pg-terminate)")]
    UnknownKind(String),
    /// The rate is not a number.
    #[error("`{0}` is not a rate (strikes per second)")]
    NotARate(String),
    /// The rate is outside [`RATE`].
    #[error("chaos rate {0} is outside {lo} to {hi} strikes per second", lo = RATE.start(), hi = RATE.end())]
    OutOfBounds(f64),
}

impl FromStr for Chaos {
    type Err = BadChaos;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, rate) = s.split_once('=').ok_or_else(|| BadChaos::NotKindRate(s.to_string()))?;
        let kind = match kind {
            "kill-worker" => ChaosKind::KillWorker,
            "pg-terminate" => ChaosKind::PgTerminate,
            other => return Err(BadChaos::UnknownKind(other.to_string())),
        };
        let rate: f64 = rate.parse().map_err(|_| BadChaos::NotARate(rate.to_string()))?;
        if !RATE.contains(&rate) {
            return Err(BadChaos::OutOfBounds(rate));
        }
        Ok(Chaos { kind, rate })
    }
}

/// Why chaos stopped short.
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// A killed worker could not be restarted.
    #[error(transparent)]
    Fleet(#[from] FleetError),
    /// Ending the receivers' connections failed.
    #[error("ending the receivers' Postgres connections: {0}")]
    Terminate(sqlx::Error),
    /// A chaos task panicked or was cancelled.
    #[error("the chaos task stopped")]
    Task(#[from] tokio::task::JoinError),
}

/// A connection of chaos's own to the cell's Postgres database, introduced as `hookbench-chaos`
/// (so it does not end itself) and patient, as the harness's connections are.
async fn connect(database_url: &str) -> Result<PgPool, ChaosError> {
    let options = PgConnectOptions::from_str(database_url)
        .map_err(ChaosError::Terminate)?
        .application_name("hookbench-chaos");
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options)
        .await
        .map_err(ChaosError::Terminate)
}

/// Ends every receiver connection to the database (`pg_terminate_backend`); how many.
async fn terminate_receivers(pool: &PgPool) -> Result<u64, ChaosError> {
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()",
    )
    .bind(RECEIVER_APPLICATION)
    .fetch_all(pool)
    .await
    .map_err(ChaosError::Terminate)?;
    Ok(ended.into_iter().filter(|&e| e).count() as u64)
}

/// Strikes until `stop` turns true; returns what it did. `database_url` is the cell's database
/// (for `pg-terminate`).
pub async fn run(
    chaos: Vec<Chaos>,
    seed: u32,
    backend: Backend,
    fleet: Arc<Mutex<Fleet>>,
    database_url: String,
    stop: watch::Receiver<bool>,
) -> Result<ChaosCounts, ChaosError> {
    let mut counts = ChaosCounts::default();
    let mut lanes = tokio::task::JoinSet::new();
    let terminates = backend == Backend::Postgres && chaos.iter().any(|c| c.kind == ChaosKind::PgTerminate);
    let pg = if terminates { Some(connect(&database_url).await?) } else { None };
    for c in chaos {
        let pg = match (c.kind, &pg) {
            (ChaosKind::PgTerminate, None) => continue, // SQLite has no connections to end
            (_, pg) => pg.clone(),
        };
        let (fleet, mut stop) = (fleet.clone(), stop.clone());
        lanes.spawn(async move {
            // The rate is within RATE, so the period fits; a saturating conversion all the same.
            let period = Duration::try_from_secs_f64(1.0 / c.rate).unwrap_or(Duration::MAX);
            let mut counts = ChaosCounts::default();
            for strike in 0u64.. {
                tokio::select! {
                    () = tokio::time::sleep(period) => {}
                    _ = stop.changed() => break,
                }
                if *stop.borrow() {
                    break;
                }
                match c.kind {
                    ChaosKind::KillWorker => {
                        let mut fleet = fleet.lock().await;
                        let n = fleet.workers().len();
                        let draw = keyed(seed, &[&"chaos", &"kill-worker", &strike]);
                        let i = ((draw * n as f64) as usize).min(n - 1);
                        fleet.kill(i).await?;
                        counts.worker_kills += 1;
                        fleet.restart(i).await?;
                    }
                    ChaosKind::PgTerminate => {
                        if let Some(pg) = &pg {
                            counts.pg_terminations += terminate_receivers(pg).await?;
                            counts.pg_terminate_rounds += 1;
                        }
                    }
                }
            }
            Ok::<_, ChaosError>(counts)
        });
    }
    drop(pg);
    while let Some(lane) = lanes.join_next().await {
        let c = lane??;
        counts.worker_kills += c.worker_kills;
        counts.pg_terminations += c.pg_terminations;
        counts.pg_terminate_rounds += c.pg_terminate_rounds;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chaos_flags_parse_and_refuse_nonsense() {
        let c: Chaos = "kill-worker=0.5".parse().expect("valid");
        assert_eq!(c, Chaos { kind: ChaosKind::KillWorker, rate: 0.5 });
        assert_eq!(c.to_string(), "kill-worker=0.5");
        assert_eq!("pg-terminate=2".parse::<Chaos>().expect("valid").kind, ChaosKind::PgTerminate);
        assert!("kill-worker".parse::<Chaos>().expect_err("invalid").to_string().contains("KIND=RATE"));
        assert!("flood=1".parse::<Chaos>().expect_err("invalid").to_string().contains("unknown chaos"));
        assert!("kill-worker=0".parse::<Chaos>().expect_err("invalid").to_string().contains("outside"));
        assert!("kill-worker=x".parse::<Chaos>().expect_err("invalid").to_string().contains("not a rate"));
        assert!(
            "kill-worker=1e-300"
                .parse::<Chaos>()
                .expect_err("too slow")
                .to_string()
                .contains("outside 0.001 to 100")
        );
        assert!("kill-worker=NaN".parse::<Chaos>().expect_err("NaN").to_string().contains("outside"));
        assert!("kill-worker=0.001".parse::<Chaos>().is_ok());
    }
}
