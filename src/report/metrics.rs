//! Derived metrics (`[[report.metric]]`): per kernel, each cell's median turned into the
//! number the experiment asks for (ns per access, bytes per cycle), a column per variant.

use super::figures::{plot_path, PlotFile};
use super::format;
use super::panels::Panels;
use super::plots::{self, PlotError};
use crate::analysis::Analysis;
use crate::experiment::{metric_value, point_label};
use serde::Serialize;

#[derive(Serialize)]
pub struct MetricTable {
    pub metric: String,
    pub unit: String,
    pub formula: String,
    pub kernel: String,
    pub parameters: String,
    pub columns: Vec<String>,
    pub rows: Vec<MetricRow>,
    /// The metric against a swept parameter, a plot per panel ([`Panels`]).
    pub plots: Vec<MetricPlot>,
}

#[derive(Serialize)]
pub struct MetricPlot {
    pub alt: String,
    pub path: String,
}

#[derive(Serialize)]
pub struct MetricRow {
    pub point: String,
    pub values: Vec<String>,
}

/// One table per metric and kernel, `–` where a cell did not give a median or the expression
/// no number; and a plot of each against the kernel's swept parameter where it has one
/// (a log x axis where the sweep spans decades, as powers of two do).
pub fn build(a: &Analysis) -> Result<(Vec<MetricTable>, Vec<PlotFile>), PlotError> {
    let exp = &a.run.experiment;
    let (mut tables, mut files) = (Vec::new(), Vec::new());
    for (mi, m) in exp.report.metrics.iter().enumerate() {
        for (k, kernel) in exp.timed_kernels() {
            let value = |p: &crate::experiment::Point, launch, v: &str| {
                a.median_at(k, p, v)
                    .and_then(|ns| metric_value(m, p, &exp.facts, ns, launch).ok())
                    .filter(|x| x.is_finite())
            };
            let rows = kernel
                .points
                .iter()
                .zip(&kernel.launches)
                .map(|(p, launch)| MetricRow {
                    point: point_label(p),
                    values: exp
                        .variants
                        .iter()
                        .map(|v| value(p, launch, &v.name).map_or("–".into(), format::number))
                        .collect(),
                })
                .collect();
            let mut plots_made = Vec::new();
            let variants: Vec<&str> = exp.variants.iter().map(|v| v.name.as_str()).collect();
            if let Some(layout) = Panels::of(&kernel.points, variants.len()) {
                let (points, launches) = (&kernel.points, &kernel.launches);
                let panels = layout.lines(
                    points,
                    &variants,
                    |i, v| value(&points[i], &launches[i], v),
                    |_, _| None,
                );
                for (panel, lines) in panels {
                    let xs: Vec<f64> = lines
                        .iter()
                        .flat_map(|l| l.points.iter().map(|p| p.0))
                        .collect();
                    let (lo, hi) = xs
                        .iter()
                        .fold((f64::INFINITY, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
                    let (title_end, file_end) = Panels::suffixes(panel);
                    let title = format!("{}: {} ({}){title_end}", kernel.name, m.name, m.unit);
                    let log_x = lo > 0.0 && hi / lo >= 100.0;
                    let x_scale = match log_x {
                        true => plots::XScale::LogIfGeometric,
                        false => plots::XScale::Linear,
                    };
                    let svg = plots::lines(&title, &layout.x, &m.unit, &lines, x_scale)?;
                    if !svg.is_empty() {
                        let path = plot_path(&format!("{}-metric-{mi}{file_end}", kernel.name));
                        files.push((path.clone(), svg));
                        plots_made.push(MetricPlot {
                            alt: format!("{}: {}{title_end}", m.name, kernel.name),
                            path,
                        });
                    }
                }
            }
            tables.push(MetricTable {
                metric: m.name.clone(),
                unit: m.unit.clone(),
                formula: m.value.clone(),
                kernel: kernel.name.clone(),
                parameters: exp.parameter_names(k),
                columns: exp.variants.iter().map(|v| v.name.clone()).collect(),
                rows,
                plots: plots_made,
            });
        }
    }
    Ok((tables, files))
}

#[cfg(test)]
mod tests {
    use super::format;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(format::number(1234.5), "1234");
        assert_eq!(format::number(12.345), "12.35");
        assert_eq!(format::number(0.0012345), "0.001234");
        assert_eq!(format::number(f64::NAN), "–");
    }
}
