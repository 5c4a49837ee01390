//! Peers beside their variants: each peer's median reading per point, and whether the
//! runner's agrees with it (the peer is the reference): within max(1%, 2 µs) of it for
//! steady samples, max(10%, 20 µs) for single first launches (one per process, noisier by
//! nature).

use super::format;
use crate::analysis::median;
use crate::experiment::Unit;
use crate::store::Stored;
use std::collections::HashMap;

/// Each (peer, point label)'s median reading, in ns.
pub fn medians(s: &Stored) -> HashMap<(String, String), f64> {
    let mut times: HashMap<(String, String), Vec<f64>> = HashMap::new();
    for r in &s.peers {
        if let Some(t) = r.time_ns {
            times
                .entry((r.peer.clone(), r.point.clone()))
                .or_default()
                .push(t);
        }
    }
    times
        .into_iter()
        .filter_map(|(k, v)| Some((k, median(v)?)))
        .collect()
}

/// Whether the runner's reading agrees with the peer's.
pub fn agrees(peer_ns: f64, runner_ns: f64, first_launch: bool) -> bool {
    let d = (peer_ns - runner_ns).abs();
    if first_launch {
        d <= (0.10 * peer_ns).max(20_000.0)
    } else {
        d <= (0.01 * peer_ns).max(2_000.0)
    }
}

/// A peer's cell: its median, and its difference from the runner's with a verdict.
pub fn shown(peer: Option<f64>, runner: Option<f64>, first_launch: bool, unit: Unit) -> String {
    match (peer, runner) {
        (None, _) => "–".into(),
        (Some(p), None) => format::time(p, unit),
        (Some(p), Some(r)) => format!(
            "{} ({} {})",
            format::time(p, unit),
            format::percent((r - p) / p * 100.0),
            if agrees(p, r, first_launch) {
                "✓"
            } else {
                "⚠"
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_launches_agree_within_ten_percent_or_20_us_steady_ones_within_1_or_2() {
        assert!(agrees(234_500.0, 250_000.0, true));
        assert!(!agrees(234_500.0, 64_200.0, true));
        assert!(agrees(48_700.0, 49_000.0, false));
        assert!(!agrees(2_966_000.0, 2_762_000.0, false));
        assert!(agrees(2_000_000.0, 2_019_000.0, false));
        // Relative to the peer: 9.1% below a 37.37 ms reading agrees.
        assert!(agrees(37_370_000.0, 33_970_000.0, true));
    }
}
