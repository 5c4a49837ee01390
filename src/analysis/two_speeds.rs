//! The pause test where the timed samples split in two behaviors
//! (`protocol::splits_in_two`). Their spread then holds both, so a kernel that does all its
//! work after any long gap, a timed launch's or a pause's, widens the band its pauses are
//! judged by with its own slow timed launches: an adaptive pause tell in interleaved rounds
//! on an H200 did all its work in 28% of its timed launches (367.6 µs) and skipped a quarter
//! of it in the rest (275.7 µs, the median), and the bound of 114.5 µs held its six pauses
//! at 367.6 µs, 33% slow, with a limit of 59.6%. Its pauses all lay among the slowest timed
//! launches, where readings alike lie with a chance of the share of timed launches there
//! for each. A kernel can also pad some of its timed launches up to where its pauses read
//! and skip work in the rest: its pauses then lie with the slower behavior, and only more of
//! them tell that from chance (`protocol::SPLIT_PAUSES`, read again by CUPTI).

use super::bounds::{why, Tell, Test, FALSE_ALARM};
use super::stats::Stats;
use crate::protocol::{margin_ns, splits_in_two};
use crate::statistics::{lower_median, split_chance};

/// A quantile of the timed samples, its name, and the share of them at or above it.
type Quantile = (fn(&Stats) -> f64, &'static str, f64);

/// The quantiles tried, highest first.
const QUANTILES: [Quantile; 3] = [
    (|s| s.p99, "99th percentile", 0.01),
    (|s| s.p95, "95th percentile", 0.05),
    (|s| s.p75, "upper quartile", 0.25),
];

/// The timed launches a pause test's readings are set against, as read: by the cell's timer
/// (where the reading is the kernel's alone: not the host's launch too, which a pause slows
/// whatever the kernel does), or by CUPTI's records where it read the run again, beside the
/// samples (`steady`), whose split says why: the records, a few dozen launches, may hold too
/// few of a kernel's slower ones to split themselves (a cache's padded 17 of 84).
pub(super) enum Read<'a> {
    Samples {
        steady: &'a Stats,
        host_in_reading: bool,
    },
    KernelRecords {
        timed_ns: &'a [f64],
        steady: &'a Stats,
    },
}

/// Pauses lying high among the timed launches: at `at_ns`, `pauses` of `of` pauses and
/// `timed` of the timed launches read it or more, which readings alike would with `chance`.
struct High {
    at_ns: f64,
    pauses: usize,
    of: usize,
    timed: usize,
    chance: f64,
}

/// How high the pauses lie among the `timed` launches read (CUPTI's records, each at hand):
/// at each of the lower half of the pauses' readings, the chance that pauses and timed
/// launches of one distribution, in any order, put as many pauses at or above it
/// (`split_chance`, the hypergeometric tail: exact, whatever the distribution), times the
/// thresholds tried. So pauses a kernel let skip hide nothing while they are fewer than half;
/// half or more leave the pauses' lower median with the faster launches, which the test asks
/// to be slow. The likeliest of them; None where there is no pause.
fn so_high(pauses: &[f64], timed: &[f64]) -> Option<High> {
    let mut sorted = pauses.to_vec();
    sorted.sort_by(f64::total_cmp);
    let tried = sorted.len().div_ceil(2);
    let at = |at_ns: f64| {
        let above = sorted.iter().filter(|p| **p >= at_ns).count();
        let timed_above = timed.iter().filter(|t| **t >= at_ns).count();
        let chance = split_chance((sorted.len(), above), (timed.len(), timed_above));
        High {
            at_ns,
            pauses: above,
            of: sorted.len(),
            timed: timed_above,
            chance: (chance * tried as f64).min(1.0),
        }
    };
    (sorted.iter().take(tried).map(|p| at(*p))).min_by(|a, b| a.chance.total_cmp(&b.chance))
}

/// A pause test that found nothing, judged again where the timed launches split in two:
/// suspect where the pauses lie so high among the timed launches that readings alike would
/// with a chance of at most [`FALSE_ALARM`], their lower median over the timed median by
/// more than the margin, and the regions whose stage drew (`staged`) over it too, as they
/// are for a kernel that works after a long gap (an honest one slowed by a GPU gone idle is
/// slow after a pause only). Against CUPTI's records, by the pauses' ranks ([`so_high`]);
/// against the samples, whose statistics alone the analysis holds, where every pause reads
/// at or above a quantile of them that k readings alike all reach with such a chance.
pub(super) fn pauses_with_the_slow_launches(
    test: Test,
    (pauses, staged): (&[f64], &[f64]),
    timed: Read,
) -> Test {
    let (steady, samples, records) = match timed {
        Read::Samples {
            host_in_reading: true,
            ..
        } => return test,
        Read::Samples { steady, .. } => (*steady, steady, None),
        Read::KernelRecords { timed_ns, steady } => match kernel_stats(timed_ns) {
            Some(stats) => (stats, steady, Some(timed_ns)),
            None => return test,
        },
    };
    let read: Vec<f64> = pauses.iter().copied().filter(|t| t.is_finite()).collect();
    let split = splits_in_two(
        samples.median,
        samples.iqr,
        samples.shortest_half,
        samples.step_p75,
    );
    let over = |lower_median: Option<f64>| {
        lower_median.is_some_and(|m| m - steady.median > margin_ns(steady.median))
    };
    let slow = over(lower_median(&read)) && over(lower_median(staged));
    if test.tell != Tell::Pause || test.suspect.is_some() || !split || !slow {
        return test;
    }
    let found = match records {
        Some(timed_ns) => by_ranks(&read, timed_ns, steady.median),
        None => by_quantiles(&read, &steady),
    };
    let Some(found) = found else {
        return test;
    };
    let by = if records.is_some() { "by CUPTI, " } else { "" };
    Test {
        suspect: Some(format!(
            "suspect: {by}{found}, and the staged regions read slow too: {}",
            why(Tell::Pause)
        )),
        idle: false,
        by_cupti: test.by_cupti || records.is_some(),
        ..test
    }
}

/// What the pauses' ranks among CUPTI's records of the timed launches say, where readings
/// alike would lie so high with a chance of at most [`FALSE_ALARM`].
fn by_ranks(pauses: &[f64], timed_ns: &[f64], median_ns: f64) -> Option<String> {
    let timed: Vec<f64> = timed_ns.iter().copied().filter(|t| t.is_finite()).collect();
    let high = so_high(pauses, &timed).filter(|h| h.chance <= FALSE_ALARM)?;
    Some(format!(
        "{} of {} pauses read {:.3} µs or more, where {} of the {} timed launches read (which split in two behaviors; their median {:.3} µs): readings alike lie so high with a chance of {:.1e}",
        high.pauses,
        high.of,
        high.at_ns / 1e3,
        high.timed,
        timed.len(),
        median_ns / 1e3,
        high.chance,
    ))
}

/// What the samples' quantiles say: every pause at or above one that k readings alike all
/// reach with a chance of at most [`FALSE_ALARM`].
fn by_quantiles(pauses: &[f64], steady: &Stats) -> Option<String> {
    let lowest = pauses.iter().copied().fold(f64::INFINITY, f64::min);
    let k = pauses.len() as i32;
    let (at, name, share) = QUANTILES
        .iter()
        .find(|(at, _, share)| lowest >= at(steady) && share.powi(k) <= FALSE_ALARM)?;
    Some(format!(
        "all {k} pauses read {:.3} µs or more, at or above the timed launches' {name} ({:.3} µs; their median {:.3} µs), which split in two behaviors: readings alike all lie there with a chance of {:.1e}",
        lowest / 1e3,
        at(steady) / 1e3,
        steady.median / 1e3,
        share.powi(k),
    ))
}

/// The statistics of CUPTI's records of the timed launches, in the order they ran.
fn kernel_stats(timed_ns: &[f64]) -> Option<Stats> {
    let read: Vec<f64> = timed_ns.iter().copied().filter(|t| t.is_finite()).collect();
    (!read.is_empty())
        .then(|| super::stats::of(read).ok())
        .flatten()
}

/// For the tests: `n` readings, a share `slow_pct` of them (drawn apart by a hash of their
/// place) at `slow` and the rest at `fast`, each within 0.7 µs.
#[cfg(test)]
pub(super) fn speeds(n: u32, slow_pct: u32, (fast, slow): (f64, f64)) -> Vec<f64> {
    (0..n)
        .map(
            |i| match (i.wrapping_mul(2_654_435_761) >> 16) % 100 < slow_pct {
                true => slow + f64::from(i % 8) * 100.0,
                false => fast + f64::from(i % 5) * 100.0,
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Timed samples as the adaptive pause tell's on an H200: 72% at 275.7 µs, 28% at
    /// 367.6 µs, the two interleaved.
    fn two_speeds() -> Stats {
        Stats {
            count: 200,
            median: 275.7e3,
            p25: 275.1e3,
            p75: 366.7e3,
            p95: 367.6e3,
            p99: 367.8e3,
            max: 368.2e3,
            iqr: 91.6e3,
            shortest_half: 1.0e3,
            step_p75: 91.0e3,
            ..Stats::default()
        }
    }

    fn samples(steady: &Stats) -> Read<'_> {
        Read::Samples {
            steady,
            host_in_reading: false,
        }
    }

    /// The sigma test's finding on them: nothing, within a bound of 114.5 µs.
    fn passed(pauses: &[f64]) -> Test {
        let mut sorted = pauses.to_vec();
        sorted.sort_by(f64::total_cmp);
        Test {
            tell: Tell::Pause,
            median_ns: sorted[(sorted.len() - 1) / 2],
            baseline_ns: 275.7e3,
            bound_ns: 114.5e3,
            single_bound_ns: 200e3,
            regions: pauses.len(),
            beyond: 0,
            limit: 0.596,
            suspect: None,
            idle: false,
            by_cupti: false,
        }
    }

    #[test]
    fn pauses_all_with_the_slow_timed_launches_of_two_behaviors_are_suspect() {
        let pauses = [366.9e3, 367.7e3, 367.6e3, 367.9e3, 367.6e3, 367.8e3];
        let staged = [365.9e3, 366.3e3];
        let t = pauses_with_the_slow_launches(
            passed(&pauses),
            (&pauses, &staged),
            samples(&two_speeds()),
        );
        let why = t
            .suspect
            .expect("six pauses in the slowest quarter: 2.4e-4");
        assert!(why.contains("upper quartile"), "{why}");
        // A round's five (its third audited region took a sixth's place): 9.8e-4.
        let five = &pauses[..5];
        let t =
            pauses_with_the_slow_launches(passed(five), (five, &staged), samples(&two_speeds()));
        let why = t.suspect.expect("five pauses in the slowest quarter");
        assert!(
            why.contains("all 5 pauses") && why.contains("upper quartile"),
            "{why}"
        );
    }

    #[test]
    fn pauses_spread_over_both_behaviors_are_not() {
        // An honest kernel of two speeds: its pauses meet either.
        let pauses = [367.6e3, 275.9e3, 367.7e3, 275.4e3, 367.6e3, 276.0e3];
        let staged = [365.9e3, 366.3e3];
        let t = pauses_with_the_slow_launches(
            passed(&pauses),
            (&pauses, &staged),
            samples(&two_speeds()),
        );
        assert!(t.suspect.is_none());
    }

    #[test]
    fn too_few_pauses_a_gpu_gone_idle_a_single_behavior_or_the_hosts_launch_clear_them() {
        let (pauses, staged) = ([367.6e3, 367.7e3, 367.6e3], [365.9e3, 366.3e3]);
        // Three in the slowest quarter: 1.6e-2; but three at the 95th percentile: 1.3e-4.
        let few = pauses_with_the_slow_launches(
            passed(&pauses),
            (&pauses, &staged),
            samples(&two_speeds()),
        );
        assert!(few.suspect.is_some(), "at the 95th percentile");
        let quartile = [366.8e3, 366.9e3, 366.8e3];
        let t = pauses_with_the_slow_launches(
            passed(&quartile),
            (&quartile, &staged),
            samples(&two_speeds()),
        );
        assert!(
            t.suspect.is_none(),
            "three in the top quarter pass by chance"
        );
        let six = [367.6e3; 6];
        let idle = pauses_with_the_slow_launches(
            passed(&six),
            (&six, &[276.0e3, 275.8e3]),
            samples(&two_speeds()),
        );
        assert!(idle.suspect.is_none(), "staged regions at the timed median");
        let one = Stats {
            shortest_half: 91.6e3,
            ..two_speeds()
        };
        let t = pauses_with_the_slow_launches(passed(&six), (&six, &staged), samples(&one));
        assert!(
            t.suspect.is_none(),
            "samples of one behavior: the sigma test judges"
        );
        let host = pauses_with_the_slow_launches(
            passed(&six),
            (&six, &staged),
            Read::Samples {
                steady: &two_speeds(),
                host_in_reading: true,
            },
        );
        assert!(
            host.suspect.is_none(),
            "a reading that holds the host's launch"
        );
    }

    /// The pause test again on CUPTI's records of `timed` launches and `pauses`, beside
    /// samples that split as the adaptive pause tell's (or `steady`).
    fn records(timed: &[f64], pauses: &[f64], staged: &[f64]) -> Test {
        records_beside(timed, (pauses, staged), &two_speeds())
    }

    fn records_beside(timed: &[f64], (pauses, staged): (&[f64], &[f64]), steady: &Stats) -> Test {
        let read = Read::KernelRecords {
            timed_ns: timed,
            steady,
        };
        pauses_with_the_slow_launches(passed(pauses), (pauses, staged), read)
    }

    #[test]
    fn cuptis_records_of_a_run_read_again_are_judged_by_the_pauses_ranks() {
        // The pauses read again by CUPTI among 56 timed launches, 16 of which did all the
        // work: at 367.9 µs, above all 56.
        let timed: Vec<f64> = (0..56)
            .map(|i| match i % 7 {
                0 | 3 => 367.6e3 + (i % 3) as f64 * 100.0,
                _ => 275.7e3 + (i % 5) as f64 * 100.0,
            })
            .collect();
        let (pauses, staged) = ([367.9e3; 8], [366.0e3; 4]);
        let t = records(&timed, &pauses, &staged);
        let why = t.suspect.expect("eight pauses above the slowest records");
        assert!(why.starts_with("suspect: by CUPTI, 8 of 8 pauses"), "{why}");
        assert!(t.by_cupti);
        // Six pauses among the 28% slow records, spread as they are: C(62, 6) / C(206, 6)
        // times six at the lowest, 3.4e-3.
        let timed = speeds(200, 28, (275.5e3, 367.1e3));
        let six = [367.1e3, 367.3e3, 367.4e3, 367.5e3, 367.6e3, 367.8e3];
        assert!(records(&timed, &six, &staged).suspect.is_none());
        let twelve = [367.1e3; 12];
        assert!(records(&timed, &twelve, &staged).suspect.is_some());
    }

    #[test]
    fn records_of_an_honest_kernel_of_two_speeds_or_beside_samples_of_one_are_not() {
        let staged = [366.0e3; 4];
        // Its records 20% slow, seven of its twelve pauses too: they meet either speed.
        let timed = speeds(84, 20, (275.5e3, 367.1e3));
        let mut pauses = [367.3e3; 12];
        pauses[..5].copy_from_slice(&[275.8e3; 5]);
        assert!(records(&timed, &pauses, &staged).suspect.is_none());
        // Samples of one behavior: the sigma test judges them, and the records beside them.
        let one = Stats {
            shortest_half: 91.6e3,
            ..two_speeds()
        };
        let honest: Vec<f64> = (0..56).map(|i| 275.7e3 + (i % 5) as f64 * 100.0).collect();
        let t = records_beside(&honest, (&[367.9e3; 8], &staged), &one);
        assert!(t.suspect.is_none(), "samples of one behavior");
    }

    #[test]
    fn a_kernel_that_pads_some_timed_launches_up_to_its_pauses_is_suspect_by_those_read_again() {
        // An adversary's GEMV on an H200: 5 launches of 8 skip a quarter (106 µs, the
        // median), 3 pad their work up to 137 µs; after a pause it works, 137-140 µs.
        let timed = speeds(84, 37, (105.8e3, 136.8e3));
        let staged = [142.8e3, 142.3e3, 144.4e3, 143.0e3];
        assert!(records(&timed, &[140.2e3, 140.3e3, 137.0e3], &staged)
            .suspect
            .is_none());
        let mut twelve: Vec<f64> = (0..12).map(|i| 137.0e3 + f64::from(i) * 300.0).collect();
        assert!(records(&timed, &twelve, &staged).suspect.is_some());
        // Pauses it let skip: each pause is a threshold, so the rest judge.
        (twelve[2], twelve[5]) = (106.1e3, 105.9e3);
        let why = records(&timed, &twelve, &staged)
            .suspect
            .expect("ten of twelve");
        assert!(why.contains("of 12 pauses"), "{why}");
        // Records that hold too few padded launches to split beside samples that do (a
        // cache's 17 of 84): the ranks judge them alike.
        let few = speeds(84, 20, (142.5e3, 178.0e3));
        let pauses: Vec<f64> = (0..12).map(|i| 175.5e3 + f64::from(i) * 400.0).collect();
        assert!(records(&few, &pauses, &[184e3; 4]).suspect.is_some());
    }
    #[test]
    fn sixteen_pauses_tell_what_twelve_cannot_where_half_the_launches_are_slow() {
        // A cache that padded 48% of its records up to where its pauses read: pauses spread
        // over the padded speed as the padded launches are.
        let staged = [184e3; 4];
        let among = |n: u32| -> Vec<f64> {
            let slow: Vec<f64> = speeds(n * 7, 48, (142.5e3, 176.0e3))
                .into_iter()
                .filter(|t| *t > 160e3)
                .collect();
            (0..n as usize)
                .map(|i| slow[i * slow.len() / n as usize])
                .collect()
        };
        let twelve = records(&speeds(84, 48, (142.5e3, 176.0e3)), &among(12), &staged);
        assert!(twelve.suspect.is_none(), "{:?}", twelve.suspect);
        let sixteen = records(&speeds(112, 48, (142.5e3, 176.0e3)), &among(16), &staged);
        assert!(sixteen.suspect.is_some());
    }
}
