//! A kernel's energy a launch against its baseline's (`[report] kernels`), where NVML's
//! counter read both cells' steady samples.

use super::finding::{EnergyRatio, Finding, NamedCell, Trusted};
use crate::experiment::Point;
use crate::protocol::Energy;

/// The most a reading may be off by for a finding to set two against each other: a loop of
/// a second or more (cells.md gives the shorter ones, with their share).
const MOST_UNCERTAIN: f64 = 0.1;

impl EnergyRatio {
    /// The baseline's joules a launch over the kernel's at the cell named.
    pub fn ratio(&self) -> f64 {
        self.theirs.joules_per_launch() / self.mine.joules_per_launch()
    }
}

/// One finding per `[report] kernels` pair with a trusted cell on both sides whose energy
/// was read, in the experiment's order.
pub fn ratios(t: &Trusted) -> Vec<Finding> {
    let exp = t.exp;
    let index = |name: &str| exp.kernels.iter().position(|k| k.name == name);
    let mut out = Vec::new();
    for (kernel, baseline) in &exp.report.kernels {
        let (Some(k), Some(b)) = (index(kernel), index(baseline)) else {
            continue;
        };
        let kb = &exp.kernels[b];
        let base = |p: &Point| kb.point_for(p).map(|i| &kb.points[i]);
        let read: Vec<(NamedCell, Energy, Energy)> = (t.cells(k).into_iter())
            .filter_map(|(p, v, _)| {
                let q = base(p)?;
                (t.median)(b, q, v)?;
                let (mine, theirs) = ((t.energy)(k, p, v)?, (t.energy)(b, q, v)?);
                let precise = |e: &Energy| e.uncertainty() <= MOST_UNCERTAIN;
                (precise(&mine) && precise(&theirs))
                    .then(|| (NamedCell::new(kernel, p, v), mine, theirs))
            })
            .collect();
        let ratio = |(_, mine, theirs): &(NamedCell, Energy, Energy)| {
            theirs.joules_per_launch() / mine.joules_per_launch()
        };
        let ratios: Vec<f64> = read.iter().map(ratio).collect();
        let strongest =
            (read.iter()).max_by(|x, y| ratio(x).ln().abs().total_cmp(&ratio(y).ln().abs()));
        let Some((at, mine, theirs)) = strongest.cloned() else {
            continue;
        };
        out.push(Finding::Energy(EnergyRatio {
            kernel: kernel.clone(),
            baseline: baseline.clone(),
            cells: read.len(),
            lowest: ratios.iter().copied().fold(f64::INFINITY, f64::min),
            highest: ratios.iter().copied().fold(0.0, f64::max),
            at,
            mine,
            theirs,
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{experiment, fake, with};
    use super::*;

    #[test]
    fn a_kernel_against_its_baseline_takes_the_energy_ratio_of_the_cells_read_on_both_sides() {
        let exp = experiment(
            "n = [1, 2]",
            &[("tiled", ""), ("naive", "")],
            &[("hot", "")],
            "kernels = [[\"tiled\", \"naive\"]]",
        );
        // At 400 W each launch's energy follows its time: 2x and 1.25x less for tiled.
        let f = fake(&[
            ("tiled/n=1/hot", 50.0),
            ("naive/n=1/hot", 100.0),
            ("tiled/n=2/hot", 160.0),
            ("naive/n=2/hot", 200.0),
        ]);
        let found = with(&exp, &f, ratios);
        let [Finding::Energy(e)] = &found[..] else {
            panic!("{found:?}");
        };
        assert_eq!((e.cells, e.at.point.as_str()), (2, "n=1"));
        assert!(
            (e.ratio() - 2.0).abs() < 1e-6 && (e.lowest - 1.25).abs() < 1e-6,
            "{e:?}"
        );
    }
}
