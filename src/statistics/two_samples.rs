//! Whether two groups of values come from one distribution: the Mann-Whitney U test of a
//! comparison over independent units (one value per unit; the bootstrap interval beside it is
//! `units.rs`), the two-sample Kolmogorov-Smirnov test of the gaps before an audit's regions,
//! and the chance of a split of readings beyond a bound, which the audit's tests judge by.

use super::normal::two_sided_tail;

/// The two-sided p-value of the Mann-Whitney U test (normal approximation with the tie
/// correction and a continuity correction): how likely samples as far apart are when both
/// sides come from one distribution.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Ranks, ties sharing their mean rank.
    let (mut rank_sum_a, mut tie_term, mut i) = (0.0, 0.0, 0);
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let tied = (j - i + 1) as f64;
        tie_term += tied * tied * tied - tied;
        rank_sum_a += rank * all[i..=j].iter().filter(|x| x.1).count() as f64;
        i = j + 1;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if variance <= 0.0 {
        return 1.0;
    }
    let z = ((u - n1 * n2 / 2.0).abs() - 0.5).max(0.0) / variance.sqrt();
    two_sided_tail(z).min(1.0)
}

/// The two-sample Kolmogorov-Smirnov statistic D of `a` and `b`, and its asymptotic
/// p-value (Stephens' correction for small samples); None where either is empty.
pub fn two_sample_ks(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
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

/// A group of readings ranked among a group of `count` others of one distribution with it,
/// those held as `sorted` (all of them in ascending order, or evenly spaced order statistics
/// of them).
pub struct Ranked<'a> {
    pub above: &'a [f64],
    pub sorted: &'a [f64],
    pub count: usize,
}

impl Ranked<'_> {
    /// The share of the others below `x`, ties counting half.
    pub fn share_below(&self, x: f64) -> f64 {
        let below = self.sorted.partition_point(|&t| t < x);
        let equal = self.sorted[below..].partition_point(|&t| t <= x);
        (below as f64 + equal as f64 / 2.0) / self.sorted.len().max(1) as f64
    }
}

/// The one-sided chance, by the Mann-Whitney U test stratified over `groups` (each group's
/// readings ranked among its own others only, their U statistics summed), that the readings
/// lie as high as they do among the others: each reading ranked by the share of its others
/// below it (ties counting half), the sum set against its mean by the normal approximation
/// with a continuity correction. For a few readings at the top the normal's tail overstates
/// the chance (three above all of 200 reach z = 2.97 at most, exactly a chance of 7e-7): it
/// errs towards no finding. 1 where there is nothing to rank.
pub fn rank_above_chance(groups: &[Ranked]) -> f64 {
    let groups: Vec<&Ranked> = (groups.iter())
        .filter(|g| !g.above.is_empty() && !g.sorted.is_empty() && g.count > 0)
        .collect();
    let (mut u, mut mean, mut variance) = (0.0, 0.0, 0.0);
    for g in &groups {
        let (k, m) = (g.above.len() as f64, g.count as f64);
        u += g.above.iter().map(|&x| g.share_below(x) * m).sum::<f64>();
        mean += k * m / 2.0;
        variance += k * m * (k + m + 1.0) / 12.0;
    }
    if variance <= 0.0 {
        return 1.0;
    }
    let z = (u - mean - 0.5) / variance.sqrt();
    match z > 0.0 {
        true => two_sided_tail(z) / 2.0,
        false => 1.0,
    }
}

/// The one-sided chance, exactly, that readings each ranked among a group of its own lie as
/// high as they do, where each is one of its group's distribution (`strata`: how many of its
/// group lie below it, ties counting half, and the group's size): each count is then uniform
/// from 0 to its group's size, and the chance is the upper tail of their sum, by convolution.
/// Half counts round down, which errs towards no finding. Exact where groups are small: one
/// reading over all of three in each of six groups has a chance of 2.4e-4, where the normal
/// approximation says 9.6e-4. 1 where there is nothing to rank.
pub fn each_above_chance(strata: &[(f64, usize)]) -> f64 {
    let strata: Vec<&(f64, usize)> = strata.iter().filter(|s| s.1 > 0).collect();
    if strata.is_empty() {
        return 1.0;
    }
    // The sum's distribution over 0..=total, group by group.
    let mut sums = vec![1.0];
    for &&(_, size) in &strata {
        let mut next = vec![0.0; sums.len() + size];
        for (s, p) in sums.iter().enumerate() {
            for n in next.iter_mut().skip(s).take(size + 1) {
                *n += p / (size + 1) as f64;
            }
        }
        sums = next;
    }
    let observed = strata.iter().map(|s| s.0).sum::<f64>().floor() as usize;
    sums.iter().skip(observed).sum::<f64>().min(1.0)
}

/// The chance that `regions` of `regions + others` readings drawn at random hold at least
/// `beyond` of the `beyond + others_beyond` that lie beyond a bound (the hypergeometric
/// tail): how often readings alike would split so.
pub fn split_chance(
    (regions, beyond): (usize, usize),
    (others, others_beyond): (usize, usize),
) -> f64 {
    let ln_choose = |n: usize, k: usize| -> f64 {
        (0..k).map(|i| ((n - i) as f64 / (k - i) as f64).ln()).sum()
    };
    let (all, marked) = (regions + others, beyond + others_beyond);
    let total = ln_choose(all, regions);
    (beyond..=marked.min(regions))
        .filter(|&x| regions - x <= all - marked)
        .map(|x| (ln_choose(marked, x) + ln_choose(all - marked, regions - x) - total).exp())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_each_above_a_group_of_their_own_have_the_exact_chance() {
        // One over all of three in each of six groups: (1/4)^6.
        let chance = each_above_chance(&[(3.0, 3); 6]);
        assert!((chance - 0.25f64.powi(6)).abs() < 1e-12, "{chance}");
        // One over none: certain; half way up each: about even.
        assert_eq!(each_above_chance(&[(0.0, 3); 6]), 1.0);
        let middle = each_above_chance(&[(1.5, 3); 6]);
        assert!((0.4..0.8).contains(&middle), "{middle}");
        // Empty groups say nothing; nothing at all, certain.
        assert_eq!(each_above_chance(&[(0.0, 0)]), 1.0);
        assert_eq!(each_above_chance(&[]), 1.0);
        // Against simulation: each reading at a uniform rank, the tail at the observed sum.
        let sizes = [2usize, 5, 1, 4];
        let observed = [2.0, 4.0, 1.0, 3.0];
        let strata: Vec<(f64, usize)> = observed.into_iter().zip(sizes).collect();
        let exact = each_above_chance(&strata);
        let mut seed = 7u64;
        let mut draw = |m: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % (m as u64 + 1)) as usize
        };
        let trials = 200_000;
        let hits = (0..trials)
            .filter(|_| sizes.iter().map(|&m| draw(m)).sum::<usize>() >= 10)
            .count();
        let simulated = hits as f64 / trials as f64;
        assert!((exact - simulated).abs() < 0.01, "{exact} {simulated}");
    }

    #[test]
    fn readings_above_their_group_are_unlikely_and_readings_among_it_are_not() {
        let group: Vec<f64> = (0..200).map(f64::from).collect();
        let chance = |above: &[f64], sorted: &[f64], count| {
            rank_above_chance(&[Ranked {
                above,
                sorted,
                count,
            }])
        };
        // Six at the group's top 10%, six spread through it, none.
        let top = [185.0, 188.0, 190.0, 193.0, 196.0, 199.0];
        let among = [10.0, 50.0, 90.0, 110.0, 150.0, 190.0];
        assert!(chance(&top, &group, 200) < 1e-3);
        assert!(chance(&among, &group, 200) > 0.3);
        assert_eq!(chance(&[], &group, 200), 1.0);
        // Below the group: no finding.
        assert_eq!(chance(&[-5.0, -3.0, -1.0], &group, 200), 1.0);
        // Evenly spaced order statistics of a group stand for it: every other value of a
        // group of 400 gives the chance the whole group gives.
        let big: Vec<f64> = (0..400).map(|i| f64::from(i) / 2.0).collect();
        let every_other: Vec<f64> = big.iter().step_by(2).copied().collect();
        let (whole, sketch) = (chance(&among, &big, 400), chance(&among, &every_other, 400));
        assert!((whole - sketch).abs() < 0.02, "{whole} {sketch}");
        // Ties count half: readings equal to every one of the group lie in its middle.
        assert!(chance(&[5.0; 6], &[5.0; 200], 200) > 0.4);
    }

    #[test]
    fn each_group_is_ranked_among_its_own_others() {
        // Two runs a tenth apart: a run's readings at its own median say nothing, though
        // pooled with the faster run's samples they would all lie in the upper half.
        let fast: Vec<f64> = (0..200).map(|i| 100.0 + f64::from(i) / 100.0).collect();
        let slow: Vec<f64> = fast.iter().map(|t| t * 1.1).collect();
        let at_median: Vec<f64> = slow[90..110].to_vec();
        let own = Ranked {
            above: &at_median,
            sorted: &slow,
            count: 200,
        };
        assert!(rank_above_chance(&[own]) > 0.3);
        let mut pooled: Vec<f64> = [fast.clone(), slow.clone()].concat();
        pooled.sort_by(f64::total_cmp);
        let across = Ranked {
            above: &at_median,
            sorted: &pooled,
            count: 400,
        };
        assert!(rank_above_chance(&[across]) < 1e-3);
        // Two groups high in their own runs add up.
        let high_fast = [fast[190], fast[185], fast[195]];
        let high_slow = [slow[190], slow[185], slow[195]];
        let both = [
            Ranked {
                above: &high_fast,
                sorted: &fast,
                count: 200,
            },
            Ranked {
                above: &high_slow,
                sorted: &slow,
                count: 200,
            },
        ];
        assert!(rank_above_chance(&both) < 1e-3);
    }

    #[test]
    fn mann_whitney_separates_shifted_samples_and_not_equal_ones() {
        let a: Vec<f64> = (0..20).map(|i| 100.0 + i as f64).collect();
        let shifted: Vec<f64> = a.iter().map(|x| x + 30.0).collect();
        assert!(mann_whitney_p(&a, &shifted) < 1e-4);
        assert!(mann_whitney_p(&a, &a) > 0.9);
        // All values tied: no evidence either way.
        assert_eq!(mann_whitney_p(&[1.0; 5], &[1.0; 5]), 1.0);
    }

    #[test]
    fn kolmogorov_smirnov_tells_shifted_samples_apart_and_not_interleaved_ones() {
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

    #[test]
    fn a_split_is_as_likely_as_readings_alike_make_it() {
        // 2 of 5 audited beyond, none of 5 decoys: C(5,2) of C(10,2) ways.
        assert!((split_chance((5, 2), (5, 0)) - 10.0 / 45.0).abs() < 1e-12);
        // All 5 beyond, none of 5 decoys: one way in C(10,5).
        assert!((split_chance((5, 5), (5, 0)) - 1.0 / 252.0).abs() < 1e-12);
        // At least none: certain.
        assert!((split_chance((4, 0), (7, 3)) - 1.0).abs() < 1e-12);
        // Beyond readings on both sides make the split likelier.
        assert!(split_chance((5, 3), (5, 2)) > split_chance((5, 3), (5, 0)));
    }
}
