//! The per-cell budget in the sample loop: between samples, whether the steady samples
//! taken so far spent the run's share of the cell's GPU time. It reads only what the loop
//! already has (each sample's reading, the loop's start), so the timed regions are as they
//! were.
//!
//! What counts as GPU time: a timer that reads each sample as it is taken (host, host_sync,
//! events) gives the timed launches' own time, each sample's reading times its launches.
//! CUPTI's and Nsight Compute's readings arrive after the loop, so for them it is the host's
//! wall time of the loop so far, which holds the launches and what lies between them
//! (flushes, resets, synchronizes; under Nsight Compute its profiling of each launch): more
//! than their GPU time, so such a cell stops no later than the budget says.

use crate::experiment::knobs::{budget::Budget, timer::TimerKind};
use crate::protocol::{Counted, Stopped};
use std::time::Duration;

pub struct Meter {
    /// This run's share of the cell's GPU time, in nanoseconds.
    limit_ns: f64,
    min_samples: u64,
    /// The samples the run was to take.
    planned: u64,
    by_wall: bool,
    spent_ns: f64,
    n: u64,
}

impl Meter {
    /// The meter of one run of a cell of `runs` runs that takes `planned` samples; None
    /// without a budget, or where the minimum count is all the samples.
    pub fn new(budget: Budget, timer: TimerKind, runs: u32, planned: u64) -> Option<Meter> {
        let Budget::Gpu {
            gpu_time,
            min_samples,
        } = budget
        else {
            return None;
        };
        (planned > min_samples).then(|| Meter {
            limit_ns: gpu_time.as_nanos() as f64 / f64::from(runs.max(1)),
            min_samples,
            planned,
            by_wall: !timer.reads_each_sample(),
            spent_ns: 0.0,
            n: 0,
        })
    }

    /// Adds a sample: its reading (ns per launch; NaN where it comes later), the launches it
    /// holds and the loop's wall time so far. Says why to stop, when the run's share is
    /// spent and the minimum count taken.
    pub fn push(&mut self, sample_ns: f64, launches: u64, loop_wall: Duration) -> Option<Stopped> {
        self.n += 1;
        self.spent_ns = match self.by_wall {
            true => loop_wall.as_nanos() as f64,
            false => self.spent_ns + sample_ns * launches as f64,
        };
        if self.n < self.min_samples || self.spent_ns < self.limit_ns || self.n == self.planned {
            return None;
        }
        Some(Stopped::Budget {
            spent_s: self.spent_ns / 1e9,
            counted: match self.by_wall {
                true => Counted::LoopWallTime,
                false => Counted::GpuTime,
            },
            samples: self.n,
            planned: self.planned,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(seconds: u64, min_samples: u64) -> Budget {
        Budget::Gpu {
            gpu_time: Duration::from_secs(seconds),
            min_samples,
        }
    }

    #[test]
    fn a_run_stops_once_its_share_is_spent_and_not_before_the_minimum() {
        // 2 s samples of a 10-launch graph (0.2 s a launch), 30 s over 3 runs: 10 s a run.
        let mut m = Meter::new(budget(30, 3), TimerKind::Events, 3, 50).unwrap();
        let stops: Vec<bool> = (0..6)
            .map(|_| m.push(0.2e9, 10, Duration::ZERO).is_some())
            .collect();
        assert_eq!(stops, [false, false, false, false, true, true]);
        // The minimum count holds even once the time is spent.
        let mut m = Meter::new(budget(1, 4), TimerKind::Events, 1, 50).unwrap();
        assert!((0..3).all(|_| m.push(1e9, 1, Duration::ZERO).is_none()));
        let why = m.push(1e9, 1, Duration::ZERO).unwrap();
        assert_eq!(
            why.to_string(),
            "budget: 4.00 s of GPU time spent after 4 of 50 samples"
        );
    }

    #[test]
    fn cupti_and_the_profiler_count_the_loops_wall_time() {
        let mut m = Meter::new(budget(5, 1), TimerKind::Cupti, 1, 100).unwrap();
        assert_eq!(m.push(f64::NAN, 1, Duration::from_secs(4)), None);
        let why = m.push(f64::NAN, 1, Duration::from_secs(6)).unwrap();
        assert_eq!(
            why,
            Stopped::Budget {
                spent_s: 6.0,
                counted: Counted::LoopWallTime,
                samples: 2,
                planned: 100
            }
        );
    }

    #[test]
    fn no_meter_without_a_budget_or_beyond_the_minimum() {
        assert!(Meter::new(Budget::Fixed, TimerKind::Events, 1, 100).is_none());
        assert!(Meter::new(budget(1, 10), TimerKind::Events, 1, 10).is_none());
        // The last sample is no early stop.
        let mut m = Meter::new(budget(1, 1), TimerKind::Events, 1, 2).unwrap();
        assert!(m.push(1e9, 1, Duration::ZERO).is_some());
        let mut m = Meter::new(budget(10, 1), TimerKind::Events, 1, 2).unwrap();
        assert!(m.push(1e9, 1, Duration::ZERO).is_none());
        assert!(m.push(20e9, 1, Duration::ZERO).is_none());
    }
}
