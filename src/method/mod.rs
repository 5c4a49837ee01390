//! Methodologies: how one launch is timed ([`timer`]), what runs before it ([`warm_up`]),
//! and the bare cudarc loop the harness's own overhead is compared against ([`bare`]).

pub mod bare;
pub mod timer;

use crate::worker::gpu::{cuda_err, Gpu, Launch};

/// `count` back-to-back launches with no sync between them (as the post's warm-up loop),
/// then one synchronize so the timed region starts on an idle queue.
pub fn warm_up(gpu: &Gpu, launch: &mut Launch, count: u64) -> Result<(), String> {
    for _ in 0..count {
        launch
            .enqueue()
            .map_err(|e| cuda_err("warm-up launch", e))?;
    }
    gpu.synchronize()
        .map_err(|e| cuda_err("synchronize after warm-up", e))
}
