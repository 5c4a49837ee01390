//! A validated experiment and what it holds (variants, the report's and telemetry's settings,
//! the clock policy, published numbers, metrics): what validation (`validate/`) fills and
//! every stage reads. A leaf the folder's files import, so that the front, which validates
//! through `validate/`, is none of theirs.

use super::error::{BadValue, ConfigError};
use super::expr::{self, DeviceFacts};
use super::kernel::{Kernel, LaunchSpec};
use super::knobs::Knobs;
use super::names;
use super::peer;
use super::schema::Unit;
use super::sweep::{scope, Point, SweepValue};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A validated experiment: every name resolves, and every knob and launch is evaluated and
/// within the device's limits at every sweep point.
#[derive(Debug, Clone)]
pub struct Experiment {
    pub path: PathBuf,
    pub text: String,
    /// File stem: `experiments/cold-start.toml` -> `cold-start`.
    pub name: String,
    pub title: String,
    pub description: String,
    /// Each sweep parameter with its distinct values, in file order (a zipped group's
    /// parameters each).
    pub params: Vec<(String, Vec<SweepValue>)>,
    /// The parameters of each zipped group (`shape = { m = [..], n = [..] }`), which
    /// advance together rather than as a product.
    pub zipped: Vec<Vec<String>>,
    /// Sweep points, the first parameter varying slowest.
    pub points: Vec<Point>,
    pub kernels: Vec<Kernel>,
    pub variants: Vec<Variant>,
    pub report: ReportSpec,
    pub telemetry: TelemetrySpec,
    pub clocks: ClockPolicy,
    /// Busy work on the GPU before the first cell (zero: none).
    pub gpu_warmup: std::time::Duration,
    /// The device the experiment was checked against.
    pub facts: DeviceFacts,
    /// Other programs run beside variants in the same run.
    pub peers: Vec<peer::Peer>,
}

/// Whether validation reads the kernel sources (to run or plan) or not (to render a stored
/// run, which needs only the experiment file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sources {
    Read,
    Skip,
}

#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    pub description: String,
    /// The variant's knobs at each sweep point, in the order of `Experiment::points`.
    pub knobs: Vec<Knobs>,
}

/// What the run does about the GPU's clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClockPolicy {
    /// Record them and flag cells whose clock moved (the default).
    Observe,
    /// Also flag cells that ran at another SM clock than this (MHz).
    Expect(u32),
    /// Lock the SM clock at this (MHz) for the run and reset it afterwards; needs
    /// `--allow-clock-changes` and root, since it changes a device others may share.
    Lock(u32),
}

/// NVML sampling during each cell, and when a cell's clocks are flagged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TelemetrySpec {
    /// Sampling interval; 0 turns the background sampler off.
    pub interval_ms: u64,
    /// A cell is flagged when its SM clock moved by more than this during its timed samples.
    pub clock_tolerance_pct: f64,
    /// Run the clock probe before and after every cell.
    pub clock_probe: bool,
    /// A cell is flagged when its probed clock is this far from the run's median.
    pub probe_tolerance_pct: f64,
}

#[derive(Debug, Clone)]
pub struct ReportSpec {
    /// (variant, baseline) pairs shown as `(variant - baseline) / baseline` columns.
    pub differences: Vec<(String, String)>,
    /// (method, reference) pairs: each method's bias against its reference.
    pub bias: Vec<(String, String)>,
    /// (kernel, baseline kernel) pairs: how much faster the kernel is than the baseline
    /// at each point, under each variant.
    pub kernels: Vec<(String, String)>,
    /// A sweep parameter to tune: the value with the lowest median at each point of the
    /// other parameters is marked in the tables.
    pub best: Option<String>,
    pub unit: Unit,
    /// Path relative to the experiment file, when the experiment names its own template.
    pub template: Option<String>,
    pub floor: bool,
    pub floor_samples: u64,
    pub published: Vec<Published>,
    pub metrics: Vec<Metric>,
    /// Fit `time = a + bytes / b` over each kernel's points.
    pub fit: bool,
}

/// A number derived from each cell's median (see [`schema::RawMetric`]).
#[derive(Debug, Clone, Serialize)]
pub struct Metric {
    pub name: String,
    pub value: String,
    pub unit: String,
}

/// A metric's value for a cell: its median `time_ns` and launch's work at `point` (`bytes`,
/// `reads`, `writes`, `flops`).
pub fn metric_value(
    m: &Metric,
    point: &Point,
    facts: &DeviceFacts,
    time_ns: f64,
    launch: &LaunchSpec,
) -> Result<f64, BadValue> {
    let mut s = scope(point, facts);
    s.insert("time_ns".into(), time_ns.into());
    s.insert("bytes".into(), launch.bytes.unwrap_or(f64::NAN).into());
    // The bytes read and written apart, where the kernel declares them so (else no number,
    // as `bytes` is none where it declares no bytes).
    let (reads, writes) = launch.reads_writes.unwrap_or((f64::NAN, f64::NAN));
    s.insert("reads".into(), reads.into());
    s.insert("writes".into(), writes.into());
    s.insert("flops".into(), launch.flops.unwrap_or(f64::NAN).into());
    expr::eval_float(&m.value, &s)
}

/// Numbers a seed document published, shown beside ours.
#[derive(Debug, Clone, Serialize)]
pub struct Published {
    pub variant: String,
    pub source: String,
    pub unit: Unit,
    /// Sweep-point label -> value in `unit`.
    pub values: Vec<(String, f64)>,
}

/// The most cells an experiment may plan: each is at least one process start or a
/// warm-up and samples on the GPU, and every one is evaluated when the file is read.
pub const MAX_CELLS: u64 = 100_000;

/// An experiment's name, as its run folder is named: `experiments/cold-start.toml` ->
/// `cold-start`; refused where the file's name is not an identifier (`...toml` would name
/// the folder `..`, a quote or `$( )` would reach a generated script).
pub fn name_of(path: &Path) -> Result<String, ConfigError> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    names::check("experiment", &stem).map_err(|(message, hint)| {
        ConfigError::at(path, "", None, message).with_hint(format!(
            "rename the file: an experiment is named by its file name, which names its run folder; {hint}"
        ))
    })?;
    Ok(stem)
}

impl Experiment {
    /// The kernels the plan times, with their indices: all but those run only in the
    /// checks of others (`timed = false`).
    pub fn timed_kernels(&self) -> impl Iterator<Item = (usize, &Kernel)> {
        self.kernels
            .iter()
            .enumerate()
            .filter(|(_, k)| !k.check_only)
    }

    /// Kernel `k`'s sweep parameters' names, as its tables' first column is titled: `m, n`.
    pub fn parameter_names(&self, k: usize) -> String {
        self.kernels[k]
            .points
            .first()
            .map(|p| p.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>())
            .unwrap_or_default()
            .join(", ")
    }

    /// An error about the experiment as a whole (no single place in the file).
    pub fn error(&self, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(&self.path, &self.text, None, msg)
    }
}
