//! `hookbench explain`: a run's recorded verdict, event by event or class by class.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};

use crate::judge::Class;

/// Arguments of `hookbench explain`.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["event", "anomaly"])))]
pub struct ExplainArgs {
    /// The run's directory (where report.json and history.jsonl are).
    pub run_dir: PathBuf,
    /// The event to explain (`evt_000132`), in every cell unless --cell says which.
    pub event: Option<String>,
    /// List the witnesses of an anomaly class the judge recorded instead, named as reports name
    /// it.
    #[arg(long, value_parser = anomaly_class())]
    pub anomaly: Option<Class>,
    /// Only this cell (`postgres/atomic`).
    #[arg(long)]
    pub cell: Option<String>,
    /// Witnesses per cell.
    #[arg(long, default_value_t = 5)]
    pub witnesses: usize,
}

/// `hookbench explain`.
pub(super) fn run(args: &ExplainArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let question = match (&args.event, args.anomaly) {
        (_, Some(class)) => crate::explain::Question::Anomaly(class, args.witnesses),
        (Some(id), None) => crate::explain::Question::Event(id.clone()),
        (None, None) => return Err(super::usage("give an EVENT_ID or --anomaly")),
    };
    let text =
        crate::explain::explain(&args.run_dir, &question, args.cell.as_deref()).map_err(super::usage)?;
    // The history is a file from outside: its ids, details and summaries reach the terminal with
    // their control characters escaped (each line stays one line).
    write!(out, "{}", crate::printable::lines(&text))?;
    Ok(())
}

/// `--anomaly`'s parser: a class by the name reports give it, the names listed in `--help` and
/// in the error for any other (the judge knows nothing of the command line).
fn anomaly_class() -> impl TypedValueParser<Value = Class> {
    PossibleValuesParser::new(Class::ALL.iter().map(|c| c.name())).map(|name| {
        Class::ALL.iter().copied().find(|c| c.name() == name).expect("clap took one of the names")
    })
}
