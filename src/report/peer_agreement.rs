//! Peers beside their variants: each peer's median reading per point, and whether the
//! runner's agrees with it (`analysis::agreement`).

use super::format;
use crate::analysis::agreement::agrees_with_peer;
use crate::experiment::Unit;

/// A peer's cell: its median, and its difference from the runner's with a verdict.
pub fn shown(peer: Option<f64>, runner: Option<f64>, first_launch: bool, unit: Unit) -> String {
    match (peer, runner) {
        (None, _) => "–".into(),
        (Some(p), None) => format::time(p, unit),
        (Some(p), Some(r)) => format!(
            "{} ({} {})",
            format::time(p, unit),
            format::percent((r - p) / p * 100.0),
            if agrees_with_peer(p, r, first_launch) {
                "✓"
            } else {
                "⚠"
            }
        ),
    }
}
