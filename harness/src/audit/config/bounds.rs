//! The bounds of every number and duration the audit as a whole is told (each check's own are in
//! its module, checked with [`within`]): each a range, checked before anything is sent, so that no flag can make the audit panic, allocate what the machine does not have, or
//! sleep for a year. Each bound is wide enough for any real receiver and provider (Stripe retries
//! for three days, GitHub caps payloads at 25 MB); `--help` and docs/audit.md state them.

use std::fmt::Debug;
use std::ops::RangeInclusive;
use std::time::Duration;

use super::AuditConfig;
use crate::audit::AuditError;

/// `n` milliseconds.
pub(in crate::audit) const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
/// `n` seconds.
pub(in crate::audit) const fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}
/// Seconds in a minute, an hour, a day.
pub(in crate::audit) const MINUTE: u64 = 60;
pub(in crate::audit) const HOUR: u64 = 60 * MINUTE;
pub(in crate::audit) const DAY: u64 = 24 * HOUR;

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
/// How long the observers must see no change.
pub const QUIET: RangeInclusive<Duration> = ms(10)..=s(10 * MINUTE);
/// How long they may take to settle.
pub const SETTLE_MAX: RangeInclusive<Duration> = ms(100)..=s(DAY);
/// The first account: any range a JSON number (and a JavaScript receiver) holds exactly.
pub const ACCOUNT_BASE: RangeInclusive<i64> = 0..=1_000_000_000_000_000;
/// The id prefix's length; its characters are letters, digits, `_` and `-`.
pub const ID_PREFIX_LEN: RangeInclusive<usize> = 1..=32;
/// The whole audit.
pub const DEADLINE: RangeInclusive<Duration> = s(1)..=s(7 * DAY);

/// `value` of `flag` within `range`, else an error naming both.
pub(in crate::audit) fn within<T: PartialOrd + Debug>(
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

/// A number as a bound's error shows it.
pub(in crate::audit) fn number<T: Debug>(v: &T) -> String {
    format!("{v:?}")
}

/// A duration as a bound's error shows it.
pub(in crate::audit) fn duration(d: &Duration) -> String {
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
    within("--quiet", w.quiet, &QUIET, duration)?;
    within("--settle-max", w.settle_max, &SETTLE_MAX, duration)?;
    if w.quiet > w.settle_max {
        return Err(AuditError::Config("--quiet must not be longer than --settle-max".into()));
    }
    within("--deadline", c.deadline, &DEADLINE, duration)?;
    if let Some(base) = c.account_base {
        within("--account-base", base, &ACCOUNT_BASE, number)?;
    }
    if let Some(prefix) = &c.id_prefix {
        id_prefix(prefix)?;
    }
    Ok(())
}

/// A `--deadline` shorter than the audit's own waits (the parallel load at its rate, and
/// `checks_wait`, what the checks wait on their own: the late replay's wait, the ramp's steps, the
/// storm's outage in real time) would stop every run of it: refused at the start, not after the
/// deadline has been spent. (Checked after every bound, so each term is finite.)
pub(in crate::audit) fn deadline_fits(c: &AuditConfig, checks_wait: Duration) -> Result<(), AuditError> {
    let load =
        Duration::try_from_secs_f64(c.load.workload.events as f64 / c.load.rate).unwrap_or(Duration::MAX);
    let planned = load.saturating_add(checks_wait);
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
