//! The bounds of every number and duration an audit is told: each a range, checked before anything
//! is sent, so that no flag can make the audit panic, allocate what the machine does not have, or
//! sleep for a year. Each bound is wide enough for any real receiver and provider (Stripe retries
//! for three days, GitHub caps payloads at 25 MB); `--help` and docs/audit.md state them.

use std::fmt::Debug;
use std::ops::RangeInclusive;
use std::time::Duration;

use super::AuditConfig;
use crate::audit::AuditError;
use crate::wire::Poison;

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
const fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}
const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

/// Events per second of a load or a ramp's step.
pub const RATE: RangeInclusive<f64> = 0.01..=100_000.0;
/// Requests in flight.
pub const CONCURRENCY: RangeInclusive<usize> = 1..=4096;
/// One attempt's timeout.
pub const TIMEOUT: RangeInclusive<Duration> = ms(10)..=s(10 * MINUTE);
/// Attempts per event.
pub const MAX_ATTEMPTS: RangeInclusive<u32> = 1..=100;
/// Trials of a race check (`--trials`): the race window sends seven times as many pairs.
pub const TRIALS: RangeInclusive<usize> = 1..=10_000;
/// The wait before the late replay (Stripe retries for three days).
pub const REPLAY_AFTER: RangeInclusive<Duration> = s(0)..=s(7 * DAY);
/// How long a stalled body may be held.
pub const STALL_WAIT: RangeInclusive<Duration> = ms(100)..=s(10 * MINUTE);
/// The oversized body: past every provider's cap, within what one allocation should take.
pub const OVERSIZED_BYTES: RangeInclusive<usize> = 1024..=(128 << 20);
/// How long the observers must see no change.
pub const QUIET: RangeInclusive<Duration> = ms(10)..=s(10 * MINUTE);
/// How long they may take to settle.
pub const SETTLE_MAX: RangeInclusive<Duration> = ms(100)..=s(DAY);
/// How long a restart may take.
pub const RESTART_TIMEOUT: RangeInclusive<Duration> = s(1)..=s(HOUR);
/// The poison check's p99 factor.
pub const P99_FACTOR: RangeInclusive<f64> = 1.0..=1000.0;
/// One step of the capacity ramp.
pub const STEP_DURATION: RangeInclusive<Duration> = ms(100)..=s(HOUR);
/// Deliveries one step of the ramp may send (its rate times its duration).
pub const STEP_EVENTS: f64 = 10_000_000.0;
/// The retry storm's outage, in the provider's time.
pub const OUTAGE: RangeInclusive<Duration> = s(1)..=s(30 * DAY);
/// How much faster than the provider's clock the storm runs.
pub const TIME_SCALE: RangeInclusive<f64> = 1.0..=1_000_000.0;
/// The first account: any range a JSON number (and a JavaScript receiver) holds exactly.
pub const ACCOUNT_BASE: RangeInclusive<i64> = 0..=1_000_000_000_000_000;
/// An account the user names: any integer a JSON number holds exactly (-1 is a natural poison).
pub const JSON_INTEGER: RangeInclusive<i64> = -(1 << 53) + 1..=(1 << 53) - 1;
/// The id prefix's length; its characters are letters, digits, `_` and `-`.
pub const ID_PREFIX_LEN: RangeInclusive<usize> = 1..=32;
/// The whole audit.
pub const DEADLINE: RangeInclusive<Duration> = s(1)..=s(7 * DAY);

/// `value` of `flag` within `range`, else an error naming both.
fn within<T: PartialOrd + Debug>(
    flag: &str,
    value: T,
    range: &RangeInclusive<T>,
    show: impl Fn(&T) -> String,
) -> Result<(), AuditError> {
    if range.contains(&value) {
        return Ok(());
    }
    Err(AuditError::Config(format!(
        "{flag} {} is out of bounds: give {} to {}",
        show(&value),
        show(range.start()),
        show(range.end())
    )))
}

fn number<T: Debug>(v: &T) -> String {
    format!("{v:?}")
}

fn duration(d: &Duration) -> String {
    humantime::format_duration(*d).to_string()
}

/// Refuses every number and duration of `c` out of its bounds, naming the flag.
pub fn check(c: &AuditConfig) -> Result<(), AuditError> {
    let (l, p, w) = (&c.load, &c.probes, &c.watch);
    within("--rate", l.rate, &RATE, number)?;
    within("--concurrency", l.concurrency, &CONCURRENCY, number)?;
    within("--timeout", l.timeout, &TIMEOUT, duration)?;
    within("--max-attempts", l.retry.max_attempts, &MAX_ATTEMPTS, number)?;
    within("--trials", p.trials, &TRIALS, number)?;
    within("--replay-after", p.replay_after, &REPLAY_AFTER, duration)?;
    within("--stall-wait", p.stall_wait, &STALL_WAIT, duration)?;
    within("--oversized-bytes", p.oversized_bytes, &OVERSIZED_BYTES, number)?;
    within("--quiet", w.quiet, &QUIET, duration)?;
    within("--settle-max", w.settle_max, &SETTLE_MAX, duration)?;
    if w.quiet > w.settle_max {
        return Err(AuditError::Config("--quiet must not be longer than --settle-max".into()));
    }
    within("--deadline", c.deadline, &DEADLINE, duration)?;
    for control in c.crash.iter().map(|c| &c.control).chain(c.storm.iter().map(|s| &s.control)) {
        within("--restart-timeout", control.restart_timeout, &RESTART_TIMEOUT, duration)?;
    }
    if let Some(poison) = &c.poison {
        within("--poison-p99-factor", poison.p99_factor, &P99_FACTOR, number)?;
        if let Poison::Account(account) = poison.poison {
            within("--poison-account", account, &JSON_INTEGER, number)?;
        }
    }
    if let Some(capacity) = &c.capacity {
        let r = &capacity.ramp;
        within("--ramp", r.from, &RATE, number)?;
        within("--ramp", r.to, &RATE, number)?;
        within("--step-duration", r.step_duration, &STEP_DURATION, duration)?;
        let events = r.to * r.step_duration.as_secs_f64();
        if events > STEP_EVENTS {
            return Err(AuditError::Config(format!(
                "--ramp's top rate {} for --step-duration {} is {events:.0} deliveries in one step, more than {STEP_EVENTS:.0}",
                r.to,
                duration(&r.step_duration)
            )));
        }
        if let Some(min) = capacity.min_capacity {
            within("--min-capacity", min, &RATE, number)?;
        }
    }
    if let Some(storm) = &c.storm {
        within("--outage", storm.outage, &OUTAGE, duration)?;
        within("--time-scale", storm.time_scale, &TIME_SCALE, number)?;
    }
    if let Some(base) = c.account_base {
        within("--account-base", base, &ACCOUNT_BASE, number)?;
    }
    if let Some(prefix) = &c.id_prefix {
        id_prefix(prefix)?;
    }
    deadline_fits(c)
}

/// The least the audit's waits add up to: the parallel load at its rate, the late replay's wait,
/// the ramp's steps and the storm's outage in real time. (Checked after every bound above, so
/// each term is finite.)
fn planned_at_least(c: &AuditConfig) -> Duration {
    let load = c.load.workload.events as f64 / c.load.rate;
    let ramp =
        c.capacity.as_ref().map_or(0.0, |k| f64::from(k.ramp.steps) * k.ramp.step_duration.as_secs_f64());
    let storm = c.storm.as_ref().map_or(0.0, |s| s.outage.as_secs_f64() / s.time_scale);
    let secs = load + ramp + storm + c.probes.replay_after.as_secs_f64();
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// A `--deadline` shorter than the audit's own waits would stop every run of it: refused at the
/// start, not after the deadline has been spent.
fn deadline_fits(c: &AuditConfig) -> Result<(), AuditError> {
    let planned = planned_at_least(c);
    if c.deadline >= planned {
        return Ok(());
    }
    let round = Duration::from_secs(planned.as_secs().saturating_add(1));
    Err(AuditError::Config(format!(
        "--deadline {} is shorter than the audit's own waits (at least {}: the load's events at --rate, --replay-after, the ramp's steps, the outage): raise --deadline",
        duration(&c.deadline),
        duration(&round)
    )))
}

/// An id prefix goes into headers and bodies as it is: letters, digits, `_` and `-` only (a CR or
/// LF would end the header it is in, and every delivery would fail).
fn id_prefix(prefix: &str) -> Result<(), AuditError> {
    let fits = ID_PREFIX_LEN.contains(&prefix.len())
        && prefix.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
    if fits {
        return Ok(());
    }
    Err(AuditError::Config(format!(
        "--id-prefix {:?} must be {} to {} letters, digits, `_` or `-`",
        prefix,
        ID_PREFIX_LEN.start(),
        ID_PREFIX_LEN.end()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_out_of_its_bounds_names_the_flag_and_the_bounds() {
        let err = within("--rate", 1e-300, &RATE, number).expect_err("too slow");
        assert_eq!(err.to_string(), "--rate 1e-300 is out of bounds: give 0.01 to 100000.0");
        assert!(within("--rate", f64::NAN, &RATE, number).is_err(), "NaN is in no range");
        let err = within("--timeout", Duration::ZERO, &TIMEOUT, duration).expect_err("zero");
        assert_eq!(err.to_string(), "--timeout 0s is out of bounds: give 10ms to 10m");
        assert!(within("--timeout", s(30), &TIMEOUT, duration).is_ok());
    }

    #[test]
    fn an_id_prefix_with_a_line_break_is_refused() {
        assert!(id_prefix("run7_").is_ok());
        let err = id_prefix("a\r\nx-injected: 1").expect_err("CR LF");
        assert!(err.to_string().starts_with("--id-prefix \"a\\r\\nx-injected: 1\" must be"), "{err}");
        assert!(id_prefix("").is_err());
        assert!(id_prefix(&"a".repeat(33)).is_err());
    }
}
