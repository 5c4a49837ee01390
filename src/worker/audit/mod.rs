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
mod behind_wait;
mod by_cupti;
mod common;
mod draw;
mod host;
mod input_draws;
mod on_draw;
mod share;

use common::rank;

use super::arm::Armed;
use super::failure::Failure;
use super::prepare::{Data, ReadyCell};
use super::session::Session;
use crate::experiment::knobs::timer::TimerKind;
use crate::experiment::Kernel;
use crate::method::audit;
use crate::plan::{Cell, Role};
use crate::protocol::CellRecord;
use std::time::Instant;

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
    /// How `cell`'s run `process`, begun at `began`, is audited, in a run seeded `run_seed`.
    pub(super) fn plan(
        ready: ReadyCell,
        (process, began): (u32, Instant),
        run_seed: u64,
    ) -> Auditor {
        let ReadyCell { cell, code, data } = ready;
        let audited = |d: &&Kernel| audits(cell, Some(d), process, run_seed);
        let Some(def) = code.def.as_ref().filter(audited) else {
            return Auditor::Off;
        };
        match weaker(cell, def, data) {
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
    /// draw on the GPU, the pause, the schedule (`first_ns`: the first timed launch's
    /// reading, which says how few samples a run that may stop early takes).
    pub(super) fn stage(
        &mut self,
        s: &mut Session,
        ready: ReadyCell,
        first_ns: f64,
    ) -> Result<(), Failure> {
        let Auditor::AmongToStage(process, began) = *self else {
            return Ok(());
        };
        let among = Among::stage(s, ready, (process, began), first_ns)?;
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
            Auditor::Among(mut among) => {
                among.split_by_cupti(s, ready, armed, rec)?;
                let ranks_again = among.ranks_again(s, ready, armed, rec)?;
                among.alone_if_split(s, ready, armed, rec)?;
                // Last: what every stage that drew found of the held inputs, and them now.
                among.held_unchanged(s, ready.kernel()?)?;
                let mut audit = among.finish(s, ready.cell, &rec.samples_ns)?;
                if let Some(m) = audit.among.as_mut() {
                    m.ranks_again = ranks_again;
                }
                rec.audit = Some(audit);
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
/// Every run of a cell with room among its timed launches is, those its regions do not
/// fall to too ([`audit::first_round`]: interleaved rounds, a few samples per process): each
/// times data of its own, drawn on the GPU, and reads it back after its samples. Where such
/// runs timed the data the host uploaded, the same for every cell and run of its draw key, a
/// result cache kept on the device heap hit there and skipped in three of an interleaved
/// cell's five rounds (28.8% faster on an H200, within a limit the split rounds widened to
/// 68.8%). Where none has room (one launch per fresh process), the one drawn by the seed
/// is: the others would pay a new draw and check for a launch or two each.
pub(super) fn audits(cell: &Cell, def: Option<&Kernel>, process: u32, run_seed: u64) -> bool {
    let runs = cell.runs();
    let samples = cell.knobs.samples_per_run() as usize;
    let rank = rank(cell, process, run_seed);
    let no_room = audit::first_round(samples, runs as usize, 0)[0] == 0;
    let another = no_room && runs > 1 && rank != 0;
    def.is_some_and(|d| !d.unchecked && d.copy.is_none()) && cell.role == Role::Measure && !another
}

/// Why run `process` of the cell cannot hold audits among its timed launches, or None
/// where it can.
fn weaker(cell: &Cell, def: &Kernel, data: &Data) -> Option<String> {
    let knobs = &cell.knobs;
    let samples = knobs.samples_per_run() as usize;
    // Room in any run: one its regions do not fall to times drawn data of its own.
    let [audited, ..] = audit::first_round(samples, cell.runs() as usize, 0);
    let multi = knobs.launches.count() > 1;
    let in_place = common::writes_an_input(def, data);
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
