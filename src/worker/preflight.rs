//! `runner plan --compile`: every build of a kernel the plan's cells use (and their reference
//! kernels') compiled with NVRTC as a run compiles it, with no GPU needed, and the arguments
//! the experiment gives each entry and step checked against the compiled parameters: read by
//! the driver where there is a GPU, else from the PTX NVRTC writes.

use super::assemble::{params_differ, sizes};
use super::compiler::{Build, Compiler};
use crate::cuda::{self, nvrtc, CudaError, Gpu, Module};
use crate::experiment::knobs::compile::{Compile, CompileMode};
use crate::experiment::{Experiment, Kernel, LaunchSpec, ModuleKind};
use crate::plan::{Plan, Role};
use crate::protocol::{capability, DeviceInfo};
use std::collections::HashSet;
use std::path::Path;

/// What compiling the plan found: an account for the terminal, and one message per build
/// that failed to compile or takes other arguments than the experiment gives.
pub struct Preflight {
    pub account: String,
    pub failures: Vec<String>,
}

/// Where the compiled kernels' parameters are read.
enum Params {
    /// The driver's, in a context on GPU 0 (current while this lives).
    Driver { _context: Gpu },
    /// The `.entry` declarations of PTX that NVRTC writes (no GPU here: why).
    Ptx(String),
}

/// Compiles every build the plan uses; an error where NVRTC cannot be loaded.
pub fn compile_plan(exp: &Experiment, plan: &Plan) -> Result<Preflight, CudaError> {
    if !nvrtc::present() {
        return Err(CudaError::Library("libnvrtc cannot be loaded, so nothing was compiled: install the CUDA toolkit's NVRTC or put it on LD_LIBRARY_PATH".into()));
    }
    let version = nvrtc::version()?;
    let gpu = match cuda::driver_present() {
        true => open_gpu().map_err(|e| format!("no GPU here: {e}")),
        false => Err("no CUDA driver here".to_string()),
    };
    let (params, capability, device) = match gpu {
        Ok((gpu, info)) => {
            let capability = capability(&info);
            (
                Params::Driver { _context: gpu },
                capability,
                format!("{} (GPU 0)", info.name),
            )
        }
        Err(why) => (
            Params::Ptx(why),
            (exp.facts.cc_major, exp.facts.cc_minor),
            exp.facts.describe(),
        ),
    };
    let mut compiler = Compiler::new(capability, None);
    let mut failures = Vec::new();
    let (mut compiled, mut kernels, mut unread) = (0, HashSet::new(), Vec::new());
    for (k, how, spec, at) in builds(exp, plan) {
        let def = &exp.kernels[k];
        let entry = match spec.entry.as_str() {
            "" => def.entry.as_str(),
            e => e,
        };
        let what = format!("kernel `{}` ({entry}{at})", def.name);
        let image = match compiler.image_of(def, how, Build::of(spec), None) {
            Ok(image) => image,
            Err(e) => {
                let shown = (exp.path.parent().unwrap_or(Path::new(".")))
                    .join(&def.source)
                    .display()
                    .to_string();
                let log = located(&e.to_string(), &def.source, &shown);
                failures.push(format!("{what}: {log}"));
                continue;
            }
        };
        compiled += usize::from(def.module.is_none());
        kernels.insert(k);
        let want = match &params {
            Params::Driver { .. } => {
                driver_params(&image.bytes, &image.entries).map_err(Unread::from)
            }
            Params::Ptx(_) => {
                let ptx = match (how.mode, &def.module) {
                    (CompileMode::Ptx, _) | (_, Some(_)) => Ok(image.bytes.clone()),
                    (CompileMode::Cubin, None) => {
                        (compiler.image_of(def, PTX, Build::of(spec), None))
                            .map(|i| i.bytes)
                            .map_err(Unread::from)
                    }
                };
                ptx.and_then(|ptx| ptx_entries(&ptx, &image.entries, def))
            }
        };
        let want = match want {
            Ok(want) => want,
            Err(why) => {
                unread.push(format!("{what}: {why}"));
                continue;
            }
        };
        let mut given = vec![(entry.to_string(), sizes(&spec.args, def.takes.as_deref()))];
        let steps = def.steps.iter().filter(|s| s.copy.is_none());
        let names = Build::of(spec).step_entries(def);
        given.extend(
            (steps.zip(names))
                .map(|(s, name)| (name.to_string(), sizes(&spec.args, Some(&s.args)))),
        );
        for ((name, given), want) in given.iter().zip(&want) {
            if let Some(m) = params_differ(want, given, name) {
                failures.push(format!("{what}: {m}"));
            }
        }
    }
    let checked = match &params {
        Params::Driver { .. } => format!("checked against each compiled kernel's parameters as the driver reads them on {device}"),
        Params::Ptx(why) => format!("checked against the parameters of the PTX NVRTC writes for each kernel ({why}; a run checks them again through the driver)"),
    };
    let mut account = format!(
        "compiled with NVRTC {version} for compute capability {}.{} ({device}): {compiled} build(s) of {} kernel(s), {} failed\narguments: {checked}\n",
        capability.0,
        capability.1,
        kernels.len(),
        failures.len()
    );
    for u in &unread {
        account += &format!("  not checked: {u}\n");
    }
    Ok(Preflight { account, failures })
}

/// PTX for the device's own virtual architecture: where NVRTC writes each entry's
/// parameters.
const PTX: Compile = Compile {
    mode: CompileMode::Ptx,
    arch: None,
};

/// A context on GPU 0 and its facts, where there is a driver.
fn open_gpu() -> Result<(Gpu, DeviceInfo), CudaError> {
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
            let key = (k, how, Build::of(spec).hash(), sizes(&spec.args, None));
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
#[derive(Debug)]
enum Unread {
    /// The driver could not load the image or an entry, or NVRTC could not write its PTX.
    Cuda(CudaError),
    /// A prebuilt CUBIN or fatbin, and no driver to read it.
    Prebuilt,
    /// The PTX declares no such entry.
    NoEntry(String),
}

impl From<CudaError> for Unread {
    fn from(e: CudaError) -> Self {
        Unread::Cuda(e)
    }
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::Cuda(e) => write!(f, "{e}"),
            Unread::Prebuilt => {
                f.write_str("a prebuilt CUBIN or fatbin's parameters need the driver to read")
            }
            Unread::NoEntry(e) => write!(f, "no `.entry {e}` in its PTX"),
        }
    }
}

impl std::error::Error for Unread {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Its message is the CUDA error's.
            Unread::Cuda(e) => e.source(),
            Unread::Prebuilt | Unread::NoEntry(_) => None,
        }
    }
}

/// The driver's parameter sizes of each entry (the kernel's, then its steps') of a loaded
/// image.
fn driver_params(image: &[u8], entries: &[String]) -> Result<Vec<Vec<usize>>, CudaError> {
    let module = Module::load(image)?;
    (entries.iter())
        .map(|e| module.function(e)?.param_sizes())
        .collect()
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
