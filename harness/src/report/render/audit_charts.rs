//! An audit's charts for report.html: the capacity ramp (latency and errors against the rate, the
//! timeout drawn across) and the retry storm (arrivals per second, the recovery marked).

use plotters::prelude::*;

use super::chart::{self, Mark, Svg, frame, line_with_dots, marker};
use super::{AuditSection, CapacityFigures, Check, CheckFigures, StormFigures};

fn capacity_of(a: &AuditSection) -> Option<&CapacityFigures> {
    match a.figures(Check::Capacity) {
        Some(CheckFigures::Capacity(c)) => Some(c),
        _ => None,
    }
}

/// The storm's figures, of the one check that sends a storm.
fn storm_of(a: &AuditSection) -> Option<&StormFigures> {
    a.checks.iter().find_map(|c| match &c.figures {
        Some(CheckFigures::Storm(s)) => Some(s),
        _ => None,
    })
}

const P50: RGBColor = RGBColor(31, 119, 180);
const P99: RGBColor = RGBColor(214, 39, 40);
const MAX: RGBColor = RGBColor(148, 103, 189);
const ERRORS: RGBColor = RGBColor(255, 127, 14);

/// The charts an audit's page shows, by id and title.
pub fn audit_chart_titles(a: &AuditSection) -> Vec<(&'static str, &'static str)> {
    let mut titles = Vec::new();
    if capacity_of(a).is_some_and(|c| !c.steps.is_empty()) {
        titles.push(("capacity-latency", "Capacity: latency against the rate, the timeout across"));
        titles.push(("capacity-errors", "Capacity: deliveries over the timeout and errors against the rate"));
    }
    if storm_of(a).is_some_and(|s| !s.arrivals_per_100ms.is_empty()) {
        titles.push(("storm", "Retry storm: attempts per tenth of a second from the outage on"));
    }
    titles.extend(super::rates::chart_title(a));
    titles
}

/// Draws chart `id` of `a`.
pub fn audit_chart(a: &AuditSection, id: &str, title: &str) -> Svg {
    match (id, capacity_of(a), storm_of(a)) {
        ("capacity-latency", Some(c), _) => capacity_latency(c, title),
        ("capacity-errors", Some(c), _) => capacity_errors(c, title),
        ("storm", _, Some(s)) => storm(s, title),
        (super::rates::CHART_ID, _, _) => super::rates::chart(a, title),
        _ => Ok(String::new()),
    }
}

fn rate_range(c: &CapacityFigures) -> std::ops::Range<f64> {
    let lo = c.steps.iter().map(|s| s.rate_per_s).fold(f64::INFINITY, f64::min);
    let hi = c.steps.iter().map(|s| s.rate_per_s).fold(0.0, f64::max);
    let pad = ((hi - lo) * 0.08).max(1.0);
    (lo - pad).max(0.0)..hi + pad
}

fn capacity_latency(c: &CapacityFigures, title: &str) -> Svg {
    let top = c.steps.iter().map(|s| s.max_ms).fold(c.timeout_ms, f64::max) * 2.0;
    let bottom =
        c.steps.iter().map(|s| s.p50_ms).fold(f64::INFINITY, f64::min).min(c.timeout_ms).max(0.01) / 2.0;
    chart::svg(chart::SIZE, title, |plot, legend| {
        let x = rate_range(c);
        let mut chart = frame(plot).build_cartesian_2d(x.clone(), (bottom..top).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("rate asked (events per second)")
            .y_desc("latency from planned send (ms, log scale)")
            .draw()?;
        // max under p99 under p50: with few deliveries a step's p99 is often its max.
        for (name, color, pick) in [
            ("max", MAX, (|s| s.max_ms) as fn(&super::CapacityStep) -> f64),
            ("p99", P99, |s| s.p99_ms),
            ("p50", P50, |s| s.p50_ms),
        ] {
            let points = c.steps.iter().map(|s| (s.rate_per_s, pick(s).max(bottom))).collect();
            line_with_dots(&mut chart, points, color.to_rgba())?;
            legend.add(name, color.to_rgba(), Mark::Line);
        }
        marker(&mut chart, [(x.start, c.timeout_ms), (x.end, c.timeout_ms)], BLACK.to_rgba())?;
        legend.add(format!("timeout {:.0} ms", c.timeout_ms), BLACK.to_rgba(), Mark::Dashed);
        Ok(())
    })
}

fn capacity_errors(c: &CapacityFigures, title: &str) -> Svg {
    let top = c.steps.iter().map(|s| s.over_timeout.max(s.errors) * 100.0).fold(2.0, f64::max) * 1.25;
    chart::svg(chart::SIZE, title, |plot, legend| {
        let x = rate_range(c);
        let mut chart = frame(plot).build_cartesian_2d(x.clone(), 0f64..top)?;
        chart
            .configure_mesh()
            .x_desc("rate asked (events per second)")
            .y_desc("share of deliveries (%)")
            .draw()?;
        let over = c.steps.iter().map(|s| (s.rate_per_s, s.over_timeout * 100.0)).collect();
        line_with_dots(&mut chart, over, P99.to_rgba())?;
        legend.add("slower than the timeout", P99.to_rgba(), Mark::Line);
        let errors = c.steps.iter().map(|s| (s.rate_per_s, s.errors * 100.0)).collect();
        line_with_dots(&mut chart, errors, ERRORS.to_rgba())?;
        legend.add("5xx or no answer", ERRORS.to_rgba(), Mark::Line);
        marker(&mut chart, [(x.start, 1.0), (x.end, 1.0)], BLACK.to_rgba())?;
        legend.add("1 % limit", BLACK.to_rgba(), Mark::Dashed);
        Ok(())
    })
}

fn storm(s: &StormFigures, title: &str) -> Svg {
    let end = s.arrivals_per_100ms.len() as f64 / 10.0;
    let top = s.arrivals_per_100ms.iter().copied().max().unwrap_or(1) as f64 * 1.1;
    let recovered = s.recovered_ms / 1e3;
    chart::svg(chart::SIZE, title, |plot, legend| {
        let mut chart = frame(plot).build_cartesian_2d(0f64..end.max(recovered + 1.0), 0f64..top)?;
        chart
            .configure_mesh()
            .x_desc(format!("seconds since the kill (the provider's clock divided by {})", s.time_scale))
            .y_desc("attempts in that tenth of a second")
            .draw()?;
        chart.draw_series(s.arrivals_per_100ms.iter().enumerate().filter(|&(_, &n)| n > 0).map(
            |(bin, &n)| {
                let x = bin as f64 / 10.0;
                Rectangle::new([(x + 0.01, 0.0), (x + 0.09, n as f64)], P50.filled())
            },
        ))?;
        legend.add("attempts", P50.to_rgba(), Mark::Box);
        marker(&mut chart, [(recovered, 0.0), (recovered, top)], BLACK.to_rgba())?;
        legend.add("healthy again", BLACK.to_rgba(), Mark::Dashed);
        Ok(())
    })
}
