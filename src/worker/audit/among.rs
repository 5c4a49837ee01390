//! Regions among the timed ones (`method::audit`): audited regions, decoys and pauses, at
//! places drawn round by round from a recorded seed as the samples go.
//!
//! Before the steady samples the buffers get a first draw of the GPU's (`draw.rs`), the outputs
//! poisoned again: the timed launches from then on read it. At each place the region runs as a
//! timed one does (resets, flush, the timer) after its stage and the pause every stage waits out on
//! the GPU:
//! - an audited region's stage draws data no launch has seen (a seed of its own); the
//!   region is then checked on it (outside any timed region) and its inputs read back; the
//!   timed launches after it keep that data;
//! - a decoy's stage draws the data the buffers hold again, the same bytes: nothing new;
//! - a pause's stage draws nothing (one thread holds the GPU as long as a draw would, writing
//!   nothing): after it the cache is a timed launch's (but see below).
//!   Where L2 is flushed whole before the launches (a cold cell), it draws the held data again,
//!   as a decoy's does ([`pause_draws`]): the flush leaves the cache as a timed launch finds it
//!   either way. Drawing
//!   nothing, the gap before a pause ran shorter than before a staged region (in `trust`'s cold
//!   cells at fe97d65 on an H200, medians of 135.4 µs against 141.1 µs; most likely the flush
//!   writing back the lines a draw left): a kernel timing its gaps could tell them apart.
//!
//! Where no input can be drawn (constants, ranges, files), every region's stage poisons the outputs
//! instead, a pause's too, and the audited ones are checked on the timed data: were the pauses'
//! outputs left as the timed launches leave them, a kernel that does all its work only where it
//! finds its output poisoned would do it in every staged region and skip after every pause, and in
//! a hot cell no test sets the staged regions against the timed launches.

mod audited;
mod checks;
mod lead;
mod ranks;
mod read;
mod record;
mod seeds;
mod spread;

use super::common::{spent, writes_an_input};
use super::draw::{self, wait_ns, Draws, PROBE};
use super::input_draws::InputDraws;
use super::on_draw::{self, Scratch};
use super::share::Share;
use super::{behind_wait::LaunchesAlone, by_cupti};
use crate::experiment::knobs::{cache::Cache, timer::TimerKind};
use crate::experiment::Kernel;
use crate::method::audit::{self, Region, Schedule};
use crate::method::confirm;
use crate::plan::audit_rounds::{kinds_run, unjudged};
use crate::plan::Cell;
use crate::protocol::{CellRecord, KernelRecords, SpreadLook, DECOYS_AGAIN};
use crate::worker::arm::{Armed, Starts};
use crate::worker::buffers::Buffers;
use crate::worker::failure::{during, Failure};
use crate::worker::prepare::{Data, ReadyCell};
use crate::worker::session::Session;
use cuda::Function;
use seeds::{draw_seed, first_seeds, schedule_seed, seed_of, tally};
use std::time::{Duration, Instant};

/// One region run: its place among all the run's regions (the first timed one is 0), the
/// steady sample it ran before, its kind, its reading (NaN until CUPTI's records give it)
/// and the gap before it as CUPTI saw it.
struct Ran {
    place: usize,
    before: usize,
    kind: Region,
    /// An audited region that was a probe (`seeds::probe_over`): not among the audited
    /// regions the timing tests take.
    probe: bool,
    reading: f64,
    gap: f64,
    /// Its first launch, in a region of several (NaN where not read).
    first: f64,
    /// Host time it took, its stage and check included; its stage's and check's.
    cost: Duration,
    stage: Duration,
    check: Duration,
}

/// A run's regions: where they go, what they read, what they read as.
pub(in crate::worker) struct Among {
    schedule: Schedule,
    /// The schedule's seed, recorded.
    seed: u64,
    /// The draws of the inputs; those no draw changes are read back once, after the first
    /// audited region (`kept_read`).
    inputs: InputDraws,
    /// Device buffers the checks reuse.
    scratch: Scratch,
    kept_read: bool,
    /// The seed the draws' seeds come from (recorded), the draws made from it, the one the
    /// buffers hold now and the one they held before it.
    draw_seed: u64,
    drawn: u64,
    held: u64,
    /// The draws of their own and the probes of the audited regions the cell's runs of lower
    /// rank hold in the first round, which the run's probes follow (`seeds::tally`).
    before: (u64, u64),
    earlier: u64,
    /// Whether a pause's stage draws the held data again (see the module's doc).
    pause_draws: bool,
    /// Whether the regions' times are set against each other (`audit_rounds::unjudged`):
    /// else none confirms them.
    judged: bool,
    /// The pause every stage waits out, what a stage's work took (a pause's hold lasts as
    /// long) and what the first draw took, in ns.
    wait_ns: u64,
    stage_ns: u64,
    draw_ns: f64,
    note: String,
    ran: Vec<Ran>,
    /// The places of the untimed regions before those after the samples under CUPTI
    /// (`lead.rs`).
    untimed: Vec<usize>,
    /// The median gap before the steady timed launches, where CUPTI gave it.
    timed_gap: Option<f64>,
    /// The steady timed regions' first launches, in a region of several.
    timed_firsts: Vec<f64>,
    /// The last full check's account.
    check: String,
    cost: Duration,
    /// Of `cost`: the regions run, and the checks after the audited ones.
    regions_time: Duration,
    checks_time: Duration,
    /// The regions' share of the cell's time.
    share: Share,
    /// The pauses and timed launches read again by CUPTI, where they were.
    by_cupti: Option<KernelRecords>,
    /// The run's stages late before CUPTI read its pauses again, where it did: the record's
    /// count is of the run's own regions.
    late_before_cupti: Option<u64>,
    /// Decoys added after a decoy read too slow (`protocol::DECOYS_AGAIN` at most).
    decoys_again: usize,
    /// The empty kernel every stage launches through its wait, where the cell's reading
    /// holds the host's launch (`draw::KICK_EVERY` says why).
    kick: Option<Function>,
    /// The single launches checked on audited regions' draws (`checks::SPOTS`), as read.
    alone: LaunchesAlone,
    /// The samples the first round spans and the regions it holds, which size the regions
    /// where a timed region is many launches; and their launches, once sized at the first.
    round: (usize, usize),
    launches: Option<u64>,
    /// The looks at the timed samples' spread, for the record.
    looks: Vec<SpreadLook>,
    /// The draw the reference's buffers were last run on by a check of this run.
    reference_on: Option<u64>,
}

impl Among {
    /// Draws the first data on the GPU into the buffers (the timed launches' from now on),
    /// poisons the outputs, measures the draw for the pause, and draws the schedule of run
    /// `process` of `cell`.
    pub(super) fn stage(
        s: &mut Session,
        ready: ReadyCell,
        (process, began): (u32, Instant),
        first_ns: f64,
    ) -> Result<Among, Failure> {
        let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
        let buffers = &data.sets[0];
        // Its kernel's compile is the process's, as the cell's own kernel's is: the audit's
        // cost starts after it.
        let inputs = InputDraws::of(s, cell, def, buffers)?;
        let start = Instant::now();
        let draws = &inputs.draws;
        let seed = schedule_seed(&cell.id, process, s.sample_seed);
        let draw_seed = draw_seed(seed);
        let held = seed_of(draw_seed, 0);
        let samples = cell.knobs.samples_per_run() as usize;
        let share = Share::new(cell, samples, began);
        // A run that may stop early holds the regions its fewest samples afford among them.
        let fewest = share.fewest(first_ns);
        let rank = super::rank(cell, process, s.sample_seed);
        // A Python reference computes the audited draws of the first round's floor (never left
        // out) while the GPU times, where the reading leaves out the host's launch (CUPTI,
        // events behind a saturated queue): a reference busy on the host's cores could delay
        // a launch inside it. Asked before the timed data's draw, which then leaves the
        // caches as it always does.
        let round = audit::first_round(fewest, cell.runs() as usize, rank);
        let floor = audit::run_floor(fewest, cell.runs() as usize, rank);
        let before = tally(audit::audited_before(fewest, cell.runs() as usize, rank) as u64);
        let knobs = &cell.knobs;
        if !draws.is_empty() && !knobs.queue.reading_holds_launch_time(knobs.timer) {
            let seeds = first_seeds(held, draw_seed, before, floor[0] as u64);
            // Only a saving: where it fails, each region's check asks as it runs.
            let _asked_as_they_run = on_draw::ask_python_ahead(s, ready, draws, &seeds);
        }
        let (draw_ns, stage_ns) = match draws.is_empty() {
            false => inputs.timed_stage_work(held, &mut s.stage_times)?,
            true => {
                let poisoned = poison_time(buffers)?;
                (poisoned, poisoned)
            }
        };
        buffers.poison_outputs()?;
        s.timeline.mark("audit draw");
        let judged = unjudged(cell).is_none();
        let schedule = Schedule::new(
            seed,
            (samples, fewest),
            (cell.runs() as usize, rank),
            judged,
        );
        let kick = draw::kick(s, cell)?;
        let mut cost = Duration::ZERO;
        spent(&mut cost, start);
        Ok(Among {
            schedule,
            seed,
            note: inputs.note(def),
            inputs,
            scratch: Scratch::default(),
            kept_read: false,
            draw_seed,
            drawn: 1,
            held,
            before,
            earlier: held,
            pause_draws: pause_draws(s, cell, (def, data)),
            judged,
            wait_ns: wait_ns(stage_ns),
            stage_ns: stage_ns.max(0.0) as u64,
            draw_ns,
            ran: Vec::new(),
            untimed: Vec::new(),
            timed_gap: None,
            timed_firsts: Vec::new(),
            check: String::new(),
            cost,
            regions_time: Duration::ZERO,
            checks_time: Duration::ZERO,
            share,
            by_cupti: None,
            late_before_cupti: None,
            decoys_again: 0,
            kick,
            alone: LaunchesAlone::default(),
            round: (
                fewest.min(audit::ROUND),
                kinds_run(judged, round).iter().sum(),
            ),
            launches: None,
            looks: Vec::new(),
            reference_on: None,
        })
    }

    /// The region due before steady sample `index` (asked once per sample, in turn): the
    /// first round's floor, its others where they stay within the planned share of the
    /// cell's projected time, a later one where the audit's share of the cell's time so far
    /// affords it.
    pub(in crate::worker) fn due(&mut self, index: usize) -> Option<Region> {
        if index == 0 {
            self.share.begin(self.cost);
        }
        let due = self.schedule.due(index)?;
        let floor = self.schedule.floor_to_come();
        let ran = self.costs();
        (self.share.keeps(&ran, (due, floor), (index, self.cost))).then_some(due.0)
    }

    /// Where the region just run before steady sample `before` is a decoy read over
    /// [`crate::protocol::CONFIRM_RATIO`] times the median of the timed `samples` so far (by
    /// events or a host timer, which read each region as it runs), or whose first launch read
    /// beyond the timed regions' first launches' noise ([`confirm::first_spoiled`]), another
    /// decoy later in the round: a decoy draws the data the timed launches read, and one read
    /// so slow most likely held the host's launch (a result cache passed 40% faster than the honest matmul on an
    /// H200 when its one decoy read 56.70 µs against 36.88 µs timed, `benches/decoy-hiccup`),
    /// or a kernel spent time in it on purpose; the data test then takes both.
    pub(in crate::worker) fn spoiled_decoy(&mut self, before: usize, samples: &[f64]) {
        // Only after a decoy read as it ran: the median is host time before the next sample.
        let Some(decoy) =
            (self.ran.last()).filter(|r| r.kind == Region::Decoy && r.reading.is_finite())
        else {
            return;
        };
        let timed = crate::statistics::median(samples.to_vec());
        let spoiled = confirm::needs_confirming(decoy.reading, timed)
            || confirm::first_spoiled(decoy.first, &self.timed_firsts);
        if spoiled && self.decoys_again < DECOYS_AGAIN && self.schedule.again(Region::Decoy, before)
        {
            self.decoys_again += 1;
        }
    }

    /// The regions to run after a loop that took `taken` samples and stopped early: the
    /// first round's its samples afford, its floor and what the planned share affords.
    pub(in crate::worker) fn after(&mut self, taken: usize) -> Vec<Region> {
        let ran: Vec<Region> = self.ran.iter().map(|r| r.kind).collect();
        let pending = self.schedule.after(taken, &ran);
        let costs = self.costs();
        self.share.after(&costs, &pending)
    }

    /// The regions run so far, with what each cost.
    fn costs(&self) -> Vec<(Region, Duration)> {
        self.ran.iter().map(|r| (r.kind, r.cost)).collect()
    }

    /// The readings of the regions of `kind` run so far, probes left out (see [`Ran::probe`]).
    fn readings_of(&self, kind: Region) -> Vec<f64> {
        let readings: Vec<f64> = self.ran.iter().map(|r| r.reading).collect();
        self.of_kind(kind, &readings)
    }

    /// Of `readings` (one a region run, in order), those of the regions of `kind`, probes
    /// left out.
    fn of_kind(&self, kind: Region, readings: &[f64]) -> Vec<f64> {
        let of_kind = (self.ran.iter().zip(readings)).filter(|(r, _)| r.kind == kind && !r.probe);
        of_kind.map(|(_, t)| *t).collect()
    }

    /// Host time the audit took beside its regions (`lead.rs`), as its regions' time.
    fn spend(&mut self, took: Duration) {
        (self.regions_time, self.cost) = (self.regions_time + took, self.cost + took);
    }

    /// The pauses read again by CUPTI's kernel records where they and the staged regions
    /// read slow by events on an idle queue (see [`by_cupti::read_again`]), and timed regions
    /// where their first launches read slow so ([`by_cupti::firsts_again`]), where the
    /// regions' times are judged; returns the time that took, which is no sample's (phases
    /// of their own where they were).
    pub(in crate::worker) fn by_cupti<'b>(
        &mut self,
        s: &mut Session,
        ready: ReadyCell<'b>,
        armed: &mut Armed<'b>,
        rec: &mut CellRecord,
        samples: &[f64],
    ) -> Result<Duration, Failure> {
        s.timeline.mark("steady samples");
        let start = Instant::now();
        if !self.judged {
            return Ok(Duration::ZERO);
        }
        self.late_before_cupti = Some(self.inputs.draws.late());
        let run = self.run(armed);
        let mut records = by_cupti::read_again((ready, &mut s.timeline), armed, rec, samples, run)?;
        let timed = (samples, &self.timed_firsts[..]);
        let launches = self.launches.unwrap_or(armed.body.launches());
        if let Some((firsts, rests)) = by_cupti::firsts_again(ready, armed, rec, timed, launches)? {
            let read = records.get_or_insert_with(KernelRecords::default);
            (read.firsts_ns, read.rests_ns) = (firsts, rests);
            s.timeline.mark("audit: first launches read again by CUPTI");
        }
        spent(&mut self.regions_time, start);
        spent(&mut self.cost, start);
        self.by_cupti = records;
        Ok(start.elapsed())
    }

    /// Where the run's timed samples split in two and its pauses and staged regions read with
    /// the slower behavior, more pauses read by CUPTI ([`by_cupti::split_again`]), in place of
    /// those [`Self::by_cupti`] would have read; once the timer's readings are in.
    pub(in crate::worker) fn split_by_cupti<'b>(
        &mut self,
        s: &mut Session,
        ready: ReadyCell<'b>,
        armed: &mut Armed<'b>,
        rec: &mut CellRecord,
    ) -> Result<(), Failure> {
        if !self.judged {
            return Ok(());
        }
        let start = Instant::now();
        let samples = rec.samples_ns.clone();
        let run = self.run(armed);
        let read = by_cupti::split_again((ready, &mut s.timeline), armed, rec, &samples, run)?;
        if let Some(read) = read {
            s.timeline
                .mark("audit: pauses read again by CUPTI (the timed launches split)");
            let firsts = self.by_cupti.take().unwrap_or_default();
            self.by_cupti = Some(KernelRecords {
                firsts_ns: firsts.firsts_ns,
                rests_ns: firsts.rests_ns,
                ..read
            });
        }
        spent(&mut self.regions_time, start);
        spent(&mut self.cost, start);
        Ok(())
    }

    /// What the run read and holds, for its regions read again by CUPTI.
    fn run<'a>(&'a self, armed: &Armed) -> by_cupti::Run<'a> {
        by_cupti::Run {
            pauses: self.readings_of(Region::Pause),
            staged: [Region::Audit, Region::Decoy]
                .map(|k| self.readings_of(k))
                .concat(),
            seed: self.seed,
            wait: Duration::from_nanos(self.wait_ns),
            stage_ns: self.stage_ns,
            inputs: &self.inputs,
            held: self.held,
            pause_draws: self.pause_draws,
            launches: self.launches.unwrap_or(armed.body.launches()),
        }
    }

    /// Runs a region of `kind` as region `place` of the run, before steady sample `before`
    /// (`samples`: those read so far); an audited one is then checked.
    pub(in crate::worker) fn region<'b>(
        &mut self,
        s: &mut Session,
        ready: ReadyCell<'b>,
        (armed, rec): (&mut Armed<'b>, &mut CellRecord),
        (place, before, kind): (usize, usize, Region),
        samples: &[f64],
    ) -> Result<(), Failure> {
        let ReadyCell { cell, data, .. } = ready;
        let launches = self.launches(cell, armed, samples);
        // A shorter graph's capture is the audit's cost but not this region's: a region's
        // cost sizes the next ones of its kind.
        let making = Instant::now();
        armed.audit_body(data, launches)?;
        spent(&mut self.regions_time, making);
        spent(&mut self.cost, making);
        let start = Instant::now();
        let seed = match kind {
            Region::Audit => Some(self.audited_draw()),
            Region::Decoy => Some(self.held),
            // See the module's doc: a cold cell's pause draws as a decoy does.
            Region::Pause => self.pause_draws.then_some(self.held),
        };
        let wait = Duration::from_nanos(self.wait_ns);
        let (inputs, held, stage_ns) = (&self.inputs, self.held, self.stage_ns);
        let draws = &inputs.draws;
        let k = self.kick.as_ref();
        let staged = std::cell::Cell::new(Duration::ZERO);
        let stage = |buffers: &Buffers| -> Result<(), Failure> {
            let staging = Instant::now();
            let poison = |_: &Draws| buffers.poison_outputs();
            let done = match (seed, draws.is_empty()) {
                (Some(seed), false) => {
                    draws.stage(|_| inputs.verify_then_draw(held, seed), wait, k)
                }
                // Nothing to draw: the outputs poisoned again instead, before a pause too
                // (see the module's doc).
                (_, true) => draws.stage(poison, wait, k),
                (None, false) => draws.stage(|_| inputs.hold(stage_ns), wait, k),
            };
            staged.set(staging.elapsed());
            done.map_err(during("audit: the region's stage"))
        };
        let what = match kind {
            Region::Audit => "audited launch",
            Region::Decoy => "decoy launch",
            Region::Pause => "launch after a pause",
        };
        let mut starts = Starts::new(start, 1);
        let reading = armed.time_audit_region(data, &mut starts, (what, Some(&stage)), launches)?;
        spent(&mut self.regions_time, start);
        rec.kernel_launches += armed.kernel_launches_of(launches);
        self.ran.push(Ran {
            place,
            before,
            kind,
            probe: seed.is_some_and(|s| s & PROBE != 0) && kind == Region::Audit,
            reading,
            gap: f64::NAN,
            first: armed.timer.first_ns,
            cost: Duration::ZERO,
            stage: staged.get(),
            check: Duration::ZERO,
        });
        if let (Region::Audit, Some(seed)) = (kind, seed) {
            let earlier = std::mem::replace(&mut self.held, seed);
            self.earlier = earlier;
            // The check runs among CUPTI's records of the timed launches, where it records.
            let recorded = (cell.knobs.timer == TimerKind::Cupti).then(|| armed.entries.clone());
            let checking = Instant::now();
            let checked = self.check_region(s, ready, (seed, earlier), recorded.as_deref());
            let alone =
                checked.and_then(|c| self.spots(s, ready, armed, (seed, earlier)).map(|n| (c, n)));
            spent(&mut self.checks_time, checking);
            if let Some(ran) = self.ran.last_mut() {
                ran.check = checking.elapsed();
            }
            let (checked, alone) = alone?;
            rec.kernel_launches += alone;
            self.check = checked;
        }
        spent(&mut self.cost, start);
        if let Some(ran) = self.ran.last_mut() {
            ran.cost = start.elapsed();
        }
        Ok(())
    }

    /// Launches in each region of `cell`, sized at the first from the samples read so far
    /// (see [`audit::region_launches`]): a timed region's where the timer reads them later
    /// (CUPTI's records are split into regions of a timed one's launches).
    fn launches(&mut self, cell: &Cell, armed: &Armed, samples: &[f64]) -> u64 {
        let n = armed.body.launches();
        if matches!(cell.knobs.timer, TimerKind::Cupti | TimerKind::Profiler) {
            return n;
        }
        *self.launches.get_or_insert_with(|| {
            let launch_ns = crate::statistics::median(samples.to_vec()).unwrap_or(f64::NAN);
            audit::region_launches(n, self.round, launch_ns, armed.body.graphs())
        })
    }
}

/// Whether a pause's stage draws the held data again (see the module's doc): where L2 is
/// flushed whole before the launches (a flush of twice its size; a partial one would evict the
/// draw's evict-first lines first, and an honest kernel's pauses find fewer of its inputs in
/// L2 than its timed launches do), and the kernel writes none of its inputs (a draw would undo
/// what its launches left there, which the timed ones read).
fn pause_draws(s: &Session, cell: &Cell, (def, data): (&Kernel, &Data)) -> bool {
    let l2 = s.facts.l2_bytes.max(0) as u64;
    let whole = matches!(cell.knobs.cache, Cache::Flush { bytes, .. } if bytes >= 2 * l2);
    whole && !writes_an_input(def, data)
}

/// How long poisoning the outputs takes, where the stage does that instead of a draw.
fn poison_time(buffers: &Buffers) -> Result<f64, Failure> {
    let start = Instant::now();
    buffers.poison_outputs()?;
    Ok(start.elapsed().as_nanos() as f64)
}
