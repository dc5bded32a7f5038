//! The capacity check: the rate ramped in steps (`--ramp FROM..TO`, `--ramp-steps`, each
//! `--step-duration` long), each step a plain load (no duplicates or faults, one attempt per
//! delivery, cut at the provider's timeout as the provider would cut it, and never held back by the
//! sender: as many in flight as the rate and the timeout call for, up to 2,048). Per step: p50, p99 and
//! max from each delivery's planned time (coordinated omission corrected), the share slower than
//! the timeout, and the share of errors. The capacity is the highest rate whose p99 stayed under
//! the timeout with errors under 1 %; the ramp stops after the first step that does not hold.

use std::sync::Arc;
use std::time::Duration;

use super::checks::Ctx;
use super::load;
use super::provider::Provider;
use super::verdict::{CapacityFigures, CapacityStep, Check, CheckResult, Status};
use super::{AuditConfig, AuditError};
use crate::sender::{RetryPolicy, SenderConfig};
use crate::workload::{Workload, WorkloadConfig};

/// Errors above this share fail a step.
const MAX_ERRORS: f64 = 0.01;
/// Connections a step may hold open at most (file descriptors are finite).
const MAX_IN_FLIGHT: usize = 2048;

/// Requests in flight a step allows: as many as `rate` deliveries each lasting up to `timeout`
/// make, so that, like a provider, the sender never holds a delivery back and every delivery's
/// latency from its planned time is the receiver's alone.
fn in_flight(rate: f64, timeout: Duration, at_least: usize) -> usize {
    let needed = (rate * timeout.as_secs_f64()).ceil() as usize + at_least;
    needed.min(MAX_IN_FLIGHT)
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

/// Parses `FROM..TO` (events per second).
pub fn parse_ramp(s: &str) -> Result<(f64, f64), String> {
    let (from, to) = s.split_once("..").ok_or_else(|| format!("`{s}` is not FROM..TO, such as 10..200"))?;
    let rate = |t: &str| -> Result<f64, String> {
        let r: f64 = t.trim().parse().map_err(|_| format!("`{t}` in `{s}` is not a number"))?;
        if r.is_finite() && r > 0.0 { Ok(r) } else { Err(format!("`{t}` in `{s}` must be above 0")) }
    };
    let (from, to) = (rate(from)?, rate(to)?);
    if to < from {
        return Err(format!("`{s}` ramps down; give the lower rate first"));
    }
    Ok((from, to))
}

/// A step's workload: `events` credits and updates, without the article's faults.
fn plain(config: &AuditConfig, events: usize) -> WorkloadConfig {
    WorkloadConfig {
        events,
        p_duplicate: 0.0,
        p_ack_lost: 0.0,
        p_concurrent: 0.0,
        p_shuffle: 0.0,
        ..config.workload.clone()
    }
}

/// Runs the ramp, step by step, reporting each through `step`.
pub async fn run(
    ctx: &Ctx,
    config: &AuditConfig,
    ramp: Ramp,
    timeout: Duration,
    step: &(dyn Fn(&str) + Sync),
) -> Result<Vec<CapacityStep>, AuditError> {
    let mut steps = Vec::new();
    for (i, rate) in ramp.rates().into_iter().enumerate() {
        step(&format!("capacity: {rate:.1} events/s for {}", humantime::format_duration(ramp.step_duration)));
        let events = (rate * ramp.step_duration.as_secs_f64()).ceil().max(1.0) as usize;
        let workload = Workload::generate(&plain(config, events))?;
        let wire = Arc::new(ctx.load_wire(&format!("cap{i}_"), workload.config.accounts));
        let sender = SenderConfig {
            rate: Some(rate),
            concurrency: in_flight(rate, timeout, config.concurrency),
            timeout,
            retry: RetryPolicy { max_attempts: 1, ..config.retry },
            record: false,
            ..config.load_sender(Check::Capacity)
        };
        let load = load::send(&config.url, workload, wire, sender, ctx.probe.now_ms()).await?;
        let (c, l) = (&load.sent.counters, &load.sent.latency_intended);
        let n = c.deliveries.max(1) as f64;
        let ms = |us: u64| us as f64 / 1e3;
        let s = CapacityStep {
            rate_per_s: rate,
            deliveries: c.deliveries,
            p50_ms: ms(l.p50),
            p99_ms: ms(l.p99),
            max_ms: ms(l.max),
            over_timeout: c.timeouts as f64 / n,
            errors: (c.status_5xx + c.connect_errors) as f64 / n,
            held: false,
        };
        let held = s.p99_ms < timeout.as_secs_f64() * 1e3 && s.errors < MAX_ERRORS;
        steps.push(CapacityStep { held, ..s });
        if !held {
            break;
        }
    }
    Ok(steps)
}

/// The verdict: PASS when the capacity reaches `min_capacity`.
pub fn judge(
    steps: Vec<CapacityStep>,
    provider: Option<Provider>,
    timeout: Duration,
    min_capacity: f64,
) -> (CheckResult, CapacityFigures) {
    let capacity = steps.iter().filter(|s| s.held).map(|s| s.rate_per_s).reduce(f64::max);
    let held_to = provider.map_or_else(
        || format!("--timeout {}", humantime::format_duration(timeout)),
        |p| format!("{}'s {} timeout", p.as_str(), humantime::format_duration(timeout)),
    );
    let last = steps.last().map_or(String::new(), |s| {
        format!(
            "; last step {:.1}/s: p99 {:.1} ms, {:.1} % over the timeout, {:.1} % errors",
            s.rate_per_s,
            s.p99_ms,
            s.over_timeout * 100.0,
            s.errors * 100.0
        )
    });
    let (status, evidence) = match capacity {
        Some(c) if c >= min_capacity => {
            (Status::Pass, format!("capacity {c:.1} events/s with p99 under {held_to}{last}"))
        }
        Some(c) => (
            Status::Fail,
            format!(
                "capacity {c:.1} events/s, below the {min_capacity:.1} asked (--min-capacity), held to {held_to}{last}"
            ),
        ),
        None => (Status::Fail, format!("no step held p99 under {held_to} with errors under 1 %{last}")),
    };
    let figures = CapacityFigures {
        provider,
        timeout_ms: timeout.as_secs_f64() * 1e3,
        steps,
        capacity_per_s: capacity,
    };
    (CheckResult { check: Check::Capacity, status, evidence, witnesses: Vec::new() }, figures)
}
