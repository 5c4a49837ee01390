//! The pauses' ranks among the run's timed samples, screened once the timer's readings are
//! in (`protocol::RANKS_SCREEN`): where they lie between two chances, more pauses read by
//! CUPTI among launches of their own, which the analysis ranks again.

use super::{by_cupti, spent, Among};
use crate::experiment::knobs::timer::TimerKind;
use crate::method::audit::Region;
use crate::protocol::{
    pauses_ranked, ranks_read_again, sorted_finite, CellRecord, KernelRecords, RunRanks,
};
use crate::worker::arm::Armed;
use crate::worker::failure::Failure;
use crate::worker::prepare::ReadyCell;
use crate::worker::session::Session;
use std::time::Instant;

impl Among {
    /// Where this run's pauses, ranked among its timed samples as the analysis ranks them
    /// (`protocol::pauses_ranked`), lie so high with a chance over a thousandth and at most
    /// `protocol::RANKS_SCREEN`: `protocol::RANKS_AGAIN_PAUSES` pauses read by CUPTI among
    /// launches of their own (`by_cupti::ranks_again`). Only where the analysis ranks them:
    /// single launches whose reading is the kernel's alone, regions judged, and no pauses
    /// read again already (a split's).
    pub(in crate::worker) fn ranks_again<'b>(
        &mut self,
        s: &mut Session,
        ready: ReadyCell<'b>,
        armed: &mut Armed<'b>,
        rec: &mut CellRecord,
    ) -> Result<Option<KernelRecords>, Failure> {
        let knobs = &ready.cell.knobs;
        let alone = !knobs.queue.reading_holds_launch_time(knobs.timer);
        let single = knobs.launches.count() == 1 && knobs.timer != TimerKind::Profiler;
        if !self.judged || !alone || !single || self.by_cupti.is_some() {
            return Ok(None);
        }
        let sorted = sorted_finite(&rec.samples_ns);
        let Some(median) = crate::statistics::median(sorted.clone()) else {
            return Ok(None);
        };
        let pauses = self.readings_of(Region::Pause);
        let staged = [Region::Audit, Region::Decoy].map(|k| self.readings_of(k));
        let run = RunRanks {
            regions: &pauses,
            sorted: &sorted,
            count: sorted.len(),
        };
        if !ranks_read_again(pauses_ranked(&[run], &staged.concat(), median)) {
            return Ok(None);
        }
        let start = Instant::now();
        let timeline = &mut s.timeline;
        let read = by_cupti::ranks_again((ready, timeline), armed, rec, self.run(armed))?;
        spent(&mut self.regions_time, start);
        spent(&mut self.cost, start);
        Ok(read)
    }
}
