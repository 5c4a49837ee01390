//! The pauses' ranks among the timed launches (`analysis::tells::ranked_high`), which the
//! worker also screens a run by once its timer's readings are in, to read more pauses where
//! the ranks land between two chances: one rule for both, so that the run reads again
//! exactly where the analysis will look.

use super::confirm::{margin_ns, KernelRecords, FALSE_ALARM};
use crate::statistics::{lower_median, rank_above_chance, Ranked};

/// Pauses whose ranks lie so high with a chance over [`FALSE_ALARM`] but at most this are
/// read again: [`RANKS_AGAIN_PAUSES`] more, by CUPTI among launches of their own
/// (`worker::audit::by_cupti::ranks_again`), each less the same margin and ranked among those
/// launches, and suspect where they lie so high with a chance of at most
/// [`RANKS_AGAIN_ALARM`]. Fresh readings each round: an honest cell gets through the first
/// at a hundredth and the second at a tenth, a thousandth together, beside the first's own
/// thousandth. At the thousandth alone, 8 cheat cells of the 201 stored runs at 118be7c lay
/// between the two (a third adversary's `quantile-smear` hot at 7.5e-3 and 9.5e-3, 23.6% and
/// 24.7% faster than the honest argmax, past that kernel's limits), where the 5 honest cells
/// that met the ranks' condition lay at 0.17-0.40.
pub const RANKS_SCREEN: f64 = 1e-2;
/// See [`RANKS_SCREEN`].
pub const RANKS_AGAIN_ALARM: f64 = 0.1;
/// See [`RANKS_SCREEN`]: as many as a hot cell of 200 samples holds once its spread is wide.
pub const RANKS_AGAIN_PAUSES: usize = 24;

/// A run's regions (pauses, or audited regions) and its timed samples to rank them among:
/// the regions as read, the samples sorted (all of them, or evenly spaced order statistics
/// of them), and how many samples the run took.
pub struct RunRanks<'a> {
    pub regions: &'a [f64],
    pub sorted: &'a [f64],
    pub count: usize,
}

/// What the ranks found: the chance readings alike lie so high, how many regions were
/// ranked, the mean share of their run's samples below them, and the margin each was less.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegionRanks {
    pub chance: f64,
    pub ranked: usize,
    pub mean_share: f64,
    pub margin_ns: f64,
}

/// Each run's pauses, each less the margin over the timed median `median_ns`, ranked among
/// their own run's timed samples (stratified over the runs: a run slower than the others
/// holds its own pauses), where the pauses and the `staged` regions, each less the margin,
/// both hold a lower median over `median_ns`: a kernel that works after any long gap is slow
/// after both, an honest one slowed by a GPU gone idle after a pause only. None where either
/// does not.
pub fn pauses_ranked(runs: &[RunRanks], staged: &[f64], median_ns: f64) -> Option<RegionRanks> {
    let staged_over = over(&less(staged, margin_ns(median_ns)), median_ns);
    staged_over.then(|| ranked_over(runs, median_ns)).flatten()
}

/// Each run's regions, each less the margin over the timed median `median_ns`, ranked
/// among their own run's timed samples (stratified over the runs), where they hold a lower
/// median over `median_ns`; None where they do not.
pub fn ranked_over(runs: &[RunRanks], median_ns: f64) -> Option<RegionRanks> {
    let margin = margin_ns(median_ns);
    let regions: Vec<f64> = runs.iter().flat_map(|r| less(r.regions, margin)).collect();
    over(&regions, median_ns).then(|| ranks(runs, margin))
}

/// Whether `of` holds a lower median over `median_ns`.
fn over(of: &[f64], median_ns: f64) -> bool {
    lower_median(of).is_some_and(|m| m > median_ns)
}

/// Pauses read again (`again`: each run's records of them and of the launches read beside
/// them), each less `margin_ns`, ranked among those launches: no condition, the first
/// round's having held.
pub fn ranked_again(again: &[&KernelRecords], margin_ns: f64) -> RegionRanks {
    let timed: Vec<Vec<f64>> = again.iter().map(|k| sorted_finite(&k.timed_ns)).collect();
    let runs: Vec<RunRanks> = (again.iter().zip(&timed))
        .map(|(k, sorted)| RunRanks {
            regions: &k.pauses_ns,
            sorted,
            count: sorted.len(),
        })
        .collect();
    ranks(&runs, margin_ns)
}

/// The finite readings of `of`, in order: a run's samples to rank among.
pub fn sorted_finite(of: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = of.iter().copied().filter(|t| t.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The finite readings of `of`, each less `margin_ns`.
fn less(of: &[f64], margin_ns: f64) -> Vec<f64> {
    (of.iter())
        .filter(|p| p.is_finite())
        .map(|p| p - margin_ns)
        .collect()
}

/// Whether a run's own ranks call for reading its pauses again (see [`RANKS_SCREEN`]).
pub fn ranks_read_again(ranks: Option<RegionRanks>) -> bool {
    ranks.is_some_and(|r| r.chance > FALSE_ALARM && r.chance <= RANKS_SCREEN)
}

/// Each run's regions, less `margin_ns`, ranked among its samples, the runs stratified.
fn ranks(runs: &[RunRanks], margin_ns: f64) -> RegionRanks {
    let regions: Vec<Vec<f64>> = runs.iter().map(|r| less(r.regions, margin_ns)).collect();
    let groups: Vec<Ranked> = (runs.iter().zip(&regions))
        .map(|(r, above)| Ranked {
            above,
            sorted: r.sorted,
            count: r.count,
        })
        .collect();
    let shares: Vec<f64> = (groups.iter())
        .flat_map(|g| g.above.iter().map(|&x| g.share_below(x)))
        .collect();
    RegionRanks {
        chance: rank_above_chance(&groups),
        ranked: shares.len(),
        mean_share: shares.iter().sum::<f64>() / shares.len().max(1) as f64,
        margin_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(n: usize, from: f64, step: f64) -> Vec<f64> {
        (0..n).map(|i| from + step * i as f64).collect()
    }

    #[test]
    fn pauses_high_among_their_run_are_ranked_only_where_both_kinds_read_over_the_median() {
        // 200 samples from 10 to 30 µs (median 20 µs, margin 0.5 µs).
        let timed = sorted(200, 10_000.0, 100.0);
        let run = |regions: &'static [f64]| RunRanks {
            regions,
            sorted: &timed,
            count: 200,
        };
        let high: &[f64] = &[27_000.0, 28_000.0, 29_000.0, 29_500.0, 26_000.0, 28_500.0];
        let staged = [29_000.0, 29_000.0];
        let ranks = pauses_ranked(&[run(high)], &staged, 20_000.0).unwrap();
        assert_eq!((ranks.ranked, ranks.margin_ns), (6, 500.0));
        assert!(ranks.mean_share > 0.8 && ranks.chance < 1e-2, "{ranks:?}");
        // Staged regions at the median: a GPU gone idle, no ranks.
        assert!(pauses_ranked(&[run(high)], &[20_000.0, 20_100.0], 20_000.0).is_none());
        // Pauses within the margin of the median: none either.
        let near: &[f64] = &[20_400.0, 20_300.0, 20_200.0];
        assert!(pauses_ranked(&[run(near)], &staged, 20_000.0).is_none());
    }

    #[test]
    fn a_run_reads_again_between_the_thousandth_and_the_screen_only() {
        let at = |chance: f64| {
            Some(RegionRanks {
                chance,
                ranked: 3,
                mean_share: 0.9,
                margin_ns: 500.0,
            })
        };
        assert!(ranks_read_again(at(5e-3)));
        assert!(ranks_read_again(at(RANKS_SCREEN)));
        assert!(!ranks_read_again(at(FALSE_ALARM)), "already suspect");
        assert!(!ranks_read_again(at(2e-2)));
        assert!(!ranks_read_again(None));
    }

    #[test]
    fn pauses_read_again_are_ranked_less_the_first_rounds_margin() {
        let timed = sorted(168, 10_000.0, 100.0);
        let pauses = [26_500.0; 24];
        let records = |pauses: &[f64]| KernelRecords {
            timed_ns: timed.clone(),
            pauses_ns: pauses.to_vec(),
            ..KernelRecords::default()
        };
        let again = ranked_again(&[&records(&pauses)], 500.0);
        // 26 µs sits at 160 of 168: every pause that high is far beyond a tenth's chance.
        assert_eq!(again.ranked, 24);
        assert!(again.chance < RANKS_AGAIN_ALARM && again.mean_share > 0.9);
        let low = [12_000.0; 24];
        let alike = ranked_again(&[&records(&low)], 500.0);
        assert!(alike.chance > RANKS_AGAIN_ALARM, "{alike:?}");
    }
}
