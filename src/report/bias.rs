//! Each method's bias against its reference (`[report] bias = [[method, reference], ...]`):
//! per kernel and sweep point, the difference of the medians in time and in percent, the
//! method closest to its reference, and a plot of bias against the reference's duration.

use super::format;
use super::layout::{self, Part};
use super::plots::{self, Line, PlotError};
use crate::analysis::agreement::{bias, within_tolerance};
use crate::experiment::knobs::cache::bytes_text;
use crate::experiment::{point_label, Experiment, Point, Unit};
use serde::Serialize;

#[derive(Serialize)]
pub struct BiasTable {
    pub kernel: String,
    /// Whether rows show the kernel's buffer bytes (kernels of different sizes share the sweep).
    pub sized: bool,
    pub parameters: String,
    pub references: Vec<String>,
    pub methods: Vec<String>,
    pub rows: Vec<BiasRow>,
    /// The rows as the page shows them: split by columns where a line would be too long.
    pub parts: Vec<Part>,
    /// Methods within max(1%, 0.5 µs) of their reference at every point where both ran:
    /// those a user can take for this kernel without looking up the point.
    pub within_everywhere: Vec<String>,
}

#[derive(Serialize)]
pub struct BiasRow {
    pub point: String,
    pub size: String,
    pub references: Vec<String>,
    pub biases: Vec<String>,
    /// The method nearest its reference at this point.
    pub closest: String,
}

/// The pair with the smallest absolute bias at one point: (method, ns, fraction).
pub fn closest(
    pairs: &[(String, String)],
    median: impl Fn(&str) -> Option<f64>,
) -> Option<(&str, f64, f64)> {
    pairs
        .iter()
        .filter_map(|(m, r)| {
            let (ns, f) = bias(median(m)?, median(r)?);
            Some((m.as_str(), ns, f))
        })
        .min_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
}

/// Bias tables per kernel, and one plot of every method's bias (%) against its reference's
/// median (µs); `median(kernel, point, variant)` is a cell's headline median in ns.
pub fn build(
    exp: &Experiment,
    median: impl Fn(usize, &Point, &str) -> Option<f64>,
) -> Result<(Vec<BiasTable>, Option<String>), PlotError> {
    let pairs = &exp.report.bias;
    if pairs.is_empty() {
        return Ok((vec![], None));
    }
    let mut references: Vec<String> = pairs.iter().map(|(_, r)| r.clone()).collect();
    references.dedup();
    let mut tables = Vec::new();
    let mut lines: Vec<Line> = pairs
        .iter()
        .map(|(m, r)| Line::plain(format!("{m} vs {r}"), vec![]))
        .collect();
    for (k, kernel) in exp.timed_kernels() {
        // One unit per table: the references' medians choose it.
        let medians = (kernel.points.iter()).flat_map(|p| {
            references
                .iter()
                .filter_map(|r| median(k, p, r))
                .collect::<Vec<_>>()
        });
        let unit = format::unit_for(medians, Unit::Auto);
        let time = |ns: f64| format::time(ns, unit);
        let mut rows = Vec::new();
        // Per pair: measured at some point, and within tolerance at every such point.
        let mut close = vec![(false, true); pairs.len()];
        for (i, point) in kernel.points.iter().enumerate() {
            let at = |v: &str| median(k, point, v);
            let biases = pairs
                .iter()
                .enumerate()
                .map(|(i, (m, r))| match (at(m), at(r)) {
                    (Some(mv), Some(rv)) => {
                        let (ns, f) = bias(mv, rv);
                        lines[i].points.push((rv / 1e3, f * 100.0));
                        close[i] = (true, close[i].1 && within_tolerance(ns, f));
                        format!(
                            "{}{} ({})",
                            sign(ns),
                            time(ns.abs()),
                            format::percent(f * 100.0)
                        )
                    }
                    _ => "–".into(),
                })
                .collect();
            let nearest = closest(pairs, at).map_or("–".into(), |c| closest_text(c, time));
            rows.push(BiasRow {
                point: point_label(point),
                size: kernel
                    .launches
                    .get(i)
                    .map_or(String::new(), |l| bytes_text(l.buffer_bytes())),
                references: references
                    .iter()
                    .map(|r| at(r).map_or("–".into(), time))
                    .collect(),
                biases,
                closest: nearest,
            });
        }
        let sized = exp.kernels.len() > 1;
        let methods: Vec<String> = pairs.iter().map(|(m, r)| format!("{m} vs {r}")).collect();
        let header = (std::iter::once(exp.parameter_names(k)))
            .chain(sized.then(|| "buffers".to_string()))
            .chain(references.iter().cloned())
            .chain(methods.iter().cloned())
            .chain(["closest".to_string()])
            .collect();
        tables.push(BiasTable {
            kernel: kernel.name.clone(),
            sized,
            parameters: exp.parameter_names(k),
            references: references.clone(),
            methods,
            parts: parts(header, &rows, sized),
            rows,
            within_everywhere: within_everywhere(pairs, &close),
        });
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let svg = plots::lines(
        "bias of each method against its reference",
        "reference median (µs)",
        "bias (%)",
        &lines,
        // Reference medians from a µs to tens of ms: a linear axis put all but the
        // longest at its left edge.
        plots::XScale::Log,
    )?;
    Ok((tables, (!svg.is_empty()).then_some(svg)))
}

/// The methods measured at some point and within tolerance at every such point
/// (`close`: per pair, measured and within).
fn within_everywhere(pairs: &[(String, String)], close: &[(bool, bool)]) -> Vec<String> {
    (pairs.iter().zip(close))
        .filter(|(_, &(measured, within))| measured && within)
        .map(|((m, _), _)| m.clone())
        .collect()
}

/// The method closest to its reference at a point: its bias, and whether it is outside the
/// tolerance.
fn closest_text((m, ns, f): (&str, f64, f64), time: impl Fn(f64) -> String) -> String {
    format!(
        "{m} ({}{}, {}){}",
        sign(ns),
        time(ns.abs()),
        format::percent(f * 100.0),
        if within_tolerance(ns, f) {
            ""
        } else {
            " ⚠ outside max(1%, 0.5 µs)"
        }
    )
}

/// A bias table's rows under `header`, split by its columns where too wide for a line (the
/// point, and the buffers where `sized`, repeated in each part).
fn parts(header: Vec<String>, rows: &[BiasRow], sized: bool) -> Vec<layout::Part> {
    let lines = (rows.iter())
        .map(|r| {
            (std::iter::once(r.point.clone()))
                .chain(sized.then(|| r.size.clone()))
                .chain(r.references.iter().cloned())
                .chain(r.biases.iter().cloned())
                .chain([r.closest.clone()])
                .collect()
        })
        .collect();
    layout::split(header, lines, 1 + usize::from(sized))
}

fn sign(ns: f64) -> &'static str {
    if ns < 0.0 {
        "-"
    } else {
        "+"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_method_is_recommended() {
        let pairs = vec![
            ("events".to_string(), "cupti".to_string()),
            ("graph".to_string(), "cupti".to_string()),
            ("missing".to_string(), "cupti".to_string()),
        ];
        let median = |v: &str| match v {
            "cupti" => Some(10_000.0),
            "events" => Some(12_000.0),
            "graph" => Some(9_700.0),
            _ => None,
        };
        let (m, ns, _) = closest(&pairs, median).unwrap();
        assert_eq!((m, ns), ("graph", -300.0));
    }
}
