//! A stacked bar per category (a fresh process's phases), with its legend in a column of
//! its own, as wide as its longest name.

use super::{err, text, PlotError, SIZE};
use plotters::prelude::*;

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
