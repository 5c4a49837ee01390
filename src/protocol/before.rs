//! The timed samples just before each region: where the clock moves within a cell (an
//! H200 capped by power from sample 161 of 200 read an honest softmax graph at 181 µs, then
//! at 192-225 µs), regions that fall late read slow against decoys that fell early, and
//! the analysis sets each region against the timed launches before it instead
//! (`analysis::drift`). Only samples before a region: a kernel cannot know one follows
//! them, so it cannot slow them to hide a slow region.

use crate::statistics::median;
use serde::{Deserialize, Serialize};

/// Timed samples before a region whose median stands for the cell's state there.
pub const BEFORE_WINDOW: usize = 8;

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
}
