//! Where a cell's timed launches split into two behaviors launch to launch: its median reads
//! one of them, and its spread, which every audit test and the detection limit take, holds
//! both. A kernel that does all its work in some launches only, at random, reads so; so does
//! an honest one of two speeds (`incore`'s divides alternate between two times 8 µs apart),
//! and with a few regions no timing test tells the two apart.

use super::finding::{Finding, NamedCell, Split};
use crate::analysis::audits::CellAudits;
use crate::analysis::facts::Facts;
use crate::analysis::phase::Phase;
use crate::analysis::stats::Stats;
use crate::plan::Cell;
use crate::protocol::splits_in_two;

/// Whether `steady` splits in two (`protocol::splits_in_two`).
pub fn splits(steady: &Stats) -> bool {
    let s = steady;
    splits_in_two(s.median, s.iqr, s.shortest_half, s.step_p75)
}

/// Of the `trusted` cells with steady samples, those that split in two, the one whose range
/// is the largest share of its median named, with its detection limit where it was audited.
pub fn split(a: &Facts, audits: &[CellAudits], trusted: &[&Cell]) -> Option<Finding> {
    let steady: Vec<(&Cell, Stats)> = (trusted.iter())
        .filter_map(|c| Some((*c, a.reduced.stats.get(c.index, Phase::Steady)?)))
        .filter(|(_, s)| s.count >= 2)
        .collect();
    let split: Vec<&(&Cell, Stats)> = steady.iter().filter(|(_, s)| splits(s)).collect();
    let share = |s: &Stats| s.iqr / s.median;
    let (widest, s) = split
        .iter()
        .max_by(|x, y| share(&x.1).total_cmp(&share(&y.1)))?;
    let limit = (audits.iter().find(|a| a.cell == widest.index))
        .and_then(|a| a.judgement.as_ref())
        .map(|j| j.detection_limit)
        .filter(|l| l.is_finite());
    Some(Finding::Split(Split {
        cells: split.len(),
        of: steady.len(),
        widest: NamedCell::new(&widest.kernel_name, &widest.point, &widest.variant),
        median_ns: s.median,
        iqr_ns: s.iqr,
        half_ns: s.shortest_half,
        limit,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(iqr: f64, shortest_half: f64, step_p75: f64) -> Stats {
        Stats {
            count: 200,
            median: 110.5e3,
            iqr,
            shortest_half,
            step_p75,
            ..Default::default()
        }
    }

    #[test]
    fn two_speeds_interleaved_beyond_the_margin_split_a_stretch_or_a_normal_does_not() {
        // `tells-stage` interleaved on an H200: 107 launches that skipped, 93 that did not.
        assert!(splits(&stats(21.57e3, 0.5e3, 20.9e3)));
        // A normal: its shortest half is its range.
        assert!(!splits(&stats(1.2e3, 1.1e3, 1.4e3)));
        // A power cap's stretch: successive samples barely change.
        assert!(!splits(&stats(21.57e3, 0.5e3, 0.6e3)));
        // Two speeds within the margin (2% of 110.5 µs): noise.
        assert!(!splits(&stats(1.8e3, 0.1e3, 1.8e3)));
    }
}
