//! What the reduced samples are keyed by: the phase of a cell's timed launches, and the
//! telemetry series of each run. A leaf: the reduction, the statistics and the facts read it.

use crate::protocol::TelemetryPoint;
use std::collections::HashMap;

/// A phase of a cell's timed launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The first timed launch of each run.
    First,
    /// The samples after it.
    Steady,
}

impl Phase {
    pub fn key(self) -> &'static str {
        match self {
            Phase::First => "first",
            Phase::Steady => "steady",
        }
    }
}

/// Telemetry series by (cell, process).
pub type Series = HashMap<(u32, u32), Vec<TelemetryPoint>>;
