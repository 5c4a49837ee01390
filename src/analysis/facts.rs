//! The facts every rule of the analysis reads, made first and whole: the records by cell, the
//! device's peaks, each cell's verdict and headline median, the telemetry each ran under, its
//! probes, the kernels' clock responses and the peers' medians. The counters, audits, fits
//! and findings are derived from a finished [`Facts`] (`super::Analysis::of`), so the
//! compiler holds the order: none can read a fact not made yet.

use super::phase::Phase;
use super::reduce::Reduced;
use super::stats::Stats;
use super::trust::{self, Verdict};
use super::{agreement, clocks, cycles, peaks, probes, tells};
use crate::experiment::Point;
use crate::plan::{Cell, Headline};
use crate::protocol::CellRecord;
use crate::store::Stored;
use std::collections::HashMap;

/// A cell's headline median (its steady samples, or its first launches where it takes no
/// others), and whether comparisons between cells may rank it: its reading is trusted (no
/// run failed or was suspect, the throughput is possible).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadlineMedian {
    pub ns: f64,
    pub sound: bool,
}

/// A cell's records, by its index.
pub type Records<'a> = HashMap<usize, Vec<&'a CellRecord>>;

/// What a stored run's rules read.
pub struct Facts<'a> {
    pub run: &'a Stored,
    /// What the samples were reduced to: all that is read of them.
    pub reduced: Reduced,
    pub records: Records<'a>,
    /// The device's peaks, where the run knows its device.
    pub peaks: Option<peaks::Peaks>,
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
}

impl<'a> Facts<'a> {
    /// The facts of run `s`, from its samples as `reduce` left them: each made from those
    /// before it.
    pub fn of(s: &'a Stored, reduced: Reduced) -> Facts<'a> {
        let mut records: Records = HashMap::new();
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
        let clocks = (s.plan.cells.iter())
            .map(|c| {
                let rs = records.get(&c.index).map_or(&[][..], Vec::as_slice);
                let (series, windows) = (&reduced.series, &reduced.windows);
                (c.index, clocks::of_cell(exp, (rs, c), series, windows))
            })
            .collect::<HashMap<_, _>>();
        let verdicts = verdicts(s, &reduced, &records, (peaks.as_ref(), &clocks));
        let scale = probes::ProbeScale::of(
            s.records
                .iter()
                .filter_map(CellRecord::probed_mhz)
                .collect(),
            exp.telemetry.probe_tolerance_pct,
        );
        let probes = (records.iter())
            .map(|(&index, rs)| (index, scale.probes(rs)))
            .collect();
        let trust = summarize(s, &records, &verdicts);
        let medians = (s.plan.cells.iter())
            .filter_map(|c| {
                // A failed cell is reported, never timed: rounds of it before the failure
                // took samples (an interleaved cell's), which no table or plot shows.
                if matches!(verdict(&verdicts, c), Verdict::Failed(_)) {
                    return None;
                }
                let ns = headline(&reduced, c)?.median;
                // A kernel written to be caught that passed is left out as well: the trust
                // line says its readings are.
                let caught = c.kernel.is_some_and(|k| exp.kernels[k].expect_caught);
                let sound = *verdict(&verdicts, c) == Verdict::Ok && !caught;
                Some((c.index, HeadlineMedian { ns, sound }))
            })
            .collect();
        let responses = cycles::responses(&[(s, &reduced)]);
        let cell_mhz = cycles::cell_mhz(s, &reduced);
        Facts {
            run: s,
            reduced,
            records,
            peaks,
            verdicts,
            trust,
            responses,
            cell_mhz,
            medians,
            clocks,
            probes,
            peer_medians: agreement::peer_medians(s),
        }
    }

    /// Cell `c`'s verdict (not run, where the run has no record of it).
    pub fn verdict(&self, c: &Cell) -> &Verdict {
        verdict(&self.verdicts, c)
    }

    /// The statistics a table shows for a cell: its steady samples, or its first launches
    /// where it takes no others.
    pub fn headline(&self, c: &Cell) -> Option<Stats> {
        headline(&self.reduced, c)
    }

    /// The headline median of kernel `k`'s cell at point `p` under `variant`.
    pub fn median_at(&self, k: usize, p: &Point, variant: &str) -> Option<f64> {
        let c = self.run.plan.cell_at(k, p, variant)?;
        self.medians.get(&c.index).map(|m| m.ns)
    }

    /// [`Self::median_at`], only where the cell's reading is trusted: the median that
    /// comparisons between cells may rank.
    pub fn sound_median_at(&self, k: usize, p: &Point, variant: &str) -> Option<f64> {
        let c = self.run.plan.cell_at(k, p, variant)?;
        (self.medians.get(&c.index)).and_then(|m| m.sound.then_some(m.ns))
    }
}

fn verdict<'v>(verdicts: &'v HashMap<usize, Verdict>, c: &Cell) -> &'v Verdict {
    verdicts.get(&c.index).unwrap_or(&Verdict::NotRun)
}

fn headline(reduced: &Reduced, c: &Cell) -> Option<Stats> {
    let phase = match c.headline() {
        Headline::Steady => Phase::Steady,
        Headline::First => Phase::First,
    };
    reduced.stats.get(c.index, phase)
}

/// Each cell's verdict, its audit judged first.
fn verdicts(
    s: &Stored,
    reduced: &Reduced,
    records: &Records,
    (peaks, clocks): (Option<&peaks::Peaks>, &HashMap<usize, clocks::ClockSummary>),
) -> HashMap<usize, Verdict> {
    let device = peaks
        .zip(s.meta.device.as_ref())
        .map(|(p, d)| trust::Device {
            peaks: p,
            l2_bytes: d.l2_bytes.max(0) as u64,
        });
    (s.plan.cells.iter())
        .map(|c| {
            let records = records.get(&c.index).map_or(&[][..], Vec::as_slice);
            let kernel = c.kernel.map(|k| &s.experiment.kernels[k]);
            let median = headline(reduced, c).map(|st| st.median);
            let steady = reduced.stats.get(c.index, Phase::Steady);
            let moved_to = clocks.get(&c.index).and_then(|k| k.moved_to);
            let device_moved = (s.meta.device.as_ref(), moved_to);
            let sorted = reduced.steady_sorted.get(&c.index).map(Vec::as_slice);
            let reading = (median, steady.as_ref(), sorted);
            let readings = tells::Readings::of(c, reading, device_moved);
            let audit = tells::judged(records, &readings).and_then(|j| j.suspect);
            (
                c.index,
                trust::judge(c, kernel, records, (median, audit), device.as_ref()),
            )
        })
        .collect()
}

/// The verdicts counted against what the kernels expect.
fn summarize(s: &Stored, records: &Records, verdicts: &HashMap<usize, Verdict>) -> trust::Summary {
    let exp = &s.experiment;
    let mut summary = trust::Summary::of(s.plan.cells.iter().map(|c| {
        let kernel = c.kernel.map(|k| &exp.kernels[k]);
        let caught = kernel.is_some_and(|k| k.expect_caught);
        let records = records.get(&c.index).map_or(&[][..], Vec::as_slice);
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
        (c, verdict(verdicts, c), caught, scrutiny)
    }));
    // A finished part that took cells from a queue ran only those it claimed.
    let claimed = s.meta.shard.as_ref().is_some_and(|p| p.claims.is_some());
    if claimed && s.meta.complete {
        summary.other_parts = std::mem::take(&mut summary.not_run);
    }
    summary
}
