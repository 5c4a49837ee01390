//! When two readings of the same work agree: a method against its reference (`[report]
//! bias`), and the runner against a peer program run beside it (`[[peer]]`, the peer being
//! the reference). The bias tables, the median tables and the findings all judge by these.

use crate::statistics::median;
use crate::store::Stored;
use std::collections::HashMap;

/// A method is close enough to its reference within this fraction or this many ns.
pub const TOLERANCE_FRACTION: f64 = 0.01;
pub const TOLERANCE_NS: f64 = 500.0;

/// The bias of `method` against `reference`: (ns, fraction).
pub fn bias(method: f64, reference: f64) -> (f64, f64) {
    (method - reference, (method - reference) / reference)
}

/// Whether a bias is within max(1%, 0.5 µs).
pub fn within_tolerance(ns: f64, fraction: f64) -> bool {
    ns.abs() <= TOLERANCE_NS || fraction.abs() <= TOLERANCE_FRACTION
}

/// Each (peer, point label)'s median reading, in ns.
pub fn peer_medians(s: &Stored) -> HashMap<(String, String), f64> {
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

/// Whether the runner's reading agrees with the peer's: within max(1%, 2 µs) of it for
/// steady samples, max(10%, 20 µs) for single first launches (one per process, noisier by
/// nature).
pub fn agrees_with_peer(peer_ns: f64, runner_ns: f64, first_launch: bool) -> bool {
    let d = (peer_ns - runner_ns).abs();
    if first_launch {
        d <= (0.10 * peer_ns).max(20_000.0)
    } else {
        d <= (0.01 * peer_ns).max(2_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bias_is_signed_in_time_and_fraction() {
        let (ns, f) = bias(22_000.0, 20_000.0);
        assert_eq!(ns, 2_000.0);
        assert!((f - 0.1).abs() < 1e-12);
        assert!(!within_tolerance(ns, f));
        assert!(
            within_tolerance(400.0, 0.2),
            "0.5 µs is close enough on a tiny kernel"
        );
        assert!(
            within_tolerance(-9_000.0, -0.009),
            "1% is close enough on a long one"
        );
    }

    #[test]
    fn first_launches_agree_within_ten_percent_or_20_us_steady_ones_within_1_or_2() {
        assert!(agrees_with_peer(234_500.0, 250_000.0, true));
        assert!(!agrees_with_peer(234_500.0, 64_200.0, true));
        assert!(agrees_with_peer(48_700.0, 49_000.0, false));
        assert!(!agrees_with_peer(2_966_000.0, 2_762_000.0, false));
        assert!(agrees_with_peer(2_000_000.0, 2_019_000.0, false));
        // Relative to the peer: 9.1% below a 37.37 ms reading agrees.
        assert!(agrees_with_peer(37_370_000.0, 33_970_000.0, true));
    }
}
