//! A report's charts as SVG text, drawn with `plotters`' SVG backend (no bitmap backend, no
//! font files: the SVG backend writes text as `<text>` elements and lays it out with
//! plotters' built-in size estimate, so charts render the same on a headless machine).
//!
//! Five kinds: [`heatmap_chart`] (the cross-play matrix, a cell per pairing shaded by its
//! figure), [`interval_chart`] (one row per name: the value with its interval bar — ρ,
//! deal rate, first bid per group, and ratings), [`histogram_chart`] (the distribution of
//! clipped ρ), [`stacked_chart`] (how episodes ended, per group, as stacked shares) and
//! [`line_chart`] (a figure across training steps, a line per run with its interval as a band).

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::score::{Bin, Estimate};

/// Why a chart could not be drawn (a plotters error, as text).
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart `{title}`: {message}")]
pub struct ChartError {
    pub(crate) title: String,
    pub(crate) message: String,
}

const WIDTH: u32 = 820;
const ROW: u32 = 26;
const FONT: &str = "sans-serif";
const BAR: RGBColor = RGBColor(43, 108, 176);

/// The share of a line chart's x range added on the right for its legend.
const LINE_LEGEND_ROOM: f64 = 0.45;

/// The x range of a stacked chart: shares end at 100, the legend takes the rest.
const LEGEND_ROOM: f64 = 140.0;

/// Colours of a chart's series (a stacked chart's endings, a line chart's runs), in order.
const SERIES: [RGBColor; 6] = [
    RGBColor(56, 161, 105),
    RGBColor(221, 107, 32),
    RGBColor(128, 90, 213),
    RGBColor(160, 174, 192),
    RGBColor(229, 62, 62),
    RGBColor(74, 85, 104),
];

/// A plotters result with its failure named by the chart's title.
trait Titled<T> {
    fn titled(self, title: &str) -> Result<T, ChartError>;
}

impl<T, E: std::fmt::Display> Titled<T> for Result<T, E> {
    fn titled(self, title: &str) -> Result<T, ChartError> {
        self.map_err(|e| ChartError {
            title: title.to_string(),
            message: e.to_string(),
        })
    }
}

/// Room for the longest name at the left, in pixels (about 7 px a character at 13 px).
fn label_room(names: impl Iterator<Item = usize>) -> u32 {
    (names.max().unwrap_or(4) as u32 * 7 + 16).clamp(60, 360)
}

/// The y coordinate of row `i` of `n`: the first row on top.
fn row_y(i: usize, n: usize) -> f64 {
    (n - 1 - i) as f64
}

/// The name of the row at y (the axis asks at whole numbers only).
fn row_name(names: &[String], y: f64) -> String {
    let i = y.round();
    if (y - i).abs() > 1e-6 || i < 0.0 || i as usize >= names.len() {
        return String::new();
    }
    names[names.len() - 1 - i as usize].clone()
}

/// The legend of a chart's labelled series, at `position`.
fn legend<'a, 'b: 'a>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    position: SeriesLabelPosition,
    title: &str,
) -> Result<(), ChartError> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .draw()
        .titled(title)
}

/// One row per (name, estimate): a dot at the value and a bar from low to high. `x_desc` names
/// the axis. The x range covers every bound, with `floor` and `ceiling` as limits the axis
/// always includes (e.g. 0 and 1 for ρ).
pub(crate) fn interval_chart(
    title: &str,
    x_desc: &str,
    rows: &[(String, Estimate)],
    floor: f64,
    ceiling: f64,
) -> Result<String, ChartError> {
    let names: Vec<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    let n = rows.len().max(1);
    let low = rows.iter().map(|(_, e)| e.low).fold(floor, f64::min);
    let high = rows.iter().map(|(_, e)| e.high).fold(ceiling, f64::max);
    let pad = (high - low).max(1e-9) * 0.05;
    let height = 90 + ROW * n as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).titled(title)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(label_room(names.iter().map(|n| n.chars().count())))
            .build_cartesian_2d((low - pad)..(high + pad), -0.5..(n as f64 - 0.5))
            .titled(title)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .y_labels(n)
            .y_label_formatter(&|y| row_name(&names, *y))
            .x_desc(x_desc)
            .label_style((FONT, 13))
            .draw()
            .titled(title)?;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, (_, e))| {
                ErrorBar::new_horizontal(
                    row_y(i, n),
                    e.low,
                    e.value,
                    e.high,
                    BAR.stroke_width(2),
                    10,
                )
            }))
            .titled(title)?;
        chart
            .draw_series(
                rows.iter()
                    .enumerate()
                    .map(|(i, (_, e))| Circle::new((e.value, row_y(i, n)), 4, BAR.filled())),
            )
            .titled(title)?;
        root.present().titled(title)?;
    }
    Ok(svg)
}

/// One cell of a [`heatmap_chart`]: its row and column, the figure that colours it, and the
/// lines of text written in it.
#[derive(Debug, Clone)]
pub(crate) struct HeatCell {
    pub row: usize,
    pub column: usize,
    /// From 0 (white) to 1 (the darkest blue); `None` leaves the cell grey.
    pub shade: Option<f64>,
    pub lines: Vec<String>,
}

/// A matrix of cells: a row per name in `rows`, a column per name in `columns`, each cell
/// shaded by its figure with its text in it (the cross-play matrix).
pub(crate) fn heatmap_chart(
    title: &str,
    rows: &[String],
    columns: &[String],
    cells: &[HeatCell],
) -> Result<String, ChartError> {
    const CELL_HEIGHT: u32 = 64;
    const TOP: u32 = 70;
    let left = label_room(rows.iter().map(|n| n.chars().count()));
    let width = WIDTH;
    let cell_width = (width - left - 10) / columns.len().max(1) as u32;
    let height = TOP + CELL_HEIGHT * rows.len().max(1) as u32 + 10;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).titled(title)?;
        let text = |size: u32| (FONT, size).into_text_style(&root);
        root.draw_text(title, &text(17), (10, 8)).titled(title)?;
        // A name cut to the pixels it has (about 7 a character), ending in `…` when cut.
        let fit = |name: &str, pixels: u32| -> String {
            let room = (pixels / 7).max(4) as usize;
            if name.chars().count() > room {
                format!("{}…", name.chars().take(room - 1).collect::<String>())
            } else {
                name.to_string()
            }
        };
        for (j, name) in columns.iter().enumerate() {
            let x = (left + cell_width * j as u32 + 6) as i32;
            root.draw_text(&fit(name, cell_width), &text(13), (x, (TOP - 24) as i32))
                .titled(title)?;
        }
        for (i, name) in rows.iter().enumerate() {
            let y = (TOP + CELL_HEIGHT * i as u32 + CELL_HEIGHT / 2 - 7) as i32;
            root.draw_text(&fit(name, left - 12), &text(13), (6, y))
                .titled(title)?;
        }
        for c in cells {
            let x0 = (left + cell_width * c.column as u32) as i32;
            let y0 = (TOP + CELL_HEIGHT * c.row as u32) as i32;
            let (x1, y1) = (x0 + cell_width as i32 - 2, y0 + CELL_HEIGHT as i32 - 2);
            let fill = match c.shade {
                Some(s) => {
                    let s = s.clamp(0.0, 1.0);
                    let mix = |light: u8, dark: u8| {
                        (f64::from(light) + (f64::from(dark) - f64::from(light)) * s).round() as u8
                    };
                    RGBColor(mix(247, 43), mix(251, 108), mix(255, 176))
                }
                None => RGBColor(230, 230, 230),
            };
            root.draw(&Rectangle::new([(x0, y0), (x1, y1)], fill.filled()))
                .titled(title)?;
            let ink = if c.shade.is_some_and(|s| s > 0.55) {
                WHITE
            } else {
                BLACK
            };
            // A narrow cell (many opponents) keeps what fits: each line cut to its width.
            for (k, line) in c.lines.iter().map(|l| fit(l, cell_width - 8)).enumerate() {
                let style = (FONT, if k == 0 { 14 } else { 12 })
                    .into_text_style(&root)
                    .color(&ink);
                root.draw_text(&line, &style, (x0 + 6, y0 + 6 + 18 * k as i32))
                    .titled(title)?;
            }
        }
        root.present().titled(title)?;
    }
    Ok(svg)
}

/// A histogram: one bar per bin, its height the count.
pub(crate) fn histogram_chart(
    title: &str,
    x_desc: &str,
    bins: &[Bin],
) -> Result<String, ChartError> {
    let top = bins.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64 * 1.05;
    let (low, high) = (
        bins.first().map_or(-1.0, |b| b.low),
        bins.last().map_or(1.0, |b| b.high),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 360)).into_drawing_area();
        root.fill(&WHITE).titled(title)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(low..high, 0.0..top)
            .titled(title)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE)
            .y_label_formatter(&|y| {
                if y.fract() == 0.0 {
                    format!("{y:.0}")
                } else {
                    String::new()
                }
            })
            .x_desc(x_desc)
            .y_desc("episodes")
            .label_style((FONT, 13))
            .draw()
            .titled(title)?;
        chart
            .draw_series(
                bins.iter().filter(|b| b.count > 0).map(|b| {
                    Rectangle::new([(b.low, 0.0), (b.high, b.count as f64)], BAR.filled())
                }),
            )
            .titled(title)?;
        root.present().titled(title)?;
    }
    Ok(svg)
}

/// One row per group, its shares (fractions summing to 1) stacked left to right in the order
/// of `series`, with a legend.
pub(crate) fn stacked_chart(
    title: &str,
    x_desc: &str,
    series: &[&str],
    rows: &[(String, Vec<f64>)],
) -> Result<String, ChartError> {
    let names: Vec<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    let n = rows.len().max(1);
    let height = 90 + (ROW * n as u32).max(150);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).titled(title)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(label_room(names.iter().map(|n| n.chars().count())))
            // Bars end at 100; the legend sits in the room to their right.
            .build_cartesian_2d(0.0..LEGEND_ROOM, -0.5..(n as f64 - 0.5))
            .titled(title)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .y_labels(n)
            .y_label_formatter(&|y| row_name(&names, *y))
            .x_label_formatter(&|x| {
                if *x <= 100.0 {
                    format!("{x:.0}")
                } else {
                    String::new()
                }
            })
            .x_desc(x_desc)
            .label_style((FONT, 13))
            .draw()
            .titled(title)?;
        for (k, name) in series.iter().enumerate() {
            let color = SERIES[k % SERIES.len()];
            let bars = rows.iter().enumerate().map(|(i, (_, shares))| {
                let start: f64 = shares[..k].iter().sum::<f64>() * 100.0;
                let end = start + shares[k] * 100.0;
                let y = row_y(i, n);
                Rectangle::new([(start, y - 0.35), (end, y + 0.35)], color.filled())
            });
            chart
                .draw_series(bars)
                .titled(title)?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight, title)?;
        root.present().titled(title)?;
    }
    Ok(svg)
}

/// One line of a [`line_chart`]: its name and its points (x, the estimate there), x rising.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub name: String,
    pub points: Vec<(u64, Estimate)>,
}

/// A line per series through its values, over a band from each point's low to its high, a dot
/// at each point; a legend names the series. The y range covers every bound, with `range`'s
/// ends as limits the axis always includes.
pub(crate) fn line_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    range: (f64, f64),
) -> Result<String, ChartError> {
    let points = || series.iter().flat_map(|s| s.points.iter());
    let x_max = points().map(|(x, _)| *x).max().unwrap_or(0).max(1) as f64;
    let x_min = points().map(|(x, _)| *x).min().unwrap_or(0) as f64;
    let low = points().map(|(_, e)| e.low).fold(range.0, f64::min);
    let high = points().map(|(_, e)| e.high).fold(range.1, f64::max);
    let pad = (high - low).max(1e-9) * 0.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 420)).into_drawing_area();
        root.fill(&WHITE).titled(title)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 17))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            // Room right of the last point for the legend, so it covers no line.
            .build_cartesian_2d(
                x_min - 0.5..x_max + 0.5 + (x_max - x_min).max(1.0) * LINE_LEGEND_ROOM,
                (low - pad)..(high + pad),
            )
            .titled(title)?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|x| {
                if (x - x.round()).abs() < 1e-6 && *x <= x_max + 1e-6 {
                    format!("{x:.0}")
                } else {
                    String::new()
                }
            })
            .label_style((FONT, 13))
            .draw()
            .titled(title)?;
        for (k, s) in series.iter().enumerate() {
            let color = SERIES[k % SERIES.len()];
            let band: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|(x, e)| (*x as f64, e.high))
                .chain(s.points.iter().rev().map(|(x, e)| (*x as f64, e.low)))
                .collect();
            chart
                .draw_series(std::iter::once(Polygon::new(
                    band,
                    color.mix(0.18).filled(),
                )))
                .titled(title)?;
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|(x, e)| (*x as f64, e.value)),
                    color.stroke_width(2),
                ))
                .titled(title)?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|(x, e)| Circle::new((*x as f64, e.value), 3, color.filled())),
                )
                .titled(title)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight, title)?;
        root.present().titled(title)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(value: f64, low: f64, high: f64) -> Estimate {
        Estimate {
            value,
            low,
            high,
            n: 10,
        }
    }

    #[test]
    fn an_interval_chart_is_svg_with_a_row_per_name() {
        let rows = vec![
            ("alice".to_string(), e(1510.0, 1480.0, 1540.0)),
            ("bob <b>".to_string(), e(1490.0, 1450.0, 1530.0)),
        ];
        let svg = interval_chart("Ratings", "rating", &rows, 1500.0, 1500.0).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.contains(">\nalice\n</text>"), "names are text elements");
        assert!(svg.contains("bob &lt;b&gt;"), "names are escaped");
        assert!(svg.contains("Ratings"));
    }

    #[test]
    fn histogram_and_stacked_charts_draw() {
        let bins = vec![
            Bin {
                low: -1.0,
                high: 0.0,
                count: 1,
            },
            Bin {
                low: 0.0,
                high: 1.0,
                count: 3,
            },
        ];
        let svg = histogram_chart("ρ", "ρ (clipped)", &bins).unwrap();
        assert!(svg.contains("<rect"));
        let svg = stacked_chart(
            "Outcomes",
            "share of episodes (%)",
            &["deal", "walk-away"],
            &[("casino".to_string(), vec![0.75, 0.25])],
        )
        .unwrap();
        assert!(svg.contains(">\ndeal\n</text>") && svg.contains(">\ncasino\n</text>"));
    }

    #[test]
    fn a_line_chart_draws_a_line_band_and_legend_entry_per_series() {
        let series = [
            Series {
                name: "lr-3e-5".into(),
                points: vec![(0, e(-0.9, -1.0, -0.8)), (1, e(-0.5, -0.7, -0.3))],
            },
            Series {
                name: "lr-0".into(),
                points: vec![(0, e(-0.9, -1.0, -0.8)), (1, e(-0.9, -1.0, -0.8))],
            },
        ];
        let svg = line_chart("Reward", "step", "mean reward", &series, (-1.0, 1.0)).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains(">\nlr-3e-5\n</text>") && svg.contains(">\nlr-0\n</text>"));
        assert_eq!(svg.matches("<polygon").count(), 2, "a band per series");
        assert!(svg.matches("<polyline").count() >= 2, "a line per series");
        // No points at all still draws axes, not an error.
        line_chart("Empty", "step", "y", &[], (0.0, 1.0)).unwrap();
    }

    #[test]
    fn rows_are_named_only_at_whole_numbers() {
        let names = vec!["a".to_string(), "b".to_string()];
        assert_eq!(row_name(&names, 1.0), "a");
        assert_eq!(row_name(&names, 0.0), "b");
        assert_eq!(row_name(&names, 0.5), "");
        assert_eq!(row_name(&names, 2.0), "");
    }
}
