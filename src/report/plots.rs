//! SVG plots beside the report, drawn with plotters: medians and differences against the
//! sweep, and each long cell's samples over time with the SM clock they ran under.

mod axes;
mod legend;
mod text;

pub use axes::XScale;
use axes::{decade_ticks, geometric, linear_tick, tick};
use legend::legend_for;
use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;

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
        let log_y = y0 > 0.0 && y1 / y0 > 10.0;
        let pad = ((y1 - y0) * 0.08).max(y1.abs() * 0.01).max(1e-9);
        let (ly, lin_y) = (y0 * 0.8..y1 * 1.25, (y0 - pad)..(y1 + pad));
        let (log_x, x_ticks) = x_axis(lines, x_scale, (x0, x1));
        // A log axis is ticked at 1, 2 and 5 of a decade; a linear one where plotters
        // spaces its ticks, each labelled apart from its neighbours.
        let y_span = lin_y.end - lin_y.start;
        let y_tick = move |y: f64| match log_y {
            true => tick(y),
            false => linear_tick(y, y_span),
        };
        let x_tick = |x: f64| match (x.fract() == 0.0, log_x) {
            (true, _) => format!("{x:.0}"),
            (false, true) => tick(x),
            (false, false) => linear_tick(x, x1 - x0),
        };
        macro_rules! draw {
            ($chart:expr, $legend:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
                    .x_label_formatter(&|x| x_tick(*x))
                    .y_label_formatter(&|y| y_tick(*y))
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
        let y_ticks = decade_ticks(ly.start, ly.end);
        let lx = x0 / 1.15..x1 * 1.15;
        let x_drawn = if log_x { lx.clone() } else { x0..x1 };
        let y_drawn = if log_y { ly.clone() } else { lin_y.clone() };
        let points = lines.iter().flat_map(|l| l.points.iter().copied());
        let legend = legend_for((points, lines.len()), (&x_drawn, log_x), (&y_drawn, log_y));
        match (log_x, log_y) {
            (false, true) => draw!(
                builder
                    .build_cartesian_2d(x0..x1, ly.log_scale().with_key_points(y_ticks))
                    .map_err(err)?,
                legend
            ),
            (false, false) => draw!(
                builder.build_cartesian_2d(x0..x1, lin_y).map_err(err)?,
                legend
            ),
            (true, true) => draw!(
                builder
                    .build_cartesian_2d(
                        lx.log_scale().with_key_points(x_ticks),
                        ly.log_scale().with_key_points(y_ticks)
                    )
                    .map_err(err)?,
                legend
            ),
            (true, false) => draw!(
                builder
                    .build_cartesian_2d(lx.log_scale().with_key_points(x_ticks), lin_y)
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

/// Whether the x axis is a log one, and its ticks: each of the lines' x values, or (`Log`)
/// 1, 2 and 5 of each decade.
fn x_axis(lines: &[Line], x_scale: XScale, (x0, x1): (f64, f64)) -> (bool, Vec<f64>) {
    let mut xs: Vec<f64> = (lines.iter())
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite())
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    match x_scale {
        XScale::Linear => (false, xs),
        XScale::LogIfGeometric => (geometric(&xs), xs),
        XScale::Log => (x0 > 0.0, decade_ticks(x0 / 1.15, x1 * 1.15)),
    }
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

/// A stacked plot's legend column: its first row's top, each row's height, where its names
/// start and their font size (as plotters takes it).
const LEGEND_TOP: i32 = 50;
const LEGEND_ROW: i32 = 22;
const LEGEND_TEXT_X: i32 = 30;
const LEGEND_FONT_SIZE: u32 = 14;

/// A stacked plot's size: the plot, and beside it a legend column as wide as its longest name
/// as a wide face draws it (240 px had cut "compiled image (from an earlier process)" off at
/// "proce"), as tall as its rows.
fn stacked_size(segments: &[(String, Vec<f64>)]) -> (u32, u32) {
    let longest = (segments.iter())
        .map(|(name, _)| text::width(name, LEGEND_FONT_SIZE))
        .max()
        .unwrap_or(0);
    let column = (LEGEND_TEXT_X as u32 + longest + 16).max(240);
    let rows = LEGEND_TOP as u32 + LEGEND_ROW as u32 * segments.len() as u32 + 12;
    (SIZE.0 + column, (SIZE.1 + 60).max(rows))
}

/// One stacked bar per category; `segments` are (name, value per category), bottom first.
pub fn stacked(
    title: &str,
    y_label: &str,
    categories: &[String],
    segments: &[(String, Vec<f64>)],
) -> Result<String, PlotError> {
    let total = |i: usize| -> f64 {
        segments
            .iter()
            .map(|(_, v)| v.get(i).copied().unwrap_or(0.0))
            .sum()
    };
    let top = (0..categories.len()).map(total).fold(0.0, f64::max);
    if categories.is_empty() || top.is_nan() || top <= 0.0 {
        return Ok(String::new());
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, stacked_size(segments)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        // The legend gets its own column: a stack of many phases leaves no free corner.
        let (plot_area, legend_area) = root.split_horizontally(SIZE.0);
        let n = categories.len();
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top * 1.1)
            .map_err(err)?;
        let name_of = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                categories[i as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&name_of)
            .y_desc(y_label)
            .draw()
            .map_err(err)?;
        let mut base = vec![0.0; n];
        for (k, (_, values)) in segments.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            let bars: Vec<Rectangle<(f64, f64)>> = (0..n)
                .filter_map(|i| {
                    let v = values.get(i).copied().filter(|v| *v > 0.0)?;
                    let r = Rectangle::new(
                        [(i as f64 - 0.35, base[i]), (i as f64 + 0.35, base[i] + v)],
                        color.filled(),
                    );
                    base[i] += v;
                    Some(r)
                })
                .collect();
            chart.draw_series(bars).map_err(err)?;
        }
        // Top of the stack first, as the bars read.
        for (row, (k, (name, _))) in segments.iter().enumerate().rev().enumerate() {
            let y = LEGEND_TOP + LEGEND_ROW * row as i32;
            let color = Palette99::pick(k).to_rgba();
            legend_area
                .draw(&Rectangle::new([(8, y), (22, y + 14)], color.filled()))
                .map_err(err)?;
            let font = ("sans-serif", LEGEND_FONT_SIZE);
            legend_area
                .draw(&Text::new(name.clone(), (LEGEND_TEXT_X, y), font))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
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

    #[test]
    fn a_stacked_plot_names_its_bars_and_segments() {
        let svg = stacked(
            "phases",
            "ms",
            &["cubin".into(), "ptx".into()],
            &[
                ("context".into(), vec![200.0, 210.0]),
                ("module load".into(), vec![0.2, 30.0]),
            ],
        )
        .unwrap();
        for word in ["cubin", "ptx", "context", "module load", "phases"] {
            assert!(svg.contains(word), "{word} missing");
        }
    }

    #[test]
    fn a_stacked_plots_legend_is_as_wide_as_its_longest_name_and_as_tall_as_its_rows() {
        let short = [("context".to_string(), vec![1.0])];
        assert_eq!(stacked_size(&short), (SIZE.0 + 240, SIZE.1 + 60));
        let long = "compiled image (from an earlier process)".to_string();
        let (width, _) = stacked_size(&[(long.clone(), vec![1.0])]);
        let needed = LEGEND_TEXT_X as u32 + text::width(&long, LEGEND_FONT_SIZE);
        assert!(width >= SIZE.0 + needed, "{width}");
        let svg = stacked("phases", "ms", &["cubin".into()], &[(long, vec![1.0])]).unwrap();
        assert!(svg.contains(&format!("width=\"{width}\"")), "{svg}");
        // More rows than the plot is tall: the canvas grows to hold them.
        let many: Vec<(String, Vec<f64>)> = (0..40).map(|i| (format!("p{i}"), vec![1.0])).collect();
        let (_, height) = stacked_size(&many);
        assert!(height >= (LEGEND_TOP + 40 * LEGEND_ROW) as u32, "{height}");
    }
}
