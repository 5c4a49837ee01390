//! Methodologies: how one launch is timed ([`timer`], CUPTI's [`spans`] read), what runs before it ([`warm_up`],
//! an L2 [`flush`]), the clock [`probe`] around a cell, adaptive stopping ([`stop`]) and the
//! per-cell [`budget`], a saturated queue's [`wait`], and the audit's regions ([`audit`]) and their confirmations ([`confirm`]) with the test for buffers
//! equal on the GPU ([`equal`]).

pub mod audit;
pub mod budget;
pub mod confirm;
pub mod equal;
pub mod flush;
pub mod probe;
pub mod spans;
#[cfg(test)]
mod spans_tests;
pub mod stop;
pub mod timer;
pub mod wait;

use crate::experiment::knobs::timer::TimerKind;
use cuda::{synchronize, CudaError, Launch};

/// `count` back-to-back launches with no sync between them, as the post's warm-up loop,
/// each after what `before_each` enqueues (the buffer resets of a kernel that needs them).
///
/// With events the timed launch follows at once, as in the post: its start event queues
/// behind the warm-up, so the timed kernel is already queued when the event fires. A host
/// timer's clock starts on the host, so for host timers the warm-up ends with a synchronize,
/// else the sample would time the warm-up's tail.
pub fn warm_up(
    launch: &mut Launch,
    count: u64,
    timer: TimerKind,
    mut before_each: impl FnMut() -> Result<(), CudaError>,
) -> Result<(), CudaError> {
    for _ in 0..count {
        before_each()?;
        launch.enqueue()?;
    }
    if timer == TimerKind::Events {
        return Ok(());
    }
    synchronize()
}
