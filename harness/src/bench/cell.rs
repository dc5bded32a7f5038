//! One cell of the matrix, step by step: provision, start the fleet, drive (the sender, with chaos
//! beside it), settle, stop, check, and the row.

use std::sync::Arc;
use std::time::Instant;

use crate::matrix::Design;
use crate::matrix::{Backend, Isolation};
use provision::{FreshDb, Server};
use tokio::sync::{Mutex, watch};

use super::{BenchConfig, run_secret};
use crate::chaos::{self, ChaosCounts};
use crate::fleet::{self, Fleet, FleetError, WorkerSpec};
use crate::history::Tap;
use crate::load;
use crate::model::HandlerResult;
use crate::observe::{ObserveError, Observers, Tables};
use crate::progress::Bars;
use crate::report::{Phases, Row};
use crate::sender::{self, Progress, SendReport, SenderConfig};
use crate::wire::Wire;
use crate::workload::Workload;

/// Why a cell broke. Each says what was being done; the cause follows it.
#[derive(Debug, thiserror::Error)]
pub(super) enum CellError {
    #[error("provisioning")]
    Provision(#[from] provision::ProvisionError),
    #[error("preparing the schema")]
    Schema(#[from] fleet::SchemaError),
    #[error("reading the database")]
    Observe(#[from] ObserveError),
    #[error("workers")]
    Fleet(#[from] FleetError),
    #[error("sender")]
    Sender(#[from] sender::SendError),
    #[error("the inbox still had {0} pending rows after the quiet timeout")]
    NotQuiet(u64),
    #[error("chaos")]
    Chaos(#[from] chaos::ChaosError),
    #[error("the run's secret")]
    Secret(#[from] crate::wire::SecretError),
}

/// A backend × design cell of one bench.
pub(super) struct Cell<'a> {
    pub config: &'a BenchConfig,
    pub backend: Backend,
    pub design: Design,
    /// The level `--isolation` listed, none for the database's own default.
    pub level: Option<Isolation>,
    pub workload: &'a Arc<Workload>,
    pub model: Option<&'a HandlerResult>,
    /// Where the cell's attempts and events go in the run's history.
    pub history: Tap,
}

/// Where a cell delivers and what it reads.
struct Site {
    /// The fresh database, when the cell made one (not with `--targets`).
    db: Option<FreshDb>,
    database_url: String,
    tables: Tables,
    secret: crate::wire::Whsec,
}

/// What the sender and chaos did.
struct Driven {
    sent: SendReport,
    chaos: ChaosCounts,
}

impl Cell<'_> {
    /// The cell's name, as its row and its history carry it.
    fn name(&self) -> String {
        crate::report::cell_name(self.backend, self.design, self.level)
    }

    /// Runs the cell; its row and the database's version.
    pub(super) async fn run(
        &self,
        server: Option<&Server>,
        bars: &Bars,
    ) -> Result<(Row, Option<String>), CellError> {
        let started = Instant::now();
        let mut phases = Phases::default();
        let mut clock = Instant::now();
        let mut lap = |slot: &mut f64| {
            *slot = clock.elapsed().as_secs_f64();
            clock = Instant::now();
        };
        let site = self.provision(server).await?;
        let db_version = site.tables.version().await.ok();
        lap(&mut phases.provision_s);
        let fleet = self.start_fleet(&site).await?;
        lap(&mut phases.fleet_start_s);
        let urls = self.urls(fleet.as_ref());
        let sent = Arc::new(Progress::default());
        let label = self.name();
        let bar = bars.cell(label, self.workload.groups.len() as u64, sent.clone());
        let fleet = fleet.map(|f| Arc::new(Mutex::new(f)));
        let driven = self.drive(&site, fleet.clone(), urls, sent).await;
        lap(&mut phases.deliver_s);
        let fleet = fleet.and_then(|f| Arc::try_unwrap(f).ok()).map(Mutex::into_inner);
        let driven = match driven {
            Ok(d) => d,
            Err(e) => {
                bar.failed("sender or chaos failed");
                stop(fleet).await.ok();
                return Err(e);
            }
        };
        bar.settling();
        let observers = Observers::new(vec![Box::new(site.tables.clone())]);
        let settled = observers.drained(self.config.quiet_timeout).await;
        lap(&mut phases.settle_s);
        stop(fleet).await?;
        lap(&mut phases.fleet_stop_s);
        if let Err(pending) = settled {
            bar.failed("not quiet");
            return Err(CellError::NotQuiet(pending));
        }
        let judged =
            load::judge_cell(self.workload, &driven.sent, &observers, self.design, self.config.witnesses)
                .await?;
        lap(&mut phases.check_s);
        judged.write(&self.history, self.workload);
        site.tables.close().await;
        if let Some(db) = site.db.filter(|_| !self.config.keep) {
            db.discard().await?;
        }
        lap(&mut phases.history_and_cleanup_s);
        let cell = (self.backend, self.design, self.model);
        let mut row =
            load::bench_row(cell, driven.sent, driven.chaos, &judged, started.elapsed().as_secs_f64());
        row.phases = phases;
        if self.config.verbose {
            let p = &phases;
            bars.say(&format!(
                "{}: provision {:.2} s, fleet start {:.2}, deliveries {:.2}, settle {:.2}, fleet stop {:.2}, checker {:.2}, history and clean-up {:.2}",
                self.name(),
                p.provision_s,
                p.fleet_start_s,
                p.deliver_s,
                p.settle_s,
                p.fleet_stop_s,
                p.check_s,
                p.history_and_cleanup_s
            ));
        }
        bar.finished(&summary(&row));
        Ok((row, db_version))
    }

    /// A fresh database with the receivers' schema (or the one `--targets` share), and the
    /// observer reading it.
    async fn provision(&self, server: Option<&Server>) -> Result<Site, CellError> {
        let config = self.config;
        if let Some(t) = &config.targets {
            let tables = Tables::connect(&t.database_url).await?;
            return Ok(Site {
                db: None,
                database_url: t.database_url.clone(),
                tables,
                secret: t.secret.clone(),
            });
        }
        let keep_dir = config.keep.then(|| config.out.join("sqlite"));
        let db = FreshDb::on(server, keep_dir.as_deref()).await?;
        let database_url = db.url();
        fleet::ready_schema(&database_url).await?;
        let tables = Tables::connect(&database_url).await?;
        Ok(Site { db: Some(db), database_url, tables, secret: run_secret(config.workload.seed) })
    }

    /// The cell's worker processes (none with `--targets`).
    async fn start_fleet(&self, site: &Site) -> Result<Option<Fleet>, CellError> {
        let config = self.config;
        if config.targets.is_some() {
            return Ok(None);
        }
        let spec = WorkerSpec {
            exe: config.exe.clone(),
            design: self.design,
            database_url: site.database_url.clone(),
            secrets: vec![site.secret.as_str().to_string()],
            work_delay: config.work_delay,
            isolation: self.level,
            inbox_workers: config.inbox_workers,
            max_connections: config.max_connections,
            log: Some(config.out.join("logs").join(format!("{}.log", self.name().replace('/', "-")))),
            inject_faults: false,
            pool_timeout: fleet::WORKER_POOL_TIMEOUT,
        };
        Ok(Some(Fleet::start(spec, config.workers).await?))
    }

    /// Where the sender delivers: the fleet's workers, or the `--targets`.
    fn urls(&self, fleet: Option<&Fleet>) -> Vec<String> {
        match (fleet, &self.config.targets) {
            (Some(f), _) => f.workers().iter().map(|w| w.webhook_url(&self.config.sender.source)).collect(),
            (None, Some(t)) => t.urls.clone(),
            (None, None) => Vec::new(),
        }
    }

    /// The delivery plan, sent; chaos strikes beside it until the last response.
    async fn drive(
        &self,
        site: &Site,
        fleet: Option<Arc<Mutex<Fleet>>>,
        urls: Vec<String>,
        progress: Arc<Progress>,
    ) -> Result<Driven, CellError> {
        let config = self.config;
        let (stop_chaos, chaos_stopped) = watch::channel(false);
        let chaos = match &fleet {
            Some(f) if !config.chaos.is_empty() => Some(tokio::spawn(chaos::run(
                config.chaos.clone(),
                config.workload.seed,
                self.backend,
                f.clone(),
                site.database_url.clone(),
                chaos_stopped,
            ))),
            _ => None,
        };
        let sent = sender::run(
            self.workload.clone(),
            urls,
            Arc::new(Wire::hookbench(site.secret.as_str())?),
            SenderConfig { history: Some(self.history.clone()), ..config.sender.clone() },
            progress,
        )
        .await;
        let _ = stop_chaos.send(true);
        let chaos = match chaos {
            Some(task) => task.await.unwrap_or_else(|e| Err(e.into())),
            None => Ok(ChaosCounts::default()),
        };
        Ok(Driven { sent: sent?, chaos: chaos? })
    }
}

/// Stops the cell's workers, if it started any.
async fn stop(fleet: Option<Fleet>) -> Result<(), FleetError> {
    match fleet {
        Some(f) => f.stop().await,
        None => Ok(()),
    }
}

/// The one-line summary of a finished cell.
fn summary(row: &Row) -> String {
    format!(
        "{} attempts in {:.1}s, {} dup events, {} lost, {} stale accounts",
        row.deliveries, row.wall_s, row.figures.dup_events, row.figures.lost, row.figures.stale_accounts
    )
}
