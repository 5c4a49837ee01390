//! The normal distribution: its tails (the Mann-Whitney test's p-value, the audit's bound for
//! one region among several), and spreads as its sigma (from quartiles, or from deviations that
//! outliers do not widen).

use super::order::median;

/// The chance that a standard normal lies more than `z` from 0, either side.
pub fn two_sided_tail(z: f64) -> f64 {
    libm::erfc(z / std::f64::consts::SQRT_2)
}

/// The standard normal's quantile with `p` above it, by bisection on its tail.
pub fn upper_quantile(p: f64) -> f64 {
    let tail = |z: f64| 0.5 * two_sided_tail(z);
    let (mut lo, mut hi) = (0.0, 40.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        match tail(mid) > p {
            true => lo = mid,
            false => hi = mid,
        }
    }
    0.5 * (lo + hi)
}

/// A normal's sigma from its interquartile range: its quartiles lie 0.6745 sigma either side
/// of its median.
pub fn iqr_sigma(iqr: f64) -> f64 {
    iqr / 1.349
}

/// A spread as a normal's sigma that a few outliers cannot widen (so a kernel cannot widen
/// it in its favour): the median absolute deviation of `group` from its median times 1.4826;
/// 0 for fewer than two.
pub fn mad_sigma(group: &[f64]) -> f64 {
    if group.len() < 2 {
        return 0.0;
    }
    let centre = median(group.to_vec()).unwrap_or_default();
    let deviations = group.iter().map(|x| (x - centre).abs()).collect();
    median(deviations).map_or(0.0, |mad| 1.4826 * mad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_inverts_the_tail_and_the_spreads_are_a_normals_sigma() {
        assert!((upper_quantile(1e-3) - 3.090).abs() < 1e-3);
        assert!((upper_quantile(5e-4) - 3.290).abs() < 1e-3);
        assert!((upper_quantile(0.5)).abs() < 1e-9);
        assert!((two_sided_tail(1.959964) - 0.05).abs() < 1e-6);
        // The quartiles of a normal of sigma 2 lie 1.349 apart.
        assert!((iqr_sigma(2.0 * 1.349) - 2.0).abs() < 1e-12);
        // Deviations 1.5, 0.5, 0.5 and 98.5 from the median 2.5: their median 1, whatever the
        // outlier.
        assert_eq!(mad_sigma(&[1.0, 2.0, 3.0, 101.0]), 1.4826);
        assert_eq!(mad_sigma(&[5.0]), 0.0);
    }
}
