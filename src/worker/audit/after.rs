//! The weaker audit: one launch after the timed samples, where audits cannot sit among
//! them ([`super::weaker`] says why), on the audit's inputs with the outputs left as the timed
//! launches left them (a kernel that skips work it has done shows a stale result), in the
//! cell's cache state. Its output is checked and its inputs read back; the analysis sets its
//! time against the cell's reading by a fixed band (`analysis::audits`).

use super::behind_wait::BehindAWait;
use super::common::{record, stale_or, Draw};
use super::draw::PROBE;
use super::host::{check_on, inputs_unchanged, Staged};
use super::input_draws::InputDraws;
use super::on_draw::{self, Scratch};
use crate::experiment::knobs::timer::TimerKind;
use crate::method::flush::Flush;
use crate::method::spans::busy_per_launch;
use crate::plan::audit_rounds::unjudged;
use crate::plan::Cell;
use crate::protocol::CellRecord;
use crate::worker::arm::Armed;
use crate::worker::buffers::Buffers;
use crate::worker::failure::{during, Failure};
use crate::worker::inputs::fnv1a;
use crate::worker::prepare::ReadyCell;
use crate::worker::session::Session;
use crate::worker::stash::copy_of;
use cuda::{self, cupti, DeviceBuffer};
use std::time::{Duration, Instant};

/// Audits the cell's timed launches with one launch after them; a failure fails the cell.
/// Its inputs are drawn on the GPU where it can draw all that a new seed changes (no input
/// crosses the host link, and the check runs there as an audited region's does), else
/// drawn on the host and copied in.
pub(super) fn run<'b>(
    s: &mut Session,
    ready: ReadyCell<'b>,
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    why: String,
) -> Result<(), Failure> {
    let ReadyCell { cell, code, data } = ready;
    let def = code.def.as_ref().expect("audited cells have a kernel");
    let buffers = &data.sets[0];
    let args = &cell.launch.args;
    let drawn = InputDraws::of(s, cell, def, buffers)?;
    let start = Instant::now();
    // A draw of the cell's own, from the run's seed: no other cell's audit (another variant
    // at the point, in the same process) saw it, so no cache kept across cells can hit.
    // Not a probe's seed (`draw::PROBE`): all of it new.
    let seed = (fnv1a(format!("{}#weaker", cell.id).as_bytes()) ^ s.sample_seed) & !PROBE;
    let on_host = match drawn.draw_all_that_varies(args) {
        true => {
            let drawing = during("audit: drawing the inputs");
            drawn.draws.write(seed).map_err(&drawing)?;
            cuda::synchronize().map_err(&drawing)?;
            None
        }
        false => {
            let staged = Staged::draw(s, cell, def, data)?;
            staged.stage(s.audit_stash.as_ref(), buffers)?;
            // The inputs the kernel must leave as they are, kept on the device where they fit.
            let kept = keep(buffers, &staged.unwritten)?;
            Some((staged, kept))
        }
    };
    s.timeline.mark("audit inputs");
    for (i, v) in armed.params[0].iter().enumerate() {
        armed.launch.set_param(i, *v);
    }
    let (launch_ns, queue_ran_dry) = time_launch(s, cell, buffers, armed)?;
    rec.kernel_launches += 1;
    s.timeline.mark("audit launch");
    let timed = Draw::timed(data);
    let (check, note) = match &on_host {
        None => {
            // Its inputs first: a reference that read a changed one would mislead.
            drawn.unchanged((def, args), buffers, (seed, &data.timed), true)?;
            s.timeline.mark("audit inputs read back");
            let mut scratch = Scratch::default();
            let check = on_draw::check(s, ready, (&drawn.draws, &mut scratch), (seed, 0), None)
                .map_err(|f| stale_or(s, ready, timed, &drawn.draws.args, f))?;
            (check, drawn.note(def))
        }
        Some((staged, kept)) => {
            let check = check_on(s, ready, (staged.as_draw(), timed), &staged.changed, None)?;
            let copies: Vec<Option<&DeviceBuffer>> = kept.iter().map(Option::as_ref).collect();
            let unwritten = (&staged.unwritten[..], &staged.new);
            inputs_unchanged(s, def, args, buffers, unwritten, &copies)?;
            (check, staged.note.clone())
        }
    };
    s.timeline.mark("audit check");

    // The analysis sets the launch's time against the cell's reading.
    let unjudged = unjudged(cell).or_else(|| {
        queue_ran_dry.then(|| "the wait kernel ended before the audit launch was queued".into())
    });
    let mut audit = record(check, &note, Duration::ZERO);
    audit.launch_ns = launch_ns;
    audit.launches = 1;
    audit.unjudged = unjudged;
    audit.weaker = Some(why);
    audit.cost_s = start.elapsed().as_secs_f64();
    rec.audit = Some(audit);
    Ok(())
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
            prepare(buffers, armed.flush.as_mut())?;
            let copies = !armed.launch.copy_records().is_empty();
            let collector = cupti::Collector::start(copies)?;
            armed.launch.enqueue().map_err(&what)?;
            cuda::synchronize().map_err(&what)?;
            let spans = collector.finish(&armed.entries, 1)?;
            Ok((busy_per_launch(&spans, &[1]).first().copied(), false))
        }
        TimerKind::Profiler => {
            prepare(buffers, armed.flush.as_mut())?;
            armed.launch.enqueue().map_err(&what)?;
            cuda::synchronize().map_err(&what)?;
            Ok((None, false))
        }
        TimerKind::Events | TimerKind::Host | TimerKind::HostSync => {
            let mut behind = BehindAWait::new(s)?;
            let flush = &mut armed.flush;
            let prepare = || prepare(buffers, flush.as_mut());
            let (ns, dry) = behind.time(&mut armed.launch, prepare, "audit launch")?;
            Ok((Some(ns), dry))
        }
    }
}

/// Resets the buffers and flushes L2 where the cell does: the timed launches' cache state.
fn prepare(buffers: &Buffers, flush: Option<&mut Flush>) -> Result<(), Failure> {
    buffers.reset().map_err(during("audit: buffer reset"))?;
    match flush {
        Some(f) => f.run().map_err(during("audit: L2 flush")),
        None => cuda::synchronize().map_err(during("audit: buffer reset")),
    }
}

/// A copy on the device of each input in `indices` that lives in device memory (None for
/// the others, and where the copy does not fit: those are read back to the host instead).
fn keep(buffers: &Buffers, indices: &[usize]) -> Result<Vec<Option<DeviceBuffer>>, Failure> {
    (indices.iter())
        .map(|&i| copy_of(buffers, i, None, "audit: keeping an input"))
        .collect()
}
