//! The audit's look at the timed samples' spread: a kernel whose timed launches spread on
//! purpose widens the data test's bound, so where they spread wide, more audited regions and
//! decoys narrow it again.

use super::Among;
use crate::experiment::knobs::{timer::TimerKind, Knobs};
use crate::method::confirm;
use crate::protocol::{spread_look, SpreadLook, SPREAD_AGAIN, SPREAD_DECOYS, SPREAD_PAUSES};
use crate::worker::arm::Armed;
use crate::worker::session::Session;
use std::time::{Duration, Instant};

impl Among {
    /// Whether the run looks at its samples' spread once it holds `taken` of them
    /// ([`spread_look`]), until it widened.
    pub(in crate::worker) fn spread_due(&self, taken: usize) -> bool {
        self.judged && spread_look(taken) && !self.schedule.widened()
    }

    /// The look at the timed `samples`: as the timer read them, or under CUPTI from its
    /// records of the last `regions` (read while the GPU is idle between two samples), only
    /// in single launches whose host time around each sample (`host_ns`) spreads wide enough
    /// to hold such a spread (a look CUPTI cannot give whole is not taken). Where they spread
    /// so wide that two audited regions and two decoys could not tell a quarter of the work
    /// skipped ([`confirm::spread_wide`]), [`SPREAD_AGAIN`] more of each, then
    /// [`SPREAD_DECOYS`] more decoys and [`SPREAD_PAUSES`] more pauses later in the round
    /// (once a run). Returns what it took, the audit's.
    pub(in crate::worker) fn look_at_spread(
        &mut self,
        s: &mut Session,
        armed: &Armed,
        (host_ns, samples, regions): (&[f64], &[f64], usize),
        knobs: &Knobs,
    ) -> Duration {
        let start = Instant::now();
        let single = knobs.launches.count() == 1;
        let host_iqr_ns = confirm::host_spread(host_ns);
        let (wide, iqr_ns) = match knobs.timer {
            TimerKind::Cupti if single && confirm::host_spread_wide(host_ns) => {
                s.timeline.mark("steady samples");
                // Records CUPTI cannot give whole now leave the look untaken (its phase says
                // so): the cell's own reading of them after the loop says what went wrong.
                let records = (armed.timer)
                    .so_far(&armed.entries, regions, (&self.readings(), &self.untimed))
                    .map(|read| read.map(|(samples, _)| samples));
                s.timeline.mark(match records {
                    Ok(_) => "audit: CUPTI's records of the samples so far",
                    Err(_) => "audit: CUPTI's records of the samples so far, not whole (no look)",
                });
                // A region right after this read waits a sample: the stage after such a
                // read ran 0.6-0.8 ms past its pause on an H200 (`bandwidth` at 9477bac: a
                // run's one late stage in two runs of three, each an audited region's right
                // after the look at 30 samples), and its region followed a gap 4-7 times its
                // cell's pause's, which a kernel that reads the global timer could tell. A
                // timed launch takes the read's own host time instead. What delayed the
                // launches after the read, CUPTI's fresh record buffer, is gone since b12a7b7
                // (`cuda::cupti`'s spare buffers).
                self.schedule.wait_a_sample();
                let records = records.ok().flatten().unwrap_or_default();
                (
                    confirm::spread_wide(&records, knobs),
                    confirm::spread(&records),
                )
            }
            TimerKind::Cupti | TimerKind::Profiler => (false, None),
            _ => (
                confirm::spread_wide(samples, knobs),
                confirm::spread(samples),
            ),
        };
        let taken = samples.len() as u64;
        (self.looks).push(SpreadLook {
            taken,
            host_iqr_ns,
            iqr_ns,
            wide,
        });
        if wide {
            self.schedule
                .widen(samples.len(), (SPREAD_AGAIN, SPREAD_DECOYS, SPREAD_PAUSES));
        }
        self.spend(start.elapsed());
        start.elapsed()
    }
}
