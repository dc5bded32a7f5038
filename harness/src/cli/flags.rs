//! Flag groups several commands share: where Postgres comes from, the workload, thresholds, how a
//! receiver worker works and the bounds it holds its clients to.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use provision::{
    DEFAULT_IMAGE, DockerNetwork, ENV_DOCKER_NETWORK, ENV_PG_IMAGE, PostgresMode, PostgresSettings,
};
use receivers::store::Isolation;

use crate::workload::{ARTICLE_EVENTS, ARTICLE_SEED, WorkloadConfig};

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
