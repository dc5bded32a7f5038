//! The capacity check: the rate ramped in steps (`--ramp FROM..TO`, `--ramp-steps`, each
//! `--step-duration` long), each step a plain load (no duplicates or faults, one attempt per
//! delivery, cut at the provider's timeout as the provider would cut it, and never held back by
//! the sender: as many in flight as the rate and the timeout call for, up to 2,048). Per step:
//! p50, p99 and max from each delivery's planned time (coordinated omission corrected), the share
//! slower than the timeout, and the share of errors (any answer but a 2xx, or none). The capacity
//! is the highest rate whose p99 stayed under the timeout with errors under 1 %; the ramp stops
//! after the first step that does not hold. A ramp whose top held measured "at least" its top; a
//! step shorter than the timeout cannot build the backlog a slow receiver would, and the evidence
//! says so. It measures speed, not correctness: no anomaly is looked for.

use std::sync::Arc;
use std::time::Duration;

use super::{AuditCheck, CheckSettings, Delivery, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::config::bounds::{HOUR, RATE, duration, ms, number, s, within};
use crate::judge::CreditBook;
use crate::observe::{Sees, Snapshot};
use crate::report::{CapacityFigures, CapacityStep, Check, CheckFigures, CheckResult, Status};
use crate::sender::{RetryPolicy, SenderConfig};
use crate::wire::Provider;
use crate::workload::{Workload, WorkloadConfig};

/// Errors above this share fail a step.
const MAX_ERRORS: f64 = 0.01;
/// Connections a step may hold open at most (file descriptors are finite).
const MAX_IN_FLIGHT: usize = 2048;

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::Capacity, phase: Phase::Disturb, build };

/// One step of the ramp.
const STEP_DURATION: std::ops::RangeInclusive<Duration> = ms(100)..=s(HOUR);
/// Deliveries one step of the ramp may send (its rate times its duration).
const STEP_EVENTS: f64 = 10_000_000.0;

/// The check's flags: `--ramp` runs it.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "capacity")]
pub struct Flags {
    /// Ramps the rate from FROM to TO events per second (runs the capacity check), e.g. 50..500
    /// (each 0.01 to 100000; TO times --step-duration at most 10,000,000 deliveries).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_ramp)]
    pub ramp: Option<(f64, f64)>,
    /// Steps of the ramp, both ends included.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub ramp_steps: u32,
    /// How long each step of the ramp sends (100ms to 1h).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub step_duration: Duration,
    /// The capacity check fails below this rate (0.01 to 100000) [default: the ramp's first].
    #[arg(long, value_name = "RATE")]
    pub min_capacity: Option<f64>,
}

impl Flags {
    /// The settings, when `--ramp` was given, each within its bounds.
    pub fn settings(&self) -> Result<Option<Settings>, AuditError> {
        let Some((from, to)) = self.ramp else { return Ok(None) };
        let ramp = Ramp { from, to, steps: self.ramp_steps, step_duration: self.step_duration };
        if ramp.steps == 0 || ramp.step_duration.is_zero() {
            return Err(AuditError::Config("--ramp-steps and --step-duration must be above 0".into()));
        }
        within("--ramp", ramp.from, &RATE, number)?;
        within("--ramp", ramp.to, &RATE, number)?;
        within("--step-duration", ramp.step_duration, &STEP_DURATION, duration)?;
        let events = ramp.to * ramp.step_duration.as_secs_f64();
        if events > STEP_EVENTS {
            return Err(AuditError::Config(format!(
                "--ramp's top rate {} for --step-duration {} is {events:.0} deliveries in one step, more than {STEP_EVENTS:.0}",
                ramp.to,
                duration(&ramp.step_duration)
            )));
        }
        if let Some(min) = self.min_capacity {
            within("--min-capacity", min, &RATE, number)?;
        }
        Ok(Some(Settings { ramp, min_capacity: self.min_capacity }))
    }
}

impl Settings {
    /// How long the ramp lasts at most.
    pub fn wait(&self) -> Duration {
        self.ramp.step_duration.saturating_mul(self.ramp.steps)
    }

    /// Deliveries the ramp sends at most: its top rate in every step.
    pub fn deliveries(&self) -> usize {
        let r = &self.ramp;
        (f64::from(r.steps) * r.to * r.step_duration.as_secs_f64()).ceil() as usize
    }
}

/// The check's settings, from its flags.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The ramp.
    pub ramp: Ramp,
    /// The capacity below which the check fails (default: the ramp's first rate).
    pub min_capacity: Option<f64>,
}

/// The ramp, as asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    /// The first rate, events per second.
    pub from: f64,
    /// The last.
    pub to: f64,
    /// How many steps, both ends included.
    pub steps: u32,
    /// How long each step sends.
    pub step_duration: Duration,
}

impl Ramp {
    /// Each step's rate.
    pub fn rates(&self) -> Vec<f64> {
        if self.steps <= 1 {
            return vec![self.from];
        }
        let gap = (self.to - self.from) / f64::from(self.steps - 1);
        (0..self.steps).map(|i| self.from + gap * f64::from(i)).collect()
    }
}

/// A `--ramp` that is not two rates, the lower first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRamp {
    /// No `..` between two rates.
    #[error("`{0}` is not FROM..TO, such as 10..200")]
    NotARange(String),
    /// One end is not a number.
    #[error("`{end}` in `{ramp}` is not a number")]
    NotANumber {
        /// The end.
        end: String,
        /// The whole value.
        ramp: String,
    },
    /// One end is 0, negative or not finite.
    #[error("`{end}` in `{ramp}` must be above 0")]
    NotAbove0 {
        /// The end.
        end: String,
        /// The whole value.
        ramp: String,
    },
    /// The higher rate came first.
    #[error("`{0}` ramps down; give the lower rate first")]
    RampsDown(String),
}

/// Parses `FROM..TO` (events per second).
pub fn parse_ramp(s: &str) -> Result<(f64, f64), BadRamp> {
    let (from, to) = s.split_once("..").ok_or_else(|| BadRamp::NotARange(s.to_string()))?;
    let rate = |t: &str| -> Result<f64, BadRamp> {
        let (end, ramp) = (t.to_string(), s.to_string());
        let r: f64 =
            t.trim().parse().map_err(|_| BadRamp::NotANumber { end: end.clone(), ramp: ramp.clone() })?;
        if r.is_finite() && r > 0.0 { Ok(r) } else { Err(BadRamp::NotAbove0 { end, ramp }) }
    };
    let (from, to) = (rate(from)?, rate(to)?);
    if to < from {
        return Err(BadRamp::RampsDown(s.to_string()));
    }
    Ok((from, to))
}

/// Builds the check from its flags.
fn build<'a>(
    config: &'a AuditConfig,
    checks: &'a CheckSettings,
) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    let settings = checks.capacity.ok_or(Unbuilt::Needs("--ramp FROM..TO"))?;
    Ok(Box::new(Capacity { settings, provider: config.target.provider, timeout: config.load.timeout }))
}

#[derive(Clone, Copy)]
struct Capacity {
    settings: Settings,
    provider: Option<Provider>,
    timeout: Duration,
}

/// Requests in flight a step allows: as many as `rate` deliveries each lasting up to `timeout`
/// make, so that, like a provider, the sender never holds a delivery back and every delivery's
/// latency from its planned time is the receiver's alone.
fn in_flight(rate: f64, timeout: Duration, at_least: usize) -> usize {
    let needed = (rate * timeout.as_secs_f64()).ceil() as usize + at_least;
    needed.min(MAX_IN_FLIGHT)
}

/// A step's workload: `events` credits and updates, without the article's faults.
fn plain(workload: &WorkloadConfig, events: usize) -> WorkloadConfig {
    WorkloadConfig {
        events,
        p_duplicate: 0.0,
        p_ack_lost: 0.0,
        p_concurrent: 0.0,
        p_shuffle: 0.0,
        ..workload.clone()
    }
}

/// The ramp's steps, as sent.
struct Ramped {
    steps: Vec<CapacityStep>,
    check: Capacity,
    /// Each step's accounts: the first and how many.
    accounts: Vec<(i64, u32)>,
}

/// The verdict on the steps: PASS when the capacity reaches `min_capacity`.
fn judge_steps(steps: Vec<CapacityStep>, c: &Capacity) -> CheckResult {
    let (ramp, timeout) = (c.settings.ramp, c.timeout);
    let min = c.settings.min_capacity.unwrap_or(ramp.from);
    let capacity = steps.iter().filter(|s| s.held).map(|s| s.rate_per_s).reduce(f64::max);
    let at_least = capacity.is_some_and(|r| (r - ramp.to).abs() < 1e-9);
    let short = ramp.step_duration < timeout;
    let held_to = c.provider.map_or_else(
        || format!("--timeout {}", humantime::format_duration(timeout)),
        |p| format!("{}'s {} timeout", p.as_str(), humantime::format_duration(timeout)),
    );
    let last = steps.last().map_or(String::new(), |s| {
        let answers = s.answer_p99_ms.map_or(String::new(), |a| format!(" (answers p99 {a:.1} ms)"));
        format!(
            "; last step {:.1}/s: p99 {:.1} ms{answers}, {:.1} % over the timeout, {:.1} % errors{}",
            s.rate_per_s,
            s.p99_ms,
            s.over_timeout * 100.0,
            s.errors * 100.0,
            crate::report::fell_behind(Some(s.rate_per_s), s.achieved_rate, s.behind_cause)
        )
    });
    let caveats = [
        at_least.then(|| format!("the ramp's top held: the capacity is at least that; ramp past {:.1}/s to find it", ramp.to)),
        short.then(|| {
            format!(
                "each step lasted {}, shorter than the {} timeout: no backlog as long as the timeout could build within a step, so a slow receiver's capacity is overstated; give --step-duration of at least the timeout",
                humantime::format_duration(ramp.step_duration),
                humantime::format_duration(timeout)
            )
        }),
    ];
    let caveats: String = caveats.into_iter().flatten().map(|c| format!("; {c}")).collect();
    let words =
        |c: f64| if at_least { format!("at least {c:.1} events/s") } else { format!("{c:.1} events/s") };
    let (status, evidence) = match capacity {
        Some(c) if c >= min => {
            (Status::Pass, format!("capacity {} with p99 under {held_to}{last}{caveats}", words(c)))
        }
        Some(c) => (
            Status::Fail,
            format!(
                "capacity {}, below the {min:.1} asked (--min-capacity), held to {held_to}{last}{caveats}",
                words(c)
            ),
        ),
        None => {
            (Status::Fail, format!("no step held p99 under {held_to} with errors under 1 %{last}{caveats}"))
        }
    };
    let figures = CapacityFigures {
        provider: c.provider,
        timeout_ms: timeout.as_secs_f64() * 1e3,
        steps,
        capacity_per_s: capacity,
        at_least,
        steps_shorter_than_timeout: short,
    };
    CheckResult {
        check: Check::Capacity,
        status,
        evidence,
        anomalies: Vec::new(),
        witnesses: Vec::new(),
        figures: Some(CheckFigures::Capacity(figures)),
    }
}

impl Delivery for Ramped {
    fn judge(&self, _seen: &Snapshot) -> CheckResult {
        judge_steps(self.steps.clone(), &self.check)
    }

    /// The ramp judges no applies: its accounts' aggregates are not judged either.
    fn book(&self, book: &mut CreditBook) {
        for &(first, n) in &self.accounts {
            (first..first + i64::from(n)).for_each(|a| book.unjudged(a));
        }
    }
}

#[async_trait::async_trait]
impl AuditCheck for Capacity {
    fn cannot_run(&self, _sees: Sees) -> Option<String> {
        None
    }

    fn plan(&self, config: &AuditConfig) -> Plan {
        Plan {
            accounts: u64::from(self.settings.ramp.steps) * u64::from(config.load.workload.accounts),
            ..Plan::default()
        }
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let (ctx, config, ramp, timeout) = (run.ctx, run.config, self.settings.ramp, self.timeout);
        let (mut steps, mut accounts) = (Vec::new(), Vec::new());
        for (i, rate) in ramp.rates().into_iter().enumerate() {
            (run.step)(&format!(
                "capacity: {rate:.1} events/s for {}",
                humantime::format_duration(ramp.step_duration)
            ));
            let events = (rate * ramp.step_duration.as_secs_f64()).ceil().max(1.0) as usize;
            let workload = Workload::generate(&plain(&config.load.workload, events))?;
            let wire = Arc::new(ctx.load_wire(&format!("cap{i}_"), workload.config.accounts));
            accounts.push((wire.ids.account_base, workload.config.accounts));
            let sender = SenderConfig {
                rate: Some(rate),
                concurrency: in_flight(rate, timeout, config.load.concurrency),
                timeout,
                retry: RetryPolicy { max_attempts: 1, ..config.load.retry },
                record: false,
                history: None,
                ..config.load_sender(Check::Capacity)
            };
            let load = ctx.send_load(&config.target.url, workload, wire, sender).await?;
            let (c, l, pace) = (&load.sent.counters, &load.sent.latency_intended, &load.sent.pace);
            let answers = &load.sent.latency_actual;
            let n = c.deliveries.max(1) as f64;
            let ms = |us: u64| us as f64 / 1e3;
            // Any answer but a 2xx is a delivery the provider retries: a 429 or 503 shed is not
            // capacity.
            let errors = (c.status_4xx + c.status_5xx + c.connect_errors + c.resets) as f64 / n;
            let p99_ms = ms(l.p99);
            let held = p99_ms < timeout.as_secs_f64() * 1e3 && errors < MAX_ERRORS;
            steps.push(CapacityStep {
                rate_per_s: rate,
                deliveries: c.deliveries,
                p50_ms: ms(l.p50),
                p99_ms,
                max_ms: ms(l.max),
                over_timeout: c.timeouts as f64 / n,
                errors,
                held,
                achieved_rate: pace.achieved_rate(),
                behind_cause: pace.behind_cause(),
                answer_p50_ms: (answers.count > 0).then(|| ms(answers.p50)),
                answer_p99_ms: (answers.count > 0).then(|| ms(answers.p99)),
            });
            if !held {
                break;
            }
        }
        let check = *self;
        Ok(Box::new(Ramped { steps, check, accounts }) as Box<dyn Delivery>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: f64, held: bool) -> CapacityStep {
        CapacityStep { rate_per_s: rate, held, ..CapacityStep::default() }
    }

    fn capacity(to: f64, step_s: u64, timeout_s: u64) -> Capacity {
        let ramp = Ramp { from: 10.0, to, steps: 2, step_duration: Duration::from_secs(step_s) };
        Capacity {
            settings: Settings { ramp, min_capacity: None },
            provider: None,
            timeout: Duration::from_secs(timeout_s),
        }
    }

    #[test]
    fn a_capacity_at_the_ramps_top_is_at_least_the_top() {
        let r = judge_steps(vec![step(10.0, true), step(200.0, true)], &capacity(200.0, 30, 10));
        assert!(r.evidence.starts_with("capacity at least 200.0 events/s"), "{}", r.evidence);
        let r = judge_steps(vec![step(10.0, true), step(200.0, false)], &capacity(200.0, 30, 10));
        assert!(r.evidence.starts_with("capacity 10.0 events/s"), "{}", r.evidence);
    }

    #[test]
    fn a_step_shorter_than_the_timeout_says_the_backlog_could_not_build() {
        let r = judge_steps(vec![step(10.0, true)], &capacity(200.0, 3, 30));
        assert!(r.evidence.contains("shorter than the 30s timeout"), "{}", r.evidence);
        let r = judge_steps(vec![step(10.0, true)], &capacity(200.0, 30, 30));
        assert!(!r.evidence.contains("shorter than"), "{}", r.evidence);
    }

    #[test]
    fn no_step_held_fails() {
        assert_eq!(judge_steps(vec![step(10.0, false)], &capacity(20.0, 30, 1)).status, Status::Fail);
        assert_eq!(judge_steps(Vec::new(), &capacity(20.0, 30, 1)).status, Status::Fail, "nothing ramped");
    }

    #[test]
    fn a_last_step_sent_behind_its_rate_says_both_rates_and_why_and_one_on_it_does_not() {
        let behind = CapacityStep {
            achieved_rate: Some(120.0),
            behind_cause: Some(crate::report::BehindCause::Machine),
            answer_p99_ms: Some(3.5),
            ..step(200.0, false)
        };
        let r = judge_steps(vec![step(10.0, true), behind], &capacity(200.0, 30, 10));
        assert!(
            r.evidence.contains(
                "last step 200.0/s: p99 0.0 ms (answers p99 3.5 ms), 0.0 % over the timeout, 0.0 % errors; sent at \
                 120.0/s of the planned 200/s: the sender could not keep the pace on this machine"
            ),
            "{}",
            r.evidence
        );
        let kept = CapacityStep { achieved_rate: Some(199.0), ..step(200.0, true) };
        let r = judge_steps(vec![kept], &capacity(200.0, 30, 10));
        assert!(!r.evidence.contains("sent at"), "{}", r.evidence);
    }
}
