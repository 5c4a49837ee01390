//! A cell's headline values as independent units (its runs, or blocks of its samples) and
//! the bootstrap interval of a ratio of two cells' medians over those units: what a
//! comparison between runs (`compare`) and a speed-up between kernels (the findings) state.

use super::order::{median, nearest_rank};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::collections::BTreeMap;

/// Bootstrap resamples per interval: enough for stable 2.5% and 97.5% percentiles.
const RESAMPLES: usize = 2000;

/// The median; NaN for no values.
pub fn median_of(values: &[f64]) -> f64 {
    median(values.to_vec()).unwrap_or(f64::NAN)
}

/// One value per unit: the median of each run (round or process) where the cell has
/// several, else the medians of consecutive blocks of its samples (at least 3 per block,
/// at most 20 blocks), since neighbouring samples of one run are not independent; and what
/// a unit is.
pub fn unit_values(run_unit: &str, runs: BTreeMap<u32, Vec<f64>>) -> (String, Vec<f64>) {
    if runs.len() > 1 {
        let medians = runs.values().map(|v| median_of(v)).collect();
        return (run_unit.into(), medians);
    }
    let samples: Vec<f64> = runs.into_values().flatten().collect();
    let blocks = (samples.len() / 3).clamp(1, 20);
    // Exactly `blocks` near-equal blocks, every sample in one.
    let bound = |b: usize| b * samples.len() / blocks;
    let medians = (0..blocks)
        .map(|b| median_of(&samples[bound(b)..bound(b + 1)]))
        .collect();
    let size = samples.len() / blocks;
    (format!("block of {size}+ samples"), medians)
}

/// The 95% percentile-bootstrap interval of `median(new) / median(old)`, resampling each
/// side's units with replacement; `seed` makes a report re-render to the same bytes.
pub fn ratio_interval(old: &[f64], new: &[f64], seed: u64) -> (f64, f64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut draw = |units: &[f64], buf: &mut Vec<f64>| {
        buf.clear();
        buf.extend((0..units.len()).map(|_| units[rng.random_range(0..units.len())]));
        median_of(buf)
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| draw(new, &mut b) / draw(old, &mut a))
        .collect();
    ratios.sort_by(f64::total_cmp);
    (nearest_rank(&ratios, 0.025), nearest_rank(&ratios, 0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_holds_the_true_ratio_and_excludes_one_for_a_real_change() {
        let old: Vec<f64> = (0..30).map(|i| 100.0 + (i % 7) as f64).collect();
        let new: Vec<f64> = old.iter().map(|x| x * 1.1).collect();
        let (lo, hi) = ratio_interval(&old, &new, 7);
        assert!(lo <= 1.1 && 1.1 <= hi && lo > 1.0, "[{lo}, {hi}]");
        let (lo, hi) = ratio_interval(&old, &old, 7);
        assert!(lo <= 1.0 && 1.0 <= hi, "[{lo}, {hi}]");
        assert_eq!(ratio_interval(&old, &new, 7), ratio_interval(&old, &new, 7));
    }
}
