//! The crash check (the checklist's item 4): the seeded load sent while the receiver is killed
//! `--kills` times at seeded moments (`--kill-cmd`) and started again (`--start-cmd`, until
//! `--health-url` answers), the sender retrying whatever was not acknowledged, at least 30
//! attempts per event. PASS: every event applied exactly once by the end, and with `--state-query`
//! no account below the latest version it acknowledged; a design that commits its key before its
//! side effect acknowledges the retry of an event it never applied (lost, or a stale account for an
//! update).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::time::Instant;

use super::{AuditCheck, Delivery, EXACTLY_ONCE, Phase, Run, needs_applies};
use crate::audit::AuditError;
use crate::audit::config::{AuditConfig, CrashSettings};
use crate::audit::control::Restart;
use crate::judge::{Class, ClassSet, Needs, Rules};
use crate::load::{Load, WITNESSES, judge_load};
use crate::observe::{Sees, Snapshot};
use crate::report::{AttemptLog, Check, CheckFigures, CheckResult, CrashFigures, RestartFigure};
use crate::workload::Workload;

/// Attempts per event at least, so that the retries outlast the restarts (with backoff capped at
/// 1 s, 30 attempts span about 15 s).
const MIN_ATTEMPTS: u32 = 30;

/// Builds the check from its flags.
pub fn build(config: &AuditConfig) -> Result<Box<dyn AuditCheck + '_>, String> {
    let settings = config.crash.as_ref().ok_or("needs --kill-cmd, --start-cmd and --health-url")?;
    Ok(Box::new(Crash { settings }))
}

struct Crash<'a> {
    settings: &'a CrashSettings,
}

/// When kill `k` of `kills` happens within a load planned to last `planned`: in the middle half of
/// the `k`th equal slice, at the workload's seeded draw.
fn kill_at(workload: &Workload, k: u32, kills: u32, planned: Duration) -> Duration {
    let draw = workload.keyed(&[&"kill", &k]);
    planned.mul_f64((f64::from(k) + 0.25 + 0.5 * draw) / f64::from(kills))
}

/// The load and its restarts.
struct Crashed {
    load: Load,
    restarts: Vec<Restart>,
}

impl Delivery for Crashed {
    fn judge(&self, seen: &Snapshot) -> CheckResult {
        let marks: Vec<[AttemptLog; 2]> = self
            .restarts
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let kill = AttemptLog {
                    at_ms: r.killed_ms,
                    outcome: "receiver killed".into(),
                    connection: String::new(),
                    note: format!("--kill-cmd, kill {}", k + 1),
                };
                let healthy = AttemptLog {
                    at_ms: r.healthy_ms,
                    outcome: "receiver healthy again".into(),
                    connection: String::new(),
                    note: format!("{:.0} ms after the kill", r.took_ms()),
                };
                [kill, healthy]
            })
            .collect();
        let fail: ClassSet = EXACTLY_ONCE.iter().copied().chain([Class::StaleAccount]).collect();
        let rules =
            Rules { fail, warn: ClassSet::EMPTY, require: vec![Needs::Applies], witnesses: WITNESSES };
        let (mut result, load, _) = judge_load(&self.load, seen, Check::Crash, &rules, &marks);
        let took: Vec<String> = self.restarts.iter().map(|r| format!("{:.0}", r.took_ms())).collect();
        result.evidence =
            format!("{}; {} kills, restarts took {} ms", result.evidence, took.len(), took.join(", "));
        let restarts = self
            .restarts
            .iter()
            .map(|r| RestartFigure { killed_at_ms: r.killed_ms, took_ms: r.took_ms() })
            .collect();
        result.figures = Some(CheckFigures::Crash(Box::new(CrashFigures { load, restarts })));
        result
    }
}

impl AuditCheck for Crash<'_> {
    fn check(&self) -> Check {
        Check::Crash
    }

    fn phase(&self) -> Phase {
        Phase::Disturb
    }

    fn cannot_run(&self, sees: Sees) -> Option<String> {
        needs_applies(sees)
    }

    fn send<'a>(&'a self, run: &'a Run<'a>) -> BoxFuture<'a, Result<Box<dyn Delivery>, AuditError>> {
        Box::pin(async move {
            let (ctx, config, control) = (run.ctx, run.config, &self.settings.control);
            let client = crate::audit::control::health_client()?;
            control.ensure_healthy(&client).await?;
            let workload = Workload::generate(&config.load_workload())?;
            let wire = Arc::new(ctx.load_wire("crash_", workload.config.accounts));
            let first = workload.groups.first().map_or(0.0, |g| g.at);
            let last = workload.groups.last().map_or(0.0, |g| g.at);
            let planned = crate::sender::seconds((last - first) / config.load.rate);
            let kills = self.settings.kills;
            let moments: Vec<Duration> = (0..kills).map(|k| kill_at(&workload, k, kills, planned)).collect();
            let mut sender = config.load_sender(Check::Crash);
            sender.retry.max_attempts = sender.retry.max_attempts.max(MIN_ATTEMPTS);
            let start = Instant::now();
            let killer = async {
                let mut restarts = Vec::new();
                for at in moments {
                    tokio::time::sleep_until(start + at).await;
                    let r = control.restart(&client, Duration::ZERO, || ctx.probe.now_ms()).await?;
                    (run.step)(&format!(
                        "crash: kill {} of {kills}, healthy again after {:.0} ms",
                        restarts.len() + 1,
                        r.took_ms()
                    ));
                    restarts.push(r);
                }
                Ok::<_, AuditError>(restarts)
            };
            let (load, restarts) =
                tokio::join!(ctx.send_load(&config.target.url, workload, wire, sender), killer);
            Ok(Box::new(Crashed { load: load?, restarts: restarts? }) as Box<dyn Delivery>)
        })
    }
}
