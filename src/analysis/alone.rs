//! The audit's test on the launches alone after audited regions of several launches (a
//! batch, a graph): each on poisoned outputs, read behind a wait (`worker::audit::behind_wait`).
//! A kernel that shares a region's work out among its launches (each doing an N-th of it,
//! every launch alike, so the region's output is whole after its last and its first launch
//! reads as the rest) must do all of it alone, where no launch before it left its output:
//! alone it reads up to N times a timed region's launch. An honest kernel alone reads its
//! launch and the start a region's launches overlap.

use super::bounds::{against_baseline, Baseline, Spread, Tell, Test};
use super::stats::Stats;
use crate::protocol::AuditsAmong;

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
    steady: &Stats,
    timed: Spread,
) -> Option<Test> {
    let alone: Vec<f64> = (among.iter())
        .flat_map(|m| m.alone_ns.iter().copied())
        .filter(|t| t.is_finite())
        .collect();
    if alone.is_empty() {
        return None;
    }
    let baseline = Baseline {
        median_ns: steady.median,
        count: steady.count as usize,
    };
    let spread = Spread {
        single: false,
        allowance_ns: ALONE_START_NS + ALONE_SHARE * steady.median,
        ..timed
    };
    against_baseline(Tell::Alone, &alone, baseline, (spread, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tells_tests::steady;

    fn among(alone_ns: Vec<f64>) -> AuditsAmong {
        AuditsAmong {
            alone_ns,
            ..Default::default()
        }
    }

    fn judged(alone_ns: Vec<f64>, timed: &Stats) -> Option<Test> {
        let runs = [among(alone_ns)];
        let refs: Vec<&AuditsAmong> = runs.iter().collect();
        launches_alone(&refs, timed, Spread::of(timed, true))
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
    fn one_slow_launch_alone_is_not_evidence_by_itself() {
        let timed = steady(200, 60.0, 18_900.0);
        let mut alone = vec![20_000.0; 8];
        alone.push(80_000.0);
        assert!(judged(alone, &timed).expect("read").suspect.is_none());
    }
}
