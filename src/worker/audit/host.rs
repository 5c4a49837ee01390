//! The weaker audit's data where the GPU cannot draw it ([`super::input_draws::InputDraws`]): drawn on the
//! host with the audit's seed (the same for every variant at a point), kept on the device
//! across a point's cells ([`Stash`]), copied in, checked against a reference on the host
//! data and read back.

use super::common::{note, reference_cache, stale_or, wrote_input, Draw};
use crate::experiment::knobs::cache::Cache;
use crate::experiment::{ArgValue, Kernel};
use crate::method::equal;
use crate::plan::Cell;
use crate::worker::assemble::Checker;
use crate::worker::buffers::Buffers;
use crate::worker::failure::{during, Failure};
use crate::worker::inputs::{audit_seed, shares, HostInputs};
use crate::worker::kernels::KernelKey;
use crate::worker::prepare::{Data, ReadyCell};
use crate::worker::session::Session;
use crate::worker::stash::{copy_of, Stash};
use cuda::DeviceBuffer;

/// What an audit's launches read: the new draw, which inputs it changed, and the note.
pub(super) struct Staged {
    pub(super) seed: u64,
    pub(super) new: HostInputs,
    /// The inputs that hold new data, and those the draw left as timed.
    pub(super) changed: Vec<usize>,
    /// The inputs the kernel must leave as they are.
    pub(super) unwritten: Vec<usize>,
    pub(super) note: String,
}

impl Staged {
    /// Draws the audit's inputs for `cell` (the same for every variant and run at a point),
    /// with the stash that keeps them on the device.
    pub(super) fn draw(
        s: &mut Session,
        cell: &Cell,
        def: &Kernel,
        data: &Data,
    ) -> Result<Staged, Failure> {
        let buffers = &data.sets[0];
        let seed = audit_seed(cell);
        let new = (s.inputs).get(&cell.launch.args, seed, shares(cell))?;
        s.timeline.mark("audit draw");
        let inputs: Vec<usize> = buffers.inputs().collect();
        let (changed, kept): (Vec<usize>, Vec<usize>) =
            inputs.iter().partition(|&&i| new[i] != data.timed[i]);
        let stash = match s.audit_stash.take() {
            Some(stash) if stash.key == data.point => stash,
            _ => {
                let mut stash = Stash::upload(&data.point, buffers, &new)?;
                stash.seal(&mut s.kernels, &mut s.timeline, s.sample_seed)?;
                stash
            }
        };
        s.audit_stash = Some(stash);
        let note = note(def, &inputs, &changed, &kept);
        let unwritten = inputs.iter().copied().filter(|&i| !def.writes(i)).collect();
        Ok(Staged {
            seed,
            new,
            changed,
            unwritten,
            note,
        })
    }

    /// Copies the audit's inputs into `buffers` (from the stash where it holds them).
    pub(super) fn stage(&self, stash: Option<&Stash>, buffers: &Buffers) -> Result<(), Failure> {
        let copies = stash.map_or(&[][..], |s| &s.copies[..]);
        self.copy_in(buffers, copies, &self.new)
    }

    /// Copies `host`'s data into `buffers` (from `copies` on the device where they hold
    /// it), or, where no input could change, poisons the outputs instead: a launch that
    /// skips its work then leaves them unwritten.
    fn copy_in(
        &self,
        buffers: &Buffers,
        copies: &[Option<DeviceBuffer>],
        host: &HostInputs,
    ) -> Result<(), Failure> {
        if self.changed.is_empty() {
            return (buffers.poison_outputs()).map_err(during("audit: poisoning the outputs"));
        }
        (buffers.refill_from(copies, host)).map_err(during("audit: copying inputs in"))
    }
}

impl Staged {
    /// The audit's draw, to check on.
    pub(super) fn as_draw(&self) -> Draw<'_> {
        Draw {
            seed: self.seed,
            host: &self.new,
        }
    }
}

/// The audited output checked against the reference on the `checked` draw; a failed check
/// whose output still holds the `earlier` draw's result names the kernel as stale.
/// `recorded`: the kernels CUPTI is recording, where the check runs among timed launches.
pub(super) fn check_on(
    s: &mut Session,
    ready: ReadyCell,
    (checked, earlier): (Draw, Draw),
    changed: &[usize],
    recorded: Option<&[String]>,
) -> Result<String, Failure> {
    let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
    let cache = reference_cache((s.run_cache.as_deref(), s.sample_seed), data, checked);
    let checker = Checker {
        cell,
        def: Some(def),
        host: checked.host,
        reference: &cache,
        sample: Some(checked.seed ^ s.sample_seed),
        kept: &s.reference_buffers,
        stash: s.timed_stash.as_ref(),
    };
    let (kernels, timeline) = (&mut s.kernels, &mut s.timeline);
    (checker.check(kernels, timeline, &data.sets[0], recorded))
        .map_err(|f| stale_or(s, ready, earlier, changed, f))
}

/// The `unwritten` inputs came back from the audited launch as they went in (each against
/// its copy on the device where `copies` holds one, else against its `host` data).
pub(super) fn inputs_unchanged(
    s: &mut Session,
    def: &Kernel,
    args: &[ArgValue],
    buffers: &Buffers,
    (unwritten, host): (&[usize], &HostInputs),
    copies: &[Option<&DeviceBuffer>],
) -> Result<(), Failure> {
    for (&i, copy) in unwritten.iter().zip(copies) {
        let first = match copy {
            Some(copy) => first_difference(s, buffers, i, copy)?,
            None => buffers.first_change(i, host[i].as_deref().unwrap_or_default())?,
        };
        if let (Some(byte), ArgValue::Buffer { dtype, .. }) = (first, &args[i]) {
            return Err(wrote_input(def, i, byte / dtype.size()));
        }
    }
    Ok(())
}

impl Stash {
    /// What `cell` allocates on the device after its first set of buffers, at most: its
    /// other sets, its flush, its reference kernel's buffers, and the audit's draws (a set's
    /// worth).
    pub(in crate::worker) fn allocated_after(cell: &Cell) -> u64 {
        let sets = cell.knobs.rotate.sets(cell.knobs.launches);
        let flush = match cell.knobs.cache {
            Cache::Flush { bytes, .. } => bytes,
            Cache::Hot => 0,
        };
        let reference = (cell.reference_launch.as_ref()).map_or(0, |r| r.device_bytes());
        (cell.launch.device_bytes())
            .saturating_mul(sets)
            .saturating_add(reference)
            .saturating_add(flush)
    }

    /// Uploads `new`'s data of the inputs `buffers` keeps in device memory (none where a
    /// copy does not fit: those are uploaded each time).
    fn upload(point: &str, buffers: &Buffers, new: &HostInputs) -> Result<Stash, Failure> {
        Ok(Stash {
            key: point.to_string(),
            held: std::rc::Rc::clone(new),
            copies: device_copies(buffers, new)?,
            sums: Vec::new(),
        })
    }

    /// Lets go of the stashes' device memory before `cell` allocates, unless they are of
    /// `cell`'s point (the audit's) and draw key (the timed data's) and the cell's buffers
    /// (every set), its reference kernel's and its flush fit beside them: the audit's first,
    /// then the timed data's.
    pub(in crate::worker) fn forget_unless_at(s: &mut Session, cell: &Cell) {
        let keys = [cell.point_key(), cell.draw_key()];
        for (stash, key) in [&mut s.audit_stash, &mut s.timed_stash]
            .into_iter()
            .zip(keys)
        {
            if stash.as_ref().is_some_and(|st| st.key != key) {
                *stash = None;
            }
        }
        let needs = (cell.launch.device_bytes()).saturating_add(Stash::allocated_after(cell));
        for stash in [&mut s.audit_stash, &mut s.timed_stash] {
            let fits = cuda::memory_info().is_ok_and(|(free, _)| needs < free as u64);
            if !fits {
                *stash = None;
            }
        }
    }
}

/// A copy on the device of each of `data`'s inputs that `buffers` keeps in device memory
/// (None for the others, and where a copy does not fit: those are uploaded each time).
fn device_copies(
    buffers: &Buffers,
    data: &HostInputs,
) -> Result<Vec<Option<DeviceBuffer>>, Failure> {
    (0..data.len())
        .map(|i| match data[i].as_deref() {
            Some(bytes) => copy_of(buffers, i, Some(bytes), "audit: uploading inputs"),
            None => Ok(None),
        })
        .collect()
}

/// The first byte at which input `index` differs from its copy, compared on the GPU.
fn first_difference(
    s: &mut Session,
    buffers: &Buffers,
    index: usize,
    copy: &DeviceBuffer,
) -> Result<Option<usize>, Failure> {
    let Some(buf) = buffers.buffer(index) else {
        return Ok(None);
    };
    let compare = s
        .kernels
        .comparison(KernelKey::FirstDifference, &mut s.timeline)?;
    equal::first_difference(compare, buf, copy, None)
        .map_err(during("audit: comparing an input with its copy"))
}
