//! `hookbench bench`: the matrix of backend × design cells, each run for real.
//!
//! A cell: a fresh database (migrated once, before any worker starts), W worker processes of
//! `hookbench serve` started from hookbench's own executable and health-checked, the delivery
//! plan sent by the sender, a wait until the receivers are quiet (the inbox drained), the workers
//! stopped, then the checker reading the database. A backend that cannot be had (no Docker, no
//! `DATABASE_URL`) has its cells reported as skipped with the reason; a cell that fails midway is
//! reported as broken.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use receivers::design::Design;
use receivers::signature::Secret;
use receivers::store::{Backend, Isolation};

use crate::chaos::{Chaos, ChaosCounts};
use crate::checker;
use crate::fleet::{Fleet, WorkerSpec};
use crate::machine::Machine;
use crate::model::{self, HandlerResult};
use crate::observer::{self, Tables, TablesError};
use crate::provision::{FreshDb, PostgresServer, PostgresSettings};
use crate::report::{CellNote, ModelFigures, Parameters, Report, Row, Versions};
use crate::sender::{self, Progress, SenderConfig};
use crate::workload::{Workload, WorkloadConfig};

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
    /// Postgres isolation.
    pub isolation: Isolation,
    /// Inbox claim loops per worker.
    pub inbox_workers: usize,
    /// Pool size per worker.
    pub max_connections: u32,
    /// Where Postgres comes from.
    pub postgres: PostgresSettings,
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
}

/// Receivers hookbench did not start (`--targets`), of one design, sharing one database.
#[derive(Debug, Clone)]
pub struct Targets {
    /// Their webhook URLs.
    pub urls: Vec<String>,
    /// The database they share (the checker reads it; it is not dropped).
    pub database_url: String,
    /// The secret they verify with.
    pub secret: Secret,
}

/// Why a cell broke.
#[derive(Debug, thiserror::Error)]
enum CellError {
    #[error("provisioning: {0}")]
    Provision(#[from] crate::provision::ProvisionError),
    #[error("database: {0}")]
    Store(#[from] receivers::store::StoreError),
    #[error("reading the database: {0}")]
    Observe(#[from] TablesError),
    #[error("workers: {0}")]
    Fleet(#[from] crate::fleet::FleetError),
    #[error("sender: {0}")]
    Sender(#[from] sender::SendError),
    #[error("the inbox still had {0} pending rows after the quiet timeout")]
    NotQuiet(u64),
    #[error("chaos: {0}")]
    Chaos(#[from] crate::chaos::ChaosError),
}

/// A secret for one run (any key works; none leaves the machine).
fn run_secret(seed: u32) -> Secret {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    Secret::from_bytes(format!("hookbench-{seed}-{}-{nanos}", std::process::id()).into_bytes())
}

/// Runs the matrix and returns the report (not yet written).
pub async fn run(config: &BenchConfig) -> Report {
    let started_at = jiff::Timestamp::now();
    let mut workload = Workload::generate(&config.workload).expect("workload validated by the caller");
    workload.poison(config.poison);
    let workload = Arc::new(workload);
    let model_rows = model::handler_table(&workload);
    let multi = MultiProgress::with_draw_target(if config.progress {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let mut report = Report {
        run_id: config.run_id.clone(),
        started_at: started_at.to_string(),
        git_sha: git_sha(),
        parameters: parameters(config),
        versions: Versions { hookbench: env!("CARGO_PKG_VERSION").to_string(), ..Versions::default() },
        machine: Machine::detect(),
        rows: Vec::new(),
        skipped: Vec::new(),
        broken: Vec::new(),
        experiments: Default::default(),
    };
    let _ = std::fs::create_dir_all(config.out.join("logs"));
    // The matrix's Postgres server, kept for the experiments when there are any.
    let mut kept_server = None;
    for &backend in &config.backends {
        let pg = match backend {
            _ if config.targets.is_some() => None,
            Backend::Postgres => match PostgresServer::start(&config.postgres).await {
                Ok(server) => {
                    report.versions.postgres = server.version().await.ok();
                    report.versions.postgres_origin = Some(server.origin().to_string());
                    Some(server)
                }
                Err(e) => {
                    let reason = e.to_string();
                    multi.suspend(|| eprintln!("hookbench: skipping postgres: {reason}"));
                    for &design in &config.designs {
                        report.skipped.push(CellNote { backend, design, reason: reason.clone() });
                    }
                    continue;
                }
            },
            Backend::Sqlite => None,
        };
        for &design in &config.designs {
            let model = model::handler_for_design(design.as_str())
                .and_then(|h| model_rows.iter().find(|r| r.handler == h));
            match run_cell(config, backend, design, pg.as_ref(), &workload, model, &multi, &mut report).await
            {
                Ok(row) => report.rows.push(row),
                Err(e) => {
                    let reason = e.to_string();
                    multi.suspend(|| eprintln!("hookbench: {backend} {design} broke: {reason}"));
                    report.broken.push(CellNote { backend, design, reason });
                }
            }
        }
        if !config.experiments.is_empty() && pg.is_some() {
            kept_server = pg;
        }
    }
    if !config.experiments.is_empty() {
        multi.suspend(|| eprintln!("hookbench: running the experiments {:?}", config.experiments));
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
    report
}

#[allow(clippy::too_many_arguments)]
async fn run_cell(
    config: &BenchConfig,
    backend: Backend,
    design: Design,
    pg: Option<&PostgresServer>,
    workload: &Arc<Workload>,
    model: Option<&HandlerResult>,
    multi: &MultiProgress,
    report: &mut Report,
) -> Result<Row, CellError> {
    let started = Instant::now();
    let (db, tables, database_url, fleet, urls, secret) = match &config.targets {
        // Receivers someone else started: deliver to them, check the database they share.
        Some(t) => {
            let tables = Tables::connect(&t.database_url).await?;
            note_version(report, backend, &tables).await;
            (None, tables, t.database_url.clone(), None, t.urls.clone(), t.secret.clone())
        }
        None => {
            let db = FreshDb::create(pg, config.keep.then(|| config.out.join("sqlite")).as_deref()).await?;
            let url = db.url();
            crate::fleet::ready_schema(&url).await?;
            let tables = Tables::connect(&url).await?;
            note_version(report, backend, &tables).await;
            let secret = run_secret(config.workload.seed);
            let spec = WorkerSpec {
                exe: config.exe.clone(),
                design,
                database_url: url.clone(),
                secrets: vec![secret.to_whsec()],
                work_delay: config.work_delay,
                isolation: config.isolation,
                inbox_workers: config.inbox_workers,
                max_connections: config.max_connections,
                log: Some(config.out.join("logs").join(format!("{backend}-{design}.log"))),
                inject_faults: false,
                pool_timeout: crate::fleet::WORKER_POOL_TIMEOUT,
            };
            let fleet = Fleet::start(spec, config.workers).await?;
            let urls = fleet.workers().iter().map(|w| w.webhook_url(&config.sender.source)).collect();
            (Some(db), tables, url, Some(Arc::new(tokio::sync::Mutex::new(fleet))), urls, secret)
        }
    };

    let bar = multi.add(ProgressBar::new(workload.groups.len() as u64));
    bar.set_style(
        ProgressStyle::with_template("{prefix:>26} [{bar:30}] {pos}/{len} groups {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(format!("{backend} {design}"));
    let progress = Arc::new(Progress::default());
    let ticker = {
        let (progress, bar) = (progress.clone(), bar.clone());
        tokio::spawn(async move {
            loop {
                let c = progress.counters.snapshot();
                bar.set_position(progress.counters.groups_done.load(std::sync::atomic::Ordering::Relaxed));
                bar.set_message(format!(
                    "{} attempts, {} 5xx, {} timeouts",
                    c.deliveries, c.status_5xx, c.timeouts
                ));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let (stop_chaos, chaos_stopped) = tokio::sync::watch::channel(false);
    let chaos = match &fleet {
        Some(f) if !config.chaos.is_empty() => Some(tokio::spawn(crate::chaos::run(
            config.chaos.clone(),
            config.workload.seed,
            backend,
            f.clone(),
            database_url.clone(),
            chaos_stopped,
        ))),
        _ => None,
    };
    let sent = sender::run(workload.clone(), urls, secret, config.sender.clone(), progress).await;
    let _ = stop_chaos.send(true);
    let chaos = match chaos {
        Some(task) => task.await.unwrap_or_else(|e| Err(e.into())),
        None => Ok(ChaosCounts::default()),
    };
    ticker.abort();
    let fleet = fleet.and_then(|f| Arc::try_unwrap(f).ok()).map(tokio::sync::Mutex::into_inner);
    let outcome = sent.map_err(CellError::from).and_then(|s| Ok((s, chaos?)));
    let (sent, chaos) = match outcome {
        Ok(done) => done,
        Err(e) => {
            bar.abandon_with_message("sender or chaos failed");
            if let Some(f) = fleet {
                f.stop().await.ok();
            }
            return Err(e);
        }
    };
    bar.set_position(workload.groups.len() as u64);
    bar.set_message("waiting for the receivers to go quiet");
    let quiet = observer::settle(&tables, design, config.quiet_timeout).await;
    if let Some(f) = fleet {
        f.stop().await?;
    }
    if let Err(pending) = quiet {
        bar.abandon_with_message("not quiet");
        return Err(CellError::NotQuiet(pending));
    }
    let verdict = checker::check(&tables, workload).await?;
    tables.close().await;
    if !config.keep
        && let Some(db) = db
    {
        db.discard().await?;
    }
    let c = sent.counters;
    let secs = sent.elapsed.as_secs_f64().max(1e-9);
    let row = Row {
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
        throughput_per_s: c.deliveries as f64 / secs,
        wall_s: started.elapsed().as_secs_f64(),
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
    };
    bar.finish_with_message(format!(
        "{} attempts in {:.1}s, {} dup events, {} lost, {} stale accounts",
        row.deliveries, row.wall_s, row.figures.dup_events, row.figures.lost, row.figures.stale_accounts
    ));
    if bar.is_hidden() {
        eprintln!(
            "hookbench: {backend} {design}: {} attempts in {:.1}s, {} dup events, {} lost, {} stale accounts",
            row.deliveries, row.wall_s, row.figures.dup_events, row.figures.lost, row.figures.stale_accounts
        );
    }
    Ok(row)
}

/// Records the database's version in the report, once per backend.
async fn note_version(report: &mut Report, backend: Backend, tables: &Tables) {
    let slot = match backend {
        Backend::Postgres => &mut report.versions.postgres,
        Backend::Sqlite => &mut report.versions.sqlite,
    };
    if slot.is_none() {
        *slot = tables.version().await.ok();
    }
}

fn parameters(config: &BenchConfig) -> Parameters {
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
        isolation: config.isolation.as_str().to_string(),
        inbox_workers: config.inbox_workers,
        p_duplicate: w.p_duplicate,
        p_ack_lost: w.p_ack_lost,
        p_concurrent: w.p_concurrent,
        p_shuffle: w.p_shuffle,
        chaos: config.chaos.clone(),
        poison: config.poison,
    }
}

/// The short git commit of the working directory, if it is a git checkout.
pub fn git_sha() -> Option<String> {
    let out = std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The default run id: `<UTC timestamp>-<short sha>`.
pub fn default_run_id() -> String {
    let ts = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    format!("{ts}-{}", git_sha().unwrap_or_else(|| "nogit".to_string()))
}
