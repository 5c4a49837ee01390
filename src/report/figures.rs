//! The report's figures: medians and differences against the sweep, samples over time with
//! the SM clock, the probed clock per cell run, and every method's bias.

use super::bias::BiasTable;
use super::cells::probe_of;
use super::plots::{self, Line};
use crate::analysis::Analysis;
use crate::experiment::Point;
use serde::Serialize;

/// Plots the template may show, by kind; each has a title and a path relative to the report.
#[derive(Serialize, Default)]
pub struct Plots {
    medians: Vec<PlotRef>,
    bias: Vec<PlotRef>,
    probe: Vec<PlotRef>,
    differences: Vec<PlotRef>,
    series: Vec<PlotRef>,
}

#[derive(Serialize)]
struct PlotRef {
    title: String,
    path: String,
}

/// Cells with at least this many timed launches get a time-series plot.
const SERIES_MIN_SAMPLES: usize = 2000;
/// A time-series plot shows at most this many samples (every k-th), to stay readable and small.
const SERIES_MAX_POINTS: usize = 10_000;

/// A plot to write beside the report: its path relative to it, and its SVG text.
pub type PlotFile = (String, String);

/// The figures, the bias tables (made with their plot), and the files to write.
pub fn build(a: &Analysis) -> anyhow::Result<(Plots, Vec<BiasTable>, Vec<PlotFile>)> {
    let exp = &a.run.experiment;
    let mut plots = Plots::default();
    let mut files = Vec::new();
    kernel_plots(a, &mut plots, &mut files)?;
    series_plots(a, &mut plots.series, &mut files)?;
    probe_plot(a, &mut plots.probe, &mut files)?;
    let (bias, bias_plot) =
        super::bias::build(exp, |k, p, v| a.median_at(k, p, v)).map_err(anyhow::Error::msg)?;
    if let Some(svg) = bias_plot {
        let title = "bias of each method against its reference".into();
        add(
            &mut plots.bias,
            &mut files,
            title,
            "plots/bias.svg".into(),
            svg,
        );
    }
    Ok((plots, bias, files))
}

/// Lists a plot under `list` and its file among `files`; an empty plot is left out.
fn add(
    list: &mut Vec<PlotRef>,
    files: &mut Vec<PlotFile>,
    title: String,
    path: String,
    svg: String,
) {
    if !svg.is_empty() {
        list.push(PlotRef {
            title,
            path: path.clone(),
        });
        files.push((path, svg));
    }
}

/// Per kernel swept over one parameter: its medians per variant, and the differences the
/// report asks for.
fn kernel_plots(a: &Analysis, plots: &mut Plots, files: &mut Vec<PlotFile>) -> anyhow::Result<()> {
    let exp = &a.run.experiment;
    for (k, kernel) in exp.timed_kernels() {
        let Some([(param, _)]) = kernel.points.first().map(Vec::as_slice) else {
            continue;
        };
        let at = |variant: &str, p: &Point| a.median_at(k, p, variant);
        let points = &kernel.points;
        let medians: Vec<Line> = exp
            .variants
            .iter()
            .map(|v| Line {
                name: v.name.clone(),
                points: points
                    .iter()
                    .filter_map(|p| Some((p[0].1.as_f64()?, at(&v.name, p)? / 1e3)))
                    .collect(),
            })
            .collect();
        let title = format!("{}: median per variant", kernel.name);
        let svg = plots::lines(&title, param, "median (µs)", &medians, false)
            .map_err(anyhow::Error::msg)?;
        let path = format!("plots/{}-median.svg", kernel.name);
        add(&mut plots.medians, files, title, path, svg);
        let diffs: Vec<Line> = exp
            .report
            .differences
            .iter()
            .map(|(v, b)| Line {
                name: format!("{v} vs {b}"),
                points: points
                    .iter()
                    .filter_map(|p| {
                        Some((
                            p[0].1.as_f64()?,
                            (at(v, p)? - at(b, p)?) / at(b, p)? * 100.0,
                        ))
                    })
                    .collect(),
            })
            .collect();
        let title = format!("{}: relative difference of the medians", kernel.name);
        let svg = plots::lines(&title, param, "difference (%)", &diffs, false)
            .map_err(anyhow::Error::msg)?;
        let path = format!("plots/{}-difference.svg", kernel.name);
        add(&mut plots.differences, files, title, path, svg);
    }
    Ok(())
}

/// Per cell with enough samples in its first run: the samples and the SM clock over time.
fn series_plots(
    a: &Analysis,
    list: &mut Vec<PlotRef>,
    files: &mut Vec<PlotFile>,
) -> anyhow::Result<()> {
    for c in &a.run.plan.cells {
        let key = (c.index as u32, 0);
        let Some(launches) = a
            .launches
            .get(&key)
            .filter(|l| l.len() >= SERIES_MIN_SAMPLES)
        else {
            continue;
        };
        let step = launches.len().div_ceil(SERIES_MAX_POINTS);
        let samples: Vec<(f64, f64)> = launches
            .iter()
            .step_by(step)
            .filter(|(t, _)| t.is_finite())
            .map(|(t, ns)| (t / 1e6, ns / 1e3))
            .collect();
        let clock: Vec<(f64, f64)> = a
            .series
            .get(&key)
            .map(|pts| {
                pts.iter()
                    .filter_map(|p| Some((p.t_us / 1e6, p.reading.sm_mhz? as f64)))
                    .collect()
            })
            .unwrap_or_default();
        let shown = if step > 1 {
            format!(" (1 in {step})")
        } else {
            String::new()
        };
        let title = format!("{}: samples{shown} and SM clock over time", c.id);
        let svg = plots::series(&title, &samples, &clock).map_err(anyhow::Error::msg)?;
        add(
            list,
            files,
            title,
            format!("plots/cell-{}.svg", c.index),
            svg,
        );
    }
    Ok(())
}

/// The probed SM clock of each cell run, in run order, a line per variant.
fn probe_plot(
    a: &Analysis,
    list: &mut Vec<PlotRef>,
    files: &mut Vec<PlotFile>,
) -> anyhow::Result<()> {
    let s = a.run;
    let probe_lines: Vec<Line> = s
        .experiment
        .variants
        .iter()
        .map(|v| Line {
            name: v.name.clone(),
            points: s
                .records
                .iter()
                .enumerate()
                .filter(|(_, r)| s.plan.cells[r.cell].variant == v.name)
                .filter_map(|(i, r)| Some((i as f64, probe_of(r)?)))
                .collect(),
        })
        .filter(|l| !l.points.is_empty())
        .collect();
    if !probe_lines.is_empty() {
        let title = "probed SM clock of each cell run, in run order".to_string();
        let svg = plots::lines(&title, "cell run", "SM clock (MHz)", &probe_lines, false)
            .map_err(anyhow::Error::msg)?;
        add(list, files, title, "plots/clock-probe.svg".into(), svg);
    }
    Ok(())
}
