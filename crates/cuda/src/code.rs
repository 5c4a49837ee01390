//! Kernel code: modules loaded into the context (a prepared launch's), libraries whose
//! kernels load at their first launch (a lazy one's, as the CUDA runtime loads a program's
//! kernels), and the functions a [`super::Launch`] launches.

use super::error::{Check, CudaError};
use cudarc::driver::{result, sys};
use std::cell::RefCell;
use std::ffi::{c_void, CString};
use std::rc::Rc;

/// A loaded module, unloaded when its last function is dropped.
struct ModuleHandle(sys::CUmodule);

impl Drop for ModuleHandle {
    fn drop(&mut self) {
        // SAFETY: the module was loaded once and no function of it outlives this handle.
        let _ = unsafe { result::module::unload(self.0) };
    }
}

/// A loaded library (context-independent code), unloaded when its last kernel is dropped.
struct LibraryHandle(sys::CUlibrary);

impl Drop for LibraryHandle {
    fn drop(&mut self) {
        // SAFETY: the library was loaded once and no kernel of it outlives this handle.
        let _ = unsafe { sys::cuLibraryUnload(self.0) };
    }
}

pub struct Module(Rc<ModuleHandle>);

impl Module {
    /// Loads a CUBIN, a fatbin or a NUL-terminated PTX image (PTX is JIT-compiled here).
    pub fn load(image: &[u8]) -> Result<Module, CudaError> {
        not_empty(image)?;
        // SAFETY: the image is a complete CUBIN, fatbin or NUL-terminated PTX that the
        // driver reads during the call only.
        let m = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
            .during("cuModuleLoadData")?;
        Ok(Module(Rc::new(ModuleHandle(m))))
    }

    pub fn function(&self, name: &str) -> Result<Function, CudaError> {
        let c = kernel_name(name)?;
        // SAFETY: the module is loaded; the name is NUL-terminated.
        let func = unsafe { result::module::get_function(self.0 .0, c) }
            .during(&format!("cuModuleGetFunction({name})"))?;
        Ok(Function {
            handle: Handle::Module(func),
            _code: self.0.clone(),
        })
    }
}

/// The driver reads an image through a bare pointer: an empty one is refused first.
fn not_empty(image: &[u8]) -> Result<(), CudaError> {
    if image.is_empty() {
        return Err(CudaError::Library("an empty module image".into()));
    }
    Ok(())
}

fn kernel_name(name: &str) -> Result<CString, CudaError> {
    CString::new(name).map_err(|_| CudaError::Library(format!("bad kernel name {name:?}")))
}

/// How the driver names a kernel.
#[derive(Clone, Copy)]
enum Handle {
    /// A function of a module loaded into the context.
    Module(sys::CUfunction),
    /// A kernel of a library: launched as a function (the driver takes the handle where it
    /// takes a `CUfunction`), it loads into the context at its first launch.
    Library(sys::CUkernel),
}

/// A kernel of a loaded module or library.
#[derive(Clone)]
pub struct Function {
    handle: Handle,
    /// Its module or library, kept loaded for as long as the function lives.
    _code: Rc<dyn std::any::Any>,
}

impl Function {
    /// The handle `cuLaunchKernel` takes.
    pub(super) fn handle(&self) -> sys::CUfunction {
        match self.handle {
            Handle::Module(func) => func,
            Handle::Library(kernel) => kernel as sys::CUfunction,
        }
    }

    /// The byte size of each of the kernel's parameters, as the driver knows them.
    pub fn param_sizes(&self) -> Result<Vec<usize>, CudaError> {
        let mut sizes = Vec::new();
        // A kernel takes at most 4 KiB of parameters: far fewer than this many.
        while sizes.len() < 4096 {
            let (mut offset, mut size) = (0usize, 0usize);
            let i = sizes.len();
            // SAFETY: the function or kernel is live; the call writes two sizes through
            // valid pointers and fails (INVALID_VALUE) past the last parameter.
            let r = unsafe {
                match self.handle {
                    Handle::Module(f) => sys::cuFuncGetParamInfo(f, i, &mut offset, &mut size),
                    Handle::Library(k) => sys::cuKernelGetParamInfo(k, i, &mut offset, &mut size),
                }
            };
            match r {
                sys::CUresult::CUDA_SUCCESS => sizes.push(size),
                sys::CUresult::CUDA_ERROR_INVALID_VALUE => break,
                other => {
                    let call = match self.handle {
                        Handle::Module(_) => "cuFuncGetParamInfo",
                        Handle::Library(_) => "cuKernelGetParamInfo",
                    };
                    return Err(CudaError::Driver {
                        call: call.into(),
                        code: other,
                    });
                }
            }
        }
        Ok(sizes)
    }

    /// Loads a library's kernel into the current context now (JIT-compiling PTX), rather
    /// than at its first launch; a module's function is loaded already.
    pub fn load_into_context(&self) -> Result<(), CudaError> {
        self.in_context().map(|_| ())
    }

    /// The function as loaded into the current context.
    fn in_context(&self) -> Result<sys::CUfunction, CudaError> {
        match self.handle {
            Handle::Module(func) => Ok(func),
            Handle::Library(kernel) => {
                let mut func = std::ptr::null_mut();
                // SAFETY: the kernel is live; the call writes one handle.
                unsafe { sys::cuKernelGetFunction(&mut func, kernel) }
                    .result()
                    .during("cuKernelGetFunction")?;
                Ok(func)
            }
        }
    }

    /// What the compiled kernel uses and allows, as the driver reads them (a library's
    /// kernel is loaded into the context for it).
    pub fn attributes(&self) -> Result<Attributes, CudaError> {
        use sys::CUfunction_attribute as A;
        let func = self.in_context()?;
        let read = |attribute: A, name: &str| {
            // SAFETY: func is a live function of the current context; the call writes one
            // int.
            let v = unsafe { result::function::get_function_attribute(func, attribute) }
                .during(&format!("cuFuncGetAttribute({name})"))?;
            u32::try_from(v).map_err(|_| {
                CudaError::Library(format!("cuFuncGetAttribute({name}) gave {v}, not a count"))
            })
        };
        Ok(Attributes {
            registers: read(A::CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS")?,
            local_bytes: read(A::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES")?,
            static_shared_bytes: read(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES")?,
            max_threads_per_block: read(
                A::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                "MAX_THREADS_PER_BLOCK",
            )?,
        })
    }

    /// Lets launches use more than the default 48 KiB of dynamic shared memory (a library's
    /// kernel is loaded into the context for it).
    pub fn allow_shared_bytes(&self, bytes: u32) -> Result<(), CudaError> {
        let func = self.in_context()?;
        // SAFETY: func is a live function of the current context; the attribute takes a
        // byte count.
        unsafe {
            result::function::set_function_attribute(
                func,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        }
        .during("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
    }
}

/// What a compiled kernel uses and allows, from the driver (`cuFuncGetAttribute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attributes {
    /// Registers per thread.
    pub registers: u32,
    /// Local memory per thread: the stack frame, spilled registers included.
    pub local_bytes: u32,
    /// Shared memory the kernel declares (`__shared__` arrays), beside the launch's dynamic
    /// shared memory.
    pub static_shared_bytes: u32,
    /// The most threads a block of it may have, given its registers and launch bounds.
    pub max_threads_per_block: u32,
}

/// Gives the process's free heap memory back to the system, as a program that has just
/// started has none: the driver's own allocations at a library's first load and launch then
/// fault fresh pages in, as a runtime-API program's do (about 20 page faults and 20-25 µs
/// on an H100, benches/first-launch/h100-2026-11-25.txt), where a worker that has run for
/// a while would reuse free pages and read that much less.
pub fn release_free_heap() {
    // SAFETY: malloc_trim only returns free memory of the allocator's arenas to the system;
    // it moves and frees no live allocation.
    unsafe { libc::malloc_trim(0) };
}

/// A kernel image whose loading waits for the first launch of one of its kernels, as a
/// runtime-API program's does under lazy loading: the CUDA runtime loads a program's
/// image as a library (`cuLibraryLoadData`) at its first kernel launch, looks the kernel up
/// (`cuLibraryGetKernel`) and launches the library's kernel, which loads it into the
/// context (benches/first-launch traces a runtime program's calls).
pub struct LazyModule {
    image: Vec<u8>,
    library: RefCell<Option<Rc<LibraryHandle>>>,
}

impl LazyModule {
    pub fn new(image: Vec<u8>) -> Rc<LazyModule> {
        Rc::new(LazyModule {
            image,
            library: RefCell::new(None),
        })
    }

    /// The kernel `name`, loading the library first if no kernel of it was launched yet.
    fn function(&self, name: &str) -> Result<Function, CudaError> {
        let library = self.library()?;
        let c = kernel_name(name)?;
        let mut kernel = std::ptr::null_mut();
        // SAFETY: the library is loaded; the name is NUL-terminated; the call writes one
        // handle.
        unsafe { sys::cuLibraryGetKernel(&mut kernel, library.0, c.as_ptr()) }
            .result()
            .during(&format!("cuLibraryGetKernel({name})"))?;
        Ok(Function {
            handle: Handle::Library(kernel),
            _code: library,
        })
    }

    fn library(&self) -> Result<Rc<LibraryHandle>, CudaError> {
        if let Some(l) = &*self.library.borrow() {
            return Ok(l.clone());
        }
        not_empty(&self.image)?;
        let mut library = std::ptr::null_mut();
        // SAFETY: the image is a complete CUBIN, fatbin or NUL-terminated PTX that the
        // driver reads during the call only; no options are passed (null arrays, counts 0).
        unsafe {
            sys::cuLibraryLoadData(
                &mut library,
                self.image.as_ptr() as *const c_void,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        }
        .result()
        .during("cuLibraryLoadData")?;
        let handle = Rc::new(LibraryHandle(library));
        *self.library.borrow_mut() = Some(handle.clone());
        Ok(handle)
    }
}

/// A kernel of a lazily loaded module, looked up at its first launch.
#[derive(Clone)]
pub struct LazyFunction {
    pub module: Rc<LazyModule>,
    pub name: String,
}

impl LazyFunction {
    /// Loads the library (if it is not yet) and looks the kernel up now; the kernel itself
    /// loads into the context at its first launch.
    pub fn resolve(&self) -> Result<Function, CudaError> {
        self.module.function(&self.name)
    }
}
