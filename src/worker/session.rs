//! What a worker keeps across the cells of its job: the context, its kernels, its inputs and
//! the device's facts it uses.

use super::buffers::Buffers;
use super::compiler;
use super::failure::{self, Failure};
use super::inputs::InputCache;
use super::kernels::{KernelKey, Kernels};
use super::parent::Parent;
use super::stash::Stash;
use super::timeline::Timeline;
use crate::experiment::knobs::{
    cache::{Cache, FlushMethod},
    first_launch::FirstLaunch,
    queue::Queue,
    warmup::WarmupKernel,
};
use crate::experiment::{Memory, TelemetrySpec};
use crate::method::flush::FlushBuffer;
use crate::method::probe::{Probe, Reading};
use crate::plan::Cell;
use crate::telemetry::Sensor;
use cuda::{self, DeviceBuffer, Gpu};
use std::cell::RefCell;
use std::time::{Duration, Instant};

/// The device's facts a worker uses itself.
pub(super) struct Facts {
    pub(super) sm_count: i64,
    pub(super) l2_bytes: i64,
}

/// What a worker keeps across the cells of its job.
pub struct Session {
    /// The context, current for as long as the session lives.
    pub(super) _gpu: Gpu,
    /// The runner, checked before each cell.
    pub(super) parent: Parent,
    pub(super) facts: Facts,
    pub(super) sensor: Sensor,
    pub(super) telemetry: TelemetrySpec,
    pub(super) kernels: Kernels,
    pub(super) timeline: Timeline,
    /// The clock probe, made on first use when the experiment asks for it.
    pub(super) probe: Option<Probe>,
    pub(super) inputs: InputCache,
    /// The audit's inputs at the current point, on the device.
    pub(super) audit_stash: Option<Stash>,
    /// The timed inputs at the current point, on the device: its later cells' buffers and
    /// the reference kernel's buffers of a check on that data copy them there.
    pub(super) timed_stash: Option<Stash>,
    /// The current cell's reference kernel buffers: made by its check, reused by its audits'
    /// (an allocation, page-locked above all, and its free cost more than a check's kernel).
    pub(super) reference_buffers: RefCell<Option<Buffers>>,
    /// The audit's matmul reference's buffers, kept from cell to cell.
    pub(super) matmul_scratch: MatmulScratch,
    /// What the audit's stages took, by what they draw.
    pub(super) stage_times: StageTimes,
    /// Where drawn inputs and reference results are shared with the run's other processes.
    pub(super) run_cache: Option<std::path::PathBuf>,
    /// The run's seed of the checks' samples of large outputs.
    pub(super) sample_seed: u64,
}

/// What the audit's draw of the inputs and a stage's work (`worker::audit`'s
/// `InputDraws::timed_stage_work`) took on the GPU in this process, in ns, by the shapes of what
/// they draw and verify: a point's cells and an interleaved cell's runs draw the same, and
/// timing them again cost each run a draw and two verifies more (of a 268 MB input, about
/// 0.35 ms on an H200; the first draws took 18% of the interleaved audits of the seven trust
/// suites at a0d9e90). Every stage's pause is sized from it.
#[derive(Default)]
pub(super) struct StageTimes(Vec<(StageShape, (f64, f64))>);

impl StageTimes {
    /// The times of draws of `shape`, `measure`d the first time they are asked for.
    pub(super) fn of<E>(
        &mut self,
        shape: StageShape,
        measure: impl FnOnce() -> Result<(f64, f64), E>,
    ) -> Result<(f64, f64), E> {
        if let Some((_, known)) = self.0.iter().find(|(s, _)| *s == shape) {
            return Ok(*known);
        }
        let measured = measure()?;
        self.0.push((shape, measured));
        Ok(measured)
    }
}

/// What one draw writes and verifies, which its time depends on: elements, type code, whether
/// normal, memory, whether it starts on 16 bytes (else it is written element by element), and
/// whether a stage verifies it (an input no launch may write).
pub(super) type DrawShape = (u64, u32, bool, Memory, bool, bool);

/// The shapes of a stage's draws, in order.
pub(super) type StageShape = Vec<DrawShape>;

/// The matmul reference's device buffers, its sample's cells and what it found, kept for
/// the process: every sample is as large as the last where the output is large, and an
/// allocation of one took 3.8-9.8 ms on an H200 where earlier cells had freed theirs (the
/// first check of `trust-small`'s matmul cells at n = 320, against 0.1 ms for the next).
#[derive(Default)]
pub(super) struct MatmulScratch {
    pub(super) cells: Option<DeviceBuffer>,
    pub(super) found: Option<DeviceBuffer>,
}

impl Session {
    /// Keeps every SM busy writing a buffer twice the L2's size for `span` (the
    /// experiment's `gpu_warmup`), so the first cell does not meet an idle GPU.
    pub(super) fn warm_gpu(&mut self, span: Duration) -> Result<(), Failure> {
        let func = (self.kernels).function(KernelKey::Flush, &mut self.timeline)?;
        let buf = FlushBuffer::alloc(2 * self.facts.l2_bytes as usize)?;
        let mut busy = buf.flush(FlushMethod::Kernel, Some(&func), self.facts.sm_count)?;
        let start = Instant::now();
        while start.elapsed() < span {
            busy.run().map_err(failure::during("GPU warm-up"))?;
        }
        self.timeline.mark("GPU warm-up");
        Ok(())
    }

    /// The SM clock as the probe reads it now, when the experiment asks for probes.
    pub(super) fn probe(&mut self) -> Result<Option<Reading>, Failure> {
        if !self.telemetry.clock_probe {
            return Ok(None);
        }
        if self.probe.is_none() {
            let func = (self.kernels)
                .function(KernelKey::Probe, &mut self.timeline)
                .map_err(Failure::message)?;
            self.probe = Some(Probe::new(func).map_err(Failure::message)?);
        }
        let probe = self.probe.as_ref().expect("made above");
        let reading = probe.read().map_err(Failure::message)?;
        self.timeline.mark("clock probe");
        Ok(Some(reading))
    }

    /// Compiles and loads every kernel `cell` launches (what a priming process does).
    pub(super) fn load_all(&mut self, cell: &Cell) -> Result<(), cuda::CudaError> {
        if let (Some(k), FirstLaunch::Lazy) = (cell.kernel, cell.knobs.first_launch) {
            let (lazy, _) = self.kernels.lazy(
                k,
                cell.knobs.compile,
                compiler::Build::of(&cell.launch),
                &mut self.timeline,
            )?;
            // A library's kernels load (and JIT-compile) into the context at their first
            // launch: load them now, as a primed process needs them.
            lazy.kernel().resolve()?.load_into_context()?;
            if let Some(empty) = lazy.empty() {
                empty.resolve()?.load_into_context()?;
            }
        }
        let mut keys = vec![KernelKey::of(cell)];
        if cell.knobs.warmup.kernel == WarmupKernel::Empty {
            keys.push(KernelKey::Empty);
        }
        if let Cache::Flush { method, .. } = cell.knobs.cache {
            keys.extend(KernelKey::flush(method));
        }
        if cell.knobs.queue != Queue::Idle {
            keys.push(KernelKey::Spin);
        }
        for key in keys {
            // The experiment's kernel takes its options; the built-ins ignore them.
            self.kernels
                .get(key, compiler::Build::of(&cell.launch), &mut self.timeline)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_times_are_measured_once_for_each_shape() {
        let mut times = StageTimes::default();
        let shape = |count: u64| vec![(count, 2, false, Memory::Device, true, true)];
        let mut measured = 0;
        let mut measure = |ns: f64| {
            measured += 1;
            Ok::<_, ()>((ns, 2.0 * ns))
        };
        assert_eq!(times.of(shape(8), || measure(1.0)), Ok((1.0, 2.0)));
        assert_eq!(times.of(shape(8), || measure(5.0)), Ok((1.0, 2.0)));
        assert_eq!(times.of(shape(16), || measure(3.0)), Ok((3.0, 6.0)));
        // A failed measure keeps nothing.
        assert_eq!(times.of(shape(32), || Err(())), Err(()));
        assert_eq!(times.of(shape(32), || measure(4.0)), Ok((4.0, 8.0)));
        // A draw the stage verifies takes longer than one it only writes.
        let written = vec![(8, 2, false, Memory::Device, true, false)];
        assert_eq!(times.of(written, || measure(0.5)), Ok((0.5, 1.0)));
        assert_eq!(measured, 4);
    }
}
