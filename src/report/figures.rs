//! The report's figures: medians and differences against the sweep, samples over time with
//! the SM clock, the probed clock per cell run, and every method's bias.

use super::bias::BiasTable;
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
    speedups: Vec<PlotRef>,
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

/// A plot holds at most this many lines: more could not be told apart.
const MAX_LINES: usize = 12;

/// A kernel's points laid out for plots against one swept parameter `x`: its only one, else
/// its numeric one with the most values. One panel per value of its text parameters (one
/// unnamed panel where it has none), each with a line per value of its other numeric
/// parameters (one unnamed line where it has none), as (name, indices of its points).
pub struct Panels {
    pub x: String,
    /// The x axis's title: the parameter, with those zipped to it (`m (with n, k)`).
    pub x_label: String,
    pub panels: Vec<(String, Vec<PanelLine>)>,
}

/// A line of a panel: its name and the indices of its points.
pub type PanelLine = (String, Vec<usize>);

impl Panels {
    /// The layout of `points`; None where no parameter is numeric, or a panel would hold
    /// more than [`MAX_LINES`] lines across `variants` variants.
    pub fn of(points: &[Point], variants: usize) -> Option<Panels> {
        let first = points.first()?;
        let values = |i: usize| {
            let mut seen: Vec<String> = Vec::new();
            for p in points {
                let v = p[i].1.to_string();
                if !seen.contains(&v) {
                    seen.push(v);
                }
            }
            seen.len()
        };
        let numeric = |i: usize| points.iter().all(|p| p[i].1.as_f64().is_some());
        let x = (0..first.len())
            .filter(|&i| numeric(i))
            .max_by_key(|&i| (values(i), std::cmp::Reverse(i)))?;
        // A parameter zipped to x (one value at each of x's) moves along the x axis: it
        // names no line (a zipped m = n = k sweep had made twelve lines of one point each).
        let tied = |i: usize| {
            let mut at: Vec<(String, String)> = Vec::new();
            i != x
                && values(i) > 1
                && points.iter().all(|p| {
                    let (xv, v) = (p[x].1.to_string(), p[i].1.to_string());
                    match at.iter().find(|(a, _)| *a == xv) {
                        Some((_, seen)) => *seen == v,
                        None => {
                            at.push((xv, v));
                            true
                        }
                    }
                })
        };
        let label = |p: &Point, text: bool| {
            let parts: Vec<String> = (p.iter().enumerate())
                .filter(|&(i, _)| i != x && !tied(i) && numeric(i) != text)
                .map(|(_, (name, v))| format!("{name}={v}"))
                .collect();
            parts.join(" ")
        };
        let mut panels: Vec<(String, Vec<PanelLine>)> = Vec::new();
        for (i, p) in points.iter().enumerate() {
            let (panel, line) = (label(p, true), label(p, false));
            let at = match panels.iter().position(|(n, _)| *n == panel) {
                Some(at) => at,
                None => {
                    panels.push((panel, Vec::new()));
                    panels.len() - 1
                }
            };
            let lines = &mut panels[at].1;
            match lines.iter_mut().find(|(n, _)| *n == line) {
                Some((_, idx)) => idx.push(i),
                None => lines.push((line, vec![i])),
            }
        }
        // A kernel of one parameter has a line per variant, however many.
        let fits = first.len() == 1 || panels.iter().all(|(_, l)| l.len() * variants <= MAX_LINES);
        let zipped: Vec<&str> = (0..first.len())
            .filter(|&i| tied(i))
            .map(|i| first[i].0.as_str())
            .collect();
        let x_label = match zipped.is_empty() {
            true => first[x].0.clone(),
            false => format!("{} (with {})", first[x].0, zipped.join(", ")),
        };
        fits.then(|| Panels {
            x: first[x].0.clone(),
            x_label,
            panels,
        })
    }

    /// Each panel's name and lines: one per line of the panel and variant, through the
    /// points where `value(point index, variant)` gives a number.
    pub fn lines(
        &self,
        points: &[Point],
        variants: &[&str],
        value: impl Fn(usize, &str) -> Option<f64>,
        band: impl Fn(usize, &str) -> Option<(f64, f64)>,
    ) -> Vec<(&str, Vec<Line>)> {
        (self.panels.iter())
            .map(|(panel, lines)| {
                let lines = (lines.iter())
                    .flat_map(|(line, idx)| {
                        let band = &band;
                        let value = &value;
                        variants.iter().map(move |v| Line {
                            name: Self::line_name(line, v, variants.len()),
                            points: (idx.iter())
                                .filter_map(|&i| Some((self.x_of(points, i)?, value(i, v)?)))
                                .collect(),
                            band: (idx.iter())
                                .filter_map(|&i| {
                                    let (lo, hi) = band(i, v)?;
                                    Some((self.x_of(points, i)?, lo, hi))
                                })
                                .collect(),
                        })
                    })
                    .collect();
                (panel.as_str(), lines)
            })
            .collect()
    }

    /// A line's name: its variant's where it is the panel's only line, else its own, with
    /// the variant where there are several.
    fn line_name(line: &str, variant: &str, variants: usize) -> String {
        match (line.is_empty(), variants) {
            (true, _) => variant.to_string(),
            (false, 1) => line.to_string(),
            (false, _) => format!("{line} {variant}"),
        }
    }

    /// A panel's title and file suffixes: nothing for the unnamed one.
    pub fn suffixes(panel: &str) -> (String, String) {
        match panel.is_empty() {
            true => (String::new(), String::new()),
            false => (
                format!(", {panel}"),
                format!("-{}", panel.replace([' ', '='], "-")),
            ),
        }
    }

    /// The x value of point `i` of `points`.
    fn x_of(&self, points: &[Point], i: usize) -> Option<f64> {
        let p = &points[i];
        p.iter().find(|(n, _)| *n == self.x)?.1.as_f64()
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
            let svg = plots::lines(&title, &layout.x_label, y, &medians, true)?;
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
                Line::plain(
                    format!("{v} vs {b}"),
                    points
                        .iter()
                        .filter_map(|p| {
                            Some((
                                p[0].1.as_f64()?,
                                (at(v, p)? - at(b, p)?) / at(b, p)? * 100.0,
                            ))
                        })
                        .collect(),
                )
            })
            .collect();
        let title = format!("{}: relative difference of the medians", kernel.name);
        let svg = plots::lines(&title, param, "difference (%)", &diffs, true)?;
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
        for (panel, lines) in layout.lines(points, &variants, faster, |_, _| None) {
            let (title_end, file_end) = Panels::suffixes(panel);
            let title = format!("{kernel} against {baseline}: times faster{title_end}");
            let svg = plots::lines(&title, &layout.x_label, "speed-up (x)", &lines, true)?;
            let path = plot_path(&format!("{kernel}-vs-{baseline}{file_end}"));
            add(list, files, title, path, svg);
        }
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
        let svg = plots::lines(&title, "cell run", "SM clock (MHz)", &probe_lines, false)?;
        add(list, files, title, plot_path("clock-probe"), svg);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::SweepValue;

    fn point(op: &str, ilp: i64, warps: i64) -> Point {
        vec![
            ("op".into(), SweepValue::Text(op.into())),
            ("ilp".into(), SweepValue::Int(ilp)),
            ("warps".into(), SweepValue::Int(warps)),
        ]
    }

    #[test]
    fn a_sweep_of_several_parameters_is_plotted_by_panel_and_line() {
        let mut points = Vec::new();
        for op in ["FMA", "DIV"] {
            for ilp in 1..=4 {
                for warps in [1, 2] {
                    points.push(point(op, ilp, warps));
                }
            }
        }
        let p = Panels::of(&points, 1).unwrap();
        // x: the numeric parameter with the most values; a panel per op, a line per warps.
        assert_eq!(p.x, "ilp");
        let names: Vec<&str> = p.panels.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["op=FMA", "op=DIV"]);
        let lines = &p.panels[0].1;
        assert_eq!(lines[0], ("warps=1".to_string(), vec![0, 2, 4, 6]));
        assert_eq!(p.x_of(&points, 2), Some(2.0));
        assert_eq!(Panels::suffixes("op=FMA").1, "-op-FMA");
        assert_eq!(Panels::line_name("warps=1", "hot", 2), "warps=1 hot");
        // Too many lines to tell apart: no plot.
        assert!(Panels::of(&points, 7).is_none());
        // A text sweep alone has nothing to plot against.
        let names = vec![vec![("op".to_string(), SweepValue::Text("FMA".into()))]];
        assert!(Panels::of(&names, 1).is_none());
    }

    #[test]
    fn a_zipped_sweep_is_one_line_along_its_axis() {
        // m = n = k zipped over six sizes, crossed with two block sizes.
        let mut points = Vec::new();
        for size in [256, 512, 1024, 2048, 4096, 8192] {
            for block in [64, 128] {
                points.push(vec![
                    ("m".into(), SweepValue::Int(size)),
                    ("n".into(), SweepValue::Int(size)),
                    ("k".into(), SweepValue::Int(size)),
                    ("block".into(), SweepValue::Int(block)),
                ]);
            }
        }
        let p = Panels::of(&points, 2).unwrap();
        assert_eq!(p.x_label, "m (with n, k)");
        let lines: Vec<&str> = p.panels[0].1.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(lines, ["block=64", "block=128"]);
        assert_eq!(p.panels[0].1[0].1.len(), 6);
    }

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
