//! `hookbench model`: the article's simulation, printed as its script prints it.

use std::io::Write;

use super::flags::WorkloadArgs;
use crate::machine::Machine;
use crate::model::ModelReport;
use clap::Args;

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

/// `hookbench model`.
pub(super) fn run(args: &ModelArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let config = args.workload.config();
    let report = ModelReport::run(&config).map_err(|e| super::usage(format!("invalid workload: {e}")))?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "hookbench model (the article's simulation, reproduced; synthetic data)")?;
    writeln!(out, "seed: {}", config.seed)?;
    writeln!(out, "hookbench: {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "sqlite: not used (the model keeps the script's tables in memory)")?;
    writeln!(out, "machine: {}", Machine::detect().summary())?;
    writeln!(out, "run date: {}", jiff::Timestamp::now().strftime("%Y-%m-%d"))?;
    out.write_all(report.render().as_bytes())?;
    Ok(())
}
