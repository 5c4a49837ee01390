//! The audit, a cell's last step: one more launch of its kernel after the timed samples,
//! on inputs no timed launch saw (a fresh draw of each input's `init`), its outputs left as
//! the timed launches left them (a kernel that skips work it has done shows a stale result)
//! and its buffers reset, in the cell's cache state. Its output is checked against the
//! reference on the new inputs, its inputs are read back unchanged, and its time is set
//! against the cell's reading ([`crate::method::audit`]): a cell whose timed launches did
//! less than the checked work fails or is marked suspect.

use super::arm::Armed;
use super::assemble::Checker;
use super::buffers::Buffers;
use super::failure::{during, Failure};
use super::inputs::{audit_seed, shares, HostInputs};
use super::kernels::{KernelKey, Kernels};
use super::prepare::{Code, Data};
use super::reference;
use super::timeline::Timeline;
use super::Session;
use crate::cuda::{self, cupti, DeviceBuffer, Dims, Launch, Param};
use crate::experiment::knobs::{cache::Cache, timer::TimerKind};
use crate::experiment::{ArgValue, Kernel, Memory};
use crate::median::median;
use crate::method::timer::{Body, Saturate, Timer};
use crate::method::{audit::suspect, compare};
use crate::plan::{Cell, Role};
use crate::protocol::{AuditRecord, CellRecord};
use std::path::Path;

/// Audits the cell's timed launches; a failure fails the cell (its samples are dropped).
/// Unchecked kernels (by the user's choice) and the floor cells are not audited.
pub(super) fn run<'b>(
    s: &mut Session,
    cell: &Cell,
    code: &Code,
    data: &'b Data,
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
) -> Result<(), Failure> {
    let Some(def) = code.def.as_ref() else {
        return Ok(());
    };
    if cell.role != Role::Measure || def.unchecked {
        return Ok(());
    }
    let spec = &cell.launch;
    let buffers = &data.sets[0];
    let seed = audit_seed(cell);
    let new = s.inputs.get(&data.point, &spec.args, seed, shares(cell))?;
    let inputs: Vec<usize> = buffers.inputs().collect();
    let (changed, kept): (Vec<usize>, Vec<usize>) =
        inputs.iter().partition(|&&i| new[i] != data.timed[i]);
    let stash = match s.audit_stash.take() {
        Some(stash) if stash.point == data.point => stash,
        _ => Stash::upload(&data.point, buffers, &new)?,
    };
    buffers
        .refill_from(&stash.copies, &new)
        .map_err(during("audit: copying new inputs"))?;
    s.audit_stash = Some(stash);
    let note = new_inputs(def, buffers, &inputs, &changed, &kept)?;
    // The inputs the kernel must leave as they are, kept on the device where they fit.
    let unwritten: Vec<usize> = inputs.iter().copied().filter(|&i| !def.writes(i)).collect();
    let kept = keep(buffers, &unwritten)?;
    s.timeline.mark("audit inputs");
    for (i, v) in armed.params[0].iter().enumerate() {
        armed.launch.set_param(i, *v);
    }
    let (launch_ns, queue_ran_dry) = time_launch(s, cell, buffers, armed)?;
    rec.kernel_launches += 1;
    s.timeline.mark("audit launch");
    let check = check_on_new_inputs(s, cell, def, data, &new, seed, &changed)?;
    inputs_unchanged(s, def, &spec.args, buffers, &unwritten, &kept, &new)?;
    s.timeline.mark("audit check");

    let unjudged = unjudged(&spec.args, queue_ran_dry);
    let reading = median(rec.samples_ns.clone()).or(rec.first_ns);
    let verdict = match (launch_ns, reading, &unjudged) {
        (Some(a), Some(r), None) => suspect(cell.knobs.timer, r, a),
        _ => None,
    };
    rec.audit = Some(AuditRecord {
        check,
        inputs: note,
        launch_ns,
        launches: 1,
        suspect: verdict,
        unjudged,
    });
    Ok(())
}

/// The names of arguments `indices` of `def`, for the audit's notes and failures.
fn names(def: &Kernel, indices: &[usize]) -> String {
    let names: Vec<&str> = indices.iter().map(|&i| def.args[i].name.as_str()).collect();
    names.join(", ")
}

/// What the audit launch's inputs hold: new data in the `changed` inputs, the `kept` ones as
/// timed. Where no input could change, a stale output would equal a fresh one: the outputs
/// are poisoned again instead, so that a launch that skips its work leaves them unwritten.
fn new_inputs(
    def: &Kernel,
    buffers: &Buffers,
    inputs: &[usize],
    changed: &[usize],
    kept: &[usize],
) -> Result<String, Failure> {
    Ok(if changed.is_empty() {
        buffers
            .poison_outputs()
            .map_err(during("audit: poisoning the outputs"))?;
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
    })
}

/// The audit launch's output checked against the reference on the `new` inputs; a failed
/// check that still holds the timed inputs' result names the kernel as stale.
fn check_on_new_inputs(
    s: &mut Session,
    cell: &Cell,
    def: &Kernel,
    data: &Data,
    new: &HostInputs,
    seed: u64,
    changed: &[usize],
) -> Result<String, Failure> {
    let buffers = &data.sets[0];
    let run_cache = s.run_cache.as_deref();
    let cache = reference::Cache::new(run_cache, format!("{}#{seed}", data.point));
    let checker = Checker {
        cell,
        def: Some(def),
        host: new,
        reference: &cache,
    };
    let (kernels, timeline) = (&mut s.kernels, &mut s.timeline);
    checker.check(kernels, timeline, buffers, None).map_err(|f| {
        let was_stale = !changed.is_empty()
            && holds_timed_result(kernels, timeline, run_cache, cell, def, data, buffers);
        match was_stale {
            true => Failure::from(format!("the output still holds the timed inputs' result: the launch on new data in {} did not compute it (a kernel that skips work once done, or keeps results by input)", names(def, changed))),
            false => f,
        }
        .during("audit on new inputs")
    })
}

/// The `unwritten` inputs came back from the audit launch as they went in (each against
/// its copy on the device where `kept` holds one, else against the `new` data on the host).
fn inputs_unchanged(
    s: &mut Session,
    def: &Kernel,
    args: &[ArgValue],
    buffers: &Buffers,
    unwritten: &[usize],
    kept: &[Option<DeviceBuffer>],
    new: &HostInputs,
) -> Result<(), Failure> {
    for (&i, copy) in unwritten.iter().zip(kept) {
        let first = match copy {
            Some(copy) => first_difference(s, buffers, i, copy)?,
            None => buffers.first_change(i, new[i].as_deref().unwrap_or_default())?,
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

/// Why the audit launch's time is not set against the cell's reading, where it is not.
/// Managed memory the host has just refilled migrates back during the audit launch, which
/// the timed launches on resident pages did not pay; a wait kernel that ran out before the
/// launch was queued lets the host's launch time into the reading.
fn unjudged(args: &[ArgValue], queue_ran_dry: bool) -> Option<String> {
    let migrates = (args.iter()).any(
        |a| matches!(a, ArgValue::Buffer { memory: Memory::Managed, init, .. } if !init.is_written()),
    );
    match (migrates, queue_ran_dry) {
        (true, _) => Some("its managed inputs migrate back on the audit's refill".to_string()),
        (false, true) => Some("the wait kernel ended before the audit launch was queued".into()),
        (false, false) => None,
    }
}

/// The audit's inputs at one point, kept on the device by the point's first audit and
/// copied into each later one's buffers there: a GiB of inputs crosses the host link once
/// per point and process, not once per cell.
pub struct Stash {
    point: String,
    /// Per argument: a copy of its audit data, for inputs in device memory.
    copies: Vec<Option<DeviceBuffer>>,
}

impl Stash {
    /// Uploads `new`'s data of the inputs `buffers` keeps in device memory (none where a
    /// copy does not fit: those are uploaded each time).
    fn upload(point: &str, buffers: &Buffers, new: &HostInputs) -> Result<Stash, Failure> {
        let copies = (0..new.len())
            .map(|i| {
                let (Some(buf), Some(data)) = (buffers.buffer(i), new[i].as_deref()) else {
                    return Ok(None);
                };
                if !buf.in_device_memory() {
                    return Ok(None);
                }
                let Ok(copy) = DeviceBuffer::alloc(buf.bytes()) else {
                    return Ok(None);
                };
                copy.upload(data)
                    .map_err(during("audit: uploading new inputs"))?;
                Ok(Some(copy))
            })
            .collect::<Result<_, Failure>>()?;
        Ok(Stash {
            point: point.to_string(),
            copies,
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

/// Launches the kernel once in the cell's cache state, timed as the cell's timer sees the
/// kernel: CUPTI's span (each kernel's own, summed, where it runs several); under the profiler, by its report later (None here); else CUDA
/// events around it behind a wait kernel (so that the host's launch time stays out), less
/// their reading of an empty kernel. The flag: the wait kernel ran out before a timed
/// region was queued.
fn time_launch(
    s: &mut Session,
    cell: &Cell,
    buffers: &Buffers,
    armed: &mut Armed,
) -> Result<(Option<f64>, bool), Failure> {
    let what = during("audit launch");
    match cell.knobs.timer {
        TimerKind::Cupti => {
            prepare(buffers, armed)?;
            let copies = !armed.launch.copy_records().is_empty();
            let collector = cupti::Collector::start(copies)?;
            armed.launch.enqueue().map_err(&what)?;
            cuda::synchronize().map_err(&what)?;
            let spans = collector.finish(&armed.entries, 1)?;
            // A launch of several kernels (or copies) counts each one's own span: the GPU
            // idles between them while the host enqueues the next, and right after CUPTI
            // starts recording that takes milliseconds (a 6 µs two-pass sum read 3.8 ms
            // from its first start to its last end).
            let busy = match &spans.kernels {
                Some(each) => Some(each.iter().map(|sp| sp.end - sp.start).sum::<u64>()),
                None => spans.launches.first().map(|sp| sp.end - sp.start),
            };
            Ok((busy.map(|ns| ns as f64), false))
        }
        TimerKind::Profiler => {
            prepare(buffers, armed)?;
            armed.launch.enqueue().map_err(&what)?;
            cuda::synchronize().map_err(&what)?;
            Ok((None, false))
        }
        TimerKind::Events | TimerKind::Host | TimerKind::HostSync => {
            let spin = s.kernels.function(KernelKey::Spin, &mut s.timeline)?;
            let empty = s.kernels.function(KernelKey::Empty, &mut s.timeline)?;
            let wait_out = DeviceBuffer::alloc(4)?;
            let values = [Param::Buffer(&wait_out), Param::u64(AUDIT_WAIT_NS)];
            let wait = Saturate::new(Launch::new(&spin, Dims::ONE, &values))?;
            let mut events = Timer::new(TimerKind::Events, Some(wait), 1)?;
            let one = Body::Launches {
                n: 1,
                resets: vec![],
            };
            // The floor first (its kernel's first launch loads it), so that nothing lies
            // between the flush and the launch.
            let mut bare = Launch::new(&empty, Dims::ONE, &[]);
            bare.enqueue().map_err(during("audit: the events' floor"))?;
            let floor: Vec<f64> = (0..FLOOR_READINGS)
                .map(|_| events.time(&mut bare, &one, 0))
                .collect::<Result<_, _>>()
                .map_err(during("audit: the events' floor"))?;
            let floor = median(floor).unwrap_or_default();
            prepare(buffers, armed)?;
            let ns = events.time(&mut armed.launch, &one, 0).map_err(&what)?;
            let dry = events.saturate.as_ref().is_some_and(|w| w.too_short > 0);
            Ok((Some((ns - floor).max(0.0)), dry))
        }
    }
}

/// How long the wait kernel ahead of the audit launch spins: far longer than the host
/// takes to enqueue an event, a launch and an event.
const AUDIT_WAIT_NS: u64 = 50_000;
/// Readings of an empty kernel the events' floor is the median of.
const FLOOR_READINGS: usize = 3;

/// Resets the buffers and flushes L2 where the cell does: the timed launches' cache state.
fn prepare(buffers: &Buffers, armed: &mut Armed) -> Result<(), Failure> {
    buffers.reset().map_err(during("audit: buffer reset"))?;
    match armed.flush.as_mut() {
        Some(f) => f.run().map_err(during("audit: L2 flush")),
        None => cuda::synchronize().map_err(during("audit: buffer reset")),
    }
}

/// A copy on the device of each input in `indices` that lives in device memory (None for
/// the others, and where the copy does not fit: those are read back to the host instead).
fn keep(buffers: &Buffers, indices: &[usize]) -> Result<Vec<Option<DeviceBuffer>>, Failure> {
    indices
        .iter()
        .map(|&i| {
            let Some(buf) = buffers.buffer(i).filter(|b| b.in_device_memory()) else {
                return Ok(None);
            };
            let Ok(copy) = DeviceBuffer::alloc(buf.bytes()) else {
                return Ok(None);
            };
            copy.copy_from(buf)
                .map_err(during("audit: keeping an input"))?;
            Ok(Some(copy))
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
    let func = s
        .kernels
        .function(KernelKey::FirstDifference, &mut s.timeline)?;
    compare::first_difference(&func, buf, copy)
        .map_err(during("audit: comparing an input with its copy"))
}

/// Whether the buffers' output, which failed its check on the new inputs, passes it on the
/// timed inputs: the audit launch left the timed launches' result in place.
fn holds_timed_result(
    kernels: &mut Kernels,
    timeline: &mut Timeline,
    run_cache: Option<&Path>,
    cell: &Cell,
    def: &Kernel,
    data: &Data,
    buffers: &Buffers,
) -> bool {
    let cache = reference::Cache::new(run_cache, format!("{}#{}", data.point, data.seed));
    let earlier = Checker {
        cell,
        def: Some(def),
        host: &data.timed,
        reference: &cache,
    };
    earlier.check(kernels, timeline, buffers, None).is_ok()
}
