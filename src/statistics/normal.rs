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

/// How many sigmas below the mean the lower median of `k` normal readings (the `(k + 1) / 2`-th
/// smallest: of two, the smaller) falls with a chance of `p`: found exactly, as the chance
/// that at least that many of the `k` fall below, a Binomial's tail. Of one reading 1.96 at
/// p = 0.025; of two 2.24, where a normal approximation of the median's error says 1.74.
pub fn lower_median_shortfall(k: usize, p: f64) -> f64 {
    let k = k.max(1);
    let rank = k.div_ceil(2);
    // ln(i!) for i up to k, once: each chance below is then k terms.
    let ln_factorial: Vec<f64> = std::iter::once(0.0)
        .chain((1..=k).scan(0.0, |sum, i| {
            *sum += (i as f64).ln();
            Some(*sum)
        }))
        .collect();
    let ln_choose = |i: usize| ln_factorial[k] - ln_factorial[i] - ln_factorial[k - i];
    // The chance that at least `rank` of `k` fall below a point each falls below with `q`.
    let at_least = |q: f64| -> f64 {
        (rank..=k)
            .map(|i| (ln_choose(i) + i as f64 * q.ln() + (k - i) as f64 * (1.0 - q).ln()).exp())
            .sum()
    };
    let (mut lo, mut hi) = (0.0, 0.5);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        match at_least(mid) > p {
            true => hi = mid,
            false => lo = mid,
        }
    }
    upper_quantile(0.5 * (lo + hi))
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

    #[test]
    fn a_lower_median_falls_short_as_its_order_statistic_does() {
        assert!((lower_median_shortfall(1, 0.025) - 1.960).abs() < 1e-3);
        // The smaller of two falls below -z with 1 - (1 - q)^2.
        let q = 1.0 - (1.0_f64 - 0.025).sqrt();
        assert!((lower_median_shortfall(2, 0.025) - upper_quantile(q)).abs() < 1e-6);
        // Of many, the median's normal error: 1.96 sqrt(pi / 2k) sigma.
        let k = 2001;
        let normal = 1.96 * (std::f64::consts::FRAC_PI_2 / k as f64).sqrt();
        assert!((lower_median_shortfall(k, 0.025) / normal - 1.0).abs() < 0.02);
    }
}
