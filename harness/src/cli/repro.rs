//! `hookbench repro`: an audit's FAIL as a standalone Python 3 or Node script (crate::repro).

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
    /// The check whose finding to reproduce: concurrent-copies, sequential-duplicate, lost-ack,
    /// race-window, out-of-order (judged by the state query), semantic-duplicate, late-replay (the
    /// script takes --retention-cmd and --replay-after), hostile-input (the cases its witnesses
    /// show: tampered, wrong secret, unsigned, stale or future timestamps, malformed JSON, one id
    /// with another body, a stalled body, a body past --oversized-bytes), crash (the script takes
    /// --kill-cmd and --start-cmd; its events sent with the audit's load's copies) or poison (of
    /// an audit with --poison-account; judged by the dead-letter query when it had one), of an audit
    /// signed by any scheme hookbench signs (Twilio's forms only; SendGrid and Discord with the
    /// private key in HOOKBENCH_SECRET).
    #[arg(long, value_enum)]
    pub check: Check,
    /// The query to judge with, rows of (event_id) or (event_id, count) [default: the one the
    /// audit judged with, as report.json records it].
    #[arg(long = "applied-query", value_name = "SQL")]
    pub applied_query: Option<String>,
    /// The query out-of-order judges with, rows of (account, version) [default: the one the
    /// audit judged with, as report.json records it].
    #[arg(long = "state-query", value_name = "SQL")]
    pub state_query: Option<String>,
    /// A balance query to judge with, rows of (account, balance), when the audit judged by each
    /// account's balance [default: the recorded one]. Used where no applied query is given.
    #[arg(long = "balance-query", value_name = "SQL")]
    pub balance_query: Option<String>,
    /// A count query to judge with, rows of (account, effect rows) [default: the recorded one].
    /// Used where no applied or balance query is given.
    #[arg(long = "count-query", value_name = "SQL")]
    pub count_query: Option<String>,
    /// The dead-letter query poison judges with, rows of (event id) [default: the recorded one].
    #[arg(long = "dead-letter-query", value_name = "SQL")]
    pub dead_letter_query: Option<String>,
    /// The template the audit sent, when its recorded path (report.json's `payload`) is not the
    /// one to read from here [default: the recorded one].
    #[arg(long, value_name = "FILE")]
    pub payload: Option<PathBuf>,
    /// Write a pytest module instead (one test per class of the finding), reading
    /// HOOKBENCH_REPRO_URL, HOOKBENCH_REPRO_DB and HOOKBENCH_SECRET: it fails while the receiver
    /// still shows the finding and passes once it is fixed.
    #[arg(long, conflicts_with = "node")]
    pub pytest: bool,
    /// Write the script for Node 18+ instead (node:http, node:crypto; `pg` for a Postgres
    /// observer, node:sqlite on Node 22.5+ or better-sqlite3 for SQLite), for receivers written in
    /// JavaScript: `node repro.js --url URL --db DATABASE`.
    #[arg(long)]
    pub node: bool,
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
    let payload = match &args.payload {
        Some(p) => Payload::with(&p.display().to_string(), &[], &[]),
        None => Payload::from_report_name(&audit.payload),
    }
    .map_err(|e| super::usage(format!("--payload: {e:#}")))?;
    let queries = crate::repro::Queries {
        applied: args.applied_query.clone().or_else(|| audit.repro.applied_query.clone()),
        state: args.state_query.clone().or_else(|| audit.repro.state_query.clone()),
        balance: args.balance_query.clone().or_else(|| audit.repro.balance_query.clone()),
        count: args.count_query.clone().or_else(|| audit.repro.count_query.clone()),
        dead_letters: args.dead_letter_query.clone().or_else(|| audit.repro.dead_letter_query.clone()),
        update_applied: None,
    };
    let form = match (args.pytest, args.node) {
        (true, _) => crate::repro::Form::Pytest,
        (_, true) => crate::repro::Form::Node,
        _ => crate::repro::Form::Script,
    };
    let script = crate::repro::script(&report, args.check, &payload, &queries, form)
        .map_err(|e| super::usage(format!("{}: {e}", path.display())))?;
    crate::files::write_nofollow(&args.out, script.as_bytes())
        .map_err(|e| super::usage(format!("--out {}: {e:#}", args.out.display())))?;
    let run = match form {
        crate::repro::Form::Node => format!("node {} --url URL --db DATABASE", args.out.display()),
        crate::repro::Form::Pytest => {
            format!("HOOKBENCH_REPRO_URL=URL HOOKBENCH_REPRO_DB=DATABASE pytest {}", args.out.display())
        }
        crate::repro::Form::Script => format!("python3 {} --url URL --db DATABASE", args.out.display()),
    };
    writeln!(
        out,
        "wrote {}: run it against a fresh receiver, its secret in HOOKBENCH_SECRET: {run}",
        args.out.display()
    )?;
    Ok(())
}
