//! The audit's test on the launches alone after audited regions of several launches (a
//! batch, a graph): each on poisoned outputs, read behind a wait (`worker::audit::behind_wait`).
//! A kernel that shares a region's work out among its launches (each doing an N-th of it,
//! every launch alike, so the region's output is whole after its last and its first launch
//! reads as the rest) must do all of it alone, where no launch before it left its output:
//! alone it reads up to N times a timed region's launch, as one that does all its work on a
//! region's first launch only reads over the launches after it. An honest kernel alone reads
//! its launch and the start a region's launches overlap.

use super::bounds::{against_baseline, Baseline, Spread, Tell, Test, MIN_SAMPLES};
use super::stats::Stats;
use crate::protocol::{rest_of_region, AuditsAmong};
use crate::statistics::median;

/// What an honest launch alone may take beyond a timed region's launch, besides the margin:
/// the start and the end a region's launches overlap with their neighbours', and the inputs
/// the check before it left out of L2. On an H200 at 659a92e (`benches/launches-alone`), of
/// 152 honest cells of batches and graphs the most over was 2.25 µs for a short launch (a hot
/// 8 MiB scale in a graph, 6.04 µs)...
pub const ALONE_START_NS: f64 = 3_000.0;
/// ...and this share of the launch (5.9 µs, 3.6%, over a 165 µs layernorm in a batch).
pub const ALONE_SHARE: f64 = 0.05;

/// The launches alone against the timed samples' median (a region's launch), where they
/// were read: by their median, no one launch alone as evidence (a launch on an idle GPU
/// meets more than the noise of the timed samples).
pub(super) fn launches_alone(
    among: &[&AuditsAmong],
    (steady, per_region): (&Stats, u64),
    timed: Spread,
) -> Option<Test> {
    let alone: Vec<f64> = (among.iter())
        .flat_map(|m| m.alone_ns.iter().copied())
        .filter(|t| t.is_finite())
        .collect();
    if alone.is_empty() {
        return None;
    }
    // Where the timed regions' first launches were read, the launches after them: a
    // region's start is not a launch alone's, and a kernel that does all its work on a
    // region's first launch only does it alone too.
    let firsts: Vec<_> = among.iter().filter_map(|m| m.firsts.as_ref()).collect();
    let count: u64 = firsts.iter().map(|f| f.timed_count).sum();
    let first = median(firsts.iter().map(|f| f.timed_median).collect());
    let median_ns = match first {
        Some(first) if count as usize >= MIN_SAMPLES && per_region > 1 => {
            rest_of_region(first, steady.median, per_region)
        }
        _ => steady.median,
    };
    let baseline = Baseline {
        median_ns,
        count: steady.count as usize,
    };
    let spread = Spread {
        single: false,
        allowance_ns: ALONE_START_NS + ALONE_SHARE * median_ns,
        ..timed
    };
    against_baseline(Tell::Alone, &alone, baseline, (spread, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tells_tests::steady;
    use crate::protocol::FirstLaunches;

    fn among(alone_ns: Vec<f64>) -> AuditsAmong {
        AuditsAmong {
            alone_ns,
            ..Default::default()
        }
    }

    fn judged(alone_ns: Vec<f64>, timed: &Stats) -> Option<Test> {
        let runs = [among(alone_ns)];
        let refs: Vec<&AuditsAmong> = runs.iter().collect();
        launches_alone(&refs, (timed, 8), Spread::of(timed, true))
    }

    #[test]
    fn an_honest_launch_alone_with_its_start_passes() {
        // A 18.9 µs launch of a batch, alone 2 µs more (its start, which a region overlaps).
        let timed = steady(200, 60.0, 18_900.0);
        let test = judged(vec![20_900.0; 9], &timed).expect("alone launches were read");
        assert_eq!(test.tell, Tell::Alone);
        assert!(test.suspect.is_none(), "{:?}", test.suspect);
    }

    #[test]
    fn a_kernel_that_shares_a_region_out_reads_slow_alone_and_is_suspect() {
        // Each of a region's launches does a third of the work; alone it does all of it.
        let timed = steady(200, 60.0, 18_900.0);
        let test = judged(vec![3.0 * 18_900.0; 9], &timed).expect("alone launches were read");
        let why = test.suspect.expect("suspect");
        assert!(why.contains("launches alone"), "{why}");
        // Where none was read (a run from before they were), there is no test.
        assert!(judged(Vec::new(), &timed).is_none());
    }

    #[test]
    fn where_first_launches_were_read_a_launch_alone_meets_the_launches_after_them() {
        // A region of 2 whose first launch does all the work (22 µs) and the second skips
        // a quarter of it (16 µs): 19 µs a launch; alone it does all of it.
        let timed = steady(200, 60.0, 19_000.0);
        let firsts = FirstLaunches {
            timed_count: 200,
            timed_median: 22_000.0,
            ..Default::default()
        };
        let run = AuditsAmong {
            firsts: Some(firsts),
            ..among(vec![22_000.0; 9])
        };
        let test = launches_alone(&[&run], (&timed, 2), Spread::of(&timed, true)).expect("read");
        assert!(
            (test.baseline_ns - 16_000.0).abs() < 1.0,
            "{}",
            test.baseline_ns
        );
        assert!(test.suspect.is_some());
        // Against the region's mean the 3 µs over would pass.
        let test = judged(vec![22_000.0; 9], &timed).expect("read");
        assert!(test.suspect.is_none());
    }

    #[test]
    fn one_slow_launch_alone_is_not_evidence_by_itself() {
        let timed = steady(200, 60.0, 18_900.0);
        let mut alone = vec![20_000.0; 8];
        alone.push(80_000.0);
        assert!(judged(alone, &timed).expect("read").suspect.is_none());
    }
}
