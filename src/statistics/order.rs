//! Order statistics: the median (the one statistic that the worker's methods, the parent and
//! the analysis all take), the lower median, the median's distribution-free 95% interval, and
//! a quantile by nearest rank.

/// The median of `values` (the mean of the middle two for an even count); `None` when
/// there are none.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    // The middle values found in place, not by sorting: the same values, in linear time.
    let n = values.len();
    let (below, &mut upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    Some(if n % 2 == 1 {
        upper
    } else {
        let lower = below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .expect("n >= 2");
        (lower + upper) / 2.0
    })
}

/// The lower median of `values` (of an even count, the smaller middle one: of two readings
/// one slow is no evidence alone); `None` when there are none. The audit's verdict judges a
/// group of regions by it, and the worker decides by it which regions to confirm.
pub fn lower_median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len().checked_sub(1)? / 2).copied()
}

/// The median of `values` and its 95% interval, distribution-free: the order statistics
/// whose ranks lie 1.96 standard deviations of a Binomial(n, 1/2) either side of n / 2 (a
/// median of 100 samples lies between the 40th and 61st with 95% confidence, whatever their
/// distribution). `None` for fewer than 6 values, where no such pair of ranks exists.
/// Reorders `values`.
pub fn median_interval(values: &mut [f64]) -> Option<(f64, f64, f64)> {
    let n = values.len();
    if n < 6 {
        return None;
    }
    let half = 1.96 * (n as f64).sqrt() / 2.0;
    // 0-based ranks of the bounds: below the middle and above it (half >= 2.4 for n >= 6).
    let lower = ((n as f64 / 2.0 - half).floor() as usize).saturating_sub(1);
    let upper = ((n as f64 / 2.0 + half).ceil() as usize).min(n - 1);
    // The middle found in place, then each bound within its side of it: no second copy.
    let (below, &mut upper_mid, above) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    let mid = match n % 2 {
        1 => upper_mid,
        _ => (below.iter().copied().fold(f64::NEG_INFINITY, f64::max) + upper_mid) / 2.0,
    };
    let (_, &mut lo, _) = below.select_nth_unstable_by(lower, f64::total_cmp);
    let (_, &mut hi, _) = above.select_nth_unstable_by(upper - n / 2 - 1, f64::total_cmp);
    Some((lo, mid, hi))
}

/// The `q` quantile of `sorted` (ascending) by nearest rank: one of the values, no
/// interpolation between them.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    sorted[nearest_rank_index(sorted.len(), q)]
}

/// The index [`nearest_rank`] reads among `n` sorted values (0 where there are none).
pub fn nearest_rank_index(n: usize, q: f64) -> usize {
    (n.saturating_sub(1) as f64 * q).round() as usize
}

/// The spread between the quartiles of `values` by nearest rank; 0 for none.
pub fn iqr(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.is_empty() {
        true => 0.0,
        false => nearest_rank(&sorted, 0.75) - nearest_rank(&sorted, 0.25),
    }
}

/// The width of the shortest interval holding half of `sorted` (ascending; its values
/// `ceil(n / 2)` apart by rank), but no narrower than the smallest step between two of its
/// values (the readings' resolution: an H200's timestamps fall 32 ns apart, and half a
/// cell's readings may be one value): for a normal, its interquartile range; for a mixture
/// of two behaviors, at most the wider one's spread, however far apart the two lie. NaN for
/// fewer than two values.
pub fn shortest_half(sorted: &[f64]) -> f64 {
    let half = sorted.len().div_ceil(2);
    if sorted.len() < 2 {
        return f64::NAN;
    }
    let steps = sorted.windows(2).map(|w| w[1] - w[0]).filter(|d| *d > 0.0);
    let resolution = steps.fold(f64::INFINITY, f64::min);
    let width = (sorted.windows(half).map(|w| w[half - 1] - w[0])).fold(f64::INFINITY, f64::min);
    match resolution.is_finite() {
        true => width.max(resolution),
        false => width,
    }
}

/// The upper quartile of the differences between successive readings of `in_order` (as they
/// were taken): a kernel that does all its work in some launches only, at random, changes
/// from one behavior to the other between a quarter or more of its successive launches; a
/// GPU whose clock a power cap held down for a stretch, at one place. NaN for fewer than two.
pub fn step_quartile(in_order: &[f64]) -> f64 {
    let mut steps: Vec<f64> = in_order.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    if steps.is_empty() {
        return f64::NAN;
    }
    steps.sort_unstable_by(f64::total_cmp);
    nearest_rank(&steps, 0.75)
}

/// How precise a median is: its 95% interval's (`median_interval`'s) wider side, as a
/// percentage of it. The stopping rule and the summaries judge by this one measure.
pub fn interval_pct((lo, mid, hi): (f64, f64, f64)) -> f64 {
    (mid - lo).max(hi - mid) / mid.abs() * 100.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shortest_half_is_a_mixtures_tighter_part_and_a_normals_range() {
        // 107 launches that skipped, about 108.5 µs, and 93 that did all the work, 129.7 µs.
        let mut mixed: Vec<f64> = (0..107).map(|i| 108_300.0 + 4.0 * i as f64).collect();
        mixed.extend((0..93).map(|i| 129_500.0 + 4.0 * i as f64));
        assert_eq!(super::shortest_half(&mixed), 4.0 * 99.0);
        let even: Vec<f64> = (0..8).map(f64::from).collect();
        assert_eq!(super::shortest_half(&even), 3.0);
        assert!(super::shortest_half(&[1.0]).is_nan());
        // Half of them one reading: no narrower than the readings' resolution.
        assert_eq!(
            super::shortest_half(&[64.0, 96.0, 96.0, 96.0, 128.0, 160.0]),
            32.0
        );
        assert_eq!(super::shortest_half(&[5.0, 5.0]), 0.0);
    }

    #[test]
    fn successive_readings_change_often_where_two_behaviors_interleave_not_where_one_stretch_differs(
    ) {
        let interleaved: Vec<f64> = (0..200).map(|i| [108.0, 130.0][(i * 7 / 3) % 2]).collect();
        assert_eq!(super::step_quartile(&interleaved), 22.0);
        let stretch: Vec<f64> = (0..200)
            .map(|i| if i < 140 { 315.0 } else { 336.0 })
            .collect();
        assert_eq!(super::step_quartile(&stretch), 0.0);
        assert!(super::step_quartile(&[1.0]).is_nan());
    }

    #[test]
    fn the_medians_interval_is_a_pair_of_order_statistics() {
        // 1..=100: ranks 40 and 60 (0-based 39 and 60), the values 40 and 61.
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(super::median_interval(&mut v), Some((40.0, 50.5, 61.0)));
        // Too few for a 95% pair.
        assert_eq!(super::median_interval(&mut [1.0, 2.0, 3.0, 4.0, 5.0]), None);
        // Six: the extremes.
        let mut six = [6.0, 1.0, 5.0, 2.0, 4.0, 3.0];
        assert_eq!(super::median_interval(&mut six), Some((1.0, 3.5, 6.0)));
        // It narrows as the samples come: 10,000 draws of one distribution.
        let mut wide: Vec<f64> = (0..100).map(|i| f64::from(i % 10)).collect();
        let mut narrow: Vec<f64> = (0..10_000)
            .map(|i| f64::from(i % 10) + 0.001 * f64::from(i % 7))
            .collect();
        let (a, _, b) = super::median_interval(&mut wide).unwrap();
        let (c, _, d) = super::median_interval(&mut narrow).unwrap();
        assert!(d - c < b - a, "{a}..{b} against {c}..{d}");
    }

    #[test]
    fn median_of_even_odd_and_empty_lists() {
        assert_eq!(super::median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(super::median(vec![]), None);
        assert_eq!(super::median(vec![5.0, -1.0]), Some(2.0));
        assert_eq!(super::median(vec![7.0]), Some(7.0));
    }

    #[test]
    fn a_nearest_rank_quantile_is_one_of_the_values() {
        let v: Vec<f64> = (0..=20).map(f64::from).collect();
        assert_eq!(super::nearest_rank(&v, 0.05), 1.0);
        assert_eq!(super::nearest_rank(&v, 0.975), 20.0);
        assert_eq!(super::nearest_rank(&[3.0], 0.5), 3.0);
    }
}
