//! Kernels a worker compiles and loads, once per process: the experiment's (in each compile
//! mode a cell asks for) and the built-in ones.

use super::compiler::{Build, CompileCost, Compiler};
use super::timeline::Timeline;
use crate::cuda::{CudaError, Function, LazyFunction, LazyModule, Module};
use crate::experiment::knobs::cache::FlushMethod;
use crate::experiment::knobs::compile::Compile;
use crate::experiment::Kernel;
use crate::plan::Cell;
use std::any::Any;
use std::collections::hash_map::{Entry, HashMap};
use std::path::PathBuf;
use std::time::Instant;

/// The built-in empty kernel: warm-up with `warmup_kernel = "empty"` and the floor cells.
const EMPTY_SOURCE: &str = include_str!("../../kernels/empty.cu");
/// The built-in L2 flush kernels, for `flush_method = "kernel"` (write) and `"read"`.
const FLUSH_SOURCE: &str = include_str!("../../kernels/flush.cu");
/// The built-in clock probe, for `[telemetry] clock_probe = true`.
const PROBE_SOURCE: &str = include_str!("../../kernels/clock_probe.cu");
/// The built-in wait kernel, for `queue = "saturate"` and the audit launch's clock.
const SPIN_SOURCE: &str = include_str!("../../kernels/spin.cu");
/// The built-in comparison of an input with its copy, for the audit.
const AUDIT_SOURCE: &str = include_str!("../../kernels/audit.cu");

/// Which kernel: one of the experiment's as a cell compiles it, or a built-in (always a
/// CUBIN for the device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelKey {
    /// Kernel index, how it compiles, and the hash of its [`Build`].
    Experiment(usize, Compile, u64),
    /// An experiment kernel loaded as another's reference (`check_kernel`).
    Reference(usize, u64),
    Empty,
    Flush,
    FlushRead,
    Spin,
    Probe,
    FirstDifference,
}

impl KernelKey {
    pub fn of(cell: &Cell) -> KernelKey {
        cell.kernel.map_or(KernelKey::Empty, |k| {
            KernelKey::Experiment(k, cell.knobs.compile, Build::of(&cell.launch).hash())
        })
    }

    /// The kernel an L2 flush launches (none for a memset).
    pub fn flush(method: FlushMethod) -> Option<KernelKey> {
        match method {
            FlushMethod::Memset => None,
            FlushMethod::Kernel => Some(KernelKey::Flush),
            FlushMethod::Read => Some(KernelKey::FlushRead),
        }
    }

    /// How the phases of loading it are named: `module load`, `module load (empty kernel)`.
    fn phase(self, what: &str) -> String {
        match self {
            KernelKey::Experiment(..) => what.to_string(),
            KernelKey::Reference(..) => format!("{what} (reference kernel)"),
            KernelKey::Empty => format!("{what} (empty kernel)"),
            KernelKey::Flush => format!("{what} (flush kernel)"),
            KernelKey::FlushRead => format!("{what} (read flush kernel)"),
            KernelKey::Spin => format!("{what} (wait kernel)"),
            KernelKey::Probe => format!("{what} (clock probe)"),
            KernelKey::FirstDifference => format!("{what} (audit comparison)"),
        }
    }

    /// The experiment kernel it is (with how it compiles), or the built-in's source, file
    /// name for messages and entry (always a CUBIN for the device).
    fn source(self) -> Result<(usize, Compile), (&'static str, &'static str, &'static str)> {
        match self {
            KernelKey::Experiment(k, how, _) => Ok((k, how)),
            KernelKey::Reference(k, _) => Ok((k, Compile::DEFAULT)),
            KernelKey::Empty => Err((EMPTY_SOURCE, "kernels/empty.cu", "empty")),
            KernelKey::Flush => Err((FLUSH_SOURCE, "kernels/flush.cu", "flush_l2")),
            KernelKey::FlushRead => Err((FLUSH_SOURCE, "kernels/flush.cu", "flush_l2_read")),
            KernelKey::Spin => Err((SPIN_SOURCE, "kernels/spin.cu", "spin")),
            KernelKey::Probe => Err((PROBE_SOURCE, "kernels/clock_probe.cu", "clock_probe")),
            KernelKey::FirstDifference => {
                Err((AUDIT_SOURCE, "kernels/audit.cu", "first_difference"))
            }
        }
    }
}

/// A compiled and loaded kernel, kept for the life of the process.
pub struct Loaded {
    pub image: Vec<u8>,
    pub entry: String,
    pub func: Function,
    /// The kernel's steps in order: lowered name and function.
    pub steps: Vec<(String, Function)>,
}

/// What loading a kernel cost the run that loaded it first in its process.
pub struct LoadCost {
    /// None for a prebuilt module, or an image compiled before.
    pub compile: Option<CompileCost>,
    pub module_load_ms: f64,
}

/// The empty kernel compiled into a lazily loaded kernel's module, as the post's programs
/// have their warm-up kernel in the measured kernel's file.
const LAZY_EMPTY: &str = "runner_lazy_empty";

/// An experiment kernel compiled for lazy loading: its module (with the empty kernel) and
/// the measured kernel's lowered name.
pub struct Lazy {
    pub module: std::rc::Rc<LazyModule>,
    pub entry: String,
    /// Lowered names of the kernel's steps, looked up at their first launch too.
    steps: Vec<String>,
    has_empty: bool,
}

impl Lazy {
    pub fn kernel(&self) -> LazyFunction {
        LazyFunction {
            module: self.module.clone(),
            name: self.entry.clone(),
        }
    }

    /// The kernel's steps, from the same module.
    pub fn steps(&self) -> Vec<LazyFunction> {
        self.steps
            .iter()
            .map(|name| LazyFunction {
                module: self.module.clone(),
                name: name.clone(),
            })
            .collect()
    }

    /// The lowered names of the kernel and its steps, as CUPTI's records name them.
    pub fn entries(&self) -> Vec<String> {
        std::iter::once(self.entry.clone())
            .chain(self.steps.iter().cloned())
            .collect()
    }

    /// The empty kernel of the same module, where there is one.
    pub fn empty(&self) -> Option<LazyFunction> {
        self.has_empty.then(|| LazyFunction {
            module: self.module.clone(),
            name: LAZY_EMPTY.into(),
        })
    }
}

/// Kernels loaded so far in this process.
pub struct Kernels {
    defs: Vec<Kernel>,
    compiler: Compiler,
    loaded: HashMap<KernelKey, Loaded>,
    lazy: HashMap<(usize, Compile, u64), Lazy>,
    /// The modules of ended cells, kept loaded until the process ends: CUPTI names a
    /// kernel record by a cache its function handle keys, and a module loaded where an
    /// unloaded one was can reuse a handle and have its records named after the old kernel
    /// (a bf16 softmax's records came named as the f16 one of the cell before). A small
    /// module holds about 6 KiB of device memory; they are let go only where a load runs out
    /// of memory.
    retired: Vec<Box<dyn Any>>,
}

impl Kernels {
    /// `run_cache`: where the run's processes share compiled images.
    pub fn new(defs: Vec<Kernel>, capability: (i64, i64), run_cache: Option<PathBuf>) -> Self {
        Kernels {
            defs,
            compiler: Compiler::new(capability, run_cache),
            loaded: HashMap::new(),
            lazy: HashMap::new(),
            retired: Vec::new(),
        }
    }

    pub fn def(&self, index: usize) -> &Kernel {
        &self.defs[index]
    }

    /// The kernel, compiling and loading it on first use (with what that cost, also marked
    /// on `timeline`).
    pub fn get(
        &mut self,
        key: KernelKey,
        build: Build,
        timeline: &mut Timeline,
    ) -> Result<(&Loaded, Option<LoadCost>), CudaError> {
        let slot = match self.loaded.entry(key) {
            Entry::Occupied(o) => return Ok((o.into_mut(), None)),
            Entry::Vacant(v) => v,
        };
        let image = match key.source() {
            Ok((k, how)) => self.compiler.image_of(&self.defs[k], how, build, None)?,
            Err((source, file, entry)) => {
                self.compiler
                    .compile(source, file, &[entry], Compile::DEFAULT, &[])?
            }
        };
        if let Some(phase) = image.phase() {
            timeline.mark(&key.phase(phase));
        }
        let t = Instant::now();
        let module = match Module::load(&image.bytes) {
            Err(e) if e.is_out_of_memory() && !self.retired.is_empty() => {
                self.retired.clear();
                Module::load(&image.bytes)?
            }
            loaded => loaded?,
        };
        let module_load_ms = t.elapsed().as_secs_f64() * 1e3;
        timeline.mark(&key.phase("module load"));
        let func = module.function(&image.entries[0])?;
        let steps = image.entries[1..]
            .iter()
            .map(|e| Ok((e.clone(), module.function(e)?)))
            .collect::<Result<_, CudaError>>()?;
        timeline.mark(&key.phase("function lookup"));
        let cost = LoadCost {
            compile: image.compiled_now(),
            module_load_ms,
        };
        let mut entries = image.entries.into_iter();
        let loaded = slot.insert(Loaded {
            image: image.bytes,
            entry: entries.next().expect("the kernel's entry"),
            func,
            steps,
        });
        Ok((loaded, Some(cost)))
    }

    /// Experiment kernel `k` compiled (once) with the empty kernel beside it, its module
    /// left to load at its first launch; what compiling it cost where this call paid it. A
    /// prebuilt module has no empty kernel beside it.
    pub fn lazy(
        &mut self,
        k: usize,
        how: Compile,
        build: Build,
        timeline: &mut Timeline,
    ) -> Result<(&Lazy, Option<CompileCost>), CudaError> {
        let slot = match self.lazy.entry((k, how, build.hash())) {
            Entry::Occupied(o) => return Ok((o.into_mut(), None)),
            Entry::Vacant(v) => v,
        };
        let def = &self.defs[k];
        let empty = format!("\nextern \"C\" __global__ void {LAZY_EMPTY}() {{}}\n");
        let image = self.compiler.image_of(def, how, build, Some(&empty))?;
        if let Some(phase) = image.phase() {
            timeline.mark(phase);
        }
        let compiled = image.compiled_now();
        let mut entries = image.entries.into_iter();
        let lazy = slot.insert(Lazy {
            module: LazyModule::new(image.bytes),
            entry: entries.next().expect("the kernel's entry"),
            steps: entries.collect(),
            has_empty: def.module.is_none(),
        });
        Ok((lazy, compiled))
    }

    /// Retires the experiment's kernels: the next cell loads its own module, so that its
    /// device globals (a tile counter, a flag, a cached result) start as the source writes
    /// them and no cell inherits another's state. Their compiled images stay in memory;
    /// reference kernels and the built-ins stay in use.
    pub fn end_cell(&mut self) {
        let (cell, kept): (Vec<_>, Vec<_>) =
            (self.loaded.drain()).partition(|(key, _)| matches!(key, KernelKey::Experiment(..)));
        self.loaded = kept.into_iter().collect();
        let retired = cell.into_iter().map(|(_, l)| Box::new(l) as Box<dyn Any>);
        self.retired.extend(retired);
        let lazy = self.lazy.drain().map(|(_, l)| Box::new(l) as Box<dyn Any>);
        self.retired.extend(lazy);
    }

    /// The kernel's function, loading it on first use.
    pub fn function(
        &mut self,
        key: KernelKey,
        timeline: &mut Timeline,
    ) -> Result<Function, CudaError> {
        Ok(self.get(key, Build::default(), timeline)?.0.func.clone())
    }
}
