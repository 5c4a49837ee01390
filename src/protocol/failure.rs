//! What failed when a run of a cell failed: the worker's step, or the worker itself, stored
//! beside the message so that a reader tells a wrong output from a launch that faulted or a
//! worker that died without reading the words.

use serde::{Deserialize, Serialize};

/// The kind of a failed record's failure (`failure`; absent in folders from before it was
/// recorded, and in records that did not fail).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// Compiling or loading the kernel, or its parameters against the arguments.
    Compile,
    /// Preparing the cell: its inputs and buffers, the L2 flush, graphs, the timer.
    SetUp,
    /// A launch of the kernel: the checked one, the warm-up, the timed ones.
    Launch,
    /// The output check: the output differs from its reference, or the reference could not
    /// be had.
    Check,
    /// Reading the timer (CUPTI's records too), the clock probe, the floor's bare loop.
    Timing,
    /// The audit on new inputs.
    Audit,
    /// The worker process ended while it ran the cell.
    WorkerLost,
    /// The cell overran its timeout, and its worker was killed.
    Timeout,
    /// The JIT cache the cell's worker was to start with could not be primed.
    Priming,
    /// Nsight Compute's report gave the cell no readings.
    Profiler,
}

impl FailureKind {
    /// The kind as the report's table of failed cells names it.
    pub fn word(self) -> &'static str {
        match self {
            FailureKind::Compile => "compile",
            FailureKind::SetUp => "set-up",
            FailureKind::Launch => "launch",
            FailureKind::Check => "check",
            FailureKind::Timing => "timing",
            FailureKind::Audit => "audit",
            FailureKind::WorkerLost => "worker lost",
            FailureKind::Timeout => "timeout",
            FailureKind::Priming => "priming",
            FailureKind::Profiler => "profiler",
        }
    }
}
