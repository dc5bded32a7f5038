//! What every chart of the reports shares: the canvas (a title, the plot, and a column beside it
//! for the legend, so a legend never covers data), the palette, and the marks series are drawn
//! with.

use plotters::coord::Shift;
use plotters::prelude::*;

/// A drawn chart: its SVG, or why it could not be drawn.
pub(super) type Svg = Result<String, Box<dyn std::error::Error>>;

/// The palette of series (matplotlib's first seven).
pub(super) const COLORS: [RGBColor; 7] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// A chart's size, pixels, and the legend column's width within it.
pub(super) const SIZE: (u32, u32) = (900, 420);
const LEGEND_WIDTH: u32 = 200;

/// Draws a chart into an SVG string: `draw` gets the plot area (titled) and fills `legend`, which
/// is then drawn in the column to the plot's right.
pub(super) fn svg(
    size: (u32, u32),
    title: &str,
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>, &mut Legend) -> Result<(), Box<dyn std::error::Error>>,
) -> Svg {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE)?;
        let titled = root.titled(title, ("sans-serif", 20))?;
        let (plot, side) = titled.split_horizontally(size.0 - LEGEND_WIDTH);
        let mut legend = Legend::default();
        draw(&plot, &mut legend)?;
        legend.draw(&side)?;
        root.present()?;
    }
    Ok(out)
}

/// A chart frame with hookbench's look: margins and room for axis labels.
pub(super) fn frame<'a, DB: DrawingBackend>(area: &'a DrawingArea<DB, Shift>) -> ChartBuilder<'a, 'a, DB> {
    let mut builder = ChartBuilder::on(area);
    builder.margin(12).x_label_area_size(44).y_label_area_size(64);
    builder
}

/// How a legend entry shows its series.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mark {
    /// A solid line.
    Line,
    /// A dashed line.
    Dashed,
    /// A filled box (bars).
    Box,
    /// Nothing: a blank line between groups of entries.
    Gap,
}

/// The entries of a chart's legend, in the order given.
#[derive(Debug, Default)]
pub(super) struct Legend(Vec<(String, RGBAColor, Mark)>);

impl Legend {
    /// Adds an entry.
    pub(super) fn add(&mut self, label: impl Into<String>, color: RGBAColor, mark: Mark) {
        self.0.push((label.into(), color, mark));
    }

    /// Draws the entries down `area`, a mark and its label a line.
    fn draw<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), Box<dyn std::error::Error>>
    where
        DB::ErrorType: 'static,
    {
        for (i, (label, color, mark)) in self.0.iter().enumerate() {
            let y = 30 + 20 * i as i32;
            let style = color.stroke_width(2);
            match mark {
                Mark::Line => area.draw(&PathElement::new(vec![(4, y), (26, y)], style))?,
                Mark::Dashed => {
                    for x in [4, 13, 22] {
                        area.draw(&PathElement::new(vec![(x, y), (x + 5, y)], style))?;
                    }
                }
                Mark::Box => area.draw(&Rectangle::new([(8, y - 5), (22, y + 5)], color.filled()))?,
                Mark::Gap => {}
            }
            area.draw(&Text::new(label.as_str(), (32, y - 7), ("sans-serif", 12).into_font()))?;
        }
        Ok(())
    }
}

/// A line through `points` with a dot on each.
pub(super) fn line_with_dots<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    points: Vec<(f64, f64)>,
    color: RGBAColor,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    CT: CoordTranslate<From = (f64, f64)>,
{
    chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
    chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    Ok(())
}

/// A dashed line from one point to another.
pub(super) fn marker<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    ends: [(f64, f64); 2],
    color: RGBAColor,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    CT: CoordTranslate<From = (f64, f64)>,
{
    chart.draw_series(DashedLineSeries::new(ends, 6, 4, color.stroke_width(1)))?;
    Ok(())
}
