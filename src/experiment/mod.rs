//! The experiment file: its TOML schema, and validation that turns every mistake into a
//! [`ConfigError`] naming the file, line and column.

pub mod error;
pub mod expr;
pub mod process;
pub mod schema;
pub mod sweep;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use error::ConfigError;
pub use expr::{DeviceFacts, NumExpr, Scope};
pub use process::{Compile, CompileMode, JitCache, ProcessEnv, ProfilerCache};
pub use schema::{
    CacheKind, Dtype, FlushMethod, Init, Order, QueueKind, TimerKind, Unit, WarmupKernel,
};
use schema::{RawArg, RawExperiment, RawKernel, RawKnobs, RawReport};
use toml::Spanned;

/// A validated experiment: every name resolves and every expression evaluates at every
/// sweep point (with nominal device facts; the worker re-evaluates with the real ones).
#[derive(Debug, Clone)]
pub struct Experiment {
    pub path: PathBuf,
    pub text: String,
    /// File stem: `experiments/cold-start.toml` -> `cold-start`.
    pub name: String,
    pub title: String,
    pub description: String,
    pub params: Vec<(String, Vec<i64>)>,
    pub kernels: Vec<Kernel>,
    pub variants: Vec<Variant>,
    pub report: ReportSpec,
    pub telemetry: TelemetrySpec,
    pub clocks: ClockPolicy,
    /// Busy work on the GPU before the first cell (zero: none).
    pub gpu_warmup: std::time::Duration,
}

/// What the run does about the GPU's clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone)]
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
pub struct Kernel {
    pub name: String,
    /// The source path as written, relative to the experiment file.
    pub source: String,
    pub source_text: String,
    pub entry: String,
    pub grid: Vec<NumExpr>,
    pub block: Vec<NumExpr>,
    pub shared_bytes: NumExpr,
    pub args: Vec<Arg>,
    pub check: Option<Check>,
}

#[derive(Debug, Clone)]
pub struct Arg {
    pub name: String,
    pub kind: ArgKind,
}

#[derive(Debug, Clone)]
pub enum ArgKind {
    Buffer {
        dtype: Dtype,
        len: NumExpr,
        init: Init,
    },
    Scalar {
        dtype: Dtype,
        value: NumExpr,
    },
}

/// How a kernel's output is checked against a CPU reference before it is timed.
#[derive(Debug, Clone)]
pub struct Check {
    pub reference: String,
    /// Indices into the kernel's args.
    pub inputs: Vec<usize>,
    pub output: usize,
    pub dims: Vec<NumExpr>,
    pub tolerance: f64,
}

#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    pub description: String,
    pub method: Method,
}

/// A methodology: the knobs of one variant, merged over the experiment's defaults.
#[derive(Debug, Clone)]
pub struct Method {
    pub timer: TimerKind,
    pub warmup: NumExpr,
    pub warmup_kernel: WarmupKernel,
    pub samples: NumExpr,
    pub fresh_process: bool,
    pub processes: NumExpr,
    pub cache: Cache,
    /// The environment its worker processes start with.
    pub env: ProcessEnv,
    pub compile: Compile,
    /// A worker that takes longer than this for one cell is killed and the cell fails.
    pub timeout: std::time::Duration,
    /// Launches per timed region (`batch`, or `graph` launches in one replayed graph).
    pub launches: NumExpr,
    /// Whether the launches are captured in a CUDA graph and the replay is timed.
    pub graph: bool,
    pub queue: Queue,
    /// CUPTI collects kernel records during the samples (always with `timer = "cupti"`).
    pub cupti_collect: bool,
    pub order: Order,
    /// Rounds the samples are split into (1 for sequential order).
    pub rounds: NumExpr,
    /// Stop before `samples` once the samples are precise enough.
    pub stop: Option<StopRule>,
    /// Buffer sets the timed samples use in turn (1: the same buffers every time).
    pub rotate: NumExpr,
}

/// Adaptive stopping, with NVBench's defaults: stop once the samples' relative standard
/// deviation is under `rsd_pct` with at least `min_samples` samples and `min_gpu_ns` of
/// measured time, or at `timeout`; `samples` stays the most a cell takes.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StopRule {
    pub rsd_pct: f64,
    pub min_samples: u64,
    pub min_gpu_ns: f64,
    #[serde(skip)]
    pub timeout: std::time::Duration,
}

/// The most samples an adaptive cell takes when it does not set `samples`.
pub const ADAPTIVE_MAX_SAMPLES: i64 = 100_000;

/// Rounds of an interleaved or shuffled variant unless it says.
pub const DEFAULT_ROUNDS: i64 = 10;

/// What the stream holds when a timed launch is enqueued.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Queue {
    Idle,
    /// A wait kernel of `wait_us` (default: sized from the measured enqueue cost) first.
    Saturate {
        wait_us: Option<NumExpr>,
    },
}

/// The default per-cell timeout: generous, since a cell may hold minutes of samples.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// The L2 state of each timed launch.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Cache {
    Hot,
    /// Evict L2 before every timed launch, outside the timed region, then synchronize.
    Flush {
        /// Size of the flush buffer; an expression of sweep parameters and device facts.
        bytes: NumExpr,
        method: FlushMethod,
    },
}

impl Cache {
    pub fn describe(&self) -> String {
        match self {
            Cache::Hot => "hot".into(),
            Cache::Flush { bytes, method } => {
                let m = match method {
                    FlushMethod::Memset => "memset",
                    FlushMethod::Kernel => "write kernel",
                    FlushMethod::Read => "read kernel",
                };
                let b = match bytes {
                    NumExpr::Expr(e) => e.clone(),
                    other => format!("{other:?}"),
                };
                format!("flush {b} bytes ({m})")
            }
        }
    }
}

/// The default flush buffer: twice the L2, as the post does.
pub const DEFAULT_FLUSH_BYTES: &str = "2 * l2_bytes";

#[derive(Debug, Clone)]
pub struct ReportSpec {
    /// (variant, baseline) pairs shown as `(variant - baseline) / baseline` columns.
    pub differences: Vec<(String, String)>,
    /// (method, reference) pairs: each method's bias against its reference.
    pub bias: Vec<(String, String)>,
    pub unit: Unit,
    /// Path relative to the experiment file, when the experiment names its own template.
    pub template: Option<String>,
    pub floor: bool,
    pub floor_samples: u64,
    pub published: Vec<Published>,
}

/// Numbers a seed document published, shown beside ours.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Published {
    pub variant: String,
    pub source: String,
    pub unit: Unit,
    /// Sweep-point label -> value in `unit`.
    pub values: Vec<(String, f64)>,
}

/// Reference checks the runner knows: name, number of inputs, dims it takes.
pub const REFERENCES: &[(&str, usize, &[&str])] =
    &[("matmul", 2, &["m", "k", "n"]), ("copy", 1, &[])];

/// Names reserved for device facts in expressions.
const FACT_NAMES: &[&str] = &["l2_bytes", "sm_count", "cc_major", "cc_minor", "mem_bytes"];

impl Experiment {
    /// Reads and validates an experiment file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::at(
                path,
                "",
                None,
                format!("cannot read the experiment file: {e}"),
            )
            .with_hint("pass the path of an experiment, e.g. experiments/cold-start.toml")
        })?;
        Self::parse(path, &text)
    }

    /// Validates experiment text; `path` locates errors and relative kernel sources.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let raw: RawExperiment = toml::from_str(text).map_err(|e| {
            ConfigError::at(path, text, e.span(), e.message().trim().to_string())
                .with_hint("see the experiment format in README.md")
        })?;
        Validator { path, text }.experiment(raw)
    }

    /// The sweep parameters' names, as a table's first column is titled: `m, n`.
    pub fn parameter_names(&self) -> String {
        self.params
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Sweep points, the first parameter varying slowest.
    pub fn points(&self) -> Vec<Point> {
        sweep::product(&self.params)
    }
}

/// One sweep point: parameter name -> value, in file order.
pub type Point = Vec<(String, i64)>;

/// Scope for expressions at a sweep point.
pub fn scope(point: &Point, facts: &DeviceFacts) -> Scope {
    let mut s = Scope::new();
    facts.add_to(&mut s);
    for (k, v) in point {
        s.insert(k.clone(), minijinja::Value::from(*v));
    }
    s
}

/// Scope for knob expressions: sweep parameters only, so that planning is exact.
pub fn knob_scope(point: &Point) -> Scope {
    point
        .iter()
        .map(|(k, v)| (k.clone(), minijinja::Value::from(*v)))
        .collect()
}

/// How a point is named in tables and in `published` keys: `512`, or `m=1, n=2`.
pub fn point_label(point: &Point) -> String {
    match point.as_slice() {
        [(_, v)] => v.to_string(),
        _ => point
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

struct Validator<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Validator<'_> {
    fn err<T>(&self, spanned: &Spanned<T>, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.text, Some(spanned.span()), msg)
    }

    fn nowhere(&self, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.text, None, msg)
    }

    fn experiment(&self, raw: RawExperiment) -> Result<Experiment, ConfigError> {
        let mut params = Vec::new();
        for (name, spec) in &raw.sweep {
            if FACT_NAMES.contains(&name.as_str()) {
                return Err(self
                    .err(
                        spec,
                        format!("sweep parameter `{name}` shadows a device fact"),
                    )
                    .with_hint(format!(
                        "rename it; device facts are {}",
                        FACT_NAMES.join(", ")
                    )));
            }
            let values = sweep::expand(spec.get_ref()).map_err(|m| self.err(spec, m))?;
            params.push((name.clone(), values));
        }
        let points = sweep::product(&params);

        if raw.kernels.is_empty() {
            return Err(self.nowhere("the experiment has no kernel").with_hint(
                "add a [[kernel]] table with name, source, entry, grid, block and args",
            ));
        }
        let mut kernels = Vec::new();
        for rk in raw.kernels {
            if kernels
                .iter()
                .any(|k: &Kernel| k.name == *rk.name.get_ref())
            {
                return Err(self.err(
                    &rk.name,
                    format!("kernel `{}` is defined twice", rk.name.get_ref()),
                ));
            }
            kernels.push(self.kernel(rk, &points)?);
        }

        let defaults = raw.defaults.unwrap_or_default();
        if let Some(name) = &defaults.name {
            return Err(self
                .err(name, "[defaults] cannot have a name")
                .with_hint("names belong to [[variant]] tables"));
        }
        if raw.variants.is_empty() {
            return Err(self
                .nowhere("the experiment has no variant")
                .with_hint("add a [[variant]] table with a name and its knobs"));
        }
        let mut variants: Vec<Variant> = Vec::new();
        for rv in &raw.variants {
            let name = rv.name.as_ref().ok_or_else(|| {
                self.nowhere(format!("variant #{} has no name", variants.len() + 1))
                    .with_hint("add name = \"...\" to every [[variant]]")
            })?;
            if variants.iter().any(|v| v.name == *name.get_ref()) {
                return Err(self.err(
                    name,
                    format!("variant `{}` is defined twice", name.get_ref()),
                ));
            }
            let method = self.method(rv, &defaults, &points)?;
            variants.push(Variant {
                name: name.get_ref().clone(),
                description: rv.description.clone().unwrap_or_default(),
                method,
            });
        }

        let report = self.report(raw.report.unwrap_or_default(), &variants, &points)?;
        let clocks = self.clocks(raw.environment.as_ref().and_then(|e| e.clocks.as_ref()))?;
        let gpu_warmup = self.duration(
            raw.environment.as_ref().and_then(|e| e.gpu_warmup.as_ref()),
            "gpu_warmup",
            std::time::Duration::ZERO,
        )?;
        let name = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "experiment".into());
        Ok(Experiment {
            path: self.path.to_path_buf(),
            text: self.text.to_string(),
            name,
            title: raw.experiment.title,
            description: raw.experiment.description.unwrap_or_default(),
            params,
            kernels,
            variants,
            report,
            clocks,
            gpu_warmup,
            telemetry: TelemetrySpec {
                interval_ms: raw
                    .telemetry
                    .as_ref()
                    .and_then(|t| t.interval_ms)
                    .unwrap_or(10),
                clock_tolerance_pct: raw
                    .telemetry
                    .as_ref()
                    .and_then(|t| t.clock_tolerance_pct)
                    .unwrap_or(1.0),
                clock_probe: raw
                    .telemetry
                    .as_ref()
                    .and_then(|t| t.clock_probe)
                    .unwrap_or(false),
                probe_tolerance_pct: raw
                    .telemetry
                    .as_ref()
                    .and_then(|t| t.probe_tolerance_pct)
                    .unwrap_or(0.5),
            },
        })
    }

    fn kernel(&self, rk: RawKernel, points: &[Point]) -> Result<Kernel, ConfigError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let source_path = dir.join(rk.source.get_ref());
        let source_text = std::fs::read_to_string(&source_path).map_err(|e| {
            self.err(
                &rk.source,
                format!("cannot read kernel source {}: {e}", source_path.display()),
            )
            .with_hint(
                "kernel sources are relative to the experiment file, e.g. \"../kernels/matmul.cu\"",
            )
        })?;
        let entry = rk.entry.get_ref();
        let base_name = entry.split('<').next().unwrap_or(entry).trim();
        if !source_text
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w == base_name)
        {
            return Err(self
                .err(
                    &rk.entry,
                    format!(
                        "kernel source {} has no function `{base_name}`",
                        source_path.display()
                    ),
                )
                .with_hint("entry is the __global__ function's name as written in the source"));
        }
        for (what, dims) in [("grid", &rk.grid), ("block", &rk.block)] {
            if dims.get_ref().is_empty() || dims.get_ref().len() > 3 {
                return Err(self.err(
                    dims,
                    format!(
                        "{what} needs 1 to 3 dimensions, got {}",
                        dims.get_ref().len()
                    ),
                ));
            }
        }
        let mut exprs: Vec<&Spanned<NumExpr>> =
            rk.grid.get_ref().iter().chain(rk.block.get_ref()).collect();
        if let Some(s) = &rk.shared_bytes {
            exprs.push(s);
        }
        let mut args = Vec::new();
        for ra in &rk.args {
            let arg = self.arg(ra)?;
            match (&ra.len, &ra.value) {
                (Some(e), _) | (None, Some(e)) => exprs.push(e),
                _ => {}
            }
            if args.iter().any(|a: &Arg| a.name == arg.name) {
                return Err(self.err(&ra.name, format!("argument `{}` appears twice", arg.name)));
            }
            args.push(arg);
        }
        let check = match &rk.check {
            None => {
                if let Some(out) = args.iter().find(|a| {
                    matches!(
                        a.kind,
                        ArgKind::Buffer {
                            init: Init::Output,
                            ..
                        }
                    )
                }) {
                    return Err(self
                        .err(&rk.name, format!("kernel `{}` writes `{}` but has no check", rk.name.get_ref(), out.name))
                        .with_hint("add check = { reference = \"matmul\", inputs = [...], output = \"...\", dims = [...] }; nothing unchecked is timed"));
                }
                None
            }
            Some(rc) => {
                exprs.extend(rc.get_ref().dims.iter());
                Some(self.check(rc, &args)?)
            }
        };
        for e in exprs {
            for p in points {
                expr::eval_number(e.get_ref(), &scope(p, &DeviceFacts::nominal())).map_err(
                    |m| {
                        self.err(e, m).with_hint(format!(
                            "expressions may use the sweep parameters and device facts: {}",
                            expr::names(&scope(p, &DeviceFacts::nominal()))
                        ))
                    },
                )?;
            }
        }
        Ok(Kernel {
            name: rk.name.into_inner(),
            source: rk.source.into_inner(),
            source_text,
            entry: rk.entry.into_inner(),
            grid: rk
                .grid
                .into_inner()
                .into_iter()
                .map(Spanned::into_inner)
                .collect(),
            block: rk
                .block
                .into_inner()
                .into_iter()
                .map(Spanned::into_inner)
                .collect(),
            shared_bytes: rk.shared_bytes.map_or(NumExpr::Int(0), Spanned::into_inner),
            args,
            check,
        })
    }

    fn arg(&self, ra: &RawArg) -> Result<Arg, ConfigError> {
        let name = ra.name.get_ref().clone();
        let kind = match (ra.buffer, ra.scalar) {
            (Some(dtype), None) => {
                let len = ra.len.clone().ok_or_else(|| {
                    self.err(&ra.name, format!("buffer `{name}` needs a len"))
                        .with_hint("e.g. len = \"n * n\"")
                })?;
                let init = ra.init.as_ref().ok_or_else(|| {
                    self.err(&ra.name, format!("buffer `{name}` needs an init"))
                        .with_hint("init = \"uniform(0, 100)\" for inputs, \"output\" for what the kernel writes")
                })?;
                let init = schema::parse_init(init.get_ref()).map_err(|m| self.err(init, m))?;
                if ra.value.is_some() {
                    return Err(self
                        .err(&ra.name, format!("buffer `{name}` cannot have a value"))
                        .with_hint("use init"));
                }
                ArgKind::Buffer {
                    dtype,
                    len: len.into_inner(),
                    init,
                }
            }
            (None, Some(dtype)) => {
                let value = ra.value.clone().ok_or_else(|| {
                    self.err(&ra.name, format!("scalar `{name}` needs a value"))
                        .with_hint("e.g. value = \"n\"")
                })?;
                if ra.len.is_some() || ra.init.is_some() {
                    return Err(self.err(&ra.name, format!("scalar `{name}` takes only a value")));
                }
                ArgKind::Scalar {
                    dtype,
                    value: value.into_inner(),
                }
            }
            _ => return Err(self
                .err(
                    &ra.name,
                    format!("argument `{name}` must be exactly one of a buffer or a scalar"),
                )
                .with_hint(
                    "write buffer = \"f32\" (with len and init) or scalar = \"i32\" (with value)",
                )),
        };
        Ok(Arg { name, kind })
    }

    fn check(&self, rc: &Spanned<schema::RawCheck>, args: &[Arg]) -> Result<Check, ConfigError> {
        let c = rc.get_ref();
        let known: Vec<&str> = REFERENCES.iter().map(|r| r.0).collect();
        let (_, n_inputs, dims) = REFERENCES
            .iter()
            .find(|r| r.0 == c.reference.get_ref())
            .ok_or_else(|| {
                self.err(
                    &c.reference,
                    format!("unknown reference `{}`", c.reference.get_ref()),
                )
                .with_hint(format!("known references: {}", known.join(", ")))
            })?;
        let buffer = |name: &Spanned<String>| {
            args.iter()
                .position(|a| a.name == *name.get_ref() && matches!(a.kind, ArgKind::Buffer { .. }))
                .ok_or_else(|| {
                    let buffers: Vec<&str> = args
                        .iter()
                        .filter(|a| matches!(a.kind, ArgKind::Buffer { .. }))
                        .map(|a| a.name.as_str())
                        .collect();
                    self.err(
                        name,
                        format!("no buffer argument named `{}`", name.get_ref()),
                    )
                    .with_hint(format!("buffers of this kernel: {}", buffers.join(", ")))
                })
        };
        if c.inputs.len() != *n_inputs {
            return Err(self.err(
                rc,
                format!(
                    "reference `{}` takes {n_inputs} input(s), got {}",
                    c.reference.get_ref(),
                    c.inputs.len()
                ),
            ));
        }
        if c.dims.len() != dims.len() {
            return Err(self.err(
                rc,
                format!(
                    "reference `{}` takes dims [{}], got {} value(s)",
                    c.reference.get_ref(),
                    dims.join(", "),
                    c.dims.len()
                ),
            ));
        }
        let inputs = c.inputs.iter().map(buffer).collect::<Result<Vec<_>, _>>()?;
        let output = buffer(&c.output)?;
        if !matches!(
            args[output].kind,
            ArgKind::Buffer {
                init: Init::Output,
                ..
            }
        ) {
            return Err(self.err(
                &c.output,
                format!(
                    "`{}` is checked as an output, so it needs init = \"output\"",
                    c.output.get_ref()
                ),
            ));
        }
        Ok(Check {
            reference: c.reference.get_ref().clone(),
            inputs,
            output,
            dims: c.dims.iter().map(|d| d.get_ref().clone()).collect(),
            tolerance: c.tolerance.unwrap_or(1e-4),
        })
    }

    fn method(&self, v: &RawKnobs, d: &RawKnobs, points: &[Point]) -> Result<Method, ConfigError> {
        let pick = |a: &Option<Spanned<NumExpr>>, b: &Option<Spanned<NumExpr>>| {
            a.clone().or_else(|| b.clone())
        };
        let warmup = pick(&v.warmup, &d.warmup);
        let samples = pick(&v.samples, &d.samples);
        let processes = pick(&v.processes, &d.processes);
        let fresh_process = v.fresh_process.or(d.fresh_process).unwrap_or(false);
        for (what, e, min) in [
            ("warmup", &warmup, 0),
            ("samples", &samples, 0),
            ("processes", &processes, 1),
        ] {
            let Some(e) = e else { continue };
            for p in points {
                let n = expr::eval_int(e.get_ref(), &knob_scope(p)).map_err(|m| {
                    self.err(e, m).with_hint(format!(
                        "{what} may use the sweep parameters: {}",
                        expr::names(&knob_scope(p))
                    ))
                })?;
                if n < min {
                    return Err(self.err(
                        e,
                        format!(
                            "{what} is {n} at {}, but must be at least {min}",
                            point_label(p)
                        ),
                    ));
                }
            }
        }
        let flush_bytes = pick(&v.flush_bytes, &d.flush_bytes);
        let cache = match v.cache.or(d.cache).unwrap_or(CacheKind::Hot) {
            CacheKind::Hot => Cache::Hot,
            CacheKind::Flush => {
                if let Some(e) = &flush_bytes {
                    for p in points {
                        let s = scope(p, &DeviceFacts::nominal());
                        let n = expr::eval_int(e.get_ref(), &s).map_err(|m| {
                            self.err(e, m)
                                .with_hint(format!("flush_bytes may use: {}", expr::names(&s)))
                        })?;
                        if n <= 0 {
                            return Err(self.err(e, format!("flush_bytes is {n}, not positive")));
                        }
                    }
                }
                Cache::Flush {
                    bytes: flush_bytes.map_or(
                        NumExpr::Expr(DEFAULT_FLUSH_BYTES.into()),
                        Spanned::into_inner,
                    ),
                    method: v
                        .flush_method
                        .or(d.flush_method)
                        .unwrap_or(FlushMethod::Memset),
                }
            }
        };
        let mut env = self.process_env(v, d)?;
        let compile = self.compile(v, d)?;
        let timer = v.timer.or(d.timer).unwrap_or(TimerKind::Events);
        if timer == TimerKind::Profiler {
            env.profiler = Some(match v.cache.or(d.cache).unwrap_or(CacheKind::Hot) {
                CacheKind::Hot => ProfilerCache::None,
                CacheKind::Flush => ProfilerCache::All,
            });
        }
        let batch = pick(&v.batch, &d.batch);
        let graph = pick(&v.graph, &d.graph);
        let queue_wait = pick(&v.queue_wait_us, &d.queue_wait_us);
        for (what, e) in [
            ("batch", &batch),
            ("graph", &graph),
            ("queue_wait_us", &queue_wait),
        ] {
            let Some(e) = e else { continue };
            for p in points {
                let n = expr::eval_int(e.get_ref(), &knob_scope(p)).map_err(|m| self.err(e, m))?;
                if n < 1 {
                    return Err(self.err(
                        e,
                        format!(
                            "{what} is {n} at {}, but must be at least 1",
                            point_label(p)
                        ),
                    ));
                }
            }
        }
        if let (Some(_), Some(g)) = (v.batch.as_ref().or(d.batch.as_ref()), &graph) {
            return Err(self
                .err(g, "batch and graph exclude each other")
                .with_hint("graph = N already times N launches per replay"));
        }
        let queue = match v.queue.or(d.queue).unwrap_or(QueueKind::Idle) {
            QueueKind::Idle => {
                if let Some(w) = &queue_wait {
                    return Err(self.err(w, "queue_wait_us needs queue = \"saturate\""));
                }
                Queue::Idle
            }
            QueueKind::Saturate => {
                if timer != TimerKind::Events {
                    return Err(self
                        .nowhere(format!(
                            "queue = \"saturate\" needs timer = \"events\", not \"{}\"",
                            timer.key()
                        ))
                        .with_hint("a host timer would time the wait kernel too"));
                }
                Queue::Saturate {
                    wait_us: queue_wait.map(Spanned::into_inner),
                }
            }
        };
        let timeout_text = v.timeout.as_ref().or(d.timeout.as_ref());
        let timeout = self.duration(timeout_text, "timeout", DEFAULT_TIMEOUT)?;
        if let (Some(t), true) = (timeout_text, timeout.is_zero()) {
            return Err(self.err(t, "a cell's timeout must be positive"));
        }
        let order = v.order.or(d.order).unwrap_or(Order::Sequential);
        let rounds_raw = pick(&v.rounds, &d.rounds);
        let rounds = match (order, rounds_raw) {
            (Order::Sequential, Some(r)) => {
                return Err(self
                    .err(&r, "rounds needs order = \"interleaved\" or \"shuffled\"")
                    .with_hint("sequential cells take all their samples in one turn"))
            }
            (Order::Sequential, None) => NumExpr::Int(1),
            (_, r) => {
                if fresh_process {
                    return Err(self
                        .nowhere(
                            "order applies to cells of a shared process, not fresh_process ones",
                        )
                        .with_hint("fresh-process runs already take turns, round-robin"));
                }
                if let Some(r) = &r {
                    for p in points {
                        let n = expr::eval_int(r.get_ref(), &knob_scope(p))
                            .map_err(|m| self.err(r, m))?;
                        if n < 1 {
                            return Err(
                                self.err(r, format!("rounds is {n}, but must be at least 1"))
                            );
                        }
                    }
                }
                r.map_or(NumExpr::Int(DEFAULT_ROUNDS), Spanned::into_inner)
            }
        };
        let rotate = pick(&v.rotate, &d.rotate);
        if let Some(r) = &rotate {
            for p in points {
                let s = scope(p, &DeviceFacts::nominal());
                let n = expr::eval_int(r.get_ref(), &s).map_err(|m| {
                    self.err(r, m)
                        .with_hint(format!("rotate may use: {}", expr::names(&s)))
                })?;
                if n < 1 {
                    return Err(self.err(r, format!("rotate is {n}, but must be at least 1")));
                }
            }
        }
        if let (Some(r), Some(_)) = (&rotate, &graph) {
            return Err(self
                .err(r, "rotate does not apply to graph = N")
                .with_hint("a graph's launches keep the buffers they were captured with"));
        }
        let rotate = rotate.map_or(NumExpr::Int(1), Spanned::into_inner);
        let stop = match v.stop.as_ref().or(d.stop.as_ref()) {
            None => None,
            Some(raw) => {
                let r = raw.get_ref();
                if matches!(timer, TimerKind::Cupti | TimerKind::Profiler) {
                    return Err(self
                        .err(
                            raw,
                            "stop needs a timer that reads each sample as it is taken",
                        )
                        .with_hint("CUPTI's spans arrive after the cell's last launch"));
                }
                let rsd_pct = r.rsd_pct.unwrap_or(0.5);
                if rsd_pct <= 0.0 {
                    return Err(self.err(raw, "stop.rsd_pct must be positive"));
                }
                Some(StopRule {
                    rsd_pct,
                    min_samples: r.min_samples.unwrap_or(10),
                    min_gpu_ns: self
                        .duration(
                            r.min_gpu_time.as_ref(),
                            "min_gpu_time",
                            std::time::Duration::from_millis(500),
                        )?
                        .as_nanos() as f64,
                    timeout: self.duration(
                        r.timeout.as_ref(),
                        "timeout",
                        std::time::Duration::from_secs(15),
                    )?,
                })
            }
        };
        if let (Some(p), false) = (&v.processes, fresh_process) {
            return Err(self
                .err(p, "processes needs fresh_process = true")
                .with_hint("each fresh process contributes one first launch"));
        }
        Ok(Method {
            timer,
            warmup: warmup.map_or(NumExpr::Int(0), Spanned::into_inner),
            warmup_kernel: v
                .warmup_kernel
                .or(d.warmup_kernel)
                .unwrap_or(WarmupKernel::Same),
            samples: samples.map_or(
                NumExpr::Int(if stop.is_some() {
                    ADAPTIVE_MAX_SAMPLES
                } else {
                    100
                }),
                Spanned::into_inner,
            ),
            fresh_process,
            // A default `processes` applies to the variants that run in fresh processes.
            processes: if fresh_process {
                processes.map_or(NumExpr::Int(1), Spanned::into_inner)
            } else {
                NumExpr::Int(1)
            },
            cache,
            env,
            compile,
            timeout,
            graph: graph.is_some(),
            launches: graph.or(batch).map_or(NumExpr::Int(1), Spanned::into_inner),
            queue,
            cupti_collect: timer == TimerKind::Cupti
                || v.cupti_collect.or(d.cupti_collect).unwrap_or(false),
            order,
            rounds,
            stop,
            rotate,
        })
    }

    /// A duration written as text (`"30s"`, `"10 min"`), or `default` where none is given.
    fn duration(
        &self,
        text: Option<&Spanned<String>>,
        what: &str,
        default: std::time::Duration,
    ) -> Result<std::time::Duration, ConfigError> {
        let Some(t) = text else {
            return Ok(default);
        };
        humantime::parse_duration(t.get_ref()).map_err(|_| {
            self.err(t, format!("{what} `{}` is not a duration", t.get_ref()))
                .with_hint(format!(
                    "write a duration such as {what} = \"30s\" or \"10 min\""
                ))
        })
    }

    /// The variant's environment: its `env` over the defaults', checked, and its JIT cache.
    fn process_env(&self, v: &RawKnobs, d: &RawKnobs) -> Result<ProcessEnv, ConfigError> {
        let mut vars = std::collections::BTreeMap::new();
        for table in [&d.env, &v.env].into_iter().flatten() {
            for (name, value) in table {
                let text = match value.get_ref() {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(i) => i.to_string(),
                    _ => {
                        return Err(self
                            .err(value, format!("`{name}` must be a string or an integer"))
                            .with_hint(format!("write {name} = \"1\"")))
                    }
                };
                process::check_var(name, &text)
                    .map_err(|(msg, hint)| self.err(value, msg).with_hint(hint))?;
                vars.insert(name.clone(), text);
            }
        }
        let jit_cache = v.jit_cache.or(d.jit_cache).unwrap_or_default();
        process::check_cache_conflict(&vars, jit_cache).map_err(|m| {
            let at = v.env.as_ref().or(d.env.as_ref()).and_then(|t| {
                t.get("CUDA_CACHE_PATH")
                    .or_else(|| t.get("CUDA_CACHE_DISABLE"))
            });
            match at {
                Some(value) => self.err(value, m),
                None => self.nowhere(m),
            }
        })?;
        Ok(ProcessEnv {
            vars,
            jit_cache,
            profiler: None,
        })
    }

    fn compile(&self, v: &RawKnobs, d: &RawKnobs) -> Result<Compile, ConfigError> {
        let mode = v.compile.or(d.compile).unwrap_or(CompileMode::Cubin);
        let arch = v.arch.as_ref().or(d.arch.as_ref());
        Compile::parse(mode, arch.map(|a| a.get_ref().as_str())).map_err(|(msg, hint)| {
            match arch {
                Some(a) => self.err(a, msg),
                None => self.nowhere(msg),
            }
            .with_hint(hint)
        })
    }

    fn clocks(&self, raw: Option<&Spanned<toml::Value>>) -> Result<ClockPolicy, ConfigError> {
        let Some(raw) = raw else {
            return Ok(ClockPolicy::Observe);
        };
        let mhz = |v: &toml::Value| v.as_integer().and_then(|i| u32::try_from(i).ok());
        let policy = match raw.get_ref() {
            toml::Value::String(s) if s == "observe" => Some(ClockPolicy::Observe),
            toml::Value::Table(t) if t.len() == 1 => match t.iter().next() {
                Some((k, v)) if k == "expect" => mhz(v).map(ClockPolicy::Expect),
                Some((k, v)) if k == "lock" => mhz(v).map(ClockPolicy::Lock),
                _ => None,
            },
            _ => None,
        };
        policy.ok_or_else(|| {
            self.err(raw, "unknown clock policy")
                .with_hint("write clocks = \"observe\", clocks = { expect = <MHz> } or clocks = { lock = <MHz> }")
        })
    }

    fn report(
        &self,
        r: RawReport,
        variants: &[Variant],
        points: &[Point],
    ) -> Result<ReportSpec, ConfigError> {
        let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        let known_variant = |s: &Spanned<String>| {
            if names.contains(&s.get_ref().as_str()) {
                Ok(s.get_ref().clone())
            } else {
                Err(self
                    .err(s, format!("unknown variant `{}`", s.get_ref()))
                    .with_hint(format!("variants of this experiment: {}", names.join(", "))))
            }
        };
        let mut differences = Vec::new();
        if let Some(b) = &r.baseline {
            let b = known_variant(b)?;
            differences.extend(
                names
                    .iter()
                    .filter(|n| **n != b)
                    .map(|n| (n.to_string(), b.clone())),
            );
        }
        let pairs = |list: &[Spanned<Vec<Spanned<String>>>], what: &str, example: &str| {
            list.iter()
                .map(|pair| match pair.get_ref().as_slice() {
                    [v, b] => Ok((known_variant(v)?, known_variant(b)?)),
                    _ => Err(self
                        .err(pair, format!("each {what} is a pair of variants"))
                        .with_hint(format!("e.g. {example}"))),
                })
                .collect::<Result<Vec<_>, _>>()
        };
        differences.extend(pairs(
            &r.differences,
            "difference",
            "differences = [[\"sync\", \"events\"]]",
        )?);
        let bias = pairs(
            &r.bias,
            "bias",
            "bias = [[\"events\", \"cupti\"]] (method, reference)",
        )?;
        let labels: HashSet<String> = points.iter().map(point_label).collect();
        let mut published = Vec::new();
        for p in &r.published {
            let variant = known_variant(&p.variant)?;
            for key in p.values.get_ref().keys() {
                if !labels.contains(key) {
                    return Err(self
                        .err(
                            &p.values,
                            format!("published value for `{key}`, which is not a sweep point"),
                        )
                        .with_hint(format!(
                            "keys are sweep points as tables show them, e.g. \"{}\"",
                            points.first().map(point_label).unwrap_or_default()
                        )));
                }
            }
            if p.unit == Unit::Auto {
                return Err(self.err(
                    &p.variant,
                    "published values need a unit (ns, us, ms or s), not auto",
                ));
            }
            published.push(Published {
                variant,
                source: p.source.clone(),
                unit: p.unit,
                values: p
                    .values
                    .get_ref()
                    .iter()
                    .map(|(k, v)| (k.clone(), *v))
                    .collect(),
            });
        }
        if let Some(t) = &r.template {
            let path = self
                .path
                .parent()
                .unwrap_or(Path::new("."))
                .join(t.get_ref());
            if !path.is_file() {
                return Err(self
                    .err(t, format!("template {} does not exist", path.display()))
                    .with_hint("templates are relative to the experiment file, e.g. \"../templates/report.md.j2\""));
            }
        }
        Ok(ReportSpec {
            differences,
            bias,
            unit: r.unit.unwrap_or(Unit::Auto),
            template: r.template.map(Spanned::into_inner),
            floor: r.floor.unwrap_or(true),
            floor_samples: r.floor_samples.unwrap_or(1000),
            published,
        })
    }
}

/// A kernel's launch with every expression evaluated for one sweep point and device.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedLaunch {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    pub args: Vec<ResolvedArg>,
    pub check_dims: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ResolvedArg {
    Buffer {
        dtype: Dtype,
        len: usize,
        init: Init,
    },
    Scalar {
        dtype: Dtype,
        value: f64,
    },
}

impl Kernel {
    pub fn resolve(&self, point: &Point, facts: &DeviceFacts) -> Result<ResolvedLaunch, String> {
        let s = scope(point, facts);
        let dims = |exprs: &[NumExpr], what: &str| -> Result<(u32, u32, u32), String> {
            let mut d = [1u32; 3];
            for (slot, e) in d.iter_mut().zip(exprs) {
                let v = expr::eval_int(e, &s)?;
                *slot = u32::try_from(v)
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| format!("{what} dimension {v} is not a positive 32-bit size"))?;
            }
            Ok((d[0], d[1], d[2]))
        };
        let args = self
            .args
            .iter()
            .map(|a| match &a.kind {
                ArgKind::Buffer { dtype, len, init } => {
                    let n = expr::eval_int(len, &s)?;
                    let len = usize::try_from(n)
                        .map_err(|_| format!("buffer `{}` has negative length {n}", a.name))?;
                    Ok(ResolvedArg::Buffer {
                        dtype: *dtype,
                        len,
                        init: *init,
                    })
                }
                ArgKind::Scalar { dtype, value } => {
                    let v = expr::eval_number(value, &s)?;
                    if !matches!(dtype, Dtype::F32 | Dtype::F64) && v.fract() != 0.0 {
                        return Err(format!("integer scalar `{}` gets the fraction {v}", a.name));
                    }
                    Ok(ResolvedArg::Scalar {
                        dtype: *dtype,
                        value: v,
                    })
                }
            })
            .collect::<Result<Vec<_>, String>>()?;
        let check_dims = match &self.check {
            Some(c) => c
                .dims
                .iter()
                .map(|d| expr::eval_int(d, &s))
                .collect::<Result<_, _>>()?,
            None => vec![],
        };
        Ok(ResolvedLaunch {
            grid: dims(&self.grid, "grid")?,
            block: dims(&self.block, "block")?,
            shared_bytes: u32::try_from(expr::eval_int(&self.shared_bytes, &s)?)
                .map_err(|_| "shared_bytes out of range".to_string())?,
            args,
            check_dims,
        })
    }
}
