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
/// the start and the end a region's launches overlap with their neighbours'...
pub const ALONE_START_NS: f64 = 3_000.0;
/// ...and this share of the launch.
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
