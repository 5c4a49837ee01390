//! A reference kernel's outputs on the audit's draws, kept from cell to cell of a worker.
//! Cells whose timed inputs share a draw key draw the same audited data in a run
//! (`audit::among`), so the reference kernel runs once for each draw, not once
//! for each cell that checks it: gemv's reference took 0.65 ms for each audited region on
//! an H200, in cells whose samples took 1-4 ms.

use crate::experiment::{Kernel, KernelCheck};
use crate::plan::Cell;
use crate::worker::buffers::Buffers;
use cuda::{CudaError, DeviceBuffer};

/// Kept results take at most this many bytes of device memory (a cell whose buffers would
/// not fit beside them lets them go first).
const MOST_BYTES: u64 = 2 << 30;
/// A check whose reference took less than this keeps nothing: a copy's allocation (a new
/// set of reference buffers took 0.3 ms on an H200 in `trust-small`'s softmax cells) would
/// cost more than the reference's runs it saves, the next cells each still comparing.
pub(super) const KEPT_ABOVE: std::time::Duration = std::time::Duration::from_micros(250);

/// Copies of a reference kernel's outputs after it ran on each draw, by the draw's seed, for
/// one family of cells (see [`family`]).
#[derive(Default)]
pub(super) struct KeptReferences {
    family: String,
    kept: Vec<Kept>,
}

struct Kept {
    seed: u64,
    outputs: Outputs,
}

/// A reference's outputs kept, each with the reference's argument it is.
type Outputs = Vec<(usize, DeviceBuffer)>;

/// A reference kernel's outputs to compare with: its buffers after it ran, or copies kept
/// from an earlier cell.
#[derive(Clone, Copy)]
pub(super) enum Theirs<'a> {
    Ran(&'a Buffers),
    Kept(&'a [(usize, DeviceBuffer)]),
}

impl Theirs<'_> {
    /// The reference's argument `r`'s buffer.
    pub(super) fn output(&self, r: usize) -> Option<&DeviceBuffer> {
        match self {
            Theirs::Ran(buffers) => buffers.buffer(r),
            Theirs::Kept(outputs) => outputs.iter().find(|(a, _)| *a == r).map(|(_, b)| b),
        }
    }
}

/// Copies in device memory of the reference's outputs `ran` holds for `outputs` (its
/// arguments), enqueued; None where one does not live in device memory.
fn copies(ran: &Buffers, outputs: &[usize]) -> Result<Option<Outputs>, CudaError> {
    let mut copies = Vec::new();
    for &r in outputs {
        let Some(src) = ran.buffer(r).filter(|b| b.in_device_memory()) else {
            return Ok(None);
        };
        let copy = DeviceBuffer::alloc(src.bytes())?;
        copy.copy_from(src)?;
        copies.push((r, copy));
    }
    Ok(Some(copies))
}

/// What a reference kernel's results on a draw depend on, beside the draw's seed: the
/// timed inputs' draw key (the drawn arguments' types, lengths and distributions, and the
/// data of those not drawn), the reference's launch at the point and how its arguments are
/// given. None where the kernel has no reference kernel.
pub(super) fn family(cell: &Cell, def: &Kernel) -> Option<String> {
    let check = def.check_kernel.as_ref()?;
    let launch = cell.reference_launch.as_ref()?;
    Some(format!("{}|{check:?}|{launch:?}", cell.draw_key()))
}

impl KeptReferences {
    /// The reference's outputs on the draw of `seed` in `family`.
    pub(super) fn get(&self, family: &str, seed: u64) -> Option<Theirs<'_>> {
        let found = self.kept.iter().find(|k| k.seed == seed);
        found
            .filter(|_| self.family == family)
            .map(|k| Theirs::Kept(&k.outputs))
    }

    /// Keeps copies of the outputs of `check`'s reference that `ran` holds after it ran on the
    /// draw of `seed` in `family` (another family's are let go), where they fit within
    /// [`MOST_BYTES`] and live in device memory.
    pub(super) fn keep_copies(
        &mut self,
        (family, seed): (&str, u64),
        ran: &Buffers,
        check: &KernelCheck,
    ) -> Result<(), CudaError> {
        self.forget_unless(Some(family));
        let outputs: Vec<usize> = (check.outputs.iter())
            .filter_map(|&o| check.reference_arg(o))
            .collect();
        let bytes = |b: &DeviceBuffer| b.bytes() as u64;
        let held: u64 = (self.kept.iter())
            .flat_map(|k| &k.outputs)
            .map(|(_, b)| bytes(b))
            .sum();
        let more: u64 = outputs
            .iter()
            .filter_map(|&r| ran.buffer(r))
            .map(bytes)
            .sum();
        if held.saturating_add(more) > MOST_BYTES {
            return Ok(());
        }
        if let Some(outputs) = copies(ran, &outputs)? {
            self.family = family.to_string();
            self.kept.push(Kept { seed, outputs });
        }
        Ok(())
    }

    /// Before `cell` (of kernel `def`) allocates: lets go of the kept results unless they
    /// are of its family and its buffers and its reference's fit beside them.
    pub(super) fn forget_unless_for(&mut self, cell: &Cell, def: Option<&Kernel>) {
        let family = def.and_then(|d| family(cell, d));
        self.forget_unless(family.as_deref());
        if self.kept.is_empty() {
            return;
        }
        let reference = cell
            .reference_launch
            .as_ref()
            .map_or(0, |r| r.device_bytes());
        let needs = cell.launch.device_bytes().saturating_add(reference);
        // The query takes milliseconds: only where something is kept.
        if !cuda::memory_info().is_ok_and(|(free, _)| needs < free as u64) {
            self.forget_unless(None);
        }
    }

    /// Lets go of the kept results unless they are of `family`.
    pub(super) fn forget_unless(&mut self, family: Option<&str>) {
        if family != Some(self.family.as_str()) {
            self.kept.clear();
            self.family.clear();
        }
    }
}
