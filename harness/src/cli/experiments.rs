//! The failure experiments as commands of their own: `hookbench crash`, `jitter`, `retention`.

use std::io::Write;

use anyhow::bail;

use super::{CrashArgs, JitterArgs, RetentionArgs, runtime, worker_exe};
use crate::experiments::{self as lab, Experiments};
use crate::report::{experiment_sections, sections_text};

/// `hookbench jitter`.
pub(super) fn run_jitter(args: &JitterArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if !(args.time_scale > 0.0 && args.recover_s > 0.0) {
        bail!("--time-scale and --recover-s must be positive");
    }
    let section =
        runtime()?.block_on(lab::run_jitter(args.seed, args.deliveries, args.recover_s, args.time_scale))?;
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&section)?)?;
        return Ok(());
    }
    let e = Experiments { jitter: Some(section), ..Experiments::default() };
    write!(out, "{}", sections_text(&experiment_sections(&e)))?;
    Ok(())
}

/// Prints an experiment's rows (as JSON or as its table) and fails if any part could not run.
fn print_experiment<T: serde::Serialize>(
    out: &mut dyn Write,
    json: bool,
    rows: &[T],
    section: Experiments,
    errors: &[String],
) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(rows)?)?;
    } else {
        write!(out, "{}", sections_text(&experiment_sections(&section)))?;
    }
    for e in errors {
        eprintln!("hookbench: {e}");
    }
    if !errors.is_empty() {
        bail!("{} part(s) of the experiment could not run", errors.len());
    }
    Ok(())
}

/// `hookbench crash`.
pub(super) fn run_crash(args: &CrashArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let exe = worker_exe(args.worker_exe.as_deref())?;
    // The workers' logs (each injected abort says where it struck) go to a file, not the terminal.
    let log = std::env::temp_dir().join(format!("hookbench-crash-{}.log", std::process::id()));
    eprintln!("hookbench: worker logs in {}", log.display());
    let config = lab::crash::CrashConfig { seed: args.seed, events: args.events, exe, log: Some(log) };
    let (rows, errors) = runtime()?.block_on(async {
        // Made and dropped inside the runtime: dropping it stops its Postgres container.
        let setup = lab::Setup::new(args.backends.clone(), args.postgres.settings());
        lab::run_crash(&setup, &config, &args.designs).await
    });
    let section = Experiments { crash: rows.clone(), ..Experiments::default() };
    print_experiment(out, args.json, &rows, section, &errors)
}

/// `hookbench retention`.
pub(super) fn run_retention(args: &RetentionArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let (runs, errors) = runtime()?.block_on(async {
        let setup = lab::Setup::new(args.backends.clone(), args.postgres.settings());
        lab::run_retention(&setup, args.seed, args.events, args.concurrency).await
    });
    let section = Experiments { retention: runs.clone(), ..Experiments::default() };
    print_experiment(out, args.json, &runs, section, &errors)
}
