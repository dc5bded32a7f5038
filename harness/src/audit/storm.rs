//! The retry-storm check: the receiver killed (`--kill-cmd`), a batch of `--storm-events` credits
//! sent into the outage, each retried on the provider's documented schedule with its clock
//! divided by `--time-scale` (as `hookbench jitter` does), and the receiver started again
//! (`--start-cmd`) once `--outage` has passed in the provider's time. The deliveries that failed
//! through the outage come back together; the check reports their arrivals per second, and passes
//! when every event ends applied exactly once and the answers after recovery stay under the
//! provider's timeout at p99.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use super::AuditError;
use super::checks::{Ctx, Expect, Sent, WITNESSES};
use super::control::Control;
use super::observe::Observation;
use super::provider::Provider;
use super::verdict::{Check, CheckResult, Status, StormFigures, Witness};
use crate::stats::Latency;

/// What the storm asked of the receiver.
#[derive(Debug, Clone, Copy)]
pub struct Storm {
    /// Whose schedule.
    pub provider: Provider,
    /// The outage, in the provider's time.
    pub outage: Duration,
    /// How much faster than the provider's clock.
    pub time_scale: f64,
    /// Events in the batch.
    pub events: usize,
}

/// The storm's deliveries and the recovery.
pub struct Stormed {
    /// Each event and its attempts.
    pub events: Vec<Sent>,
    /// When the kill command ran, milliseconds from the audit's start.
    pub killed_ms: f64,
    /// When the receiver was healthy again.
    pub healthy_ms: f64,
    /// Each attempt's send time and how long its answer took, milliseconds.
    pub timings: Vec<(f64, f64)>,
}

/// Sends one event on the schedule until it is acknowledged or refused, or the schedule ends.
async fn deliver_on_schedule(
    ctx: Arc<Ctx>,
    mut sent: Sent,
    start: Instant,
    waits: Arc<Vec<Duration>>,
) -> (Sent, Vec<(f64, f64)>) {
    let mut at = start;
    let mut timings = Vec::new();
    for (n, wait) in std::iter::once(Duration::ZERO).chain(waits.iter().copied()).enumerate() {
        at += wait;
        tokio::time::sleep_until(at).await;
        let note = if n == 0 { "first delivery".to_string() } else { format!("scheduled retry {n}") };
        let answer = ctx.deliver(&sent.fields, &note).await;
        let done = answer.acked() || answer.refused();
        timings.push((answer.log.at_ms, answer.took_ms));
        sent.push(answer);
        if done {
            break;
        }
    }
    (sent, timings)
}

/// Kills the receiver, sends the batch into the outage, and starts the receiver after it.
pub async fn run(
    ctx: &Arc<Ctx>,
    control: &Control,
    client: &reqwest::Client,
    storm: Storm,
) -> Result<Stormed, AuditError> {
    let scale = |d: Duration| d.div_f64(storm.time_scale);
    let waits: Arc<Vec<Duration>> = Arc::new(storm.provider.retry_delays().into_iter().map(scale).collect());
    control.ensure_healthy(client).await?;
    let killed_ms = ctx.probe.now_ms();
    control.kill().await?;
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for n in 0..storm.events {
        let sent = Sent::new(ctx.credit("storm", n, ctx.account(), 100 + n as i64), Expect::Once);
        tasks.spawn(deliver_on_schedule(ctx.clone(), sent, start, waits.clone()));
    }
    tokio::time::sleep_until(start + scale(storm.outage)).await;
    control.start(client).await?;
    let healthy_ms = ctx.probe.now_ms();
    let (mut events, timings): (Vec<Sent>, Vec<Vec<(f64, f64)>>) = tasks.join_all().await.into_iter().unzip();
    events.sort_by(|a, b| a.id.cmp(&b.id));
    let timings = timings.into_iter().flatten().collect();
    Ok(Stormed { events, killed_ms, healthy_ms, timings })
}

/// The verdict.
pub fn judge(
    s: &Stormed,
    storm: Storm,
    timeout: Duration,
    seen: &Observation,
) -> (CheckResult, StormFigures) {
    let timeout_ms = timeout.as_secs_f64() * 1e3;
    let mut bins = Vec::new();
    let mut after_recovery = Vec::new();
    let after = Latency::default();
    for &(at, took) in &s.timings {
        count_in_bin(&mut bins, at - s.killed_ms);
        if at >= s.healthy_ms {
            after_recovery.push(at);
            after.record(Duration::from_secs_f64(took.max(0.0) / 1e3));
        }
    }
    let peak = busiest_second(&mut after_recovery);
    let p99_after_ms = after.percentiles().p99 as f64 / 1e3;
    let mut f = StormFigures {
        provider: Some(storm.provider),
        events: s.events.len() as u64,
        outage_s: storm.outage.as_secs_f64(),
        time_scale: storm.time_scale,
        attempts: s.timings.len() as u64,
        arrivals_per_100ms: bins,
        peak_per_s: peak,
        recovered_ms: s.healthy_ms - s.killed_ms,
        p99_after_ms,
        ..StormFigures::default()
    };
    let mut witnesses = Vec::new();
    for e in &s.events {
        let (min, max) = seen.applied(&e.id);
        let problem = if max > 1 {
            f.dup_events += 1;
            format!("applied {max} times")
        } else if e.acked && min == 0 {
            f.lost += 1;
            "acknowledged with a 2xx and never applied".to_string()
        } else if !e.acked {
            f.unacknowledged += 1;
            "not acknowledged by the end of the provider's schedule".to_string()
        } else {
            continue;
        };
        if witnesses.len() < WITNESSES {
            let attempts = e.attempts.clone();
            witnesses.push(Witness { id: e.id.clone(), problem, attempts, observed: seen.describe(&e.id) });
        }
    }
    let slow = p99_after_ms >= timeout_ms;
    let failed = f.dup_events + f.lost + f.unacknowledged > 0 || slow;
    let evidence = format!(
        "{} events through a {} outage ({} schedule, time x{}): {} attempts, at most {} within one second after the recovery at {:.0} ms; {} dup, {} lost, {} never acknowledged; p99 after recovery {:.1} ms (timeout {:.0} ms)",
        f.events,
        humantime::format_duration(storm.outage),
        storm.provider.as_str(),
        storm.time_scale,
        f.attempts,
        f.peak_per_s,
        f.recovered_ms,
        f.dup_events,
        f.lost,
        f.unacknowledged,
        p99_after_ms,
        timeout_ms,
    );
    let status = if failed { Status::Fail } else { Status::Pass };
    (CheckResult { check: Check::RetryStorm, status, evidence, witnesses }, f)
}

/// Adds one to the tenth of a second `ms` milliseconds falls in.
fn count_in_bin(bins: &mut Vec<u64>, ms: f64) {
    let bin = (ms.max(0.0) / 100.0) as usize;
    if bins.len() <= bin {
        bins.resize(bin + 1, 0);
    }
    bins[bin] += 1;
}

/// The most of `times` (milliseconds) within any one second: a window opening at each time.
fn busiest_second(times: &mut [f64]) -> u64 {
    times.sort_by(f64::total_cmp);
    let mut end = 0;
    let mut most = 0;
    for (start, &t) in times.iter().enumerate() {
        while end < times.len() && times[end] < t + 1000.0 {
            end += 1;
        }
        most = most.max(end - start);
    }
    most as u64
}

/// Why the storm cannot run for `provider`, if it cannot.
pub fn cannot_storm(provider: Provider) -> Option<String> {
    provider
        .retry_delays()
        .is_empty()
        .then(|| format!("{} does not retry failed deliveries on its own", provider.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_second_is_a_sliding_window() {
        let mut times = vec![0.0, 500.0, 999.0, 1000.0, 1400.0, 1500.0, 1600.0, 3000.0];
        assert_eq!(busiest_second(&mut times), 5, "500 to 1500 holds five");
        assert_eq!(busiest_second(&mut []), 0);
    }

    #[test]
    fn github_has_no_storm_and_the_others_do() {
        assert!(cannot_storm(Provider::Github).is_some());
        assert!(cannot_storm(Provider::Shopify).is_none());
    }
}
