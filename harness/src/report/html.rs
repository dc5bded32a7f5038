//! report.html: one self-contained page (no network, no CDN) with charts drawn by plotters as
//! inline SVG: latency percentile curves per design for each backend, and duplicate applies and
//! stale accounts per design and backend with the model beside them.

use plotters::prelude::*;
use receivers::store::Backend;

use super::audit_charts::{audit_chart, audit_chart_titles};
use super::markdown::{backends, designs};
use super::{Report, Row, page};

/// The charts the page promises, by id and title (tests check each is there).
pub fn chart_titles(report: &Report) -> Vec<(String, String)> {
    let mut titles: Vec<(String, String)> = backends(report)
        .into_iter()
        .map(|b| (format!("latency-{b}"), format!("Latency percentiles by design, {b}")))
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

const COLORS: [RGBColor; 7] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

type Drawn = Result<(), Box<dyn std::error::Error>>;

/// A chart frame with hookbench's look: the title, margins and room for axis labels.
pub(super) fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &'b str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder.caption(title, ("sans-serif", 20)).margin(12).x_label_area_size(44).y_label_area_size(64);
    builder
}

fn latency_chart(
    report: &Report,
    backend: Backend,
    title: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let rows: Vec<&Row> = report.rows.iter().filter(|r| r.backend == backend).collect();
    let ms = |us: u64| (us as f64 / 1000.0).max(0.01);
    let top = rows.iter().map(|r| ms(r.latency_us.max)).fold(1.0, f64::max) * 1.5;
    let bottom =
        rows.iter().map(|r| ms(r.latency_us.p50)).fold(f64::INFINITY, f64::min).min(top / 10.0) / 2.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = frame(&root, title).build_cartesian_2d(-0.2f64..4.2f64, (bottom..top).log_scale())?;
        let names = ["p50", "p90", "p99", "p99.9", "max"];
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc("latency from planned send (ms, log scale)")
            .x_labels(5)
            .x_label_formatter(&|x| names.get(x.round() as usize).copied().unwrap_or("").to_string())
            .draw()?;
        for (i, r) in rows.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let l = &r.latency_us;
            let points: Vec<(f64, f64)> = [l.p50, l.p90, l.p99, l.p999, l.max]
                .iter()
                .enumerate()
                .map(|(x, &v)| (x as f64, ms(v)))
                .collect();
            line_with_dots(&mut chart, points, color.to_rgba(), r.design.as_str())?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, 12)?;
        root.present()?;
    }
    Ok(svg)
}

/// The legend of a chart with hookbench's look, at `position`, in `font_size` points.
pub(super) fn legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
    font_size: u32,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB: DrawingBackend + 'a,
    DB::ErrorType: 'static,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", font_size))
        .draw()?;
    Ok(())
}

/// One labelled series: a line through `points` with a dot on each, and its legend entry.
pub(super) fn line_with_dots<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    points: Vec<(f64, f64)>,
    color: RGBAColor,
    label: &str,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    CT: CoordTranslate<From = (f64, f64)>,
{
    chart
        .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
    chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    Ok(())
}

/// Grouped bars: for each design, the model's figure and each backend's.
fn bars_chart(
    report: &Report,
    title: &str,
    y_desc: &str,
    pick: fn(&crate::checker::Figures) -> u64,
) -> Result<String, Box<dyn std::error::Error>> {
    let designs = designs(report);
    let backends = backends(report);
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
        let values = designs
            .iter()
            .map(|d| {
                report.rows.iter().find(|r| r.design == *d && r.backend == *b).map_or(0, |r| pick(&r.figures))
            })
            .collect();
        series.push((b.to_string(), values));
    }
    let top = series.iter().flat_map(|(_, v)| v.iter().copied()).max().unwrap_or(0).max(5) as f64 * 1.2;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart =
            frame(&root, title).build_cartesian_2d(-0.5f64..(designs.len() as f64 - 0.5), 0f64..top)?;
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
            chart
                .draw_series(values.iter().enumerate().map(|(i, &v)| {
                    let x0 = i as f64 + offset;
                    Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v as f64)], color.filled())
                }))?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight, 12)?;
        root.present()?;
    }
    Ok(svg)
}

/// Arrivals per (scaled) second at the jitter experiment's receiver, one impulse per second with
/// arrivals, per mode, on a log scale; a dashed line marks the recovery.
fn jitter_chart(report: &Report, title: &str) -> Result<String, Box<dyn std::error::Error>> {
    let Some(j) = &report.experiments.jitter else { return Ok(String::new()) };
    let end = j.real.iter().map(|r| r.arrivals_per_s.len()).max().unwrap_or(1) as f64;
    let top = j.real.iter().flat_map(|r| r.arrivals_per_s.iter().copied()).max().unwrap_or(1) as f64 * 2.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = frame(&root, title).build_cartesian_2d(0f64..end, (0.8f64..top).log_scale())?;
        chart
            .configure_mesh()
            .x_desc(format!("seconds since the failure (time scaled 1/{})", j.time_scale))
            .y_desc("arrivals in that second (log scale)")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        // Jitter first, so the synchronized spikes are drawn over it.
        for (k, r) in j.real.iter().enumerate().rev() {
            let color = COLORS[k % COLORS.len()];
            chart
                .draw_series(r.arrivals_per_s.iter().enumerate().filter(|&(_, &n)| n > 0).map(|(s, &n)| {
                    PathElement::new(vec![(s as f64, 0.8), (s as f64, n as f64)], color.stroke_width(2))
                }))?
                .label(r.mode.label())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        let recover = j.recover_s;
        chart.draw_series(DashedLineSeries::new(
            vec![(recover, 0.8), (recover, top)],
            6,
            4,
            BLACK.stroke_width(1),
        ))?;
        legend(&mut chart, SeriesLabelPosition::UpperRight, 12)?;
        root.present()?;
    }
    Ok(svg)
}

/// Renders report.html: the charts, then report.md's sections and tables.
pub fn render_html(report: &Report) -> String {
    if let Some(a) = &report.audit {
        let md = super::audit_markdown(report);
        let without_title = md.split_once('\n').map_or("", |(_, rest)| rest);
        let mut body = vec![page::markdown(without_title)];
        for (id, title) in audit_chart_titles(a) {
            match audit_chart(a, id, title) {
                Ok(svg) => body.push(page::figure(id, title, &svg)),
                Err(e) => body.push(page::note(&format!("{title} could not be drawn: {e}"))),
            }
        }
        let title = format!("hookbench audit {}", report.run_id);
        return page::page(&title, maud::html! { @for part in &body { (part) } });
    }
    // The answer first: the verdict grid, then the charts, then the tables.
    let mut body = vec![super::verdict_grid::verdict_grid_html(report)];
    let drawn: Drawn = (|| {
        for (id, title) in chart_titles(report) {
            let svg = match id.strip_prefix("latency-") {
                Some(b) => {
                    let backend = b.parse::<Backend>().map_err(std::io::Error::other)?;
                    latency_chart(report, backend, &title)?
                }
                None if id == "jitter" => jitter_chart(report, &title)?,
                None if id == "duplicates" => {
                    bars_chart(report, &title, "extra applies (count)", |f| f.extra_applies)?
                }
                None => bars_chart(report, &title, "accounts not on their latest plan (count)", |f| {
                    f.stale_accounts
                })?,
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
    let grid = super::verdict_grid::verdict_grid_markdown(report);
    let without_title = without_title.replacen(&grid, "", 1);
    let without_title = without_title.as_str();
    body.push(page::markdown(without_title));
    let title = format!("hookbench run {}", report.run_id);
    page::page(&title, maud::html! { @for part in &body { (part) } })
}
