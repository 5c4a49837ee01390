//! Kernels a worker compiles and loads, once per process: the experiment's (in each compile
//! mode a cell asks for) and the built-in ones.

use super::timeline::Timeline;
use crate::cuda::{nvrtc, CudaError, Function, LazyFunction, LazyModule, Module};
use crate::experiment::knobs::cache::FlushMethod;
use crate::experiment::knobs::compile::{Compile, CompileMode};
use crate::experiment::Kernel;
use crate::plan::Cell;
use std::collections::hash_map::{Entry, HashMap};
use std::time::Instant;

/// The built-in empty kernel: warm-up with `warmup_kernel = "empty"` and the floor cells.
const EMPTY_SOURCE: &str = include_str!("../../kernels/empty.cu");
/// The built-in L2 flush kernels, for `flush_method = "kernel"` (write) and `"read"`.
const FLUSH_SOURCE: &str = include_str!("../../kernels/flush.cu");
/// The built-in clock probe, for `[telemetry] clock_probe = true`.
const PROBE_SOURCE: &str = include_str!("../../kernels/clock_probe.cu");
/// The built-in wait kernel, for `queue = "saturate"`.
const SPIN_SOURCE: &str = include_str!("../../kernels/spin.cu");

/// Which kernel: one of the experiment's as a cell compiles it, or a built-in (always a
/// CUBIN for the device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelKey {
    /// Kernel index, how it compiles, and a hash of its extra NVRTC options.
    Experiment(usize, Compile, u64),
    /// An experiment kernel loaded as another's reference (`check_kernel`).
    Reference(usize, u64),
    Empty,
    Flush,
    FlushRead,
    Spin,
    Probe,
}

impl KernelKey {
    pub fn of(cell: &Cell) -> KernelKey {
        cell.kernel.map_or(KernelKey::Empty, |k| {
            KernelKey::Experiment(k, cell.knobs.compile, options_hash(&cell.launch.options))
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
        }
    }

    /// Source, file name for messages, entry and how it is compiled.
    fn source(self, kernels: &[Kernel]) -> (&str, &str, &str, Compile) {
        let builtin = |s, f, e| (s, f, e, Compile::DEFAULT);
        match self {
            KernelKey::Experiment(k, how, _) => {
                let k = &kernels[k];
                (&k.source_text, &k.source, &k.entry, how)
            }
            KernelKey::Reference(k, _) => {
                let k = &kernels[k];
                (&k.source_text, &k.source, &k.entry, Compile::DEFAULT)
            }
            KernelKey::Empty => builtin(EMPTY_SOURCE, "kernels/empty.cu", "empty"),
            KernelKey::Flush => builtin(FLUSH_SOURCE, "kernels/flush.cu", "flush_l2"),
            KernelKey::FlushRead => builtin(FLUSH_SOURCE, "kernels/flush.cu", "flush_l2_read"),
            KernelKey::Spin => builtin(SPIN_SOURCE, "kernels/spin.cu", "spin"),
            KernelKey::Probe => builtin(PROBE_SOURCE, "kernels/clock_probe.cu", "clock_probe"),
        }
    }
}

/// Options tell compiled images apart: a define may change with the sweep.
pub fn options_hash(options: &[String]) -> u64 {
    // Each option ends in a NUL, so ["a", "b"] and ["ab"] differ.
    let joined: String = options.iter().map(|o| format!("{o}\0")).collect();
    super::inputs::fnv1a(joined.as_bytes())
}

/// A compiled and loaded kernel, kept for the life of the process.
pub struct Loaded {
    pub image: Vec<u8>,
    pub entry: String,
    pub func: Function,
}

/// What loading a kernel cost the run that loaded it first in its process.
pub struct LoadCost {
    pub compile_ms: f64,
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
}

impl Lazy {
    pub fn kernel(&self) -> LazyFunction {
        LazyFunction {
            module: self.module.clone(),
            name: self.entry.clone(),
        }
    }

    pub fn empty(&self) -> LazyFunction {
        LazyFunction {
            module: self.module.clone(),
            name: LAZY_EMPTY.into(),
        }
    }
}

/// Kernels loaded so far in this process.
pub struct Kernels {
    defs: Vec<Kernel>,
    capability: (i64, i64),
    loaded: HashMap<KernelKey, Loaded>,
    lazy: HashMap<(usize, Compile, u64), Lazy>,
}

impl Kernels {
    pub fn new(defs: Vec<Kernel>, capability: (i64, i64)) -> Self {
        Kernels {
            defs,
            capability,
            loaded: HashMap::new(),
            lazy: HashMap::new(),
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
        options: &[String],
        timeline: &mut Timeline,
    ) -> Result<(&Loaded, Option<LoadCost>), CudaError> {
        let slot = match self.loaded.entry(key) {
            Entry::Occupied(o) => return Ok((o.into_mut(), None)),
            Entry::Vacant(v) => v,
        };
        let (source, file, entry, how) = key.source(&self.defs);
        // Only the experiment's kernels take the experiment's options.
        let options = match key {
            KernelKey::Experiment(..) | KernelKey::Reference(..) => options,
            _ => &[],
        };
        let output = match how.mode {
            CompileMode::Cubin => nvrtc::Output::Cubin,
            CompileMode::Ptx => nvrtc::Output::Ptx,
        };
        let compiled = nvrtc::compile(
            source,
            file,
            entry,
            output,
            &how.nvrtc_arch(self.capability),
            options,
        )?;
        timeline.mark(&key.phase("NVRTC compile"));
        let t = Instant::now();
        let module = Module::load(&compiled.image)?;
        let module_load_ms = t.elapsed().as_secs_f64() * 1e3;
        timeline.mark(&key.phase("module load"));
        let func = module.function(&compiled.lowered_entry)?;
        timeline.mark(&key.phase("function lookup"));
        let cost = LoadCost {
            compile_ms: compiled.compile_ms,
            module_load_ms,
        };
        let loaded = slot.insert(Loaded {
            image: compiled.image,
            entry: compiled.lowered_entry,
            func,
        });
        Ok((loaded, Some(cost)))
    }

    /// Experiment kernel `k` compiled (once) with the empty kernel beside it, its module
    /// left to load at its first launch; the compile time where this call paid it.
    pub fn lazy(
        &mut self,
        k: usize,
        how: Compile,
        options: &[String],
        timeline: &mut Timeline,
    ) -> Result<(&Lazy, Option<f64>), CudaError> {
        let slot = match self.lazy.entry((k, how, options_hash(options))) {
            Entry::Occupied(o) => return Ok((o.into_mut(), None)),
            Entry::Vacant(v) => v,
        };
        let def = &self.defs[k];
        let source = format!(
            "{}\nextern \"C\" __global__ void {LAZY_EMPTY}() {{}}\n",
            def.source_text
        );
        let output = match how.mode {
            CompileMode::Cubin => nvrtc::Output::Cubin,
            CompileMode::Ptx => nvrtc::Output::Ptx,
        };
        let compiled = nvrtc::compile(
            &source,
            &def.source,
            &def.entry,
            output,
            &how.nvrtc_arch(self.capability),
            options,
        )?;
        timeline.mark("NVRTC compile");
        let lazy = slot.insert(Lazy {
            module: LazyModule::new(compiled.image),
            entry: compiled.lowered_entry,
        });
        Ok((lazy, Some(compiled.compile_ms)))
    }

    /// The kernel's function, loading it on first use.
    pub fn function(
        &mut self,
        key: KernelKey,
        timeline: &mut Timeline,
    ) -> Result<Function, CudaError> {
        Ok(self.get(key, &[], timeline)?.0.func.clone())
    }
}
