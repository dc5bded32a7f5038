//! `hookbench audit`: its arguments as an [`AuditConfig`], the audit, the verdict table, the
//! reports and the exit status (0 passed, 1 a check failed, 2 the audit could not run).

use std::io::{self, IsTerminal, Write};

use super::{AuditArgs, Exit, run_dir, runtime};
use crate::audit::{self, AuditConfig};
use crate::report::{Report, render_audit_table};
use crate::sender::RetryPolicy;
use crate::workload::WorkloadConfig;

impl TryFrom<&AuditArgs> for AuditConfig {
    type Error = anyhow::Error;

    fn try_from(a: &AuditArgs) -> anyhow::Result<Self> {
        let config = AuditConfig {
            url: a.url.clone(),
            signing: a.signing,
            secrets: a.secret.clone(),
            payload: a.payload.parse()?,
            observe_db: a.observe_db.clone(),
            applied_query: a.applied_query.clone(),
            state_query: a.state_query.clone(),
            sink: a.sink.clone(),
            sink_key: a.sink_key.clone(),
            checks: a.checks.clone(),
            probe_events: a.probe_events,
            copies: a.copies,
            replay_after: a.replay_after,
            retention_cmd: a.retention_cmd.clone(),
            workload: WorkloadConfig {
                seed: a.seed,
                events: a.events,
                accounts: a.accounts,
                ..WorkloadConfig::default()
            },
            rate: a.rate,
            concurrency: a.concurrency,
            timeout: a.timeout,
            retry: RetryPolicy { max_attempts: a.max_attempts, ..RetryPolicy::default() },
            stall_wait: a.stall_wait,
            oversized_bytes: a.oversized_bytes,
            quiet: a.quiet,
            settle_max: a.settle_max,
            id_prefix: a.id_prefix.clone(),
            account_base: a.account_base,
        };
        config.validate()?;
        Ok(config)
    }
}

/// Any error before or during the audit is exit status 2: the audit could not run.
fn could_not_run(err: impl std::fmt::Display) -> anyhow::Error {
    Exit { code: 2, message: format!("the audit could not run: {err:#}") }.into()
}

pub(super) fn run(args: &AuditArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let config = AuditConfig::try_from(args).map_err(could_not_run)?;
    let progress = !args.no_progress && io::stderr().is_terminal();
    let step = move |what: &str| {
        if progress {
            eprintln!("hookbench audit: {what}");
        }
    };
    let section =
        runtime().map_err(could_not_run)?.block_on(audit::run(&config, &step)).map_err(could_not_run)?;
    let (run_id, dir) = run_dir(args.out.as_deref(), "audit-");
    let report = Report::of_audit(run_id, &config, section);
    let path =
        report.write_all(&dir).map_err(|e| could_not_run(format!("writing {}: {e}", dir.display())))?;
    write!(out, "{}", render_audit_table(&report))?;
    writeln!(out, "\nreport: {}", path.display())?;
    match &report.audit {
        Some(a) if a.failed() => {
            let failed: Vec<&str> = a
                .checks
                .iter()
                .filter(|c| c.status == audit::Status::Fail)
                .map(|c| c.check.as_str())
                .collect();
            Err(Exit { code: 1, message: format!("the receiver failed: {}", failed.join(", ")) }.into())
        }
        _ => Ok(()),
    }
}
