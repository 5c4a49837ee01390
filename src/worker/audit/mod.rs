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
//! and the record says why; its data is drawn on the GPU too where it can be, else on the
//! host ([`host`]).

mod after;
mod among;
mod draw;
mod host;
mod on_draw;

use draw::InputDraws;

use super::arm::Armed;
use super::assemble::Checker;
use super::failure::Failure;
use super::inputs::{audit_seed, HostInputs};
use super::prepare::{Data, ReadyCell};
use super::reference;
use super::session::Session;
use crate::experiment::knobs::timer::TimerKind;
use crate::experiment::{ArgValue, Kernel, Memory};
use crate::method::audit;
use crate::plan::{Cell, Role};
use crate::protocol::{AuditRecord, CellRecord};
use std::path::Path;
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
/// Of a cell's runs too short to hold regions of their own (interleaved rounds, a few
/// samples per process), those the cell's regions fall to are (see
/// [`audit::first_round`]); where none has room among its timed launches (one launch per
/// fresh process), the one drawn by the seed is: the others would pay a new draw and check
/// for a launch or two each.
pub(super) fn audits(cell: &Cell, def: Option<&Kernel>, process: u32) -> bool {
    let runs = cell.runs();
    let samples = cell.knobs.samples_per_run() as usize;
    let rank = rank(cell, process);
    let no_room = audit::first_round(samples, runs as usize, rank)[0] == 0;
    let another = no_room && runs > 1 && rank != 0;
    def.is_some_and(|d| !d.unchecked && d.copy.is_none()) && cell.role == Role::Measure && !another
}

/// Run `process`'s rank among the cell's runs, from the one its seed draws (rank 0): runs
/// that share the cell's regions get them in this order.
pub(super) fn rank(cell: &Cell, process: u32) -> usize {
    let runs = u64::from(cell.runs().max(1));
    let first = audit_seed(cell) % runs;
    ((u64::from(process) + runs - first) % runs) as usize
}

/// Why run `process` of the cell cannot hold audits among its timed launches, or None
/// where it can.
fn weaker(cell: &Cell, def: &Kernel, data: &Data, process: u32) -> Option<String> {
    let knobs = &cell.knobs;
    let samples = knobs.samples_per_run() as usize;
    let [audited, ..] = audit::first_round(samples, cell.runs() as usize, rank(cell, process));
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

impl Draw<'_> {
    /// The timed data: what the checked launch read.
    fn timed(data: &Data) -> Draw<'_> {
        Draw {
            seed: data.seed,
            host: &data.timed,
        }
    }
}

/// The failure of a kernel that wrote into its input `arg` at `element`.
fn wrote_input(def: &Kernel, arg: usize, element: usize) -> Failure {
    Failure::from(format!(
        "audit: the kernel wrote into its input `{}` (element {element} differs from the data it was given): an input must come back as it went in, or, if the kernel updates it in place, be named among the check's outputs",
        def.args[arg].name
    ))
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

/// Where the reference results on `draw` at `data`'s point are kept (in the run's cache
/// folder, where it has one).
fn reference_cache<'a>(
    (run_cache, sample_seed): (Option<&'a Path>, u64),
    data: &Data,
    draw: Draw,
) -> reference::Cache<'a> {
    let inputs = format!("{}#{}", data.point, draw.seed);
    reference::Cache::new(run_cache, inputs, sample_seed)
}

/// A launch on new data in `changed` that failed its check with `f`: named stale where its
/// output still holds the `earlier` draw's result.
fn stale_or(
    s: &mut Session,
    ready: ReadyCell,
    earlier: Draw,
    changed: &[usize],
    f: Failure,
) -> Failure {
    let was_stale = !changed.is_empty() && holds_result(s, ready, earlier);
    match (was_stale, ready.code.def.as_ref()) {
        (true, Some(def)) => stale(def, changed),
        _ => f,
    }
    .during("audit on new inputs")
}

/// The failure of a launch on new data in `changed` whose output still holds the result of
/// the data before it.
fn stale(def: &Kernel, changed: &[usize]) -> Failure {
    Failure::from(format!("the output still holds the timed inputs' result: the launch on new data in {} did not compute it (a kernel that skips work once done, or keeps results by input)", names(def, changed)))
}

/// Why the audit's times are not set against the cell's reading, where they are not.
/// Managed pages go where the last writer was: the audit's draw on the GPU or refill from
/// the host leaves them where the timed launches (refilled by the host, or resident) may
/// not have found them; a host timer around an async launch reads only its enqueue.
fn unjudged(cell: &Cell) -> Option<String> {
    let migrates = (cell.launch.args.iter()).any(
        |a| matches!(a, ArgValue::Buffer { memory: Memory::Managed, init, .. } if !init.is_written()),
    );
    match (migrates, cell.knobs.timer) {
        (true, _) => Some("its managed inputs lie where the audit's draw left them, not where the timed launches found them".to_string()),
        (false, TimerKind::Host) => Some("a host timer reads only the enqueue".to_string()),
        _ => None,
    }
}

/// Whether the buffers' output, which failed its check on the new inputs, passes it on the
/// `earlier` draw: the audited launch left the earlier launches' result in place.
fn holds_result(s: &mut Session, ready: ReadyCell, earlier: Draw) -> bool {
    let cache = reference_cache((s.run_cache.as_deref(), s.sample_seed), ready.data, earlier);
    let checker = Checker {
        cell: ready.cell,
        def: ready.code.def.as_ref(),
        host: earlier.host,
        reference: &cache,
        sample: None,
        kept: &s.reference_buffers,
    };
    checker
        .check(&mut s.kernels, &mut s.timeline, &ready.data.sets[0], None)
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
