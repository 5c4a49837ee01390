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

#[cfg(test)]
mod tests {
    use super::super::bounds::{against, Spread};
    use super::*;
    use crate::protocol::{AuditRecord, AuditsAmong};

    /// 200 timed launches spread flat from 9 to 17 µs (median 13 µs), as a kernel that skips
    /// a share drawn anew each launch.
    fn spread() -> (Stats, Vec<SortedRun>) {
        let sorted: Vec<f64> = (0..200).map(|i| 9e3 + 8e3 * f64::from(i) / 199.0).collect();
        let s = Stats {
            count: 200,
            median: 13e3,
            iqr: 4e3,
            max: 17e3,
            ..Default::default()
        };
        let runs = vec![SortedRun {
            process: 0,
            count: 200,
            sorted,
        }];
        (s, runs)
    }

    /// The data test on `audited` against decoys that did most of the work (14.5-16.7 µs),
    /// within its bound, which the timed launches' spread widens; then judged again.
    fn judged_again(audited: Vec<f64>) -> Test {
        let (s, runs) = spread();
        let decoys: Vec<f64> = (0..12).map(|i| 14.5e3 + 200.0 * f64::from(i)).collect();
        let spread = Spread::of(&s, true).with_decoys(&decoys);
        let test = against(Tell::Data, &audited, &decoys, spread).unwrap();
        assert!(test.suspect.is_none(), "the decoys' bound holds them");
        let mut rec = CellRecord::new(0, "c", 0);
        rec.audit = Some(AuditRecord {
            among: Some(AuditsAmong {
                readings_ns: audited,
                ..Default::default()
            }),
            ..Default::default()
        });
        audited_over_timed(test, &[&rec], (&runs, &s))
    }

    #[test]
    fn audited_regions_high_among_flushed_timed_launches_are_suspect() {
        // All the work where the output was poisoned: 16.2-16.9 µs, over 0.8 of the timed.
        let full: Vec<f64> = (0..15).map(|i| 16.2e3 + 50.0 * f64::from(i)).collect();
        let why = judged_again(full).suspect.unwrap();
        assert!(
            why.contains("15 audited regions") && why.contains("the same flush"),
            "{why}"
        );
    }

    #[test]
    fn audited_regions_spread_as_the_timed_launches_are_not() {
        let alike: Vec<f64> = (0..15).map(|i| 9.5e3 + 500.0 * f64::from(i)).collect();
        assert!(judged_again(alike).suspect.is_none());
        // Three a little over the median, within what three readings alike reach.
        assert!(judged_again(vec![14.2e3, 14.9e3, 15.3e3]).suspect.is_none());
    }
}
