//! `hookbench serve`: one receiver worker.

use std::io::Write;

use anyhow::Context;

use super::flags::{BoundsArgs, ReceiverArgs};
use super::{init_logging, runtime};
use crate::serve::{self, ServeConfig};
use clap::Args;
use receivers::design::Design;
use receivers::signature::Secret;
use receivers::store::Backend;
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
        isolation: args.receiver.isolation,
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
