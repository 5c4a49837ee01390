//! SM cycles as the analysis counts them: the clock each run's cycles are counted at (Nsight
//! Compute's reading of the timed launches where it profiled them, else the probes' around
//! the run), each probed cell's mean clock, and whether a kernel's time follows the clock
//! across its runs (a compute-bound kernel's does; a memory-bound one's does not).

use super::reduce::Reduced;
use crate::store::Stored;
use serde::Serialize;
use std::collections::HashMap;

/// A cell's clock must move by this much across its runs to say anything about how its
/// time answers the clock: 0.2%; this H100's 1980 to ~1994 MHz step is 0.7%.
const MIN_SPREAD: f64 = 0.002;
/// A kernel follows the clock when its time answers at least half of a clock change
/// (time ∝ clock^slope, slope ≤ -0.5) and the slope's 95% interval excludes 0.
const FOLLOWS_SLOPE: f64 = -0.5;
/// A kernel's response is told from this many cells whose clock moved, or not at all.
const MIN_CELLS: usize = 5;
/// The least scatter a cell's runs are credited with: 0.02% of its time.
const MIN_SCATTER: f64 = 2e-4;

/// How a kernel's time answers the SM clock, pooled over its cells whose clock moved: the
/// least-squares slope of ln(time) on ln(clock) across runs, each cell's own means taken out.
/// -1: time in proportion to 1/clock (compute-bound); 0: the clock does not matter.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Response {
    pub slope: f64,
    /// Half the 95% interval of the slope (two standard errors).
    pub half_width: f64,
    pub runs: usize,
    pub cells: usize,
}

impl Response {
    /// Whether the kernel's time follows the clock: compare its runs in SM cycles.
    pub fn follows(&self) -> bool {
        self.slope <= FOLLOWS_SLOPE && self.slope + self.half_width < 0.0
    }

    /// Pooled over `cells`, each the (time, clock) of its runs; `None` with too few runs to
    /// estimate a slope and its error.
    pub fn fit(cells: &[Vec<(f64, f64)>]) -> Option<Response> {
        let moved: Vec<&Vec<(f64, f64)>> = (cells.iter())
            .filter(|runs| {
                let clocks = runs.iter().map(|r| r.1);
                let lo = clocks.clone().fold(f64::MAX, f64::min);
                runs.len() >= 2 && clocks.fold(0.0, f64::max) >= lo * (1.0 + MIN_SPREAD)
            })
            .collect();
        // Each cell's runs as deviations from the cell's own means of ln(clock), ln(time).
        let cells: Vec<Vec<(f64, f64)>> = (moved.iter())
            .map(|runs| {
                let logs: Vec<(f64, f64)> = runs.iter().map(|(t, c)| (c.ln(), t.ln())).collect();
                let n = logs.len() as f64;
                let (mx, my) =
                    (logs.iter()).fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
                logs.iter().map(|(x, y)| (x - mx, y - my)).collect()
            })
            .collect();
        let runs: usize = cells.iter().map(Vec::len).sum();
        // One mean per cell and the slope are fitted.
        let freedom = runs.checked_sub(cells.len() + 1)?;
        if cells.len() < MIN_CELLS || freedom < 3 {
            return None;
        }
        // Weighted least squares: a cell weighs by the inverse of its scatter about the
        // first, unweighted fit (a 20 µs cell read by events scatters by percents, a
        // milliseconds one by hundredths of one), floored so no cell's luck decides alone.
        let fit = |weights: &[f64]| {
            let (mut sxx, mut sxy) = (0.0, 0.0);
            for (cell, w) in cells.iter().zip(weights) {
                sxx += w * cell.iter().map(|(x, _)| x * x).sum::<f64>();
                sxy += w * cell.iter().map(|(x, y)| x * y).sum::<f64>();
            }
            (sxy / sxx, sxx)
        };
        let (first, _) = fit(&vec![1.0; cells.len()]);
        let scatter = |cell: &Vec<(f64, f64)>, slope: f64| {
            let ss: f64 = cell.iter().map(|(x, y)| (y - slope * x).powi(2)).sum();
            (ss / (cell.len() - 1) as f64).max(MIN_SCATTER * MIN_SCATTER)
        };
        let weights: Vec<f64> = cells.iter().map(|c| 1.0 / scatter(c, first)).collect();
        let (slope, sxx) = fit(&weights);
        // The weighted residuals' variance (1 where the scatters were right) scales the error.
        let chi2: f64 = (cells.iter().zip(&weights))
            .map(|(c, w)| w * c.iter().map(|(x, y)| (y - slope * x).powi(2)).sum::<f64>())
            .sum();
        Some(Response {
            slope,
            half_width: 2.0 * (chi2 / freedom as f64 / sxx).sqrt(),
            runs,
            cells: cells.len(),
        })
    }
}

/// The SM clock a run's cycles are counted at: Nsight Compute's reading of the timed
/// launches themselves where it profiled them (the probe was profiled too), else the
/// probes' around the run.
pub fn counting_clock(r: &crate::protocol::CellRecord) -> Option<f64> {
    r.profiler_sm_mhz.or_else(|| r.probed_mhz())
}

/// Each probed cell's runs as (time, the clock its cycles are counted at), by cell index.
/// A run's time is the median of its headline values, as comparisons take them.
fn probed_runs(run: &Stored, reduced: &Reduced) -> HashMap<usize, Vec<(f64, f64)>> {
    let mut out: HashMap<usize, Vec<(f64, f64)>> = HashMap::new();
    for r in &run.records {
        let time = reduced.run_medians.get(&(r.cell, r.process));
        if let (Some(&t), Some(mhz)) = (time, counting_clock(r)) {
            out.entry(r.cell).or_default().push((t, mhz));
        }
    }
    out
}

/// Each kernel's response to the SM clock, pooled over the probed cells of `runs` (a cell
/// of each run counts apart: their clocks and times are not one series).
pub fn responses(runs: &[(&Stored, &Reduced)]) -> HashMap<String, Response> {
    let mut by_kernel: HashMap<String, Vec<Vec<(f64, f64)>>> = HashMap::new();
    for &(run, reduced) in runs {
        let mut probed = probed_runs(run, reduced);
        for c in &run.plan.cells {
            if let Some(rs) = probed.remove(&c.index) {
                by_kernel.entry(c.kernel_name.clone()).or_default().push(rs);
            }
        }
    }
    (by_kernel.into_iter())
        .filter_map(|(k, cells)| Some((k, Response::fit(&cells)?)))
        .collect()
}

/// Each probed cell's mean clock, as its cycles are counted, by cell id.
pub fn cell_mhz(run: &Stored, reduced: &Reduced) -> HashMap<String, f64> {
    let probed = probed_runs(run, reduced);
    (run.plan.cells.iter())
        .filter_map(|c| {
            let rs = probed.get(&c.index)?;
            Some((
                c.id.clone(),
                rs.iter().map(|r| r.1).sum::<f64>() / rs.len() as f64,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of a cell around `time` whose time answers the clock with `slope`, plus noise.
    fn cell(time: f64, slope: f64, noise: &[f64]) -> Vec<(f64, f64)> {
        let clocks = [1980.0, 1994.0, 1980.0, 1994.0, 1987.0];
        (clocks.iter().zip(noise))
            .map(|(c, e)| (time * (c / 1980.0f64).powf(slope) * (1.0 + e), *c))
            .collect()
    }

    #[test]
    fn a_compute_bound_kernel_follows_and_a_memory_bound_one_does_not() {
        let noise = [0.0005, -0.0003, -0.0004, 0.0002, 0.0];
        let sizes = [20.0, 100.0, 500.0, 5000.0, 20000.0];
        let compute: Vec<_> = sizes.iter().map(|t| cell(*t, -1.0, &noise)).collect();
        let r = Response::fit(&compute).unwrap();
        assert!((r.slope + 1.0).abs() < 0.1 && r.follows(), "{r:?}");
        assert_eq!((r.runs, r.cells), (25, 5));
        assert!(
            Response::fit(&compute[..4]).is_none(),
            "too few cells to tell"
        );
        let memory: Vec<_> = sizes.iter().map(|t| cell(*t, 0.0, &noise)).collect();
        let r = Response::fit(&memory).unwrap();
        assert!(r.slope.abs() < 0.2 && !r.follows(), "{r:?}");
    }

    #[test]
    fn a_profiled_run_counts_cycles_at_the_profilers_clock_not_the_probes() {
        let mut r = crate::protocol::CellRecord {
            probe_mhz: Some((1980.0, 1990.0)),
            ..Default::default()
        };
        assert_eq!(counting_clock(&r), Some(1985.0));
        r.profiler_sm_mhz = Some(1967.5);
        assert_eq!(counting_clock(&r), Some(1967.5));
    }

    #[test]
    fn a_clock_that_did_not_move_says_nothing() {
        let still: Vec<(f64, f64)> = (0..5).map(|i| (10.0 + i as f64, 1980.0)).collect();
        assert!(Response::fit(&vec![still; 6]).is_none());
    }
}
