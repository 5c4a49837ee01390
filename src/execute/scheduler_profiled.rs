//! The scheduler's passes under Nsight Compute: which pass a worker runs for, and the
//! profiled cells' records, stored once ncu's report is read (or skipped without ncu).

use super::super::profiler;
use super::Scheduler;
use crate::experiment::knobs::env::ProfilerCache;
use crate::plan::counter_passes::CounterPass;
use crate::plan::Run;
use crate::protocol::{CellRecord, Status};
use anyhow::Result;
use std::path::Path;

/// What a worker runs its cells for, and the Nsight Compute it runs under, if any.
#[derive(Clone, Copy)]
pub(super) enum Pass<'p> {
    /// The cells' timed run, under Nsight Compute (with this cache control) where its timer
    /// is the profiler.
    Timed {
        ncu: Option<(&'p Path, ProfilerCache)>,
    },
    /// A counter pass: always under Nsight Compute, its records kept only for counters.
    Counted {
        ncu: &'p Path,
        pass: &'p CounterPass,
    },
}

impl<'p> Pass<'p> {
    /// Nsight Compute and its cache control, where the worker runs under it.
    pub(super) fn ncu(self) -> Option<(&'p Path, ProfilerCache)> {
        match self {
            Pass::Timed { ncu } => ncu,
            Pass::Counted { ncu, pass } => Some((ncu, pass.cache)),
        }
    }

    pub(super) fn profiled(self) -> bool {
        self.ncu().is_some()
    }
}

impl Scheduler<'_> {
    /// Records a profiler job's cells skipped: ncu is not on PATH.
    pub(super) fn skip_unprofiled(&mut self, runs: Vec<Run>) -> Result<()> {
        for run in runs {
            let id = self.plan.cells[run.cell].id.clone();
            let mut rec = CellRecord::new(run.cell, &id, run.process);
            rec.status = Status::Skipped;
            rec.error = Some(profiler::NO_NCU.into());
            self.store(run, &rec)?;
        }
        Ok(())
    }

    /// Stores the cells of a profiled worker, each with its launches from ncu's report.
    pub(super) fn store_profiled(
        &mut self,
        pending: &mut Vec<(Run, CellRecord)>,
        report: &Path,
        pass: Pass,
    ) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let mut records: Vec<CellRecord> = pending.iter().map(|(_, r)| r.clone()).collect();
        let entry = |r: &CellRecord| {
            let cell = &self.plan.cells[r.cell];
            cell.kernel
                .map_or("empty".into(), |k| self.exp.kernels[k].entry.clone())
        };
        let per_sample = |r: &CellRecord| self.plan.cells[r.cell].knobs.launches.count();
        let counted = match pass {
            Pass::Timed { .. } => None,
            Pass::Counted { pass, .. } => Some(pass.cache),
        };
        profiler::read_report(&mut records, report, counted, entry, per_sample);
        let runs: Vec<Run> = pending.drain(..).map(|(run, _)| run).collect();
        for (run, rec) in runs.into_iter().zip(records) {
            self.record(pass, run, rec)?;
        }
        Ok(())
    }
}
