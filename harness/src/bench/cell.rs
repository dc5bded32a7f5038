//! One cell of the matrix, step by step: provision, start the fleet, drive (the sender, with chaos
//! beside it), settle, stop, check, and the row.

use std::sync::Arc;
use std::time::Instant;

use provision::{FreshDb, PostgresServer};
use receivers::design::Design;
use receivers::signature::Secret;
use receivers::store::Backend;
use tokio::sync::{Mutex, watch};

use super::{BenchConfig, run_secret};
use crate::chaos::{self, ChaosCounts};
use crate::checker::{self, Verdict};
use crate::fleet::{self, Fleet, FleetError, WorkerSpec};
use crate::history::{ChangeLine, EventLine, Line, Tap};
use crate::model::HandlerResult;
use crate::observer::{self, Observer, Tables, TablesError};
use crate::progress::Bars;
use crate::report::{LatencySpectrum, ModelFigures, Phases, Row};
use crate::sender::{self, Progress, SendReport, SenderConfig};
use crate::wire::Wire;
use crate::workload::Workload;

/// Why a cell broke. Each says what was being done; the cause follows it.
#[derive(Debug, thiserror::Error)]
pub(super) enum CellError {
    #[error("provisioning")]
    Provision(#[from] provision::ProvisionError),
    #[error("preparing the schema")]
    Schema(#[from] receivers::store::StoreError),
    #[error("reading the database")]
    Observe(#[from] TablesError),
    #[error("workers")]
    Fleet(#[from] FleetError),
    #[error("sender")]
    Sender(#[from] sender::SendError),
    #[error("the inbox still had {0} pending rows after the quiet timeout")]
    NotQuiet(u64),
    #[error("chaos")]
    Chaos(#[from] chaos::ChaosError),
}

/// A backend × design cell of one bench.
pub(super) struct Cell<'a> {
    pub config: &'a BenchConfig,
    pub backend: Backend,
    pub design: Design,
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
    secret: Secret,
}

/// What the sender and chaos did.
struct Driven {
    sent: SendReport,
    chaos: ChaosCounts,
}

impl Cell<'_> {
    /// Runs the cell; its row and the database's version.
    pub(super) async fn run(
        &self,
        pg: Option<&PostgresServer>,
        bars: &Bars,
    ) -> Result<(Row, Option<String>), CellError> {
        let started = Instant::now();
        let mut phases = Phases::default();
        let mut clock = Instant::now();
        let mut lap = |slot: &mut f64| {
            *slot = clock.elapsed().as_secs_f64();
            clock = Instant::now();
        };
        let site = self.provision(pg).await?;
        let db_version = site.tables.version().await.ok();
        lap(&mut phases.provision_s);
        let fleet = self.start_fleet(&site).await?;
        lap(&mut phases.fleet_start_s);
        let urls = self.urls(fleet.as_ref());
        let sent = Arc::new(Progress::default());
        let label = format!("{} {}", self.backend, self.design);
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
        let settled = observer::settle(&site.tables, self.design, self.config.quiet_timeout).await;
        lap(&mut phases.settle_s);
        stop(fleet).await?;
        lap(&mut phases.fleet_stop_s);
        if let Err(pending) = settled {
            bar.failed("not quiet");
            return Err(CellError::NotQuiet(pending));
        }
        let verdict = checker::check(&site.tables, self.workload).await?;
        lap(&mut phases.check_s);
        write_events(&self.history, self.workload, &verdict);
        write_changes(&self.history, &site.tables).await?;
        site.tables.close().await;
        if let Some(db) = site.db.filter(|_| !self.config.keep) {
            db.discard().await?;
        }
        lap(&mut phases.history_and_cleanup_s);
        let cell = (self.backend, self.design, self.model);
        let mut row = row(cell, driven.sent, driven.chaos, verdict, started.elapsed().as_secs_f64());
        row.phases = phases;
        if self.config.verbose {
            let p = &phases;
            bars.say(&format!(
                "{} {}: provision {:.2} s, fleet start {:.2}, deliveries {:.2}, settle {:.2}, fleet stop {:.2}, checker {:.2}, history and clean-up {:.2}",
                self.backend,
                self.design,
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
    async fn provision(&self, pg: Option<&PostgresServer>) -> Result<Site, CellError> {
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
        let db = FreshDb::create(pg, keep_dir.as_deref()).await?;
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
            secrets: vec![site.secret.to_whsec()],
            work_delay: config.work_delay,
            isolation: config.isolation,
            inbox_workers: config.inbox_workers,
            max_connections: config.max_connections,
            log: Some(config.out.join("logs").join(format!("{}-{}.log", self.backend, self.design))),
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
            Arc::new(Wire::hookbench(&site.secret)),
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

/// Every event's fate, as the checker found it, into the history.
pub(crate) fn write_events(tap: &Tap, w: &Workload, verdict: &Verdict) {
    for (i, e) in w.events.iter().enumerate() {
        tap.send(Line::Event(EventLine::fate(
            w,
            i,
            (tap.cell(), e.id().to_string(), e.account),
            || verdict.applies.get(i).copied(),
            || verdict.final_versions.get(e.account as usize).copied(),
        )));
    }
}

/// Every plan change the database's trigger recorded, in its order, into the history (after the
/// events' lines, as the history's readers expect).
pub(crate) async fn write_changes(tap: &Tap, tables: &Tables) -> Result<(), TablesError> {
    tables
        .plan_changes(&mut |seq, account, old_version, new_version| {
            tap.send(Line::Change(ChangeLine {
                cell: tap.cell().to_string(),
                account: u32::try_from(account).unwrap_or(u32::MAX),
                seq,
                old_version,
                new_version,
            }));
        })
        .await
}

/// A report row: the cell's (backend, design, the model's figures), what the sender (or the
/// shards, added up) and chaos did, the checker's verdict, and the wall time.
pub(crate) fn row(
    cell: (Backend, Design, Option<&HandlerResult>),
    sent: SendReport,
    chaos: ChaosCounts,
    verdict: Verdict,
    wall_s: f64,
) -> Row {
    let (backend, design, model) = cell;
    let c = sent.counters;
    let secs = sent.elapsed.as_secs_f64().max(1e-9);
    Row {
        backend,
        design,
        deliveries: c.deliveries,
        status_2xx: c.status_2xx,
        status_4xx: c.status_4xx,
        status_5xx: c.status_5xx,
        timeouts: c.timeouts,
        retries: c.retries,
        figures: verdict.figures,
        latency_us: sent.latency_intended,
        latency_actual_us: sent.latency_actual,
        latency_buckets: sent.latency_buckets.clone(),
        latency_spectrum: LatencySpectrum {
            planned: sent.spectrum_intended.clone(),
            actual: sent.spectrum_actual.clone(),
        },
        throughput_per_s: c.deliveries as f64 / secs,
        wall_s,
        connect_errors: c.connect_errors,
        gave_up: c.gave_up,
        ledger_rows: verdict.ledger_rows,
        dead_letters: verdict.dead_letters,
        id_conflicts: verdict.id_conflicts,
        chaos,
        poisoned: verdict.poisoned,
        poison_applied: verdict.poison_applied,
        poison_attempts: c.poison_attempts,
        poison_non_2xx: c.poison_non_2xx,
        model: model.map(ModelFigures::from),
        phases: Phases::default(),
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
