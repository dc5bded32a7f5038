//! The sender's retry policy: exponential backoff with full jitter, keyed draws.

use std::time::Duration;

/// The report's type: the policy as a run's parameters record it.
pub use crate::report::model::RetryPolicy;

impl Default for RetryPolicy {
    /// Scaled for a run of seconds: 10 ms doubling to at most 1 s, 10 attempts.
    fn default() -> Self {
        Self { base: Duration::from_millis(10), cap: Duration::from_secs(1), max_attempts: 10 }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0 for the first retry): full jitter, a `draw` in
    /// [0, 1) times `min(cap, base * 2^retry)`.
    pub fn delay(&self, retry: u32, draw: f64) -> Duration {
        let ceiling =
            self.base.saturating_mul(1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX)).min(self.cap);
        ceiling.mul_f64(draw.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap_and_jitter_scales_it() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(0, 0.999_999), Duration::from_millis(10).mul_f64(0.999_999));
        assert_eq!(p.delay(3, 0.5), Duration::from_millis(40));
        assert_eq!(p.delay(20, 0.5), Duration::from_millis(500));
        assert_eq!(p.delay(40, 1.0), Duration::from_secs(1));
        assert_eq!(p.delay(2, 0.0), Duration::ZERO);
    }
}
