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
//! How many: regions come in rounds of two audited regions, two decoys and six pauses at
//! places drawn within it (a pause costs little more than a sample: a kernel that tells some
//! pauses from others must evade most of six, not one of two). The first round spans the
//! first 200 samples, the second the next 200, each later one twice the one before: 5% of a
//! 200-sample cell, a falling share of a longer one (more regions hardly lower the detection
//! limit once the margin outweighs the noise), drawn as the cell goes, so a cell that stops
//! early (`stop`, `budget`) pays for the samples it took, not its cap; its first round's
//! regions that the fewest samples it takes afford (its rule's least at its first launch's
//! pace) go among those, so that a run stopping there holds them among its samples, not
//! after them behind a launch of their kernel each. And by time: a region
//! of a later round that would take the regions so far past [`SHARE_CAP`] of the cell's time
//! is left out (and counted); so is one of the first round's beyond its floor (two audited
//! regions, a decoy and three pauses, never left out: without them the verdict has nothing
//! to stand on) that would take them past [`PLANNED_SHARE`] of its projected time.

use rand::{
    rngs::SmallRng,
    seq::{index::sample, IndexedRandom, SliceRandom},
    SeedableRng,
};
use std::time::Duration;

use crate::plan::audit_rounds::{affordable, counts, run_floor};
pub use crate::plan::audit_rounds::{
    first_round, Region, AUDIT_SHARE_CAP as SHARE_CAP, PLANNED_SHARE, ROUND,
};

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
}

impl Schedule {
    /// The schedule of the run ranked `run` (see [`first_round`]) of `runs` of a cell, each
    /// of `samples` steady samples at most and `fewest` at least (a stop rule's or a
    /// budget's least), drawn from `seed`: the first round's regions the fewest afford go
    /// among them, the rest of the round's after them.
    pub fn new(seed: u64, (samples, fewest): (usize, usize), runs: usize, run: usize) -> Schedule {
        let mut s = Schedule {
            rng: SmallRng::seed_from_u64(seed),
            samples,
            fewest: fewest.min(samples),
            runs,
            run,
            round: 0,
            planned: Vec::new(),
            dealt: 0,
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
        let end = span(0).1.min(self.samples);
        self.place((self.fewest, end), rest, floor);
        self.fewest = end;
    }

    /// Places `[audited, decoys, pauses]` regions, of which `floor` of each kind may never be
    /// left out, uniformly among the steady samples `start..end` (the run's at most) that
    /// keep them apart, kinds in a drawn order; appended to those planned.
    fn place(
        &mut self,
        (start, end): (usize, usize),
        [a, d, p]: [usize; 3],
        mut floor: [usize; 3],
    ) {
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
                self.dealt += usize::from(self.round == 0);
                Some((kind, keep))
            }
            _ => None,
        }
    }

    /// One more region of `kind`, never left out, at a place drawn among the current round's
    /// steady samples after `after`, a sample apart from every region planned: where a
    /// region's reading was spoiled (a decoy read by events over
    /// [`crate::protocol::CONFIRM_RATIO`] times the timed median: the host's launch held up,
    /// or a kernel that spends time in decoys on purpose), a later one of its kind is judged
    /// beside it. False where the round has no such place left.
    pub fn again(&mut self, kind: Region, after: usize) -> bool {
        let end = span(self.round).1.min(self.samples);
        let taken = |at: usize| (self.planned.iter()).any(|p| p.0 + 1 >= at && p.0 <= at + 1);
        let free: Vec<usize> = (after + 2..end).filter(|&at| !taken(at)).collect();
        let Some(&at) = free.choose(&mut self.rng) else {
            return false;
        };
        let i = self.planned.partition_point(|p| p.0 < at);
        self.planned.insert(i, (at, kind, Keep::Always));
        true
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
            .map(|(_, k, keep)| (k, keep))
            .collect();
        if !ran.contains(&Region::Audit) {
            if let Some(i) = pending.iter().position(|k| k.0 == Region::Audit) {
                let audit = pending.remove(i);
                pending.insert(0, (audit.0, Keep::Always));
            }
        }
        let allowed = first_round(taken.max(3), self.runs, self.run)
            .iter()
            .sum::<usize>();
        let audit_owed = usize::from(!ran.contains(&Region::Audit));
        pending.truncate(allowed.saturating_sub(self.dealt).max(audit_owed));
        pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every region a run of `samples` holds, kinds counted.
    fn run_all(seed: u64, samples: usize) -> (Vec<(usize, Region)>, [usize; 3]) {
        let mut s = Schedule::new(seed, (samples, samples), 1, 0);
        let mut all = Vec::new();
        for i in 0..samples {
            if let Some((k, _)) = s.due(i) {
                all.push((i, k));
            }
        }
        let mut c = [0; 3];
        for (_, k) in &all {
            c[*k as usize] += 1;
        }
        (all, c)
    }

    #[test]
    fn a_region_again_falls_later_in_the_round_a_sample_apart_from_the_others() {
        let mut s = Schedule::new(7, (300, 300), 1, 0);
        let planned: Vec<usize> = s.planned.iter().map(|p| p.0).collect();
        assert!(s.again(Region::Decoy, 19));
        let added: Vec<&(usize, Region, Keep)> = (s.planned.iter())
            .filter(|p| !planned.contains(&p.0))
            .collect();
        let &&(at, kind, keep) = added.first().unwrap();
        assert_eq!((added.len(), kind, keep), (1, Region::Decoy, Keep::Always));
        assert!(at > 20 && at < span(0).1, "{at}");
        assert!(
            planned.iter().all(|&p| p.abs_diff(at) >= 2),
            "{at} {planned:?}"
        );
        assert!(s.planned.windows(2).all(|w| w[0].0 < w[1].0));
        // Due in turn, as every planned region of the round is.
        let due: Vec<Region> = (0..span(0).1)
            .filter_map(|i| s.due(i).map(|d| d.0))
            .collect();
        assert_eq!(due.len(), planned.len() + 1);
        // No place left after the round's last sample.
        assert!(!Schedule::new(7, (300, 300), 1, 0).again(Region::Decoy, span(0).1));
    }

    #[test]
    fn a_short_cell_affords_at_most_a_twentieth_of_its_samples_and_always_an_audit() {
        let one = |samples| first_round(samples, 1, 0);
        assert_eq!(one(0), [0, 0, 0]);
        assert_eq!(one(2), [0, 0, 0]);
        assert_eq!(one(3), [1, 0, 0]);
        assert_eq!(one(20), [1, 0, 0]);
        assert_eq!(one(40), [1, 0, 1]);
        assert_eq!(one(60), [1, 1, 1]);
        assert_eq!(one(59), [1, 0, 1]);
        assert_eq!(crate::plan::audit_rounds::samples_for_a_decoy(), 60);
        assert_eq!(one(100), [2, 2, 1]);
        assert_eq!(one(120), [2, 2, 2]);
        assert_eq!(one(140), [2, 2, 3]);
        assert_eq!(one(10_000), [2, 2, 6]);
        // Five rounds of 40 share the ten their 200 samples afford, in the two that hold an
        // audited region: a round without one is not audited among its launches, and its
        // pauses would be lost (an interleaved cell held three of its six so).
        let rounds: Vec<_> = (0..5).map(|r| first_round(40, 5, r)).collect();
        assert_eq!(
            rounds,
            [[1, 1, 3], [1, 1, 3], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
        );
        // Their floor is their whole round: the cell's pauses are pooled, and three of them in
        // all let a LayerNorm that reads its launch period through.
        let floors: Vec<_> = (0..5).map(|r| run_floor(40, 5, r)).collect();
        assert_eq!(floors, [[1, 1, 3], [1, 1, 3], [0; 3], [0; 3], [0; 3]]);
        assert_eq!(run_floor(200, 1, 0), [2, 1, 3]);
        // Five rounds of 60 afford a set each: an audited region in each.
        let rounds: Vec<_> = (0..5).map(|r| first_round(60, 5, r)).collect();
        assert_eq!(
            rounds,
            [[1, 1, 2], [1, 1, 1], [1, 0, 1], [1, 0, 1], [1, 0, 1]]
        );
        // Ten processes of 5 samples: the audited region and the pause the 50 samples
        // afford, in the run the seed draws.
        assert_eq!(first_round(5, 10, 0), [1, 0, 1]);
        // Twelve of 5: the audited region and a pause, not a decoy (a cell with no pause
        // has no pause test).
        assert_eq!(first_round(5, 12, 0), [1, 0, 1]);
        assert_eq!(first_round(5, 12, 1), [0, 0, 0]);
        assert_eq!(first_round(5, 10, 9), [0, 0, 0]);
        assert_eq!(first_round(4, 10, 0), [1, 0, 0]);
    }

    #[test]
    fn regions_are_apart_after_the_first_sample_and_follow_the_seed() {
        for samples in [3, 4, 9, 10, 17, 20, 100, 200, 399, 401, 10_000] {
            let (all, _) = run_all(7, samples);
            assert!(!all.is_empty(), "{samples}");
            assert!(all.iter().all(|&(i, _)| i >= 1 && i < samples), "{all:?}");
            assert!(all.windows(2).all(|w| w[1].0 > w[0].0), "{all:?}");
            assert!(
                all.windows(2)
                    .all(|w| w[1].0 >= w[0].0 + 2 || w[1].0 % ROUND < 2),
                "{all:?}"
            );
            assert_eq!(all, run_all(7, samples).0);
        }
        assert_ne!(run_all(7, 10_000).0, run_all(8, 10_000).0);
        assert!(run_all(7, 2).0.is_empty());
    }

    #[test]
    fn rounds_double_so_a_long_cell_pays_a_falling_share() {
        let (_, c) = run_all(3, 200);
        assert_eq!(c, [2, 2, 6]);
        let (_, c) = run_all(3, 400);
        assert_eq!(c, [4, 4, 12]);
        // 200, 200, 400, 800, ..., 51200 and what is left of 100,000: 10 rounds of ten.
        let (all, c) = run_all(3, 100_000);
        assert_eq!(all.len(), 100, "{c:?}");
        assert_eq!(c, [20, 20, 60]);
    }

    #[test]
    fn regions_past_their_share_of_the_cells_time_are_left_out() {
        let ms = Duration::from_millis;
        let cap = |cell| (ms(cell), SHARE_CAP);
        assert!(affords(&[], &[Region::Audit], cap(0)));
        // Two audits of 4 ms in a cell of 100 ms so far: a decoy counted at the regions'
        // mean (4 ms) would make 12 of 104.
        let two = [(Region::Audit, ms(4)), (Region::Audit, ms(4))];
        assert!(!affords(&two, &[Region::Decoy], cap(100)));
        assert!(affords(&two, &[Region::Decoy], cap(300)));
        // A pause counted at the pauses' own cost, not the audits'.
        let three = [
            (Region::Audit, ms(4)),
            (Region::Audit, ms(4)),
            (Region::Pause, ms(1)),
        ];
        assert!(affords(&three, &[Region::Pause], cap(200)));
        assert!(!affords(&three, &[Region::Audit], cap(200)));
        assert!(affords(&three, &[Region::Audit], cap(300)));
        // The floor still to come is counted too: a pause now would make 10 ms of a
        // projected 301 (3.3%), with an audit later 14 of 305 (4.6%, over 4%).
        let plan = (ms(300), PLANNED_SHARE);
        assert!(affords(&three, &[Region::Pause], plan));
        assert!(!affords(&three, &[Region::Pause, Region::Audit], plan));
    }

    #[test]
    fn the_first_rounds_floor_is_never_left_out_and_its_others_by_the_plan() {
        for seed in 0..20 {
            let mut s = Schedule::new(seed, (1000, 1000), 1, 0);
            let due: Vec<(usize, Region, Keep)> = (0..1000)
                .filter_map(|i| s.due(i).map(|(kind, keep)| (i, kind, keep)))
                .collect();
            let first = |keep| {
                let of = due.iter().filter(|d| d.0 < ROUND && d.2 == keep);
                let mut c = [0; 3];
                of.for_each(|d| c[d.1 as usize] += 1);
                c
            };
            // Two audited regions, a decoy and three pauses; a decoy and three pauses beyond.
            assert_eq!(first(Keep::Always), [2, 1, 3], "{due:?}");
            assert_eq!(first(Keep::WithinPlan), [0, 1, 3], "{due:?}");
            assert!(due
                .iter()
                .all(|d| (d.0 < ROUND) == (d.2 != Keep::WithinCap)));
            // The floor is the first of each kind.
            for kind in [Region::Audit, Region::Decoy, Region::Pause] {
                let of: Vec<Keep> = (due.iter().filter(|d| d.0 < ROUND && d.1 == kind))
                    .map(|d| d.2)
                    .collect();
                assert!(of
                    .windows(2)
                    .all(|w| w[0] == Keep::Always || w[1] != Keep::Always));
            }
        }
        // A short cell's floor is what its round holds of it.
        let mut s = Schedule::new(3, (60, 60), 1, 0);
        let keeps: Vec<Keep> = (0..60).filter_map(|i| s.due(i).map(|d| d.1)).collect();
        assert_eq!(keeps, [Keep::Always; 3]);
    }

    #[test]
    fn a_loop_that_stops_early_pays_for_the_samples_it_took() {
        // Stopped after 23 of a 100,000 cap: what ran, and an audited region if none did.
        for seed in 0..20 {
            let mut s = Schedule::new(seed, (100_000, 100_000), 1, 0);
            let ran: Vec<Region> = (0..23).filter_map(|i| s.due(i).map(|d| d.0)).collect();
            let after = s.after(23, &ran);
            match ran.contains(&Region::Audit) {
                true => assert!(after.is_empty(), "{ran:?} {after:?}"),
                false => assert_eq!(after, [(Region::Audit, Keep::Always)], "{ran:?}"),
            }
        }
        // Stopped after 150: the 7 of the first round its samples afford.
        let mut s = Schedule::new(5, (100_000, 100_000), 1, 0);
        let ran: Vec<Region> = (0..150).filter_map(|i| s.due(i).map(|d| d.0)).collect();
        let after = s.after(150, &ran);
        assert_eq!(ran.len() + after.len(), 7, "{ran:?} {after:?}");
        // A run that takes 23 at least (a stop rule's least time at its first launch's
        // pace) holds among them what they afford, an audited region, and nothing after
        // where it stops there; where it goes on to 150, what those afford (7) at least,
        // among its samples or after them, and no more than the round's 10.
        for seed in 0..20 {
            let mut s = Schedule::new(seed, (100_000, 23), 1, 0);
            let ran: Vec<Region> = (0..23).filter_map(|i| s.due(i).map(|d| d.0)).collect();
            assert_eq!(ran, [Region::Audit], "{seed}");
            assert!(s.after(23, &ran).is_empty());
            let mut s = Schedule::new(seed, (100_000, 23), 1, 0);
            let ran: Vec<Region> = (0..150).filter_map(|i| s.due(i).map(|d| d.0)).collect();
            let after = s.after(150, &ran);
            let held = ran.len() + after.len();
            assert!((7..=10).contains(&held), "{ran:?} {after:?}");
            let mut all = Schedule::new(seed, (100_000, 23), 1, 0);
            let whole: Vec<Region> = (0..200).filter_map(|i| all.due(i).map(|d| d.0)).collect();
            let kinds = |k: Region| whole.iter().filter(|&&r| r == k).count();
            let kinds = [Region::Audit, Region::Decoy, Region::Pause].map(kinds);
            assert_eq!(kinds, first_round(200, 1, 0), "{seed}: the whole round");
        }
        // Stopped in the third round: nothing more.
        let mut s = Schedule::new(5, (100_000, 100_000), 1, 0);
        let ran: Vec<Region> = (0..500).filter_map(|i| s.due(i).map(|d| d.0)).collect();
        assert!(s.after(500, &ran).is_empty());
        assert!(ran.len() >= 12);
    }
}
