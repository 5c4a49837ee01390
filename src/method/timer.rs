//! One timed sample per call. Each timed region holds only what its timer names: one launch,
//! `batch` launches back to back, or one replay of a graph of launches. The synchronize that
//! ends a host-timer sample, and a `queue = "saturate"` wait kernel, lie outside it.

use crate::experiment::TimerKind;
use crate::worker::gpu::{Event, Gpu, Graph, Launch};
use cudarc::driver::result::{self, DriverError};
use std::time::Instant;

/// What one timed region runs.
pub enum Body {
    /// `n` launches of the kernel, back to back.
    Launches(u64),
    /// One replay of a graph holding `n` launches.
    Graph(Graph, u64),
}

impl Body {
    /// Launches per region: a reading is divided by this.
    pub fn launches(&self) -> u64 {
        match self {
            Body::Launches(n) | Body::Graph(_, n) => *n,
        }
    }

    #[inline]
    fn enqueue(&self, launch: &mut Launch) -> Result<(), DriverError> {
        match self {
            Body::Launches(n) => {
                for _ in 0..*n {
                    launch.enqueue()?;
                }
                Ok(())
            }
            Body::Graph(g, _) => g.launch(),
        }
    }
}

/// A wait kernel enqueued before each timed region, so the region's work is already queued
/// when its start event fires (seed 002's sleep kernel; NVBench's blocking kernel).
pub struct Saturate {
    pub wait: Launch,
    done: Event,
    /// Samples whose wait had ended before the timed work was enqueued (too short a wait).
    pub too_short: u64,
}

impl Saturate {
    pub fn new(wait: Launch) -> Result<Saturate, String> {
        Ok(Saturate {
            wait,
            done: Event::new()?,
            too_short: 0,
        })
    }
}

/// What a timer needs, created once per cell outside any timed region.
pub struct Timer {
    kind: TimerKind,
    start: Event,
    stop: Event,
    pub saturate: Option<Saturate>,
}

impl Timer {
    pub fn new(kind: TimerKind, saturate: Option<Saturate>) -> Result<Timer, String> {
        Ok(Timer {
            kind,
            start: Event::new()?,
            stop: Event::new()?,
            saturate,
        })
    }

    /// Times one region and returns nanoseconds per launch; the GPU is idle again when it
    /// returns. CUPTI and profiler samples read NaN here: their values come afterwards.
    #[inline]
    pub fn time(
        &mut self,
        gpu: &Gpu,
        launch: &mut Launch,
        body: &Body,
    ) -> Result<f64, DriverError> {
        let per = body.launches() as f64;
        match self.kind {
            TimerKind::Host => {
                let t0 = Instant::now();
                body.enqueue(launch)?;
                let elapsed = t0.elapsed();
                gpu.synchronize()?;
                Ok(elapsed.as_nanos() as f64 / per)
            }
            TimerKind::HostSync => {
                let t0 = Instant::now();
                body.enqueue(launch)?;
                gpu.synchronize()?;
                Ok(t0.elapsed().as_nanos() as f64 / per)
            }
            TimerKind::Events => {
                let stream = std::ptr::null_mut();
                // SAFETY: the events are live for the Timer's lifetime.
                unsafe {
                    if let Some(s) = self.saturate.as_mut() {
                        s.wait.enqueue()?;
                        result::event::record(s.done.0, stream)?;
                    }
                    result::event::record(self.start.0, stream)?;
                    body.enqueue(launch)?;
                    result::event::record(self.stop.0, stream)?;
                    if let Some(s) = self.saturate.as_mut() {
                        // Done already: the start event may have fired on an empty queue.
                        if result::event::query(s.done.0).is_ok() {
                            s.too_short += 1;
                        }
                    }
                    result::event::synchronize(self.stop.0)?;
                    let ms = result::event::elapsed(self.start.0, self.stop.0)?;
                    Ok(ms as f64 * 1e6 / per)
                }
            }
            // Their values come afterwards: CUPTI's records, or the profiler's report.
            TimerKind::Cupti | TimerKind::Profiler => {
                body.enqueue(launch)?;
                gpu.synchronize()?;
                Ok(f64::NAN)
            }
        }
    }

    /// Host time to enqueue one events-timed region on an idle queue (median of `tries`):
    /// what a wait kernel must outlast.
    pub fn enqueue_cost_ns(
        &mut self,
        gpu: &Gpu,
        launch: &mut Launch,
        body: &Body,
        tries: usize,
    ) -> Result<f64, DriverError> {
        let stream = std::ptr::null_mut();
        let mut costs = Vec::with_capacity(tries);
        for _ in 0..tries {
            let t0 = Instant::now();
            // SAFETY: the events are live for the Timer's lifetime.
            unsafe {
                result::event::record(self.start.0, stream)?;
                body.enqueue(launch)?;
                result::event::record(self.stop.0, stream)?;
            }
            costs.push(t0.elapsed().as_nanos() as f64);
            gpu.synchronize()?;
        }
        costs.sort_by(f64::total_cmp);
        Ok(costs[costs.len() / 2])
    }
}
