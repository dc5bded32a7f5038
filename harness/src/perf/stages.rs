//! Where a delivery's time goes in the workers, from their `GET /stats` (receivers' timing.rs),
//! and in the reference loop, timed the same way: each stage's mean time per delivery and the
//! share of its runs that took a millisecond or more.

use std::collections::BTreeMap;
use std::time::Instant;

use receivers::timing::StageTotals;
use serde::Serialize;

/// One stage, per delivery.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StageShare {
    /// Its mean time per delivery, in milliseconds (over every delivery, not only those that
    /// ran it).
    pub ms_per_delivery: f64,
    /// Times it ran per delivery.
    pub runs_per_delivery: f64,
    /// The share of its runs that took 1 ms or more.
    pub over_1ms: f64,
}

/// Every stage that ran, per delivery, in the order a delivery meets them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stages {
    /// Deliveries the figures are divided by.
    pub deliveries: u64,
    /// Stage name to its share.
    pub stages: Vec<(String, StageShare)>,
}

/// The order stages are shown in: a delivery's, then anything else by name.
const ORDER: [&str; 9] =
    ["request", "verify", "parse", "pool", "turn", "begin", "held", "write", "transaction"];

impl Stages {
    /// Totals over `deliveries` deliveries; stages that never ran are left out.
    pub fn of(totals: &BTreeMap<String, StageTotals>, deliveries: u64) -> Self {
        let per = deliveries.max(1) as f64;
        let rank = |name: &str| ORDER.iter().position(|&o| o == name).unwrap_or(ORDER.len());
        let mut stages: Vec<(String, StageShare)> = totals
            .iter()
            .filter(|(_, t)| t.count > 0)
            .map(|(name, t)| {
                let share = StageShare {
                    ms_per_delivery: t.seconds * 1e3 / per,
                    runs_per_delivery: t.count as f64 / per,
                    over_1ms: t.over_1ms as f64 / t.count as f64,
                };
                (name.clone(), share)
            })
            .collect();
        stages.sort_by(|a, b| rank(&a.0).cmp(&rank(&b.0)).then_with(|| a.0.cmp(&b.0)));
        Self { deliveries, stages }
    }
}

impl std::fmt::Display for Stages {
    /// `request 0.81 ms | turn 0.30 ms (12% ≥1 ms) | ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, s)) in self.stages.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{name} {:.3} ms", s.ms_per_delivery)?;
            if s.over_1ms > 0.0 {
                write!(f, " ({:.0}% ≥1 ms)", s.over_1ms * 100.0)?;
            }
        }
        Ok(())
    }
}

/// The reference loop's own stage counters (one task's; added up at the end).
#[derive(Debug, Clone, Default)]
pub(super) struct LoopTimer {
    totals: BTreeMap<String, StageTotals>,
}

impl LoopTimer {
    /// Counts one run of `stage` that started at `started` and ends now.
    pub(super) fn since(&mut self, stage: &str, started: Instant) {
        self.totals.entry(stage.to_string()).or_default().add(&StageTotals::one(started.elapsed()));
    }

    /// Adds another task's counters to these.
    pub(super) fn add(&mut self, other: &LoopTimer) {
        for (stage, t) in &other.totals {
            self.totals.entry(stage.clone()).or_default().add(t);
        }
    }

    /// The counters, as the workers give theirs.
    pub(super) fn totals(&self) -> &BTreeMap<String, StageTotals> {
        &self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(rows: &[(&str, u64, f64, u64)]) -> BTreeMap<String, StageTotals> {
        rows.iter()
            .map(|&(n, count, seconds, over_1ms)| (n.to_string(), StageTotals { count, seconds, over_1ms }))
            .collect()
    }

    #[test]
    fn stages_are_per_delivery_in_a_deliverys_order() {
        let t = totals(&[("turn", 100, 0.05, 10), ("request", 100, 0.1, 0), ("held", 0, 0.0, 0)]);
        let s = Stages::of(&t, 100);
        let names: Vec<&str> = s.stages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["request", "turn"], "in order; a stage that never ran left out");
        let turn = s.stages[1].1;
        assert!((turn.ms_per_delivery - 0.5).abs() < 1e-9);
        assert!((turn.over_1ms - 0.1).abs() < 1e-9);
        assert_eq!(s.to_string(), "request 1.000 ms | turn 0.500 ms (10% ≥1 ms)");
    }

    #[test]
    fn nothing_delivered_divides_by_one_not_zero() {
        let s = Stages::of(&totals(&[("request", 0, 0.0, 0)]), 0);
        assert!(s.stages.is_empty());
        assert_eq!(s.to_string(), "");
    }
}
