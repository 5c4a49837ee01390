//! The report's figures: medians and differences against the sweep, samples over time with
//! the SM clock, the probed clock per cell run, and every method's bias.

use super::bias::BiasTable;
use super::panels::Panels;
use super::plots::{self, Line, XScale};
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
    speedups: Vec<PlotRef>,
    roofline: Vec<PlotRef>,
    series: Vec<PlotRef>,
}

#[derive(Serialize)]
struct PlotRef {
    title: String,
    path: String,
}

/// A plot to write beside the report: its path relative to it, and its SVG text.
pub type PlotFile = (String, String);

/// The longest plot file name, in bytes. A file name holds 255 bytes on the common file
/// systems and 143 under eCryptfs, and a plot is first written as `.NAME.tmp-PID` beside
/// its place (16 bytes more); a kernel's plot of its own (`NAME-difference.svg`, 115 bytes
/// for the longest kernel name) fits.
const MAX_PLOT_NAME_BYTES: usize = 120;

/// A plot's path relative to the report: `plots/STEM.svg`. The stem holds the experiment's
/// names (kernel, sweep values), as long as they are; a file name that would pass
/// [`MAX_PLOT_NAME_BYTES`] keeps what fits of the stem and ends with a hash of the whole,
/// so it is the same at every render and another plot's is another.
pub fn plot_path(stem: &str) -> String {
    const EXTENSION: &str = ".svg";
    const HASH_CHARS: usize = 12;
    if stem.len() + EXTENSION.len() <= MAX_PLOT_NAME_BYTES {
        return format!("plots/{stem}{EXTENSION}");
    }
    let hash = &crate::system::sha256_hex(stem.as_bytes())[..HASH_CHARS];
    let mut kept = MAX_PLOT_NAME_BYTES - EXTENSION.len() - HASH_CHARS - 1;
    while !stem.is_char_boundary(kept) {
        kept -= 1;
    }
    format!("plots/{}-{hash}{EXTENSION}", &stem[..kept])
}

/// The figures, the bias tables (made with their plot), and the files to write.
pub fn build(a: &Analysis) -> anyhow::Result<(Plots, Vec<BiasTable>, Vec<PlotFile>)> {
    let exp = &a.run.experiment;
    let mut plots = Plots::default();
    let mut files = Vec::new();
    kernel_plots(a, &mut plots, &mut files)?;
    speedup_plots(a, &mut plots.speedups, &mut files)?;
    if let Some((title, svg)) = super::roofline::plot(a)? {
        add(
            &mut plots.roofline,
            &mut files,
            title,
            plot_path("roofline"),
            svg,
        );
    }
    series_plots(a, &mut plots.series, &mut files)?;
    probe_plot(a, &mut plots.probe, &mut files)?;
    let (bias, bias_plot) = super::bias::build(exp, |k, p, v| a.median_at(k, p, v))?;
    if let Some(svg) = bias_plot {
        let title = "bias of each method against its reference".into();
        add(&mut plots.bias, &mut files, title, plot_path("bias"), svg);
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

/// Per kernel swept over a numeric parameter: its medians per variant (a plot per panel,
/// [`Panels`]), and for a kernel of one swept parameter the differences the report asks for.
fn kernel_plots(a: &Analysis, plots: &mut Plots, files: &mut Vec<PlotFile>) -> anyhow::Result<()> {
    let exp = &a.run.experiment;
    let variants: Vec<&str> = exp.variants.iter().map(|v| v.name.as_str()).collect();
    for (k, kernel) in exp.timed_kernels() {
        let points = &kernel.points;
        let Some(layout) = Panels::of(points, variants.len()) else {
            continue;
        };
        let at = |variant: &str, p: &Point| a.median_at(k, p, variant);
        // Each median's interquartile range, as a band about its line.
        let quartiles = |i: usize, v: &str| {
            let stats = a.headline(a.run.plan.cell_at(k, &points[i], v)?)?;
            Some((stats.p25 / 1e3, stats.p75 / 1e3))
        };
        let medians = |i: usize, v: &str| Some(at(v, &points[i])? / 1e3);
        let panels = layout.lines(points, &variants, medians, quartiles);
        for (panel, medians) in panels {
            // A kernel of one parameter has a line per variant and nothing else.
            let (title_end, file_end) = match points[0].len() {
                1 => (" per variant".to_string(), String::new()),
                _ => Panels::suffixes(panel),
            };
            let title = format!("{}: median{title_end}", kernel.name);
            let y = "median (µs), shaded: p25 to p75";
            let svg = plots::lines(&title, &layout.x_label, y, &medians, XScale::LogIfGeometric)?;
            let path = plot_path(&format!("{}-median{file_end}", kernel.name));
            add(&mut plots.medians, files, title, path, svg);
        }
        let [(param, _)] = points[0].as_slice() else {
            continue;
        };
        let diffs: Vec<Line> = exp
            .report
            .differences
            .iter()
            .map(|(v, b)| {
                let x = |p: &Point| p[0].1.as_f64();
                let percent = |r: f64| (r - 1.0) * 100.0;
                // The ratio's interval, as a percentage.
                let band = |p: &Point| {
                    let (lo, hi) = ratio_band(a, (k, p, b), (k, p, v))?;
                    Some((x(p)?, percent(lo), percent(hi)))
                };
                Line {
                    name: format!("{v} vs {b}"),
                    points: (points.iter())
                        .filter_map(|p| Some((x(p)?, percent(at(v, p)? / at(b, p)?))))
                        .collect(),
                    band: points.iter().filter_map(band).collect(),
                }
            })
            .collect();
        let title = format!("{}: relative difference of the medians", kernel.name);
        let svg = plots::lines(
            &title,
            param,
            "difference (%), shaded: 95% interval",
            &diffs,
            XScale::LogIfGeometric,
        )?;
        let path = plot_path(&format!("{}-difference", kernel.name));
        add(&mut plots.differences, files, title, path, svg);
    }
    Ok(())
}

/// Per (kernel, baseline) pair of `[report] kernels`: how many times faster the kernel is
/// than its baseline at each point the two share, a line per variant, where both cells are
/// trusted: the comparison the experiment is about, which the medians' plots leave to the
/// reader's eye.
fn speedup_plots(
    a: &Analysis,
    list: &mut Vec<PlotRef>,
    files: &mut Vec<PlotFile>,
) -> anyhow::Result<()> {
    let exp = &a.run.experiment;
    let variants: Vec<&str> = exp.variants.iter().map(|v| v.name.as_str()).collect();
    let named = |name: &str| exp.timed_kernels().find(|(_, k)| k.name == name);
    for (kernel, baseline) in &exp.report.kernels {
        let (Some((k, def)), Some((b, base))) = (named(kernel), named(baseline)) else {
            continue;
        };
        let points = &def.points;
        let Some(layout) = Panels::of(points, variants.len()) else {
            continue;
        };
        let faster = |i: usize, v: &str| {
            let p = points.get(i).filter(|p| base.points.contains(p))?;
            Some(a.sound_median_at(b, p, v)? / a.sound_median_at(k, p, v)?)
        };
        // The speed-up's interval: at the findings' strongest cell, the one they state.
        let interval = |i: usize, v: &str| {
            faster(i, v)?;
            ratio_band(a, (k, &points[i], v), (b, &points[i], v))
        };
        for (panel, lines) in layout.lines(points, &variants, faster, interval) {
            let (title_end, file_end) = Panels::suffixes(panel);
            let title = format!("{kernel} against {baseline}: times faster{title_end}");
            let svg = plots::lines(
                &title,
                &layout.x_label,
                "speed-up (x), shaded: 95% interval",
                &lines,
                XScale::LogIfGeometric,
            )?;
            let path = plot_path(&format!("{kernel}-vs-{baseline}{file_end}"));
            add(list, files, title, path, svg);
        }
    }
    Ok(())
}

/// The 95% interval of `median(of) / median(over)` of two cells (kernel, point, variant), as
/// the analysis bootstrapped it; None where either cell has no units.
fn ratio_band(
    a: &Analysis,
    (ko, po, vo): (usize, &Point, &str),
    (kf, pf, vf): (usize, &Point, &str),
) -> Option<(f64, f64)> {
    let cell = |k: usize, p: &Point, v: &str| a.run.plan.cell_at(k, p, v).map(|c| c.index);
    a.ratios.interval(cell(ko, po, vo)?, cell(kf, pf, vf)?)
}

/// Per cell with enough samples in its first run: the samples and the SM clock over time.
fn series_plots(
    a: &Analysis,
    list: &mut Vec<PlotRef>,
    files: &mut Vec<PlotFile>,
) -> anyhow::Result<()> {
    for c in &a.run.plan.cells {
        let key = (c.index as u32, 0);
        let Some((trace, points)) =
            (a.reduced.traces.get(&c.index)).and_then(|t| Some((t, t.points.as_ref()?)))
        else {
            continue;
        };
        let step = trace.step;
        let samples: Vec<(f64, f64)> = (points.iter()).map(|(t, ns)| (t / 1e6, ns / 1e3)).collect();
        let clock: Vec<(f64, f64)> = (a.reduced.series)
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
        let svg = plots::series(&title, &samples, &clock)?;
        add(
            list,
            files,
            title,
            plot_path(&format!("cell-{}", c.index)),
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
        .map(|v| {
            Line::plain(
                v.name.clone(),
                s.records
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| s.plan.cells[r.cell].variant == v.name)
                    .filter_map(|(i, r)| Some((i as f64, r.probed_mhz()?)))
                    .collect(),
            )
        })
        .filter(|l| !l.points.is_empty())
        .collect();
    if !probe_lines.is_empty() {
        let title = "probed SM clock of each cell run, in run order".to_string();
        let svg = plots::lines(
            &title,
            "cell run",
            "SM clock (MHz)",
            &probe_lines,
            XScale::Linear,
        )?;
        add(list, files, title, plot_path("clock-probe"), svg);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_plot_name_is_cut_to_fit_with_a_hash_of_the_whole() {
        assert_eq!(plot_path("matmul-median"), "plots/matmul-median.svg");
        let kernel = "k".repeat(100);
        let longest_own = plot_path(&format!("{kernel}-difference"));
        assert_eq!(longest_own, format!("plots/{kernel}-difference.svg"));
        // Two panels of 200-character values that differ only at their end; a value of
        // two-byte letters is cut between letters.
        let [a, b, c] = ["a", "b", "é"]
            .map(|end| plot_path(&format!("{kernel}-median-tag-{}{end}", "v".repeat(199))));
        for path in [&a, &b, &c] {
            let name = path.strip_prefix("plots/").unwrap();
            assert!(name.len() <= MAX_PLOT_NAME_BYTES, "{name}");
            assert!(
                name.starts_with(&kernel) && name.ends_with(".svg"),
                "{name}"
            );
        }
        assert!(a != b && b != c, "{a} {b}");
        assert_eq!(
            a,
            plot_path(&format!("{kernel}-median-tag-{}a", "v".repeat(199)))
        );
        let letters = plot_path(&format!("{kernel}-{}", "é".repeat(100)));
        assert!(
            letters.len() - "plots/".len() <= MAX_PLOT_NAME_BYTES,
            "{letters}"
        );
    }
}
