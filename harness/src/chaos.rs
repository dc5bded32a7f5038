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

use receivers::store::{Backend, Store};
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, watch};

use crate::fleet::{Fleet, FleetError};
use crate::workload::rng::keyed;

/// What chaos does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ChaosKind {
    /// SIGKILL a random worker process and restart it.
    KillWorker,
    /// End the receivers' Postgres connections.
    PgTerminate,
}

/// One `--chaos KIND=RATE`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Chaos {
    /// What.
    pub kind: ChaosKind,
    /// How many times a second.
    pub rate: f64,
}

impl fmt::Display for Chaos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ChaosKind::KillWorker => "kill-worker",
            ChaosKind::PgTerminate => "pg-terminate",
        };
        write!(f, "{kind}={}", self.rate)
    }
}

impl FromStr for Chaos {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, rate) =
            s.split_once('=').ok_or_else(|| format!("`{s}`: expected KIND=RATE, such as kill-worker=0.5"))?;
        let kind = match kind {
            "kill-worker" => ChaosKind::KillWorker,
            "pg-terminate" => ChaosKind::PgTerminate,
            other => return Err(format!("unknown chaos `{other}` (expected kill-worker or pg-terminate)")),
        };
        let rate: f64 = rate.parse().map_err(|_| format!("`{rate}` is not a rate (strikes per second)"))?;
        if !(rate > 0.0 && rate <= 100.0) {
            return Err(format!("chaos rate {rate} is outside (0, 100] strikes per second"));
        }
        Ok(Chaos { kind, rate })
    }
}

/// What chaos did in one cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChaosCounts {
    /// Workers SIGKILLed (each restarted).
    pub worker_kills: u64,
    /// Receiver connections ended by `pg_terminate_backend`.
    pub pg_terminations: u64,
    /// Times the termination ran (whether or not a connection was open).
    pub pg_terminate_rounds: u64,
}

/// Why chaos stopped short.
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// A killed worker could not be restarted.
    #[error(transparent)]
    Fleet(#[from] FleetError),
    /// The termination query failed.
    #[error("pg_terminate_backend: {0}")]
    Store(#[from] receivers::store::StoreError),
    /// A chaos task panicked or was cancelled.
    #[error("chaos task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Strikes until `stop` turns true; returns what it did.
pub async fn run(
    chaos: Vec<Chaos>,
    seed: u32,
    backend: Backend,
    fleet: Arc<Mutex<Fleet>>,
    store: Store,
    stop: watch::Receiver<bool>,
) -> Result<ChaosCounts, ChaosError> {
    let mut counts = ChaosCounts::default();
    let mut lanes = tokio::task::JoinSet::new();
    for c in chaos {
        if c.kind == ChaosKind::PgTerminate && backend != Backend::Postgres {
            continue; // SQLite has no connections to end
        }
        let (fleet, store, mut stop) = (fleet.clone(), store.clone(), stop.clone());
        lanes.spawn(async move {
            let period = Duration::from_secs_f64(1.0 / c.rate);
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
                        counts.pg_terminations += store.terminate_receivers().await?;
                        counts.pg_terminate_rounds += 1;
                    }
                }
            }
            Ok::<_, ChaosError>(counts)
        });
    }
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
        assert!("kill-worker".parse::<Chaos>().expect_err("invalid").contains("KIND=RATE"));
        assert!("flood=1".parse::<Chaos>().expect_err("invalid").contains("unknown chaos"));
        assert!("kill-worker=0".parse::<Chaos>().expect_err("invalid").contains("outside"));
        assert!("kill-worker=x".parse::<Chaos>().expect_err("invalid").contains("not a rate"));
    }
}
