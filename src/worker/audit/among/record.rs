//! What a run's regions leave in its record: each kind's places and readings, the seeds,
//! the pause, and what each region took on the host.

use super::super::common::{record, spent};
use super::Among;
use crate::method::audit::Region;
use crate::plan::audit_rounds::unjudged;
use crate::plan::Cell;
use crate::protocol::{AuditRecord, AuditsAmong, Gaps, RegionHostTimes, RegionsBefore};
use crate::worker::failure::Failure;
use crate::worker::reference;
use crate::worker::session::Session;
use std::time::{Duration, Instant};

impl Among {
    /// The record: each kind's places and readings, the seeds and the pause.
    pub(in crate::worker::audit) fn finish(
        mut self,
        s: &mut Session,
        cell: &Cell,
        samples: &[f64],
    ) -> Result<AuditRecord, Failure> {
        // A Python reference's draws asked ahead whose regions did not run (a loop that
        // stopped early) are answered now, in this cell's time, not the next check's.
        let settling = Instant::now();
        reference::python::settle();
        spent(&mut self.checks_time, settling);
        spent(&mut self.cost, settling);
        s.timeline.mark("audit check");
        let late = (self.late_before_cupti).unwrap_or_else(|| self.inputs.draws.late());
        let of = |kind: Region, probes: bool| -> (Vec<u64>, Vec<f64>) {
            (self.ran.iter())
                .filter(|r| r.kind == kind && r.probe == probes)
                .map(|r| (r.before as u64, r.reading))
                .unzip()
        };
        let gaps = |which: &dyn Fn(Region) -> bool| -> Vec<f64> {
            (self.ran.iter())
                .filter(|r| which(r.kind) && r.gap.is_finite())
                .map(|r| r.gap)
                .collect()
        };
        let (positions, readings_ns) = of(Region::Audit, false);
        let (probe_positions, probes_ns) = of(Region::Audit, true);
        let (decoy_positions, decoys_ns) = of(Region::Decoy, false);
        let (pause_positions, pauses_ns) = of(Region::Pause, false);
        let mut audit = record(self.check.clone(), &self.note, self.cost);
        audit.regions_s = self.regions_time.as_secs_f64();
        audit.checks_s = self.checks_time.as_secs_f64();
        audit.launch_ns = crate::statistics::median(readings_ns.clone());
        audit.unjudged = unjudged(cell);
        let mut among = AuditsAmong {
            seed: self.seed,
            positions,
            readings_ns,
            decoy_positions,
            decoys_ns,
            pause_positions,
            pauses_ns,
            draw_seed: Some(self.draw_seed),
            draw_ns: Some(self.draw_ns),
            wait_ns: Some(self.wait_ns),
            late,
            capped: self.share.capped(),
            spots: self.alone.ran,
            alone_ns: self.alone.read_ns.clone(),
            probe_positions,
            probes_ns,
            region_launches: (self.launches).filter(|&m| m != cell.knobs.launches.count()),
            // Set against each other only where the regions' times are judged.
            gaps: (self.timed_gap.filter(|_| self.judged)).map(|timed_median| Gaps {
                staged: gaps(&|k| k != Region::Pause),
                pauses: gaps(&|k| k == Region::Pause),
                timed_median,
            }),
            firsts: self.firsts(),
            by_cupti: self.by_cupti.take(),
            ranks_again: None,
            before: None,
            host: Some(self.host_times()),
            looks: std::mem::take(&mut self.looks),
        };
        let positions = [
            &among.positions,
            &among.decoy_positions,
            &among.pause_positions,
        ];
        among.before = RegionsBefore::of(samples, positions.map(|p| &p[..]));
        audit.among = Some(among);
        Ok(audit)
    }

    /// What each region took on the host, for the record.
    fn host_times(&self) -> RegionHostTimes {
        let us = |of: &dyn Fn(&super::Ran) -> Duration| -> Vec<f64> {
            let micro = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
            self.ran.iter().map(|r| micro(of(r))).collect()
        };
        RegionHostTimes {
            kinds: (self.ran.iter())
                .map(|r| match r.kind {
                    Region::Audit => 'a',
                    Region::Decoy => 'd',
                    Region::Pause => 'p',
                })
                .collect(),
            stages_us: us(&|r| r.stage),
            regions_us: us(&|r| r.cost.saturating_sub(r.check)),
            checks_us: us(&|r| r.check),
        }
    }
}
