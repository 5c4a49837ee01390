//! SVG plots beside the report, drawn with plotters: medians and differences against the
//! sweep, and each long cell's samples over time with the SM clock they ran under.

mod axes;
mod legend;
mod stacked;
mod text;

use axes::Axes;
pub use axes::XScale;
use legend::legend_for;
use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;
pub use stacked::stacked;

/// A named line of (x, y) points, with a band about it where given: (x, low, high), drawn
/// as a shade of the line's colour (a median's interquartile range, a ratio's interval).
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub band: Vec<(f64, f64, f64)>,
}

impl Line {
    /// A line without a band.
    pub fn plain(name: String, points: Vec<(f64, f64)>) -> Line {
        Line {
            name,
            points,
            band: Vec::new(),
        }
    }
}

const SIZE: (u32, u32) = (900, 480);

/// The legend box every plot draws (a macro: plain and dual-axis charts differ in type).
macro_rules! draw_legend {
    ($chart:expr, $position:expr) => {
        $chart
            .configure_series_labels()
            .position($position)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?
    };
}

fn bounds(lines: &[Line]) -> Option<((f64, f64), (f64, f64))> {
    let bands = |l: &Line| {
        (l.band.iter())
            .flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)])
            .collect::<Vec<_>>()
    };
    let pts: Vec<(f64, f64)> = (lines.iter())
        .flat_map(|l| l.points.iter().copied().chain(bands(l)))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let pts = pts.iter();
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for &(x, y) in pts {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    (x0 <= x1).then_some(((x0, x1.max(x0 + 1.0)), (y0, y1)))
}

/// Why plotters drew no plot, in its words.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw a plot: {0}")]
pub struct PlotError(String);

/// The message of the report's builders, which gather what went wrong as text.
impl From<PlotError> for String {
    fn from(e: PlotError) -> String {
        e.to_string()
    }
}

fn err(e: impl std::fmt::Display) -> PlotError {
    PlotError(e.to_string())
}

/// The outline of a line's band: its upper edge out, its lower back; None for a band of
/// fewer than two points.
fn band_edge(l: &Line) -> Option<Vec<(f64, f64)>> {
    let upper = l.band.iter().map(|&(x, _, hi)| (x, hi));
    let lower = l.band.iter().rev().map(|&(x, lo, _)| (x, lo));
    (l.band.len() >= 2).then(|| upper.chain(lower).collect())
}

/// Lines against the sweep; a log y axis when the values span more than a decade (ticked at
/// 1, 2 and 5 of each), the x axis as `x_scale` asks; a linear axis's labels to the decimal
/// its ticks differ in. No plot where every point lies at one x.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
    x_scale: XScale,
) -> Result<String, PlotError> {
    let Some(((x0, x1), (y0, y1))) = bounds(lines) else {
        return Ok(String::new());
    };
    if at_one_x(lines) {
        return Ok(String::new());
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70);
        let palette = |i: usize| Palette99::pick(i).to_rgba();
        let xs = xs_of(lines);
        let axes = Axes::of(&xs, x_scale, ((x0, x1), (y0, y1)));
        macro_rules! draw {
            ($chart:expr, $legend:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
                    .x_label_formatter(&|x| axes.x_label(*x))
                    .y_label_formatter(&|y| axes.y_label(*y))
                    .draw()
                    .map_err(err)?;
                for (i, l) in lines.iter().enumerate() {
                    let color = palette(i);
                    // The band first, under the lines.
                    let shade = color.mix(0.18).filled();
                    let band = band_edge(l).map(|edge| Polygon::new(edge, shade));
                    chart.draw_series(band).map_err(err)?;
                    chart
                        .draw_series(LineSeries::new(
                            l.points.iter().copied(),
                            color.stroke_width(2),
                        ))
                        .map_err(err)?
                        .label(l.name.clone())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                        });
                    chart
                        .draw_series(l.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(err)?;
                }
                draw_legend!(chart, $legend);
            }};
        }
        let points = lines.iter().flat_map(|l| l.points.iter().copied());
        let (x, y) = (axes.x.clone(), axes.y.clone());
        let legend = legend_for((points, lines.len()), (&x, axes.log_x), (&y, axes.log_y));
        let (x_keys, y_keys) = (axes.x_ticks.clone(), axes.y_ticks.clone());
        match (axes.log_x, axes.log_y) {
            (false, true) => draw!(
                builder
                    .build_cartesian_2d(x, y.log_scale().with_key_points(y_keys))
                    .map_err(err)?,
                legend
            ),
            (false, false) => draw!(builder.build_cartesian_2d(x, y).map_err(err)?, legend),
            (true, true) => draw!(
                builder
                    .build_cartesian_2d(
                        x.log_scale().with_key_points(x_keys),
                        y.log_scale().with_key_points(y_keys)
                    )
                    .map_err(err)?,
                legend
            ),
            (true, false) => draw!(
                builder
                    .build_cartesian_2d(x.log_scale().with_key_points(x_keys), y)
                    .map_err(err)?,
                legend
            ),
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Whether every point of `lines` lies at one x: nothing to draw against the sweep (a kernel
/// measured at one size had its variants' dots stacked at the left edge of an axis from 768
/// to 769); its table shows the numbers.
fn at_one_x(lines: &[Line]) -> bool {
    let mut xs = (lines.iter())
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite());
    let first = xs.next();
    xs.all(|x| Some(x) == first)
}

/// The lines' x values, sorted, each once.
fn xs_of(lines: &[Line]) -> Vec<f64> {
    let mut xs: Vec<f64> = (lines.iter())
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite())
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs
}

/// A cell's samples over time (µs against s) with the SM clock (MHz) on the right axis.
pub fn series(
    title: &str,
    samples: &[(f64, f64)],
    clock: &[(f64, f64)],
) -> Result<String, PlotError> {
    let all = [Line::plain(String::new(), samples.to_vec())];
    let Some(((x0, x1), (y0, y1))) = bounds(&all) else {
        return Ok(String::new());
    };
    let x1 = clock.iter().map(|c| c.0).fold(x1, f64::max);
    let (c0, c1) = clock
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), c| {
            (lo.min(c.1), hi.max(c.1))
        });
    let (c0, c1) = if c0 <= c1 {
        (c0 - 50.0, c1 + 50.0)
    } else {
        (0.0, 1.0)
    };
    let pad = ((y1 - y0) * 0.05).max(y1 * 0.001).max(1e-9);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .right_y_label_area_size(60)
            .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
            .map_err(err)?
            .set_secondary_coord(x0..x1, c0..c1);
        chart
            .configure_mesh()
            .x_desc("time since the cell started (s)")
            .y_desc("sample (µs)")
            .draw()
            .map_err(err)?;
        chart
            .configure_secondary_axes()
            .y_desc("SM clock (MHz)")
            .draw()
            .map_err(err)?;
        let sample_color = Palette99::pick(0).to_rgba();
        let slowest_color = Palette99::pick(2).to_rgba();
        let clock_color = Palette99::pick(1).to_rgba();
        let (every, medians, slowest) = thinned(samples);
        let (label, slow_label) = match every {
            1 => ("sample".to_string(), None),
            k => (
                format!("median of each {k} samples"),
                Some(format!("slowest of each {k}")),
            ),
        };
        if let Some(slow_label) = slow_label {
            chart
                .draw_series(
                    slowest
                        .iter()
                        .map(|&p| Circle::new(p, 1, slowest_color.filled())),
                )
                .map_err(err)?
                .label(slow_label)
                .legend(move |(x, y)| Circle::new((x + 9, y), 3, slowest_color.filled()));
        }
        chart
            .draw_series(
                medians
                    .iter()
                    .map(|&p| Circle::new(p, 1, sample_color.filled())),
            )
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 9, y), 3, sample_color.filled()));
        chart
            .draw_secondary_series(LineSeries::new(
                clock.iter().copied(),
                clock_color.stroke_width(2),
            ))
            .map_err(err)?
            .label("SM clock")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], clock_color.stroke_width(2))
            });
        draw_legend!(chart, SeriesLabelPosition::MiddleRight);
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Points a series plot draws at most of each kind: a point per sample of 27,000 made an
/// SVG of 900 kB that no reader could tell apart.
const SERIES_POINTS: usize = 1000;

/// Of how many samples a point is, with the points of their medians and of their slowest.
type Thinned = (usize, Vec<(f64, f64)>, Vec<(f64, f64)>);

/// A cell's samples as the series plot draws them: every one, or for a long cell each run
/// of k in turn as its median and its slowest (at the run's middle time), so a slow sample
/// still shows; with k.
fn thinned(samples: &[(f64, f64)]) -> Thinned {
    let every = samples.len().div_ceil(SERIES_POINTS).max(1);
    if every == 1 {
        return (1, samples.to_vec(), Vec::new());
    }
    let (mut medians, mut slowest) = (Vec::new(), Vec::new());
    for run in samples.chunks(every) {
        let at = run[run.len() / 2].0;
        let ys: Vec<f64> = run.iter().map(|p| p.1).collect();
        let top = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if let Some(m) = crate::statistics::median(ys) {
            medians.push((at, m));
            slowest.push((at, top));
        }
    }
    (every, medians, slowest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_cells_series_is_drawn_as_medians_and_slowest_of_runs() {
        let short: Vec<(f64, f64)> = (0..10).map(|i| (f64::from(i), 1.0)).collect();
        assert_eq!(thinned(&short).0, 1);
        let long: Vec<(f64, f64)> = (0..27_000)
            .map(|i| (f64::from(i), if i == 5_000 { 90.0 } else { 20.0 }))
            .collect();
        let (every, medians, slowest) = thinned(&long);
        assert_eq!(every, 27);
        assert_eq!(medians.len(), 1000);
        assert!(medians.iter().all(|p| p.1 == 20.0));
        assert_eq!(slowest.iter().filter(|p| p.1 == 90.0).count(), 1);
    }

    #[test]
    fn a_line_plot_is_an_svg_with_its_legend() {
        let points = vec![(256.0, 17.0), (512.0, 51.0), (1024.0, 356.0)];
        let l = [Line::plain("events".into(), points.clone())];
        let svg = lines("matmul", "n", "median (µs)", &l, XScale::Linear).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("events") && svg.contains("matmul"),
            "{svg}"
        );
        assert_eq!(
            svg,
            lines("matmul", "n", "median (µs)", &l, XScale::Linear).unwrap(),
            "deterministic"
        );
        // A band is one shaded polygon under its line, within the axes it widens.
        let banded = [Line {
            band: points.iter().map(|&(x, y)| (x, 0.9 * y, 1.2 * y)).collect(),
            ..Line::plain("events".into(), points)
        }];
        let svg = lines("matmul", "n", "median (µs)", &banded, XScale::Linear).unwrap();
        assert_eq!(svg.matches("<polygon").count(), 1, "{svg}");
        assert!(bounds(&banded).unwrap().1 .1 >= 1.2 * 356.0);
    }

    #[test]
    fn a_series_plot_has_both_axes() {
        let svg = series(
            "cell",
            &[(0.0, 50.0), (1.0, 51.0)],
            &[(0.0, 1980.0), (1.0, 1755.0)],
        )
        .unwrap();
        assert!(
            svg.contains("SM clock (MHz)") && svg.contains("sample (µs)"),
            "{svg}"
        );
    }

    #[test]
    fn nothing_to_draw_gives_no_plot() {
        assert_eq!(lines("t", "x", "y", &[], XScale::Linear).unwrap(), "");
        // Variants at one point: nothing over the sweep.
        let one = |name: &str, y: f64| Line::plain(name.into(), vec![(768.0, y)]);
        let at_768 = [one("hot", 50.0), one("cold", 60.0)];
        assert_eq!(lines("t", "x", "y", &at_768, XScale::Linear).unwrap(), "");
        assert_eq!(stacked("t", "ms", &[], &[]).unwrap(), "");
    }
}
