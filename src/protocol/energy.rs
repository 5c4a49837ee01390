//! A cell's energy over its steady samples, as the worker reads it from NVML.

use serde::{Deserialize, Serialize};

/// What the board used while a cell's steady samples ran: NVML's energy counter read before
/// and after them, so it holds the host's gaps between launches too (the board idles there).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Energy {
    pub joules: f64,
    /// The host's wall time between the two readings.
    pub seconds: f64,
    /// Launches of the measured kernel between them.
    pub launches: u64,
}

impl Energy {
    /// The counter's updates come tens of milliseconds apart: shorter loops are not read.
    pub const MIN_SECONDS: f64 = 0.25;

    pub fn joules_per_launch(&self) -> f64 {
        self.joules / self.launches.max(1) as f64
    }

    pub fn watts(&self) -> f64 {
        self.joules / self.seconds
    }
}
