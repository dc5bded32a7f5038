//! Races as rates in an audit's report: the concurrent copies' trials and the load's concurrent
//! copies (k of n doubled, with the 95 % interval), the race window's table by spacing, and its
//! chart for report.html (the double-apply rate against the spacing, each interval drawn).

use std::fmt::Write;

use plotters::prelude::*;

use super::chart::{self, Mark, Svg, frame, line_with_dots};
use super::{AuditSection, CheckFigures, LoadFigures, RateFigure, SpacingsFigures, TrialsFigures};

/// The spacing chart's id in the page.
pub const CHART_ID: &str = "spacings";

const RATE: RGBColor = RGBColor(214, 39, 40);

/// A rate's cells: "7 of 20", "35 %", "18–57 %" (or "no trial").
fn cells(r: &RateFigure) -> [String; 3] {
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.1} %", x * 100.0));
    let interval = match (r.low, r.high) {
        (Some(low), Some(high)) => format!("{:.1}–{:.1} %", low * 100.0, high * 100.0),
        _ => "no trial, so no interval".to_string(),
    };
    [format!("{} of {}", r.doubled, r.trials), pct(r.share), interval]
}

/// The concurrent copies' trials.
pub fn trials_markdown(md: &mut String, t: &TrialsFigures) {
    let [k, share, interval] = cells(&t.rate);
    let _ = writeln!(
        md,
        "\n## Concurrent copies\n\n{} trials, each a fresh event sent as {} copies released together; \
         {}.\n\n| doubled | rate | 95 % interval (Wilson) |\n|---:|---:|---:|\n| {k} | {share} | {interval} |",
        t.sent,
        t.copies,
        t.rate.rate().describe("trials", "doubled")
    );
}

/// The parallel load's events that got concurrent copies, when they were counted.
pub fn load_markdown(md: &mut String, l: &LoadFigures) {
    let Some(r) = &l.concurrent else { return };
    let [k, share, interval] = cells(r);
    let _ = writeln!(
        md,
        "\nEvents whose first delivery went as concurrent copies, applied twice: {k} ({share}, 95 % \
         interval {interval})."
    );
}

/// The race window's table: each spacing, its measured gap, its rate and interval.
pub fn window_markdown(md: &mut String, w: &SpacingsFigures) {
    let _ = writeln!(
        md,
        "\n## Race window\n\n{} pairs per spacing, the second copy released the spacing after the \
         first, each on a connection opened beforehand.\n\n| spacing (ms) | measured (ms, median) | \
         doubled | rate | 95 % interval (Wilson) |\n|---:|---:|---:|---:|---:|",
        w.pairs
    );
    for s in &w.spacings {
        let [k, share, interval] = cells(&s.rate);
        let _ = writeln!(md, "| {:.0} | {:.2} | {k} | {share} | {interval} |", s.spacing_ms, s.measured_ms);
    }
}

/// The figures by spacing, of the one check that sends pairs at spacings.
fn window_of(a: &AuditSection) -> Option<&SpacingsFigures> {
    a.checks.iter().find_map(|c| match &c.figures {
        Some(CheckFigures::Spacings(w)) => Some(w),
        _ => None,
    })
}

/// The chart's id and title, when the race window ran and some pair was applied.
pub fn chart_title(a: &AuditSection) -> Option<(&'static str, &'static str)> {
    window_of(a)
        .filter(|w| w.spacings.iter().any(|s| s.rate.trials > 0))
        .map(|_| (CHART_ID, "Race window: double applies against the spacing of a pair's copies"))
}

/// The chart: the rate at each spacing (its interval as a bar), so that where it falls to zero
/// shows how wide the receiver's window is.
pub fn chart(a: &AuditSection, title: &str) -> Svg {
    let Some(w) = window_of(a) else { return Ok(String::new()) };
    let points: Vec<(f64, f64, f64, f64)> = w
        .spacings
        .iter()
        .filter_map(|s| {
            Some((s.spacing_ms, s.rate.share? * 100.0, s.rate.low? * 100.0, s.rate.high? * 100.0))
        })
        .collect();
    let right = w.spacings.iter().map(|s| s.spacing_ms).fold(1.0, f64::max) * 1.05;
    chart::svg(chart::SIZE, title, |plot, legend| {
        let mut chart = frame(plot).build_cartesian_2d(-1f64..right, 0f64..105.0)?;
        chart
            .configure_mesh()
            .x_desc("second copy released after the first (ms)")
            .y_desc("pairs applied twice (%)")
            .draw()?;
        chart.draw_series(
            points
                .iter()
                .map(|&(x, _, low, high)| PathElement::new(vec![(x, low), (x, high)], RATE.stroke_width(1))),
        )?;
        legend.add("95 % interval (Wilson)", RATE.to_rgba(), Mark::Line);
        line_with_dots(&mut chart, points.iter().map(|&(x, y, _, _)| (x, y)).collect(), RATE.to_rgba())?;
        legend.add("double-apply rate", RATE.to_rgba(), Mark::Line);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::rate::Rate;
    use crate::report::SpacingFigure;

    #[test]
    fn the_table_has_a_row_per_spacing_with_its_interval() {
        let spacing =
            |ms: f64, k, n| SpacingFigure { spacing_ms: ms, measured_ms: ms, rate: Rate { k, n }.into() };
        let w = SpacingsFigures {
            pairs: 20,
            spacings: vec![spacing(0.0, 7, 20), spacing(50.0, 0, 20), spacing(1.0, 0, 0)],
        };
        let mut md = String::new();
        window_markdown(&mut md, &w);
        assert!(md.contains("| 0 | 0.00 | 7 of 20 | 35.0 % | 18.1–56.7 % |"), "{md}");
        assert!(md.contains("| 50 | 50.00 | 0 of 20 | 0.0 % | 0.0–16.1 % |"), "{md}");
        assert!(md.contains("| 1 | 1.00 | 0 of 0 | - | no trial, so no interval |"), "{md}");
    }

    #[test]
    fn the_trials_state_the_bound() {
        let t = TrialsFigures { sent: 40, copies: 2, rate: Rate { k: 0, n: 40 }.into() };
        let mut md = String::new();
        trials_markdown(&mut md, &t);
        assert!(md.contains("0 of 40 trials doubled: under 9 % at 95 %"), "{md}");
        let mut none = String::new();
        load_markdown(&mut none, &LoadFigures::default());
        assert_eq!(none, "", "not counted: nothing said");
    }
}
