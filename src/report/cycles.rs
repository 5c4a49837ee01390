//! SM cycles: where the clock probe ran, each cell's median also as SM cycles (its time x
//! the probed effective SM clock), and whether its time follows the clock across its runs
//! (a compute-bound kernel does; a memory-bound one does not): for those, cycles are the
//! number that repeats from run to run on a GPU whose clock wanders.

use super::cells::probe_of;
use crate::analysis::{median, Analysis};
use crate::experiment::point_label;
use serde::Serialize;

/// A cell's time follows the clock when, over at least [`MIN_RUNS`] runs whose probed clocks
/// spread by [`MIN_SPREAD`] or more, time and clock correlate at least this negatively (a
/// faster clock, a shorter time): with 5 runs, a one-sided 5% test of no correlation.
const FOLLOWS: f64 = -0.805;
const MIN_RUNS: usize = 5;
/// The clock must move for time to follow it: 0.2%, the 1980 to 1994 MHz step is 0.7%.
const MIN_SPREAD: f64 = 0.002;

#[derive(Serialize)]
pub struct CyclesTable {
    pub kernel: String,
    pub parameters: String,
    pub columns: Vec<String>,
    pub rows: Vec<CyclesRow>,
    /// How many cells follow the clock, of how many could be tested.
    pub follows: (usize, usize),
}

#[derive(Serialize)]
pub struct CyclesRow {
    pub point: String,
    pub values: Vec<String>,
}

/// Pearson's correlation of (time, clock) over a cell's runs; None where it cannot say
/// whether time follows the clock: fewer than [`MIN_RUNS`] runs, or a clock that hardly
/// moved.
fn correlation(pairs: &[(f64, f64)]) -> Option<f64> {
    let n = pairs.len() as f64;
    let clocks = pairs.iter().map(|p| p.1);
    let (lo, hi) = (
        clocks.clone().fold(f64::MAX, f64::min),
        clocks.fold(0.0, f64::max),
    );
    if pairs.len() < MIN_RUNS || hi < lo * (1.0 + MIN_SPREAD) {
        return None;
    }
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// One table per kernel whose cells were probed.
pub fn build(a: &Analysis) -> Vec<CyclesTable> {
    let exp = &a.run.experiment;
    let mut tables = Vec::new();
    for (k, kernel) in exp.kernels.iter().enumerate() {
        let mut follows = (0, 0);
        let mut any = false;
        let rows = kernel
            .points
            .iter()
            .map(|p| CyclesRow {
                point: point_label(p),
                values: exp
                    .variants
                    .iter()
                    .map(|v| {
                        let Some(c) = a.cell_at(k, p, &v.name) else {
                            return "–".into();
                        };
                        let records = a.records.get(&c.index).map_or(&[][..], Vec::as_slice);
                        let probes: Vec<f64> = records.iter().filter_map(|r| probe_of(r)).collect();
                        let (Some(ns), false) = (a.median_at(k, p, &v.name), probes.is_empty())
                        else {
                            return "–".into();
                        };
                        any = true;
                        let mhz = probes.iter().sum::<f64>() / probes.len() as f64;
                        let pairs: Vec<(f64, f64)> = records
                            .iter()
                            .filter_map(|r| {
                                let own = median(a.run.with_samples(r).samples_ns)?;
                                Some((own, probe_of(r)?))
                            })
                            .collect();
                        let r = correlation(&pairs);
                        if let Some(r) = r {
                            follows.1 += 1;
                            follows.0 += usize::from(r <= FOLLOWS);
                        }
                        let cycles = ns * mhz / 1e3;
                        match r {
                            Some(r) if r <= FOLLOWS => format!("{cycles:.0} † (r = {r:.2})"),
                            _ => format!("{cycles:.0}"),
                        }
                    })
                    .collect(),
            })
            .collect();
        if any {
            tables.push(CyclesTable {
                kernel: kernel.name.clone(),
                parameters: exp.parameter_names(k),
                columns: exp.variants.iter().map(|v| v.name.clone()).collect(),
                rows,
                follows,
            });
        }
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_that_shrinks_as_the_clock_rises_correlates_negatively() {
        let follows = [
            (10.0, 1980.0),
            (10.1, 1960.0),
            (9.9, 2000.0),
            (10.2, 1940.0),
            (9.95, 1994.0),
        ];
        assert!(correlation(&follows).unwrap() < -0.99);
        assert_eq!(correlation(&follows[..4]), None, "too few runs");
        let steady: Vec<(f64, f64)> = (0..5)
            .map(|i| (10.0 + i as f64, 1980.0 + 0.5 * i as f64))
            .collect();
        assert_eq!(
            correlation(&steady),
            None,
            "a clock within 0.2% says nothing"
        );
    }
}
