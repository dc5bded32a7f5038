//! `hookbench bench`: the matrix of backend × design cells, each run for real.
//!
//! A cell ([`cell`]): a fresh database (migrated once, before any worker starts), W worker
//! processes of `hookbench serve` started from hookbench's own executable and health-checked,
//! the delivery plan sent by the sender (with chaos beside it when asked), a wait until the
//! receivers are quiet (the inbox drained), the workers stopped, then the checker reading the
//! database. A backend that cannot be had (no Docker, no `DATABASE_URL`) has its cells reported as
//! skipped with the reason; a cell that fails midway is reported as broken. Failure experiments
//! asked for run after the matrix, on its Postgres server.

mod cell;
mod shard;

pub(crate) use shard::run_shard;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::matrix::Design;
use crate::matrix::{Backend, Isolation};
use provision::{MysqlServer, MysqlSettings, PostgresServer, PostgresSettings, ProvisionError, Server};

use crate::chaos::Chaos;
use crate::history::History;
use crate::model;
use crate::progress::Bars;
use crate::report::{
    BenchBody, CellNote, Header, HistoryFile, Parameters, Report, RunBody, Versions, cell_name,
};
use crate::sender::SenderConfig;
use crate::wire::Whsec;
use crate::workload::Shard;
use crate::workload::{Workload, WorkloadConfig, WorkloadError};

/// Everything a bench run needs.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Backends to run.
    pub backends: Vec<Backend>,
    /// Designs to run on each.
    pub designs: Vec<Design>,
    /// The workload.
    pub workload: WorkloadConfig,
    /// Worker processes per cell.
    pub workers: usize,
    /// How the sender sends.
    pub sender: SenderConfig,
    /// Simulated work per delivery.
    pub work_delay: Duration,
    /// The isolation levels to run each backend that has them at, each its own cells; empty:
    /// once, at each database's own default. SQLite runs once whatever is listed.
    pub isolation: Vec<Isolation>,
    /// Inbox claim loops per worker.
    pub inbox_workers: usize,
    /// Pool size per worker.
    pub max_connections: u32,
    /// Where Postgres comes from.
    pub postgres: PostgresSettings,
    /// Where MySQL or MariaDB comes from (`MYSQL_URL`, or a container).
    pub mysql: MysqlSettings,
    /// Keep each cell's database.
    pub keep: bool,
    /// The executable whose `serve` runs the workers.
    pub exe: PathBuf,
    /// The run's directory (report.json, worker logs, kept SQLite files).
    pub out: PathBuf,
    /// The run's id.
    pub run_id: String,
    /// How long to wait for the receivers to go quiet after the last delivery.
    pub quiet_timeout: Duration,
    /// Draw progress bars (on a terminal).
    pub progress: bool,
    /// Deliver to receivers that are already running instead of starting a fleet.
    pub targets: Option<Targets>,
    /// Chaos during each cell (workers killed, Postgres connections ended).
    pub chaos: Vec<Chaos>,
    /// Chance a credit event is poison: sent with a negative amount, which passes the signature
    /// and the wire format and which the side effect refuses every time.
    pub poison: f64,
    /// Failure experiments to run after the matrix, into the same report.
    pub experiments: Vec<crate::experiments::Kind>,
    /// Compress the history whatever its size.
    pub history_compress: bool,
    /// Witnesses per anomaly class and cell in the report.
    pub witnesses: usize,
    /// Print where each cell's time went, phase by phase, and how long Postgres took to be ready.
    pub verbose: bool,
    /// Send only this shard of the plan to the `--targets` and write a partial result.
    pub shard: Option<Shard>,
}

/// Receivers hookbench did not start (`--targets`), of one design, sharing one database.
#[derive(Debug, Clone)]
pub struct Targets {
    /// Their webhook URLs.
    pub urls: Vec<String>,
    /// The database they share (the checker reads it; it is not dropped).
    pub database_url: String,
    /// The secret they verify with.
    pub secret: Whsec,
}

/// A combination of settings a bench cannot run with, named by its flag.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The workload's parameters are out of range.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// `--poison` is not a chance.
    #[error("--poison must be a chance between 0 and 1, not {0}")]
    Poison(f64),
    /// `--chaos` against receivers hookbench did not start.
    #[error("--chaos needs workers hookbench starts itself; it cannot kill --targets")]
    ChaosWithTargets,
    /// `--targets` with other than one design.
    #[error("--targets needs exactly one --designs: the design the running receivers implement")]
    TargetsDesigns,
    /// Nothing to run.
    #[error("--backends and --designs leave no cell to run")]
    NoCell,
    /// The history could not be written.
    #[error("writing the run's history")]
    History(#[source] std::io::Error),
    /// `--shard` without receivers to share.
    #[error(
        "--shard sends part of a run to receivers every shard shares: it needs --targets and --database-url"
    )]
    ShardWithoutTargets,
    /// `--start-at` in a run that is not sharded.
    #[error("--start-at aligns the shards of a sharded run: give it with --shard or --shards")]
    StartAtWithoutShard,
    /// `--secret` is not a Standard Webhooks secret.
    #[error("--secret: {0}")]
    Secret(#[from] crate::wire::SecretError),
    /// `--shard` with what only a whole run does.
    #[error("--shard cannot run --experiments: run them in a bench of their own")]
    ShardExperiments,
    /// A level listed twice would run the same cells twice under one name.
    #[error("--isolation lists {0} twice")]
    IsolationTwice(Isolation),
    /// `--isolation` against receivers hookbench did not start.
    #[error("--isolation sets the workers hookbench starts; --targets run at their own level")]
    IsolationWithTargets,
}

impl BenchConfig {
    /// Checks that the settings can run together; every refusal names its flag.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.workload.validate()?;
        if !(0.0..=1.0).contains(&self.poison) {
            return Err(ConfigError::Poison(self.poison));
        }
        if let Some(&twice) =
            self.isolation.iter().enumerate().find_map(|(i, l)| self.isolation[..i].contains(l).then_some(l))
        {
            return Err(ConfigError::IsolationTwice(twice));
        }
        if self.targets.is_some() {
            if !self.chaos.is_empty() {
                return Err(ConfigError::ChaosWithTargets);
            }
            if !self.isolation.is_empty() {
                return Err(ConfigError::IsolationWithTargets);
            }
            if self.designs.len() != 1 {
                return Err(ConfigError::TargetsDesigns);
            }
        }
        if self.sender.start_at.is_some() && self.shard.is_none() {
            return Err(ConfigError::StartAtWithoutShard);
        }
        if self.shard.is_some() {
            if self.targets.is_none() {
                return Err(ConfigError::ShardWithoutTargets);
            }
            if !self.experiments.is_empty() {
                return Err(ConfigError::ShardExperiments);
            }
        }
        if self.backends.is_empty() || self.designs.is_empty() {
            return Err(ConfigError::NoCell);
        }
        Ok(())
    }

    /// The levels `backend`'s cells run at: each listed one, or once at the database's own
    /// default (`None`); SQLite, whose writers take turns whatever the level, runs once.
    fn levels(&self, backend: Backend) -> Vec<Option<Isolation>> {
        if backend == Backend::Sqlite || self.isolation.is_empty() {
            vec![None]
        } else {
            self.isolation.iter().copied().map(Some).collect()
        }
    }
}

/// A secret for one run (any key works; none leaves the machine).
fn run_secret(seed: u32) -> Whsec {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    Whsec::from_key(format!("hookbench-{seed}-{}-{nanos}", std::process::id()).as_bytes())
}

/// Runs the matrix and returns the report (not yet written). Fails only on settings that cannot
/// run; a cell that cannot is in the report as skipped or broken.
pub async fn run(config: &BenchConfig) -> Result<Report, ConfigError> {
    config.validate()?;
    let mut workload = Workload::generate(&config.workload)?;
    workload.poison(config.poison);
    let workload = Arc::new(workload);
    let model_rows = model::handler_table(&workload);
    let bars = Bars::new(config.progress);
    let mut header = Header::new(config.run_id.clone());
    let mut report = BenchBody::new(parameters(config));
    let _ = std::fs::create_dir_all(config.out.join("logs"));
    let planned: u64 = workload.groups.iter().map(|g| u64::from(g.copies)).sum();
    let cells =
        config.backends.iter().map(|&b| config.levels(b).len() * config.designs.len()).sum::<usize>() as u64;
    let compress = config.history_compress || planned * cells > crate::history::COMPRESS_PAST_ATTEMPTS;
    let history = History::create(&config.out, compress).map_err(ConfigError::History)?;
    // The matrix's Postgres server, kept for the experiments when there are any.
    let mut kept_server = None;
    for &backend in &config.backends {
        let server = match timed(start_server(config, backend, &mut header)).await {
            (Ok(server), took) => {
                if let Some(server) = server.as_ref().filter(|_| config.verbose) {
                    bars.say(&format!("{backend} ready in {took:.2} s ({})", server.origin()));
                }
                server
            }
            (Err(e), _) => {
                let reason = crate::reason::reason(&e);
                bars.say(&format!("skipping {backend}: {reason}"));
                for level in config.levels(backend) {
                    for &design in &config.designs {
                        report.skipped.push(CellNote { backend, design, level, reason: reason.clone() });
                    }
                }
                continue;
            }
        };
        for level in config.levels(backend) {
            // Unknown on a database hookbench did not start.
            let isolation =
                config.targets.is_none().then(|| cell_isolation(level, backend, &header.versions)).flatten();
            for &design in &config.designs {
                let model = model::handler_for_design(design)
                    .and_then(|h| model_rows.iter().find(|r| r.handler == h));
                let tap = history.tap(cell_name(backend, design, level));
                let cell =
                    cell::Cell { config, backend, design, level, workload: &workload, model, history: tap };
                match cell.run(server.as_ref(), &bars).await {
                    Ok((mut row, db_version)) => {
                        row.isolation.clone_from(&isolation);
                        row.level = level;
                        let slot = match backend {
                            Backend::Postgres => &mut header.versions.postgres,
                            Backend::Sqlite => &mut header.versions.sqlite,
                            Backend::Mysql => &mut header.versions.mysql,
                        };
                        if slot.is_none() {
                            *slot = db_version;
                        }
                        report.rows.push(row);
                    }
                    Err(e) => {
                        let reason = crate::reason::reason(&e);
                        let name = cell_name(backend, design, level);
                        bars.say(&format!("{name} broke: {reason}"));
                        report.broken.push(CellNote { backend, design, level, reason });
                    }
                }
            }
        }
        if let Some(Server::Postgres(pg)) = server.filter(|_| !config.experiments.is_empty()) {
            kept_server = Some(pg);
        }
    }
    let (path, lines) = history.finish().map_err(ConfigError::History)?;
    header.history = Some(HistoryFile::written(&path, lines));
    match crate::explain::report_witnesses(&config.out, config.witnesses) {
        Ok(w) => report.witnesses = w,
        Err(e) => bars.say(&format!("the witnesses could not be read back: {}", crate::reason::reason(&e))),
    }
    if !config.experiments.is_empty() {
        bars.say(&format!("running the experiments {:?}", config.experiments));
        let mut setup = crate::experiments::Setup::new(config.backends.clone(), config.postgres.clone());
        if let Some(server) = kept_server {
            setup = setup.with_server(server);
        }
        let log = Some(config.out.join("logs").join("crash.log"));
        report.experiments = crate::experiments::Experiments::run(
            &config.experiments,
            &setup,
            config.workload.seed,
            config.exe.clone(),
            log,
        )
        .await;
    }
    Ok(Report { header, body: RunBody::Bench(report) })
}

pub(crate) fn parameters(config: &BenchConfig) -> Parameters {
    let w = &config.workload;
    Parameters {
        seed: w.seed,
        events: w.events,
        workers: config.workers,
        concurrency: config.sender.concurrency,
        rate: config.sender.rate,
        work_delay: humantime::format_duration(config.work_delay).to_string(),
        timeout: humantime::format_duration(config.sender.timeout).to_string(),
        retry: config.sender.retry,
        isolation: if config.isolation.is_empty() {
            "default".to_string()
        } else {
            config.isolation.iter().map(|l| l.as_str()).collect::<Vec<_>>().join(",")
        },
        inbox_workers: config.inbox_workers,
        p_duplicate: w.p_duplicate,
        p_ack_lost: w.p_ack_lost,
        p_concurrent: w.p_concurrent,
        p_shuffle: w.p_shuffle,
        chaos: config.chaos.clone(),
        poison: config.poison,
    }
}

/// The level a cell's transactions ran at, as `--isolation` spells it: the level asked for, else
/// the database's own default as its server named it (`read committed`, `REPEATABLE-READ`);
/// `serialized` on SQLite, whose writers take turns whatever the level. `None` when the server's
/// default is not known.
fn cell_isolation(asked: Option<Isolation>, backend: Backend, versions: &Versions) -> Option<String> {
    let default = match backend {
        Backend::Sqlite => return Some("serialized".into()),
        Backend::Postgres => versions.postgres_default_isolation.as_deref(),
        Backend::Mysql => versions.mysql_default_isolation.as_deref(),
    };
    match asked {
        Some(level) => Some(level.as_str().to_string()),
        None => default.map(|named| named.trim().to_ascii_lowercase().replace([' ', '_'], "-")),
    }
}

/// Starts (or finds) the server of `backend`, and records its version and origin in the header;
/// none for SQLite (a file per cell) or when the cells run against `--targets`.
async fn start_server(
    config: &BenchConfig,
    backend: Backend,
    header: &mut Header,
) -> Result<Option<Server>, ProvisionError> {
    if config.targets.is_some() {
        return Ok(None);
    }
    let v = &mut header.versions;
    Ok(Some(match backend {
        Backend::Sqlite => return Ok(None),
        Backend::Mysql => {
            let server = MysqlServer::start(&config.mysql).await?;
            let facts = server.facts().await?;
            v.mysql = Some(facts.version);
            v.mysql_origin = Some(server.origin().to_string());
            v.mysql_snapshot_isolation = facts.snapshot_isolation;
            v.mysql_default_isolation = Some(facts.default_isolation);
            Server::Mysql(server)
        }
        Backend::Postgres => {
            let server = PostgresServer::start(&config.postgres).await?;
            v.postgres = server.version().await.ok();
            v.postgres_default_isolation = server.default_isolation().await.ok();
            v.postgres_origin = Some(server.origin().to_string());
            Server::Postgres(server)
        }
    }))
}

/// Awaits `f`, and how long it took, seconds.
async fn timed<T>(f: impl Future<Output = T>) -> (T, f64) {
    let start = std::time::Instant::now();
    let out = f.await;
    (out, start.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(postgres: Option<&str>, mysql: Option<&str>) -> Versions {
        Versions {
            postgres_default_isolation: postgres.map(Into::into),
            mysql_default_isolation: mysql.map(Into::into),
            ..Versions::default()
        }
    }

    /// A cell names the level asked for, else its server's own default spelled as the flag is;
    /// SQLite's cells say its writers are serialized whatever was asked; an unknown default is
    /// not guessed.
    #[test]
    fn a_cell_names_the_isolation_its_transactions_ran_at() {
        let v = versions(Some("read committed"), Some("REPEATABLE-READ"));
        let level = |asked, backend| cell_isolation(asked, backend, &v);
        assert_eq!(level(None, Backend::Postgres).as_deref(), Some("read-committed"));
        assert_eq!(level(None, Backend::Mysql).as_deref(), Some("repeatable-read"));
        assert_eq!(level(Some(Isolation::Serializable), Backend::Postgres).as_deref(), Some("serializable"));
        assert_eq!(level(Some(Isolation::Serializable), Backend::Mysql).as_deref(), Some("serializable"));
        assert_eq!(level(Some(Isolation::Serializable), Backend::Sqlite).as_deref(), Some("serialized"));
        assert_eq!(level(None, Backend::Sqlite).as_deref(), Some("serialized"));
        let unknown = versions(None, None);
        assert_eq!(cell_isolation(None, Backend::Postgres, &unknown), None);
        assert_eq!(cell_isolation(None, Backend::Mysql, &unknown), None);
    }
}
