//! Methodologies: how one launch is timed ([`timer`]), what runs before it ([`warm_up`]),
//! and the bare cudarc loop the harness's own overhead is compared against ([`bare`]).

pub mod bare;
pub mod flush;
pub mod probe;
pub mod stop;
pub mod timer;

use crate::experiment::TimerKind;
use crate::worker::gpu::{cuda_err, Gpu, Launch};

/// `count` back-to-back launches with no sync between them, as the post's warm-up loop.
///
/// With events the timed launch follows at once, as in the post: its start event queues
/// behind the warm-up, so the timed kernel is already queued when the event fires. A host
/// timer's clock starts on the host, so for host timers the warm-up ends with a synchronize,
/// else the sample would time the warm-up's tail.
pub fn warm_up(gpu: &Gpu, launch: &mut Launch, count: u64, timer: TimerKind) -> Result<(), String> {
    for _ in 0..count {
        launch
            .enqueue()
            .map_err(|e| cuda_err("warm-up launch", e))?;
    }
    if timer == TimerKind::Events {
        return Ok(());
    }
    gpu.synchronize()
        .map_err(|e| cuda_err("synchronize after warm-up", e))
}
