//! What the audit's ways share: the draw a check runs on and where its reference results are
//! kept, a run's rank among the cell's runs, an audit's record and cost, and the failures and
//! notes they word. A leaf of the folder, so that they and the front importing them do not
//! import each other.

use crate::experiment::Kernel;
use crate::plan::Cell;
use crate::protocol::AuditRecord;
use crate::worker::assemble::Checker;
use crate::worker::failure::Failure;
use crate::worker::inputs::{audit_seed, HostInputs};
use crate::worker::prepare::{Data, ReadyCell};
use crate::worker::reference;
use crate::worker::session::Session;
use std::path::Path;
use std::time::{Duration, Instant};

/// Run `process`'s rank among the cell's runs, from the one the run's seed draws (rank 0):
/// runs that share the cell's regions get them in this order. `run_seed` is drawn anew each
/// run, so no earlier run's record says which run holds them.
pub(super) fn rank(cell: &Cell, process: u32, run_seed: u64) -> usize {
    let runs = u64::from(cell.runs().max(1));
    let first = (audit_seed(cell) ^ run_seed) % runs;
    ((u64::from(process) + runs - first) % runs) as usize
}

impl Draw<'_> {
    /// The timed data: what the checked launch read.
    pub(super) fn timed(data: &Data) -> Draw<'_> {
        Draw {
            seed: data.seed,
            host: &data.timed,
        }
    }
}

/// Whether the kernel writes one of the inputs in `data`'s buffers: launches after a first one
/// read what it left there, not a draw.
pub(super) fn writes_an_input(def: &Kernel, data: &Data) -> bool {
    (data.sets[0].inputs()).any(|i| def.writes(i))
}

/// The failure of a kernel that wrote into its input `arg` at `element`.
pub(super) fn wrote_input(def: &Kernel, arg: usize, element: usize) -> Failure {
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
pub(super) fn note(def: &Kernel, inputs: &[usize], changed: &[usize], kept: &[usize]) -> String {
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
pub(super) struct Draw<'a> {
    pub(super) seed: u64,
    pub(super) host: &'a HostInputs,
}

/// Where the reference results on `draw` at `data`'s point are kept (in the run's cache
/// folder, where it has one).
pub(super) fn reference_cache<'a>(
    (run_cache, sample_seed): (Option<&'a Path>, u64),
    data: &Data,
    draw: Draw,
) -> reference::Cache<'a> {
    let inputs = format!("{}#{}", data.point, draw.seed);
    reference::Cache::new(run_cache, inputs, sample_seed)
}

/// A launch on new data in `changed` that failed its check with `f`: named stale where its
/// output still holds the `earlier` draw's result.
pub(super) fn stale_or(
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
pub(super) fn stale(def: &Kernel, changed: &[usize]) -> Failure {
    Failure::from(format!("the output still holds the timed inputs' result: the launch on new data in {} did not compute it (a kernel that skips work once done, or keeps results by input)", names(def, changed)))
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
        stash: s.timed_stash.as_ref(),
    };
    checker
        .check(&mut s.kernels, &mut s.timeline, &ready.data.sets[0], None)
        .is_ok()
}

/// Host time since `start`, added to an audit's cost.
pub(super) fn spent(cost: &mut Duration, start: Instant) {
    *cost += start.elapsed();
}

/// A fresh record for an audit: what it checked and on which inputs.
pub(super) fn record(check: String, inputs: &str, cost: Duration) -> AuditRecord {
    AuditRecord {
        check,
        inputs: inputs.to_string(),
        cost_s: cost.as_secs_f64(),
        ..Default::default()
    }
}
