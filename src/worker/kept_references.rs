//! A reference kernel's results on the audit's draws, kept from cell to cell of a worker.
//! Cells whose timed inputs share a draw key draw the same audited data in a run
//! (`audit::among`), so the reference kernel runs once for each draw, not once
//! for each cell that checks it: gemv's reference took 0.65 ms for each audited region on
//! an H200, in cells whose samples took 1-4 ms.

use crate::experiment::Kernel;
use crate::plan::Cell;
use crate::worker::buffers::Buffers;

/// Kept results take at most this many bytes of device memory (a cell whose buffers would
/// not fit beside them lets them go first).
const MOST_BYTES: u64 = 2 << 30;
/// A check whose reference took less than this keeps nothing: a new set of buffers for the
/// next draw (the kept one's go with it) cost 0.3 ms on an H200, more than a small
/// reference kernel's run and compare (`trust-small`'s softmax, 0.26 ms).
pub(super) const KEPT_ABOVE: std::time::Duration = std::time::Duration::from_micros(500);

/// The reference kernel's buffers after it ran on each draw, by the draw's seed, for one
/// family of cells (see [`family`]).
#[derive(Default)]
pub(super) struct KeptReferences {
    family: String,
    kept: Vec<Kept>,
}

struct Kept {
    seed: u64,
    buffers: Buffers,
    bytes: u64,
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
    /// The reference's buffers after it ran on the draw of `seed` in `family`.
    pub(super) fn get(&self, family: &str, seed: u64) -> Option<&Buffers> {
        let found = self.kept.iter().find(|k| k.seed == seed);
        found.filter(|_| self.family == family).map(|k| &k.buffers)
    }

    /// Keeps `buffers`, of `bytes` in device memory, as the reference's results on the draw
    /// of `seed` in `family` (another family's are let go); gives them back where they would
    /// take more than [`MOST_BYTES`] in all.
    pub(super) fn keep(
        &mut self,
        (family, seed): (&str, u64),
        buffers: Buffers,
        bytes: u64,
    ) -> Option<Buffers> {
        self.forget_unless(Some(family));
        let held: u64 = self.kept.iter().map(|k| k.bytes).sum();
        if held.saturating_add(bytes) > MOST_BYTES {
            return Some(buffers);
        }
        self.family = family.to_string();
        self.kept.push(Kept {
            seed,
            buffers,
            bytes,
        });
        None
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
