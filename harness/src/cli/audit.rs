//! `hookbench audit`: its arguments as an [`AuditConfig`], the audit, the verdict table, the
//! reports and the exit status (0 passed, 1 a check failed, 2 the audit could not run, 3 every
//! check passed and a `--fail-on` threshold was breached).

use std::io::{self, IsTerminal, Write};

use super::{AuditArgs, Exit, FAIL_ON_SHARD, breached, hold_to, print_partial, run_dir, runtime};
use std::time::Duration;

use crate::audit::{self, AuditConfig, Control, Provider, Ramp};
use crate::history::History;
use crate::report::{AUDIT_FIGURES, HistoryFile, Report, audit_scopes, render_audit_table, render_metrics};
use crate::sender::RetryPolicy;
use crate::shard::Shard;
use crate::wire::{Payload, Poison, payload::Template};
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
            dead_letter_query: a.dead_letter_query.clone(),
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
            timeout: a.timeout.or(a.provider.map(Provider::timeout)).unwrap_or(DEFAULT_TIMEOUT),
            retry: RetryPolicy { max_attempts: a.max_attempts, ..RetryPolicy::default() },
            stall_wait: a.stall_wait,
            oversized_bytes: a.oversized_bytes,
            quiet: a.quiet,
            settle_max: a.settle_max,
            id_prefix: a.id_prefix.clone(),
            account_base: a.account_base,
            control: control(a),
            kills: a.kills,
            poison: poison(a)?,
            poison_chance: a.poison_chance,
            poison_p99_factor: a.poison_p99_factor,
            provider: a.provider,
            ramp: a.ramp.map(|(from, to)| Ramp {
                from,
                to,
                steps: a.ramp_steps,
                step_duration: a.step_duration,
            }),
            min_capacity: a.min_capacity,
            outage: a.outage,
            time_scale: a.time_scale,
            storm_events: a.storm_events,
            history: None,
            shard: Shard::from_flags_and_env(a.shard, a.shards)?,
            start_at: a.start_at,
        };
        config.validate()?;
        Ok(config)
    }
}

/// An attempt's timeout without --timeout or --provider.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

fn control(a: &AuditArgs) -> Option<Control> {
    Some(Control {
        kill_cmd: a.kill_cmd.clone()?,
        start_cmd: a.start_cmd.clone()?,
        health_url: a.health_url.clone()?,
        restart_timeout: a.restart_timeout,
    })
}

fn poison(a: &AuditArgs) -> anyhow::Result<Option<Poison>> {
    Ok(match (a.poison_account, &a.poison_template) {
        (Some(account), _) => Some(Poison::Account(account)),
        (None, Some(path)) => Some(Poison::Template(Payload::Template(
            Template::read(path).map_err(|e| anyhow::anyhow!("--poison-template: {e}"))?,
        ))),
        (None, None) => None,
    })
}

/// Any error before or during the audit is exit status 2: the audit could not run.
fn could_not_run(err: impl std::fmt::Display) -> anyhow::Error {
    Exit { code: 2, message: format!("the audit could not run: {err:#}") }.into()
}

/// One shard of a sharded audit's parallel load: sent (its attempts into `history`), its history
/// and partial result written, no verdict (`hookbench merge` judges the shards together).
fn run_shard(
    mut config: AuditConfig,
    (shard, run_id, dir): (Shard, String, &std::path::Path),
    (history, step): (History, &(dyn Fn(&str) + Sync)),
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if let Some(line) = crate::shard::late_start(shard, config.start_at) {
        eprintln!("hookbench audit: {line}");
    }
    let partial = runtime().map_err(could_not_run)?.block_on(audit::run_shard(&config, shard, run_id, step));
    // Every tap dropped, so that the writer can finish.
    config.history = None;
    history.finish().map_err(|e| could_not_run(format!("writing the history: {e}")))?;
    let partial = partial.map_err(could_not_run)?;
    let path = partial.write(dir).map_err(|e| could_not_run(anyhow::Error::from(e)))?;
    print_partial(&partial, &path, out)?;
    Ok(())
}

pub(super) fn run(args: &AuditArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let thresholds = args.thresholds.resolve(&audit_scopes(), AUDIT_FIGURES).map_err(could_not_run)?;
    let mut config = AuditConfig::try_from(args).map_err(could_not_run)?;
    let (run_id, dir) = run_dir(args.out.as_deref(), "audit-");
    if config.shard.is_some() && !thresholds.is_empty() {
        return Err(could_not_run(FAIL_ON_SHARD));
    }
    // The loads' attempts and fates, as a bench's (an audit's loads are small: never compressed).
    let history = History::create(&dir, false)
        .map_err(|e| could_not_run(format!("writing the history in {}: {e}", dir.display())))?;
    config.history = Some(history.tap("audit".into()));
    let progress = !args.no_progress && io::stderr().is_terminal();
    let step = move |what: &str| {
        if progress {
            eprintln!("hookbench audit: {what}");
        }
    };
    if let Some(shard) = config.shard {
        return run_shard(config, (shard, run_id, &dir), (history, &step), out);
    }
    let section = runtime().map_err(could_not_run)?.block_on(audit::run(&config, &step));
    // Every tap dropped, so that the writer can finish.
    config.history = None;
    let written = history.finish().map_err(|e| could_not_run(format!("writing the history: {e}")));
    let section = section.map_err(could_not_run)?;
    let (path, lines) = written?;
    let mut report = Report::of_audit(run_id, &config, section);
    report.history = Some(HistoryFile::written(&path, lines));
    hold_to(&mut report, &thresholds);
    let path =
        report.write_all(&dir).map_err(|e| could_not_run(format!("writing {}: {e}", dir.display())))?;
    if let Some(file) = &args.metrics {
        let text =
            render_metrics(&report).map_err(|e| could_not_run(format!("encoding the metrics: {e}")))?;
        std::fs::write(file, text)
            .map_err(|e| could_not_run(format!("writing --metrics {}: {e}", file.display())))?;
    }
    write!(out, "{}", render_audit_table(&report))?;
    write!(out, "{}", crate::threshold::render(&report.thresholds))?;
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
        _ => breached(&report).map_or(Ok(()), |exit| Err(exit.into())),
    }
}
