//! `hookbench merge`: the shards' partial results added up into one run's report, a peer of
//! `bench` and `audit`. Merging refuses shards that are not the parts of one run (another
//! workload, seed, parameter, design, backend or hookbench, a shard missing or given twice) before
//! it touches the database; then the shards' histograms are added count by count, their counters
//! summed, their attempt lines interleaved in time order (each event's answers read from them), and
//! the judge runs once: a bench's cell (`load::judge_cell`), or an audit's load ([`audit`]).

mod audit;
mod check;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::matrix::Backend;
use crate::matrix::Design;
use serde::Serialize;

use crate::files::ReadError;
use crate::history::{self, History, HistoryError, Line};
use crate::judge::history::workload_index;
use crate::load::partial::{AuditRun, PARTIAL_FILE, Partial, PartialError, Target, plan_digest};
use crate::load::{self, bench_row, judge_cell};
use crate::model;
use crate::observe::{ObserveError, Observers, Queries, QueryLimits, Tables};
use crate::report::{Check, HistoryFile, Merged, Report};
use crate::sender::SendReport;
use crate::stats::{CounterSnapshot, HistogramError, Histograms};
use crate::workload::{Shard, Workload, WorkloadError};

/// The most bytes of shard.json files a merge reads, all shards together (8 GiB, the attempts of
/// the largest audit twice over; each one is also held to `MAX_PARTIAL_BYTES`).
pub const MAX_SHARD_FILES_BYTES: u64 = 8 << 30;

/// What a merge needs.
#[derive(Debug, Clone)]
pub struct MergeConfig {
    /// The shards' directories, or directories holding them.
    pub dirs: Vec<PathBuf>,
    /// How long to wait for shards that have not written their result yet (zero: not at all).
    pub wait: Duration,
    /// The database the receivers shared (`None`: the one the shards recorded).
    pub database_url: Option<String>,
    /// Where the merged report and history go.
    pub out: PathBuf,
    /// The merged run's id.
    pub run_id: String,
    /// How long to wait for the receivers to go quiet (the inbox drained) before checking.
    pub quiet_timeout: Duration,
    /// An audit's database (`None`: the one the shards recorded).
    pub observe_db: Option<String>,
    /// How long an audit's observers must see no change to count as settled.
    pub quiet: Duration,
    /// How long to wait for them at most.
    pub settle_max: Duration,
    /// Witnesses per anomaly class in the report.
    pub witnesses: usize,
    /// An audit's queries, as `merge` was given them: the only SQL it runs on `observe_db`. A
    /// shard that recorded other ones is refused (a shard.json is a file anyone with the volume
    /// can edit; its queries are never run).
    pub queries: Queries,
    /// What each of those queries may take (`--query-timeout`, `--max-rows`).
    pub query_limits: QueryLimits,
    /// The key every shard sealed its files with (`HOOKBENCH_SHARD_KEY`); `None`: seals are not
    /// checked.
    pub shard_key: Option<Vec<u8>>,
}

/// Why shards could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No directory given.
    #[error("merge needs at least one shard directory")]
    NoShards,
    /// A partial result could not be read.
    #[error(transparent)]
    Partial(#[from] PartialError),
    /// Two shards disagree on what the run was.
    #[error(
        "{} is not a shard of the same run as {}: its {what} differs ({theirs} against {ours})",
        dir.display(),
        first.display()
    )]
    Mismatch {
        /// The shard that differs.
        dir: PathBuf,
        /// The first shard.
        first: PathBuf,
        /// What differs.
        what: &'static str,
        /// Its value.
        theirs: String,
        /// The first shard's value.
        ours: String,
    },
    /// The same shard given twice.
    #[error("shard {shard} is given twice: {} and {}", a.display(), b.display())]
    Duplicate {
        /// Which.
        shard: Shard,
        /// One directory.
        a: PathBuf,
        /// The other.
        b: PathBuf,
    },
    /// Shards missing.
    #[error("missing shard(s) {} of {count}: every shard's directory must be given", .missing.join(", "))]
    Missing {
        /// Their indices.
        missing: Vec<String>,
        /// How many there are.
        count: usize,
    },
    /// The workload the shards recorded does not generate the plan they sent.
    #[error("the shards' workload does not generate the plan they sent (another hookbench version?)")]
    Plan,
    /// The workload's parameters are out of range.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// A shard does not hold to itself (its counters, histograms, groups and history).
    #[error(transparent)]
    Refused(#[from] check::Refused),
    /// A shard recorded other queries than `merge` was given.
    #[error(
        "{} recorded {flag} {theirs}; merge was given {ours}: give merge the shards' own {flag} (it runs only the queries on its own command line, never those a shard.json holds)",
        dir.display()
    )]
    Queries {
        /// The shard.
        dir: PathBuf,
        /// Which query.
        flag: &'static str,
        /// What the shard recorded, quoted (or `none`).
        theirs: String,
        /// What merge was given, quoted (or `none`).
        ours: String,
    },
    /// More shard directories than a run has shards.
    #[error("{0} shard directories: a run has at most {max} shards", max = Shard::MAX_COUNT)]
    TooManyShards(usize),
    /// The shards' files are too large together.
    #[error(
        "the shards' shard.json files hold {0} bytes together; merge reads at most {MAX_SHARD_FILES_BYTES}"
    )]
    TooLarge(u64),
    /// More events than any run sends.
    #[error("the shards' workload has {0} events; a run has at most {max}", max = check::MAX_EVENTS)]
    TooManyEvents(usize),
    /// A figure that would not fit when added up.
    #[error("the shards' {0} add up past what a counter holds")]
    Overflow(&'static str),
    /// A histogram could not be added.
    #[error("shard {shard}'s latencies: {source}")]
    Histogram {
        /// Which shard.
        shard: Shard,
        /// Why.
        source: HistogramError,
    },
    /// No database to check.
    #[error("the shards recorded the database as {0} (without its password): give {1}")]
    NoDatabase(String, &'static str),
    /// The observers (the database the receivers shared) could not be read.
    #[error("reading the database: {0}")]
    Observe(#[from] ObserveError),
    /// The inbox did not drain.
    #[error("the inbox still had {0} pending rows after the quiet timeout")]
    NotQuiet(u64),
    /// A shard's history could not be read, or the merged one written.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// The merged history could not be written.
    #[error("writing the merged history: {0}")]
    WriteHistory(#[source] std::io::Error),
}

/// The shard directories `dirs` name: each one that holds a shard.json, and the subdirectories
/// holding one of each that does not (a shared volume's `run/` with a directory per shard).
fn shard_dirs(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in dirs {
        if dir.join(PARTIAL_FILE).exists() {
            found.push(dir.clone());
            continue;
        }
        let mut inner: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join(PARTIAL_FILE).exists())
            .collect();
        inner.sort();
        if inner.is_empty() {
            // Keeps the directory, so that reading it says what is missing where.
            found.push(dir.clone());
        }
        found.extend(inner);
    }
    found
}

/// [`read_shards`], again every second while shards are missing, for up to `wait`.
async fn wait_for_shards(
    dirs: &[PathBuf],
    wait: Duration,
    key: Option<&[u8]>,
) -> Result<Vec<(PathBuf, Partial)>, MergeError> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match read_shards(&shard_dirs(dirs), key) {
            Err(
                MergeError::Missing { .. }
                | MergeError::Partial(PartialError::Io { .. } | PartialError::Read(ReadError::Io { .. })),
            ) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            done => return done,
        }
    }
}

/// Reads every shard's partial result, in index order, refusing shards that are not one run's.
fn read_shards(dirs: &[PathBuf], key: Option<&[u8]>) -> Result<Vec<(PathBuf, Partial)>, MergeError> {
    if dirs.len() > Shard::MAX_COUNT {
        return Err(MergeError::TooManyShards(dirs.len()));
    }
    // Each file is read to its own limit; together they are held to this one before any is read.
    let total: u64 =
        dirs.iter().filter_map(|d| std::fs::metadata(d.join(PARTIAL_FILE)).ok()).map(|m| m.len()).sum();
    if total > MAX_SHARD_FILES_BYTES {
        return Err(MergeError::TooLarge(total));
    }
    let read: Vec<(PathBuf, Partial)> = dirs
        .iter()
        .map(|d| {
            // A shard still running has no shard.json yet (nor a seal): reading it says it is
            // missing, and `--wait` waits. A shard.json appears only after its seal is whole.
            if let Some(key) = key
                && d.join(PARTIAL_FILE).exists()
            {
                load::partial::verify_seal(d, key)?;
            }
            Ok((d.clone(), Partial::read(d)?))
        })
        .collect::<Result<_, MergeError>>()?;
    let Some(((first_dir, first), rest)) = read.split_first() else { return Err(MergeError::NoShards) };
    for (dir, p) in rest {
        same_run(dir, p, first_dir, first)?;
    }
    let count = first.shard.count;
    let mut by_index: BTreeMap<usize, (PathBuf, Partial)> = BTreeMap::new();
    for (dir, p) in read {
        if let Some((a, _)) = by_index.get(&p.shard.index) {
            return Err(MergeError::Duplicate { shard: p.shard, a: a.clone(), b: dir });
        }
        by_index.insert(p.shard.index, (dir, p));
    }
    let missing: Vec<String> =
        (1..=count).filter(|i| !by_index.contains_key(i)).map(|i| format!("{i}/{count}")).collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { missing, count });
    }
    Ok(by_index.into_values().collect())
}

/// Refuses `p` (from `dir`) unless it is a shard of the same run as `f` (from `first`).
fn same_run(dir: &Path, p: &Partial, first: &Path, f: &Partial) -> Result<(), MergeError> {
    let checks: [(&'static str, String, String); 7] = [
        ("hookbench version", p.hookbench.clone(), f.hookbench.clone()),
        ("shard count", p.shard.count.to_string(), f.shard.count.to_string()),
        ("kind of run", p.target.describe(), f.target.describe()),
        (
            "target (receivers, database, ids, queries, parameters: rate, concurrency, retries, poison...)",
            p.target.run_identity(),
            f.target.run_identity(),
        ),
        ("workload (seed, events, chances)", json(&p.workload), json(&f.workload)),
        ("delivery plan", p.plan_digest.clone(), f.plan_digest.clone()),
        ("--start-at", format!("{:?}", p.start_at), format!("{:?}", f.start_at)),
    ];
    for (what, theirs, ours) in checks {
        if theirs != ours {
            // Both are the files': escaped before they reach a terminal.
            let (theirs, ours) =
                (crate::printable::line(&theirs).into_owned(), crate::printable::line(&ours).into_owned());
            return Err(MergeError::Mismatch { dir: dir.into(), first: first.into(), what, theirs, ours });
        }
    }
    Ok(())
}

/// A part of a partial result as JSON, to compare it whole.
fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// The shards' sends added up: counters summed (refused past u64), histograms added, the
/// longest elapsed time.
fn add_up(shards: &[(PathBuf, Partial)]) -> Result<SendReport, MergeError> {
    let histograms = Arc::new(Histograms::default());
    let mut counters = CounterSnapshot::default();
    let mut elapsed = Duration::ZERO;
    for (dir, p) in shards {
        let add = |h: &crate::stats::Latency, text: &str| {
            h.add_v2_base64(text).map_err(|source| MergeError::Histogram { shard: p.shard, source })
        };
        add(&histograms.intended, &p.latency_planned_v2)?;
        add(&histograms.actual, &p.latency_actual_v2)?;
        counters = checked_sum(&counters, &p.counters)?;
        let e = p.elapsed().map_err(|e| check::Refused {
            dir: dir.clone(),
            what: format!("elapsed_s {:?}: {e}", p.elapsed_s),
        })?;
        elapsed = elapsed.max(e);
    }
    Ok(SendReport::from_histograms(counters, histograms, elapsed))
}

/// `a + b` counter by counter, refused where one would not fit.
fn checked_sum(a: &CounterSnapshot, b: &CounterSnapshot) -> Result<CounterSnapshot, MergeError> {
    let add = |x: u64, y: u64, name| x.checked_add(y).ok_or(MergeError::Overflow(name));
    Ok(CounterSnapshot {
        deliveries: add(a.deliveries, b.deliveries, "deliveries")?,
        status_2xx: add(a.status_2xx, b.status_2xx, "status_2xx")?,
        status_4xx: add(a.status_4xx, b.status_4xx, "status_4xx")?,
        status_5xx: add(a.status_5xx, b.status_5xx, "status_5xx")?,
        db_conflicts: add(a.db_conflicts, b.db_conflicts, "db_conflicts")?,
        timeouts: add(a.timeouts, b.timeouts, "timeouts")?,
        acks_lost: add(a.acks_lost, b.acks_lost, "acks_lost")?,
        connect_errors: add(a.connect_errors, b.connect_errors, "connect_errors")?,
        resets: add(a.resets, b.resets, "resets")?,
        retries: add(a.retries, b.retries, "retries")?,
        poison_attempts: add(a.poison_attempts, b.poison_attempts, "poison_attempts")?,
        poison_non_2xx: add(a.poison_non_2xx, b.poison_non_2xx, "poison_non_2xx")?,
        gave_up: add(a.gave_up, b.gave_up, "gave_up")?,
    })
}

/// Every shard's attempts (checked, in shard order) into `tap`, in the order they were answered,
/// each shard's connections renumbered after the previous shards' so that every connection has
/// one number; each event's answers (attempts, 2xx, 4xx, last status) into `sent`, from the
/// lines, for the judge. `index` names an event's workload index from its id.
fn write_attempts(
    checked: Vec<check::Checked>,
    tap: &history::Tap,
    sent: &mut SendReport,
    index: &dyn Fn(&str) -> Option<usize>,
) -> Result<(), MergeError> {
    let mut attempts = Vec::new();
    let mut offset: u64 = 0;
    for shard in checked {
        for mut a in shard.attempts {
            if a.connection > 0 {
                a.connection = a.connection.checked_add(offset).ok_or(MergeError::Overflow("connections"))?;
            }
            a.cell = tap.cell().to_string();
            attempts.push(a);
        }
        offset = offset.checked_add(shard.most_connection).ok_or(MergeError::Overflow("connections"))?;
    }
    attempts.sort_by(|a, b| a.answered_ms.total_cmp(&b.answered_ms));
    for a in attempts {
        if let Some(i) = index(&a.event) {
            load::mark_answer(sent, i, a.status);
        }
        tap.send(Line::Attempt(a));
    }
    Ok(())
}

/// Refuses a shard of an audit whose recorded queries are not those `merge` was given: only the
/// operator's own SQL runs on the receiver's database.
fn same_queries(dir: &Path, recorded: &AuditRun, given: &Queries) -> Result<(), MergeError> {
    let quoted = |q: &Option<String>| {
        q.as_ref().map_or_else(|| "none".to_string(), |q| format!("{:?}", crate::printable::line(q)))
    };
    for (flag, theirs, ours) in [
        ("--applied-query", &recorded.applied_query, &given.applied),
        ("--update-applied-query", &recorded.update_applied_query, &given.update_applied),
        ("--state-query", &recorded.state_query, &given.state),
        ("--dead-letter-query", &recorded.dead_letter_query, &given.dead_letters),
        ("--balance-query", &recorded.balance_query, &given.balance),
        ("--count-query", &recorded.count_query, &given.count),
    ] {
        if theirs != ours {
            let ours = if ours.is_some() { format!("{flag} {}", quoted(ours)) } else { "none".to_string() };
            return Err(MergeError::Queries { dir: dir.into(), flag, theirs: quoted(theirs), ours });
        }
    }
    Ok(())
}

/// The workload the shards name, with its poison marks, refused unless it is the plan they sent.
fn shards_workload(first: &Partial) -> Result<Workload, MergeError> {
    if first.workload.events > check::MAX_EVENTS {
        return Err(MergeError::TooManyEvents(first.workload.events));
    }
    let mut workload = Workload::generate(&first.workload)?;
    match &first.target {
        Target::Bench { parameters, .. } => {
            workload.poison(parameters.poison);
        }
        // Laid out as the shards laid it out: each credit on an account of its own, where a
        // per-account aggregate judges it (a sharded audit has no other layout but the load's).
        Target::Audit(a) if a.run.parameters.layout == crate::workload::Layout::Own => {
            workload.credits_to_own_accounts();
        }
        Target::Audit(_) => {}
    }
    if plan_digest(&workload) != first.plan_digest {
        return Err(MergeError::Plan);
    }
    Ok(workload)
}

/// Merges the shards in `config.dirs`: the checker (or, for an audit, its observers) run once
/// against the database the receivers shared, the merged history written, and the report (not
/// yet written, its thresholds not yet held).
pub async fn merge(config: &MergeConfig) -> Result<Report, MergeError> {
    let shards = wait_for_shards(&config.dirs, config.wait, config.shard_key.as_deref()).await?;
    let first = &shards[0].1;
    for (dir, p) in &shards {
        if let Target::Audit(a) = &p.target {
            same_queries(dir, &a.run, &config.queries)?;
        }
    }
    let workload = shards_workload(first)?;
    let prefix = match &first.target {
        Target::Audit(a) => a.run.id_prefix.clone(),
        Target::Bench { .. } => String::new(),
    };
    let n = workload.events.len();
    let index = |id: &str| workload_index(&prefix, id, n);
    let checked: Vec<check::Checked> = shards
        .iter()
        .map(|(dir, p)| check::check_shard(dir, p, &workload, &index))
        .collect::<Result<_, _>>()?;
    let mut sent = add_up(&shards)?;
    load::size_answers(&mut sent, workload.events.len());
    let compress = sent.counters.deliveries > history::COMPRESS_PAST_ATTEMPTS;
    let history = History::create(&config.out, compress).map_err(MergeError::WriteHistory)?;
    let started = std::time::Instant::now();
    let merged = Merged {
        count: first.shard.count,
        start_at: first.start_at.clone(),
        shards: shards.iter().map(|(_, p)| p.summary()).collect(),
    };
    let mut report = match &first.target {
        Target::Bench { backend, design, database, parameters } => {
            let url = database_url(config.database_url.as_ref(), database, "--database-url")?;
            let tap = history.tap(format!("{backend}/{design}"));
            write_attempts(checked, &tap, &mut sent, &index)?;
            let mut report = Report::bench(config.run_id.clone(), (**parameters).clone());
            let cell = (*backend, *design);
            merge_bench(&mut report, cell, &url, workload, sent, (tap, config)).await?;
            report
        }
        Target::Audit(shard) => {
            let url = database_url(config.observe_db.as_ref(), &shard.run.observe_db, "--observe-db")?;
            let tap = history.tap(format!("audit/{}", Check::SHARDED.as_str()));
            write_attempts(checked, &tap, &mut sent, &index)?;
            let run = shard.run.clone();
            let audits = shards
                .into_iter()
                .filter_map(|(_, p)| match p.target {
                    Target::Audit(a) => Some(*a),
                    Target::Bench { .. } => None,
                })
                .collect();
            let settle = (config.quiet, config.settle_max);
            let queries = (config.queries.clone(), config.query_limits);
            let section =
                audit::judge_shards((&run, queries), audits, &url, workload, sent, (tap, settle)).await?;
            Report::audit(config.run_id.clone(), section)
        }
    };
    let (path, lines) = history.finish().map_err(MergeError::WriteHistory)?;
    report.header.shards = Some(merged);
    report.header.history = Some(HistoryFile::written(&path, lines));
    if let Some(bench) = report.bench_body_mut() {
        if let Some(row) = bench.rows.first_mut() {
            row.wall_s += started.elapsed().as_secs_f64();
        }
        bench.witnesses = crate::explain::report_witnesses(&config.out, config.witnesses)?;
    }
    Ok(report)
}

/// The database to read: `given` on the command line, else what the shards recorded, unless
/// they recorded it without its password.
fn database_url(given: Option<&String>, recorded: &str, flag: &'static str) -> Result<String, MergeError> {
    match given {
        Some(url) => Ok(url.clone()),
        None if recorded.contains("***") => {
            Err(MergeError::NoDatabase(crate::printable::line(recorded).into_owned(), flag))
        }
        None => Ok(recorded.to_string()),
    }
}

/// A bench's shards judged into `report`: the receivers settled, the judge run once, the
/// verdict into the history after the attempts, and the report's row.
async fn merge_bench(
    report: &mut Report,
    cell: (Backend, Design),
    url: &str,
    workload: Workload,
    sent: SendReport,
    (tap, config): (history::Tap, &MergeConfig),
) -> Result<(), MergeError> {
    let (backend, design) = cell;
    let tables = Tables::connect(url).await?;
    let observers = Observers::new(vec![Box::new(tables.clone())]);
    observers.drained(config.quiet_timeout).await.map_err(MergeError::NotQuiet)?;
    let judged = judge_cell(&workload, &sent, &observers, design, config.witnesses).await?;
    judged.write(&tap, &workload);
    let model_rows = model::handler_table(&workload);
    let model = model::handler_for_design(design).and_then(|h| model_rows.iter().find(|r| r.handler == h));
    let wall_s = sent.elapsed.as_secs_f64();
    let version = tables.version().await.ok();
    tables.close().await;
    match backend {
        Backend::Postgres => report.header.versions.postgres = version,
        Backend::Sqlite => report.header.versions.sqlite = version,
        Backend::Mysql => report.header.versions.mysql = version,
    }
    let row = bench_row((backend, design, model), sent, Default::default(), &judged, wall_s);
    if let Some(bench) = report.bench_body_mut() {
        bench.rows.push(row);
    }
    Ok(())
}
