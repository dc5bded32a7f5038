//! The race window (`--race-window`): pairs of copies of a fresh credit, the second released 0,
//! 1, 2, 5, 10, 20 and 50 ms after the first, `--trials` pairs per spacing, each copy on a
//! connection opened and signed before its release. PASS: each applied exactly once (any double
//! apply is a duplicate). The evidence gives the double-apply rate at each spacing with its 95 %
//! interval: how wide the window between the receiver's check and its insert is.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{AuditCheck, CheckSettings, Delivery, EXACTLY_ONCE, Info, Phase, Plan, Run, Unbuilt};
use crate::audit::AuditError;
use crate::audit::config::AuditConfig;
use crate::audit::ctx::{Ctx, Delivered, Probes, now_s};
use crate::judge::rate::{Rate, doubled};
use crate::judge::{CreditBook, Expect, Needs};
use crate::observe::Snapshot;
use crate::report::{Check, CheckFigures, CheckResult, SpacingFigure, SpacingsFigures};
use crate::wire::Fields;

/// How far apart each pair's two copies are released, milliseconds.
pub const SPACINGS_MS: [u64; 7] = [0, 1, 2, 5, 10, 20, 50];

/// From a pair's start to its first release: time for both connections to open and handshake,
/// so that neither connect is part of the spacing.
const READY: Duration = Duration::from_millis(25);

/// tokio's timer fires on whole milliseconds; the last stretch before a release is yielded away
/// instead, so a 1 ms spacing is 1 ms and not 0 or 2.
const SPIN: Duration = Duration::from_millis(2);

/// The check, as the registry knows it.
pub const INFO: Info = Info { check: Check::RaceWindow, phase: Phase::Probe, build };

/// The check's own flag: it runs only when asked, its pairs being seven times `--trials` credits.
#[derive(Debug, Clone, Default, clap::Args)]
#[group(id = "race-window")]
pub struct Flags {
    /// Run the race-window check: pairs of copies of a fresh credit, the second released 0, 1, 2,
    /// 5, 10, 20 and 50 ms after the first, --trials pairs per spacing.
    #[arg(long)]
    pub race_window: bool,
}

/// Builds the check when `--race-window` was given.
fn build<'a>(
    config: &'a AuditConfig,
    checks: &'a CheckSettings,
) -> Result<Box<dyn AuditCheck + 'a>, Unbuilt> {
    if !checks.race_window {
        return Err(Unbuilt::Needs("--race-window (pairs of copies released 0 to 50 ms apart)"));
    }
    Ok(Box::new(RaceWindow { trials: config.probes.trials }))
}

struct RaceWindow {
    trials: usize,
}

/// Tries to be answered after neither copy of a pair was.
const RETRIES: usize = 3;
/// The most times one of its credits reaches the receiver: the pair, then the retries.
const REACH: u32 = 2 + RETRIES as u32;

/// One spacing's pairs: their events in the probes, and the measured gaps between their copies.
struct Spaced {
    spacing_ms: u64,
    events: Range<usize>,
    gaps_ms: Vec<f64>,
}

/// Every pair sent, waiting for the observers.
struct Window {
    probes: Probes,
    spacings: Vec<Spaced>,
    pairs: usize,
}

/// Waits until `when`, to within a fraction of a millisecond.
async fn until(when: Instant) {
    if let Some(early) = when.checked_sub(SPIN) {
        tokio::time::sleep_until(early).await;
    }
    while Instant::now() < when {
        tokio::task::yield_now().await;
    }
}

/// The median of `xs` (0 when empty).
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The spacings' rates in words: "0 ms 18/20, 1 ms 17/20, ..., 50 ms 0/20; doubled up to 20 ms
/// apart" (the widest spacing that doubled; at the widest sent, the window is at least that), or
/// "no pair doubled at any spacing".
fn rates_in_words(rates: &[(u64, Rate)]) -> String {
    let each: Vec<String> = rates.iter().map(|(s, r)| format!("{s} ms {}/{}", r.k, r.n)).collect();
    let widest = rates.iter().filter(|(_, r)| r.k > 0).map(|(s, _)| *s).max();
    let widest_sent = rates.iter().map(|(s, _)| *s).max();
    let tail = match widest {
        Some(s) if Some(s) == widest_sent => {
            format!("doubled even {s} ms apart, the widest spacing sent: the window is at least that wide")
        }
        Some(s) => format!("doubled up to {s} ms apart"),
        None if rates.iter().all(|(_, r)| r.n == 0) => "no pair applied, so no rate".to_string(),
        None => {
            let n: u64 = rates.iter().map(|(_, r)| r.n).sum();
            format!("no pair doubled at any spacing ({})", Rate { k: 0, n }.describe("pairs", "doubled"))
        }
    };
    format!("doubled by spacing: {}; {tail}", each.join(", "))
}

impl Delivery for Window {
    fn judge(&self, seen: &Snapshot) -> CheckResult {
        let (mut result, verdict) = self.probes.judged(seen);
        let evidence = seen.evidence(&self.probes.history());
        let rates: Vec<(u64, Rate)> = self
            .spacings
            .iter()
            .map(|s| (s.spacing_ms, doubled(&verdict, &evidence, s.events.clone())))
            .collect();
        result.evidence = format!("{}; {}", result.evidence, rates_in_words(&rates));
        let spacings = self
            .spacings
            .iter()
            .zip(&rates)
            .map(|(s, (_, r))| SpacingFigure {
                spacing_ms: s.spacing_ms as f64,
                measured_ms: median(&s.gaps_ms),
                rate: (*r).into(),
            })
            .collect();
        result.figures = Some(CheckFigures::Spacings(SpacingsFigures { pairs: self.pairs as u64, spacings }));
        result
    }

    fn replayable(&self, seen: &Snapshot) -> Vec<Fields> {
        self.probes.replayable(seen)
    }

    fn book(&self, book: &mut CreditBook) {
        self.probes.book(book);
    }
}

/// Sends `sent` as two copies, the second released `spacing` after the first, each on a
/// connection opened and signed beforehand; the measured gap between their sends.
async fn send_pair(ctx: &Arc<Ctx>, sent: &mut Delivered, spacing: Duration) -> f64 {
    let first = Instant::now() + READY;
    let copy = |release: Instant, note: &'static str| {
        let (ctx, f) = (ctx.clone(), sent.fields.clone());
        async move {
            let (body, headers) = ctx.wire.attempt(&f, now_s());
            ctx.probe.post_released(&headers, body, until(release), note).await
        }
    };
    let (a, b) =
        tokio::join!(copy(first, "copy 1 of 2"), copy(first + spacing, "copy 2 of 2, released later"));
    let gap = b.log.at_ms - a.log.at_ms;
    sent.push(a);
    sent.push(b);
    gap
}

#[async_trait::async_trait]
impl AuditCheck for RaceWindow {
    fn plan(&self, _config: &AuditConfig) -> Plan {
        Plan::credits(SPACINGS_MS.len() * self.trials, REACH)
    }

    async fn send(&self, run: &Run<'_>) -> Result<Box<dyn Delivery>, AuditError> {
        let ctx = run.ctx;
        let mut probes = Probes::new(INFO.check, EXACTLY_ONCE, &[Needs::Applies]);
        let mut spacings = Vec::new();
        for spacing_ms in SPACINGS_MS {
            (run.step)(&format!("race-window: pairs {spacing_ms} ms apart"));
            let begin = probes.events.len();
            let mut gaps_ms = Vec::with_capacity(self.trials);
            for _ in 0..self.trials {
                let n = probes.events.len();
                let mut sent = Delivered::new(ctx.credit("rw", n, 100 + n as i64, REACH)?, Expect::Once);
                gaps_ms.push(send_pair(ctx, &mut sent, Duration::from_millis(spacing_ms)).await);
                if !sent.answers.acked {
                    ctx.until_answered(&mut sent, RETRIES, "retry after no copy was acknowledged").await;
                }
                probes.events.push(sent);
            }
            spacings.push(Spaced { spacing_ms, events: begin..probes.events.len(), gaps_ms });
        }
        Ok(Box::new(Window { probes, spacings, pairs: self.trials }) as Box<dyn Delivery>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_name_the_widest_spacing_that_doubled() {
        let r = |k, n| Rate { k, n };
        let rates = [(0, r(5, 5)), (10, r(2, 5)), (50, r(0, 5))];
        assert_eq!(
            rates_in_words(&rates),
            "doubled by spacing: 0 ms 5/5, 10 ms 2/5, 50 ms 0/5; doubled up to 10 ms apart"
        );
        let wide = [(0, r(5, 5)), (50, r(1, 5))];
        assert_eq!(
            rates_in_words(&wide),
            "doubled by spacing: 0 ms 5/5, 50 ms 1/5; doubled even 50 ms apart, the widest spacing sent: the window is at least that wide"
        );
        let none = [(0, r(0, 20)), (50, r(0, 20))];
        assert_eq!(
            rates_in_words(&none),
            "doubled by spacing: 0 ms 0/20, 50 ms 0/20; no pair doubled at any spacing (0 of 40 pairs doubled: under 9 % at 95 %)"
        );
        // Nothing applied (every delivery refused): no rate at all, not "none doubled".
        let refused = [(0, r(0, 0)), (50, r(0, 0))];
        assert_eq!(
            rates_in_words(&refused),
            "doubled by spacing: 0 ms 0/0, 50 ms 0/0; no pair applied, so no rate"
        );
    }

    #[test]
    fn the_median_of_the_gaps() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
