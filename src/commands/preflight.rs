//! `runner plan --compile`: every build of a kernel the plan's cells use (and their reference
//! kernels') compiled with NVRTC as a run compiles it, with no GPU needed; the arguments the
//! experiment gives each entry and step checked against the compiled parameters (read by the
//! driver where there is a GPU, else from the PTX NVRTC writes); what each entry uses
//! (registers, spills, local and static shared memory, threads per block: see
//! [`super::resources`]); and NVRTC's warnings, which the compile would otherwise swallow.

use super::resources::{ptxas_entry, Resources, NEEDS_GPU};
use crate::experiment::knobs::compile::{Compile, CompileMode};
use crate::experiment::{Experiment, Kernel, LaunchSpec, ModuleKind};
use crate::plan::{Plan, Role};
use crate::worker::{self, Build, Compiler, Image};
use cuda::{self, nvrtc, Attributes, CudaError, Gpu, Module};
use std::collections::HashSet;
use std::path::Path;

/// What compiling the plan found: an account for the terminal, and one message per build
/// that failed to compile or takes other arguments than the experiment gives.
pub struct Preflight {
    pub account: String,
    pub failures: Vec<String>,
}

/// Where the compiled kernels' parameters and attributes are read.
enum Params {
    /// The driver's, in a context on GPU 0 (current while this lives).
    Driver { _context: Gpu },
    /// The `.entry` declarations of PTX that NVRTC writes (no GPU here: why).
    Ptx(String),
}

/// The device compiled for, and where its builds are read.
struct Target {
    params: Params,
    capability: (i64, i64),
    device: String,
}

impl Target {
    /// GPU 0 where there is one, else the experiment's assumed device.
    fn open(exp: &Experiment) -> Target {
        let gpu = match cuda::driver_present() {
            true => open_gpu().map_err(|e| format!("no GPU here: {e}")),
            false => Err("no CUDA driver here".to_string()),
        };
        match gpu {
            Ok((gpu, device)) => Target {
                params: Params::Driver { _context: gpu },
                capability: device.capability,
                device: format!("{} (GPU 0)", device.name),
            },
            Err(why) => Target {
                params: Params::Ptx(why),
                capability: (exp.facts.cc_major, exp.facts.cc_minor),
                device: exp.facts.describe(),
            },
        }
    }
}

/// What the builds checked so far found.
#[derive(Default)]
struct Found {
    failures: Vec<String>,
    /// Builds whose parameters could not be read, each with why.
    unread: Vec<String>,
    /// Each build's entries with what they use, and its warnings.
    builds: String,
    /// The warnings shown so far, each build's together, with the build that showed them.
    warned: Vec<(Vec<String>, String)>,
    compiled: usize,
    kernels: HashSet<usize>,
}

impl Found {
    /// Shows a build's warnings, or, where an earlier build showed the same ones (a source
    /// compiled for several points), names it.
    fn warn(&mut self, warnings: Vec<String>, what: &str) {
        if warnings.is_empty() {
            return;
        }
        match self.warned.iter().find(|(w, _)| *w == warnings) {
            Some((_, first)) => {
                self.builds += &format!("    NVRTC: the warnings of {first}, above\n");
            }
            None => {
                for w in &warnings {
                    self.builds += &format!("    NVRTC: {w}\n");
                }
                self.warned.push((warnings, what.to_string()));
            }
        }
    }
}

/// Compiles every build the plan uses; an error where NVRTC cannot be loaded.
pub fn compile_plan(exp: &Experiment, plan: &Plan) -> Result<Preflight, CudaError> {
    nvrtc::usable().map_err(|e| CudaError::Library(format!("nothing was compiled: {e}")))?;
    let version = nvrtc::version()?;
    let target = Target::open(exp);
    let mut compiler = Compiler::new(target.capability, None).reporting_resources()?;
    let mut found = Found::default();
    for (k, how, spec, at) in builds(exp, plan) {
        let def = &exp.kernels[k];
        let entry = Build::of(spec).entry(def);
        let what = format!("kernel `{}` ({entry}{at})", def.name);
        match compiler.image_of(def, how, Build::of(spec), None) {
            Ok(image) => {
                found.compiled += usize::from(def.module.is_none());
                found.kernels.insert(k);
                check_build(
                    exp,
                    &target,
                    &mut compiler,
                    (k, how, spec),
                    &image,
                    &what,
                    &mut found,
                );
            }
            Err(e) => {
                let log = located(&e.to_string(), &def.source, &shown_path(exp, def));
                found.failures.push(format!("{what}: {log}"));
            }
        }
    }
    Ok(Preflight {
        account: account(&version, &target, &found),
        failures: found.failures,
    })
}

/// The source's path as found from here, as a compile error or warning names it.
fn shown_path(exp: &Experiment, def: &Kernel) -> String {
    (exp.path.parent().unwrap_or(Path::new(".")))
        .join(&def.source)
        .display()
        .to_string()
}

/// Reads a compiled build (`what`): its parameters against the arguments the experiment
/// gives each entry, what each entry uses, and NVRTC's warnings.
fn check_build(
    exp: &Experiment,
    target: &Target,
    compiler: &mut Compiler,
    (k, how, spec): (usize, Compile, &LaunchSpec),
    image: &Image,
    what: &str,
    found: &mut Found,
) {
    let def = &exp.kernels[k];
    let names: Vec<&str> = std::iter::once(Build::of(spec).entry(def))
        .chain(Build::of(spec).step_entries(def))
        .collect();
    let (params, attributes) = match &target.params {
        Params::Driver { .. } => match driver_facts(&image.bytes, &image.entries) {
            Ok((params, attributes)) => (Ok(params), Ok(attributes)),
            Err(e) => (Err(Unread::from(e)), Err("the driver could not load it")),
        },
        Params::Ptx(_) => (
            ptx_params_of(compiler, (def, how, spec), image),
            Err(NEEDS_GPU),
        ),
    };
    let made = match (&def.module, how.mode) {
        (Some(m), _) => format!("a prebuilt {} module", m.kind.name()),
        (None, CompileMode::Cubin) => format!("a CUBIN for {}", how.nvrtc_arch(target.capability)),
        (None, CompileMode::Ptx) => format!("PTX for {}", how.nvrtc_arch(target.capability)),
    };
    found.builds += &format!("  {what}, {made}:\n");
    for (i, (name, lowered)) in names.iter().zip(&image.entries).enumerate() {
        let ptxas = match (&def.module, how.mode) {
            (Some(_), _) => Err("a module built outside the runner"),
            (None, CompileMode::Ptx) => Err("the driver compiles PTX at load"),
            (None, CompileMode::Cubin) => {
                ptxas_entry(&image.log, lowered).ok_or("not in NVRTC's log")
            }
        };
        let driver = attributes.as_ref().map(|a| &a[i]).map_err(|why| *why);
        let uses = Resources::of(driver, ptxas.as_ref().map_err(|why| *why)).text();
        found.builds += &format!("    {name}: {uses}\n");
    }
    found.warn(
        (worker::warnings(&image.log).iter())
            .map(|w| located(w, &def.source, &shown_path(exp, def)))
            .collect(),
        what,
    );
    let want = match params {
        Ok(want) => want,
        Err(why) => return found.unread.push(format!("{what}: {why}")),
    };
    let steps = def.steps.iter().filter(|s| s.copy.is_none());
    let given = std::iter::once(worker::sizes(&spec.args, def.takes.as_deref()))
        .chain(steps.map(|s| worker::sizes(&spec.args, Some(&s.args))));
    for ((name, given), want) in names.iter().zip(given).zip(&want) {
        if let Some(m) = worker::params_differ(want, &given, name) {
            found.failures.push(format!("{what}: {m}"));
        }
    }
}

/// The parameter sizes of each entry of a build as NVRTC's PTX declares them: the image
/// itself where it is PTX, else the build compiled to PTX too.
fn ptx_params_of(
    compiler: &mut Compiler,
    (def, how, spec): (&Kernel, Compile, &LaunchSpec),
    image: &Image,
) -> Result<Vec<Vec<usize>>, Unread> {
    let ptx = match (how.mode, &def.module) {
        (CompileMode::Ptx, _) | (_, Some(_)) => Ok(image.bytes.clone()),
        (CompileMode::Cubin, None) => (compiler.image_of(def, PTX, Build::of(spec), None))
            .map(|i| i.bytes)
            .map_err(Unread::from),
    };
    ptx.and_then(|ptx| ptx_entries(&ptx, &image.entries, def))
}

/// The account of what compiling the plan found, for the terminal.
fn account(version: &str, target: &Target, found: &Found) -> String {
    let device = &target.device;
    let (checked, read) = match &target.params {
        Params::Driver { .. } => (
            format!("checked against each compiled kernel's parameters as the driver reads them on {device}"),
            format!("what each entry uses, as the driver reads it from each loaded build on {device}, with the spills ptxas reports for each CUBIN NVRTC compiled; and NVRTC's warnings"),
        ),
        Params::Ptx(why) => (
            format!("checked against the parameters of the PTX NVRTC writes for each kernel ({why}; a run checks them again through the driver)"),
            format!("what each entry uses, as ptxas reports it for each CUBIN NVRTC compiled ({why}: what the driver reads needs a GPU); and NVRTC's warnings"),
        ),
    };
    let mut account = format!(
        "compiled with NVRTC {version} for compute capability {}.{} ({device}): {} build(s) of {} kernel(s), {} failed\narguments: {checked}\n",
        target.capability.0,
        target.capability.1,
        found.compiled,
        found.kernels.len(),
        found.failures.len()
    );
    for u in &found.unread {
        account += &format!("  not checked: {u}\n");
    }
    if !found.builds.is_empty() {
        account += &format!("resources: {read}\n{}", found.builds);
    }
    account
}

/// PTX for the device's own virtual architecture: where NVRTC writes each entry's
/// parameters.
const PTX: Compile = Compile {
    mode: CompileMode::Ptx,
    arch: None,
};

/// A context on GPU 0 and what the driver says of it, where there is a driver.
fn open_gpu() -> Result<(Gpu, cuda::Queried), CudaError> {
    Gpu::init_driver()?;
    let gpu = Gpu::open(0, &mut |_| {})?;
    Ok((gpu, cuda::query(0)?))
}

/// Each build once: the kernel, how it compiles, its launch (entry, options, arguments) at
/// the first point that asks for it, and that point named where the kernel has several.
fn builds<'p>(exp: &Experiment, plan: &'p Plan) -> Vec<(usize, Compile, &'p LaunchSpec, String)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let cells = plan.cells.iter().filter(|c| c.role == Role::Measure);
    for c in cells {
        let Some(k) = c.kernel else { continue };
        let reference = (exp.kernels[k].check_kernel.as_ref())
            .zip(c.reference_launch.as_ref())
            .map(|(kc, l)| (kc.kernel, Compile::DEFAULT, l));
        for (k, how, spec) in std::iter::once((k, c.knobs.compile, &c.launch)).chain(reference) {
            let def = &exp.kernels[k];
            let key = (
                k,
                how,
                Build::of(spec).hash(),
                worker::sizes(&spec.args, None),
            );
            if def.copy.is_some() || !seen.insert(key) {
                continue;
            }
            let at = match def.points.len() {
                1 => String::new(),
                _ => format!(", at {}", crate::experiment::point_label(&c.point)),
            };
            out.push((k, how, spec, at));
        }
    }
    out
}

/// NVRTC's log with each line of the program `file` (NVRTC writes `file(12): error: ...`)
/// at `shown:12:`, as compilers write it, the path as found from here.
fn located(log: &str, file: &str, shown: &str) -> String {
    let prefix = format!("{file}(");
    let lines = log.lines().map(|line| {
        let Some((line_no, rest)) = (line.strip_prefix(&prefix)).and_then(|r| r.split_once("): "))
        else {
            return line.to_string();
        };
        match line_no.parse::<u32>() {
            Ok(n) => format!("{shown}:{n}: {rest}"),
            Err(_) => line.to_string(),
        }
    });
    lines.collect::<Vec<_>>().join("\n")
}

/// Why a build's parameters could not be read (the build is then listed as not checked).
#[derive(Debug, thiserror::Error)]
enum Unread {
    /// The driver could not load the image or an entry, or NVRTC could not write its PTX:
    /// its message is the CUDA error's.
    #[error(transparent)]
    Cuda(#[from] CudaError),
    /// A prebuilt CUBIN or fatbin, and no driver to read it.
    #[error("a prebuilt CUBIN or fatbin's parameters need the driver to read")]
    Prebuilt,
    /// The PTX declares no such entry.
    #[error("no `.entry {0}` in its PTX")]
    NoEntry(String),
}

/// Each entry's parameter sizes, and each entry's attributes.
type DriverFacts = (Vec<Vec<usize>>, Vec<Attributes>);

/// The driver's parameter sizes and attributes of each entry (the kernel's, then its
/// steps') of a loaded image.
fn driver_facts(image: &[u8], entries: &[String]) -> Result<DriverFacts, CudaError> {
    let module = Module::load(image)?;
    let mut params = Vec::with_capacity(entries.len());
    let mut attributes = Vec::with_capacity(entries.len());
    for e in entries {
        let f = module.function(e)?;
        params.push(f.param_sizes()?);
        attributes.push(f.attributes()?);
    }
    Ok((params, attributes))
}

/// The parameter sizes of each entry in `ptx`; a prebuilt CUBIN or fatbin has none to read.
fn ptx_entries(ptx: &[u8], entries: &[String], def: &Kernel) -> Result<Vec<Vec<usize>>, Unread> {
    if def
        .module
        .as_ref()
        .is_some_and(|m| m.kind != ModuleKind::Ptx)
    {
        return Err(Unread::Prebuilt);
    }
    let text = String::from_utf8_lossy(ptx);
    (entries.iter())
        .map(|e| ptx_params(&text, e).ok_or_else(|| Unread::NoEntry(e.clone())))
        .collect()
}

/// The byte size of each parameter of `.entry name(...)` in PTX: `.param .u64 x`, `.param
/// .f32 x`, `.param .align 4 .b8 x[12]` (a struct by value); None where it is not there.
fn ptx_params(ptx: &str, name: &str) -> Option<Vec<usize>> {
    let decl = format!(".entry {name}");
    let mut from = 0;
    let list = loop {
        let at = from + ptx[from..].find(&decl)?;
        let rest = ptx[at + decl.len()..].trim_start();
        if let Some(list) = rest.strip_prefix('(') {
            break list;
        }
        from = at + decl.len();
    };
    let list = &list[..list.find(')')?];
    (list.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let words: Vec<&str> = p.split_whitespace().collect();
            let unit = words.iter().find_map(|w| match *w {
                ".u8" | ".s8" | ".b8" => Some(1),
                ".u16" | ".s16" | ".b16" | ".f16" => Some(2),
                ".u32" | ".s32" | ".b32" | ".f32" => Some(4),
                ".u64" | ".s64" | ".b64" | ".f64" => Some(8),
                _ => None,
            })?;
            let count = match words.last()?.split_once('[') {
                Some((_, n)) => n.strip_suffix(']')?.parse().ok()?,
                None => 1,
            };
            Some(unit * count)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_parameters_are_read_by_entry() {
        let ptx = "\
.version 8.4
.target sm_90
.address_size 64

.visible .entry reduce_block_ref(
\t.param .u64 reduce_block_ref_param_0
)
{
\tret;
}
.visible .entry reduce_block(
\t.param .u64 .ptr .align 1 reduce_block_param_0,
\t.param .u64 reduce_block_param_1,
\t.param .u64 reduce_block_param_2,
\t.param .u32 reduce_block_param_3,
\t.param .align 2 .b8 reduce_block_param_4[2],
\t.param .align 4 .b8 reduce_block_param_5[12]
)
{
\tret;
}
.visible .entry _Z5emptyv()
{
\tret;
}
";
        assert_eq!(
            ptx_params(ptx, "reduce_block"),
            Some(vec![8, 8, 8, 4, 2, 12])
        );
        assert_eq!(ptx_params(ptx, "reduce_block_ref"), Some(vec![8]));
        assert_eq!(ptx_params(ptx, "_Z5emptyv"), Some(vec![]));
        assert_eq!(ptx_params(ptx, "reduce"), None, "a name is matched whole");
        // nvcc's PTX of the repository's prebuilt saxpy: (float, float*, float*, u64).
        let saxpy = include_str!("../../kernels/prebuilt/saxpy.compute_90.ptx");
        assert_eq!(ptx_params(saxpy, "saxpy"), Some(vec![4, 8, 8, 8]));
        assert_eq!(ptx_params(saxpy, "saxpy_ref"), Some(vec![4, 8, 8, 8]));
    }

    #[test]
    fn nvrtc_log_lines_of_the_source_read_as_path_and_line() {
        let log = "NVRTC could not compile ../kernels/k.cu:\n../kernels/k.cu(12): error: identifier \"y\" is undefined\n      y[i] = x[i];\n      ^\n/usr/include/h.h(3): warning: unused\n1 error detected in the compilation of \"../kernels/k.cu\".";
        let shown = located(log, "../kernels/k.cu", "experiments/../kernels/k.cu");
        assert!(
            shown.contains(
                "\nexperiments/../kernels/k.cu:12: error: identifier \"y\" is undefined\n"
            ),
            "{shown}"
        );
        assert!(
            shown.contains("\n/usr/include/h.h(3): warning"),
            "another file's line is left"
        );
    }
}
