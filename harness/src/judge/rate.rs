//! A race seen in k of n trials, as a rate with its 95 % interval (Wilson's score interval), and
//! the trials of a verdict that doubled. A race check's verdict stays the judge's (any duplicate
//! fails); the rate is its evidence: how often the race happens, or how rarely it can at most.
//!
//! Wilson's interval rather than the normal approximation: it holds at k = 0 and k = n, where a
//! passing check's bound lives (0 of 40 trials: under 8.8 %), and needs no quantile tables.

use super::{Class, Evidence, Verdict};

/// z of a two-sided 95 % interval: the standard normal's 97.5th percentile.
const Z95: f64 = 1.959_963_984_540_054;

/// k of n trials showed the race.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rate {
    /// Trials that showed it.
    pub k: u64,
    /// Trials run.
    pub n: u64,
}

impl Rate {
    /// k of n; `None` when k exceeds n.
    pub fn new(k: u64, n: u64) -> Option<Self> {
        (k <= n).then_some(Self { k, n })
    }

    /// The share k / n (`None`: no trial).
    pub fn share(self) -> Option<f64> {
        (self.n > 0).then(|| self.k as f64 / self.n as f64)
    }

    /// Wilson's 95 % score interval of the share, as (low, high) within 0..=1 (`None`: no trial).
    pub fn interval(self) -> Option<(f64, f64)> {
        if self.n == 0 {
            return None;
        }
        let (k, n, z2) = (self.k as f64, self.n as f64, Z95 * Z95);
        let center = (k + z2 / 2.0) / (n + z2);
        let half = Z95 / (n + z2) * (k * (n - k) / n + z2 / 4.0).sqrt();
        // At k = 0 and k = n the ends are exactly 0 and 1; rounding must not move them.
        let low = if self.k == 0 { 0.0 } else { (center - half).max(0.0) };
        let high = if self.k == self.n { 1.0 } else { (center + half).min(1.0) };
        Some((low, high))
    }

    /// The rate in words, `trials` naming what was tried and `showed` what it showed: "0 of 40
    /// trials doubled: under 9 % at 95 %", "7 of 20 trials doubled (35 %, 95 % CI 18–57 %)", "no
    /// trials, so no rate". The bounds are rounded outwards, so the words never claim more.
    pub fn describe(self, trials: &str, showed: &str) -> String {
        let (Some(share), Some((low, high))) = (self.share(), self.interval()) else {
            return format!("no {trials}, so no rate");
        };
        let (k, n) = (self.k, self.n);
        if k == 0 {
            return format!("0 of {n} {trials} {showed}: under {} % at 95 %", percent_up(high));
        }
        format!(
            "{k} of {n} {trials} {showed} ({} %, 95 % CI {}–{} %)",
            percent(share),
            percent_down(low),
            percent_up(high)
        )
    }
}

/// A share as a percentage: whole from 1 % up, else to a tenth.
fn percent(x: f64) -> String {
    let p = x * 100.0;
    if p >= 1.0 { format!("{p:.0}") } else { format!("{p:.1}") }
}

/// A bound rounded up (an upper end: "under" must hold).
fn percent_up(x: f64) -> String {
    let p = x * 100.0;
    if p >= 1.0 {
        format!("{}", (p - 1e-9).ceil())
    } else {
        format!("{:.1}", (p * 10.0 - 1e-9).ceil() / 10.0)
    }
}

/// A bound rounded down (a lower end).
fn percent_down(x: f64) -> String {
    let p = x * 100.0;
    if p >= 1.0 {
        format!("{}", (p + 1e-9).floor())
    } else {
        format!("{:.1}", (p * 10.0 + 1e-9).floor() / 10.0)
    }
}

/// Of `events` (indices of the verdict's history), the trials that exercised the race, those the
/// observers saw applied at least once (an event never applied raced nothing: the judge fails it
/// as never-applied or lost, and it must not make the rate look low), and of those, the ones the
/// judge found doubled.
pub fn doubled(verdict: &Verdict, evidence: &Evidence, events: impl IntoIterator<Item = usize>) -> Rate {
    let (mut k, mut n) = (0, 0);
    for i in events {
        let applied = evidence.applied(i).is_some_and(|(_, most)| most >= 1);
        if !applied {
            continue;
        }
        n += 1;
        if verdict.events.get(i).is_some_and(|c| c.contains(Class::Duplicate)) {
            k += 1;
        }
    }
    Rate { k, n }
}

#[cfg(test)]
mod tests {
    use super::super::notation::{evidence, history};
    use super::super::{Rules, judge};
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_known_values() {
        // 0 of 40: the upper end is z² / (n + z²) = 3.8415 / 43.8415.
        let (low, high) = Rate { k: 0, n: 40 }.interval().expect("trials");
        assert_eq!(low, 0.0);
        assert!(close(high, 0.0876), "{high}");
        // 7 of 20: 18.1 % to 56.7 % (Wilson, 1927; as R's prop.test without correction).
        let (low, high) = Rate { k: 7, n: 20 }.interval().expect("trials");
        assert!(close(low, 0.1812) && close(high, 0.5671), "{low} {high}");
        // 20 of 20: the lower end is n / (n + z²).
        let (low, high) = Rate { k: 20, n: 20 }.interval().expect("trials");
        assert!(close(low, 0.8389) && high == 1.0, "{low} {high}");
        // 1 of 2 is symmetric about a half.
        let (low, high) = Rate { k: 1, n: 2 }.interval().expect("trials");
        assert!(close(low + high, 1.0) && close(low, 0.0945), "{low} {high}");
    }

    #[test]
    fn no_trial_has_no_interval() {
        assert_eq!(Rate { k: 0, n: 0 }.interval(), None);
        assert_eq!(Rate { k: 0, n: 0 }.share(), None);
        assert_eq!(Rate::new(3, 2), None);
        assert_eq!(Rate::new(2, 3), Some(Rate { k: 2, n: 3 }));
    }

    #[test]
    fn the_words_state_the_bound_or_the_interval() {
        let d = |k, n| Rate { k, n }.describe("trials", "doubled");
        assert_eq!(d(0, 40), "0 of 40 trials doubled: under 9 % at 95 %");
        assert_eq!(d(7, 20), "7 of 20 trials doubled (35 %, 95 % CI 18–57 %)");
        assert_eq!(d(20, 20), "20 of 20 trials doubled (100 %, 95 % CI 83–100 %)");
        assert_eq!(d(0, 0), "no trials, so no rate");
        // Below 1 %, a tenth: 0 of 1000 is under 0.4 % (0.383 % rounded up).
        assert_eq!(d(0, 1000), "0 of 1000 trials doubled: under 0.4 % at 95 %");
    }

    #[test]
    fn doubled_counts_the_judges_duplicates_among_the_applied() {
        let h = history("c:a c:a c:a c:f");
        let e = evidence("applied 0=2 1=1 2=3 3=0", h.len());
        let v = judge(&h, &e, &Rules::strict());
        // Event 3 was never applied: it raced nothing and is not a trial.
        assert_eq!(doubled(&v, &e, 0..4), Rate { k: 2, n: 3 });
        assert_eq!(doubled(&v, &e, [1]), Rate { k: 0, n: 1 });
        assert_eq!(doubled(&v, &e, [3]), Rate { k: 0, n: 0 });
        // Nothing observed applied (every delivery refused): no trial at all, not "0 doubled".
        let refused = history("c:r c:r");
        let none = evidence("applied", refused.len());
        let v = judge(&refused, &none, &Rules::strict());
        assert_eq!(doubled(&v, &none, 0..2), Rate { k: 0, n: 0 });
    }
}
