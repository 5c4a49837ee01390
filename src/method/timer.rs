//! One timed launch per call. Each timed region holds only what its timer names; the
//! synchronize that ends a host-timer sample lies outside it.

use crate::experiment::TimerKind;
use crate::worker::gpu::{Event, Gpu, Launch};
use cudarc::driver::result::{self, DriverError};
use std::time::Instant;

/// What a timer needs, created once per cell outside any timed region.
pub struct Timer {
    kind: TimerKind,
    start: Event,
    stop: Event,
}

impl Timer {
    pub fn new(kind: TimerKind) -> Result<Timer, String> {
        Ok(Timer {
            kind,
            start: Event::new()?,
            stop: Event::new()?,
        })
    }

    /// Times one launch and returns nanoseconds; the GPU is idle again when it returns.
    #[inline]
    pub fn time(&self, gpu: &Gpu, launch: &mut Launch) -> Result<f64, DriverError> {
        match self.kind {
            TimerKind::Host => {
                let t0 = Instant::now();
                launch.enqueue()?;
                let elapsed = t0.elapsed();
                gpu.synchronize()?;
                Ok(elapsed.as_nanos() as f64)
            }
            TimerKind::HostSync => {
                let t0 = Instant::now();
                launch.enqueue()?;
                gpu.synchronize()?;
                Ok(t0.elapsed().as_nanos() as f64)
            }
            TimerKind::Events => {
                let stream = std::ptr::null_mut();
                // SAFETY: both events are live for the Timer's lifetime.
                unsafe {
                    result::event::record(self.start.0, stream)?;
                    launch.enqueue()?;
                    result::event::record(self.stop.0, stream)?;
                    result::event::synchronize(self.stop.0)?;
                    let ms = result::event::elapsed(self.start.0, self.stop.0)?;
                    Ok(ms as f64 * 1e6)
                }
            }
        }
    }
}
