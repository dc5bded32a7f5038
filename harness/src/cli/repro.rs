//! `hookbench repro`: an audit's FAIL as a standalone Python 3 script (crate::repro).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::report::{Check, Report};
use crate::wire::Payload;

/// Arguments of `hookbench repro`.
#[derive(Debug, Clone, Args)]
pub struct ReproArgs {
    /// The audit's directory (where its report.json is).
    pub run_dir: PathBuf,
    /// The check whose finding to reproduce (this version: concurrent-copies, sequential-duplicate,
    /// lost-ack, race-window or semantic-duplicate, of an audit signed as Standard Webhooks or
    /// Stripe, or not signed, with hookbench's bodies or a template).
    #[arg(long, value_enum)]
    pub check: Check,
    /// The query to judge with, rows of (event_id) or (event_id, count) [default: the one the
    /// audit judged with, as report.json records it].
    #[arg(long = "applied-query", value_name = "SQL")]
    pub applied_query: Option<String>,
    /// The template the audit sent, when its recorded path (report.json's `payload`) is not the
    /// one to read from here [default: the recorded one].
    #[arg(long, value_name = "FILE")]
    pub payload: Option<PathBuf>,
    /// Write a pytest module instead (one test per class of the finding), reading
    /// HOOKBENCH_REPRO_URL, HOOKBENCH_REPRO_DB and HOOKBENCH_SECRET: it fails while the receiver
    /// still shows the finding and passes once it is fixed.
    #[arg(long)]
    pub pytest: bool,
    /// Where to write the script. It holds no secret: it reads HOOKBENCH_SECRET when it runs.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// `hookbench repro`.
pub(super) fn run(args: &ReproArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let path = args.run_dir.join("report.json");
    let report = Report::read_json(&path).map_err(|e| super::usage(format!("{}: {e:#}", path.display())))?;
    let audit =
        report.audit_section().ok_or_else(|| super::usage(format!("{}: not an audit", path.display())))?;
    let name = args.payload.as_ref().map_or_else(|| audit.payload.clone(), |p| p.display().to_string());
    let payload = Payload::with(&name, &[], &[]).map_err(|e| super::usage(format!("--payload: {e:#}")))?;
    let query = args.applied_query.clone().or_else(|| audit.applied_query.clone()).ok_or_else(|| {
        super::usage(format!(
            "--applied-query: {} records no applied query (an older report, or an audit without one); give the query to judge with",
            path.display()
        ))
    })?;
    let form = if args.pytest { crate::repro::Form::Pytest } else { crate::repro::Form::Script };
    let script =
        crate::repro::python_script(&report, args.check, &payload, &query, form).map_err(super::usage)?;
    crate::files::write_nofollow(&args.out, script.as_bytes())
        .map_err(|e| super::usage(format!("--out {}: {e:#}", args.out.display())))?;
    writeln!(
        out,
        "wrote {}: run it against a fresh receiver, its secret in HOOKBENCH_SECRET: python3 {} --url URL --db DATABASE",
        args.out.display(),
        args.out.display()
    )?;
    Ok(())
}
