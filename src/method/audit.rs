//! The audit's method. Audited regions sit among a cell's timed regions (`worker::audit`):
//! the same launch, at positions drawn from a recorded seed, on inputs copied in just before
//! them, and checked. A kernel that cannot tell them from timed launches skips work in them
//! too and fails their check. One that can (it does all its work only on inputs it has not
//! seen) passes the check but is slower in them than in the decoys: regions staged the same
//! way with the inputs they already held, which the analysis sets against them.
//!
//! Cells that cannot hold audits among their timed launches (one launch per process, the
//! profiler's report, rotating buffer sets) get one audit launch after the timed ones, the
//! weaker audit, which the record says.

/// The audit's regions (audited and decoys) are at most this share of a run's steady
/// samples, at least one audited region: the audit's cost. Three in a hundred: where the
/// bound's margin (2% or 0.5 µs) outweighs its noise term, as in most cells, more regions
/// hardly lower the detection limit (a twentieth, five and five in 200 samples, gave limits
/// of 2.2-3.7% on the trust corpus's hot and cold cells), and each costs a region's time.
pub const REGIONS_SHARE: f64 = 0.03;

/// Where a cell holds decoys at all, it holds at least this many of each kind over its
/// runs: a median of one region's reading is that reading, and one audited region against
/// one decoy was a false alarm on the H100 (a stencil whose regions after the copy spread
/// 1 µs, its timed samples 0.1 µs); two of each also give the regions' own spread.
pub const LEAST_EACH: usize = 2;

/// How many audited regions and decoys run `run` of a cell's `runs` holds, each of
/// `samples` steady samples. Over the runs (which the analysis pools) they are
/// [`REGIONS_SHARE`] of the samples, at least [`LEAST_EACH`] of each kind where there are
/// decoys at all, as many audited as decoys or more; every run holds an audited region (it
/// checks that run's launches), and the decoys go to the first runs. Never two side by
/// side, nor before the first sample.
pub fn regions(samples: usize, runs: usize, run: usize) -> (usize, usize) {
    let room = samples.saturating_sub(1) / 2;
    let pooled = ((samples * runs.max(1)) as f64 * REGIONS_SHARE).round() as usize;
    if room == 0 {
        return (0, 0);
    }
    if pooled < 2 {
        return (1, 0);
    }
    let pooled = pooled.max(2 * LEAST_EACH);
    let decoys = pooled / 2;
    let audited = (pooled - decoys).max(runs);
    let this_run = |total: usize| total / runs + usize::from(run < total % runs);
    let audited = this_run(audited).min(room);
    (audited, this_run(decoys).min(room - audited))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_take_three_in_a_hundred_samples_over_the_runs() {
        let one = |samples| regions(samples, 1, 0);
        assert_eq!(one(0), (0, 0));
        assert_eq!(one(2), (0, 0));
        assert_eq!(one(3), (1, 0));
        assert_eq!(one(20), (1, 0));
        assert_eq!(one(50), (2, 2));
        assert_eq!(one(100), (2, 2));
        assert_eq!(one(200), (3, 3));
        assert_eq!(one(10_000), (150, 150));
        // Five rounds of 40: an audited region in each, three decoys in the first three.
        let rounds: Vec<_> = (0..5).map(|r| regions(40, 5, r)).collect();
        assert_eq!(rounds, [(1, 1), (1, 1), (1, 1), (1, 0), (1, 0)]);
        // Ten processes of 5 samples: room for one region each, no decoys to spare.
        assert_eq!(regions(5, 10, 0), (1, 1));
        assert_eq!(regions(5, 10, 9), (1, 0));
        assert_eq!(regions(4, 10, 0), (1, 0));
    }
}
