//! A bench's part of a report: its parameters, the databases' versions, and one row per backend
//! × design cell, with the judge's figures and verdict.

use crate::matrix::Design;
use crate::matrix::{Backend, Isolation};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::judge::{Class, Figures};

use super::{BehindCause, LatencyBuckets, Percentiles, Spectrum};

/// The run's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Parameters {
    /// Seed of every draw.
    pub seed: u32,
    /// Logical events.
    pub events: usize,
    /// Worker processes per cell.
    pub workers: usize,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Events per second (`null`: as fast as the concurrency allows).
    pub rate: Option<f64>,
    /// Simulated work per delivery.
    pub work_delay: String,
    /// Per-attempt timeout.
    pub timeout: String,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Postgres isolation.
    pub isolation: String,
    /// Inbox claim loops per worker.
    pub inbox_workers: usize,
    /// Fault chances.
    pub p_duplicate: f64,
    /// Chance a 2xx is lost.
    pub p_ack_lost: f64,
    /// Chance of a concurrent pair.
    pub p_concurrent: f64,
    /// Chance of a shuffle.
    pub p_shuffle: f64,
    /// Chaos during each cell (`--chaos`).
    #[serde(default)]
    pub chaos: Vec<Chaos>,
    /// Chance a credit event is poison (`--poison`).
    #[serde(default)]
    pub poison: f64,
}

/// Versions of what ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Versions {
    /// hookbench's version.
    pub hookbench: String,
    /// The Postgres server's version, when Postgres ran.
    pub postgres: Option<String>,
    /// SQLite's version, when SQLite ran.
    pub sqlite: Option<String>,
    /// Where Postgres came from.
    pub postgres_origin: Option<String>,
    /// The Postgres server's own default isolation level, as it names it (`read committed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_default_isolation: Option<String>,
    /// The MySQL or MariaDB server's version (`SELECT VERSION()`), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql: Option<String>,
    /// Where MySQL or MariaDB came from (`MYSQL_URL` or the container's image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_origin: Option<String>,
    /// MariaDB's `innodb_snapshot_isolation` (off in Debian's 10.11, on by default in newer releases): on,
    /// REPEATABLE READ refuses to write a row changed since its snapshot (an error, and a retry)
    /// instead of writing over it. Absent where the server has no such variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_snapshot_isolation: Option<bool>,
    /// The MySQL server's own default isolation level, as it names it (`REPEATABLE-READ`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql_default_isolation: Option<String>,
}

/// Latency percentiles in microseconds (docs/design.md's `latency_us`).
pub type LatencyUs = Percentiles;

/// Where a cell's wall time went, seconds, phase by phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Phases {
    /// A fresh database, migrated, and the observer's connection.
    pub provision_s: f64,
    /// The worker processes started and answering their health checks.
    pub fleet_start_s: f64,
    /// The sender's deliveries (and chaos).
    pub deliver_s: f64,
    /// Waiting for the receivers to finish what they stored (the inbox drained).
    pub settle_s: f64,
    /// The workers stopped.
    pub fleet_stop_s: f64,
    /// The checker reading the database.
    pub check_s: f64,
    /// The events' and plan changes' lines into the history, the database discarded.
    pub history_and_cleanup_s: f64,
}

/// A cell's two percentile spectra.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySpectrum {
    /// From each attempt's planned send (coordinated omission corrected).
    pub planned: Spectrum,
    /// From each attempt's actual send.
    pub actual: Spectrum,
}

/// The model's figures for the handler a design runs.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelFigures {
    /// The article's handler the design is compared with.
    pub handler: String,
    /// Deliveries in the model.
    pub deliveries: u64,
    /// 5xx in the model.
    pub status_5xx: u64,
    /// The correctness figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// One backend × design cell that ran.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Row {
    /// postgres or sqlite.
    pub backend: Backend,
    /// The design.
    pub design: Design,
    /// The isolation level the cell's transactions ran at, as `--isolation` spells it: the level
    /// asked for, else the database's own default as its server named it; `serialized` on SQLite,
    /// whose writers take turns whatever the level. Absent where hookbench did not start the
    /// database (`--targets`, shards) or in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// The level `--isolation` listed for this cell, which its name carries
    /// (`postgres@serializable/atomic`); absent when the cell ran at the database's own default,
    /// on SQLite, or in reports written before `--isolation` took a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Isolation>,
    /// Attempts sent.
    pub deliveries: u64,
    /// Attempts answered 2xx.
    pub status_2xx: u64,
    /// Attempts answered 4xx.
    pub status_4xx: u64,
    /// Attempts answered 5xx.
    pub status_5xx: u64,
    /// Of the 5xx, those whose answer named a database transaction conflict: a serialization
    /// failure or a deadlock, the isolation level refusing a transaction (the receivers'
    /// `hookbench-db-conflict` header), retried like any 5xx. (Reports before it existed say 0.)
    #[serde(default)]
    pub db_conflicts: u64,
    /// Attempts timed out: no answer within the timeout. (Reports before `acks_lost` existed
    /// counted the lost acks here too.)
    pub timeouts: u64,
    /// Attempts answered 2xx whose answer the sender dropped on purpose (the workload's lost
    /// acks), so that the event is sent again; counted in `status_2xx` too, never in `timeouts`.
    #[serde(default)]
    pub acks_lost: u64,
    /// Attempts that were retries.
    pub retries: u64,
    /// The judge's figures: dup_events, extra_applies, lost, never_applied, stale_writes,
    /// stale_accounts, ledger, expected.
    #[serde(flatten)]
    pub figures: Figures,
    /// The judge's verdict on the cell (`null` in reports written before hookbench kept it).
    #[serde(default)]
    pub verdict: Option<CellVerdict>,
    /// Latency from each attempt's planned time to its response (coordinated omission corrected).
    pub latency_us: LatencyUs,
    /// Latency from each answered attempt's actual send to its answer (since schema 2; before,
    /// every attempt's, no answer included).
    pub latency_actual_us: LatencyUs,
    /// The planned-send latencies by bucket (what `--metrics` exports as a histogram).
    #[serde(default)]
    pub latency_buckets: LatencyBuckets,
    /// The percentile spectrum of `latency_us` (from the planned send) and of
    /// `latency_actual_us`, from the full histograms: what report.html's latency charts draw.
    #[serde(default)]
    pub latency_spectrum: LatencySpectrum,
    /// Attempts per second over the delivery phase.
    pub throughput_per_s: f64,
    /// Events a second the plan is paced at (`--rate`; `null`: not measured, as in an older
    /// report or a merged sharded bench).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_rate: Option<f64>,
    /// The rate the plan was kept at: the planned rate times the events' first attempts' planned
    /// span over their sent span. Under the planned rate when the sender fell behind its plan,
    /// and the cell's latencies then include that wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rate: Option<f64>,
    /// Why it fell behind its plan, when it did (`null`: it kept the plan, or not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_cause: Option<BehindCause>,
    /// The cell's wall time: workers up, deliveries, quiet, workers down, checker.
    pub wall_s: f64,
    /// Attempts that found no receiver: no connection could be made (before schema 3, resets
    /// too).
    pub connect_errors: u64,
    /// Attempts whose connection broke before a whole answer came (since schema 3).
    #[serde(default)]
    pub resets: u64,
    /// Deliveries given up after the attempt limit.
    pub gave_up: u64,
    /// Sum of ledger rows' amounts (equals `ledger` unless something was half written).
    pub ledger_rows: i64,
    /// Inbox dead letters.
    pub dead_letters: u64,
    /// Ledger rows whose event id is no event of the workload (another run's, in a shared
    /// database).
    #[serde(default)]
    pub unknown_events: u64,
    /// Bodies refused because their id was already stored with another body (read by the
    /// checker from `id_conflicts`; 0 in a bench, whose events keep one body each).
    #[serde(default)]
    pub id_conflicts: u64,
    /// What chaos did during the cell.
    #[serde(default)]
    pub chaos: ChaosCounts,
    /// Poison events in the workload (not in `lost` or `expected`).
    #[serde(default)]
    pub poisoned: u64,
    /// Poison events applied anyway (must be 0).
    #[serde(default)]
    pub poison_applied: u64,
    /// Attempts of poison events.
    #[serde(default)]
    pub poison_attempts: u64,
    /// Of those, answered with anything but a 2xx.
    #[serde(default)]
    pub poison_non_2xx: u64,
    /// The model's figures for the same seed.
    pub model: Option<ModelFigures>,
    /// Where the cell's wall time went.
    #[serde(default)]
    pub phases: Phases,
}

/// The judge's verdict on one cell, as the verdict grid shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CellVerdict {
    /// Every event applied exactly once, nothing half written, the ledger what was expected.
    pub exactly_once: bool,
    /// Every account on the latest version acknowledged for it.
    pub latest_state: bool,
    /// The anomaly classes found that fail a cell.
    pub failing: Vec<Class>,
    /// The verdict's evidence in one line.
    pub summary: String,
}

/// A cell that did not run, or broke.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CellNote {
    /// postgres or sqlite.
    pub backend: Backend,
    /// The design.
    pub design: Design,
    /// The level `--isolation` listed for the cell, as on [`Row::level`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Isolation>,
    /// Why.
    pub reason: String,
}

/// A cell's name, in histories, witnesses, JUnit cases and thresholds' messages:
/// `backend/design`, or `backend@level/design` when `--isolation` listed the level.
pub fn cell_name(backend: Backend, design: Design, level: Option<Isolation>) -> String {
    match level {
        Some(level) => format!("{backend}@{level}/{design}"),
        None => format!("{backend}/{design}"),
    }
}

impl Row {
    /// The cell's name (see [`cell_name`]).
    pub fn cell(&self) -> String {
        cell_name(self.backend, self.design, self.level)
    }

    /// The column of the matrix the row sits in.
    pub fn column(&self) -> Column {
        Column { backend: self.backend, level: self.level }
    }
}

impl CellNote {
    /// The cell's name (see [`cell_name`]).
    pub fn cell(&self) -> String {
        cell_name(self.backend, self.design, self.level)
    }

    /// The column of the matrix the cell would have sat in.
    pub fn column(&self) -> Column {
        Column { backend: self.backend, level: self.level }
    }
}

/// A column of the matrix: a backend, at a level `--isolation` listed or at its own default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Column {
    /// The backend.
    pub backend: Backend,
    /// The level listed, none for the database's own default.
    pub level: Option<Isolation>,
}

impl std::fmt::Display for Column {
    /// `postgres`, or `postgres serializable` when a level was listed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.level {
            Some(level) => write!(f, "{} {level}", self.backend),
            None => write!(f, "{}", self.backend),
        }
    }
}

impl super::BenchBody {
    /// The row of a cell, when it ran.
    pub fn row(&self, column: Column, design: Design) -> Option<&Row> {
        self.rows.iter().find(|r| r.column() == column && r.design == design)
    }

    /// The columns that have a row: Postgres first, each backend's default before the levels
    /// listed, weakest first.
    pub fn columns(&self) -> Vec<Column> {
        let rank = |c: &Column| (Backend::KNOWN.iter().position(|b| *b == c.backend), c.level);
        let mut columns: Vec<Column> = self.rows.iter().map(Row::column).collect();
        columns.sort_by_key(rank);
        columns.dedup();
        columns
    }

    /// The designs that have a row, in docs/design.md's order.
    pub fn designs(&self) -> Vec<Design> {
        Design::ALL.into_iter().filter(|d| self.rows.iter().any(|r| r.design == *d)).collect()
    }

    /// The backends that have a row, Postgres first.
    pub fn backends(&self) -> Vec<Backend> {
        Backend::KNOWN.iter().copied().filter(|b| self.rows.iter().any(|r| r.backend == *b)).collect()
    }
}

/// When and how often a failed attempt is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct RetryPolicy {
    /// The first backoff ceiling.
    #[serde(with = "humantime_serde_compat")]
    #[schemars(with = "String")]
    pub base: Duration,
    /// The largest backoff ceiling.
    #[serde(with = "humantime_serde_compat")]
    #[schemars(with = "String")]
    pub cap: Duration,
    /// Attempts per delivery, the first included; then it is given up.
    pub max_attempts: u32,
}

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

/// Durations as `"10ms"` in reports.
mod humantime_serde_compat {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(backend: &str, level: Option<&str>) -> Row {
        let latency = serde_json::json!({"p50":1,"p90":1,"p99":1,"p999":1,"max":1,"count":1});
        serde_json::from_value(serde_json::json!({"backend":backend,"design":"atomic","level":level,
            "deliveries":1,"status_2xx":1,"status_4xx":0,"status_5xx":0,"timeouts":0,"retries":0,
            "dup_events":0,"extra_applies":0,"lost":0,"stale_writes":0,"stale_accounts":0,"ledger":1,
            "expected":1,"latency_us":latency,"latency_actual_us":latency,"throughput_per_s":1.0,
            "wall_s":1.0,"connect_errors":0,"gave_up":0,"ledger_rows":1,"dead_letters":0,"model":null}))
        .expect("a row")
    }

    /// A cell listed at a level carries it in its name; one at its database's own level keeps
    /// the name it always had, so older histories and reports still match.
    #[test]
    fn a_cell_is_named_by_its_level_only_when_one_was_listed() {
        assert_eq!(row("postgres", None).cell(), "postgres/atomic");
        assert_eq!(row("postgres", Some("serializable")).cell(), "postgres@serializable/atomic");
        assert_eq!(row("mysql", Some("read-committed")).column().to_string(), "mysql read-committed");
        assert_eq!(row("sqlite", None).column().to_string(), "sqlite");
    }

    /// Columns: Postgres first, each backend's default before its listed levels, weakest first,
    /// each once; none without rows.
    #[test]
    fn columns_are_ordered_by_backend_then_level() {
        let parameters = serde_json::from_value(serde_json::json!({"seed":1,"events":10,"workers":1,
            "concurrency":2,"rate":null,"work_delay":"0s","timeout":"1s",
            "retry":{"base":"10ms","cap":"1s","max_attempts":10},"isolation":"read-committed,serializable",
            "inbox_workers":2,"p_duplicate":0.0,"p_ack_lost":0.0,"p_concurrent":0.0,"p_shuffle":0.0}))
        .expect("parameters");
        let mut body = crate::report::model::BenchBody::new(parameters);
        assert!(body.columns().is_empty());
        body.rows = vec![
            row("mysql", Some("serializable")),
            row("sqlite", None),
            row("postgres", Some("serializable")),
            row("postgres", Some("read-committed")),
            row("postgres", None),
            row("postgres", Some("serializable")),
        ];
        let names: Vec<String> = body.columns().iter().map(Column::to_string).collect();
        assert_eq!(
            names,
            ["postgres", "postgres read-committed", "postgres serializable", "sqlite", "mysql serializable"]
        );
        let serializable = Column { backend: Backend::Postgres, level: Some(Isolation::Serializable) };
        assert!(body.row(serializable, Design::Atomic).is_some());
        assert!(body.row(Column { backend: Backend::Mysql, level: None }, Design::Atomic).is_none());
    }
}
