//! report.html: one self-contained page (no network, no CDN) with charts drawn by plotters as
//! inline SVG: the latency percentile spectrum per design for each backend, and duplicate applies
//! and stale accounts per design and backend with the model beside them.

use crate::report::model::Column;
use plotters::prelude::*;

use super::audit_charts::{audit_chart, audit_chart_titles};
use super::chart::{self, COLORS, Mark, Svg, frame, marker};
use super::{BenchBody, Report, Row, RunBody, page};

/// The charts the page promises, by id and title (tests check each is there).
pub fn chart_titles(report: &Report) -> Vec<(String, String)> {
    match &report.body {
        RunBody::Bench(b) => bench_chart_titles(b),
        RunBody::Audit { audit } => {
            audit_chart_titles(audit).into_iter().map(|(id, t)| (id.to_string(), t.to_string())).collect()
        }
    }
}

fn bench_chart_titles(report: &BenchBody) -> Vec<(String, String)> {
    let mut titles: Vec<(String, String)> = report
        .columns()
        .iter()
        .map(|c| (latency_id(c), format!("Latency percentile spectrum by design, {c}")))
        .collect();
    titles.push(("duplicates".into(), "Duplicate applies per design: model and real".into()));
    titles.push(("stale".into(), "Stale accounts per design: model and real".into()));
    if report.experiments.jitter.as_ref().is_some_and(|j| j.real.iter().any(|r| !r.arrivals_per_s.is_empty()))
    {
        titles.push((
            "jitter".into(),
            "Retries arriving at a recovering receiver, per second: backoff without and with full jitter"
                .into(),
        ));
    }
    titles
}

/// The id of a column's latency chart: `latency-postgres`, `latency-postgres-serializable`.
fn latency_id(column: &Column) -> String {
    format!("latency-{}", column.to_string().replace(' ', "-"))
}

/// The x of percentile `p` (0..100) on the spectrum's axis: `1/(1-p)`, drawn on a log scale.
fn spectrum_x(p: f64) -> f64 {
    1.0 / (1.0 - p / 100.0).max(1e-6)
}

/// The label of a spectrum x: the percentile, with as many decimals as its nines need.
fn spectrum_label(x: f64) -> String {
    let decimals = (x.log10().ceil() - 2.0).max(0.0) as usize;
    format!("{:.*}%", decimals, 100.0 * (1.0 - 1.0 / x))
}

/// A row's spectrum as chart points (x, ms); a report from before spectra uses its percentiles.
fn spectrum_points(spectrum: &crate::stats::Spectrum, fallback: &super::LatencyUs) -> Vec<(f64, f64)> {
    let ms = |us: u64| (us as f64 / 1000.0).max(0.01);
    if spectrum.us.is_empty() {
        let l = fallback;
        return [(50.0, l.p50), (90.0, l.p90), (99.0, l.p99), (99.9, l.p999)]
            .into_iter()
            .map(|(p, v)| (spectrum_x(p), ms(v)))
            .collect();
    }
    spectrum.percentiles.iter().zip(&spectrum.us).map(|(&p, &v)| (spectrum_x(p), ms(v))).collect()
}

/// The percentile spectrum of every design in `column`, HdrHistogram's way: latency against
/// `1/(1-p)` on log scales out to 99.999 %, solid from the planned send (coordinated omission
/// corrected), dashed the answered attempts' own time from send to answer.
fn latency_chart(report: &BenchBody, column: Column, title: &str) -> Svg {
    let rows: Vec<&Row> = report.rows.iter().filter(|r| r.column() == column).collect();
    type Curve = Vec<(f64, f64)>;
    let curves: Vec<(&Row, Curve, Curve)> = rows
        .iter()
        .map(|r| {
            let s = &r.latency_spectrum;
            (*r, spectrum_points(&s.planned, &r.latency_us), spectrum_points(&s.actual, &r.latency_actual_us))
        })
        .collect();
    let ys = || curves.iter().flat_map(|(_, a, b)| a.iter().chain(b).map(|p| p.1));
    let top = ys().fold(1.0, f64::max) * 1.5;
    let bottom = ys().fold(f64::INFINITY, f64::min).min(top / 10.0) / 1.5;
    chart::svg((900, 460), title, |plot, legend| {
        let mut chart = frame(plot).build_cartesian_2d((1f64..1e5).log_scale(), (bottom..top).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("percentile (axis: 1/(1-p), log scale)")
            .y_desc("latency (ms, log scale)")
            .x_label_formatter(&|x| spectrum_label(*x))
            .draw()?;
        for (i, (r, planned, actual)) in curves.iter().enumerate() {
            let color = COLORS[i % COLORS.len()].to_rgba();
            chart.draw_series(LineSeries::new(planned.clone(), color.stroke_width(2)))?;
            chart.draw_series(DashedLineSeries::new(actual.clone(), 5, 4, color.stroke_width(2)))?;
            legend.add(r.design.as_str(), color, Mark::Line);
        }
        legend.add("", BLACK.to_rgba(), Mark::Gap);
        legend.add("from the planned send", BLACK.to_rgba(), Mark::Line);
        legend.add("answers: send to answer", BLACK.to_rgba(), Mark::Dashed);
        Ok(())
    })
}

/// Grouped bars: for each design, the model's figure and each column's.
fn bars_chart(report: &BenchBody, title: &str, y_desc: &str, pick: fn(&crate::judge::Figures) -> u64) -> Svg {
    let designs = report.designs();
    let backends = report.columns();
    let mut series: Vec<(String, Vec<u64>)> = Vec::new();
    let model: Vec<u64> = designs
        .iter()
        .map(|d| {
            report
                .rows
                .iter()
                .find(|r| r.design == *d)
                .and_then(|r| r.model.as_ref())
                .map_or(0, |m| pick(&m.figures))
        })
        .collect();
    series.push(("model".to_string(), model));
    for b in &backends {
        let values = designs.iter().map(|d| report.row(*b, *d).map_or(0, |r| pick(&r.figures))).collect();
        series.push((b.to_string(), values));
    }
    let top = series.iter().flat_map(|(_, v)| v.iter().copied()).max().unwrap_or(0).max(5) as f64 * 1.1;
    chart::svg(chart::SIZE, title, |plot, legend| {
        let mut chart = frame(plot).build_cartesian_2d(-0.5f64..(designs.len() as f64 - 0.5), 0f64..top)?;
        let labels: Vec<String> = designs.iter().map(|d| d.to_string()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("design")
            .y_desc(y_desc)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .x_labels(designs.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 0.01 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()?;
        let width = 0.8 / series.len() as f64;
        for (k, (name, values)) in series.iter().enumerate() {
            let color = if k == 0 { RGBColor(150, 150, 150) } else { COLORS[(k - 1) % COLORS.len()] };
            let offset = -0.4 + width * k as f64;
            chart.draw_series(values.iter().enumerate().map(|(i, &v)| {
                let x0 = i as f64 + offset;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v as f64)], color.filled())
            }))?;
            legend.add(name.as_str(), color.to_rgba(), Mark::Box);
        }
        Ok(())
    })
}

/// Arrivals per (scaled) second at the jitter experiment's receiver, one impulse per second with
/// arrivals, per mode, on a log scale; a dashed line marks the recovery.
fn jitter_chart(report: &BenchBody, title: &str) -> Svg {
    let Some(j) = &report.experiments.jitter else { return Ok(String::new()) };
    let end = j.real.iter().map(|r| r.arrivals_per_s.len()).max().unwrap_or(1) as f64;
    let top = j.real.iter().flat_map(|r| r.arrivals_per_s.iter().copied()).max().unwrap_or(1) as f64 * 2.0;
    chart::svg(chart::SIZE, title, |plot, legend| {
        let mut chart = frame(plot).build_cartesian_2d(0f64..end, (0.8f64..top).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(format!("seconds since the failure (time scaled 1/{})", j.time_scale))
            .y_desc("arrivals in that second (log scale)")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        // Jitter first, so the synchronized spikes are drawn over it.
        for (k, r) in j.real.iter().enumerate().rev() {
            let color = COLORS[k % COLORS.len()];
            chart.draw_series(r.arrivals_per_s.iter().enumerate().filter(|&(_, &n)| n > 0).map(
                |(s, &n)| {
                    PathElement::new(vec![(s as f64, 0.8), (s as f64, n as f64)], color.stroke_width(2))
                },
            ))?;
        }
        for (k, r) in j.real.iter().enumerate() {
            legend.add(r.mode.label(), COLORS[k % COLORS.len()].to_rgba(), Mark::Line);
        }
        marker(&mut chart, [(j.recover_s, 0.8), (j.recover_s, top)], BLACK.to_rgba())?;
        legend.add("the receiver recovers", BLACK.to_rgba(), Mark::Dashed);
        Ok(())
    })
}

/// Renders report.html: the charts, then report.md's sections and tables.
pub fn render_html(report: &Report) -> String {
    match &report.body {
        RunBody::Bench(b) => bench_html(report, b),
        RunBody::Audit { audit } => {
            let md = super::audit_markdown(&report.header, audit);
            let without_title = md.split_once('\n').map_or("", |(_, rest)| rest);
            // The coloured grid stands for report.md's, first, as in a bench's page.
            let grid = super::audit_grid::audit_grid_markdown(audit);
            let without_grid = without_title.replacen(&grid, "", 1);
            let mut body = vec![super::audit_grid::audit_grid_html(audit), page::markdown(&without_grid)];
            for (id, title) in audit_chart_titles(audit) {
                match audit_chart(audit, id, title) {
                    Ok(svg) => body.push(page::figure(id, title, &svg)),
                    Err(e) => body.push(page::note(&format!("{title} could not be drawn: {e}"))),
                }
            }
            let title = format!("hookbench audit {}", report.header.run_id);
            page::page(&title, maud::html! { @for part in &body { (part) } })
        }
    }
}

fn bench_html(report: &Report, b: &BenchBody) -> String {
    // The answer first: the verdict grid, then the charts, then the tables.
    let mut body = vec![super::verdict_grid::verdict_grid_html(b)];
    let drawn: Result<(), Box<dyn std::error::Error>> = (|| {
        for (id, title) in bench_chart_titles(b) {
            let column = b.columns().into_iter().find(|c| latency_id(c) == id);
            let svg = match column {
                Some(column) => latency_chart(b, column, &title)?,
                None if id == "jitter" => jitter_chart(b, &title)?,
                None if id == "duplicates" => {
                    bars_chart(b, &title, "extra applies (count)", |f| f.extra_applies)?
                }
                None => {
                    bars_chart(b, &title, "accounts not on their latest plan (count)", |f| f.stale_accounts)?
                }
            };
            body.push(page::figure(&id, &title, &svg));
        }
        Ok(())
    })();
    if let Err(e) = drawn {
        body.push(page::note(&format!("charts could not be drawn: {e}")));
    }
    // The tables and sections: report.md without its own title (the page has one) and without
    // its verdict table (the coloured grid above stands for it).
    let md = super::markdown::render_markdown(report);
    let without_title = md.split_once('\n').map_or("", |(_, rest)| rest);
    let grid = super::verdict_grid::verdict_grid_markdown(b);
    let without_title = without_title.replacen(&grid, "", 1);
    body.push(page::markdown(&without_title));
    let title = format!("hookbench run {}", report.header.run_id);
    page::page(&title, maud::html! { @for part in &body { (part) } })
}
