//! The gaps on the GPU before a run's regions (CUPTI's records): whether a kernel that reads
//! the global timer could tell a region whose stage drew from a pause.

use crate::protocol::CellRecord;
use crate::statistics::{median, two_sample_ks};

/// The gaps before a run's regions, where CUPTI gave them.
#[derive(Debug, Clone, PartialEq)]
pub struct GapTest {
    /// Regions whose stage drew (audited and decoys), and pauses.
    pub staged: usize,
    pub pauses: usize,
    /// Their median gaps, and the timed launches' (the median of the cells' medians), ns.
    pub staged_median: f64,
    pub pause_median: f64,
    pub timed_median: f64,
    /// The two-sample Kolmogorov-Smirnov statistic over the gaps, each as a share of its
    /// cell's median region gap (cells pause for different times), and its p-value.
    pub ks: f64,
    pub p: f64,
}

/// The run's gap test over every cell whose records hold gaps.
pub fn gaps(records: &[&CellRecord]) -> Option<GapTest> {
    let (mut staged, mut pauses, mut raw, mut timed) = (vec![], vec![], [vec![], vec![]], vec![]);
    let mut cells: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    cells.sort_unstable();
    cells.dedup();
    for id in cells {
        let of_cell = (records.iter()).filter(|r| r.id == id);
        let gaps: Vec<_> =
            (of_cell.filter_map(|r| r.audit.as_ref()?.among.as_ref()?.gaps.as_ref())).collect();
        let all: Vec<f64> = gaps
            .iter()
            .flat_map(|g| [&g.staged[..], &g.pauses[..]].concat())
            .collect();
        let Some(centre) = median(all).filter(|c| *c > 0.0) else {
            continue;
        };
        for g in &gaps {
            staged.extend(g.staged.iter().map(|x| x / centre));
            pauses.extend(g.pauses.iter().map(|x| x / centre));
            raw[0].extend(&g.staged);
            raw[1].extend(&g.pauses);
            timed.push(g.timed_median);
        }
    }
    let (ks, p) = two_sample_ks(&staged, &pauses)?;
    Some(GapTest {
        staged: staged.len(),
        pauses: pauses.len(),
        staged_median: median(raw[0].clone())?,
        pause_median: median(raw[1].clone())?,
        timed_median: median(timed)?,
        ks,
        p,
    })
}
