//! `hookbench perf`: hookbench beside pgbench, wrk and oha, and the trivial endpoint they share.

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;

use super::flags::PostgresArgs;
use super::{runtime, worker_exe};
use crate::machine::Machine;
use crate::perf::{self, PerfConfig, Round, Summary};
use crate::serve;
use clap::Args;

/// Arguments of `hookbench perf`.
#[derive(Debug, Clone, Args)]
pub struct PerfArgs {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub seconds: u64,
    /// Rounds (1 to 50): every measurement once per round, the rounds taken in turn, each ratio
    /// then given as its median and range over them.
    #[arg(long, default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=50))]
    pub rounds: usize,
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
    /// Measure only one of them. Without it, postgres, sqlite and http are measured; mysql only
    /// when asked for here (it needs MySQL or MariaDB: `MYSQL_URL`, or a container as `bench`
    /// starts one).
    #[arg(long)]
    pub only: Option<PerfPart>,
}

/// One of `hookbench perf`'s three measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PerfPart {
    /// The atomic design against pgbench.
    Postgres,
    /// The atomic design on SQLite against the same transaction in a plain sqlx loop, and
    /// through SQLite's C API on one connection.
    Sqlite,
    /// The sender against wrk and oha.
    Http,
    /// The atomic design on MySQL or MariaDB against mysqlslap running the same transaction.
    Mysql,
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
    let runs = |part| match args.only {
        Some(only) => only == part,
        None => part != PerfPart::Mysql,
    };
    let rounds: Vec<Round> = runtime()?.block_on(async {
        let mut rounds = Vec::with_capacity(args.rounds);
        for n in 1..=args.rounds {
            let say = |part: &str| eprintln!("hookbench perf: round {n}/{}: {part}", args.rounds);
            let mut round = Round { postgres: None, sqlite: None, mysql: None, http: None };
            if runs(PerfPart::Postgres) {
                say("postgres");
                round.postgres = Some(perf::postgres_ratio(&config).await);
            }
            if runs(PerfPart::Sqlite) {
                say("sqlite");
                round.sqlite = Some(perf::sqlite_ratio(&config).await);
            }
            if runs(PerfPart::Mysql) {
                say("mysql");
                round.mysql = Some(perf::mysql_ratio(&config, &provision::MysqlSettings::from_env()).await);
            }
            if runs(PerfPart::Http) {
                say("http");
                round.http = Some(perf::http_comparison(&config).await);
            }
            rounds.push(round);
        }
        rounds
    });
    let summary = Summary::of(&rounds);
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&json(args, workers, &rounds, &summary))?)?;
    } else {
        let m = Machine::detect();
        writeln!(
            out,
            "hookbench perf: {} s each, {} connections, {} round(s), {} ({} cores)",
            args.seconds, args.connections, args.rounds, m.cpu, m.cores
        )?;
        for (n, round) in rounds.iter().enumerate() {
            writeln!(out, "round {}", n + 1)?;
            print_round(out, round, workers, args.connections)?;
        }
        print_summary(out, &summary)?;
    }
    // Every figure printed first; then the first measurement that could not be made fails the run.
    for round in rounds {
        round.postgres.transpose()?;
        round.sqlite.transpose()?;
        round.mysql.transpose()?;
        round.http.transpose()?;
    }
    Ok(())
}

/// The run as JSON: its settings, each round's figures and errors, and the spreads.
fn json(args: &PerfArgs, workers: usize, rounds: &[Round], summary: &Summary) -> serde_json::Value {
    fn part<T: serde::Serialize>(r: &Option<Result<T, perf::PerfError>>) -> serde_json::Value {
        match r {
            None => serde_json::Value::Null,
            Some(Ok(figures)) => serde_json::json!(figures),
            Some(Err(e)) => serde_json::json!({ "error": e.to_string() }),
        }
    }
    let rounds: Vec<serde_json::Value> = rounds
        .iter()
        .map(|r| {
            serde_json::json!({
                "postgres": part(&r.postgres), "sqlite": part(&r.sqlite), "mysql": part(&r.mysql),
                "http": part(&r.http),
            })
        })
        .collect();
    serde_json::json!({
        "seconds": args.seconds, "connections": args.connections, "workers": workers,
        "rounds": rounds, "summary": summary,
    })
}

/// One round's lines.
fn print_round(
    out: &mut dyn Write,
    round: &Round,
    workers: usize,
    connections: usize,
) -> std::io::Result<()> {
    let (c, w) = (connections, workers);
    print_database(
        out,
        "postgres",
        &round.postgres,
        &format!("pgbench, same transaction, {c} clients"),
        w,
        c,
    )?;
    print_database(
        out,
        "sqlite",
        &round.sqlite,
        &format!("sqlx loop, same transaction, {c} connections"),
        w,
        c,
    )?;
    print_database(out, "mysql", &round.mysql, &format!("mysqlslap, same transaction, {c} clients"), w, c)?;
    match &round.http {
        None => Ok(()),
        Some(Ok(h)) => print_http(out, h, connections),
        Some(Err(e)) => writeln!(out, "http      not measured: {e}"),
    }
}

/// Each ratio's median and range over the rounds that measured it.
fn print_summary(out: &mut dyn Write, s: &Summary) -> std::io::Result<()> {
    writeln!(out, "over the rounds: median (lowest to highest)")?;
    for (name, spread) in [
        ("postgres  atomic/pgbench", s.postgres),
        ("sqlite    atomic/sqlx loop", s.sqlite),
        ("sqlite    atomic/C API loop", s.sqlite_direct),
        ("mysql     atomic/mysqlslap", s.mysql),
        ("http      sender/wrk", s.sender_wrk),
        ("http      sender/oha", s.sender_oha),
    ] {
        if let Some(spread) = spread {
            writeln!(out, "{name:<28} {spread}")?;
        }
    }
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
        Some(Ok(r)) => {
            writeln!(
                out,
                "{name:<9} {reference}: {:>9.0} tx/s | atomic design, {workers} workers, {connections} in flight: {:>9.0} deliveries/s | ratio {:.2}",
                r.reference_per_s, r.hookbench_per_s, r.ratio
            )?;
            if let Some(alone) = r.one_connection_per_s {
                writeln!(out, "{:<9} the same loop on 1 connection: {alone:.0} tx/s", "")?;
            }
            if let Some(direct) = r.direct_per_s {
                writeln!(
                    out,
                    "{:<9} the receivers' transaction through SQLite's C API, 1 connection: {direct:.0} tx/s | ratio {:.2}",
                    "",
                    r.hookbench_per_s / direct.max(1e-9)
                )?;
            }
            if let Some(stages) = &r.reference_stages {
                writeln!(out, "{:<9} the loop, per transaction: {stages}", "")?;
            }
            match &r.workers {
                Some(stages) => writeln!(out, "{:<9} the workers, per delivery: {stages}", ""),
                None => Ok(()),
            }
        }
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
