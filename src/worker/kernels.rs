//! Kernels a worker compiles and loads, once per process: the experiment's (in each compile
//! mode a cell asks for) and the built-in ones.

use super::shared;
use super::timeline::Timeline;
use crate::cuda::{nvrtc, CudaError, Function, LazyFunction, LazyModule, Module};
use crate::experiment::knobs::cache::FlushMethod;
use crate::experiment::knobs::compile::{Compile, CompileMode};
use crate::experiment::{Kernel, LaunchSpec, ModuleKind};
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

/// What compiling an experiment kernel takes from its launch at a point: the entries of
/// the kernel and its steps (a template's arguments may come from the sweep) and the extra
/// NVRTC options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Build<'a> {
    entry: &'a str,
    steps: &'a [String],
    options: &'a [String],
}

impl<'a> Build<'a> {
    pub fn of(spec: &'a LaunchSpec) -> Self {
        Build {
            entry: &spec.entry,
            steps: &spec.step_entries,
            options: &spec.options,
        }
    }

    /// Tells compiled images apart: a define or a template argument may follow the sweep.
    pub fn hash(&self) -> u64 {
        // Each part ends in a NUL, so ["a", "b"] and ["ab"] differ; the steps' entries, where
        // the sweep sets them, after an empty part, so that an option never passes for one.
        let steps = (!self.steps.is_empty()).then_some("");
        let joined: String = std::iter::once(self.entry)
            .chain(self.options.iter().map(String::as_str))
            .chain(
                steps
                    .into_iter()
                    .chain(self.steps.iter().map(String::as_str)),
            )
            .map(|o| format!("{o}\0"))
            .collect();
        super::inputs::fnv1a(joined.as_bytes())
    }

    /// The entries of the kernel's steps to compile: this point's, else the steps' own.
    pub fn step_entries<'k>(&self, def: &'k Kernel) -> Vec<&'k str>
    where
        'a: 'k,
    {
        match self.steps.is_empty() {
            true => def.step_entries(),
            false => self.steps.iter().map(String::as_str).collect(),
        }
    }

    /// The entry to compile: this point's, else the kernel's own.
    fn entry<'k>(&self, def: &'k Kernel) -> &'k str
    where
        'a: 'k,
    {
        if self.entry.is_empty() {
            &def.entry
        } else {
            self.entry
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
    /// None for a prebuilt module.
    pub compile_ms: Option<f64>,
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
        if let Some(phase) = image.made.phase() {
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
            compile_ms: image.made.compile_ms(),
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
    /// left to load at its first launch; the compile time where this call paid it. A
    /// prebuilt module has no empty kernel beside it.
    pub fn lazy(
        &mut self,
        k: usize,
        how: Compile,
        build: Build,
        timeline: &mut Timeline,
    ) -> Result<(&Lazy, Option<f64>), CudaError> {
        let slot = match self.lazy.entry((k, how, build.hash())) {
            Entry::Occupied(o) => return Ok((o.into_mut(), None)),
            Entry::Vacant(v) => v,
        };
        let def = &self.defs[k];
        let empty = format!("\nextern \"C\" __global__ void {LAZY_EMPTY}() {{}}\n");
        let image = self.compiler.image_of(def, how, build, Some(&empty))?;
        if let Some(phase) = image.made.phase() {
            timeline.mark(phase);
        }
        let mut entries = image.entries.into_iter();
        let lazy = slot.insert(Lazy {
            module: LazyModule::new(image.bytes),
            entry: entries.next().expect("the kernel's entry"),
            steps: entries.collect(),
            has_empty: def.module.is_none(),
        });
        Ok((lazy, image.made.compile_ms()))
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

/// A kernel image ready to load, with its entries' names in it (the kernel's, then its
/// steps').
#[derive(Clone)]
pub(super) struct Image {
    pub(super) bytes: Vec<u8>,
    pub(super) entries: Vec<String>,
    made: Made,
}

/// Where an image came from.
#[derive(Clone, Copy)]
enum Made {
    /// NVRTC compiled it now, taking this many ms.
    Compiled(f64),
    /// An earlier process of the run compiled the same source with the same options.
    Shared,
    /// An earlier cell of this process compiled it (or read it from the run).
    Kept,
    /// A module built outside the runner.
    Prebuilt,
}

impl Made {
    fn phase(&self) -> Option<&'static str> {
        match self {
            Made::Compiled(_) => Some("NVRTC compile"),
            Made::Shared => Some("compiled image (from an earlier process)"),
            Made::Kept | Made::Prebuilt => None,
        }
    }

    fn compile_ms(&self) -> Option<f64> {
        match self {
            Made::Compiled(ms) => Some(*ms),
            _ => None,
        }
    }
}

/// Compiles for the device, once per run: an image one process compiled is read by the
/// run's later processes from the run's cache folder (NVRTC takes 20-140 ms a kernel,
/// paid again by every fresh process otherwise).
pub(super) struct Compiler {
    capability: (i64, i64),
    run_cache: Option<PathBuf>,
    /// Images compiled (or read) in this process, by the hash of what made them: every
    /// cell loads its own module from them.
    kept: HashMap<[u8; 32], Image>,
}

impl Compiler {
    /// For a device of compute capability `capability`; `run_cache`: where the run's
    /// processes share compiled images.
    pub(super) fn new(capability: (i64, i64), run_cache: Option<PathBuf>) -> Compiler {
        Compiler {
            capability,
            run_cache,
            kept: HashMap::new(),
        }
    }

    fn compile(
        &mut self,
        source: &str,
        file: &str,
        entries: &[&str],
        how: Compile,
        options: &[String],
    ) -> Result<Image, CudaError> {
        let (output, key) = match how.mode {
            CompileMode::Cubin => (nvrtc::Output::Cubin, "cubin"),
            CompileMode::Ptx => (nvrtc::Output::Ptx, "ptx"),
        };
        let arch = how.nvrtc_arch(self.capability);
        let (options_text, entries_text) = (options.join("\0"), entries.join("\0"));
        let parts: [&[u8]; 6] = [
            source.as_bytes(),
            file.as_bytes(),
            entries_text.as_bytes(),
            arch.as_bytes(),
            key.as_bytes(),
            options_text.as_bytes(),
        ];
        let key = shared::key(&parts);
        if let Some(kept) = self.kept.get(&key) {
            return Ok(Image {
                made: Made::Kept,
                ..kept.clone()
            });
        }
        let stored = shared::file(self.run_cache.as_deref(), &parts, "image");
        let image = match Self::read_stored(stored.as_deref()) {
            Some(image) => image,
            None => {
                let c = nvrtc::compile(source, file, entries, output, &arch, options)?;
                let record = [c.lowered.join("\n").as_bytes(), &[0], &c.image].concat();
                shared::write(stored.as_deref(), &record);
                Image {
                    bytes: c.image,
                    entries: c.lowered,
                    made: Made::Compiled(c.compile_ms),
                }
            }
        };
        self.kept.insert(key, image.clone());
        Ok(image)
    }

    /// An image an earlier process stored: the lowered entries (a line each), a NUL, and
    /// the image.
    fn read_stored(file: Option<&std::path::Path>) -> Option<Image> {
        let bytes = std::fs::read(file?).ok()?;
        let cut = bytes.iter().position(|b| *b == 0)?;
        Some(Image {
            entries: String::from_utf8_lossy(&bytes[..cut])
                .lines()
                .map(str::to_string)
                .collect(),
            bytes: bytes[cut + 1..].to_vec(),
            made: Made::Shared,
        })
    }

    /// An experiment kernel's image: its prebuilt module, or its source (with `extra` code
    /// appended) compiled as `how` says.
    pub(super) fn image_of(
        &mut self,
        def: &Kernel,
        how: Compile,
        build: Build,
        extra: Option<&str>,
    ) -> Result<Image, CudaError> {
        let mut entries = vec![build.entry(def)];
        entries.extend(build.step_entries(def));
        let Some(module) = &def.module else {
            let source = match extra {
                Some(extra) => format!("{}{extra}", def.source_text),
                None => def.source_text.clone(),
            };
            let mut options = build.options.to_vec();
            if !def.source_dir.is_empty() {
                options.push(format!("-I{}", def.source_dir));
            }
            return self.compile(&source, &def.source, &entries, how, &options);
        };
        let mut bytes = module.image.clone();
        // The driver reads PTX as a NUL-terminated string.
        if module.kind == ModuleKind::Ptx && bytes.last() != Some(&0) {
            bytes.push(0);
        }
        Ok(Image {
            bytes,
            entries: entries.iter().map(|e| e.to_string()).collect(),
            made: Made::Prebuilt,
        })
    }
}
