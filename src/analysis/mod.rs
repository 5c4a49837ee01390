//! Samples -> estimates: statistics per cell and phase (reduced from the stream of samples
//! as each cell ends, `reduce.rs`), the telemetry each cell's timed launches ran under, the
//! verdicts, and `summary.csv`. The report formats these; it never sees a sample.

pub mod agreement;
pub mod alone;
pub mod audits;
pub mod bounds;
pub mod clocks;
pub mod counters;
pub mod cycles;
mod drift;
pub mod facts;
pub mod findings;
pub mod firsts;
pub mod fit;
mod flushed;
pub mod gaps;
pub mod peaks;
pub mod phase;
pub mod probes;
pub mod ratios;
pub mod reduce;
mod reproduced;
pub mod stats;
pub mod tells;
#[cfg(test)]
mod tells_again_tests;
#[cfg(test)]
mod tells_rank_tests;
#[cfg(test)]
mod tells_split_tests;
#[cfg(test)]
mod tells_stage_tests;
#[cfg(test)]
mod tells_tests;
pub mod trust;
mod two_speeds;
pub mod units;

use crate::store::Stored;
pub use facts::Facts;
pub use phase::Phase;
pub use reduce::{Reduced, Reducer};

/// The runner's one median: it lives in the statistics leaf because the worker's methods
/// take it too; the analysis and the report read it from here.
pub use crate::statistics::median;

/// A stored run's estimates: the facts, then what is derived from them, each from a finished
/// stage before it (the compiler holds the order).
pub struct Analysis<'a> {
    pub facts: Facts<'a>,
    /// Every cell with counters, in plan order, with its bytes check.
    pub counters: Vec<counters::CellCounters<'a>>,
    /// Every cell's audits of the current kind, in plan order, and the share of the audited
    /// cells' time they took.
    pub audits: Vec<audits::CellAudits>,
    pub audit_cost_share: Option<f64>,
    /// The gaps before the regions against each other, where CUPTI gave them.
    pub audit_gaps: Option<gaps::GapTest>,
    /// `[report] fit`: each kernel's `time = a + bytes / b`, per variant.
    pub fits: Vec<fit::Fit>,
    /// The run's findings, by fixed rules: what the report opens with.
    pub findings: Vec<findings::Finding>,
    /// The interval of each ratio of medians the report plots (comparisons, differences).
    pub ratios: ratios::Ratios,
}

/// An analysis reads as its facts (`a.verdict(c)`, `a.medians`): what the report reads most.
impl<'a> std::ops::Deref for Analysis<'a> {
    type Target = Facts<'a>;

    fn deref(&self) -> &Facts<'a> {
        &self.facts
    }
}

/// The stored run in `dir`, its samples reduced as they are read: what an [`Analysis`] is
/// made of.
pub fn load(dir: &std::path::Path) -> anyhow::Result<(Stored, Reduced)> {
    let mut reducer = Reducer::default();
    let stored = Stored::load(dir, &mut reducer)?;
    Ok((stored, reducer.finish()?))
}

impl<'a> Analysis<'a> {
    /// The estimates of run `s`, from its samples as `reduce` left them.
    pub fn of(s: &'a Stored, reduced: Reduced) -> Analysis<'a> {
        let facts = Facts::of(s, reduced);
        let counters = counters::of(&facts);
        let audits = audits::of(&facts);
        let findings = findings::of(&facts, &counters, &audits);
        Analysis {
            counters,
            audit_cost_share: audits::cost_share(&audits),
            audits,
            audit_gaps: gaps::gaps(&s.records.iter().collect::<Vec<_>>()),
            fits: fit::fits(&facts),
            findings,
            ratios: ratios::of(&facts),
            facts,
        }
    }
}
