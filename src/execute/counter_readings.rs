//! What a counter pass (`plan::counter_passes`) gives each cell it ran: the counters its first
//! timed record carries, or why there are none.

use crate::experiment::knobs::env::ProfilerCache;
use crate::plan::Cell;
use crate::protocol::{CellRecord, CounterRecord, Status};

/// What a counter pass gives a cell: its counters only for the cell's own counters, or why
/// there are none.
pub fn outcome(cell: &Cell, cache: ProfilerCache, rec: CellRecord) -> CounterRecord {
    match (rec.status, rec.counters) {
        (Status::Ok, Some(mut counted)) => {
            counted
                .values
                .retain(|v| cell.knobs.counters.0.contains(&v.name));
            counted
        }
        (_, _) => CounterRecord {
            cache: cache.flag().to_string(),
            error: Some(format!(
                "the counter pass failed: {}",
                rec.error
                    .unwrap_or_else(|| "the profiler gave no counters".into())
            )),
            ..Default::default()
        },
    }
}

/// A cell's counters where Nsight Compute is not there to read them.
pub fn skipped(cache: ProfilerCache) -> CounterRecord {
    CounterRecord {
        cache: cache.flag().to_string(),
        error: Some(super::profiler::NO_NCU.into()),
        ..Default::default()
    }
}
