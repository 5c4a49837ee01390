//! A cell's inputs as the audit draws them on the GPU (`draw.rs`'s [`Draws`]): what is drawn,
//! what the kernel must leave as it is (read back at every stage that draws, after each audited
//! launch and after the samples), and what no draw reaches.

use super::common::{note, wrote_input};
use super::draw::Draws;
use crate::experiment::Kernel;
use crate::experiment::{ArgValue, Init};
use crate::plan::Cell;
use crate::worker::buffers::Buffers;
use crate::worker::failure::Failure;
use crate::worker::inputs::HostInputs;
use crate::worker::kernels::KernelKey;
use crate::worker::session::{Session, StageTimes};
use cuda::{CudaError, DeviceBuffer, Dims, Function, Launch, Param};

/// A cell's inputs as the audit draws them on the GPU (`draw.rs`): the draws of those it can
/// draw, those the kernel must leave as they are verified (on the GPU after a launch and at
/// every stage that draws), and the inputs no draw reaches (constants, ranges, files,
/// chases, pageable memory), read back against the timed data.
pub(super) struct InputDraws {
    inputs: Vec<usize>,
    pub(super) draws: Draws,
    kept: Vec<usize>,
    /// Where every stage that draws first verifies the held data of the inputs no launch may
    /// write, and the read-back after the samples too ([`InputDraws::held_change`]).
    between: DeviceBuffer,
    /// A pause's stage on the GPU (`audit_hold`).
    hold: Function,
}

impl InputDraws {
    /// The draws of `def`'s inputs in `buffers`. The draw kernel compiles once a process, as
    /// the cell's own kernel does: the process's cost, not the audit's.
    pub(super) fn of(
        s: &mut Session,
        cell: &Cell,
        def: &Kernel,
        buffers: &Buffers,
    ) -> Result<Self, Failure> {
        let kernel = s.kernels.function(KernelKey::AuditDraw, &mut s.timeline)?;
        let args = &cell.launch.args;
        let inputs: Vec<usize> = buffers.inputs().collect();
        let input = |i: usize| inputs.contains(&i).then_some(i);
        let draws = Draws::verifying(kernel, args, buffers, input, |i| !def.writes(i))?;
        let kept = (inputs.iter().copied())
            .filter(|i| !draws.args.contains(i))
            .collect();
        let between = DeviceBuffer::alloc(8 * draws.args.len().max(1))?;
        between.fill(0xFF)?;
        let hold = s.kernels.function(KernelKey::AuditHold, &mut s.timeline)?;
        Ok(InputDraws {
            inputs,
            draws,
            kept,
            between,
            hold,
        })
    }

    /// A pause's stage: one thread on the GPU spins `stage_ns`, as long as a stage's work took
    /// ([`InputDraws::timed_stage_work`]), writing nothing, so that the GPU idles as long
    /// before a pause's region as before a staged one's. A pause that ran nothing left it
    /// idle through the whole wait: in `trust`'s hot cells on an H200 at 92de08e the pauses'
    /// gaps on the GPU read about 2% over the staged regions'.
    pub(super) fn hold(&self, stage_ns: u64) -> Result<(), CudaError> {
        Launch::new(&self.hold, Dims::ONE, &[Param::u64(stage_ns)]).enqueue()
    }

    /// A stage's work: where `seed` is drawn, the held data (`held`) of the inputs no launch
    /// may write verified first, so that a kernel that marks an input between its timed
    /// launches is found at every stage that draws, not only once after the samples, where
    /// a kernel that counts its launches could have taken the mark away (the stage's wait
    /// covers both, in one pass: [`Draws::verify_then_write`]).
    pub(super) fn verify_then_draw(&self, held: u64, seed: u64) -> Result<(), CudaError> {
        self.draws.verify_then_write(held, seed, &self.between)
    }

    /// What a draw of the inputs, and a stage's work (the held data's verify and a draw, in
    /// the one pass a stage runs), take on the GPU, in ns, each timed after a first of its
    /// kind, which pays what later ones do not (timed first, a 64 MiB input's verify read 38 µs
    /// on an H200 where its draw read 26 µs); the held data drawn either way. Timed once a
    /// process for draws of the same shapes ([`StageTimes`]).
    pub(super) fn timed_stage_work(
        &self,
        held: u64,
        times: &mut StageTimes,
    ) -> Result<(f64, f64), CudaError> {
        self.draws.write(held)?;
        times.of(self.draws.shape().to_vec(), || {
            let draw_ns = self.draws.timed(|d| d.write(held))?;
            self.verify_then_draw(held, held)?;
            let stage_ns = self.draws.timed(|_| self.verify_then_draw(held, held))?;
            Ok((draw_ns, stage_ns))
        })
    }

    /// The first element of the inputs no launch may write that differed from the held data
    /// at a stage that drew, or differs from `held` now, as (argument, element).
    pub(super) fn held_change(&self, held: u64) -> Result<Option<(usize, u64)>, CudaError> {
        self.draws.verify_into(held, &self.between)?;
        self.draws.first_in(&self.between)
    }

    /// Whether the draws give new data wherever a new seed would: something is drawn, and
    /// every input left is one no seed changes (a constant, a range, a file).
    pub(super) fn draw_all_that_varies(&self, args: &[ArgValue]) -> bool {
        let fixed = |i: &usize| {
            matches!(
                &args[*i],
                ArgValue::Buffer {
                    init: Init::Constant(_) | Init::Iota(..) | Init::Npy { .. },
                    ..
                }
            )
        };
        !self.draws.is_empty() && self.kept.iter().all(fixed)
    }

    /// What a launch on the draws reads, for the record.
    pub(super) fn note(&self, def: &Kernel) -> String {
        note(def, &self.inputs, &self.draws.args, &self.kept)
    }

    /// The first element of the drawn inputs no launch may write that differs from the draw
    /// of `seed`, as (argument, element); None where all equal.
    pub(super) fn first_change(&self, seed: u64) -> Result<Option<(usize, u64)>, CudaError> {
        self.draws.first_change(seed)
    }

    /// The launch left its inputs as they went in: the drawn ones as the draw of `seed`
    /// (verified on the GPU), and, where `kept_too`, the others as `timed` (read back).
    pub(super) fn unchanged(
        &self,
        (def, args): (&Kernel, &[ArgValue]),
        buffers: &Buffers,
        (seed, timed): (u64, &HostInputs),
        kept_too: bool,
    ) -> Result<(), Failure> {
        if let Some((arg, element)) = self.first_change(seed)? {
            return Err(wrote_input(def, arg, element as usize));
        }
        if kept_too {
            for &i in &self.kept {
                let host = timed[i].as_deref().unwrap_or_default();
                if let Some(byte) = buffers.first_change(i, host)? {
                    let size = match &args[i] {
                        ArgValue::Buffer { dtype, .. } => dtype.size(),
                        ArgValue::Scalar { .. } => 1,
                    };
                    return Err(wrote_input(def, i, byte / size));
                }
            }
        }
        Ok(())
    }
}
