//! The audit's method. Regions sit among a cell's timed regions (`worker::audit`): the same
//! launch, at positions drawn from a recorded seed, each after a stage and a pause on the
//! GPU of the same length. Three kinds:
//! - an **audited** region reads a draw of its own, made on the GPU, and is checked: a
//!   kernel that cannot tell it from a timed launch skips work in it too and fails;
//! - a **decoy** reads the data the buffers held, drawn again by the same stage: a kernel
//!   that does all its work only on data it has not seen is slower in the audited regions
//!   than in the decoys;
//! - a **pause** draws nothing: a timed launch after the same pause, its cache as a timed
//!   launch's. A kernel that does all its work only after a pause is slower in the pauses
//!   than in the timed launches.
//!
//! Cells that cannot hold regions among their timed launches (one launch per process, the
//! profiler's report, rotating buffer sets) get one audit launch after the timed ones, the
//! weaker audit, which the record says.
//!
//! How many: regions come in rounds of three audited regions (the third a probe,
//! `worker::audit::among::seeds`), two decoys and five pauses at places drawn within it (a
//! pause costs little more than a sample: a kernel that tells some pauses from others must
//! evade most of five, not one of two). The first round spans the
//! first 200 samples, the second the next 200, each later one twice the one before: 5% of a
//! 200-sample cell, a falling share of a longer one (more regions hardly lower the detection
//! limit once the margin outweighs the noise), drawn as the cell goes, so a cell that stops
//! early (`stop`, `budget`) pays for the samples it took, not its cap; its first round's
//! regions that the fewest samples it takes afford (its rule's least at its first launch's
//! pace) go among those, so that a run stopping there holds them among its samples, not
//! after them behind a launch of their kernel each. And by time: a region
//! of a later round that would take the regions so far past [`SHARE_CAP`] of the cell's time
//! is left out (and counted); so is one of the first round's beyond its floor (three audited
//! regions, two decoys and three pauses, never left out: without them the verdict has nothing
//! to stand on) that would take them past [`PLANNED_SHARE`] of its projected time. A cell
//! whose regions' times are not judged (a host timer) holds its audited regions alone.

use rand::{
    rngs::SmallRng,
    seq::{index::sample, IndexedRandom, SliceRandom},
    SeedableRng,
};
use std::time::Duration;

use crate::plan::audit_rounds::{affordable, counts, kinds_run};
pub use crate::plan::audit_rounds::{
    audited_before, first_round, region_launches, run_floor, Region, AUDIT_SHARE_CAP as SHARE_CAP,
    PLANNED_SHARE, ROUND,
};

/// The earliest steady sample a pause runs before: it is then the fourth launch after the first
/// draw. The first launches after a draw read slow in some hot cells (on an H200, of 2,132
/// honest cells' second launches after a draw, 4.2% read over 5% above their cell's median;
/// of their fourth, 1.6%; later, 1.1%), and a pause that caught one would read as a kernel doing
/// more work after a pause. Within a round a staged region's launch and the two samples after
/// it come before the next region; a round's first place may follow the last round's last
/// region a sample apart, which this leaves as it was.
const FIRST_PAUSE: usize = 3;

/// Whether a region due may be left out for what it costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The first round's floor: never.
    Always,
    /// The first round's others: where the regions stay within [`PLANNED_SHARE`] of the
    /// cell's projected time.
    WithinPlan,
    /// A later round's: where they stay within [`SHARE_CAP`] of the cell's time so far.
    WithinCap,
    /// Added among the samples for what they read ([`Schedule::again`]): never, and not of the
    /// first round's plan, so not counted in what it dealt; dropped where the loop ends before
    /// it (a decoy after the samples could be told apart).
    Added,
}

/// Whether the regions `next` (the one due, and those of the floor still to come) keep a
/// cell's regions within `share` of its time (`cell`: so far, or projected), given the
/// regions run so far with what each cost, its check included: each is counted at what the
/// regions of its kind cost so far (any kind's, before the first). The staging's
/// once-a-process compile is the process's, as the cell's own compile is, and not counted.
pub fn affords(
    ran: &[(Region, Duration)],
    next: &[Region],
    (cell, share): (Duration, f64),
) -> bool {
    let secs = |of: &mut dyn Iterator<Item = &(Region, Duration)>| -> (f64, usize) {
        of.fold((0.0, 0), |(t, n), (_, d)| (t + d.as_secs_f64(), n + 1))
    };
    let (all, n) = secs(&mut ran.iter());
    let expected = |kind: Region| {
        let (same, k) = secs(&mut ran.iter().filter(|(r, _)| *r == kind));
        match (k, n) {
            (0, 0) => 0.0,
            (0, n) => all / n as f64,
            (k, _) => same / k as f64,
        }
    };
    let coming: f64 = next.iter().map(|&k| expected(k)).sum();
    all + coming <= share * (cell.as_secs_f64() + coming)
}

/// Where round `round` of a run lies among its steady samples.
fn span(round: usize) -> (usize, usize) {
    match round {
        0 => (0, ROUND),
        r => (ROUND << (r - 1), ROUND << r),
    }
}

/// A run's regions, drawn round by round as its samples go.
#[derive(Debug)]
pub struct Schedule {
    rng: SmallRng,
    /// The run's steady samples at most, and the fewest it takes (a stop rule's or a
    /// budget's least): the first round's regions go among those first, so that a run that
    /// stops there holds them among its samples, not after them (once it takes more, the
    /// first round's end: the rest of its regions placed).
    samples: usize,
    fewest: usize,
    runs: usize,
    run: usize,
    round: usize,
    /// The current round's regions not run yet: (steady sample it runs before, kind, whether
    /// it may be left out), ascending.
    planned: Vec<(usize, Region, Keep)>,
    /// The first round's regions due so far, run or left out.
    dealt: usize,
    /// Whether the regions' times are set against each other: else only audited regions
    /// run (`audit_rounds::kinds_run`).
    judged: bool,
    /// Whether the round got more regions for a wide spread ([`Schedule::widen`]).
    widened: bool,
    /// Whether the next sample is due no region ([`Schedule::wait_a_sample`]).
    waiting: bool,
}

impl Schedule {
    /// The schedule of the run ranked `run` (see [`first_round`]) of `runs` of a cell, each
    /// of `samples` steady samples at most and `fewest` at least (a stop rule's or a
    /// budget's least), drawn from `seed`: the first round's regions the fewest afford go
    /// among them, the rest of the round's after them; where the regions' times are not
    /// `judged`, the audited ones alone.
    pub fn new(
        seed: u64,
        (samples, fewest): (usize, usize),
        (runs, run): (usize, usize),
        judged: bool,
    ) -> Schedule {
        let mut s = Schedule {
            rng: SmallRng::seed_from_u64(seed),
            samples,
            fewest: fewest.min(samples),
            runs,
            run,
            round: 0,
            planned: Vec::new(),
            dealt: 0,
            judged,
            widened: false,
            waiting: false,
        };
        s.plan_round();
        s
    }

    /// Draws the current round's regions: in the first, those its fewest samples afford
    /// among them (the rest once the run takes more, [`Schedule::top_up`]); in a later one,
    /// what its samples afford.
    fn plan_round(&mut self) {
        let (start, end) = span(self.round);
        self.planned.clear();
        match self.round {
            0 => {
                let ahead = self.fewest.min(end);
                let first = first_round(ahead, self.runs, self.run);
                let floor = run_floor(ahead, self.runs, self.run);
                self.place((start, ahead), first, floor);
            }
            _ => {
                let afforded = counts(affordable(end.min(self.samples).saturating_sub(start)));
                self.place((start, end), afforded, [0; 3]);
            }
        }
    }

    /// Once a run takes more than its fewest samples within the first round, the rest of
    /// the round's regions (what all its samples afford beyond what the fewest did), among
    /// the round's samples still to come.
    fn top_up(&mut self) {
        let less = |a: [usize; 3], b: [usize; 3]| [0, 1, 2].map(|k| a[k].saturating_sub(b[k]));
        let (runs, run) = (self.runs, self.run);
        let rest = less(
            first_round(self.samples, runs, run),
            first_round(self.fewest, runs, run),
        );
        let floor = less(
            run_floor(self.samples, runs, run),
            run_floor(self.fewest, runs, run),
        );
        // A sample apart from the regions among the fewest.
        let end = span(0).1.min(self.samples);
        self.place((self.fewest + 1, end), rest, floor);
        self.fewest = end;
    }

    /// Places `[audited, decoys, pauses]` regions, of which `floor` of each kind may never be
    /// left out, uniformly among the steady samples `start..end` (the run's at most) that
    /// keep them apart, kinds in a drawn order; appended to those planned.
    fn place(&mut self, (start, end): (usize, usize), counts: [usize; 3], floor: [usize; 3]) {
        let [a, d, p] = kinds_run(self.judged, counts);
        let mut floor = kinds_run(self.judged, floor);
        let (start, end) = (start.max(1), end.min(self.samples));
        let mut kinds: Vec<Region> = [(a, Region::Audit), (d, Region::Decoy), (p, Region::Pause)]
            .iter()
            .flat_map(|&(n, k)| std::iter::repeat_n(k, n))
            .collect();
        let places = end.saturating_sub(start);
        let count = kinds.len().min(places / 2);
        kinds.truncate(count);
        kinds.shuffle(&mut self.rng);
        // `count` of `places - count` places, each then moved on by the regions before it.
        let mut drawn = sample(&mut self.rng, places - count, count).into_vec();
        drawn.sort_unstable();
        // A pause drawn too soon after the first draw trades kinds with a later staged region.
        for i in (0..count).take_while(|&i| start + drawn[i] + i < FIRST_PAUSE) {
            if let Some(j) = (i + 1..count).find(|&j| kinds[j] != Region::Pause) {
                kinds.swap(i, j);
            }
        }
        let placed = (drawn.iter().enumerate()).map(|(i, y)| {
            let kind = kinds[i];
            let keep = match (self.round, &mut floor[kind as usize]) {
                (0, 0) => Keep::WithinPlan,
                (0, left) => {
                    *left -= 1;
                    Keep::Always
                }
                _ => Keep::WithinCap,
            };
            (start + y + i, kind, keep)
        });
        let placed: Vec<_> = placed.collect();
        self.planned.extend(placed);
        self.planned.sort_by_key(|p| p.0);
    }

    /// The first round's floor still to come.
    pub fn floor_to_come(&self) -> Vec<Region> {
        (self.planned.iter())
            .filter(|p| p.2 == Keep::Always)
            .map(|p| p.1)
            .collect()
    }

    /// The region due just before steady sample `index` (called for every sample in turn),
    /// if any, and whether its cost may leave it out (see [`Keep`]).
    pub fn due(&mut self, index: usize) -> Option<(Region, Keep)> {
        if std::mem::take(&mut self.waiting) {
            return None;
        }
        if self.round == 0 && index >= self.fewest && self.fewest < span(0).1.min(self.samples) {
            self.top_up();
        }
        while index >= span(self.round).1 && span(self.round).1 < self.samples {
            self.round += 1;
            self.plan_round();
        }
        match self.planned.first() {
            // At its place, or the next sample where another took it.
            Some(&(at, kind, keep)) if at <= index => {
                self.planned.remove(0);
                self.dealt += usize::from(self.round == 0 && keep != Keep::Added);
                Some((kind, keep))
            }
            _ => None,
        }
    }

    /// No region before the next sample: the one due there runs before the sample after it,
    /// the regions planned after it where they were (a host's work between two samples that
    /// delays the GPU's next work, which a stage would take past its pause).
    pub fn wait_a_sample(&mut self) {
        self.waiting = true;
    }

    /// One more region of `kind`, never left out, at a place drawn among the current round's
    /// steady samples after `after`, a sample apart from every region planned: where the
    /// samples spread wide ([`Schedule::widen`]), or where a region's reading was spoiled (a
    /// decoy read by events over
    /// [`crate::protocol::CONFIRM_RATIO`] times the timed median: the host's launch held up,
    /// or a kernel that spends time in decoys on purpose), a later one of its kind is judged
    /// beside it. False where the round has no such place left.
    pub fn again(&mut self, kind: Region, after: usize) -> bool {
        let end = span(self.round).1.min(self.samples);
        // Before the first round's rest is placed (past the fewest samples), among the fewest,
        // a sample apart from where the rest begins.
        let end = match self.round == 0 && self.fewest < end {
            true => self.fewest.saturating_sub(1),
            false => end,
        };
        let taken = |at: usize| (self.planned.iter()).any(|p| p.0 + 1 >= at && p.0 <= at + 1);
        let free: Vec<usize> = (after + 2..end).filter(|&at| !taken(at)).collect();
        let Some(&at) = free.choose(&mut self.rng) else {
            return false;
        };
        let i = self.planned.partition_point(|p| p.0 < at);
        self.planned.insert(i, (at, kind, Keep::Added));
        true
    }

    /// Whether [`Schedule::widen`] ran in this run: a run looks at its samples' spread until
    /// then.
    pub fn widened(&self) -> bool {
        self.widened
    }

    /// Once a run, where its timed samples spread wide (`confirm::spread_wide`) before steady
    /// sample `after`: `pairs` more audited regions and as many decoys, then `decoys` more
    /// decoys and `pauses` more pauses, one of each in turn, each where [`again`] places it (a
    /// round without room for all keeps the pairs, which the data test's bound was sized for,
    /// and as many of the others each as it can), and the round's regions planned kept
    /// whatever they cost, so that the added ones crowd none out.
    ///
    /// [`again`]: Schedule::again
    pub fn widen(&mut self, after: usize, (pairs, decoys, pauses): (usize, usize, usize)) {
        if std::mem::replace(&mut self.widened, true) {
            return;
        }
        for planned in self.planned.iter_mut().filter(|p| p.2 == Keep::WithinPlan) {
            planned.2 = Keep::Always;
        }
        let mut kinds = [Region::Audit, Region::Decoy].repeat(pairs);
        for i in 0..decoys.max(pauses) {
            kinds.extend((i < decoys).then_some(Region::Decoy));
            kinds.extend((i < pauses).then_some(Region::Pause));
        }
        for kind in kinds {
            self.again(kind, after);
        }
    }

    /// The regions to run after a loop that ended early, having taken `taken` samples and
    /// run `ran`: of the first round's left, as many as the samples taken afford beside
    /// those already due (run or left out for their cost), an
    /// audited one first where none ran, each with whether its cost may leave it out.
    /// Later rounds' are dropped: their cost follows the samples.
    pub fn after(&mut self, taken: usize, ran: &[Region]) -> Vec<(Region, Keep)> {
        if self.round > 0 {
            return Vec::new();
        }
        let mut pending: Vec<(Region, Keep)> = self
            .planned
            .drain(..)
            .filter(|p| p.2 != Keep::Added)
            .map(|(_, k, keep)| (k, keep))
            .collect();
        if !ran.contains(&Region::Audit) {
            match pending.iter().position(|k| k.0 == Region::Audit) {
                Some(i) => {
                    let audit = pending.remove(i);
                    pending.insert(0, (audit.0, Keep::Always));
                }
                // Its fewest samples afforded none and it stopped before them: still owed.
                None if first_round(self.samples, self.runs, self.run)[0] > 0 => {
                    pending.insert(0, (Region::Audit, Keep::Always));
                }
                None => {}
            }
        }
        let afforded = first_round(taken.max(3), self.runs, self.run);
        let allowed = kinds_run(self.judged, afforded).iter().sum::<usize>();
        let audit_owed = usize::from(!ran.contains(&Region::Audit));
        pending.truncate(allowed.saturating_sub(self.dealt).max(audit_owed));
        pending
    }
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
