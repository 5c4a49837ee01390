//! The 95% interval of each ratio of two cells' medians the report plots over the sweep: a
//! kernel against its baseline (`[report] kernels`) and a variant against another (`[report]
//! differences`) at each point. Each cell is taken as its units (its runs, or blocks of its
//! samples) and seeded as the findings take and seed a speed-up's, so the plot's band at the
//! finding's cell holds the interval the finding states.

use super::facts::Facts;
use super::units::seed_of;
use crate::plan::{point_id, Cell};
use crate::statistics::ratio_interval;
use std::collections::HashMap;

/// Intervals of `median(of) / median(over)`, by the cells' indices (over, of).
#[derive(Debug, Default)]
pub struct Ratios(HashMap<(usize, usize), (f64, f64)>);

impl Ratios {
    /// The interval of `median(of) / median(over)` for the cells of these indices, where both
    /// have units and the report compares them.
    pub fn interval(&self, over: usize, of: usize) -> Option<(f64, f64)> {
        self.0.get(&(over, of)).copied()
    }
}

/// The intervals of every comparison and difference the experiment asks for, at each point
/// and variant where both cells have units.
pub fn of(a: &Facts) -> Ratios {
    let exp = &a.run.experiment;
    let plan = &a.run.plan;
    let units = |c: &Cell| {
        let u = &a.reduced.units.get(&c.index)?.values;
        (!u.is_empty()).then_some(u.as_slice())
    };
    let mut out = HashMap::new();
    let mut add = |over: Option<&Cell>, of: Option<&Cell>, seed: String| {
        let (Some(over), Some(of)) = (over, of) else {
            return;
        };
        if let (Some(uo), Some(uf)) = (units(over), units(of)) {
            out.insert(
                (over.index, of.index),
                ratio_interval(uo, uf, seed_of(&seed)),
            );
        }
    };
    let index = |name: &str| exp.kernels.iter().position(|k| k.name == name);
    for (kernel, baseline) in &exp.report.kernels {
        let (Some(k), Some(b)) = (index(kernel), index(baseline)) else {
            continue;
        };
        let kb = &exp.kernels[b];
        for p in &exp.kernels[k].points {
            // The baseline's point at the kernel's, as the findings take it.
            let Some(q) = kb.point_for(p).map(|i| &kb.points[i]) else {
                continue;
            };
            for v in exp.variants.iter().map(|v| v.name.as_str()) {
                let seed = format!("{kernel}/{}/{v} {baseline}", point_id(p));
                add(plan.cell_at(k, p, v), plan.cell_at(b, q, v), seed);
            }
        }
    }
    for (k, kernel) in exp.timed_kernels() {
        for p in &kernel.points {
            for (v, base) in &exp.report.differences {
                let seed = format!("{}/{}/{v} vs {base}", kernel.name, point_id(p));
                add(plan.cell_at(k, p, base), plan.cell_at(k, p, v), seed);
            }
        }
    }
    Ratios(out)
}
