//! `hookbench perf`: hookbench beside pgbench, wrk and oha, and the trivial endpoint they share.

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;

use super::flags::PostgresArgs;
use super::{runtime, worker_exe};
use crate::machine::Machine;
use crate::perf::{self, PerfConfig};
use crate::serve;
use clap::Args;

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

/// `hookbench perf`.
pub(super) fn run(args: &PerfArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let workers = args.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from));
    let config = PerfConfig {
        seconds: args.seconds,
        connections: args.connections,
        workers,
        postgres: args.postgres.settings(),
        exe: worker_exe(None)?,
    };
    let runs = |part| args.only.is_none_or(|only| only == part);
    let (pg, sqlite, http) = runtime()?.block_on(async {
        let pg = if runs(PerfPart::Postgres) { Some(perf::postgres_ratio(&config).await) } else { None };
        let sqlite = if runs(PerfPart::Sqlite) { Some(perf::sqlite_ratio(&config).await) } else { None };
        let http = if runs(PerfPart::Http) { Some(perf::http_comparison(&config).await) } else { None };
        (pg, sqlite, http)
    });
    if args.json {
        let json = serde_json::json!({
            "seconds": args.seconds, "connections": args.connections, "workers": workers,
            "postgres": pg.as_ref().and_then(|r| r.as_ref().ok()),
            "sqlite": sqlite.as_ref().and_then(|r| r.as_ref().ok()),
            "http": http.as_ref().and_then(|r| r.as_ref().ok()),
            "errors": [pg.as_ref().and_then(|r| r.as_ref().err()).map(ToString::to_string),
                       sqlite.as_ref().and_then(|r| r.as_ref().err()).map(ToString::to_string),
                       http.as_ref().and_then(|r| r.as_ref().err()).map(ToString::to_string)],
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        let m = Machine::detect();
        writeln!(
            out,
            "hookbench perf: {} s each, {} connections, {} ({} cores)",
            args.seconds, args.connections, m.cpu, m.cores
        )?;
        let (c, w) = (args.connections, workers);
        print_database(out, "postgres", &pg, &format!("pgbench, same transaction, {c} clients"), w, c)?;
        print_database(
            out,
            "sqlite",
            &sqlite,
            &format!("sqlx loop, same transaction, {c} connections"),
            w,
            c,
        )?;
        match &http {
            None => {}
            Some(Ok(h)) => print_http(out, h, args.connections)?,
            Some(Err(e)) => writeln!(out, "http      not measured: {e}")?,
        }
    }
    pg.transpose()?;
    sqlite.transpose()?;
    http.transpose()?;
    Ok(())
}

/// A database measurement's line: the reference's rate, the atomic design's, and their ratio.
fn print_database(
    out: &mut dyn Write,
    name: &str,
    measured: &Option<Result<perf::Ratio, perf::PerfError>>,
    reference: &str,
    workers: usize,
    connections: usize,
) -> std::io::Result<()> {
    match measured {
        None => Ok(()),
        Some(Ok(r)) => writeln!(
            out,
            "{name:<9} {reference}: {:>9.0} tx/s | atomic design, {workers} workers, {connections} in flight: {:>9.0} deliveries/s | ratio {:.2}",
            r.reference_per_s, r.hookbench_per_s, r.ratio
        ),
        Some(Err(e)) => writeln!(out, "{name:<9} not measured: {e}"),
    }
}

/// The HTTP comparison's lines: the top rates (taken in turn, in this run) and the latencies at
/// the fixed rate.
fn print_http(out: &mut dyn Write, h: &perf::HttpFigures, connections: usize) -> std::io::Result<()> {
    writeln!(
        out,
        "http      trivial 200 endpoint, {connections} connections, same request, in turn: wrk {:>7.0} req/s | oha {:>7.0} req/s | sender {:>7.0} req/s | sender/wrk {:.2}, sender/oha {:.2}",
        h.wrk.reference_per_s, h.oha.reference_per_s, h.wrk.hookbench_per_s, h.wrk.ratio, h.oha.ratio
    )?;
    for l in &h.latency {
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2} ms"));
        writeln!(
            out,
            "latency   at {:.0} req/s, {:<9} p50 {:>9}, p99 {:>9} ({})",
            h.fixed_rate_per_s,
            l.tool,
            ms(l.p50_ms),
            ms(l.p99_ms),
            l.how
        )?;
    }
    Ok(())
}

/// The trivial endpoint `perf` measures the sender against (`hookbench serve-ok`).
pub(super) fn run_ok_endpoint(listen: SocketAddr, out: &mut dyn Write) -> anyhow::Result<()> {
    runtime()?.block_on(async {
        let listener =
            tokio::net::TcpListener::bind(listen).await.with_context(|| format!("binding {listen}"))?;
        writeln!(
            out,
            "{}",
            serde_json::json!({ "listening": listener.local_addr()?, "pid": std::process::id() })
        )?;
        out.flush()?;
        let shutdown = serve::shutdown_signal()?;
        axum::serve(listener, perf::ok_router()).with_graceful_shutdown(shutdown).await?;
        Ok(())
    })
}
