//! A reference kernel's outputs on the audit's draws, kept from cell to cell of a worker.
//! Cells whose timed inputs share a draw key draw the same audited data in a run
//! (`audit::among`), so the reference kernel runs once for each draw, not once
//! for each cell that checks it: gemv's reference took 0.65 ms for each audited region on
//! an H200, in cells whose samples took 1-4 ms.

use crate::experiment::{Kernel, KernelCheck};
use crate::plan::Cell;
use crate::worker::buffers::Buffers;
use crate::worker::timeline::Timeline;
use cuda::{CudaError, DeviceBuffer};
use std::collections::HashMap;

/// Kept results take at most this many bytes of device memory (a cell whose buffers would
/// not fit beside them lets them go first).
const MOST_BYTES: u64 = 2 << 30;
/// A check's outputs are kept where the reference's run (its inputs and its launch, which a
/// copy saves a later cell; not the compare, which it still pays) took at least this long:
/// each keep allocates its copies, 1.7-7.6 ms for the first of a cell on an H200, where
/// `trust-small`'s references ran in 0.1-0.2 ms and its checks took 154.7 ms against 139.5 ms
/// when kept from any (9403d48)...
const KEPT_ABOVE: std::time::Duration = std::time::Duration::from_micros(500);
/// ...and the runs they save in the cells of its family still to come in the worker take at
/// least this long: a copy's allocation took 0.2-1.0 ms for 256 MiB and 5.0 ms for 64 MiB once
/// on an H200, and a transpose whose one later cell saved a 0.34 ms check spent 5 ms more on
/// audits (`transpose` at 20f93ee).
const KEEP_WORTH: std::time::Duration = std::time::Duration::from_millis(1);

/// The phases of a reference kernel's run that its check marks and a kept copy saves: its
/// buffers readied, its launch.
pub(super) const REFERENCE_RUN: [&str; 2] = ["reference buffers", "reference kernel"];

/// Copies of a reference kernel's outputs after it ran on each draw, by the draw's seed, for
/// one family of cells (see [`family`]).
#[derive(Default)]
pub(super) struct KeptReferences {
    family: String,
    kept: Vec<Kept>,
    /// The worker's runs still to come, by family and run index (cells of one family and
    /// run index draw the same), and the running cell's.
    ahead: HashMap<(String, u32), usize>,
    running: Option<(String, u32)>,
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

    /// The worker's runs, each a cell's family (None: no reference kernel) and run index.
    pub(super) fn plan(&mut self, runs: impl IntoIterator<Item = (Option<String>, u32)>) {
        for (family, process) in runs {
            if let Some(family) = family {
                *self.ahead.entry((family, process)).or_default() += 1;
            }
        }
    }

    /// Whether the reference's run the timeline marked last (its inputs and its launch, which
    /// a copy saves a later cell, not the compare) is worth keeping copies of its outputs: it
    /// took [`KEPT_ABOVE`], and the running cell's later runs of its family would spend
    /// [`KEEP_WORTH`] on it. An audited check marks the timeline just before it (`audit
    /// inputs read back`), and a compile its own phases, so those two are the reference's.
    pub(super) fn worth_keeping(&self, timeline: &Timeline) -> bool {
        let reference: f64 = (REFERENCE_RUN.iter())
            .filter_map(|phase| timeline.ms_of(phase))
            .sum::<f64>()
            * 1e-3;
        reference >= KEPT_ABOVE.as_secs_f64()
            && reference * self.later() as f64 >= KEEP_WORTH.as_secs_f64()
    }

    /// The runs of the running cell's family and run index that follow it in the worker.
    pub(super) fn later(&self) -> usize {
        let running = self.running.as_ref();
        running.map_or(0, |r| self.ahead.get(r).copied().unwrap_or(0))
    }

    /// Marks run `process` of a cell of `family` begun.
    fn begin(&mut self, family: Option<&str>, process: u32) {
        self.running = family.map(|f| (f.to_string(), process));
        if let Some(left) = self.running.as_ref().and_then(|r| self.ahead.get_mut(r)) {
            *left = left.saturating_sub(1);
        }
    }

    /// Before run `process` of `cell` (of kernel `def`) allocates: lets go of the kept
    /// results unless they are of its family and its buffers and its reference's fit beside
    /// them.
    pub(super) fn forget_unless_for(
        &mut self,
        (cell, process): (&Cell, u32),
        def: Option<&Kernel>,
    ) {
        let family = def.and_then(|d| family(cell, d));
        self.begin(family.as_deref(), process);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_later_cells_are_those_of_its_family_and_run_index_still_to_come() {
        let mut kept = KeptReferences::default();
        let f = |s: &str| Some(s.to_string());
        kept.plan([
            (f("a"), 0),
            (f("a"), 0),
            (f("a"), 1),
            (f("b"), 0),
            (None, 0),
            (f("a"), 0),
        ]);
        kept.begin(Some("a"), 0);
        assert_eq!(
            kept.later(),
            2,
            "two more of a's run 0, its run 1 draws other data"
        );
        kept.begin(Some("b"), 0);
        assert_eq!(kept.later(), 0);
        kept.begin(Some("a"), 0);
        assert_eq!(kept.later(), 1);
        kept.begin(None, 0);
        assert_eq!(kept.later(), 0, "no reference kernel");
    }

    #[test]
    fn a_family_is_the_inputs_the_check_and_the_references_launch_whatever_the_kernel() {
        let kernel = |name: &str, entry: &str, extra: &str| {
            format!("[[kernel]]\nname = \"{name}\"\nsource = \"k.cu\"\nentry = \"{entry}\"\ngrid = [1]\nblock = [1]\nargs = [{{ name = \"x\", buffer = \"f32\", len = \"n\", init = \"uniform(0, 1)\" }}, {{ name = \"y\", buffer = \"f32\", len = \"n\", init = \"output\" }}]\n{extra}\n")
        };
        let check = "check_kernel = { kernel = \"ref\", outputs = [\"y\"] }";
        let text = format!(
            "[experiment]\ntitle = \"t\"\n[sweep]\nn = [4, 8]\n{}{}{}{}[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"cold\"\ncache = \"flush\"\n[report]\nfloor = false\n",
            kernel("ref", "r", "timed = false"),
            kernel("a", "k", check),
            kernel("b", "k", check),
            kernel("plain", "k", "unchecked = true"),
        );
        let e = crate::experiment::Experiment::from_text(&text).unwrap();
        let plan = crate::plan::Plan::new(&e).unwrap();
        let of = |id: &str| {
            let cell = plan.cells.iter().find(|c| c.id == id).unwrap();
            family(cell, &e.kernels[cell.kernel.unwrap()])
        };
        let a4 = of("a/n=4/hot").unwrap();
        assert_eq!(of("a/n=4/cold").as_ref(), Some(&a4), "another variant");
        assert_eq!(
            of("b/n=4/hot").as_ref(),
            Some(&a4),
            "another kernel, the same check"
        );
        assert_ne!(of("a/n=8/hot").as_ref(), Some(&a4), "other inputs");
        assert_eq!(of("plain/n=4/hot"), None, "no reference kernel");
    }
}
