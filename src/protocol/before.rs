//! The timed samples just before each region: where the clock moves within a cell (an
//! H200 capped by power from sample 161 of 200 read an honest softmax graph at 181 µs, then
//! at 192-225 µs), regions that fall late read slow against decoys that fell early, and
//! the analysis sets each region against the timed launches before it instead
//! (`analysis::drift`). Only samples before a region: a kernel cannot know one follows
//! them, so it cannot slow them to hide a slow region.

use crate::statistics::{iqr_sigma, median};
use serde::{Deserialize, Serialize};

/// Timed samples before a region whose median stands for the cell's state there.
pub const BEFORE_WINDOW: usize = 8;

/// Standard errors of a window's median beyond which the state moved, and the share of the
/// cell's median it must move by too.
const MOVED_SE: f64 = 4.0;
const MOVED_SHARE: f64 = 0.01;

/// Whether the window before a region that ran before steady sample `place` (its median
/// `window_ns`, 0 where none was kept) lies from the cell's steady samples (their median and
/// interquartile range) beyond what so few samples give: [`MOVED_SE`] standard errors of a
/// window's median and [`MOVED_SHARE`] of the cell's median. Where the cell's clock moved,
/// the analysis sets such a region against its window (`analysis::drift`).
pub fn window_moved(window_ns: f64, place: u64, (median_ns, iqr_ns): (f64, f64)) -> bool {
    let window_se = iqr_sigma(iqr_ns) * (std::f64::consts::FRAC_PI_2 / BEFORE_WINDOW as f64).sqrt();
    let moved_ns = MOVED_SE * window_se + MOVED_SHARE * median_ns;
    window_ns > 0.0 && place as usize >= BEFORE_WINDOW && (window_ns - median_ns).abs() > moved_ns
}

/// A region's reading at the most the analysis may set it at: scaled up by the cell's
/// median over the window before it where that window moved ([`window_moved`]), as
/// `analysis::drift` scales it where the cell's clock moved (which, and by how much, the
/// telemetry says only after the run).
pub fn at_most_as_scaled(
    reading_ns: f64,
    (window_ns, place): (f64, u64),
    steady: (f64, f64),
) -> f64 {
    match window_moved(window_ns, place, steady) {
        true => reading_ns * (steady.0 / window_ns).max(1.0),
        false => reading_ns,
    }
}

/// Of each audited region, decoy and pause, in the order of their readings: the median of
/// the [`BEFORE_WINDOW`] timed samples before it, ns per launch; 0 where fewer came before
/// it (a window that held samples after it could be slowed by a kernel that tells a stage)
/// or none of them was read (a NaN would be stored as null, which an f64 does not read
/// back: the record would be unreadable).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RegionsBefore {
    pub audited: Vec<f64>,
    pub decoys: Vec<f64>,
    pub pauses: Vec<f64>,
}

impl RegionsBefore {
    /// From a run's timed samples (in the order they ran) and the positions of its audited
    /// regions, decoys and pauses; None where the run holds fewer samples than the window.
    pub fn of(samples: &[f64], positions: [&[u64]; 3]) -> Option<RegionsBefore> {
        if samples.iter().filter(|t| t.is_finite()).count() < BEFORE_WINDOW {
            return None;
        }
        let at = |positions: &[u64]| -> Vec<f64> {
            (positions.iter())
                .map(|&p| {
                    if (p as usize) < BEFORE_WINDOW {
                        return 0.0;
                    }
                    let end = (p as usize).min(samples.len());
                    let window = samples[end - BEFORE_WINDOW..end].iter();
                    median(window.copied().filter(|t| t.is_finite()).collect()).unwrap_or(0.0)
                })
                .collect()
        };
        let [audited, decoys, pauses] = positions.map(at);
        Some(RegionsBefore {
            audited,
            decoys,
            pauses,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_region_takes_the_median_of_the_samples_just_before_it() {
        let samples: Vec<f64> = (0..20).map(|i| 100.0 + i as f64).collect();
        let positions: [&[u64]; 3] = [&[12, 20], &[3], &[8]];
        let before = RegionsBefore::of(&samples, positions).unwrap();
        // Before sample 12: samples 4..12, 104-111.
        assert_eq!(before.audited, vec![107.5, 115.5]);
        // Fewer than the window before it: none.
        assert_eq!(before.decoys, vec![0.0]);
        assert_eq!(before.pauses, vec![103.5]);
        let short = RegionsBefore::of(&samples[..5], positions);
        assert!(short.is_none());
        // A window of no reading: 0, which stores and reads back.
        let mut unread = samples.clone();
        unread[4..12].fill(f64::NAN);
        let before = RegionsBefore::of(&unread, positions).unwrap();
        assert_eq!(before.audited[0], 0.0);
        let text = serde_json::to_string(&before).unwrap();
        assert_eq!(
            serde_json::from_str::<RegionsBefore>(&text).unwrap(),
            before
        );
    }

    #[test]
    fn a_region_after_samples_that_moved_reads_at_most_as_the_analysis_may_scale_it() {
        // A cell's samples at a median of 100 µs, an interquartile range of 1 µs: a window
        // moves beyond 4 standard errors of its median (1.3 µs) and 1% of the cell's.
        let steady = (100e3, 1e3);
        // After samples at 90 µs (the clock high), 100 µs may read 111 µs.
        let scaled = at_most_as_scaled(100e3, (90e3, 20), steady);
        assert!((scaled - 111.1e3).abs() < 0.1e3, "{scaled}");
        // After samples slower than the cell's, never scaled down; nor after a still window,
        // nor within the first window's samples.
        assert_eq!(at_most_as_scaled(100e3, (110e3, 20), steady), 100e3);
        assert_eq!(at_most_as_scaled(100e3, (99.5e3, 20), steady), 100e3);
        assert_eq!(at_most_as_scaled(100e3, (90e3, 5), steady), 100e3);
        assert_eq!(at_most_as_scaled(100e3, (0.0, 20), steady), 100e3);
    }
}
