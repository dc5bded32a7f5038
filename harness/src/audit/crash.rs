//! The crash check (the checklist's item 4): the seeded load sent while the receiver is killed
//! `--kills` times at seeded moments and started again, the sender retrying whatever was not
//! acknowledged. Every event must be applied exactly once by the end: a design that commits its
//! key before its side effect acknowledges the retry of an event it never applied.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::checks::Ctx;
use super::control::{Control, Restart};
use super::load::{self, Load, Rules};
use super::observe::Observation;
use super::verdict::{AttemptLog, Check, CheckResult, CrashFigures, RestartFigure};
use super::{AuditConfig, AuditError};
use crate::workload::Workload;

/// Attempts per event at least, so that the retries outlast the restarts (with backoff capped at
/// 1 s, 30 attempts span about 15 s).
const MIN_ATTEMPTS: u32 = 30;

/// A sent crash load and its restarts.
pub struct Crashed {
    /// The load.
    pub load: Load,
    /// Each kill and restart.
    pub restarts: Vec<Restart>,
}

/// When kill `k` of `kills` happens within a load planned to last `planned`: in the middle half of
/// the `k`th equal slice, at the workload's seeded draw.
fn kill_at(workload: &Workload, k: u32, kills: u32, planned: Duration) -> Duration {
    let draw = workload.keyed(&[&"kill", &k]);
    planned.mul_f64((f64::from(k) + 0.25 + 0.5 * draw) / f64::from(kills))
}

/// Sends the crash load and kills the receiver during it.
pub async fn run(
    ctx: &Ctx,
    config: &AuditConfig,
    control: &Control,
    client: &reqwest::Client,
    step: &(dyn Fn(&str) + Sync),
) -> Result<Crashed, AuditError> {
    control.ensure_healthy(client).await?;
    let workload = Workload::generate(&config.workload)?;
    let wire = Arc::new(ctx.load_wire("crash_", workload.config.accounts));
    let first = workload.groups.first().map_or(0.0, |g| g.at);
    let last = workload.groups.last().map_or(0.0, |g| g.at);
    let planned = Duration::from_secs_f64(((last - first) / config.rate).max(0.0));
    let kills = config.kills;
    let moments: Vec<Duration> = (0..kills).map(|k| kill_at(&workload, k, kills, planned)).collect();
    let mut sender = config.load_sender(Check::Crash);
    sender.retry.max_attempts = sender.retry.max_attempts.max(MIN_ATTEMPTS);
    let start = Instant::now();
    let offset_ms = ctx.probe.now_ms();
    let killer = async {
        let mut restarts = Vec::new();
        for at in moments {
            tokio::time::sleep_until(start + at).await;
            let r = control.restart(client, Duration::ZERO, || ctx.probe.now_ms()).await?;
            step(&format!(
                "crash: kill {} of {kills}, healthy again after {:.0} ms",
                restarts.len() + 1,
                r.took_ms()
            ));
            restarts.push(r);
        }
        Ok::<_, AuditError>(restarts)
    };
    let (load, restarts) = tokio::join!(load::send(&config.url, workload, wire, sender, offset_ms), killer);
    Ok(Crashed { load: load?, restarts: restarts? })
}

/// The verdict: every event applied exactly once, with the kills in the witnesses' timelines.
pub fn judge(crashed: &Crashed, seen: &Observation) -> (CheckResult, CrashFigures) {
    let marks: Vec<[AttemptLog; 2]> = crashed
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
    let rules = Rules { check: Check::Crash, latest_state: false, every_event: true };
    let (mut result, load) = load::judge(&crashed.load, seen, rules, &marks);
    let took: Vec<String> = crashed.restarts.iter().map(|r| format!("{:.0}", r.took_ms())).collect();
    result.evidence =
        format!("{}; {} kills, restarts took {} ms", result.evidence, took.len(), took.join(", "));
    let restarts = crashed
        .restarts
        .iter()
        .map(|r| RestartFigure { killed_at_ms: r.killed_ms, took_ms: r.took_ms() })
        .collect();
    (result, CrashFigures { load, restarts })
}
