//! `hookbench serve`: one receiver worker.

use std::io::Write;

use anyhow::Context;

use super::{ServeArgs, init_logging, runtime};
use crate::serve::{self, ServeConfig};

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
