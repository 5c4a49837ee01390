//! Regions set against the timed launches just before them where the cell's clock moved
//! (`protocol::RegionsBefore` says why): each reading scaled by the cell's timed median over
//! the median of the samples before it, where that median lies beyond what so few samples
//! of the cell's spread give. Elsewhere a reading stays as it was: a window of eight
//! samples would add its own noise to every region.
//!
//! Only where the telemetry saw the SM clock move or throttle (`Readings::clock_moved`): a
//! kernel's own speed moves the samples before a region too. On an H200 a `tells-stage`
//! round that worked after every stage did so in the timed launches just after a region,
//! so the samples before the next read 231-250 µs against a median of 204 µs, and scaling
//! cleared pauses that read 44 µs over the timed median.

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
}

/// Which of a run's regions: their readings and the medians before them.
pub(super) type Kind = fn(&RegionsBefore) -> &Vec<f64>;

impl Drift {
    pub(super) fn of(steady: &Stats) -> Drift {
        let window_se =
            iqr_sigma(steady.iqr) * (std::f64::consts::FRAC_PI_2 / BEFORE_WINDOW as f64).sqrt();
        Drift {
            median_ns: steady.median,
            moved_ns: MOVED_SE * window_se + MOVED_SHARE * steady.median,
        }
    }

    /// `readings` (of one run's regions of a kind, in order) scaled where the samples before
    /// them moved; none dropped.
    pub(super) fn scaled(
        &self,
        readings: &[f64],
        before: Option<&RegionsBefore>,
        kind: Kind,
    ) -> Vec<f64> {
        let before = before.map(kind);
        (readings.iter().enumerate())
            .map(|(i, &t)| match before.and_then(|b| b.get(i)) {
                Some(&b) if b > 0.0 && (b - self.median_ns).abs() > self.moved_ns => {
                    t * self.median_ns / b
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
                Some(d) => d.scaled(of(m), m.before.as_ref(), kind),
                None => of(m).clone(),
            })
            .filter(|t| t.is_finite())
            .collect()
    };
    [
        pooled(|m| &m.readings_ns, |b| &b.audited),
        pooled(|m| &m.decoys_ns, |b| &b.decoys),
        pooled(|m| &m.pauses_ns, |b| &b.pauses),
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

    #[test]
    fn a_region_after_the_clock_dropped_is_set_against_the_samples_before_it() {
        // An honest softmax graph on an H200: 181 µs, then 211-225 µs once capped by power.
        let drift = Drift::of(&steady(180.7e3, 1.82e3));
        let before = RegionsBefore {
            audited: vec![180.8e3, 211.0e3, 198.6e3],
            ..RegionsBefore::default()
        };
        let scaled = drift.scaled(&[181.0e3, 207.8e3, 196.3e3], Some(&before), |b| &b.audited);
        assert_eq!(scaled[0], 181.0e3, "no move: as read");
        assert!((scaled[1] - 177.96e3).abs() < 10.0, "{scaled:?}");
        assert!((scaled[2] - 178.6e3).abs() < 10.0, "{scaled:?}");
        // Runs from before the window: as read.
        assert_eq!(
            drift.scaled(&[207.8e3], None, |b| &b.audited),
            vec![207.8e3]
        );
    }

    #[test]
    fn a_cheat_skipping_in_every_timed_launch_keeps_its_slow_regions() {
        // The samples before a region are as fast as the rest: nothing moved.
        let drift = Drift::of(&steady(100.0e3, 0.5e3));
        let before = RegionsBefore {
            audited: vec![100.2e3, 99.9e3],
            ..RegionsBefore::default()
        };
        let scaled = drift.scaled(&[200.0e3, 201.0e3], Some(&before), |b| &b.audited);
        assert_eq!(scaled, vec![200.0e3, 201.0e3]);
    }
}
