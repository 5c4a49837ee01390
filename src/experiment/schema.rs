//! The TOML schema as serde reads it. Unknown keys are errors (`deny_unknown_fields`), and
//! values the validator must locate are `Spanned`.

use super::error::BadValue;
use super::expr::NumExpr;
use super::sweep::SweepSpec;
use super::tolerance::ToleranceSpec;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use super::dtype::Dtype;

/// A `[defaults]` or `[[variant]]` table as written: each key's value with its place, which
/// the knobs read.
pub type RawTable = IndexMap<String, Spanned<toml::Value>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExperiment {
    pub experiment: RawMeta,
    #[serde(default)]
    pub sweep: IndexMap<String, Spanned<SweepSpec>>,
    #[serde(default, rename = "kernel")]
    pub kernels: Vec<RawKernel>,
    #[serde(default, rename = "copy")]
    pub copies: Vec<RawCopy>,
    pub defaults: Option<Spanned<RawTable>>,
    #[serde(default, rename = "variant")]
    pub variants: Vec<Spanned<RawTable>>,
    pub report: Option<RawReport>,
    #[serde(default, rename = "peer")]
    pub peers: Vec<RawPeer>,
    pub telemetry: Option<RawTelemetry>,
    pub environment: Option<RawEnvironment>,
}

/// Another program that measures the same thing, run in the same run beside a variant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPeer {
    pub name: Spanned<String>,
    pub variant: Spanned<String>,
    /// The program and its arguments; arguments may use the sweep (`"{{ n }}"`).
    pub command: Spanned<Vec<String>>,
    /// What its output says, with `{ms}`, `{us}` or `{ns}` where the time stands.
    pub reads: Spanned<String>,
    /// Which match of `reads` in the output (0: the first).
    pub occurrence: Option<usize>,
    pub processes: Option<u32>,
    #[serde(default)]
    pub env: IndexMap<String, String>,
    /// How the report's column is titled.
    pub label: Option<String>,
    /// An expression of the sweep: the peer runs only at points where it is true.
    pub when: Option<Spanned<String>>,
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
    pub interval_ms: Option<Spanned<u64>>,
    pub clock_tolerance_pct: Option<Spanned<f64>>,
    pub clock_probe: Option<bool>,
    pub probe_tolerance_pct: Option<Spanned<f64>>,
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
    /// Extra NVRTC options (`-DBLOCK={{ block }}`, `--use_fast_math`, `-lineinfo`); each may
    /// use the sweep parameters, so a define can be an axis.
    pub options: Option<Spanned<Vec<String>>>,
    /// Check against another kernel of the experiment run on the same inputs.
    pub check_kernel: Option<Spanned<RawKernelCheck>>,
    /// Check against a Python function of the inputs.
    pub check_python: Option<Spanned<RawPythonCheck>>,
    /// `unchecked = true`: time the kernel without checking its output, by choice.
    pub unchecked: Option<Spanned<bool>>,
    /// `expect = "caught"`: a kernel wrong on purpose, which the checks must catch.
    pub expect: Option<Spanned<String>>,
    /// `timed = false`: a reference kernel, run only for other kernels' `check_kernel`.
    pub timed: Option<Spanned<bool>>,
    /// Bytes the kernel reads and writes per launch (an expression): its GB/s.
    pub bytes: Option<Spanned<NumExpr>>,
    /// Bytes it reads, and bytes it writes, per launch, instead: `bytes` is their sum.
    pub reads: Option<Spanned<NumExpr>>,
    pub writes: Option<Spanned<NumExpr>>,
    /// Floating-point operations per launch (an expression): its FLOP/s.
    pub flops: Option<Spanned<NumExpr>>,
    /// The type those operations are in (`"f64"`, `"f16"`): which peak they are a share of.
    pub flops_type: Option<Spanned<String>>,
    /// Or the peak they are a share of, stated (`{ per_sm_clock, name }`); read as a value
    /// so that a mistake gets the validator's message rather than serde's.
    pub peak: Option<Spanned<toml::Value>>,
    /// Launches that follow the kernel's own in the same timed region.
    #[serde(default)]
    pub then: Vec<RawStep>,
    /// The entry's parameters by name, where `args` also holds what only its steps use.
    pub takes: Option<Spanned<Vec<Spanned<String>>>>,
    /// The kernel's own sweep parameters, crossed with the experiment's.
    #[serde(default)]
    pub sweep: IndexMap<String, Spanned<SweepSpec>>,
    /// `variants = ["hot"]`: the variants the kernel runs under (default: all of them).
    pub variants: Option<Spanned<Vec<Spanned<String>>>>,
    /// `skip = "n >= 4096"`: the points (a condition over the sweep) the kernel is not run at.
    pub skip: Option<Spanned<String>>,
}

/// A launch beside the kernel's in its timed region (a reduction's second pass): another
/// entry of the same source, given some of the kernel's arguments by name; or a copy between
/// two of its buffers (`copy = { from = "x", to = "d_x" }`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    pub entry: Option<Spanned<String>>,
    pub grid: Option<Spanned<Vec<Spanned<NumExpr>>>>,
    pub block: Option<Spanned<Vec<Spanned<NumExpr>>>>,
    pub shared_bytes: Option<Spanned<NumExpr>>,
    pub args: Option<Spanned<Vec<Spanned<String>>>>,
    pub copy: Option<Spanned<RawCopyStep>>,
    /// Enqueued before the kernel's own launch (a copy of its inputs to the device).
    pub before: Option<bool>,
}

/// A copy step: from one of the kernel's buffers into another of the same size.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCopyStep {
    pub from: Spanned<String>,
    pub to: Spanned<String>,
    pub sync: Option<bool>,
}

/// A copy as a cell's own operation: `bytes` bytes from a buffer in `from` memory into one
/// in `to` memory (each "device", "managed", "pinned", "pageable" or "mapped").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCopy {
    pub name: Spanned<String>,
    pub from: Spanned<String>,
    pub to: Spanned<String>,
    pub bytes: Spanned<NumExpr>,
    /// The blocking `cuMemcpy*` (as `cudaMemcpy`) instead of `cuMemcpy*Async`.
    pub sync: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawArg {
    pub name: Spanned<String>,
    /// A type (`"f32"`), or a sweep parameter's value (`"{{ dtype }}"`).
    pub buffer: Option<Spanned<String>>,
    pub scalar: Option<Spanned<String>>,
    pub len: Option<Spanned<NumExpr>>,
    pub init: Option<Spanned<String>>,
    pub value: Option<Spanned<NumExpr>>,
    /// Where a buffer lives: `"device"` (the default), `"managed"` or `"mapped"`.
    pub memory: Option<Spanned<String>>,
    /// `"zeros"` or a number: the buffer is set to it before every launch (a histogram's
    /// bins, an accumulator, a persistent kernel's tile counter), outside the timed region.
    pub reset: Option<Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCheck {
    pub reference: Spanned<String>,
    pub inputs: Vec<Spanned<String>>,
    pub output: Spanned<String>,
    #[serde(default)]
    pub dims: Vec<Spanned<NumExpr>>,
    pub tolerance: Option<Spanned<ToleranceSpec>>,
}

/// `check_kernel = { kernel = "naive", outputs = ["C"], rtol = 1e-5, atol = 1e-6 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernelCheck {
    pub kernel: Spanned<String>,
    pub outputs: Vec<Spanned<String>>,
    pub rtol: Option<Spanned<ToleranceSpec>>,
    pub atol: Option<Spanned<ToleranceSpec>>,
}

/// `check_python = { function = "ref.py:rms_norm", outputs = ["y"], rtol = 1e-3 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPythonCheck {
    pub function: Spanned<String>,
    pub outputs: Vec<Spanned<String>>,
    pub rtol: Option<Spanned<ToleranceSpec>>,
    pub atol: Option<Spanned<ToleranceSpec>>,
    pub torch: Option<bool>,
    pub gpu: Option<bool>,
    pub timeout: Option<Spanned<String>>,
    pub python: Option<Spanned<String>>,
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
    /// `[kernel, baseline kernel]` pairs: how much faster or slower one kernel is than
    /// another at each point, under each variant (`[["softmax-v2", "softmax-v1"]]`).
    #[serde(default)]
    pub kernels: Vec<Spanned<Vec<Spanned<String>>>>,
    /// A sweep parameter (`"block"`): at each point of the other parameters, the value
    /// with the lowest median is marked best, per kernel and variant (a tuning table).
    pub best: Option<Spanned<String>>,
    pub unit: Option<Unit>,
    pub template: Option<Spanned<String>>,
    pub floor: Option<bool>,
    pub floor_samples: Option<Spanned<u64>>,
    #[serde(default)]
    pub published: Vec<RawPublished>,
    /// Fit `time = a + bytes / b` over each kernel's points (launch overhead a, bandwidth b).
    pub fit: Option<bool>,
    /// Numbers derived from each cell's median: `[[report.metric]]`.
    #[serde(default, rename = "metric")]
    pub metrics: Vec<RawMetric>,
}

/// A number derived from each cell's median time (`time_ns`), its sweep values, its declared
/// `bytes` and `flops`, and the device's facts: `value = "time_ns / steps"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetric {
    pub name: Spanned<String>,
    pub value: Spanned<String>,
    /// What the number counts, shown beside it (`"ns/access"`).
    pub unit: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPublished {
    pub variant: Spanned<String>,
    pub source: String,
    pub unit: Unit,
    pub values: Spanned<IndexMap<String, f64>>,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Init {
    /// Uniform random values in [lo, hi): inputs are never zeros.
    Uniform(f64, f64),
    /// Normal random values of this mean and standard deviation.
    Normal(f64, f64),
    /// Every element the same value (`zeros` is `constant(0)`).
    Constant(f64),
    /// `start`, `start + step`, `start + 2 step`, ...
    Iota(f64, f64),
    /// Written by the kernel: poisoned (NaN / all ones) before a checked launch.
    Output,
    /// Written and read by the kernel as working space (a scan's block sums, a split
    /// reduction's partials): neither poisoned nor checked nor an input, left as allocated.
    Scratch,
    /// A pointer chase: element `i * stride` holds the index of the next line's first
    /// element, the lines in one random cycle (every line once before any repeats), the other
    /// elements zero.
    Chase(u64),
    /// The data of a `.npy` file: its path as written (relative to the experiment file),
    /// then, once validated, resolved, with the offset of its data.
    Npy { path: String, offset: u64 },
    /// Written by the kernel, and set to this value before every launch (`reset = ...`):
    /// never an input.
    Reset(f64),
}

impl Init {
    /// Whether the kernel writes the buffer rather than reads data drawn for it.
    pub fn is_written(&self) -> bool {
        matches!(self, Init::Output | Init::Scratch | Init::Reset(_))
    }
}

/// A buffer's `reset`: `"zeros"` or a finite number.
pub fn parse_reset(value: &toml::Value) -> Result<f64, BadValue> {
    let v = match value {
        toml::Value::String(s) if s == "zeros" => 0.0,
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) if f.is_finite() => *f,
        other => {
            return Err(BadValue(format!(
                "reset = {other} is not \"zeros\" or a finite number"
            )))
        }
    };
    Ok(v)
}

impl Init {
    /// The least and greatest values it writes into `len` elements of `dtype` (a normal
    /// distribution's to eight standard deviations, which no draw reaches; an integer type's
    /// uniform draws rounded down, so `uniform(0, 256)` fills a u8 with 0 to 255); None for
    /// what it does not choose (an output, a chase of indices, a file's data).
    pub fn extremes(&self, len: usize, dtype: Dtype) -> Option<(f64, f64)> {
        match *self {
            Init::Uniform(lo, hi) if !dtype.is_float() => Some((lo.floor(), hi.ceil() - 1.0)),
            Init::Uniform(lo, hi) => Some((lo, hi)),
            Init::Normal(mean, std) => Some((mean - 8.0 * std, mean + 8.0 * std)),
            Init::Constant(v) => Some((v, v)),
            Init::Iota(start, step) => {
                let last = start + step * len.saturating_sub(1) as f64;
                Some((start.min(last), start.max(last)))
            }
            Init::Output | Init::Scratch | Init::Reset(_) | Init::Chase(_) | Init::Npy { .. } => {
                None
            }
        }
    }
}

/// An init as an experiment file writes it, so that `runner plan` shows what a point reads
/// (a reset, which the file gives as its own key, as `reset = v`).
impl std::fmt::Display for Init {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Init::Uniform(lo, hi) => write!(f, "uniform({lo}, {hi})"),
            Init::Normal(mean, std) => write!(f, "normal({mean}, {std})"),
            Init::Constant(v) => write!(f, "constant({v})"),
            Init::Iota(start, step) => write!(f, "iota({start}, {step})"),
            Init::Output => f.write_str("output"),
            Init::Scratch => f.write_str("scratch"),
            Init::Chase(stride) => write!(f, "chase({stride})"),
            Init::Npy { path, .. } => write!(f, "npy({path})"),
            Init::Reset(v) => write!(f, "reset = {v}"),
        }
    }
}

pub fn parse_init(text: &str) -> Result<Init, BadValue> {
    let t = text.trim();
    let bad = || {
        BadValue(format!(
            "unknown init `{text}`; write \"uniform(lo, hi)\", \"normal(mean, std)\", \"constant(v)\", \"zeros\", \"iota\", \"iota(start, step)\", \"npy(path/to/file.npy)\" or \"chase(stride)\" for inputs, \"output\" for what the kernel writes, or \"scratch\" for its working space"
        ))
    };
    let numbers = |name: &str, count: usize| -> Result<Option<Vec<f64>>, BadValue> {
        let Some(inner) = t.strip_prefix(name).and_then(|s| s.strip_prefix('(')) else {
            return Ok(None);
        };
        let inner = inner.strip_suffix(')').ok_or_else(bad)?;
        let v: Vec<f64> = inner
            .split(',')
            .map(|x| x.trim().parse::<f64>().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        if let Some(x) = v.iter().find(|x| !x.is_finite()) {
            return Err(BadValue(format!("`{text}`: {x} is not a finite number")));
        }
        (v.len() == count).then_some(Some(v)).ok_or_else(bad)
    };
    if let Some(stride) = t.strip_prefix("chase(").and_then(|p| p.strip_suffix(')')) {
        return match stride.trim().parse::<u64>() {
            Ok(s) if s >= 1 => Ok(Init::Chase(s)),
            _ => Err(BadValue(format!(
                "chase({stride}) needs a stride of at least 1 element"
            ))),
        };
    }
    if let Some(path) = t.strip_prefix("npy(").and_then(|p| p.strip_suffix(')')) {
        return Ok(Init::Npy {
            path: path.trim().to_string(),
            offset: 0,
        });
    }
    match t {
        "output" => return Ok(Init::Output),
        "scratch" => return Ok(Init::Scratch),
        "zeros" => return Ok(Init::Constant(0.0)),
        "iota" => return Ok(Init::Iota(0.0, 1.0)),
        _ => {}
    }
    if let Some(v) = numbers("uniform", 2)? {
        let (lo, hi) = (v[0], v[1]);
        if lo >= hi {
            return Err(BadValue(format!("uniform({lo}, {hi}) needs lo < hi")));
        }
        if lo == 0.0 && hi <= f64::MIN_POSITIVE {
            return Err(BadValue("inputs must not be all zeros".into()));
        }
        if !(hi - lo).is_finite() {
            return Err(BadValue(format!(
                "uniform({lo}, {hi}) spans more than a float holds"
            )));
        }
        return Ok(Init::Uniform(lo, hi));
    }
    if let Some(v) = numbers("normal", 2)? {
        if v[1].is_nan() || v[1] <= 0.0 {
            return Err(BadValue(format!(
                "normal({}, {}) needs a positive standard deviation",
                v[0], v[1]
            )));
        }
        return Ok(Init::Normal(v[0], v[1]));
    }
    if let Some(v) = numbers("constant", 1)? {
        return Ok(Init::Constant(v[0]));
    }
    if let Some(v) = numbers("iota", 2)? {
        return Ok(Init::Iota(v[0], v[1]));
    }
    Err(bad())
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
        assert_eq!(parse_init("scratch").unwrap(), Init::Scratch);
        assert!(Init::Scratch.is_written());
        assert_eq!(parse_init("zeros").unwrap(), Init::Constant(0.0));
        assert_eq!(parse_init("normal(0, 2)").unwrap(), Init::Normal(0.0, 2.0));
        assert_eq!(parse_init("constant(1.5)").unwrap(), Init::Constant(1.5));
        assert_eq!(parse_init("iota").unwrap(), Init::Iota(0.0, 1.0));
        assert_eq!(parse_init("iota(10, 2)").unwrap(), Init::Iota(10.0, 2.0));
        assert!(parse_init("uniform(5, 1)").is_err());
        assert!(parse_init("normal(0, 0)").is_err());
        assert!(parse_init("gaussian(0, 1)").is_err());
        for text in [
            "uniform(-1, 0.5)",
            "normal(0, 4)",
            "constant(0)",
            "iota(10, 2)",
            "output",
            "scratch",
            "chase(32)",
            "npy(data/a.npy)",
        ] {
            assert_eq!(
                parse_init(text).unwrap().to_string(),
                text,
                "written as read"
            );
        }
        assert_eq!(Init::Reset(0.0).to_string(), "reset = 0");
    }

    #[test]
    fn an_integer_type_draws_uniform_values_from_lo_to_below_hi() {
        let bins = Init::Uniform(0.0, 256.0);
        assert_eq!(bins.extremes(10, Dtype::U8), Some((0.0, 255.0)));
        assert_eq!(bins.extremes(10, Dtype::F32), Some((0.0, 256.0)));
        let signed = Init::Uniform(-1.5, 1.5);
        assert_eq!(signed.extremes(10, Dtype::I32), Some((-2.0, 1.0)));
    }
}
