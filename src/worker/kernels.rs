//! Kernels a worker compiles and loads, once per process: the experiment's (in each compile
//! mode a cell asks for) and the built-in ones.

use super::compiler::{Build, CompileCost, Compiler};
use super::timeline::Timeline;
use crate::experiment::knobs::cache::FlushMethod;
use crate::experiment::knobs::compile::Compile;
use crate::experiment::Kernel;
use crate::method::equal::{self, Comparison};
use crate::plan::Cell;
use cuda::{CudaError, DeviceBuffer, Function, LazyFunction, LazyModule, Module};
use std::any::Any;
use std::collections::hash_map::{Entry, HashMap};
use std::path::PathBuf;
use std::time::Instant;

/// The runner's own kernels, compiled as one program once per process (NVRTC's 40-60 ms
/// fixed cost a compile, paid once, not once per kernel), each file marked by a `#line`
/// so that a message names it:
/// - `empty.cu`: warm-up with `warmup_kernel = "empty"`, the floor cells;
/// - `flush.cu`: the L2 flush kernels, for `flush_method = "kernel"` (write) and `"read"`;
/// - `clock_probe.cu`: for `[telemetry] clock_probe = true`;
/// - `spin.cu`: the wait kernels, for `queue = "saturate"` (one the host releases, one of a
///   set length), the audit launch's clock and a pause's hold;
/// - `audit.cu`: the audit's draws on the GPU, the float64 matmul reference at a sample of
///   elements, and the comparison of two buffers.
const BUILTIN_SOURCE: &str = concat!(
    "#line 1 \"kernels/empty.cu\"\n",
    include_str!("../../kernels/empty.cu"),
    "\n#line 1 \"kernels/flush.cu\"\n",
    include_str!("../../kernels/flush.cu"),
    "\n#line 1 \"kernels/clock_probe.cu\"\n",
    include_str!("../../kernels/clock_probe.cu"),
    "\n#line 1 \"kernels/spin.cu\"\n",
    include_str!("../../kernels/spin.cu"),
    "\n#line 1 \"kernels/audit.cu\"\n",
    include_str!("../../kernels/audit.cu"),
);
/// The built-in program's entries (each `extern "C"`: its name is its lowered name).
const BUILTIN_ENTRIES: [&str; 12] = [
    "empty",
    "flush_l2",
    "flush_l2_read",
    "clock_probe",
    "spin",
    "wait_for_host",
    "first_difference",
    "out_of_tolerance",
    "audit_draw",
    "audit_hold",
    "audit_matmul_cells",
    "checksum",
];

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
    /// The wait kernel the host releases once a timed region is enqueued.
    Release,
    Probe,
    FirstDifference,
    OutOfTolerance,
    AuditDraw,
    AuditHold,
    AuditMatmul,
    Checksum,
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
            KernelKey::Release => format!("{what} (wait kernel the host releases)"),
            KernelKey::Probe => format!("{what} (clock probe)"),
            KernelKey::FirstDifference => format!("{what} (audit comparison)"),
            KernelKey::OutOfTolerance => format!("{what} (check comparison)"),
            KernelKey::AuditDraw => format!("{what} (audit draw)"),
            KernelKey::AuditHold => format!("{what} (audit pause's hold)"),
            KernelKey::AuditMatmul => format!("{what} (audit matmul reference)"),
            KernelKey::Checksum => format!("{what} (kept inputs' checksum)"),
        }
    }

    /// The experiment kernel it is (with how it compiles), or the built-in's entry in
    /// [`BUILTIN_SOURCE`] (always a CUBIN for the device).
    fn source(self) -> Result<(usize, Compile), &'static str> {
        match self {
            KernelKey::Experiment(k, how, _) => Ok((k, how)),
            KernelKey::Reference(k, _) => Ok((k, Compile::DEFAULT)),
            KernelKey::Empty => Err("empty"),
            KernelKey::Flush => Err("flush_l2"),
            KernelKey::FlushRead => Err("flush_l2_read"),
            KernelKey::Spin => Err("spin"),
            KernelKey::Release => Err("wait_for_host"),
            KernelKey::Probe => Err("clock_probe"),
            KernelKey::FirstDifference => Err("first_difference"),
            KernelKey::OutOfTolerance => Err("out_of_tolerance"),
            KernelKey::AuditDraw => Err("audit_draw"),
            KernelKey::AuditHold => Err("audit_hold"),
            KernelKey::AuditMatmul => Err("audit_matmul_cells"),
            KernelKey::Checksum => Err("checksum"),
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
    /// The words the built-in comparisons write what they found into (`method::equal`),
    /// kept for the process: an allocation and its free took 61 µs on an H200, more than
    /// the compare of a few MB it served.
    words: Option<DeviceBuffer>,
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
            words: None,
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
        let (image, entry) = match key.source() {
            Ok((k, how)) => {
                let image = self.compiler.image_of(&self.defs[k], how, build, None)?;
                let entry = image.entries[0].clone();
                (image, entry)
            }
            Err(entry) => {
                let file = "kernels (the runner's own)";
                let image = (self.compiler).compile(
                    BUILTIN_SOURCE,
                    file,
                    &BUILTIN_ENTRIES,
                    Compile::DEFAULT,
                    &[],
                )?;
                (image, entry.to_string())
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
        let func = module.function(&entry)?;
        // A built-in's program holds the other built-ins, not steps.
        let steps = match key.source() {
            Ok(_) => (image.entries[1..].iter())
                .map(|e| Ok((e.clone(), module.function(e)?)))
                .collect::<Result<_, CudaError>>()?,
            Err(_) => Vec::new(),
        };
        timeline.mark(&key.phase("function lookup"));
        let cost = LoadCost {
            compile: image.compiled_now(),
            module_load_ms,
        };
        let loaded = slot.insert(Loaded {
            image: image.bytes,
            entry,
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

    /// A built-in comparison's function with the words it writes what it found into.
    pub fn comparison(
        &mut self,
        key: KernelKey,
        timeline: &mut Timeline,
    ) -> Result<Comparison<'_>, CudaError> {
        let func = self.function(key, timeline)?;
        if self.words.is_none() {
            self.words = Some(DeviceBuffer::alloc(equal::WORDS)?);
        }
        let words = self.words.as_ref().expect("allocated above");
        Ok(Comparison { func, words })
    }
}
