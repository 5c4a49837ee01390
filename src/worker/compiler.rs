//! Compiling a kernel for the device, once per run: an experiment kernel's build (its entry,
//! steps and options at a point) or a built-in, with NVRTC or from a prebuilt module, into
//! an image ready to load, with the program log of the compile.

use super::shared;
use crate::experiment::knobs::compile::{Compile, CompileMode};
use crate::experiment::{Kernel, LaunchSpec, ModuleKind};
use cuda::{nvrtc, CudaError};
use std::collections::HashMap;
use std::path::PathBuf;

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
    pub fn entry<'k>(&self, def: &'k Kernel) -> &'k str
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

/// A kernel image ready to load, with its entries' names in it (the kernel's, then its
/// steps').
#[derive(Clone)]
pub struct Image {
    pub bytes: Vec<u8>,
    pub entries: Vec<String>,
    /// The program log of the compile that made it: empty where none ran in this process
    /// (an image an earlier process compiled, a prebuilt module).
    pub log: String,
    made: Made,
}

impl Image {
    /// The timeline's name for making it, where making it took time.
    pub(super) fn phase(&self) -> Option<&'static str> {
        match self.made {
            Made::Compiled(_) => Some("NVRTC compile"),
            Made::Shared => Some("compiled image (from an earlier process)"),
            Made::Kept | Made::Prebuilt => None,
        }
    }

    /// What compiling it cost, where it was compiled for this call (not kept from an earlier
    /// one): the time, and NVRTC's warnings.
    pub(super) fn compiled_now(&self) -> Option<CompileCost> {
        match self.made {
            Made::Compiled(ms) => Some(CompileCost {
                ms,
                warnings: warnings(&self.log),
            }),
            Made::Shared | Made::Kept | Made::Prebuilt => None,
        }
    }
}

/// What compiling a kernel cost the cell that compiled it.
pub struct CompileCost {
    pub ms: f64,
    /// NVRTC's warnings, which a run keeps in the cell's record.
    pub warnings: Vec<String>,
}

/// The warnings of a program log, each once, in order: the compiler's (`k.cu(3): warning
/// #1105-D: #warning directive: ...`), NVRTC's own and ptxas's, each by its first line
/// (the source line and caret that follow one are left out).
pub fn warnings(log: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in log.lines().map(str::trim_end) {
        let warns = line.contains("): warning")
            || ["nvrtc: warning", "ptxas warning"]
                .iter()
                .any(|tool| line.starts_with(tool));
        if warns && !found.iter().any(|w| w == line) {
            found.push(line.to_string());
        }
    }
    found
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

/// Compiles for the device, once per run: an image one process compiled is read by the
/// run's later processes from the run's cache folder (NVRTC takes 20-140 ms a kernel,
/// paid again by every fresh process otherwise).
pub struct Compiler {
    capability: (i64, i64),
    run_cache: Option<PathBuf>,
    /// Images compiled (or read) in this process, by the hash of what made them: every
    /// cell loads its own module from them.
    kept: HashMap<[u8; 32], Image>,
    /// Options a CUBIN compiles with beyond the kernel's: ptxas's report of what each entry
    /// uses, for `plan --compile` (none for a run, which keeps its compile as it is).
    ptxas_report: Vec<String>,
}

impl Compiler {
    /// For a device of compute capability `capability`; `run_cache`: where the run's
    /// processes share compiled images.
    pub fn new(capability: (i64, i64), run_cache: Option<PathBuf>) -> Compiler {
        Compiler {
            capability,
            run_cache,
            kept: HashMap::new(),
            ptxas_report: Vec::new(),
        }
    }

    /// The same compiler, its CUBINs' logs holding ptxas's report of each entry's
    /// registers, spills, stack frame and shared memory.
    pub fn reporting_resources(self) -> Result<Compiler, CudaError> {
        Ok(Compiler {
            ptxas_report: nvrtc::ptxas_report()?,
            ..self
        })
    }

    pub(super) fn compile(
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
        let report = match how.mode {
            CompileMode::Cubin => &self.ptxas_report[..],
            CompileMode::Ptx => &[],
        };
        let options = &[options, report].concat();
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
                    log: c.log,
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
            log: String::new(),
            made: Made::Shared,
        })
    }

    /// An experiment kernel's image: its prebuilt module, or its source (with `extra` code
    /// appended) compiled as `how` says.
    pub fn image_of(
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
            log: String::new(),
            made: Made::Prebuilt,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logs_warnings_are_its_diagnostics_first_lines_each_once() {
        // NVRTC 12.9's log of a `#warning` met twice (a header included twice), compiled with
        // --ptxas-options=-v and a register limit ptxas raises; NVRTC's own warning as it
        // writes one for an old architecture.
        let log = "\
k.cu(1): warning #1105-D: #warning directive: this kernel is a test
  #warning this kernel is a test
   ^

k.cu(1): warning #1105-D: #warning directive: this kernel is a test
  #warning this kernel is a test
   ^

Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"

nvrtc: warning : Architectures prior to '<compute/sm>_75' are deprecated
ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24
ptxas info    : 0 bytes gmem
ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem";
        assert_eq!(
            warnings(log),
            [
                "k.cu(1): warning #1105-D: #warning directive: this kernel is a test",
                "nvrtc: warning : Architectures prior to '<compute/sm>_75' are deprecated",
                "ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound of 24",
            ]
        );
        assert!(warnings("ptxas info    : 0 bytes gmem").is_empty());
    }
}
