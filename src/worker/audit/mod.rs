//! The audit: launches of the cell's kernel on inputs no timed launch saw, their outputs
//! checked against the reference on those inputs and their inputs read back unchanged,
//! their times set against the timed launches'.
//!
//! Where it can, the audit sits among the timed launches ([`among`]): audited regions,
//! decoys and pauses at places drawn from a recorded seed, each the cell's own region (a
//! launch, a batch, a graph replay) on its own buffers, after the same resets and flush,
//! timed by the same timer, after a stage on the GPU and the same pause. An audited region
//! reads a draw of its own, made on the GPU ([`draw`]) and checked there ([`on_draw`]); a
//! decoy, the data the buffers held, drawn again; a pause, nothing new. The analysis
//! (`analysis::audits`) sets audited regions against decoys, pauses against the timed
//! launches. Elsewhere one launch after the timed ones ([`after`]) is the weaker audit,
//! and the record says why.

mod after;
mod among;
mod draw;
mod on_draw;

use super::arm::Armed;
use super::assemble::Checker;
use super::buffers::Buffers;
use super::failure::{during, Failure};
use super::inputs::{audit_seed, shares, HostInputs};
use super::kernels::{KernelKey, Kernels};
use super::prepare::{Data, ReadyCell};
use super::reference;
use super::timeline::Timeline;
use super::Session;
use crate::cuda::{self, DeviceBuffer};
use crate::experiment::knobs::{cache::Cache, timer::TimerKind};
use crate::experiment::{ArgValue, Kernel, Memory};
use crate::method::{audit, equal};
use crate::plan::{Cell, Role};
use crate::protocol::{AuditRecord, CellRecord};
use std::time::{Duration, Instant};

pub(super) use among::Among;

/// How a cell's run is audited, decided before its samples.
pub(super) enum Auditor {
    /// Not audited: unchecked by the user's choice, a floor cell, or a run of one launch
    /// per process other than the one drawn to be audited.
    Off,
    /// Regions among the timed ones, to be staged once the first timed launch is done
    /// (nothing may run on the GPU before a lazy first launch): the run, and when its cell
    /// began (the regions' share of its time counts from then).
    AmongToStage(u32, Instant),
    /// Audited regions among the timed ones, staged.
    Among(Box<Among>),
    /// One launch after the timed ones, and why no better.
    After(String),
}

impl Auditor {
    /// How `cell`'s run `process`, begun at `began`, is audited.
    pub(super) fn plan(ready: ReadyCell, (process, began): (u32, Instant)) -> Auditor {
        let ReadyCell { cell, code, data } = ready;
        let Some(def) = code.def.as_ref().filter(|d| audits(cell, Some(d), process)) else {
            return Auditor::Off;
        };
        match weaker(cell, def, data, process) {
            Some(why) => Auditor::After(why),
            None => Auditor::AmongToStage(process, began),
        }
    }

    /// Whether regions will sit among the timed launches: their batches and graphs then read
    /// their first launch apart (an event after it, which the timed regions carry too).
    pub(super) fn among(&self) -> bool {
        matches!(self, Auditor::AmongToStage(..) | Auditor::Among(_))
    }

    /// Stages the regions among the timed launches, where they are planned: the first
    /// draw on the GPU, the pause, the schedule.
    pub(super) fn stage(&mut self, s: &mut Session, ready: ReadyCell) -> Result<(), Failure> {
        let Auditor::AmongToStage(process, began) = *self else {
            return Ok(());
        };
        let among = Among::stage(s, ready, (process, began))?;
        *self = Auditor::Among(Box::new(among));
        Ok(())
    }

    /// Ends the audit once the timer's readings are in: the record of the regions among the
    /// timed launches (the analysis judges them), or the weaker audit's launch after them.
    pub(super) fn finish<'b>(
        self,
        s: &mut Session,
        ready: ReadyCell<'b>,
        armed: &mut Armed<'b>,
        rec: &mut CellRecord,
    ) -> Result<(), Failure> {
        match self {
            Auditor::Off | Auditor::AmongToStage(..) => Ok(()),
            Auditor::Among(among) => {
                rec.audit = Some(among.finish(s, ready.cell)?);
                Ok(())
            }
            Auditor::After(why) => after::run(s, ready, armed, rec, why),
        }
    }
}

/// Whether run `process` of `cell` (of kernel `def`) is audited: a measured cell of a
/// kernel with its check on, not a `[[copy]]`. The driver makes a copy: no code of the
/// experiment's could skip work, and the audit's refill just before it leaves the source
/// where no timed copy found it (on an H200 an honest 512 KiB pinned copy read 2.7x), at
/// the cost of a host draw of up to its size (a third of a transfers run).
///
/// Of a cell's runs too short to hold a region among their timed
/// launches (one launch per fresh process, or a sample or two per round), one drawn by the
/// seed is; the others would pay a new draw and check for a launch or two each.
pub(super) fn audits(cell: &Cell, def: Option<&Kernel>, process: u32) -> bool {
    let runs = cell.runs();
    let audited = (audit_seed(cell) % u64::from(runs.max(1))) as u32;
    let samples = cell.knobs.samples_per_run() as usize;
    let no_room = audit::first_round(samples, runs as usize, process as usize)[0] == 0;
    let another = no_room && runs > 1 && process != audited;
    def.is_some_and(|d| !d.unchecked && d.copy.is_none()) && cell.role == Role::Measure && !another
}

/// Why run `process` of the cell cannot hold audits among its timed launches, or None
/// where it can.
fn weaker(cell: &Cell, def: &Kernel, data: &Data, process: u32) -> Option<String> {
    let knobs = &cell.knobs;
    let samples = knobs.samples_per_run() as usize;
    let [audited, ..] = audit::first_round(samples, cell.runs() as usize, process as usize);
    let multi = knobs.launches.count() > 1;
    let in_place = (data.sets[0].inputs()).any(|i| def.writes(i));
    Some(
        match () {
            _ if knobs.timer == TimerKind::Profiler => {
                "the profiler's report holds a cell's launches in order: its audit comes last"
            }
            _ if samples == 0 => "no steady samples to sit among",
            _ if audited == 0 => "too few steady samples to hold a region apart from the first",
            _ if data.sets.len() > 1 => "its buffer sets rotate",
            _ if !data.fresh.is_empty() => "its inputs are drawn anew before each region",
            _ if def.copies() => "its launch copies memory, as the audit's staging would",
            _ if multi && in_place => {
                "it updates an input in place, which a region of several launches compounds"
            }
            _ if multi && data.sets[0].resets() => {
                "its region ends with its resets timed alone, which clear what it wrote"
            }
            _ => return None,
        }
        .to_string(),
    )
}

/// What an audit's launches read: the new draw, which inputs it changed, and the note.
struct Staged {
    seed: u64,
    new: HostInputs,
    /// The inputs that hold new data, and those the draw left as timed.
    changed: Vec<usize>,
    /// The inputs the kernel must leave as they are.
    unwritten: Vec<usize>,
    note: String,
}

impl Staged {
    /// Draws the audit's inputs for `cell` (the same for every variant and run at a point),
    /// with the stash that keeps them on the device.
    fn draw(s: &mut Session, cell: &Cell, def: &Kernel, data: &Data) -> Result<Staged, Failure> {
        let buffers = &data.sets[0];
        let seed = audit_seed(cell);
        let new = (s.inputs).get(&data.point, &cell.launch.args, seed, shares(cell))?;
        s.timeline.mark("audit draw");
        let inputs: Vec<usize> = buffers.inputs().collect();
        let (changed, kept): (Vec<usize>, Vec<usize>) =
            inputs.iter().partition(|&&i| new[i] != data.timed[i]);
        let stash = match s.audit_stash.take() {
            Some(stash) if stash.point == data.point => stash,
            _ => Stash::upload(&data.point, buffers, &new)?,
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
    fn stage(&self, stash: Option<&Stash>, buffers: &Buffers) -> Result<(), Failure> {
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
    fn as_draw(&self) -> Draw<'_> {
        Draw {
            seed: self.seed,
            host: &self.new,
        }
    }
}

impl Draw<'_> {
    /// The timed data: what the checked launch read.
    fn timed(data: &Data) -> Draw<'_> {
        Draw {
            seed: data.seed,
            host: &data.timed,
        }
    }
}

/// The names of arguments `indices` of `def`, for the audit's notes and failures.
fn names(def: &Kernel, indices: &[usize]) -> String {
    let names: Vec<&str> = indices.iter().map(|&i| def.args[i].name.as_str()).collect();
    names.join(", ")
}

/// What the audit launches' inputs hold: new data in the `changed` inputs, the `kept` ones
/// as timed, or, where none could change, poisoned outputs.
fn note(def: &Kernel, inputs: &[usize], changed: &[usize], kept: &[usize]) -> String {
    if changed.is_empty() {
        match inputs.is_empty() {
            true => "no inputs: the outputs poisoned again".to_string(),
            false => format!(
                "no input could be drawn anew ({}: constant, iota or a file): the outputs poisoned again",
                names(def, kept)
            ),
        }
    } else if kept.is_empty() {
        format!("new data in {}", names(def, changed))
    } else {
        format!(
            "new data in {}; {} as timed (constant, iota or a file)",
            names(def, changed),
            names(def, kept)
        )
    }
}

/// One of the data sets an audit's output is checked on: its seed (the reference results
/// are kept under it) and its data.
#[derive(Clone, Copy)]
struct Draw<'a> {
    seed: u64,
    host: &'a HostInputs,
}

/// The audited output checked against the reference on the `checked` draw; a failed check
/// whose output still holds the `earlier` draw's result names the kernel as stale.
/// `recorded`: the kernels CUPTI is recording, where the check runs among timed launches.
fn check_on(
    s: &mut Session,
    ready: ReadyCell,
    (checked, earlier): (Draw, Draw),
    changed: &[usize],
    recorded: Option<&[String]>,
) -> Result<String, Failure> {
    let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
    let buffers = &data.sets[0];
    let run_cache = s.run_cache.as_deref();
    let cache_of = |draw: &Draw| {
        let inputs = format!("{}#{}", data.point, draw.seed);
        reference::Cache::new(run_cache, inputs, s.sample_seed)
    };
    let (cache, earlier_cache) = (cache_of(&checked), cache_of(&earlier));
    let checker = Checker {
        cell,
        def: Some(def),
        host: checked.host,
        reference: &cache,
        sample: Some(checked.seed ^ s.sample_seed),
    };
    let (kernels, timeline) = (&mut s.kernels, &mut s.timeline);
    checker.check(kernels, timeline, buffers, recorded).map_err(|f| {
        let was_stale = !changed.is_empty()
            && holds_result(kernels, timeline, &earlier_cache, ready, earlier);
        match was_stale {
            true => Failure::from(format!("the output still holds the timed inputs' result: the launch on new data in {} did not compute it (a kernel that skips work once done, or keeps results by input)", names(def, changed))),
            false => f,
        }
        .during("audit on new inputs")
    })
}

/// The `unwritten` inputs came back from the audited launch as they went in (each against
/// its copy on the device where `copies` holds one, else against its `host` data).
fn inputs_unchanged(
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
            return Err(Failure::from(format!(
                "audit: the kernel wrote into its input `{}` (element {} differs from the data it was given): an input must come back as it went in, or, if the kernel updates it in place, be named among the check's outputs",
                def.args[i].name,
                byte / dtype.size()
            )));
        }
    }
    Ok(())
}

/// Why the audit's times are not set against the cell's reading, where they are not.
/// Managed memory the host has just refilled migrates back during the audited launch, which
/// the timed launches on resident pages did not pay; a host timer around an async launch
/// reads only its enqueue.
fn unjudged(cell: &Cell) -> Option<String> {
    let migrates = (cell.launch.args.iter()).any(
        |a| matches!(a, ArgValue::Buffer { memory: Memory::Managed, init, .. } if !init.is_written()),
    );
    match (migrates, cell.knobs.timer) {
        (true, _) => Some("its managed inputs migrate back on the audit's refill".to_string()),
        (false, TimerKind::Host) => Some("a host timer reads only the enqueue".to_string()),
        _ => None,
    }
}

/// The audit's inputs at one point, kept on the device by the point's first weaker audit
/// and copied into each later one's buffers there: a GiB of inputs crosses the host link
/// once per point and process, not once per cell.
pub struct Stash {
    point: String,
    /// Per argument: a copy of its audit data, for inputs in device memory.
    copies: Vec<Option<DeviceBuffer>>,
}

impl Stash {
    /// Uploads `new`'s data of the inputs `buffers` keeps in device memory (none where a
    /// copy does not fit: those are uploaded each time).
    fn upload(point: &str, buffers: &Buffers, new: &HostInputs) -> Result<Stash, Failure> {
        Ok(Stash {
            point: point.to_string(),
            copies: device_copies(buffers, new)?,
        })
    }

    /// Lets go of the stash's device memory before `cell` allocates, unless it is the stash
    /// of `cell`'s point and the cell's buffers (every set) and flush fit beside it.
    pub(super) fn forget_unless_at(s: &mut Session, cell: &Cell) {
        let Some(stash) = &s.audit_stash else {
            return;
        };
        let sets = cell.knobs.rotate.sets(cell.knobs.launches);
        let flush = match cell.knobs.cache {
            Cache::Flush { bytes, .. } => bytes,
            Cache::Hot => 0,
        };
        let needs = (cell.launch.device_bytes())
            .saturating_mul(sets)
            .saturating_add(flush);
        let fits = cuda::memory_info().is_ok_and(|(free, _)| needs < free as u64);
        if stash.point != cell.point_key() || !fits {
            s.audit_stash = None;
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

/// A new device buffer the size of argument `index`'s, holding `host`'s bytes or else a
/// copy of the buffer's own; None where the argument is not in device memory or no copy
/// fits (its caller then works from the host).
fn copy_of(
    buffers: &Buffers,
    index: usize,
    host: Option<&[u8]>,
    what: &'static str,
) -> Result<Option<DeviceBuffer>, Failure> {
    let Some(buf) = buffers.buffer(index).filter(|b| b.in_device_memory()) else {
        return Ok(None);
    };
    let Ok(copy) = DeviceBuffer::alloc(buf.bytes()) else {
        return Ok(None);
    };
    match host {
        Some(bytes) => copy.upload(bytes),
        None => copy.copy_from(buf),
    }
    .map_err(during(what))?;
    Ok(Some(copy))
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
    let func = s
        .kernels
        .function(KernelKey::FirstDifference, &mut s.timeline)?;
    equal::first_difference(&func, buf, copy)
        .map_err(during("audit: comparing an input with its copy"))
}

/// Whether the buffers' output, which failed its check on the new inputs, passes it on the
/// `earlier` draw: the audited launch left the earlier launches' result in place.
fn holds_result(
    kernels: &mut Kernels,
    timeline: &mut Timeline,
    cache: &reference::Cache,
    ready: ReadyCell,
    earlier: Draw,
) -> bool {
    let checker = Checker {
        cell: ready.cell,
        def: ready.code.def.as_ref(),
        host: earlier.host,
        reference: cache,
        sample: None,
    };
    checker
        .check(kernels, timeline, &ready.data.sets[0], None)
        .is_ok()
}

/// Host time since `start`, added to an audit's cost.
fn spent(cost: &mut Duration, start: Instant) {
    *cost += start.elapsed();
}

/// A fresh record for an audit: what it checked and on which inputs.
fn record(check: String, inputs: &str, cost: Duration) -> AuditRecord {
    AuditRecord {
        check,
        inputs: inputs.to_string(),
        cost_s: cost.as_secs_f64(),
        ..Default::default()
    }
}
