//! Where the audit's detection limit is wide: trusted cells in which a kernel could skip
//! more than a quarter of its work where it is timed and still pass, and what narrows it.

use super::finding::{Finding, NamedCell, WideLimits};
use crate::analysis::audits::CellAudits;
use crate::analysis::facts::Facts;
use crate::analysis::phase::Phase;
use crate::experiment::knobs::{launches::Launches, queue::Queue, timer::TimerKind};
use crate::plan::audit_rounds::samples_for_a_decoy;
use crate::plan::Cell;

/// A limit over this leaves room for a kernel to skip a quarter of its work unseen.
pub const WIDE_LIMIT: f64 = 0.25;

/// Of the `trusted` cells that were audited, those whose detection limit is over
/// [`WIDE_LIMIT`], the widest named, and how many of them `spread` (see [`spread_wide`]);
/// None where none is.
pub fn wide_limits(
    audits: &[CellAudits],
    trusted: &[&Cell],
    spread: &dyn Fn(&Cell) -> bool,
) -> Option<Finding> {
    let limits: Vec<(&Cell, f64, bool)> = (trusted.iter())
        .filter_map(|c| {
            let a = audits.iter().find(|a| a.cell == c.index)?;
            let limit = a.judgement.as_ref()?.detection_limit;
            let band_only = a.weaker.is_none() && a.regions > 0 && a.decoys == 0;
            limit.is_finite().then_some((*c, limit, band_only))
        })
        .collect();
    let wide: Vec<&(&Cell, f64, bool)> = limits.iter().filter(|l| l.1 > WIDE_LIMIT).collect();
    let (widest, limit, _) = **wide.iter().max_by(|x, y| x.1.total_cmp(&y.1))?;
    Some(Finding::WideLimits(WideLimits {
        over: wide.len(),
        of: limits.len(),
        widest: NamedCell::new(&widest.kernel_name, &widest.point, &widest.variant),
        limit,
        idle_batches: wide.iter().filter(|l| idle_batch(l.0)).count(),
        band_only: wide.iter().filter(|l| l.2).count(),
        samples_for_a_decoy: samples_for_a_decoy(),
        spread: wide.iter().filter(|l| spread(l.0)).count(),
    }))
}

/// A single launch whose timed samples' interquartile range is over
/// [`crate::protocol::WIDE_SPREAD`] of their median and the floor its timer's noise sets
/// ([`crate::protocol::spreads_wide`]), the spread that earns more regions by events or CUPTI
/// (`method::confirm::spread_wide`): it widens the data test's bound whatever made it, and a
/// kernel that skips a share drawn anew each launch makes it on purpose.
pub fn spread_wide(a: &Facts, c: &Cell) -> bool {
    let steady = a.reduced.stats.get(c.index, Phase::Steady);
    let host = (c.knobs.queue).reading_holds_launch_time(c.knobs.timer);
    let wide = steady.is_some_and(|s| crate::protocol::spreads_wide(s.iqr, s.median, host));
    wide && c.knobs.launches.count() == 1
}

/// A batch timed by events on an idle queue, whose reading holds the host's launch of its
/// first launch: its first-launch tests must allow that launch, up to tens of µs, and
/// `queue = "saturate"` (events only) takes it out.
fn idle_batch(c: &Cell) -> bool {
    matches!(c.knobs.launches, Launches::Batch(n) if n > 1)
        && c.knobs.timer == TimerKind::Events
        && c.knobs.queue == Queue::Idle
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::findings::tests::experiment;
    use crate::analysis::tells::Judgement;

    fn audits(cell: usize, limit: f64) -> CellAudits {
        CellAudits {
            cell,
            regions: 2,
            decoys: 2,
            pauses: 6,
            judgement: Some(Judgement {
                tests: Vec::new(),
                detection_limit: limit,
                suspect: None,
            }),
            wall_s: 1.0,
            ..CellAudits::default()
        }
    }

    #[test]
    fn cells_over_a_quarter_are_counted_the_widest_named_and_idle_batches_told_apart() {
        let exp = experiment(
            "n = [1, 2]",
            &[("k", "")],
            &[
                ("single", "timer = \"events\""),
                ("idle", "timer = \"events\"\nbatch = 10"),
                (
                    "behind",
                    "timer = \"events\"\nbatch = 10\nqueue = \"saturate\"",
                ),
            ],
            "",
        );
        let plan = crate::plan::Plan::new(&exp).unwrap();
        let cells: Vec<&Cell> = plan.cells.iter().filter(|c| c.kernel == Some(0)).collect();
        let limit = |c: &Cell| match (c.variant.as_str(), c.point[0].1.to_string().as_str()) {
            ("idle", "1") => 0.46,
            ("idle", _) => 0.30,
            ("single", "1") => 0.31,
            _ => 0.10,
        };
        let mut found: Vec<CellAudits> = cells.iter().map(|c| audits(c.index, limit(c))).collect();
        // Too few samples for a decoy: the band judged it.
        found[0].decoys = 0;
        let Some(Finding::WideLimits(w)) = wide_limits(&found, &cells, &|c| c.variant == "single")
        else {
            panic!("no finding");
        };
        assert_eq!((w.over, w.of, w.idle_batches, w.spread), (3, 6, 2, 1));
        assert_eq!((w.band_only, w.samples_for_a_decoy), (1, 60));
        assert_eq!(
            (w.widest.variant.as_str(), w.widest.point.as_str()),
            ("idle", "n=1")
        );
        assert!((w.limit - 0.46).abs() < 1e-12);
        // A cell not trusted is not counted; none over a quarter, no finding.
        let behind: Vec<&Cell> = (cells.iter().copied())
            .filter(|c| c.variant == "behind")
            .collect();
        assert!(wide_limits(&found, &behind, &|_| true).is_none());
    }
}
