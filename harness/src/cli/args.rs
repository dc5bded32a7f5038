//! Every command's flags: the clap types, and nothing else. Each command's module turns its
//! arguments into the library's config.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use provision::{
    DEFAULT_IMAGE, DockerNetwork, ENV_DOCKER_NETWORK, ENV_PG_IMAGE, PostgresMode, PostgresSettings,
};
use receivers::design::Design;
use receivers::signature::Secret;
use receivers::store::{Backend, Isolation};

use crate::chaos::Chaos;
use crate::experiments;
use crate::shard::Shard;
use crate::workload::{ARTICLE_EVENTS, ARTICLE_SEED, WorkloadConfig};

/// Does your webhook handler apply every event exactly once? hookbench measures it.
#[derive(Debug, Parser)]
#[command(name = "hookbench", version, about, long_about = None, args_override_self = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// hookbench's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the bench: the article's workload delivered for real, in parallel, to each design's
    /// worker processes on Postgres and SQLite, then checked from the database.
    ///
    /// Prints the article-style table (with latency, and the model's figures beside the real
    /// ones) and writes report.json, report.md and report.html into --out. Fails only when nothing
    /// could run or a cell broke.
    Bench(Box<BenchArgs>),
    /// Audit a receiver hookbench did not start, black-box: the article's go-live checklist
    /// (sequential duplicate, concurrent copies, lost ack, out of order, late replay, secret
    /// rotation, hostile input, parallel load) sent to URL, judged from what an observer saw
    /// applied: the receiver's own database through your queries, or a sink its side effect calls.
    ///
    /// Prints a verdict table and writes report.json, report.md and report.html into --out.
    /// Exits 0 when every check that ran passed, 1 when one failed, 2 when the audit could not
    /// run (unreachable URL, bad flags, an observer query that fails). docs/audit.md has examples.
    Audit(Box<AuditArgs>),
    /// Merge the partial results of a sharded bench or audit (`bench --shard I/N`, `audit
    /// --shard I/N` in several processes or pods) into one run: latency histograms added
    /// exactly, counters summed, histories interleaved in time order, the checker (or the
    /// audit's observers) run once against the database the receivers shared, and --fail-on held
    /// to the merged figures. Writes the usual report files.
    ///
    /// Refuses shards of different runs (workload, seed, parameters, design, backend, hookbench
    /// version) or a shard missing or given twice, naming them. docs/scale.md.
    Merge(Box<MergeArgs>),
    /// Measure how close hookbench gets to this machine's limits: the atomic design against
    /// pgbench running the same transaction, the same on SQLite against a plain sqlx loop, and
    /// the sender against wrk and oha on a trivial endpoint, at the same connection count. Needs
    /// pgbench, wrk and oha (`just perf` installs them).
    Perf(PerfArgs),
    /// A trivial endpoint answering 200 to everything (what `perf` measures the sender against).
    #[command(hide = true)]
    ServeOk {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
    /// The article's sender experiment for real: deliveries failing together against a receiver
    /// that answers 503 until it recovers, retrying with exponential backoff without and with full
    /// jitter; measured at the receiver, beside the model's figures.
    Jitter(JitterArgs),
    /// The article's crash test with real process deaths: a worker aborts after writing the
    /// dedupe key and before the side effect (chance 0.01 per delivery, keyed as in the article),
    /// is restarted, and the delivery retried. `split` (key committed on its own) loses those
    /// events; `atomic` and `inbox` do not. Crashes are counted from the workers' exit statuses.
    Crash(CrashArgs),
    /// The article's retention test against a real dedupe store whose keys expire (expires_at)
    /// and are purged, on a virtual clock: duplicate applies for each retry schedule and key
    /// lifetime, read from the ledger, beside the model's table.
    Retention(RetentionArgs),
    /// Explain a run's verdict from its history (history.jsonl): one event's every attempt (when
    /// it was planned, sent and answered, on which worker and connection, with what status) and
    /// what the checker found in the database; or, with --anomaly, the first witnesses of a class
    /// in each cell, each with its timeline.
    Explain(ExplainArgs),
    /// Reports: render a run's Markdown and HTML, rebuild the history index, compare two runs,
    /// print report.json's JSON Schema.
    #[command(subcommand)]
    Report(ReportCommand),
    /// Print the article's simulation for a seed: handler table, traced event, same-second pairs,
    /// retention, crash and jitter tables, identical to the article's script from `events:` on.
    Model(ModelArgs),
    /// Print the three Standard Webhooks headers for a body, to try a receiver with curl.
    ///
    /// Example: hookbench sign --secret whsec_... --id evt_000001 body.json
    Sign(SignArgs),
    /// Run one receiver worker: a design over Postgres or SQLite, serving
    /// `POST /webhooks/{source}` and `GET /healthz` until SIGTERM or Ctrl-C.
    ///
    /// Once it listens it prints one JSON line, `{"listening":"127.0.0.1:PORT","pid":...}`, so
    /// `--listen 127.0.0.1:0` works. Migrations are applied at start; a SQLite file is created
    /// if missing. Several workers may share one database.
    Serve(ServeArgs),
    /// Provide a fresh database and print its URL, for `hookbench serve` or your own receiver.
    ///
    /// Prints one JSON line, `{"url":...,"backend":...}`, then holds the database (and the
    /// Postgres container, if it started one) until SIGTERM or Ctrl-C, when it drops the
    /// database unless --keep.
    Db(DbArgs),
}

/// Where Postgres comes from.
#[derive(Debug, Clone, Args)]
pub struct PostgresArgs {
    /// auto: DATABASE_URL if set, else a Docker container if an engine answers;
    /// docker: always a container (testcontainers); url: the server in --database-url.
    #[arg(long, default_value = "auto")]
    pub postgres: PostgresMode,
    /// A Postgres server to create databases on.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// The Postgres image to start (name:tag).
    #[arg(long, env = ENV_PG_IMAGE, default_value = DEFAULT_IMAGE)]
    pub pg_image: String,
    /// The container's network: bridge (ports mapped as usual), host (no bridge needed; the
    /// server listens on a free 127.0.0.1 port), or the name of another network.
    #[arg(long, env = ENV_DOCKER_NETWORK, default_value = "bridge")]
    pub docker_network: DockerNetwork,
}

impl PostgresArgs {
    /// The provisioning settings these arguments describe.
    pub fn settings(&self) -> PostgresSettings {
        PostgresSettings {
            mode: self.postgres,
            url: self.database_url.clone(),
            image: self.pg_image.clone(),
            network: self.docker_network.clone(),
            fsync: PostgresSettings::fsync_from_env(),
        }
    }
}

/// Arguments of `hookbench bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Backends to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "postgres,sqlite")]
    pub backends: Vec<Backend>,
    /// Designs to run, comma-separated [default: all seven].
    #[arg(long, value_delimiter = ',')]
    pub designs: Vec<Design>,
    /// The workload.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Worker processes per cell.
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub workers: usize,
    /// Requests in flight at most.
    #[arg(long, default_value_t = 64, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=10_000))]
    pub concurrency: usize,
    /// Events per second, open loop (each plan position leaves at position / rate); 0 sends as
    /// fast as --concurrency allows.
    #[arg(long, default_value_t = 2500.0)]
    pub rate: f64,
    /// An attempt taking longer counts as a timeout and is retried.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// First retry's backoff ceiling (full jitter below it).
    #[arg(long, default_value = "10ms", value_parser = humantime::parse_duration)]
    pub retry_base: Duration,
    /// Largest backoff ceiling.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub retry_cap: Duration,
    /// Attempts per delivery, the first included, before it is given up.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_attempts: u32,
    /// How each receiver worker works.
    #[command(flatten)]
    pub receiver: ReceiverArgs,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// The run's directory [default: reports/TIMESTAMP-SHA: the UTC time and the short git commit].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep each cell's database (Postgres databases, SQLite files under --out).
    #[arg(long)]
    pub keep: bool,
    /// How long to wait for the receivers to go quiet after the last delivery.
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    pub quiet_timeout: Duration,
    /// Do not draw progress bars.
    #[arg(long)]
    pub no_progress: bool,
    /// Thresholds that fail the run.
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    /// The executable the workers run (`serve`) [default: this one].
    #[arg(long, hide = true)]
    pub worker_exe: Option<PathBuf>,
    /// Deliver to receivers that are already running (comma-separated webhook URLs, one design)
    /// instead of starting workers; needs --database-url (the database they share, which the
    /// checker reads), --secret and exactly one --designs.
    #[arg(long, value_delimiter = ',', requires = "secret")]
    pub targets: Vec<String>,
    /// The secret the --targets verify with.
    #[arg(long, env = "HOOKBENCH_SECRET", hide_env_values = true)]
    pub secret: Option<Secret>,
    /// Chaos during each cell, KIND=RATE (strikes per second), repeatable or comma-separated:
    /// kill-worker=RATE SIGKILLs a random worker and restarts it; pg-terminate=RATE ends every
    /// receiver connection to the cell's Postgres database (pg_terminate_backend).
    #[arg(long, value_delimiter = ',', value_name = "KIND=RATE")]
    pub chaos: Vec<Chaos>,
    /// Chance a credit event is poison: sent with a negative amount, which passes the signature
    /// and the wire format and which the side effect refuses every time. The inbox acknowledges
    /// it and leaves it as a dead letter after 5 attempts; the other designs answer 500.
    #[arg(long, default_value_t = 0.0, value_name = "CHANCE")]
    pub poison: f64,
    /// Failure experiments to run after the matrix, with their defaults, into the same report
    /// (comma-separated): crash, jitter, retention. Each is also its own command.
    #[arg(long, value_delimiter = ',')]
    pub experiments: Vec<experiments::Kind>,
    /// Compress the run's history (history.jsonl.zst) whatever its size; it is compressed anyway
    /// past 50,000 planned attempts.
    #[arg(long)]
    pub history_compress: bool,
    /// Witnesses per anomaly class (duplicate, lost, stale account) and cell in the report, each
    /// with its timeline from the history (`hookbench explain` lists more).
    #[arg(long, default_value_t = 5)]
    pub witnesses: usize,
    /// Print where each cell's time went (provision, fleet start, deliveries, settle, fleet stop,
    /// checker, history and clean-up; report.json's `phases` holds them either way) and how long
    /// Postgres took to be ready.
    #[arg(long, short)]
    pub verbose: bool,
    /// Also write the run's figures to FILE in the Prometheus text format (for a node_exporter
    /// textfile collector or a push gateway; docs/reports.md).
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// Send only shard I of N of the plan (the events whose index is I-1 modulo N, every copy and
    /// duplicate of each) to --targets, and write a partial result (shard.json and the shard's
    /// history, no verdict) for `hookbench merge`. Needs --targets; docs/scale.md.
    #[arg(long, value_name = "I/N", requires = "targets")]
    pub shard: Option<Shard>,
    /// Like --shard, with N shards and this shard's index (from 0) taken from
    /// JOB_COMPLETION_INDEX, which a Kubernetes Indexed Job sets in each pod.
    #[arg(long, value_name = "N", conflicts_with = "shard", requires = "targets", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub shards: Option<usize>,
    /// When the plan's first position is due (RFC 3339, e.g. 2026-12-01T10:00:00Z), so that
    /// shards started apart keep one open-loop clock. A shard that starts late says so, sends what
    /// is already due at once, and still counts latencies from the planned times.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<jiff::Timestamp>,
}

/// Arguments of `hookbench merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The shards' directories (each with the shard.json and history a `bench --shard` wrote),
    /// or directories holding one subdirectory per shard.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Wait up to this long for shards that have not finished (as a Kubernetes Job started
    /// beside the shards does) before refusing a missing one.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub wait: Duration,
    /// The database the receivers shared [default: the one the shards recorded, when it needs no
    /// password].
    #[arg(long)]
    pub database_url: Option<String>,
    /// The merged run's directory [default: reports/merge-TIMESTAMP-SHA].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// How long to wait for the receivers to go quiet (the inbox drained) before checking.
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    pub quiet_timeout: Duration,
    /// A sharded audit's receiver database, read-only [default: the one the shards recorded, when
    /// it needs no password].
    #[arg(long, value_name = "URL")]
    pub observe_db: Option<String>,
    /// A sharded audit's observers count as settled after this long without a change.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub quiet: Duration,
    /// How long to wait for them to settle at most.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub settle_max: Duration,
    /// Witnesses per anomaly class in the report.
    #[arg(long, default_value_t = 5)]
    pub witnesses: usize,
    /// Thresholds that fail the run, held to the merged figures.
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    /// Also write the merged figures to FILE in the Prometheus text format.
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
}

/// Arguments of `hookbench perf`.
#[derive(Debug, Clone, Args)]
pub struct PerfArgs {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub seconds: u64,
    /// Connections: pgbench clients, SQLite loop connections, wrk and oha connections, hookbench
    /// requests in flight.
    #[arg(long, default_value_t = 32, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=1000))]
    pub connections: usize,
    /// Worker processes for the atomic design [default: one per core; more only add context
    /// switches on a small machine].
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub workers: Option<usize>,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Measure only one of the three.
    #[arg(long)]
    pub only: Option<PerfPart>,
}

/// One of `hookbench perf`'s three measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PerfPart {
    /// The atomic design against pgbench.
    Postgres,
    /// The atomic design on SQLite against the same transaction in a plain sqlx loop.
    Sqlite,
    /// The sender against wrk and oha.
    Http,
}

/// `hookbench report` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum ReportCommand {
    /// Print the JSON Schema of report.json (generated from hookbench's types).
    Schema,
    /// Print the JSON Schema of a line of history.jsonl.
    HistorySchema,
    /// (Re)write report.md and report.html beside a run's report.json.
    Render {
        /// The run's directory.
        run: PathBuf,
    },
    /// Rebuild index.md and index.html: a row per run and trend charts of each cell's duplicate
    /// applies, stale accounts and p99 latency.
    Index {
        /// The directory holding one folder per run.
        #[arg(default_value = "reports")]
        dir: PathBuf,
    },
    /// Print what changed from run A to run B; exit 1 when a correctness figure got worse or p99
    /// latency grew past the threshold.
    Compare {
        /// The earlier run (its directory or its report.json).
        a: PathBuf,
        /// The later run.
        b: PathBuf,
        /// p99 growth that counts as a regression, as a fraction (0.5 = +50 %).
        #[arg(long, default_value_t = 0.5)]
        p99_threshold: f64,
        /// Growth of a non-zero correctness figure tolerated as run-to-run noise, as a fraction
        /// (0: every increase is a regression; growth from zero always is).
        #[arg(long, default_value_t = 0.0)]
        tolerance: f64,
    },
}

/// Arguments of `hookbench jitter`.
#[derive(Debug, Clone, Args)]
pub struct JitterArgs {
    /// Seed of the jitter draws (the model's).
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Deliveries that fail at the same moment.
    #[arg(long, default_value_t = crate::model::jitter::DELIVERIES, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub deliveries: u32,
    /// When the receiver comes back, in (unscaled) seconds.
    #[arg(long, default_value_t = crate::model::jitter::RECOVER_S)]
    pub recover_s: f64,
    /// How much faster than the article's clock the run goes (100: its 300 s take 3 s).
    #[arg(long, default_value_t = experiments::jitter::TIME_SCALE)]
    pub time_scale: f64,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `hookbench crash`.
#[derive(Debug, Clone, Args)]
pub struct CrashArgs {
    /// Seed of the crash draws (the article's).
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Credit events (the article's 2,000; fewer take the first ids, so the draws stay its own).
    #[arg(long, default_value_t = crate::model::crash::CRASH_EVENTS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub events: usize,
    /// Backends, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "postgres,sqlite")]
    pub backends: Vec<Backend>,
    /// Designs, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "split,atomic,inbox")]
    pub designs: Vec<Design>,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Print the rows as JSON.
    #[arg(long)]
    pub json: bool,
    /// The executable the worker runs (`serve`) [default: this one].
    #[arg(long, hide = true)]
    pub worker_exe: Option<PathBuf>,
}

/// Arguments of `hookbench retention`.
#[derive(Debug, Clone, Args)]
pub struct RetentionArgs {
    /// Seed of the draws (the article's).
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Events per schedule (the article's 10,000; each is replayed for 4 key lifetimes).
    #[arg(long, default_value_t = ARTICLE_EVENTS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=200_000))]
    pub events: usize,
    /// Backends, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "postgres,sqlite")]
    pub backends: Vec<Backend>,
    /// Attempts in flight at once (those due at the same virtual second).
    #[arg(long, default_value_t = experiments::retention::CONCURRENCY, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub concurrency: usize,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Print the runs as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `hookbench db`.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// The backend.
    #[arg(long, default_value = "sqlite")]
    pub backend: Backend,
    /// Where Postgres comes from.
    #[command(flatten)]
    pub postgres: PostgresArgs,
    /// Directory for the SQLite file [default: a temporary directory, removed at the end].
    #[arg(long)]
    pub sqlite_dir: Option<PathBuf>,
    /// Keep the database (and the SQLite file) after stopping.
    #[arg(long)]
    pub keep: bool,
}

/// The workload's parameters. Defaults are the article's.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// Seed of every random draw.
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Number of logical events.
    #[arg(long, default_value_t = ARTICLE_EVENTS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    pub events: usize,
    /// Number of accounts the events are spread over.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    pub accounts: u32,
    /// Chance an event is a credit (else a plan update).
    #[arg(long, default_value_t = 0.6, value_name = "CHANCE")]
    pub p_credit: f64,
    /// Chance a plan update gets a second update in the same second.
    #[arg(long, default_value_t = 0.05, value_name = "CHANCE")]
    pub p_tie: f64,
    /// Chance an event is delivered again later.
    #[arg(long, default_value_t = 0.03, value_name = "CHANCE")]
    pub p_duplicate: f64,
    /// Chance an attempt's 2xx response is lost after the receiver committed.
    #[arg(long, default_value_t = 0.02, value_name = "CHANCE")]
    pub p_ack_lost: f64,
    /// Chance an event's first delivery arrives as two concurrent copies.
    #[arg(long, default_value_t = 0.01, value_name = "CHANCE")]
    pub p_concurrent: f64,
    /// Chance a first delivery is moved up to --shuffle-window positions.
    #[arg(long, default_value_t = 0.1, value_name = "CHANCE")]
    pub p_shuffle: f64,
    /// How many positions a shuffled delivery may move.
    #[arg(long, default_value_t = 20)]
    pub shuffle_window: u32,
}

impl WorkloadArgs {
    /// The workload these arguments describe.
    pub fn config(&self) -> WorkloadConfig {
        WorkloadConfig {
            seed: self.seed,
            events: self.events,
            accounts: self.accounts,
            p_credit: self.p_credit,
            p_tie: self.p_tie,
            p_duplicate: self.p_duplicate,
            p_ack_lost: self.p_ack_lost,
            p_concurrent: self.p_concurrent,
            p_shuffle: self.p_shuffle,
            shuffle_window: self.shuffle_window,
        }
    }
}

/// Arguments of `hookbench model`.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The workload.
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Print the figures as JSON instead of the article's tables.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `hookbench sign`.
#[derive(Debug, Clone, Args)]
pub struct SignArgs {
    /// Signing secret, `whsec_<base64>`; repeat it to sign with several (key rotation).
    #[arg(long, required = true, env = "HOOKBENCH_SECRET", hide_env_values = true)]
    pub secret: Vec<String>,
    /// The message id (`webhook-id`), stable across a message's attempts.
    #[arg(long)]
    pub id: String,
    /// Unix time in seconds to sign at [default: now].
    #[arg(long, allow_negative_numbers = true)]
    pub timestamp: Option<i64>,
    /// File holding the exact body bytes; `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    pub body: Option<PathBuf>,
}

/// Arguments of `hookbench serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The design.
    #[arg(long)]
    pub design: Design,
    /// The backend the database URL must name [default: the URL's].
    #[arg(long)]
    pub backend: Option<Backend>,
    /// The database: postgres://user:pass@host:port/db or sqlite:///path/file.db.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Signing secret, `whsec_<base64>`; repeat it for several (any one may verify).
    #[arg(long, required = true, env = "HOOKBENCH_SECRET", hide_env_values = true, value_delimiter = ' ')]
    pub secret: Vec<Secret>,
    /// How the receiver works.
    #[command(flatten)]
    pub receiver: ReceiverArgs,
    /// Honour the `hookbench-fault` request header (`crash-after-key` aborts the process after
    /// the dedupe key is written, before the side effect). For the failure experiments only:
    /// never on a receiver that matters.
    #[arg(long)]
    pub inject_faults: bool,
    /// How long the side effect itself takes (a downstream call), such as 50ms. Only `split`
    /// spends it, between committing its key and applying the effect: the window a crash loses
    /// events in. The other designs apply their effect inside a transaction.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub effect_delay: Duration,
    /// The bounds the worker holds its clients and its database to.
    #[command(flatten)]
    pub bounds: BoundsArgs,
}

/// The bounds a worker holds its clients and its database to (`serve`).
#[derive(Debug, Clone, Args)]
pub struct BoundsArgs {
    /// The largest request body, in bytes; a larger `Content-Length` is answered 413 before any
    /// of the body is read.
    #[arg(long, value_name = "BYTES", default_value_t = receivers::transport::DEFAULT_MAX_BODY_BYTES)]
    pub max_body: usize,
    /// How long a connection may take to send a request's header section, counted from when it
    /// is ready for one; an idle keep-alive connection is closed after this long too.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive once its headers have (408 after that).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub body_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog until one closes.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_clients: usize,
    /// How long a request waits for a database connection (opening one included) before it is
    /// answered 503: how quickly the worker says its database is out of reach.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub pool_timeout: Duration,
}

impl BoundsArgs {
    /// The transport limits these flags describe.
    pub fn limits(&self) -> receivers::transport::Limits {
        receivers::transport::Limits {
            max_body_bytes: self.max_body,
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            max_connections: self.max_clients,
        }
    }
}

/// How each receiver worker works (shared by `serve` and `bench`).
#[derive(Debug, Clone, Args)]
pub struct ReceiverArgs {
    /// Simulated work per delivery, such as 5ms (after the check in check-then-insert, before
    /// the transaction elsewhere, never inside one).
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub work_delay: Duration,
    /// Postgres transaction isolation.
    #[arg(long, default_value = "read-committed")]
    pub isolation: Isolation,
    /// Inbox claim loops per worker process (inbox design only).
    #[arg(long, default_value_t = 2)]
    pub inbox_workers: usize,
    /// Database connections in each worker process's pool.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_connections: u32,
}

/// Arguments of `hookbench audit`.
#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// The receiver's webhook URL (http://host:port/path).
    pub url: String,
    /// How deliveries are signed: standard-webhooks, stripe, github, shopify or none.
    #[arg(long, default_value = "standard-webhooks", value_enum)]
    pub signing: crate::wire::Scheme,
    /// A signing secret as the provider shows it (`whsec_...` for Standard Webhooks and Stripe).
    /// Give it twice, old and new, for the secret-rotation check.
    #[arg(long, env = "HOOKBENCH_AUDIT_SECRET", hide_env_values = true)]
    pub secret: Vec<String>,
    /// The bodies: hookbench, stripe (an Event object), or a template file (docs/audit.md).
    #[arg(long, default_value = "hookbench", value_name = "hookbench|stripe|FILE")]
    pub payload: String,
    /// The receiver's database, read-only (postgres://... or sqlite:...).
    #[arg(long, value_name = "URL")]
    pub observe_db: Option<String>,
    /// SQL returning one row per applied side effect (its event id), or (event id, count) rows.
    #[arg(long, value_name = "SQL")]
    pub applied_query: Option<String>,
    /// SQL returning (account, version) for each account the receiver holds.
    #[arg(long, value_name = "SQL")]
    pub state_query: Option<String>,
    /// Serve a sink at ADDR for the receiver's side effect to call instead of the real downstream
    /// service; each call is one side effect.
    #[arg(long, value_name = "ADDR")]
    pub sink: Option<String>,
    /// The JSON field of a sink call that carries the event id, when the call has no
    /// Idempotency-Key header.
    #[arg(long, default_value = "event_id")]
    pub sink_key: String,
    /// The checks to run, comma-separated (default: all that the observers allow).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub checks: Vec<crate::audit::Check>,
    /// Events per probing check (sequential duplicate, concurrent copies, lost ack; accounts for
    /// out of order).
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub probe_events: usize,
    /// Copies released together in the concurrent check.
    #[arg(long, default_value_t = 2, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..=64))]
    pub copies: usize,
    /// How long after the run the late replay is sent.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub replay_after: Duration,
    /// A shell command run before the late replay (your purge job), e.g. `./purge-old-keys.sh`.
    #[arg(long, value_name = "CMD")]
    pub retention_cmd: Option<String>,
    /// Logical events in the parallel load.
    #[arg(long, default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000_000))]
    pub events: usize,
    /// Seed of the load's draws.
    #[arg(long, default_value_t = ARTICLE_SEED)]
    pub seed: u32,
    /// Accounts the load's events are spread over.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub accounts: u32,
    /// Events per second in the load (open loop, coordinated omission corrected).
    #[arg(long, default_value_t = 200.0)]
    pub rate: f64,
    /// Requests in flight at most in the load.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// The provider whose delivery timeout the receiver is held to (and whose retry schedule the
    /// retry storm follows): stripe 30s, github 10s, shopify 5s, standard-webhooks 15s (sources
    /// in docs/audit.md).
    #[arg(long, value_enum)]
    pub provider: Option<crate::audit::Provider>,
    /// An attempt taking longer counts as a timeout and is retried [default: the provider's
    /// timeout, or 10s].
    #[arg(long, value_parser = humantime::parse_duration)]
    pub timeout: Option<Duration>,
    /// Attempts per event in the load before it is given up (at least 30 in the crash check).
    #[arg(long, default_value_t = 10)]
    pub max_attempts: u32,
    /// Kills the receiver, run through `sh -c`: `kill -9 $(cat app.pid)`, `docker kill app`.
    /// With --start-cmd and --health-url, runs the crash check.
    #[arg(long, value_name = "CMD", requires_all = ["start_cmd", "health_url"])]
    pub kill_cmd: Option<String>,
    /// Starts the receiver again, run through `sh -c` and not waited for (its output is
    /// discarded; redirect it in CMD to keep it): `./run-app.sh`, `docker start app`.
    #[arg(long, value_name = "CMD", requires_all = ["kill_cmd", "health_url"])]
    pub start_cmd: Option<String>,
    /// A URL that answers 2xx once the receiver serves, polled after --start-cmd.
    #[arg(long, value_name = "URL", requires_all = ["kill_cmd", "start_cmd"])]
    pub health_url: Option<String>,
    /// How long a restart may take before the audit gives up.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub restart_timeout: Duration,
    /// Kills during the crash check's load, at seeded moments.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub kills: u32,
    /// Poison events are credits to this account, which your handler is known to refuse (runs the
    /// poison check).
    #[arg(long, value_name = "N", conflicts_with = "poison_template")]
    pub poison_account: Option<i64>,
    /// Poison events take the credit body of this template (the --payload template format), a
    /// body your handler fails on (runs the poison check).
    #[arg(long, value_name = "FILE")]
    pub poison_template: Option<PathBuf>,
    /// Chance a credit of the poison check's load is poison.
    #[arg(long = "poison", value_name = "CHANCE", default_value_t = 0.05)]
    pub poison_chance: f64,
    /// The other events' p99 with poison may be at most this many times their p99 without (taken
    /// as at least 20 ms).
    #[arg(long, default_value_t = 3.0)]
    pub poison_p99_factor: f64,
    /// SQL returning one row (event id) per dead letter in your receiver's store; each poison
    /// event must be found there.
    #[arg(long, value_name = "SQL")]
    pub dead_letter_query: Option<String>,
    /// Ramps the rate from FROM to TO events per second (runs the capacity check), e.g. 50..500.
    #[arg(long, value_name = "FROM..TO", value_parser = crate::audit::parse_ramp)]
    pub ramp: Option<(f64, f64)>,
    /// Steps of the ramp, both ends included.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub ramp_steps: u32,
    /// How long each step of the ramp sends.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub step_duration: Duration,
    /// The capacity check fails below this rate [default: the ramp's first].
    #[arg(long, value_name = "RATE")]
    pub min_capacity: Option<f64>,
    /// An outage in the provider's time, e.g. 1h (runs the retry-storm check; needs --kill-cmd,
    /// --start-cmd and --health-url).
    #[arg(long, value_parser = humantime::parse_duration, requires = "kill_cmd")]
    pub outage: Option<Duration>,
    /// How much faster than the provider's clock the retry storm runs (1000: an hour in 3.6 s).
    #[arg(long, default_value_t = 1000.0)]
    pub time_scale: f64,
    /// Events in the retry storm's batch.
    #[arg(long, default_value_t = 200, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub storm_events: usize,
    /// How long a stalled body may be held open before it counts against the receiver.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub stall_wait: Duration,
    /// Size of the oversized body the hostile-input check sends.
    #[arg(long, default_value_t = 8 << 20)]
    pub oversized_bytes: usize,
    /// How long the observers must see no change before the audit judges.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub quiet: Duration,
    /// How long to wait for the observers to settle at most.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub settle_max: Duration,
    /// The prefix of every event id this audit sends (default: `a` and the time in base 36).
    #[arg(long)]
    pub id_prefix: Option<String>,
    /// Added to every account number (default: from the time, a range no earlier audit used).
    #[arg(long)]
    pub account_base: Option<i64>,
    /// Where the reports go (default `reports/audit-<time>-<sha>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No step lines on stderr.
    #[arg(long)]
    pub no_progress: bool,
    /// Thresholds that fail the audit.
    #[command(flatten)]
    pub thresholds: ThresholdArgs,
    /// Also write the audit's verdicts and figures to FILE in the Prometheus text format (each
    /// check's status, the loads' figures; docs/reports.md).
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// Send only shard I of N of the parallel load (the events whose index is I-1 modulo N) and
    /// write a partial result (shard.json and the shard's history, no verdict) for `hookbench
    /// merge`, which asks the --observe-db once every shard is done. Runs the load alone; needs
    /// --observe-db and one id space for every shard (--start-at, or --id-prefix and
    /// --account-base). docs/scale.md.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Like --shard, with N shards and this shard's index (from 0) taken from
    /// JOB_COMPLETION_INDEX, which a Kubernetes Indexed Job sets in each pod.
    #[arg(long, value_name = "N", conflicts_with = "shard", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub shards: Option<usize>,
    /// When a sharded load's first position is due (RFC 3339), the same for every shard; the
    /// run's ids and accounts are made from it.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<jiff::Timestamp>,
}

/// `--fail-on` thresholds (bench and audit).
#[derive(Debug, Clone, Default, Args)]
pub struct ThresholdArgs {
    /// Fail the run (exit 3) when a figure crosses a line: `[SCOPE:]FIGURE OP NUMBER`, such as
    /// `dup_events>0`, `postgres/atomic:lost>0`, `p99_ms>250`, `throughput_per_s<1000` (an audit's
    /// scope is a check: `crash:lost>0`, `capacity_per_s<100`). Repeatable; docs/reports.md lists
    /// the figures.
    #[arg(long, value_name = "EXPR", value_parser = parse_threshold)]
    pub fail_on: Vec<crate::threshold::Threshold>,
    /// Read thresholds from FILE, one expression a line (`#` comments).
    #[arg(long, value_name = "FILE")]
    pub fail_on_file: Option<PathBuf>,
}

fn parse_threshold(s: &str) -> Result<crate::threshold::Threshold, String> {
    crate::threshold::Threshold::parse(s).map_err(|e| e.to_string())
}

/// Arguments of `hookbench explain`.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["event", "anomaly"])))]
pub struct ExplainArgs {
    /// The run's directory (where report.json and history.jsonl are).
    pub run_dir: PathBuf,
    /// The event to explain (`evt_000132`), in every cell unless --cell says which.
    pub event: Option<String>,
    /// List the witnesses of a class instead: duplicate, lost, stale-write or stale-account.
    #[arg(long, value_enum)]
    pub anomaly: Option<crate::explain::Anomaly>,
    /// Only this cell (`postgres/atomic`).
    #[arg(long)]
    pub cell: Option<String>,
    /// Witnesses per cell.
    #[arg(long, default_value_t = 5)]
    pub witnesses: usize,
}
