//! What the findings are made of: each `Finding` and its payload, the cells and readings they
//! name, what the rules read (`Trusted`) and when two readings are alike. A leaf of the
//! folder: the rules (`cells.rs`, `energy.rs`, `kernels.rs`, `variants.rs`) and the front
//! that runs them import it, and it imports none of them.

use crate::analysis::counters::BytesCheck;
use crate::experiment::rates::FlopsType;
use crate::experiment::{Experiment, Point};
use crate::plan::point_id;
use crate::protocol::Energy;

/// Two readings within this fraction of each other are alike: the default threshold of a
/// comparison between runs (`compare::DEFAULT_THRESHOLD_PCT`).
pub const ALIKE_FRACTION: f64 = 0.02;

/// A cell a finding names.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedCell {
    pub kernel: String,
    /// The sweep point as a cell id writes it (`n=512`, `m=1 n=2`; empty without a sweep).
    pub point: String,
    pub variant: String,
}

impl NamedCell {
    pub fn new(kernel: &str, point: &Point, variant: &str) -> NamedCell {
        NamedCell {
            kernel: kernel.into(),
            point: point_id(point),
            variant: variant.into(),
        }
    }
}

/// A cell and its reading(s) in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub at: NamedCell,
    pub ns: f64,
    /// What it is set against (a baseline, a reference, a peer), where it is.
    pub against_ns: Option<f64>,
}

/// A fact of the run, with the numbers it rests on.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// Cells of one kernel that did not end as it expects: `word` is the verdict's
    /// (failed, suspect, impossible) or "passed" for a kernel written to be caught.
    Untrusted {
        kernel: String,
        word: &'static str,
        /// The cells' ids without the kernel: `n=512/hot`.
        cells: Vec<String>,
        /// The kernel's cells in the plan.
        of: usize,
        /// The first cell's reason.
        reason: String,
    },
    /// Cells of kernels written to be caught (`expect = "caught"`) that were, by verdict.
    Caught {
        kernels: usize,
        cells: usize,
        caught: Vec<(&'static str, usize)>,
    },
    /// Cells whose declared bytes the counters checked: how many of `checked` agree with
    /// DRAM and how many the caches served, and those the counters contradict (each id
    /// and its check).
    Bytes {
        checked: usize,
        agree: usize,
        cached: usize,
        marked: Vec<(String, BytesCheck)>,
    },
    /// A kernel against its baseline kernel (`[report] kernels`).
    Speedup(Speedup),
    /// A kernel's energy a launch against its baseline's, where both were read.
    Energy(EnergyRatio),
    /// A kernel's best share of the device's peak.
    Peak(Peak),
    /// The best value of the tuned parameter (`[report] best`).
    Best(Best),
    /// A variant against another (`[report] differences`, `baseline`, or a flushed variant
    /// against the hot one it differs from only by its cache).
    Difference(Difference),
    /// A method against its reference (`[report] bias`).
    Bias(Bias),
    /// The methods within tolerance of their references at every cell, of `of` methods.
    BiasWithin { methods: Vec<Bias>, of: usize },
    /// A peer program against the variant it stands beside.
    Peer(PeerAgreement),
    /// Trusted cells whose clocks moved, whose GPU throttled, or whose wait kernel was too
    /// short: the ids, of how many trusted cells, and one cell's flags.
    Flagged {
        cells: Vec<String>,
        of: usize,
        example: (String, Vec<String>),
    },
    /// Trusted cells that the per-cell budget stopped before their sample count: each id
    /// and why, of how many trusted cells.
    Stopped {
        cells: Vec<(String, String)>,
        of: usize,
    },
    /// Trusted cells whose audits took more than their share of the cell's time.
    AuditCost(AuditCost),
    /// Trusted cells whose detection limit is wide (over a quarter of the work).
    WideLimits(WideLimits),
    /// Trusted cells whose timed launches split into two behaviors launch to launch.
    Split(Split),
    /// Where no rule above speaks: a kernel's fastest and slowest trusted cell.
    Range(Range),
    /// No rule has anything to say: how many cells are trusted, of how many.
    Nothing { trusted: usize, cells: usize },
}

/// Trusted audited cells in which a kernel could skip more than a quarter of its work
/// where it is timed and still pass (`limits::WIDE_LIMIT`).
#[derive(Debug, Clone, PartialEq)]
pub struct WideLimits {
    pub over: usize,
    /// Audited trusted cells with a detection limit.
    pub of: usize,
    /// The widest, and its limit as a fraction.
    pub widest: NamedCell,
    pub limit: f64,
    /// Of `over`, batches timed by events on an idle queue.
    pub idle_batches: usize,
    /// Of `over`, cells audited among their timed launches with no decoy (too few samples:
    /// the band alone judged them), and the fewest samples of a run that afford one.
    pub band_only: usize,
    pub samples_for_a_decoy: usize,
    /// Of `over`, single launches whose timed samples spread as the worker's wide spread
    /// (`limits::spread_wide`): a spread a kernel can make on purpose widens its bound.
    pub spread: usize,
}

/// Trusted cells whose timed launches split into two behaviors (`split::splits`): how many
/// of how many with steady samples, and the one whose interquartile range is the largest share of its median,
/// with its shortest half and, where it was audited, its detection limit as a fraction.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    pub cells: usize,
    pub of: usize,
    pub widest: NamedCell,
    pub median_ns: f64,
    pub iqr_ns: f64,
    pub half_ns: f64,
    pub limit: Option<f64>,
}

/// A kernel against its baseline over every cell where both are trusted: speed-up =
/// the baseline's median / the kernel's.
#[derive(Debug, Clone, PartialEq)]
pub struct Speedup {
    pub kernel: String,
    pub baseline: String,
    pub cells: usize,
    /// Cells where the kernel is faster, and slower, by more than [`ALIKE_FRACTION`].
    pub faster: usize,
    pub slower: usize,
    /// The lowest and highest speed-up, each at its cell (`against_ns`: the baseline's).
    pub lowest: (Reading, f64),
    pub highest: (Reading, f64),
    /// The cell of the largest effect either way, with the 95% bootstrap interval of its
    /// speed-up over the two cells' independent units (where both have units).
    pub strongest: (Reading, f64),
    pub interval: Option<(f64, f64)>,
}

/// What a share of the peak counts.
#[derive(Debug, Clone, PartialEq)]
pub enum PeakOf {
    /// Bytes against the DRAM peak (`host_link`: against the host link's).
    Bytes {
        host_link: bool,
    },
    Flops(FlopsType),
}

/// A kernel's best rate against the device's peak.
#[derive(Debug, Clone, PartialEq)]
pub struct Peak {
    pub at: Reading,
    pub work: PeakOf,
    /// Bytes or FLOPs per launch.
    pub amount: f64,
    /// Per second, and the peak per second.
    pub rate: f64,
    pub peak: f64,
    /// DRAM bytes only: whether the best is where every byte declared must cross DRAM:
    /// the kernel's buffers are over twice the L2 (what L2 can hold from before a launch
    /// and keep written after it) and it declares each read and written at most once;
    /// where no point is, caches serve part of the bytes.
    pub dram_bound: bool,
}

/// The value of the tuned parameter that is fastest most often.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    pub kernel: String,
    pub param: String,
    pub value: String,
    /// Groups (a variant at a value of the other parameters, with two or more trusted
    /// cells) it is fastest in, of all such groups.
    pub wins: usize,
    pub groups: usize,
    /// Where it wins by most: its cell (`against_ns`: the slowest value's median there),
    /// and the slowest value.
    pub by_most: Reading,
    pub slowest: String,
    /// The largest slowest / fastest ratio of any group: at most 1 + [`ALIKE_FRACTION`],
    /// the parameter makes no difference worth tuning.
    pub spread: f64,
    /// Whether the tuned parameter is the kernel's only one (a group is then a variant).
    pub alone: bool,
}

/// A kernel's energy a launch against its baseline's over the trusted cells where both were
/// read.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergyRatio {
    pub kernel: String,
    pub baseline: String,
    pub cells: usize,
    /// The baseline's joules a launch over the kernel's, lowest and highest.
    pub lowest: f64,
    pub highest: f64,
    /// The cell of the largest ratio either way, and both cells' readings there.
    pub at: NamedCell,
    pub mine: Energy,
    pub theirs: Energy,
}

/// Variant `a` against `b` over every cell where both are trusted: `(a - b) / b`.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub a: String,
    pub b: String,
    pub cells: usize,
    /// The lowest and highest difference, each at its cell (`against_ns`: b's median).
    pub lowest: (Reading, f64),
    pub highest: (Reading, f64),
    /// The knobs' phrases that set `a` apart from `b` at the largest difference's point, and
    /// `b` apart from `a`.
    pub differs: (Vec<String>, Vec<String>),
    /// A flushed variant against a hot one: the cells where the flushed one reads lower by
    /// more than [`ALIKE_FRACTION`], and whether its flush reads (leaving L2 clean, where a
    /// hot launch may first write back what the launch before it left dirty).
    pub cold_faster: Option<(usize, bool)>,
}

/// A method against its reference over every cell where both are trusted.
#[derive(Debug, Clone, PartialEq)]
pub struct Bias {
    pub method: String,
    pub reference: String,
    pub cells: usize,
    /// Cells within max(1%, 0.5 µs) of the reference.
    pub within: usize,
    /// The lowest and highest bias in time, each at its cell (`against_ns`: the
    /// reference's median).
    pub lowest: Reading,
    pub highest: Reading,
}

/// A peer program against the variant it stands beside, over the points where both read.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerAgreement {
    pub peer: String,
    pub label: String,
    pub variant: String,
    pub points: usize,
    /// Points where the runner agrees: within max(10%, 20 µs) for first launches
    /// (`first_launch`), max(1%, 2 µs) for steady samples.
    pub agree: usize,
    pub first_launch: bool,
    /// The largest difference in percent of the peer's reading (`against_ns`: the peer's).
    pub largest: Reading,
}

/// A kernel's fastest and slowest trusted cell under one variant, and, where several
/// variants read its last point, the fastest and slowest of them there.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub cells: usize,
    pub fastest: Reading,
    pub slowest: Reading,
    pub variants: Option<(Reading, Reading)>,
}

/// What the rules read: the experiment, its trusted cells' headline medians (ns) and their
/// independent units (for bootstrap intervals), by kernel, point and variant.
pub struct Trusted<'a> {
    pub exp: &'a Experiment,
    pub median: &'a dyn Fn(usize, &Point, &str) -> Option<f64>,
    pub units: &'a dyn Fn(usize, &Point, &str) -> Vec<f64>,
    /// The board's energy over a cell's steady samples, its runs together, where read.
    pub energy: &'a dyn Fn(usize, &Point, &str) -> Option<Energy>,
}

impl Trusted<'_> {
    /// Kernel `k`'s trusted cells as (point, variant, median), in sweep and variant order;
    /// none for a kernel written to be caught, whose cells that passed are cheats that got
    /// through, not readings.
    pub(super) fn cells(&self, k: usize) -> Vec<(&Point, &str, f64)> {
        let exp = self.exp;
        if exp.kernels[k].expect_caught {
            return Vec::new();
        }
        exp.kernels[k]
            .points
            .iter()
            .flat_map(|p| {
                exp.variants
                    .iter()
                    .filter_map(move |v| Some((p, v.name.as_str(), (self.median)(k, p, &v.name)?)))
            })
            .collect()
    }
}

/// Trusted cells whose audits took more than the audit's share goal of their time
/// ([`crate::protocol::AUDIT_SHARE_CAP`]): how many of the audited ones, and the costliest
/// with what took most of it.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditCost {
    pub over: usize,
    pub of: usize,
    pub cell: NamedCell,
    pub cost_s: f64,
    pub wall_s: f64,
    pub most: CostPart,
    /// The steady samples the cell took, and at most how many would bring its audits within
    /// the share at its pace (`cost::samples_for_share`), where more are needed.
    pub samples: Option<(u64, u64)>,
}

/// What took most of a cell's audit time, with its seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CostPart {
    /// The checks of its audited regions, against this reference.
    Checks(f64, CheckedBy),
    /// The regions among the timed launches.
    Regions(f64),
    /// Staging their inputs: the draws on the GPU, a Python reference's asked ahead.
    Staging(f64),
    /// The weaker audit: one launch after the samples and its check, timed as one.
    Weaker,
    /// A run from before the parts were recorded.
    Unknown,
}

/// What a cell's audited regions are checked against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CheckedBy {
    /// A Python function given the data through files, on the host.
    PythonByFiles,
    /// A Python function given the runner's buffers on the GPU (`gpu = true`).
    PythonOnGpu,
    Kernel,
    Builtin,
}
