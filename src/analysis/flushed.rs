//! In a cell flushed whole before every launch, the audited regions against the timed
//! launches themselves. The flush comes before each of them alike and writes back what a
//! stage's draw left, so an honest kernel's audited regions read as its timed launches: over
//! the runs kept on H200s (155 runs of honest cells flushed and read by CUPTI), the chance
//! below was never under 0.07. The data test sets the audited regions against the decoys only,
//! whose bound a kernel that spreads its own launches on purpose widens, and which it may skip
//! in as it skips in its timed launches where its output was not poisoned: `quantile-smear`
//! cold skipping a quarter passed 16.5% faster than the honest argmax (its limit 11.5%), its
//! 15 audited regions at a mean share of 0.82 of their runs' timed launches below them.

use super::bounds::{why, Tell, Test, FALSE_ALARM};
use super::reduce::SortedRun;
use super::stats::Stats;
use crate::protocol::{ranked_over, CellRecord, RunRanks};

/// A data test that found nothing, judged again on a cell whose states match (the caller's
/// to say: flushed before each launch, single launches read without the host's launch,
/// which a region's wait slows whatever the kernel does, and the clock held): each run's
/// audited regions, each less the margin, ranked among that run's timed samples (`runs`;
/// `protocol::ranked_over`, the runs stratified), suspect where readings alike lie so high
/// with a chance of at most [`FALSE_ALARM`].
pub(super) fn audited_over_timed(
    mut test: Test,
    records: &[&CellRecord],
    (runs, steady): (&[SortedRun], &Stats),
) -> Test {
    if test.suspect.is_some() {
        return test;
    }
    let ranked: Vec<RunRanks> = (records.iter())
        .filter_map(|c| {
            let among = c.audit.as_ref()?.among.as_ref()?;
            let run = runs.iter().find(|s| s.process == c.process)?;
            Some(RunRanks {
                regions: &among.readings_ns,
                sorted: &run.sorted,
                count: run.count,
            })
        })
        .collect();
    let Some(ranks) = ranked_over(&ranked, steady.median) else {
        return test;
    };
    if ranks.chance <= FALSE_ALARM {
        test.suspect = Some(format!(
            "suspect: {} audited regions, each less the {:.3} µs margin, lie high among their runs' {} timed launches, the same flush before each (a mean share {:.2} of them below, where readings alike lie about 0.50): readings alike lie so high with a chance of {:.1e}: {}",
            ranks.ranked,
            ranks.margin_ns / 1e3,
            steady.count,
            ranks.mean_share,
            ranks.chance,
            why(Tell::Band),
        ));
    }
    test
}
