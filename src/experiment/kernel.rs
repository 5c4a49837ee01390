//! A kernel of the experiment: its source, entry and arguments as written, and its launch
//! at every sweep point ([`super::launch`]).

pub use super::launch::{
    evaluate, launch_shape, reset_memset, LaunchExprs, LaunchSpec, Part, Shape,
};

use super::arg::Arg;
use super::expr::NumExpr;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Kernel {
    pub name: String,
    /// The source path as written, relative to the experiment file.
    pub source: String,
    /// Empty where validation did not read the sources (rendering a stored run).
    pub source_text: String,
    pub entry: String,
    pub args: Vec<Arg>,
    pub check: Option<Check>,
    /// Checked against another kernel of the experiment on the same inputs.
    #[serde(default)]
    pub check_kernel: Option<KernelCheck>,
    /// Checked against a Python function of its inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_python: Option<PythonCheck>,
    /// `unchecked = true`: the user chose to time the kernel unchecked; every table says so.
    #[serde(default)]
    pub unchecked: bool,
    /// `expect = "caught"`: the kernel is wrong on purpose (a planted bug, a cheat), and
    /// every cell of it must end failed, suspect or impossible; one that passes fails the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expect_caught: bool,
    /// `timed = false`: a reference kernel, compiled and run only for the `check_kernel` of
    /// others; the plan gives it no cells.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub check_only: bool,
    /// The entry's parameters (indices into `args`) where it does not take all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub takes: Option<Vec<usize>>,
    /// Launches and copies beside the kernel's own in every timed region, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// A `[[copy]]`: the cell's operation is a copy from argument 1 into argument 0, not a
    /// kernel (`source` is empty, `entry` names the copy as CUPTI's records do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<CopyOp>,
    /// The source's folder, on NVRTC's include path so that `#include "common.cuh"` beside
    /// the kernel works as it does with nvcc; empty for a module.
    #[serde(default)]
    pub source_dir: String,
    /// A module built outside the runner, loaded as is instead of compiling `source_text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<Prebuilt>,
    /// The type of its declared FLOPs (`flops_type`), or the peak it declares for them
    /// (`peak`); None: f32. The peak they are compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops_type: Option<super::rates::FlopsType>,
    /// The kernel's sweep points: the experiment's, crossed with the kernel's own axes.
    #[serde(skip)]
    pub points: Vec<super::Point>,
    /// The variants it runs under, where it names them (`variants`); None: all.
    #[serde(skip)]
    pub only_variants: Option<Vec<String>>,
    /// Whether it is left out at each of its points (`skip`).
    #[serde(skip)]
    pub skipped: Vec<bool>,
    /// For each of its points, the experiment point it extends (the variants' knobs are
    /// read at the experiment's points).
    #[serde(skip)]
    pub base: Vec<usize>,
    /// The launch at each of its points.
    #[serde(skip)]
    pub launches: Vec<LaunchSpec>,
}

/// A module nvcc (or another compiler, such as Triton's) built: the driver loads a CUBIN
/// or fatbin as is and JIT-compiles PTX at load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prebuilt {
    pub kind: ModuleKind,
    /// Empty where validation did not read it (rendering a stored run).
    #[serde(default)]
    pub image: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleKind {
    Cubin,
    Ptx,
    Fatbin,
}

impl ModuleKind {
    /// The kind a file's extension names; None for CUDA C.
    pub fn of_path(path: &str) -> Option<ModuleKind> {
        match path.rsplit_once('.')?.1 {
            "cubin" => Some(ModuleKind::Cubin),
            "ptx" => Some(ModuleKind::Ptx),
            "fatbin" => Some(ModuleKind::Fatbin),
            _ => None,
        }
    }

    /// How `runner plan` names it.
    pub fn name(self) -> &'static str {
        match self {
            ModuleKind::Cubin => "CUBIN",
            ModuleKind::Ptx => "PTX",
            ModuleKind::Fatbin => "fatbin",
        }
    }
}

/// A launch beside the kernel's: another entry of its source or module, given some of the
/// kernel's arguments (indices into its `args`), or a copy between two of its buffers
/// (`args` = destination, source).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// Empty for a copy.
    pub entry: String,
    pub args: Vec<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<CopyOp>,
    /// Enqueued before the kernel's own launch rather than after it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub before: bool,
}

/// A copy's call: `cuMemcpy*Async` on the legacy stream, or with `sync` the blocking
/// `cuMemcpy*`, as `cudaMemcpy` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyOp {
    pub sync: bool,
}

/// Whether a source holds a function of `entry`'s name (templates' arguments aside), or a
/// module a symbol of exactly that name: what is checked before anything compiles.
pub fn holds_entry(source: &str, module: Option<&[u8]>, entry: &str) -> bool {
    match module {
        Some(image) => image
            .windows(entry.len().max(1))
            .any(|w| w == entry.as_bytes()),
        None => {
            let base = entry.split('<').next().unwrap_or(entry).trim();
            source
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == base)
        }
    }
}

impl Kernel {
    /// Whether the plan gives it a cell at its point `p` under variant `v`.
    pub fn runs_at(&self, p: usize, v: &str) -> bool {
        let variant =
            (self.only_variants.as_ref()).is_none_or(|names| names.iter().any(|n| n == v));
        variant && !self.skipped.get(p).copied().unwrap_or(false)
    }

    /// Its point that agrees with `point` on every parameter it has (a reference kernel
    /// without the checked kernel's own axes serves all their values); None where it has a
    /// parameter `point` lacks, which would leave the choice open.
    pub fn point_for(&self, point: &super::Point) -> Option<usize> {
        let names_within = self
            .points
            .first()
            .is_none_or(|q| q.iter().all(|(n, _)| point.iter().any(|(m, _)| m == n)));
        if !names_within {
            return None;
        }
        self.points
            .iter()
            .position(|q| q.iter().all(|kv| point.contains(kv)))
    }

    /// The entries of its kernel steps (not its copies).
    pub fn step_entries(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|s| s.copy.is_none())
            .map(|s| s.entry.as_str())
            .collect()
    }

    /// What its declared FLOPs count against: its `flops_type` or `peak`, else FP32.
    pub fn counted_as(&self) -> super::rates::FlopsType {
        self.flops_type.clone().unwrap_or_default()
    }

    /// Whether its timed region copies: a `[[copy]]`, or a kernel with copy steps.
    pub fn copies(&self) -> bool {
        self.copy.is_some() || self.steps.iter().any(|s| s.copy.is_some())
    }

    /// Whether one of its copies blocks the host (`sync`): a CUDA graph cannot capture it.
    pub fn copies_synchronously(&self) -> bool {
        let steps = self.steps.iter().map(|s| s.copy);
        std::iter::once(self.copy)
            .chain(steps)
            .any(|c| c.is_some_and(|c| c.sync))
    }

    /// Whether argument `i` is a buffer in host memory (a copy to or from it crosses the
    /// host link).
    pub fn on_host(&self, i: usize) -> bool {
        match &self.args[i].kind {
            super::ArgKind::Buffer { memory, .. } => memory.on_host(),
            super::ArgKind::Scalar { .. } => false,
        }
    }

    /// Whether the kernel may write argument `i`: an output, a scratch or reset buffer, what
    /// its check compares (a buffer updated in place), a copy's destination. Any other buffer it is
    /// given is an input, and must come back as it went in.
    pub fn writes(&self, i: usize) -> bool {
        let declared =
            matches!(&self.args[i].kind, super::ArgKind::Buffer { init, .. } if init.is_written());
        let checked = self.check.as_ref().is_some_and(|c| c.output == i)
            || (self.check_kernel.as_ref()).is_some_and(|c| c.outputs.contains(&i))
            || (self.check_python.as_ref()).is_some_and(|c| c.outputs.contains(&i));
        let copied_into = (self.copy.is_some() && i == 0)
            || (self.steps.iter()).any(|s| s.copy.is_some() && s.args.first() == Some(&i));
        declared || checked || copied_into
    }

    /// Whether the kernel updates argument `i` in place: it writes a buffer that holds data
    /// before the launch (one its check compares, or a copy's destination). A Python
    /// reference is given such a buffer as it was before the launch.
    pub fn updates_in_place(&self, i: usize) -> bool {
        self.writes(i)
            && matches!(&self.args[i].kind, super::ArgKind::Buffer { init, .. } if !init.is_written())
    }

    /// Whether its output is checked: against a CPU reference, a reference kernel or a
    /// Python function, and not unchecked by choice.
    pub fn is_checked(&self) -> bool {
        !self.unchecked
            && (self.check.is_some() || self.check_kernel.is_some() || self.check_python.is_some())
    }

    /// What its file holds: the source, or the prebuilt module's bytes.
    pub fn code(&self) -> &[u8] {
        match &self.module {
            Some(m) => &m.image,
            None => self.source_text.as_bytes(),
        }
    }
}

/// How a kernel's output is checked against a CPU reference before it is timed (the
/// relative error allowed at each point is its launch's `tolerances.tolerance`; None: 1e-4
/// for a float output, exact for an integer one).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub reference: String,
    /// Indices into the kernel's args.
    pub inputs: Vec<usize>,
    pub output: usize,
    pub dims: Vec<NumExpr>,
}

/// A check against a reference kernel, given the checked kernel's arguments by name: the
/// outputs both kernels write from the same inputs must agree within
/// `|a - b| <= atol + rtol * |b|` (the tolerances at each point are its launch's); where not
/// given, the tolerances of the output's type ([`super::Dtype::default_tolerances`]:
/// integers exactly).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelCheck {
    pub kernel: usize,
    /// For each of the reference's arguments, the checked kernel's of its name (None: the
    /// reference's own, a buffer it writes or a scalar).
    pub from: Vec<Option<usize>>,
    /// The checked kernel's arguments compared, each with the reference's of its name.
    pub outputs: Vec<usize>,
}

impl KernelCheck {
    /// The reference's argument that the checked kernel's argument `i` is given as.
    pub fn reference_arg(&self, i: usize) -> Option<usize> {
        self.from.iter().position(|f| *f == Some(i))
    }
}

/// A check against a Python function (`check_python`): given the kernel's inputs by name (its
/// buffers the kernel only reads, as NumPy arrays, or torch tensors with `torch`; its scalars
/// as numbers), it returns the outputs, each compared as a reference kernel's are (within
/// `|a - b| <= atol + rtol * |b|`, the launch's tolerances or the type's).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PythonCheck {
    /// The file as written, relative to the experiment file.
    pub source: String,
    /// The file resolved (absolute where the experiment's path is).
    pub path: String,
    pub function: String,
    /// The checked kernel's arguments the function returns, in its order.
    pub outputs: Vec<usize>,
    /// Torch tensors (on the CPU) instead of NumPy arrays.
    #[serde(default)]
    pub torch: bool,
    /// Torch tensors on the GPU, the runner's buffers shared with the interpreter (CUDA IPC):
    /// nothing crosses the host link, and the outputs are compared on the GPU.
    #[serde(default)]
    pub gpu: bool,
    /// The longest one call may take.
    pub timeout_s: f64,
    /// The interpreter (`python3` on the PATH unless given).
    pub python: String,
    /// The file's text, as the run folder keeps it; empty where validation did not read it.
    #[serde(skip)]
    pub text: String,
}

impl PythonCheck {
    /// `ref.py:rms_norm`, as plans and accounts name it.
    pub fn label(&self) -> String {
        format!("{}:{}", self.source, self.function)
    }
}

/// Reference checks the runner knows: name, number of inputs, dims it takes.
pub const REFERENCES: &[(&str, usize, &[&str])] =
    &[("matmul", 2, &["m", "k", "n"]), ("copy", 1, &[])];
