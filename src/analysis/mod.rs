//! Samples -> estimates: statistics per cell and phase (reduced from the stream of samples
//! as each cell ends, `reduce.rs`), the telemetry each cell's timed launches ran under, the
//! verdicts, and `summary.csv`. The report formats these; it never sees a sample.

pub mod agreement;
pub mod audits;
pub mod bounds;
pub mod clocks;
pub mod counters;
pub mod cycles;
pub mod findings;
pub mod firsts;
pub mod fit;
pub mod gaps;
pub mod peaks;
pub mod probes;
pub mod reduce;
pub mod stats;
pub mod tells;
#[cfg(test)]
mod tells_tests;
pub mod trust;
pub mod units;

use crate::plan::{Cell, Headline};
use crate::protocol::{CellRecord, TelemetryPoint};
use crate::store::Stored;
use peaks::Peaks;
pub use reduce::{Reduced, Reducer};
use stats::Stats;
use std::collections::HashMap;
use trust::Verdict;

/// The runner's one median: it lives in a leaf module because the worker's methods take it
/// too; the analysis and the report read it from here.
pub use crate::median::median;

/// A phase of a cell's timed launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// The first timed launch of each run.
    First,
    /// The samples after it.
    Steady,
}

impl Phase {
    pub fn key(self) -> &'static str {
        match self {
            Phase::First => "first",
            Phase::Steady => "steady",
        }
    }
}

/// Telemetry series by (cell, process).
pub type Series = HashMap<(u32, u32), Vec<TelemetryPoint>>;

/// A stored run's estimates.
pub struct Analysis<'a> {
    pub run: &'a Stored,
    /// What the samples were reduced to: all that is read of them.
    pub reduced: Reduced,
    pub records: HashMap<usize, Vec<&'a CellRecord>>,
    /// The device's peaks, where the run knows its device.
    pub peaks: Option<Peaks>,
    /// Each cell's verdict: whether its reading can be trusted, and why not.
    pub verdicts: HashMap<usize, Verdict>,
    /// The verdicts counted against what the kernels expect.
    pub trust: trust::Summary,
    /// Each kernel's response to the SM clock over this run's probed cells, and each probed
    /// cell's clock as its cycles are counted (by cell id).
    pub responses: HashMap<String, cycles::Response>,
    pub cell_mhz: HashMap<String, f64>,
    /// Each cell's headline median, by index: what the report's tables and figures read.
    pub medians: HashMap<usize, HeadlineMedian>,
    /// The telemetry each cell's timed launches ran under, and its flags, by index.
    pub clocks: HashMap<usize, clocks::ClockSummary>,
    /// What each cell's own probes read, by index.
    pub probes: HashMap<usize, probes::Probes>,
    /// Each peer's median reading at each point, by (peer, point label), in ns.
    pub peer_medians: HashMap<(String, String), f64>,
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
}

/// A cell's headline median (its steady samples, or its first launches where it takes no
/// others), and whether comparisons between cells may rank it: its reading is trusted (no
/// run failed or was suspect, the throughput is possible).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadlineMedian {
    pub ns: f64,
    pub sound: bool,
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
        let mut records: HashMap<usize, Vec<&CellRecord>> = HashMap::new();
        for r in &s.records {
            records.entry(r.cell).or_default().push(r);
        }
        let exp = &s.experiment;
        let types: Vec<crate::experiment::rates::FlopsType> = exp
            .kernels
            .iter()
            .filter_map(|k| k.flops_type.clone())
            .collect();
        let host_copies =
            (exp.kernels.iter()).any(|k| k.copy.is_some() && (k.on_host(0) || k.on_host(1)));
        let peaks = (s.meta.device.as_ref()).map(|d| peaks::peaks(d, &types, host_copies));
        let mut a = Analysis {
            run: s,
            reduced,
            records,
            peaks,
            verdicts: HashMap::new(),
            trust: trust::Summary::default(),
            responses: HashMap::new(),
            cell_mhz: HashMap::new(),
            medians: HashMap::new(),
            clocks: HashMap::new(),
            probes: HashMap::new(),
            peer_medians: agreement::peer_medians(s),
            counters: Vec::new(),
            audits: Vec::new(),
            audit_cost_share: None,
            audit_gaps: None,
            fits: Vec::new(),
            findings: Vec::new(),
        };
        let device = (a.peaks.as_ref())
            .zip(s.meta.device.as_ref())
            .map(|(p, d)| trust::Device {
                peaks: p,
                l2_bytes: d.l2_bytes.max(0) as u64,
            });
        a.verdicts = (s.plan.cells.iter())
            .map(|c| {
                let records = a.records.get(&c.index).map_or(&[][..], Vec::as_slice);
                let kernel = c.kernel.map(|k| &exp.kernels[k]);
                let median = a.headline(c).map(|st| st.median);
                let steady = a.reduced.stats.get(c.index, Phase::Steady);
                let readings = tells::Readings::of(c, median, steady.as_ref());
                let audit = tells::judged(records, &readings).and_then(|j| j.suspect);
                (
                    c.index,
                    trust::judge(c, kernel, records, (median, audit), device.as_ref()),
                )
            })
            .collect();
        let scale = probes::ProbeScale::of(
            s.records
                .iter()
                .filter_map(CellRecord::probed_mhz)
                .collect(),
            exp.telemetry.probe_tolerance_pct,
        );
        for (&index, rs) in &a.records {
            a.probes.insert(index, scale.probes(rs));
        }
        a.clocks = (s.plan.cells.iter())
            .map(|c| (c.index, a.clocks_of(c)))
            .collect();
        a.trust = a.summarize();
        a.medians = (s.plan.cells.iter())
            .filter_map(|c| {
                let ns = a.headline(c)?.median;
                // A kernel written to be caught that passed is left out as well: the trust
                // line says its readings are.
                let caught = c.kernel.is_some_and(|k| exp.kernels[k].expect_caught);
                let sound = *a.verdict(c) == Verdict::Ok && !caught;
                Some((c.index, HeadlineMedian { ns, sound }))
            })
            .collect();
        let (responses, cell_mhz) = (cycles::responses(&[&a]), cycles::cell_mhz(&a));
        (a.responses, a.cell_mhz) = (responses, cell_mhz);
        a.counters = counters::of(&a);
        a.audits = audits::of(&a);
        a.audit_cost_share = audits::cost_share(&a.audits);
        a.audit_gaps = gaps::gaps(&s.records.iter().collect::<Vec<_>>());
        a.fits = fit::fits(&a);
        // Last: the rules read every field above.
        a.findings = findings::of(&a);
        a
    }

    /// The verdicts counted against what the kernels expect.
    fn summarize(&self) -> trust::Summary {
        let exp = &self.run.experiment;
        trust::Summary::of(self.run.plan.cells.iter().map(|c| {
            let kernel = c.kernel.map(|k| &exp.kernels[k]);
            let caught = kernel.is_some_and(|k| k.expect_caught);
            let records = self.records.get(&c.index).map_or(&[][..], Vec::as_slice);
            // Runs of one launch each have one audited run between them.
            let audited = records.iter().any(|r| r.audit.is_some());
            let checks = kernel.is_some_and(|k| k.is_checked());
            let copy = kernel.is_some_and(|k| k.copy.is_some());
            let scrutiny = match (kernel.is_some_and(|k| k.unchecked), checks, audited) {
                (true, ..) => trust::Scrutiny::Unchecked,
                (false, false, _) => trust::Scrutiny::NoOutput,
                (false, true, true) => trust::Scrutiny::Audited,
                (false, true, false) if copy => trust::Scrutiny::DriverCopy,
                (false, true, false) => trust::Scrutiny::Checked,
            };
            (c, self.verdict(c), caught, scrutiny)
        }))
    }

    /// Cell `c`'s verdict (not run, where the run has no record of it).
    pub fn verdict(&self, c: &Cell) -> &Verdict {
        self.verdicts.get(&c.index).unwrap_or(&Verdict::NotRun)
    }

    /// The statistics a table shows for a cell: its steady samples, or its first launches
    /// where it takes no others.
    pub fn headline(&self, c: &Cell) -> Option<Stats> {
        let phase = match c.headline() {
            Headline::Steady => Phase::Steady,
            Headline::First => Phase::First,
        };
        self.reduced.stats.get(c.index, phase)
    }

    /// The headline median of kernel `k`'s cell at point `p` under `variant`.
    pub fn median_at(&self, k: usize, p: &crate::experiment::Point, variant: &str) -> Option<f64> {
        let c = self.run.plan.cell_at(k, p, variant)?;
        self.medians.get(&c.index).map(|m| m.ns)
    }

    /// [`Self::median_at`], only where the cell's reading is trusted: the median that
    /// comparisons between cells may rank.
    pub fn sound_median_at(
        &self,
        k: usize,
        p: &crate::experiment::Point,
        variant: &str,
    ) -> Option<f64> {
        let c = self.run.plan.cell_at(k, p, variant)?;
        (self.medians.get(&c.index)).and_then(|m| m.sound.then_some(m.ns))
    }
}
