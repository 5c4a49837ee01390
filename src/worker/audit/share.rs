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
    /// then: the samples' pace, which projects the cell's time.
    samples: usize,
    pace: Option<(Instant, Duration)>,
    /// Where the run's samples may end before their count, and the launches each sample
    /// holds (a stop rule or budget counts the GPU time of all of them).
    ends: Ends,
    launches: u64,
}

/// Where a run's samples may end before their count, each the run's share: a stop rule or
/// a budget, once it holds its least samples and GPU time. The loop's wall time bounds its
/// GPU time, so the samples left at the wall's pace are the fewest the rule or the budget
/// may still take: the projection errs short.
#[derive(Debug, Clone, Copy)]
enum Ends {
    Count,
    Least { min_samples: u64, gpu: Duration },
}

impl Share {
    /// The account of a run of `cell` of `samples` steady samples at most, begun at `began`.
    pub(super) fn new(cell: &Cell, samples: usize, began: Instant) -> Share {
        let runs = cell.runs().max(1);
        let k = &cell.knobs;
        let ends = match (k.samples.stop, k.budget) {
            (Some(stop), _) => Ends::Least {
                min_samples: stop.min_samples,
                gpu: Duration::from_secs_f64(stop.min_gpu_ns * 1e-9) / runs,
            },
            (
                None,
                Budget::Gpu {
                    gpu_time,
                    min_samples,
                },
            ) => Ends::Least {
                min_samples,
                gpu: gpu_time / runs,
            },
            (None, Budget::Fixed) => Ends::Count,
        };
        Share {
            began,
            capped: 0,
            samples,
            pace: None,
            ends,
            launches: k.launches.count().max(1),
        }
    }

    /// The fewest steady samples the run takes where each launch takes `launch_ns` on the GPU
    /// (the first timed launch's reading, per launch; NaN where its timer reads later): its
    /// count, or what its stop rule or budget holds at least (a first launch slower than the
    /// rest errs short).
    pub(super) fn fewest(&self, launch_ns: f64) -> usize {
        let sample_ns = launch_ns * self.launches as f64;
        let by_time = |gpu: Duration| {
            let known = sample_ns.is_finite() && sample_ns > 0.0;
            known.then(|| (gpu.as_secs_f64() * 1e9 / sample_ns).ceil() as usize)
        };
        let least = match self.ends {
            Ends::Count => None,
            Ends::Least { min_samples, gpu } => by_time(gpu).map(|n| n.max(min_samples as usize)),
        };
        least.map_or(self.samples, |n| n.min(self.samples))
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
            Keep::Always | Keep::Added => true,
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
            if matches!(keep, Keep::Always | Keep::Added) || self.affords(ran, &next, so_far) {
                kept.push(kind);
            }
        }
        kept
    }

    /// The cell's time projected at steady sample `index`, the audit's `cost` so far, at
    /// `now`: so far, and its samples left (see [`Ends`]) at the pace of those run (the
    /// regions' time left out).
    fn projected(&self, index: usize, cost: Duration, now: Instant) -> Duration {
        let so_far = now.duration_since(self.began);
        let Some((first, cost_then)) = self.pace.filter(|_| index > 0) else {
            return so_far;
        };
        let regions = cost.saturating_sub(cost_then);
        let loop_time = now.duration_since(first).saturating_sub(regions);
        let pace = loop_time.as_secs_f64() / index as f64;
        let by_time = |t: Duration| match pace > 0.0 {
            true => t.saturating_sub(loop_time).as_secs_f64() / pace,
            false => 0.0,
        };
        let count = self.samples.saturating_sub(index) as f64;
        let left = match self.ends {
            Ends::Count => count,
            Ends::Least { min_samples, gpu } => {
                let least = (min_samples as f64 - index as f64).max(by_time(gpu));
                count.min(least.max(0.0))
            }
        };
        so_far + Duration::from_secs_f64(left * pace)
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
            ends: Ends::Count,
            launches: 1,
        };
        // 10 samples in 20 ms, 2 ms of it regions: 1.8 ms a sample, 100 left, 30 ms so far.
        let now = began + ms(30);
        assert_eq!(share.projected(10, ms(3), now), ms(210));
        // Before the first sample, the time so far.
        assert_eq!(share.projected(0, ms(3), now), ms(30));
        // A budget of 54 ms of GPU time: at most 18 ms of it so far (the loop less its
        // regions), 36 ms left at 1.8 ms a sample, 30 + 36 ms.
        share.ends = Ends::Least {
            min_samples: 0,
            gpu: ms(54),
        };
        assert_eq!(share.projected(10, ms(3), now), ms(66));
        // A stop rule's least: 20 samples (10 more), or 27 ms of GPU time (5 more).
        share.ends = Ends::Least {
            min_samples: 20,
            gpu: ms(27),
        };
        assert_eq!(share.projected(10, ms(3), now), ms(48));
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
    fn a_run_takes_at_least_its_count_or_what_its_stop_rule_or_budget_holds() {
        let ms = Duration::from_millis;
        let mut share = Share {
            began: Instant::now(),
            capped: 0,
            samples: 100_000,
            pace: None,
            ends: Ends::Count,
            launches: 1,
        };
        assert_eq!(share.fewest(21.8e6), 100_000);
        // NVBench's rule on a 21.8 ms matmul: 0.5 s of GPU time is 23 launches, over 10.
        share.ends = Ends::Least {
            min_samples: 10,
            gpu: ms(500),
        };
        assert_eq!(share.fewest(21.8e6), 23);
        assert_eq!(share.fewest(200e6), 10);
        // A timer that reads later (CUPTI) says nothing of the pace: its count.
        assert_eq!(share.fewest(f64::NAN), 100_000);
        share.ends = Ends::Least {
            min_samples: 10,
            gpu: ms(100),
        };
        assert_eq!(share.fewest(1e6), 100);
        assert_eq!(share.fewest(50e6), 10);
        // A batch of 10 launches of 1 ms: 10 ms a sample.
        share.launches = 10;
        assert_eq!(share.fewest(1e6), 10);
        share.launches = 1;
        share.samples = 50;
        assert_eq!(share.fewest(1e6), 50);
    }

    #[test]
    fn the_regions_kept_after_an_early_stop_are_counted_together() {
        let ms = Duration::from_millis;
        let mut share = Share {
            began: Instant::now() - ms(1000),
            capped: 0,
            samples: 100,
            pace: None,
            ends: Ends::Count,
            launches: 1,
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
