//! The pause test where the timed samples split in two behaviors
//! (`protocol::splits_in_two`). Their spread then holds both, so a kernel that does all its
//! work after any long gap, a timed launch's or a pause's, widens the band its pauses are
//! judged by with its own slow timed launches: an adaptive pause tell in interleaved rounds
//! on an H200 did all its work in 28% of its timed launches (367.6 µs) and skipped a quarter
//! of it in the rest (275.7 µs, the median), and the bound of 114.5 µs held its six pauses
//! at 367.6 µs, 33% slow, with a limit of 59.6%. Its pauses all lay among the slowest timed
//! launches, where readings alike lie with a chance of the share of timed launches there
//! for each.

use super::bounds::{why, Tell, Test, FALSE_ALARM};
use super::stats::Stats;
use crate::protocol::{margin_ns, splits_in_two};
use crate::statistics::lower_median;

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
/// whatever the kernel does), or by CUPTI's records where it read the run again.
pub(super) enum Read<'a> {
    Samples {
        steady: &'a Stats,
        host_in_reading: bool,
    },
    KernelRecords {
        timed_ns: &'a [f64],
    },
}

/// A pause test that found nothing, judged again where the timed launches split in two:
/// suspect where every pause reads at or above a quantile of the timed launches that k
/// readings alike all reach with a chance of at most [`FALSE_ALARM`], their lower median over
/// the timed median by more than the margin, and the regions whose stage drew (`staged`)
/// over it too, as they are for a kernel that works after a long gap (an honest one slowed
/// by a GPU gone idle is slow after a pause only).
pub(super) fn pauses_with_the_slow_launches(
    test: Test,
    (pauses, staged): (&[f64], &[f64]),
    timed: Read,
) -> Test {
    let (steady, by_cupti) = match timed {
        Read::Samples {
            host_in_reading: true,
            ..
        } => return test,
        Read::Samples { steady, .. } => (*steady, false),
        Read::KernelRecords { timed_ns } => match kernel_stats(timed_ns) {
            Some(stats) => (stats, true),
            None => return test,
        },
    };
    let read: Vec<f64> = pauses.iter().copied().filter(|t| t.is_finite()).collect();
    let split = splits_in_two(
        steady.median,
        steady.iqr,
        steady.shortest_half,
        steady.step_p75,
    );
    let over = |lower_median: Option<f64>| {
        lower_median.is_some_and(|m| m - steady.median > margin_ns(steady.median))
    };
    let slow = over(lower_median(&read)) && over(lower_median(staged));
    if test.tell != Tell::Pause || test.suspect.is_some() || !split || !slow {
        return test;
    }
    let lowest = read.iter().copied().fold(f64::INFINITY, f64::min);
    let k = read.len() as i32;
    let found = QUANTILES.iter().find(|(at, _, share)| {
        let chance = share.powi(k);
        lowest >= at(&steady) && chance <= FALSE_ALARM
    });
    let Some((at, name, share)) = found else {
        return test;
    };
    let by = if by_cupti { "by CUPTI, " } else { "" };
    let suspect = format!(
        "suspect: {by}all {k} pauses read {:.3} µs or more, at or above the timed launches' {name} ({:.3} µs; their median {:.3} µs), which split in two behaviors: readings alike all lie there with a chance of {:.1e}, and the staged regions read slow too: {}",
        lowest / 1e3,
        at(&steady) / 1e3,
        steady.median / 1e3,
        share.powi(k),
        why(Tell::Pause),
    );
    Test {
        suspect: Some(suspect),
        idle: false,
        by_cupti: test.by_cupti || by_cupti,
        ..test
    }
}

/// The statistics of CUPTI's records of the timed launches, in the order they ran.
fn kernel_stats(timed_ns: &[f64]) -> Option<Stats> {
    let read: Vec<f64> = timed_ns.iter().copied().filter(|t| t.is_finite()).collect();
    (!read.is_empty())
        .then(|| super::stats::of(read).ok())
        .flatten()
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

    #[test]
    fn cuptis_records_of_a_run_read_again_are_judged_alike() {
        // Events on an idle queue: the pauses read again by CUPTI among 56 timed launches,
        // 16 of which did all the work.
        let timed: Vec<f64> = (0..56)
            .map(|i| match i % 7 {
                0 | 3 => 367.6e3 + (i % 3) as f64 * 100.0,
                _ => 275.7e3 + (i % 5) as f64 * 100.0,
            })
            .collect();
        let (pauses, staged) = ([367.9e3; 8], [366.0e3; 4]);
        let records = Read::KernelRecords { timed_ns: &timed };
        let t = pauses_with_the_slow_launches(passed(&pauses), (&pauses, &staged), records);
        let why = t.suspect.expect("eight pauses with the slowest records");
        assert!(why.starts_with("suspect: by CUPTI, all 8 pauses"), "{why}");
        assert!(t.by_cupti);
        let honest: Vec<f64> = (0..56).map(|i| 275.7e3 + (i % 5) as f64 * 100.0).collect();
        let records = Read::KernelRecords { timed_ns: &honest };
        let t = pauses_with_the_slow_launches(passed(&pauses), (&pauses, &staged), records);
        assert!(
            t.suspect.is_none(),
            "records of one behavior: the sigma test judges"
        );
    }
}
