//! The first launch taken apart: for the fresh-process cells at each sweep point, the
//! median time of every phase of a worker's life (process start, driver, context, NVRTC,
//! module load, ...), a table per point and a stacked bar per variant.

use super::figures::{plot_path, PlotFile};
use super::format;
use super::plots::{self, PlotError};
use crate::analysis::median;
use crate::experiment::{Point, Unit};
use crate::plan::{Cell, Role};
use crate::protocol::FIRST_TIMED_LAUNCH;
use crate::protocol::{CellRecord, Span, Status};
use crate::store::Stored;
use serde::Serialize;

#[derive(Serialize)]
pub struct PhaseTable {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<PhaseRow>,
    /// Processes per column.
    pub processes: Vec<usize>,
    pub plot: Option<String>,
}

#[derive(Serialize)]
pub struct PhaseRow {
    pub name: String,
    pub values: Vec<String>,
    /// Rows that sum or summarize the phases above them are shown in bold.
    pub total: bool,
}

/// Phase tables and their plots.
pub fn build(
    s: &Stored,
    steady_median_ns: impl Fn(usize) -> Option<f64>,
) -> Result<(Vec<PhaseTable>, Vec<PlotFile>), PlotError> {
    let exp = &s.experiment;
    let (mut tables, mut files) = (Vec::new(), Vec::new());
    for (k, kernel) in exp.kernels.iter().enumerate() {
        for point in &kernel.points {
            let (cells, runs) = fresh_runs(s, k, point);
            if runs.iter().all(Vec::is_empty) {
                continue;
            }
            // Rows: the phases up to the first timed launch, then those after it (a name may
            // be in both, such as the output check, which follows whichever launch is checked).
            let before = phase_order(runs.iter().flatten().map(|r| split(&r.phases).0));
            let after = phase_order(runs.iter().flatten().map(|r| split(&r.phases).1));
            let rows = rows(&cells, &runs, (&before, &after), &steady_median_ns);
            let label = point
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ");
            let columns: Vec<String> = cells.iter().map(|c| c.variant.clone()).collect();
            // The bar stacks what a process spends before its first result.
            let segments: Vec<(String, Vec<f64>)> = before
                .iter()
                .map(|name| {
                    let v = runs
                        .iter()
                        .map(|rs| phase_median(rs, name, false).unwrap_or(0.0))
                        .collect();
                    (name.clone(), v)
                })
                .collect();
            let title = if exp.params.is_empty() {
                format!(
                    "{}: a fresh process up to its first timed launch",
                    kernel.name
                )
            } else {
                format!(
                    "{} at {label}: a fresh process up to its first timed launch",
                    kernel.name
                )
            };
            let svg = plots::stacked(&title, "median time (ms)", &columns, &segments)?;
            let plot = (!svg.is_empty()).then(|| {
                let stem = format!("phases-{}-{}", kernel.name, file_label(&label));
                let path = plot_path(&stem);
                files.push((path.clone(), svg));
                path
            });
            tables.push(PhaseTable {
                title,
                processes: runs.iter().map(Vec::len).collect(),
                columns,
                rows,
                plot,
            });
        }
    }
    Ok((tables, files))
}

/// Kernel `k`'s fresh-process cells at `point`, and each one's finished processes whose
/// phases start at the process's start.
fn fresh_runs<'a>(
    s: &'a Stored,
    k: usize,
    point: &Point,
) -> (Vec<&'a Cell>, Vec<Vec<&'a CellRecord>>) {
    let cells: Vec<_> = (s.plan.cells.iter())
        .filter(|c| {
            c.role == Role::Measure
                && c.kernel == Some(k)
                && c.point == *point
                && c.knobs.process.fresh.is_some()
        })
        .collect();
    let runs = cells
        .iter()
        .map(|c| {
            (s.records.iter())
                .filter(|r| r.cell == c.index && r.status == Status::Ok)
                .filter(|r| r.phases.first().is_some_and(|p| p.start_ms == 0.0))
                .collect()
        })
        .collect();
    (cells, runs)
}

/// The median time of phase `name` over `rs`, among the phases after the first timed
/// launch where `late`, else those up to it.
fn phase_median(rs: &[&CellRecord], name: &str, late: bool) -> Option<f64> {
    median(
        rs.iter()
            .filter_map(|r| {
                let (b, a) = split(&r.phases);
                if late { a } else { b }.iter().find(|p| p.name == name)
            })
            .map(|p| p.ms)
            .collect(),
    )
}

/// A table's rows: each phase's median per cell (`phases`: those up to the first timed
/// launch, then those after it), then the totals.
fn rows(
    cells: &[&Cell],
    runs: &[Vec<&CellRecord>],
    (before, after): (&[String], &[String]),
    steady_median_ns: &impl Fn(usize) -> Option<f64>,
) -> Vec<PhaseRow> {
    let fmt = |ms: Option<f64>| ms.map_or("–".into(), |v| format::time(v * 1e6, Unit::Ms));
    let mut rows: Vec<PhaseRow> = before
        .iter()
        .map(|n| (n, false))
        .chain(after.iter().map(|n| (n, true)))
        .map(|(name, late)| PhaseRow {
            name: name.clone(),
            values: runs
                .iter()
                .map(|rs| fmt(phase_median(rs, name, late)))
                .collect(),
            total: false,
        })
        .collect();
    let until_first = |r: &&CellRecord| {
        r.phases
            .iter()
            .find(|p| p.name == FIRST_TIMED_LAUNCH)
            .map(|p| p.start_ms + p.ms)
    };
    rows.push(PhaseRow {
        name: "process start to the end of the first timed launch".into(),
        values: runs
            .iter()
            .map(|rs| fmt(median(rs.iter().filter_map(until_first).collect())))
            .collect(),
        total: true,
    });
    rows.push(PhaseRow {
        name: "first timed launch, as the cell's timer reads it".into(),
        values: cells
            .iter()
            .zip(runs)
            .map(|(c, rs)| {
                median(rs.iter().filter_map(|r| r.first_ns).collect()).map_or("–".into(), |ns| {
                    format!("{} ({})", format::time(ns, Unit::Ms), c.knobs.timer.key())
                })
            })
            .collect(),
        total: true,
    });
    if cells.iter().any(|c| c.knobs.samples_per_run() > 0) {
        rows.push(PhaseRow {
            name: "steady state after it (median sample)".into(),
            values: cells
                .iter()
                .map(|c| {
                    steady_median_ns(c.index).map_or("–".into(), |ns| format::time(ns, Unit::Ms))
                })
                .collect(),
            total: true,
        });
    }
    rows
}

/// A process's phases up to and including its first timed launch, and those after it.
fn split(phases: &[Span]) -> (&[Span], &[Span]) {
    let end = phases
        .iter()
        .position(|p| p.name == FIRST_TIMED_LAUNCH)
        .map_or(phases.len(), |i| i + 1);
    phases.split_at(end)
}

/// Every phase name in the order processes run them: a name first seen in one process
/// goes right after the phase that preceded it there.
fn phase_order<'a>(lists: impl Iterator<Item = &'a [Span]>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for list in lists {
        let mut at = 0;
        for p in list {
            match names.iter().position(|n| *n == p.name) {
                Some(i) => at = i + 1,
                None => {
                    names.insert(at, p.name.clone());
                    at += 1;
                }
            }
        }
    }
    names
}

fn file_label(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if s.is_empty() {
        "all".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phases(names: &[&str]) -> Vec<Span> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| Span {
                name: n.to_string(),
                start_ms: i as f64,
                ms: 1.0,
            })
            .collect()
    }

    #[test]
    fn phases_merge_in_the_order_processes_run_them() {
        let cubin = phases(&[
            "process start",
            "context",
            "module load",
            "first timed launch",
        ]);
        let empty = phases(&[
            "process start",
            "context",
            "module load",
            "module load (empty kernel)",
            "warm-up",
            "first timed launch",
        ]);
        let order = phase_order([cubin.as_slice(), empty.as_slice()].into_iter());
        assert_eq!(
            order,
            [
                "process start",
                "context",
                "module load",
                "module load (empty kernel)",
                "warm-up",
                "first timed launch"
            ]
        );
    }

    #[test]
    fn a_phase_before_the_first_timed_launch_is_told_from_one_after_it() {
        let no_warmup = phases(&["set-up", "first timed launch", "output check"]);
        let warmup = phases(&[
            "set-up",
            "checked launch",
            "output check",
            "warm-up",
            "first timed launch",
        ]);
        let (b, a) = split(&warmup);
        assert_eq!(b.len(), 5);
        assert!(a.is_empty());
        let lists = [no_warmup.as_slice(), warmup.as_slice()];
        let before = phase_order(lists.iter().map(|l| split(l).0));
        let after = phase_order(lists.iter().map(|l| split(l).1));
        assert_eq!(
            before,
            [
                "set-up",
                "checked launch",
                "output check",
                "warm-up",
                "first timed launch"
            ]
        );
        assert_eq!(after, ["output check"]);
    }

    #[test]
    fn plot_names_are_file_safe() {
        assert_eq!(file_label("m=1, n=2"), "m-1--n-2");
        assert_eq!(file_label("n=1024"), "n-1024");
        assert_eq!(file_label(""), "all");
    }
}
