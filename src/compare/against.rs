//! This run against an earlier one of the same experiment, as the report's comparison
//! table reads it: each cell's headline median in both, their difference in time and, where
//! both runs have a clock for the cell, in SM cycles, and whether the kernel's time follows
//! the SM clock (told from both runs together). The report words and judges it.

use crate::analysis::{cycles, Analysis};
use crate::plan::Cell;
use std::collections::HashMap;

/// A cell of this run that the earlier run has too.
pub struct CellAgainst<'a> {
    pub cell: &'a Cell,
    pub this_ns: f64,
    pub earlier_ns: f64,
    /// This run's median against the earlier one's, in percent.
    pub diff_pct: f64,
    /// The same in SM cycles, where both runs have a clock for the cell.
    pub cycles_diff_pct: Option<f64>,
    /// Whether its kernel's time follows the SM clock (then cycles are the number to judge).
    pub follows_clock: bool,
}

/// The cells both runs have, in this run's order, the kernels whose time follows the SM
/// clock, and every headline median of this run (by cell id).
pub struct Against<'a> {
    pub cells: Vec<CellAgainst<'a>>,
    pub followers: Vec<&'a str>,
    pub medians: HashMap<&'a str, f64>,
}

pub fn against<'a>(this: &'a Analysis, earlier: &Analysis) -> anyhow::Result<Against<'a>> {
    let matched = super::join::by_cell(earlier, this)?;
    let responses =
        cycles::responses(&[(this.run, &this.reduced), (earlier.run, &earlier.reduced)]);
    let follows = |k: &str| responses.get(k).is_some_and(cycles::Response::follows);
    let (clock_now, clock_before) = (&this.cell_mhz, &earlier.cell_mhz);
    let median = |run: &Analysis, index: usize| run.reduced.units.get(&index).map(|u| u.median);
    let cells = (matched.both.iter())
        .filter_map(|&(before, now)| {
            let c = &this.run.plan.cells[now];
            let (a, b) = (median(this, now)?, median(earlier, before)?);
            let clocks = (clock_now.get(&c.id)).zip(clock_before.get(&c.id));
            Some(CellAgainst {
                cell: c,
                this_ns: a,
                earlier_ns: b,
                diff_pct: (a - b) / b * 100.0,
                cycles_diff_pct: clocks.map(|(x, y)| (a * x - b * y) / (b * y) * 100.0),
                follows_clock: follows(&c.kernel_name),
            })
        })
        .collect();
    let followers = (this.run.experiment.kernels.iter())
        .map(|k| k.name.as_str())
        .filter(|k| follows(k))
        .collect();
    let medians = (this.run.plan.cells.iter())
        .filter_map(|c| Some((c.id.as_str(), median(this, c.index)?)))
        .collect();
    Ok(Against {
        cells,
        followers,
        medians,
    })
}
