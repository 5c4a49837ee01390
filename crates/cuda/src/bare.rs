//! The yardstick for the harness's own host overhead: the plainest cudarc loop that times an
//! empty kernel with events, written with cudarc's safe API and nothing of the harness.

use super::error::CudaError;
use cudarc::driver::{sys::CUevent_flags, CudaContext, LaunchConfig};
use cudarc::nvrtc::Ptx;
use std::time::Instant;

/// Runs `samples` event-timed empty launches; returns (wall ns per sample, median events ns).
pub fn events_loop(cubin: &[u8], entry: &str, samples: usize) -> Result<(f64, f64), CudaError> {
    let err = |what: &str, e: cudarc::driver::DriverError| {
        CudaError::driver(format!("bare cudarc loop, {what}"), e)
    };
    let ctx = CudaContext::new(0).map_err(|e| err("context", e))?;
    // SAFETY: one stream, so the per-argument event tracking has nothing to order.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.default_stream();
    let module = ctx
        .load_module(Ptx::from_binary(cubin.to_vec()))
        .map_err(|e| err("module", e))?;
    let f = module
        .load_function(entry)
        .map_err(|e| err("function", e))?;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    // cudarc's default event flags disable timing; a timing event must ask for it.
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = ctx.new_event(timing).map_err(|e| err("event", e))?;
    let stop = ctx.new_event(timing).map_err(|e| err("event", e))?;
    let mut times = Vec::with_capacity(samples);
    let one = || -> Result<f32, cudarc::driver::DriverError> {
        start.record(&stream)?;
        // SAFETY: the empty kernel takes no arguments.
        unsafe { stream.launch_builder(&f).launch(cfg)? };
        stop.record(&stream)?;
        stop.synchronize()?;
        start.elapsed_ms(&stop)
    };
    for _ in 0..100 {
        one().map_err(|e| err("warm-up", e))?;
    }
    let t0 = Instant::now();
    for _ in 0..samples {
        times.push(one().map_err(|e| err("sample", e))?);
    }
    let wall = t0.elapsed().as_nanos() as f64 / samples.max(1) as f64;
    times.sort_by(|a, b| a.total_cmp(b));
    let median = times.get(times.len() / 2).copied().unwrap_or(f32::NAN) as f64 * 1e6;
    Ok((wall, median))
}
