//! Regions set against the timed launches just before them where the cell's clock moved
//! (`protocol::RegionsBefore` says why): each reading scaled by the cell's timed median over
//! the median of the samples before it, where that median lies beyond what so few samples
//! of the cell's spread give. Elsewhere a reading stays as it was: a window of eight
//! samples would add its own noise to every region.
//!
//! Only where the telemetry saw the SM clock move (`Readings::clock_moved_to`), by no more
//! than it moved, and only for regions with a whole window before them: a kernel's own
//! speed moves the samples before a region too. On an H200 a `tells-stage` round that
//! worked after every stage did so in the timed launches just after a region, so the
//! samples before the next read 231-250 µs against a median of 204 µs, and scaling cleared
//! pauses that read 44 µs over the timed median; a cell whose clock moved 5% lets such a
//! kernel hide 5% this way at most. A region among the first samples would be set against
//! samples that ran after it, which a kernel that tells a stage can slow.

use super::stats::Stats;
use crate::protocol::{AuditsAmong, RegionsBefore, BEFORE_WINDOW};
use crate::statistics::iqr_sigma;

/// Standard errors of a window's median beyond which the state moved, and the share of the
/// cell's median it must move by too.
const MOVED_SE: f64 = 4.0;
const MOVED_SHARE: f64 = 0.01;

#[derive(Debug, Clone, Copy)]
pub(super) struct Drift {
    median_ns: f64,
    moved_ns: f64,
    /// The cell's lowest SM clock over its highest: no reading is scaled by less, nor by
    /// more than its inverse.
    clock_to: f64,
}

/// Which of a run's regions: their places among the samples and the medians before them.
pub(super) type Kind = (
    fn(&AuditsAmong) -> &Vec<u64>,
    fn(&RegionsBefore) -> &Vec<f64>,
);

/// Audited regions, decoys and pauses.
pub(super) const AUDITED: Kind = (|m| &m.positions, |b| &b.audited);
pub(super) const DECOYS: Kind = (|m| &m.decoy_positions, |b| &b.decoys);
pub(super) const PAUSES: Kind = (|m| &m.pause_positions, |b| &b.pauses);

impl Drift {
    /// Of a cell's steady samples and how far its clock moved (its lowest over its highest).
    pub(super) fn of(steady: &Stats, clock_to: f64) -> Drift {
        let window_se =
            iqr_sigma(steady.iqr) * (std::f64::consts::FRAC_PI_2 / BEFORE_WINDOW as f64).sqrt();
        Drift {
            median_ns: steady.median,
            moved_ns: MOVED_SE * window_se + MOVED_SHARE * steady.median,
            clock_to: clock_to.clamp(f64::MIN_POSITIVE, 1.0),
        }
    }

    /// `readings` of run `m`'s regions of `kind` (in order; their first launches too) scaled
    /// where the samples before them moved; none dropped.
    pub(super) fn scaled(&self, readings: &[f64], m: &AuditsAmong, kind: Kind) -> Vec<f64> {
        let (places, before) = (kind.0(m), m.before.as_ref().map(kind.1));
        let whole = |i: usize| places.get(i).is_some_and(|&p| p as usize >= BEFORE_WINDOW);
        (readings.iter().enumerate())
            .map(|(i, &t)| match before.and_then(|b| b.get(i)) {
                Some(&b) if b > 0.0 && whole(i) && (b - self.median_ns).abs() > self.moved_ns => {
                    t * (self.median_ns / b).clamp(self.clock_to, 1.0 / self.clock_to)
                }
                _ => t,
            })
            .collect()
    }
}

/// The runs' audited regions', decoys' and pauses' readings, pooled, each set against the
/// samples before it where `drift` is given (the cell's clock moved); none that is not finite.
pub(super) fn regions(among: &[&AuditsAmong], drift: Option<Drift>) -> [Vec<f64>; 3] {
    let pooled = |of: fn(&AuditsAmong) -> &Vec<f64>, kind: Kind| -> Vec<f64> {
        (among.iter())
            .flat_map(|m| match drift {
                Some(d) => d.scaled(of(m), m, kind),
                None => of(m).clone(),
            })
            .filter(|t| t.is_finite())
            .collect()
    };
    [
        pooled(|m| &m.readings_ns, AUDITED),
        pooled(|m| &m.decoys_ns, DECOYS),
        pooled(|m| &m.pauses_ns, PAUSES),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steady(median: f64, iqr: f64) -> Stats {
        Stats {
            median,
            iqr,
            ..Stats::default()
        }
    }

    /// A run's audited regions at `positions`, with the medians before them.
    fn run(positions: Vec<u64>, before: Vec<f64>) -> AuditsAmong {
        AuditsAmong {
            positions,
            before: Some(RegionsBefore {
                audited: before,
                ..RegionsBefore::default()
            }),
            ..AuditsAmong::default()
        }
    }

    #[test]
    fn a_region_after_the_clock_dropped_is_set_against_the_samples_before_it() {
        // An honest softmax graph on an H200: 181 µs, then 211-225 µs once capped by power,
        // its SM clock 1515-1980 MHz.
        let drift = Drift::of(&steady(180.7e3, 1.82e3), 1515.0 / 1980.0);
        let m = run(vec![40, 182, 200], vec![180.8e3, 211.0e3, 198.6e3]);
        let scaled = drift.scaled(&[181.0e3, 207.8e3, 196.3e3], &m, AUDITED);
        assert_eq!(scaled[0], 181.0e3, "no move: as read");
        assert!((scaled[1] - 177.96e3).abs() < 10.0, "{scaled:?}");
        assert!((scaled[2] - 178.6e3).abs() < 10.0, "{scaled:?}");
        // Runs from before the window: as read.
        let old = AuditsAmong {
            positions: vec![182],
            ..AuditsAmong::default()
        };
        assert_eq!(drift.scaled(&[207.8e3], &old, AUDITED), vec![207.8e3]);
    }

    #[test]
    fn no_reading_is_scaled_by_more_than_the_clock_moved_nor_among_the_first_samples() {
        // Samples before a region 25% slow in a cell whose clock moved 5%: by 5% at most.
        let drift = Drift::of(&steady(100.0e3, 0.5e3), 0.95);
        let m = run(vec![50], vec![125.0e3]);
        assert_eq!(drift.scaled(&[150.0e3], &m, AUDITED), vec![150.0e3 * 0.95]);
        // Before sample 5 the window holds samples that ran after the region: as read.
        let early = run(vec![5], vec![125.0e3]);
        assert_eq!(drift.scaled(&[150.0e3], &early, AUDITED), vec![150.0e3]);
    }

    #[test]
    fn a_cheat_skipping_in_every_timed_launch_keeps_its_slow_regions() {
        // The samples before a region are as fast as the rest: nothing moved.
        let drift = Drift::of(&steady(100.0e3, 0.5e3), 0.8);
        let m = run(vec![30, 90], vec![100.2e3, 99.9e3]);
        let scaled = drift.scaled(&[200.0e3, 201.0e3], &m, AUDITED);
        assert_eq!(scaled, vec![200.0e3, 201.0e3]);
    }
}
