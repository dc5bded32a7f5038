//! The article's failure experiments, run for real beside the model's figures:
//!
//! - [`crash`]: a worker process aborts after the dedupe key is written and before the side
//!   effect, with the article's keyed chance; the fleet restarts it and the delivery is retried.
//! - [`jitter`]: deliveries failing together against a receiver that answers 503 until it
//!   recovers, retried with and without full jitter.
//! - [`retention`]: dedupe keys that really expire and are purged, on a virtual clock, against
//!   the article's retry schedules.
//!
//! Chaos during a bench (killed workers, ended Postgres connections) lives in
//! [`crate::chaos`]; poison events are a bench option (`bench --poison`).

pub mod crash;
pub mod jitter;
pub mod retention;

/// The report's type: the experiments' sections as a report records them.
pub use crate::report::model::Experiments;
pub use jitter::{JitterSection, jitter};

use crate::reason::reason;

/// An experiment `hookbench bench --experiments` can add to its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// `hookbench crash` with its defaults.
    Crash,
    /// `hookbench jitter` with its defaults.
    Jitter,
    /// `hookbench retention` with its defaults.
    Retention,
}

impl Experiments {
    /// Runs `kinds` with their defaults on `setup`'s backends; the crash test's workers run
    /// `exe` and log to `log`.
    pub async fn run(
        kinds: &[Kind],
        setup: &Setup,
        seed: u32,
        exe: std::path::PathBuf,
        log: Option<std::path::PathBuf>,
    ) -> Self {
        use crate::model::crash::CRASH_EVENTS;
        use crate::model::jitter::{DELIVERIES, RECOVER_S};
        let mut e = Experiments::default();
        for kind in kinds {
            match kind {
                Kind::Crash => {
                    let config =
                        crash::CrashConfig { seed, events: CRASH_EVENTS, exe: exe.clone(), log: log.clone() };
                    let (rows, errors) = run_crash(setup, &config, &crash::DESIGNS).await;
                    e.crash = rows;
                    e.errors.extend(errors);
                }
                Kind::Jitter => match run_jitter(seed, DELIVERIES, RECOVER_S, jitter::TIME_SCALE).await {
                    Ok(j) => e.jitter = Some(j),
                    Err(err) => e.errors.push(format!("jitter: {}", reason(&err))),
                },
                Kind::Retention => {
                    let (runs, errors) =
                        run_retention(setup, seed, crate::workload::ARTICLE_EVENTS, retention::CONCURRENCY)
                            .await;
                    e.retention = runs;
                    e.errors.extend(errors);
                }
            }
        }
        e
    }
}

/// Why an experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// No database.
    #[error("provisioning")]
    Provision(#[from] provision::ProvisionError),
    /// The database failed.
    #[error("preparing the schema")]
    Store(#[from] receivers::store::StoreError),
    /// Reading what was applied failed.
    #[error("reading the database")]
    Observe(#[from] crate::observe::ObserveError),
    /// A worker could not be started, stopped or restarted.
    #[error("workers")]
    Fleet(#[from] crate::fleet::FleetError),
    /// The run did not go as the experiment requires.
    #[error("{0}")]
    Run(String),
}

/// Where an experiment's databases come from, and which backends it covers. One Postgres server
/// serves every experiment run on the same `Setup`: started on first need, or handed over by a
/// bench that already has one. Drop it inside the Tokio runtime: that stops the container.
#[derive(Debug)]
pub struct Setup {
    /// Backends to run on.
    pub backends: Vec<crate::matrix::Backend>,
    /// Where Postgres comes from.
    pub postgres: provision::PostgresSettings,
    server: tokio::sync::OnceCell<provision::PostgresServer>,
}

impl Setup {
    /// Experiments on `backends`, with Postgres from `postgres` when it is first needed.
    pub fn new(backends: Vec<crate::matrix::Backend>, postgres: provision::PostgresSettings) -> Self {
        Self { backends, postgres, server: tokio::sync::OnceCell::new() }
    }

    /// Experiments on a Postgres server that is already running (a bench's), not a new one.
    pub fn with_server(mut self, server: provision::PostgresServer) -> Self {
        self.server = tokio::sync::OnceCell::new_with(Some(server));
        self
    }

    /// The Postgres server, started now if no experiment has needed it yet.
    async fn postgres_server(&self) -> Result<&provision::PostgresServer, provision::ProvisionError> {
        self.server.get_or_try_init(|| provision::PostgresServer::start(&self.postgres)).await
    }

    /// Runs `each(backend, item, url)` for every item on every backend, each on a fresh database
    /// (one Postgres server for all of them). A backend that cannot be had, or a run that fails, is
    /// reported as an error line `<label> on <backend>: <why>` instead.
    async fn each<I, T, F, Fut>(
        &self,
        items: &[I],
        label: impl Fn(I) -> String,
        mut each: F,
    ) -> (Vec<T>, Vec<String>)
    where
        I: Copy,
        F: FnMut(crate::matrix::Backend, I, String) -> Fut,
        Fut: Future<Output = Result<T, ExperimentError>>,
    {
        use crate::matrix::Backend;
        let (mut done, mut errors) = (Vec::new(), Vec::new());
        for &backend in &self.backends {
            let pg = match backend {
                Backend::Postgres => match self.postgres_server().await {
                    Ok(server) => Some(server),
                    Err(e) => {
                        errors.extend(
                            items.iter().map(|&i| format!("{} on {backend}: {}", label(i), reason(&e))),
                        );
                        continue;
                    }
                },
                Backend::Sqlite => None,
                Backend::Mysql => {
                    let why = "the experiments run on postgres and sqlite only";
                    errors.extend(items.iter().map(|&i| format!("{} on {backend}: {why}", label(i))));
                    continue;
                }
            };
            for &item in items {
                let db = match provision::FreshDb::create(pg, None).await {
                    Ok(db) => db,
                    Err(e) => {
                        errors.push(format!("{} on {backend}: {}", label(item), reason(&e)));
                        continue;
                    }
                };
                match each(backend, item, db.url()).await {
                    Ok(t) => done.push(t),
                    Err(e) => errors.push(format!("{} on {backend}: {}", label(item), reason(&e))),
                }
                if let Err(e) = db.discard().await {
                    errors.push(format!(
                        "{} on {backend}: dropping the database: {}",
                        label(item),
                        reason(&e)
                    ));
                }
            }
        }
        (done, errors)
    }
}

/// The crash test for every design on every backend (a fresh database per cell).
pub async fn run_crash(
    setup: &Setup,
    config: &crash::CrashConfig,
    designs: &[crate::matrix::Design],
) -> (Vec<crash::CrashRow>, Vec<String>) {
    let (mut rows, errors) = setup
        .each(
            designs,
            |d| format!("crash {d}"),
            |backend, design, url| async move {
                let started = std::time::Instant::now();
                eprintln!("hookbench: crash {design} on {backend}: sending {} events", config.events);
                let row = crash::run(config, backend, design, &url).await?;
                eprintln!(
                    "hookbench: crash {design} on {backend}: {} crashes, {} lost ({:.1} s)",
                    row.crashes,
                    row.lost,
                    started.elapsed().as_secs_f64()
                );
                Ok(row)
            },
        )
        .await;
    rows.sort_by_key(|r| (r.backend.as_str(), designs.iter().position(|&d| d == r.design)));
    (rows, errors)
}

/// The retention test on every backend.
pub async fn run_retention(
    setup: &Setup,
    seed: u32,
    events: usize,
    concurrency: usize,
) -> (Vec<retention::RetentionRun>, Vec<String>) {
    setup
        .each(
            &[()],
            |()| "retention".to_string(),
            |backend, (), url| async move {
                eprintln!("hookbench: retention on {backend}: replaying {events} events per schedule");
                let run = retention::run(seed, events, concurrency, backend, &url).await?;
                eprintln!(
                    "hookbench: retention on {backend}: {} attempts in {:.1} s",
                    run.visits, run.wall_s
                );
                Ok(run)
            },
        )
        .await
}

/// The jitter experiment in both modes, with the model's figures.
pub async fn run_jitter(
    seed: u32,
    deliveries: u32,
    recover_s: f64,
    time_scale: f64,
) -> std::io::Result<JitterSection> {
    use crate::model::jitter::{self as model, JitterMode};
    let modes = [JitterMode::NoJitter, JitterMode::FullJitter];
    let mut real = Vec::new();
    for mode in modes {
        eprintln!(
            "hookbench: jitter, {}: {deliveries} deliveries, receiver back at {recover_s} s, time scaled 1/{time_scale}",
            mode.label()
        );
        let measured = jitter(seed, mode, deliveries, recover_s, time_scale).await?;
        if measured.recovery_late_p99_s > 1.0 {
            eprintln!(
                "hookbench: note: jitter, {}: the retries due after recovery arrived up to {:.1} s late \
                 (p99, scaled): at 1/{time_scale} this machine could not put them through as fast as \
                 they fell due, so the measured peak per second understates the spike; a smaller \
                 --time-scale gives it more time",
                mode.label(),
                measured.recovery_late_p99_s
            );
        }
        real.push(measured);
    }
    let model = modes.iter().map(|&m| model::run_with(seed, m, deliveries, recover_s)).collect();
    Ok(JitterSection { deliveries, recover_s, time_scale, real, model })
}

#[cfg(test)]
mod tests {
    /// Chaos finds the receivers' connections by the name they give Postgres.
    #[test]
    fn chaos_names_the_receivers_connections_as_they_do() {
        assert_eq!(crate::chaos::RECEIVER_APPLICATION, receivers::store::RECEIVER_APPLICATION);
    }
}
