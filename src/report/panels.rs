//! How a kernel's points are laid out for plots against one swept parameter: panels by
//! its text parameters, a line per value of its other numeric ones.

use super::plots::Line;
use crate::experiment::Point;

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
}
