//! `hookbench serve`: one receiver worker.

use std::io::Write;

use anyhow::Context;

use super::flags::{MAX_WAIT, MIN_TIMEOUT, ReceiverArgs, duration_within};
use super::{init_logging, runtime};
use crate::matrix::Design;
use crate::matrix::{Backend, Isolation};
use crate::serve::{self, ServeConfig};
use clap::Args;
use receivers::signature::Secret;
use receivers::transport::{DEFAULT_MAX_BODY_BYTES, Limits};
use std::net::SocketAddr;
use std::time::Duration;

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
    /// The transactions' isolation (read-committed, repeatable-read, serializable). Default: the
    /// database's own (Postgres's READ COMMITTED, MySQL's and MariaDB's REPEATABLE READ); SQLite's
    /// writers are serialized whatever it is.
    #[arg(long)]
    pub isolation: Option<Isolation>,
    /// Honour the `hookbench-fault` request header (`crash-after-key` aborts the process after
    /// the dedupe key is written, before the side effect). For the failure experiments only:
    /// never on a receiver that matters.
    #[arg(long)]
    pub inject_faults: bool,
    /// How long the side effect itself takes (a downstream call), such as 50ms. Only `split`
    /// spends it, between committing its key and applying the effect: the window a crash loses
    /// events in. The other designs apply their effect inside a transaction. 0s to 60s.
    #[arg(long, default_value = "0s", value_parser = super::flags::duration_within(Duration::ZERO, super::flags::MAX_DELAY))]
    pub effect_delay: Duration,
    /// The bounds the worker holds its clients and its database to.
    #[command(flatten)]
    pub bounds: BoundsArgs,
}

/// `hookbench serve`.
pub(super) fn run(args: ServeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    init_logging();
    let config = ServeConfig {
        design: args.design,
        backend: args.backend,
        database_url: args.database_url,
        listen: args.listen,
        secrets: args.secret,
        work_delay: args.receiver.work_delay,
        effect_delay: args.effect_delay,
        isolation: args.isolation,
        inbox_workers: args.receiver.inbox_workers,
        max_connections: args.receiver.max_connections,
        inject_faults: args.inject_faults,
        limits: args.bounds.limits(),
        pool_timeout: args.bounds.pool_timeout,
    };
    let design = config.design;
    runtime()?.block_on(async {
        let mut announced = Ok(());
        let shutdown = serve::shutdown_signal().context("installing signal handlers")?;
        serve::run(config, shutdown, |listening| {
            // The one machine-readable line; whoever started the worker waits for it.
            announced = serde_json::to_string(listening)
                .map_err(anyhow::Error::from)
                .and_then(|line| Ok(writeln!(out, "{line}").and_then(|()| out.flush())?));
        })
        .await
        .with_context(|| format!("hookbench serve --design {design}"))?;
        announced
    })
}

/// The bounds a worker holds its clients and its database to (`serve`).
#[derive(Debug, Clone, Args)]
pub struct BoundsArgs {
    /// The largest request body, in bytes; a larger `Content-Length` is answered 413 before any
    /// of the body is read. 1 to 1073741824 (1 GiB).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BODY_BYTES, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 30))]
    pub max_body: usize,
    /// How long a connection may take to send a request's header section, counted from when it
    /// is ready for one; an idle keep-alive connection is closed after this long too. 1ms to 1h.
    #[arg(long, default_value = "10s", value_parser = duration_within(MIN_TIMEOUT, MAX_WAIT))]
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive once its headers have (408 after that; 1ms
    /// to 1h).
    #[arg(long, default_value = "10s", value_parser = duration_within(MIN_TIMEOUT, MAX_WAIT))]
    pub body_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog until one closes (1 to 100000).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub max_clients: usize,
    /// How long a request waits for a database connection (opening one included) before it is
    /// answered 503: how quickly the worker says its database is out of reach. 1ms to 1h.
    #[arg(long, default_value = "2s", value_parser = duration_within(MIN_TIMEOUT, MAX_WAIT))]
    pub pool_timeout: Duration,
}

impl BoundsArgs {
    /// The transport limits these flags describe.
    pub fn limits(&self) -> Limits {
        Limits {
            max_body_bytes: self.max_body,
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            max_connections: self.max_clients,
        }
    }
}
