//! The kernel's launches before a region after the samples: the region then follows its
//! kernel as one among the samples does, not a check or the host's read of CUPTI's records,
//! and the gap on the GPU before it is a stage's, as before the others.

use super::Among;
use crate::experiment::knobs::{timer::TimerKind, Knobs};
use crate::protocol::{lead_launches, CellRecord, CUPTI_LEADS};
use crate::worker::arm::{Armed, Starts};
use crate::worker::failure::{during, Failure};
use crate::worker::prepare::ReadyCell;
use std::time::Instant;

impl Among {
    /// Runs the launches before a region after the samples, from region `place` of the run on;
    /// returns the places they took. Untimed, each waited on before the next, as a sample is
    /// (launches back to back, which no sample of single launches is, told a kernel that its
    /// samples were over: `reread-skip`). By events or a host timer, the kernel on reset
    /// buffers for about `protocol::LEAD_NS` at its timed median (`samples`). Under CUPTI,
    /// whose records hold every launch, regions as timed ones, at places whose records no
    /// reading takes ([`Self::untimed`]): without them the regions after the samples followed the
    /// host's read of those records, and on an H200 at 40e5f40 the gaps before them ran 2-18
    /// times the other regions' (`trust-adversary-3`: Kolmogorov-Smirnov D = 0.171 between the
    /// staged regions' gaps and the pauses'; 0.049 over each run's gaps without those after the
    /// samples). None under the profiler, or where CUPTI collects beside events.
    pub(in crate::worker) fn lead_in<'b>(
        &mut self,
        ready: ReadyCell<'b>,
        (armed, rec): (&mut Armed<'b>, &mut CellRecord),
        (place, samples): (usize, &[f64]),
    ) -> Result<usize, Failure> {
        let start = Instant::now();
        let placed = match lead(&ready.cell.knobs) {
            Lead::Nothing => 0,
            Lead::Regions => self.timed_lead(ready, (armed, rec), place)?,
            Lead::Launches => {
                let median = crate::statistics::median(samples.to_vec());
                let count = lead_launches(median);
                for _ in 0..count {
                    (ready.data.sets[0].reset())
                        .and_then(|()| armed.launch.enqueue())
                        .and_then(|()| cuda::synchronize())
                        .map_err(during(
                            "audit: the launches before a region after the samples",
                        ))?;
                }
                rec.kernel_launches += count;
                0
            }
        };
        self.spend(start.elapsed());
        Ok(placed)
    }

    /// Under CUPTI, the regions before a region after the samples
    /// ([`crate::protocol::CUPTI_LEADS`]), each as a timed one runs (resets, flush), their
    /// places kept as untimed. Not `protocol::LEAD_NS` of them: CUPTI's span holds no host's
    /// launch, whose path cools while the host checks (what that is sized for), and more would
    /// each cost a sample, with its flush in a cold cell, before each of up to 20 regions after
    /// the samples.
    fn timed_lead<'b>(
        &mut self,
        ready: ReadyCell<'b>,
        (armed, rec): (&mut Armed<'b>, &mut CellRecord),
        place: usize,
    ) -> Result<usize, Failure> {
        let launches = armed.body.launches();
        for at in place..place + CUPTI_LEADS {
            let mut starts = Starts::new(Instant::now(), 1);
            let what = ("launch before a region after the samples", None);
            armed.time_audit_region(ready.data, &mut starts, what, launches)?;
            rec.kernel_launches += armed.kernel_launches_of(launches);
            self.untimed.push(at);
        }
        Ok(CUPTI_LEADS)
    }

    /// The places of the untimed regions before the regions after the samples, whose records no
    /// reading takes.
    pub(in crate::worker) fn untimed(&self) -> &[usize] {
        &self.untimed
    }
}

/// What runs before a region after the samples.
#[derive(Debug, PartialEq)]
enum Lead {
    /// The kernel's launches, untimed (a timer that reads each sample as it runs).
    Launches,
    /// Regions as timed ones, at places no reading takes (CUPTI's records hold them).
    Regions,
    /// Nothing: the profiler's report, or CUPTI collecting beside another timer, would read
    /// them as samples.
    Nothing,
}

fn lead(knobs: &Knobs) -> Lead {
    match knobs.timer {
        TimerKind::Profiler => Lead::Nothing,
        _ if knobs.cupti_collect.beside_timer => Lead::Nothing,
        TimerKind::Cupti => Lead::Regions,
        TimerKind::Events | TimerKind::Host | TimerKind::HostSync => Lead::Launches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::knobs::cupti_collect::CuptiCollect;

    #[test]
    fn cupti_leads_with_regions_events_with_launches_and_a_collector_beside_with_nothing() {
        let knobs = |timer, asked| Knobs {
            timer,
            // As `CuptiCollect::read` sets it: always on under CUPTI.
            cupti_collect: CuptiCollect {
                on: asked || timer == TimerKind::Cupti,
                beside_timer: asked && timer != TimerKind::Cupti,
            },
            ..Default::default()
        };
        assert_eq!(lead(&knobs(TimerKind::Cupti, false)), Lead::Regions);
        assert_eq!(lead(&knobs(TimerKind::Cupti, true)), Lead::Regions);
        assert_eq!(lead(&knobs(TimerKind::Events, false)), Lead::Launches);
        assert_eq!(lead(&knobs(TimerKind::Host, false)), Lead::Launches);
        assert_eq!(lead(&knobs(TimerKind::Events, true)), Lead::Nothing);
        assert_eq!(lead(&knobs(TimerKind::Profiler, false)), Lead::Nothing);
    }
}
