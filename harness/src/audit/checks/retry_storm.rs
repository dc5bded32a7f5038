//! The retry-storm check: the receiver killed (`--kill-cmd`), a batch of `--storm-events` credits
//! sent into the outage, each retried on the provider's documented schedule with its clock
//! divided by `--time-scale`, and the receiver started again (`--start-cmd`) once `--outage` has
//! passed in the provider's time. The deliveries that failed through the outage come back
//! together. PASS: every event applied exactly once (the judge's), and the answers to the retries
//! that arrived after the receiver answered its health URL again under the provider's timeout at
//! p99. The figures after the recovery are of those retries alone, and when none arrived after it
//! (every retry was sent before the health URL answered again) the evidence says so instead of
//! reporting zeros.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::config::bounds::{DAY, duration, number, s, within};
use crate::audit::control::Control;
use crate::audit::ctx::{Ctx, Delivered, Probes, now_s};
use crate::judge::{Class, CreditBook, Expect, Needs};
use crate::observe::Snapshot;
use crate::report::{Check, CheckFigures, CheckResult, Status, StormFigures};
use crate::stats::Latency;
use crate::wire::Provider;

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::RetryStorm, phase: Phase::Disturb, build };

/// The outage, in the provider's time.
const OUTAGE: std::ops::RangeInclusive<Duration> = s(1)..=s(30 * DAY);
/// How much faster than the provider's clock the storm runs.
const TIME_SCALE: std::ops::RangeInclusive<f64> = 1.0..=1_000_000.0;

/// The check's flags: `--outage`, with the receiver's commands, runs it.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "retry-storm")]
pub struct Flags {
    /// An outage in the provider's time, e.g. 1h, 1s to 30 days (runs the retry-storm check;
    /// needs --kill-cmd, --start-cmd and --health-url).
    #[arg(long, value_parser = humantime::parse_duration, requires = "kill_cmd")]
    pub outage: Option<Duration>,
    /// How much faster than the provider's clock the retry storm runs (1000: an hour in 3.6 s; 1
    /// to 1000000).
    #[arg(long, default_value_t = 1000.0)]
    pub time_scale: f64,
    /// Events in the retry storm's batch.
    #[arg(long, default_value_t = 200, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub storm_events: usize,
}

/// The check's settings, from its flags.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How to kill and restart the receiver.
    pub control: Control,
    /// The outage, in the provider's time.
    pub outage: Duration,
    /// How much faster than the provider's clock the storm runs.
    pub time_scale: f64,
    /// Events in the batch.
    pub events: usize,
}

impl Flags {
    /// The settings, when `--outage` was given with the receiver's commands, within their bounds.
    pub fn settings(&self, control: Option<&Control>) -> Result<Option<Settings>, AuditError> {
        let Some(outage) = self.outage else { return Ok(None) };
        let Some(control) = control else {
            return Err(AuditError::Config("--outage needs --kill-cmd, --start-cmd and --health-url".into()));
        };
        if self.time_scale.is_nan() || self.time_scale <= 0.0 {
            return Err(AuditError::Config("--time-scale must be above 0".into()));
        }
        if self.storm_events == 0 {
            return Err(AuditError::Config("--storm-events must be at least 1".into()));
        }
        within("--outage", outage, &OUTAGE, duration)?;
        within("--time-scale", self.time_scale, &TIME_SCALE, number)?;
        let (time_scale, events) = (self.time_scale, self.storm_events);
        Ok(Some(Settings { control: control.clone(), outage, time_scale, events }))
    }
}

impl Settings {
    /// The outage in real time.
    pub fn wait(&self) -> Duration {
        Duration::try_from_secs_f64(self.outage.as_secs_f64() / self.time_scale).unwrap_or(Duration::MAX)
    }
}

/// Builds the check from its flags, for a provider that retries.
fn build<'a>(
    config: &'a AuditConfig,
    checks: &'a CheckSettings,
) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    let settings = checks
        .retry_storm
        .as_ref()
        .ok_or(Unbuilt::Needs("--outage (with --kill-cmd, --start-cmd and --health-url)"))?;
    let provider = config.target.provider.unwrap_or(Provider::StandardWebhooks);
    if provider.retry_delays().is_empty() {
        return Err(Unbuilt::NoRetries(provider.as_str()));
    }
    Ok(Box::new(RetryStorm { settings, provider, timeout: config.load.timeout }))
}

struct RetryStorm<'a> {
    settings: &'a Settings,
    provider: Provider,
    timeout: Duration,
}

impl RetryStorm<'_> {
    /// The most times one of its credits reaches the receiver: the first delivery and every
    /// retry of the provider's schedule.
    fn reach(&self) -> u32 {
        u32::try_from(self.provider.retry_delays().len() + 1).unwrap_or(u32::MAX)
    }
}

/// The storm's deliveries and the recovery.
struct Stormed {
    probes: Probes,
    /// When the kill command ran, milliseconds from the audit's start.
    killed_ms: f64,
    /// When the receiver answered its health URL again.
    healthy_ms: f64,
    /// Each attempt's times.
    timings: Vec<Timing>,
    provider: Provider,
    outage: Duration,
    time_scale: f64,
    timeout: Duration,
}

/// One attempt's times on the audit's clock, milliseconds: when the schedule planned it, when it
/// was sent, and how long its answer (or the lack of one) took.
#[derive(Debug, Clone, Copy)]
struct Timing {
    planned_ms: f64,
    sent_ms: f64,
    took_ms: f64,
}

/// Sends one event on the schedule until it is acknowledged or refused, or the schedule ends.
async fn deliver_on_schedule(
    ctx: Arc<Ctx>,
    mut sent: Delivered,
    start: Instant,
    waits: Arc<Vec<Duration>>,
) -> (Delivered, Vec<Timing>) {
    let mut at = start;
    let mut timings = Vec::new();
    let mut last = None;
    for (n, wait) in std::iter::once(Duration::ZERO).chain(waits.iter().copied()).enumerate() {
        at += wait;
        tokio::time::sleep_until(at).await;
        let note = if n == 0 { "first delivery".to_string() } else { format!("scheduled retry {n}") };
        let (body, mut headers) = ctx.wire.attempt(&sent.fields, now_s());
        if let Some(last) = last {
            // A retry carries what its provider adds to one (Slack's number and reason).
            headers.extend(ctx.wire.retry_headers(n, last));
        }
        let answer = ctx.probe.post(None, &headers, body, &note).await;
        last = Some(answer.fate);
        let done = answer.acked() || answer.refused();
        timings.push(Timing {
            planned_ms: ctx.probe.ms_at(at),
            sent_ms: answer.log.at_ms,
            took_ms: answer.took_ms,
        });
        sent.push(answer);
        if done {
            break;
        }
    }
    (sent, timings)
}

/// When the retries after the recovery went out slower than the schedule planned them (their
/// busiest second under 0.97 of the plan's), the storm was weaker than the provider's: the
/// figures say so. Else nothing.
fn weaker(planned: Option<f64>, achieved: Option<f64>) -> String {
    crate::report::model::behind(planned, achieved).map_or(String::new(), |(p, a)| {
        format!(
            "; but they went out at most {a:.0} within one second where the schedule planned {p:.0}: the \
             sender fell behind the schedule on this machine, so the storm was weaker than the provider's"
        )
    })
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

/// What the attempts after the recovery came to.
#[derive(Debug, Default, PartialEq)]
struct AfterRecovery {
    /// Attempts sent once the receiver was healthy again.
    n: u64,
    /// The most of them sent within one second (`None`: none was).
    peak: Option<u64>,
    /// The most of them the schedule planned within one second: what the provider would send.
    planned_peak: Option<u64>,
    /// Their answers' p99, milliseconds.
    p99_ms: Option<f64>,
}

/// The arrivals per tenth of a second from `killed_ms`, and the attempts sent from `healthy_ms`
/// on: how many, the busiest second as sent and as planned, and the p99 of their answers.
fn after_recovery(timings: &[Timing], killed_ms: f64, healthy_ms: f64) -> (Vec<u64>, AfterRecovery) {
    let mut bins = Vec::new();
    let (mut sent, mut planned) = (Vec::new(), Vec::new());
    let latency = Latency::default();
    for t in timings {
        count_in_bin(&mut bins, t.sent_ms - killed_ms);
        if t.sent_ms >= healthy_ms {
            sent.push(t.sent_ms);
            planned.push(t.planned_ms);
            latency.record(crate::sender::seconds(t.took_ms / 1e3));
        }
    }
    let n = sent.len() as u64;
    let after = AfterRecovery {
        n,
        peak: (n > 0).then(|| busiest_second(&mut sent)),
        planned_peak: (n > 0).then(|| busiest_second(&mut planned)),
        p99_ms: (n > 0).then(|| latency.percentiles().p99 as f64 / 1e3),
    };
    (bins, after)
}

impl Delivery for Stormed {
    fn book(&self, book: &mut CreditBook) {
        self.probes.book(book);
    }

    fn judge(&self, seen: &Snapshot) -> CheckResult {
        let (mut result, verdict) = self.probes.judged(seen);
        let (bins, a) = after_recovery(&self.timings, self.killed_ms, self.healthy_ms);
        let (after, peak, p99) = (a.n, a.peak, a.p99_ms);
        let (planned_rate, achieved_rate) = (a.planned_peak.map(|p| p as f64), a.peak.map(|p| p as f64));
        let timeout_ms = self.timeout.as_secs_f64() * 1e3;
        let slow = p99.is_some_and(|p| p >= timeout_ms);
        let recovered_ms = self.healthy_ms - self.killed_ms;
        let after_words = match (peak, p99) {
            (Some(peak), Some(p99)) => format!(
                "{after} retries after the recovery at {recovered_ms:.0} ms: at most {peak} within one second, p99 {p99:.1} ms (timeout {timeout_ms:.0} ms){}",
                weaker(planned_rate, achieved_rate)
            ),
            _ => format!(
                "no retry arrived after the recovery at {recovered_ms:.0} ms (the health URL's first 2xx; every retry was sent before it, during the outage or while the restarted receiver had not yet answered its health URL): lengthen --outage or lower --time-scale to see the spike"
            ),
        };
        let unacknowledged = self.probes.events.iter().filter(|e| !e.answers.acked).count() as u64;
        result.evidence = format!(
            "{} events through a {} outage ({} schedule, time x{}): {}; {} attempts, {unacknowledged} never acknowledged; {after_words}",
            self.probes.events.len(),
            humantime::format_duration(self.outage),
            self.provider.as_str(),
            self.time_scale,
            result.evidence,
            self.timings.len(),
        );
        if slow && result.status == Status::Pass {
            result.status = Status::Fail;
        }
        let figures = StormFigures {
            provider: Some(self.provider),
            events: self.probes.events.len() as u64,
            outage_s: self.outage.as_secs_f64(),
            time_scale: self.time_scale,
            attempts: self.timings.len() as u64,
            arrivals_per_100ms: bins,
            after_recovery: after,
            peak_per_s: peak,
            recovered_ms,
            p99_after_ms: p99,
            planned_rate,
            achieved_rate,
            dup_events: verdict.tally.count(Class::Duplicate),
            lost: verdict.tally.count(Class::Lost),
            unacknowledged,
        };
        result.figures = Some(CheckFigures::Storm(figures));
        result
    }
}

#[async_trait::async_trait]
impl AuditCheck for RetryStorm<'_> {
    fn plan(&self, _config: &AuditConfig) -> Plan {
        Plan::credits(self.settings.events, self.reach())
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let (ctx, s) = (run.ctx, self.settings);
        let scale = |d: Duration| d.div_f64(s.time_scale);
        let waits: Arc<Vec<Duration>> =
            Arc::new(self.provider.retry_delays().into_iter().map(scale).collect());
        let client = crate::audit::control::health_client()?;
        s.control.ensure_healthy(&client).await?;
        let killed_ms = ctx.probe.now_ms();
        s.control.kill().await?;
        let start = Instant::now();
        let mut tasks = JoinSet::new();
        for n in 0..s.events {
            let sent = Delivered::new(ctx.credit("storm", n, 100 + n as i64, self.reach())?, Expect::Once);
            tasks.spawn(deliver_on_schedule(ctx.clone(), sent, start, waits.clone()));
        }
        tokio::time::sleep_until(start + scale(s.outage)).await;
        s.control.start(&client).await?;
        let healthy_ms = ctx.probe.now_ms();
        let (mut events, timings): (Vec<Delivered>, Vec<Vec<Timing>>) =
            tasks.join_all().await.into_iter().unzip();
        events.sort_by(|a, b| a.fields.id.cmp(&b.fields.id));
        let mut probes = Probes::new(Check::RetryStorm, EXACTLY_ONCE, &[Needs::Applies]);
        probes.events = events;
        Ok(Box::new(Stormed {
            probes,
            killed_ms,
            healthy_ms,
            timings: timings.into_iter().flatten().collect(),
            provider: self.provider,
            outage: s.outage,
            time_scale: s.time_scale,
            timeout: self.timeout,
        }) as Box<dyn Delivery>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(planned_ms: f64, sent_ms: f64) -> Timing {
        Timing { planned_ms, sent_ms, took_ms: 2.0 }
    }

    #[test]
    fn retries_after_the_recovery_are_counted_as_sent_and_as_planned() {
        // Killed at 0, healthy at 1,000: four retries planned together at 1,500, one sent late.
        let t =
            [at(0.0, 0.0), at(1500.0, 1500.0), at(1500.0, 1501.0), at(1500.0, 1502.0), at(1500.0, 2600.0)];
        let (bins, a) = after_recovery(&t, 0.0, 1000.0);
        assert_eq!(bins.iter().sum::<u64>(), 5);
        assert_eq!((a.n, a.peak, a.planned_peak), (4, Some(3), Some(4)));
        assert!(
            weaker(a.planned_peak.map(|p| p as f64), a.peak.map(|p| p as f64))
                .contains("at most 3 within one second where the schedule planned 4")
        );
        // Sent on the schedule: not weaker.
        let on_time = [at(1500.0, 1500.0), at(1500.0, 1501.0)];
        let (_, a) = after_recovery(&on_time, 0.0, 1000.0);
        assert_eq!((a.peak, a.planned_peak), (Some(2), Some(2)));
        assert_eq!(weaker(Some(2.0), Some(2.0)), "");
        // Nothing after the recovery: nothing to compare.
        let (_, a) = after_recovery(&[at(0.0, 0.0)], 0.0, 1000.0);
        assert_eq!(a, AfterRecovery { n: 0, ..AfterRecovery::default() });
        assert_eq!(weaker(None, None), "");
    }

    #[test]
    fn the_busiest_second_is_a_sliding_window() {
        let mut times = vec![0.0, 500.0, 999.0, 1000.0, 1400.0, 1500.0, 1600.0, 3000.0];
        assert_eq!(busiest_second(&mut times), 5, "500 to 1500 holds five");
        assert_eq!(busiest_second(&mut []), 0);
    }
}
