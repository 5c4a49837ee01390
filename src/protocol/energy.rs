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
    /// How often NVML's counter moves: 20 updates in 2 s, 96.9 to 100.0 ms apart, on an
    /// H200 (driver 580). Each reading may be as old as this, so a loop of T seconds is read
    /// to within about this share of T.
    pub const COUNTER_STEP_S: f64 = 0.1;
    /// Shorter loops are not read: their energy would be off by more than a fifth.
    pub const MIN_SECONDS: f64 = 0.5;

    /// The share the counter's steps may put the reading off by.
    pub fn uncertainty(&self) -> f64 {
        Self::COUNTER_STEP_S / self.seconds
    }

    pub fn joules_per_launch(&self) -> f64 {
        self.joules / self.launches.max(1) as f64
    }

    pub fn watts(&self) -> f64 {
        self.joules / self.seconds
    }
}
