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

/// Where a run holds decoys at all, it holds at least this many of each kind: a median of
/// one region's reading is that reading, and one audited region against one decoy was a
/// false alarm on the H100 (a stencil whose regions after the copy spread 1 µs, its timed
/// samples 0.1 µs); two of each also give the regions' own spread.
pub const LEAST_EACH: usize = 2;

/// How many audited regions and decoys a run of `samples` steady samples holds: together
/// [`REGIONS_SHARE`] of them (at least one audited; where there are decoys, at least
/// [`LEAST_EACH`] of each), an audited region for each decoy or one more, and never two
/// side by side or before the first sample.
pub fn regions(samples: usize) -> (usize, usize) {
    let room = samples.saturating_sub(1) / 2;
    let budget = match ((samples as f64 * REGIONS_SHARE).round() as usize).max(1) {
        1 => 1,
        more => more.max(2 * LEAST_EACH),
    };
    let total = budget.min(room);
    let audited = total.div_ceil(2);
    (audited, total - audited)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_take_three_in_a_hundred_samples() {
        assert_eq!(regions(0), (0, 0));
        assert_eq!(regions(2), (0, 0));
        assert_eq!(regions(3), (1, 0));
        assert_eq!(regions(20), (1, 0));
        assert_eq!(regions(5), (1, 0));
        assert_eq!(regions(50), (2, 2));
        assert_eq!(regions(100), (2, 2));
        assert_eq!(regions(200), (3, 3));
        assert_eq!(regions(10_000), (150, 150));
    }
}
