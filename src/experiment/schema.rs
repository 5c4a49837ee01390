//! The TOML schema as serde reads it. Unknown keys are errors (`deny_unknown_fields`), and
//! values the validator must locate are `Spanned`.

use super::expr::NumExpr;
use super::process::{CompileMode, JitCache};
use super::sweep::SweepSpec;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExperiment {
    pub experiment: RawMeta,
    #[serde(default)]
    pub sweep: IndexMap<String, Spanned<SweepSpec>>,
    #[serde(default, rename = "kernel")]
    pub kernels: Vec<RawKernel>,
    pub defaults: Option<RawKnobs>,
    #[serde(default, rename = "variant")]
    pub variants: Vec<RawKnobs>,
    pub report: Option<RawReport>,
    pub telemetry: Option<RawTelemetry>,
    pub environment: Option<RawEnvironment>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEnvironment {
    /// `"observe"`, `{ expect = MHz }` or `{ lock = MHz }`; read as a value so that a
    /// mistake gets the validator's message rather than serde's.
    pub clocks: Option<Spanned<toml::Value>>,
    /// Busy work on the GPU before the first cell, e.g. `"30s"`.
    pub gpu_warmup: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    pub interval_ms: Option<u64>,
    pub clock_tolerance_pct: Option<f64>,
    pub clock_probe: Option<bool>,
    pub probe_tolerance_pct: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMeta {
    pub title: String,
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernel {
    pub name: Spanned<String>,
    pub source: Spanned<String>,
    pub entry: Spanned<String>,
    pub grid: Spanned<Vec<Spanned<NumExpr>>>,
    pub block: Spanned<Vec<Spanned<NumExpr>>>,
    pub shared_bytes: Option<Spanned<NumExpr>>,
    #[serde(default)]
    pub args: Vec<RawArg>,
    pub check: Option<Spanned<RawCheck>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawArg {
    pub name: Spanned<String>,
    pub buffer: Option<Dtype>,
    pub scalar: Option<Dtype>,
    pub len: Option<Spanned<NumExpr>>,
    pub init: Option<Spanned<String>>,
    pub value: Option<Spanned<NumExpr>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCheck {
    pub reference: Spanned<String>,
    pub inputs: Vec<Spanned<String>>,
    pub output: Spanned<String>,
    #[serde(default)]
    pub dims: Vec<Spanned<NumExpr>>,
    pub tolerance: Option<f64>,
}

/// The knobs of `[defaults]` and of each `[[variant]]` (only variants have a name).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKnobs {
    pub name: Option<Spanned<String>>,
    pub description: Option<String>,
    pub timer: Option<TimerKind>,
    pub warmup: Option<Spanned<NumExpr>>,
    pub warmup_kernel: Option<WarmupKernel>,
    pub samples: Option<Spanned<NumExpr>>,
    pub fresh_process: Option<bool>,
    pub processes: Option<Spanned<NumExpr>>,
    pub cache: Option<CacheKind>,
    pub flush_bytes: Option<Spanned<NumExpr>>,
    pub flush_method: Option<FlushMethod>,
    /// Environment variables of the variant's worker processes, over those of `[defaults]`.
    pub env: Option<IndexMap<String, Spanned<toml::Value>>>,
    pub jit_cache: Option<JitCache>,
    pub compile: Option<CompileMode>,
    pub arch: Option<Spanned<String>>,
    /// Longest a worker may take for one cell before it is killed, e.g. `"10 min"`.
    pub timeout: Option<Spanned<String>>,
    /// Launches back to back in one timed region; the reading is per launch.
    pub batch: Option<Spanned<NumExpr>>,
    /// Launches captured in a CUDA graph whose replay is timed; the reading is per launch.
    pub graph: Option<Spanned<NumExpr>>,
    /// The stream's state when a timed launch is enqueued.
    pub queue: Option<QueueKind>,
    /// The wait kernel's length for `queue = "saturate"`, in µs.
    pub queue_wait_us: Option<Spanned<NumExpr>>,
    /// Keep CUPTI collecting kernel records during the samples of a non-CUPTI timer, to
    /// measure what CUPTI's collection costs that timer.
    pub cupti_collect: Option<bool>,
    /// Sets of the kernel's buffers that timed samples use in turn (a cold cache without
    /// a flush); an expression of the sweep and device facts.
    pub rotate: Option<Spanned<NumExpr>>,
    /// Adaptive stopping: present, the cell stops once its samples are precise enough.
    pub stop: Option<Spanned<RawStop>>,
    /// How the variants at one sweep point take turns in their shared process.
    pub order: Option<Order>,
    /// Turns an interleaved or shuffled cell's samples are split into.
    pub rounds: Option<Spanned<NumExpr>>,
}

/// `stop = { rsd_pct = 0.5, min_samples = 10, min_gpu_time = "0.5s", timeout = "15s" }`;
/// each field defaults to NVBench's value.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStop {
    pub rsd_pct: Option<f64>,
    pub min_samples: Option<u64>,
    pub min_gpu_time: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
}

/// How the variants at one sweep point take turns in their shared process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Each cell runs all its samples, then the next cell.
    Sequential,
    /// The cells run in rounds, each taking its turn per round, so drift spreads evenly.
    Interleaved,
    /// As interleaved, in a new seeded order every round.
    Shuffled,
}

/// What the stream holds when a timed launch is enqueued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueKind {
    /// Nothing: the start event fires as soon as it is enqueued, launch latency included.
    Idle,
    /// A device-side wait kernel first, so the timed launch is queued when its start event fires.
    Saturate,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReport {
    pub baseline: Option<Spanned<String>>,
    #[serde(default)]
    pub differences: Vec<Spanned<Vec<Spanned<String>>>>,
    /// `[method, reference]` pairs: the method's bias against the reference, per point.
    #[serde(default)]
    pub bias: Vec<Spanned<Vec<Spanned<String>>>>,
    pub unit: Option<Unit>,
    pub template: Option<Spanned<String>>,
    pub floor: Option<bool>,
    pub floor_samples: Option<u64>,
    #[serde(default)]
    pub published: Vec<RawPublished>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPublished {
    pub variant: Spanned<String>,
    pub source: String,
    pub unit: Unit,
    pub values: Spanned<IndexMap<String, f64>>,
}

/// How a sample's time is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// Host clock around the launch call only: measures the enqueue (the post's "wrong" timer).
    Host,
    /// Host clock around the launch and a context synchronize.
    HostSync,
    /// CUDA events recorded on the stream before and after the launch.
    Events,
    /// The kernel's own start and end on the GPU, from CUPTI's activity records.
    Cupti,
    /// Nsight Compute's `gpu__time_duration` of each launch, the worker run under `ncu`.
    Profiler,
}

impl TimerKind {
    /// The timers the floor reads an empty kernel with.
    pub const ALL: [TimerKind; 5] = [
        TimerKind::Host,
        TimerKind::HostSync,
        TimerKind::Events,
        TimerKind::Cupti,
        TimerKind::Profiler,
    ];

    pub fn key(self) -> &'static str {
        match self {
            TimerKind::Host => "host",
            TimerKind::HostSync => "host_sync",
            TimerKind::Events => "events",
            TimerKind::Cupti => "cupti",
            TimerKind::Profiler => "profiler",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            TimerKind::Host => "host timer around the launch call (no sync)",
            TimerKind::HostSync => "host timer around launch + context synchronize",
            TimerKind::Events => "CUDA events around the launch",
            TimerKind::Cupti => "the kernel's span from CUPTI activity records",
            TimerKind::Profiler => "Nsight Compute's gpu__time_duration of each launch",
        }
    }
}

/// The L2 state a timed launch starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheKind {
    /// Whatever the previous launch left in L2 (repeated launches on one input: hot).
    Hot,
    /// L2 evicted before every timed launch by writing a buffer larger than L2.
    Flush,
}

/// How the flush buffer evicts L2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushMethod {
    /// `cuMemsetD8Async` over the buffer (the post's and seed 001's way).
    Memset,
    /// A grid-stride write kernel (`kernels/flush.cu`).
    Kernel,
    /// A grid-stride read kernel (`kernels/flush.cu`): L2 left holding clean lines, so the
    /// timed kernel does not pay for writing the flush's lines back.
    Read,
}

/// What the warm-up launches run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupKernel {
    /// The measured kernel itself.
    Same,
    /// The built-in empty kernel (`kernels/empty.cu`).
    Empty,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    F32,
    F64,
    I32,
    U32,
    I64,
    U64,
}

impl Dtype {
    pub fn size(self) -> usize {
        match self {
            Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
            Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
        }
    }
}

/// Time unit for tables; `auto` picks one per value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Ns,
    Us,
    Ms,
    S,
    Auto,
}

impl Unit {
    pub fn ns_per_unit(self) -> f64 {
        match self {
            Unit::Ns | Unit::Auto => 1.0,
            Unit::Us => 1e3,
            Unit::Ms => 1e6,
            Unit::S => 1e9,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Ns | Unit::Auto => "ns",
            Unit::Us => "µs",
            Unit::Ms => "ms",
            Unit::S => "s",
        }
    }
}

/// A buffer's initial contents.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Init {
    /// Uniform random values in [lo, hi): inputs are never zeros.
    Uniform(f64, f64),
    /// Written by the kernel: poisoned (NaN / all ones) before a checked launch.
    Output,
}

pub fn parse_init(text: &str) -> Result<Init, String> {
    let t = text.trim();
    if t == "output" {
        return Ok(Init::Output);
    }
    let bad =
        || format!("unknown init `{text}`; write \"uniform(lo, hi)\" for inputs or \"output\"");
    let inner = t
        .strip_prefix("uniform(")
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(bad)?;
    let (lo, hi) = inner.split_once(',').ok_or_else(bad)?;
    let lo: f64 = lo.trim().parse().map_err(|_| bad())?;
    let hi: f64 = hi.trim().parse().map_err(|_| bad())?;
    if lo >= hi {
        return Err(format!("uniform({lo}, {hi}) needs lo < hi"));
    }
    if lo == 0.0 && hi <= f64::MIN_POSITIVE {
        return Err("inputs must not be all zeros".into());
    }
    Ok(Init::Uniform(lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_forms() {
        assert_eq!(
            parse_init("uniform(0, 100)").unwrap(),
            Init::Uniform(0.0, 100.0)
        );
        assert_eq!(parse_init("output").unwrap(), Init::Output);
        assert!(parse_init("zeros").is_err());
        assert!(parse_init("uniform(5, 1)").is_err());
    }
}
