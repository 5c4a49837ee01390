//! NVRTC: CUDA C source -> CUBIN for a real architecture (loads with no JIT) or PTX for a
//! virtual one (the driver JIT-compiles it at load). The program is named after its file so
//! compiler messages carry the file's line numbers.

use crate::experiment::{Compile, CompileMode};
use cudarc::nvrtc::sys;
use std::ffi::{c_char, CStr, CString};
use std::time::Instant;

/// A compiled kernel image (a CUBIN, or NUL-terminated PTX), with the entry's lowered
/// (mangled) name.
pub struct Compiled {
    pub image: Vec<u8>,
    pub lowered_entry: String,
    pub compile_ms: f64,
}

fn check(what: &str, r: sys::nvrtcResult) -> Result<(), String> {
    if r == sys::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    let text = unsafe { CStr::from_ptr(sys::nvrtcGetErrorString(r)) }
        .to_string_lossy()
        .into_owned();
    Err(format!("{what}: {text}"))
}

pub fn nvrtc_version() -> Result<String, String> {
    if !crate::worker::gpu::nvrtc_present() {
        return Err("libnvrtc not found".into());
    }
    let (mut major, mut minor) = (0, 0);
    check("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok(format!("{major}.{minor}"))
}

/// Compiles `source` (named `file` in messages) as `how` says, for a device of compute
/// capability `cc` where `how` names no architecture.
pub fn compile(
    source: &str,
    file: &str,
    entry: &str,
    how: Compile,
    cc: (i64, i64),
) -> Result<Compiled, String> {
    if !crate::worker::gpu::nvrtc_present() {
        return Err("libnvrtc cannot be loaded: install the CUDA toolkit's NVRTC or put it on LD_LIBRARY_PATH".into());
    }
    let t = Instant::now();
    let src =
        CString::new(source).map_err(|_| format!("{file}: the source contains a NUL byte"))?;
    let name = CString::new(file).map_err(|_| format!("bad file name {file:?}"))?;
    let name_expr =
        CString::new(format!("&{entry}")).map_err(|_| format!("bad entry {entry:?}"))?;
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
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
    let result = (|| {
        check("nvrtcAddNameExpression", unsafe {
            sys::nvrtcAddNameExpression(prog, name_expr.as_ptr())
        })?;
        let opts: Vec<CString> = [
            format!("--gpu-architecture={}", how.nvrtc_arch(cc)),
            "--std=c++17".into(),
        ]
        .into_iter()
        .map(|o| CString::new(o).expect("options have no NUL"))
        .collect();
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let r = unsafe { sys::nvrtcCompileProgram(prog, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
        if r != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(format!(
                "NVRTC could not compile {file}:\n{}",
                program_log(prog)
            ));
        }
        let mut lowered: *const c_char = std::ptr::null();
        check(&format!("entry `{entry}` not found in {file}"), unsafe {
            sys::nvrtcGetLoweredName(prog, name_expr.as_ptr(), &mut lowered)
        })?;
        let lowered_entry = unsafe { CStr::from_ptr(lowered) }
            .to_string_lossy()
            .into_owned();
        // The PTX size counts the terminating NUL, which the driver's loader needs.
        type GetSize = unsafe fn(sys::nvrtcProgram, *mut usize) -> sys::nvrtcResult;
        type Get = unsafe fn(sys::nvrtcProgram, *mut c_char) -> sys::nvrtcResult;
        let (get_size, get, what): (GetSize, Get, &str) = match how.mode {
            CompileMode::Cubin => (sys::nvrtcGetCUBINSize, sys::nvrtcGetCUBIN, "CUBIN"),
            CompileMode::Ptx => (sys::nvrtcGetPTXSize, sys::nvrtcGetPTX, "PTX"),
        };
        let mut size = 0usize;
        check(&format!("nvrtcGet{what}Size"), unsafe {
            get_size(prog, &mut size)
        })?;
        let mut image = vec![0u8; size];
        check(&format!("nvrtcGet{what}"), unsafe {
            get(prog, image.as_mut_ptr() as *mut c_char)
        })?;
        Ok(Compiled {
            image,
            lowered_entry,
            compile_ms: t.elapsed().as_secs_f64() * 1e3,
        })
    })();
    unsafe { sys::nvrtcDestroyProgram(&mut prog) };
    result
}

fn program_log(prog: sys::nvrtcProgram) -> String {
    let mut size = 0usize;
    if unsafe { sys::nvrtcGetProgramLogSize(prog, &mut size) } != sys::nvrtcResult::NVRTC_SUCCESS {
        return "(no compiler log)".into();
    }
    let mut buf = vec![0u8; size.max(1)];
    unsafe { sys::nvrtcGetProgramLog(prog, buf.as_mut_ptr() as *mut c_char) };
    String::from_utf8_lossy(&buf)
        .trim_end_matches('\0')
        .trim()
        .to_string()
}
