//! The gaps on the GPU before a run's regions (CUPTI's records): whether a kernel that reads
//! the global timer could tell a region whose stage drew from a pause.

use crate::median::median;
use crate::protocol::CellRecord;

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

/// The two-sample Kolmogorov-Smirnov statistic D of `a` and `b`, and its asymptotic
/// p-value (Stephens' correction for small samples); None where either is empty.
fn two_sample_ks(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let sorted = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v
    };
    let (a, b) = (sorted(a), sorted(b));
    let (n, m) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / n - j as f64 / m).abs());
    }
    let ne = (n * m / (n + m)).sqrt();
    let lambda = (ne + 0.12 + 0.11 / ne) * d;
    let p = (1..=100)
        .map(|k| {
            let k = k as f64;
            let sign = if k as u64 % 2 == 1 { 2.0 } else { -2.0 };
            sign * (-2.0 * k * k * lambda * lambda).exp()
        })
        .sum::<f64>()
        .clamp(0.0, 1.0);
    Some((d, if d == 0.0 { 1.0 } else { p }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_before_staged_regions_and_pauses_are_compared_as_distributions() {
        let (d, p) = two_sample_ks(&[1.0, 2.0, 3.0, 4.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!((d, p), (0.0, 1.0));
        let a: Vec<f64> = (0..50).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..50).map(|i| 100.0 + i as f64).collect();
        let (d, p) = two_sample_ks(&a, &b).unwrap();
        assert_eq!(d, 1.0);
        assert!(p < 1e-10, "{p}");
        // Interleaved draws of one distribution: no evidence.
        let a: Vec<f64> = (0..50).map(|i| (2 * i) as f64).collect();
        let b: Vec<f64> = (0..50).map(|i| (2 * i + 1) as f64).collect();
        assert!(two_sample_ks(&a, &b).unwrap().1 > 0.9);
    }
}
