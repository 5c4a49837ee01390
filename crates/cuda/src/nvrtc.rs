//! NVRTC: CUDA C source -> CUBIN for a real architecture (loads with no JIT) or PTX for a
//! virtual one (the driver JIT-compiles it at load). The program is named after its file so
//! compiler messages carry the file's line numbers.

use super::error::CudaError;
use cudarc::nvrtc::sys;
use std::ffi::{c_char, CStr, CString};
use std::sync::OnceLock;
use std::time::Instant;

/// Every NVRTC function the runner calls. cudarc looks each up the first time it is called
/// and panics where the library lacks it, so a library is checked for all of them first.
const FUNCTIONS: [&str; 13] = [
    "nvrtcGetErrorString",
    "nvrtcVersion",
    "nvrtcCreateProgram",
    "nvrtcDestroyProgram",
    "nvrtcAddNameExpression",
    "nvrtcCompileProgram",
    "nvrtcGetLoweredName",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
];

/// What NVRTC emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Cubin,
    Ptx,
}

/// A compiled kernel image (a CUBIN, or NUL-terminated PTX), with the entries' lowered
/// (mangled) names, in the order asked for.
pub struct Compiled {
    pub image: Vec<u8>,
    pub lowered: Vec<String>,
    pub compile_ms: f64,
    /// The program log of the compile: its warnings, and ptxas's report where asked for
    /// ([`ptxas_report`]).
    pub log: String,
}

/// Whether libnvrtc loads and has every function the runner calls (found once, then
/// remembered); why not, with what to do, where it cannot be used.
pub fn usable() -> Result<(), CudaError> {
    static FOUND: OnceLock<Result<(), CudaError>> = OnceLock::new();
    FOUND.get_or_init(check_library).clone()
}

/// Loads libnvrtc as cudarc does and looks up every function the runner calls, calling none.
fn check_library() -> Result<(), CudaError> {
    // SAFETY: only tries to dlopen the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(CudaError::Library("libnvrtc cannot be loaded: install the CUDA toolkit's NVRTC or put it on LD_LIBRARY_PATH".into()));
    }
    // SAFETY: a library loads (above); cudarc opens the same one, first of the same names,
    // and keeps it for the process.
    let library = unsafe { sys::culib() };
    let missing = lacking(|name| {
        // SAFETY: looks the symbol up as a function pointer and never calls it.
        unsafe { library.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_ok()
    });
    if missing.is_empty() {
        return Ok(());
    }
    Err(CudaError::Library(format!(
        "{} lacks {} of the NVRTC functions the runner calls ({}): it is not CUDA's NVRTC, or one older than the runner needs\n  hint: put the `lib` folder of the CUDA toolkit's NVRTC first on LD_LIBRARY_PATH (e.g. /usr/local/cuda/lib64)",
        loaded_from().unwrap_or_else(|| "the libnvrtc found on LD_LIBRARY_PATH or the system's library path".into()),
        missing.len(),
        missing.join(", ")
    )))
}

/// The functions of [`FUNCTIONS`] that `has` says a library lacks.
fn lacking(has: impl Fn(&str) -> bool) -> Vec<&'static str> {
    FUNCTIONS.into_iter().filter(|name| !has(name)).collect()
}

/// The file libnvrtc was loaded from, as this process maps it.
fn loaded_from() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.find('/').map(|at| &line[at..]))
        .find(|path| {
            let name = path.rsplit('/').next().unwrap_or_default();
            name.starts_with("libnvrtc") && !name.starts_with("libnvrtc-builtins")
        })
        .map(str::to_string)
}

fn check(what: &str, r: sys::nvrtcResult) -> Result<(), CudaError> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: NVRTC returns a static NUL-terminated string for every result code.
    let text = unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(r)) }
        .to_string_lossy()
        .into_owned();
    Err(CudaError::Library(format!("{what}: {text}")))
}

pub fn version() -> Result<String, CudaError> {
    let (major, minor) = version_numbers()?;
    Ok(format!("{major}.{minor}"))
}

fn version_numbers() -> Result<(i32, i32), CudaError> {
    usable()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints through valid pointers.
    check("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

/// The options that have ptxas write what each entry of a CUBIN uses (registers, spills,
/// stack frame, shared memory) into the program log. NVRTC 12.9 and later may serve a
/// program from their cache, which runs no ptxas and so writes no report: they compile
/// without it (`--no-cache`, which earlier versions refuse).
pub fn ptxas_report() -> Result<Vec<String>, CudaError> {
    let mut options = vec!["--ptxas-options=-v".to_string()];
    if version_numbers()? >= (12, 9) {
        options.push("--no-cache".into());
    }
    Ok(options)
}

/// Compiles `source` (named `file` in messages) for `arch` (`sm_90`, `compute_90`), with
/// the given extra NVRTC options, keeping the kernels `entries` (C++ names, templates too).
pub fn compile(
    source: &str,
    file: &str,
    entries: &[&str],
    output: Output,
    arch: &str,
    options: &[String],
) -> Result<Compiled, CudaError> {
    usable()?;
    let bad = |what: &str| CudaError::Library(format!("{file}: {what} contains a NUL byte"));
    let t = Instant::now();
    let src = CString::new(source).map_err(|_| bad("the source"))?;
    let name = CString::new(file).map_err(|_| bad("the file name"))?;
    let name_exprs: Vec<CString> = entries
        .iter()
        .map(|e| CString::new(format!("&{e}")))
        .collect::<Result<_, _>>()
        .map_err(|_| bad("an entry"))?;
    let mut opts = vec![format!("--gpu-architecture={arch}")];
    // C++17 unless the experiment names its own standard.
    if !options
        .iter()
        .any(|o| o.starts_with("--std=") || o.starts_with("-std="))
    {
        opts.push("--std=c++17".into());
    }
    opts.extend(options.iter().cloned());
    // Last, so the experiment's own include directories win: the toolkit's headers
    // (`cuda_fp16.h`, `cuda_bf16.h`, CUB) as nvcc would find them.
    opts.extend(toolkit_include().map(|dir| format!("-I{}", dir.display())));
    let opts: Vec<CString> = opts
        .into_iter()
        .map(CString::new)
        .collect::<Result<_, _>>()
        .map_err(|_| bad("an option"))?;
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: the strings are NUL-terminated and outlive the call; no headers are passed.
    check("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })?;
    let result =
        build(prog, file, entries, &name_exprs, &opts, output).and_then(|(image, lowered)| {
            Ok(Compiled {
                image,
                lowered,
                compile_ms: t.elapsed().as_secs_f64() * 1e3,
                log: program_log(prog)?,
            })
        });
    // SAFETY: prog was created above and is destroyed once.
    let destroyed = check("nvrtcDestroyProgram", unsafe {
        sys::nvrtcDestroyProgram(&mut prog)
    });
    let compiled = result?;
    destroyed.map(|()| compiled)
}

/// Where a header the source includes was not found: where the toolkit's headers were
/// looked for, and how to point at them (NVRTC installed from pip finds none of its own).
fn header_hint(log: &str) -> String {
    if !log.contains("cannot open source file") {
        return String::new();
    }
    let looked = match toolkit_include() {
        Some(dir) => format!("the toolkit's headers were taken from {}", dir.display()),
        None => "no toolkit's headers were found".to_string(),
    };
    format!(
        "\nhint: a header was not found; {looked} ($CUDA_HOME/include, else $CUDA_PATH/include, else /usr/local/cuda/include, else pip's nvidia-cuda-runtime-cu12 beside an NVRTC from pip on LD_LIBRARY_PATH or in the active virtual or conda environment: the first that holds cuda_fp16.h): set CUDA_HOME to a CUDA toolkit, pip install nvidia-cuda-runtime-cu12, or add -I to the kernel's options"
    )
}

/// The CUDA toolkit's include directory: `$CUDA_HOME`, `$CUDA_PATH`, or /usr/local/cuda;
/// else the headers pip's `nvidia-cuda-runtime-cu12` installs ([`pip_includes`]), which an
/// NVRTC from pip (`nvidia-cuda-nvrtc-cu12`, no headers of its own) needs.
fn toolkit_include() -> Option<std::path::PathBuf> {
    let env = |name: &str| std::env::var_os(name).map(std::path::PathBuf::from);
    let library_path = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
    let environments = ["VIRTUAL_ENV", "CONDA_PREFIX"].map(env);
    (["CUDA_HOME", "CUDA_PATH"].iter())
        .filter_map(|n| env(n))
        .chain(std::iter::once("/usr/local/cuda".into()))
        .map(|root| root.join("include"))
        .chain(pip_includes(&library_path, environments.iter().flatten()))
        .find(|dir| dir.join("cuda_fp16.h").is_file())
}

/// Where pip puts `nvidia-cuda-runtime-cu12`'s headers, as CuPy looks for them: beside an
/// `nvidia/cuda_nvrtc/lib` folder on `library_path` (`nvidia/cuda_runtime/include`), and in
/// each environment's `lib/python3.*/site-packages/nvidia/cuda_runtime/include`.
fn pip_includes<'a>(
    library_path: &std::ffi::OsStr,
    environments: impl Iterator<Item = &'a std::path::PathBuf>,
) -> Vec<std::path::PathBuf> {
    let beside_nvrtc = std::env::split_paths(library_path)
        .filter(|dir| dir.ends_with("nvidia/cuda_nvrtc/lib"))
        .filter_map(|dir| Some(dir.parent()?.parent()?.join("cuda_runtime/include")));
    let in_environments = environments.flat_map(|root| {
        let pythons = std::fs::read_dir(root.join("lib")).into_iter().flatten();
        (pythons.flatten())
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path().join("site-packages/nvidia/cuda_runtime/include"))
            .collect::<Vec<_>>()
    });
    beside_nvrtc.chain(in_environments).collect()
}

/// Compiles the created program and reads its image and lowered entry names.
fn build(
    prog: sys::nvrtcProgram,
    file: &str,
    entries: &[&str],
    name_exprs: &[CString],
    opts: &[CString],
    output: Output,
) -> Result<(Vec<u8>, Vec<String>), CudaError> {
    for name_expr in name_exprs {
        // SAFETY: prog is live; the expression is NUL-terminated.
        check("nvrtcAddNameExpression", unsafe {
            sys::nvrtcAddNameExpression(prog, name_expr.as_ptr())
        })?;
    }
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: prog is live; the option pointers are valid for the call.
    let r = unsafe { sys::nvrtcCompileProgram(prog, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        let log = program_log(prog).unwrap_or_else(|e| format!("(no compiler log: {e})"));
        return Err(CudaError::Library(format!(
            "NVRTC could not compile {file}:\n{log}{}",
            header_hint(&log)
        )));
    }
    let mut lowered = Vec::with_capacity(entries.len());
    for (entry, name_expr) in entries.iter().zip(name_exprs) {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: prog compiled with this name expression; NVRTC owns the returned string.
        check(&format!("entry `{entry}` not found in {file}"), unsafe {
            sys::nvrtcGetLoweredName(prog, name_expr.as_ptr(), &mut name)
        })?;
        // SAFETY: the lowered name is NUL-terminated and lives as long as prog.
        lowered.push(
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned(),
        );
    }
    // The PTX size counts the terminating NUL, which the driver's loader needs.
    type GetSize = unsafe fn(sys::nvrtcProgram, *mut usize) -> sys::nvrtcResult;
    type Get = unsafe fn(sys::nvrtcProgram, *mut c_char) -> sys::nvrtcResult;
    let (get_size, get, what): (GetSize, Get, &str) = match output {
        Output::Cubin => (sys::nvrtcGetCUBINSize, sys::nvrtcGetCUBIN, "CUBIN"),
        Output::Ptx => (sys::nvrtcGetPTXSize, sys::nvrtcGetPTX, "PTX"),
    };
    let mut size = 0usize;
    // SAFETY: prog compiled; writes one size.
    check(&format!("nvrtcGet{what}Size"), unsafe {
        get_size(prog, &mut size)
    })?;
    let mut image = vec![0u8; size];
    // SAFETY: image holds the `size` bytes NVRTC said it would write.
    check(&format!("nvrtcGet{what}"), unsafe {
        get(prog, image.as_mut_ptr() as *mut c_char)
    })?;
    Ok((image, lowered))
}

fn program_log(prog: sys::nvrtcProgram) -> Result<String, CudaError> {
    let mut size = 0usize;
    // SAFETY: prog is live; writes one size.
    check("nvrtcGetProgramLogSize", unsafe {
        sys::nvrtcGetProgramLogSize(prog, &mut size)
    })?;
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: buf holds the log's size (its terminating NUL included).
    check("nvrtcGetProgramLog", unsafe {
        sys::nvrtcGetProgramLog(prog, buf.as_mut_ptr() as *mut c_char)
    })?;
    Ok(String::from_utf8_lossy(&buf)
        .trim_end_matches('\0')
        .trim()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pips_headers_are_found_beside_its_nvrtc_and_in_an_environment() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("venv/lib/python3.11/site-packages/nvidia");
        for p in ["cuda_runtime/include", "cuda_nvrtc/lib"] {
            std::fs::create_dir_all(site.join(p)).unwrap();
        }
        let nvrtc = site.join("cuda_nvrtc/lib");
        let path = std::env::join_paths(["/usr/lib".into(), nvrtc]).unwrap();
        let venv = dir.path().join("venv");
        let found = pip_includes(&path, [&venv].into_iter());
        let want = site.join("cuda_runtime/include");
        assert_eq!(found, [want.clone(), want]);
        // Nothing of pip's: nothing found.
        assert!(pip_includes(std::ffi::OsStr::new("/usr/lib"), std::iter::empty()).is_empty());
    }

    #[test]
    fn every_nvrtc_function_called_here_is_checked_before_any_is_called() {
        let types = ["nvrtcProgram", "nvrtcResult"];
        let text = include_str!("nvrtc.rs");
        let called: std::collections::BTreeSet<&str> = (text.split("sys::").skip(1))
            .map(|rest| {
                let end = rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(0);
                &rest[..end]
            })
            .filter(|name| name.starts_with("nvrtc") && !types.contains(name))
            .collect();
        let checked: std::collections::BTreeSet<&str> = FUNCTIONS.into_iter().collect();
        assert_eq!(called, checked);
        let lacks = lacking(|name| name == "nvrtcVersion");
        assert_eq!(lacks.len(), FUNCTIONS.len() - 1);
        assert!(!lacks.contains(&"nvrtcVersion") && lacks.contains(&"nvrtcGetPTX"));
    }

    #[test]
    fn a_missing_header_names_where_the_toolkit_was_looked_for() {
        let log = "k.cu(1): catastrophic error: cannot open source file \"mma.h\"";
        let hint = header_hint(log);
        assert!(hint.contains("CUDA_HOME") && hint.contains("-I"), "{hint}");
        assert_eq!(header_hint("k.cu(3): error: expected a \";\""), "");
    }
}
