//! What share of a cell's time its audit's regions may take: each region due runs or is
//! left out (see `method::audit::Keep`), against the cell's time so far or projected.

use crate::experiment::knobs::budget::Budget;
use crate::method::audit::{self, Keep, Region};
use crate::plan::Cell;
use std::time::{Duration, Instant};

/// A run's account of its regions' share of its cell's time.
pub(super) struct Share {
    /// When the cell began, and the regions its share of the cell's time left out.
    began: Instant,
    capped: u64,
    /// The run's steady samples at most, and when the first began with the audit's cost
    /// then: the samples' pace, which projects the cell's time. A run that holds the regions
    /// of runs that hold none (interleaved rounds) projects theirs too: `runs_held` runs.
    samples: usize,
    pace: Option<(Instant, Duration)>,
    runs_held: f64,
    /// Whether the cell may stop before its samples (a stop rule, a budget): its time is
    /// then projected no further than so far.
    may_stop: bool,
}

impl Share {
    /// The account of a run of `cell` of `samples` steady samples at most, begun at `began`.
    pub(super) fn new(cell: &Cell, samples: usize, began: Instant) -> Share {
        let runs = cell.runs().max(1) as usize;
        Share {
            began,
            capped: 0,
            samples,
            pace: None,
            runs_held: runs as f64 / audit::holders(samples, runs).max(1) as f64,
            may_stop: cell.knobs.samples.stop.is_some() || cell.knobs.budget != Budget::Fixed,
        }
    }

    /// The regions the share left out.
    pub(super) fn capped(&self) -> u64 {
        self.capped
    }

    /// The steady samples begin, the audit having cost `cost` so far: the pace counts from
    /// here.
    pub(super) fn begin(&mut self, cost: Duration) {
        self.pace = Some((Instant::now(), cost));
    }

    /// Whether the region `due` before steady sample `index` runs, given the regions `ran`
    /// so far with what each cost, the first round's floor still to come and the audit's
    /// `cost` so far.
    pub(super) fn keeps(
        &mut self,
        ran: &[(Region, Duration)],
        ((kind, keep), floor_to_come): ((Region, Keep), Vec<Region>),
        (index, cost): (usize, Duration),
    ) -> bool {
        match keep {
            Keep::Always => true,
            Keep::WithinPlan => {
                let next = [vec![kind], floor_to_come].concat();
                let projected = self.projected(index, cost, Instant::now());
                self.affords(ran, &next, Some(projected))
            }
            Keep::WithinCap => self.affords(ran, &[kind], None),
        }
    }

    /// Of the regions `pending` after a loop that stopped early, those that run: the floor,
    /// and the others within the planned share of the cell's time so far.
    pub(super) fn after(
        &mut self,
        ran: &[(Region, Duration)],
        pending: &[(Region, Keep)],
    ) -> Vec<Region> {
        let mut kept: Vec<Region> = Vec::new();
        for (i, &(kind, keep)) in pending.iter().enumerate() {
            let floor = (pending[i + 1..].iter()).filter(|p| p.1 == Keep::Always);
            // What this loop kept runs after it, with the floor still to come.
            let next: Vec<Region> = (kept.iter().copied())
                .chain([kind])
                .chain(floor.map(|p| p.0))
                .collect();
            let so_far = Some(self.began.elapsed());
            if keep == Keep::Always || self.affords(ran, &next, so_far) {
                kept.push(kind);
            }
        }
        kept
    }

    /// The cell's time projected at steady sample `index`, the audit's `cost` so far, at
    /// `now`: so far, and its samples left at the pace of those run (the regions' time left
    /// out), for each run this one holds the regions of.
    fn projected(&self, index: usize, cost: Duration, now: Instant) -> Duration {
        let so_far = now.duration_since(self.began);
        let run = match self.pace.filter(|_| index > 0 && !self.may_stop) {
            Some((first, cost_then)) => {
                let regions = cost.saturating_sub(cost_then);
                let loop_time = now.duration_since(first).saturating_sub(regions);
                let left = self.samples.saturating_sub(index) as u32;
                so_far + loop_time / index as u32 * left
            }
            None => so_far,
        };
        run.mul_f64(self.runs_held)
    }

    /// Whether the audit's share of the cell's time affords the regions `next` now (see
    /// [`audit::affords`]): the planned share of the `projected` time, or the cap of the
    /// time so far; a region left out is counted.
    fn affords(
        &mut self,
        ran: &[(Region, Duration)],
        next: &[Region],
        projected: Option<Duration>,
    ) -> bool {
        let within = match projected {
            Some(cell) => audit::affords(ran, next, (cell, audit::PLANNED_SHARE)),
            None => audit::affords(ran, next, (self.began.elapsed(), audit::SHARE_CAP)),
        };
        self.capped += u64::from(!within);
        within
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_projection_runs_the_samples_left_at_the_pace_of_those_run_less_the_regions() {
        let ms = Duration::from_millis;
        let began = Instant::now();
        let mut share = Share {
            began,
            capped: 0,
            samples: 110,
            pace: Some((began + ms(10), ms(1))),
            runs_held: 1.0,
            may_stop: false,
        };
        // 10 samples in 20 ms, 2 ms of it regions: 1.8 ms a sample, 100 left, 30 ms so far.
        let now = began + ms(30);
        assert_eq!(share.projected(10, ms(3), now), ms(210));
        // Before the first sample, the time so far; a run holding two runs' regions, twice.
        assert_eq!(share.projected(0, ms(3), now), ms(30));
        share.runs_held = 2.0;
        assert_eq!(share.projected(10, ms(3), now), ms(420));
        // A cell that may stop early is projected no further than so far.
        share.may_stop = true;
        assert_eq!(share.projected(10, ms(3), now), ms(60));
        // The floor is kept whatever it costs; a region beyond it only within the share (the
        // cell begun in the future: none of its time so far).
        share.began = Instant::now() + Duration::from_secs(3600);
        let ran = [(Region::Audit, ms(5)), (Region::Pause, ms(1))];
        assert!(share.keeps(&ran, ((Region::Audit, Keep::Always), vec![]), (10, ms(6))));
        assert!(!share.keeps(
            &ran,
            ((Region::Audit, Keep::WithinCap), vec![]),
            (10, ms(6))
        ));
        assert_eq!(share.capped(), 1);
    }

    #[test]
    fn the_regions_kept_after_an_early_stop_are_counted_together() {
        let ms = Duration::from_millis;
        let mut share = Share {
            began: Instant::now() - ms(1000),
            capped: 0,
            samples: 100,
            pace: None,
            runs_held: 1.0,
            may_stop: true,
        };
        // Ten pauses of 3 ms in a cell of a second so far: 30 ms; eight more of 3 ms each
        // would make 54 ms, over 4%: only three fit (39 of 1009 ms), the floor's audit too.
        let ran = [(Region::Pause, ms(3)); 10];
        let mut pending = vec![(Region::Pause, Keep::WithinPlan); 8];
        pending.push((Region::Audit, Keep::Always));
        let kept = share.after(&ran, &pending);
        let pauses = kept.iter().filter(|k| **k == Region::Pause).count();
        assert!(pauses <= 3, "{kept:?}");
        assert_eq!(kept.last(), Some(&Region::Audit));
    }
}
