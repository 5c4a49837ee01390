//! Kernel launches and copies. A [`Launch`] holds its function (which keeps its code
//! loaded) and borrows the buffers its parameters point at, so enqueueing it is safe:
//! nothing it uses can be gone. The timed regions call these
//! directly: no allocation, no event tracking, no logging.

use super::code::{Function, LazyFunction};
use super::error::CudaError;
use super::memory::{DeviceBuffer, Direction};
use cudarc::driver::{result, sys};
use std::ffi::c_void;
use std::marker::PhantomData;

/// One kernel parameter: a buffer the launch borrows, or a value of up to 8 bytes.
#[derive(Clone, Copy)]
pub enum Param<'b> {
    Buffer(&'b DeviceBuffer),
    Value([u8; 8]),
}

impl Param<'_> {
    /// A value parameter from its bytes (at most 8, native order).
    pub fn bytes(b: &[u8]) -> Self {
        let mut slot = [0u8; 8];
        slot[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
        Param::Value(slot)
    }

    pub fn u64(v: u64) -> Self {
        Param::Value(v.to_ne_bytes())
    }

    fn slot(&self) -> [u8; 8] {
        match self {
            Param::Buffer(b) => b.address().to_ne_bytes(),
            Param::Value(v) => *v,
        }
    }
}

/// Launch dimensions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dims {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
}

impl Dims {
    /// One thread.
    pub const ONE: Dims = Dims {
        grid: (1, 1, 1),
        block: (1, 1, 1),
        shared_bytes: 0,
    };
}

/// An L2 access-policy window on one of a launch's buffers (`l2_persist`): accesses to its
/// first `bytes` persist in L2's set-aside at `hit_ratio`, the rest stream past, as
/// `cudaAccessPolicyWindow` does. Set on the launch (`cuLaunchKernelEx`), so a graph that
/// captures the launch keeps it on its node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessWindow {
    /// The parameter slot that holds the buffer: its address is read at each enqueue, so a
    /// replaced parameter takes the window with it.
    pub slot: usize,
    pub bytes: usize,
    pub hit_ratio: f32,
}

/// Sets aside as much of the L2 for persisting accesses as the device allows, up to
/// `bytes`, in the current context; the bytes set aside and the largest window a launch may
/// set. [`release_l2`] gives it back.
pub fn set_aside_l2(bytes: usize) -> Result<(usize, usize), CudaError> {
    use sys::CUdevice_attribute::*;
    let mut dev: sys::CUdevice = 0;
    // SAFETY: writes the current context's device through a valid pointer.
    unsafe { sys::cuCtxGetDevice(&mut dev) }
        .result()
        .map_err(|e| CudaError::driver("cuCtxGetDevice", e))?;
    let attr = |a| {
        // SAFETY: dev is the current context's device; attributes are plain reads.
        unsafe { result::device::get_attribute(dev, a) }
            .map(|v| v.max(0) as usize)
            .map_err(|e| CudaError::driver("cuDeviceGetAttribute", e))
    };
    let (most, window) = (
        attr(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)?,
        attr(CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE)?,
    );
    let limit = sys::CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE;
    // SAFETY: sets a limit of the current context to a value the device allows.
    unsafe { sys::cuCtxSetLimit(limit, bytes.min(most)) }
        .result()
        .map_err(|e| CudaError::driver("cuCtxSetLimit", e))?;
    let mut set = 0usize;
    // SAFETY: reads the limit back through a valid pointer.
    unsafe { sys::cuCtxGetLimit(&mut set, limit) }
        .result()
        .map_err(|e| CudaError::driver("cuCtxGetLimit", e))?;
    Ok((set, window))
}

/// Lets every persisting L2 line go back to normal and the set-aside back to none, so the
/// next cell meets the L2 as it was.
pub fn release_l2() -> Result<(), CudaError> {
    // SAFETY: resets the current context's persisting lines; no pointer involved.
    unsafe { sys::cuCtxResetPersistingL2Cache() }
        .result()
        .map_err(|e| CudaError::driver("cuCtxResetPersistingL2Cache", e))?;
    // SAFETY: sets a limit of the current context to zero.
    unsafe { sys::cuCtxSetLimit(sys::CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0) }
        .result()
        .map_err(|e| CudaError::driver("cuCtxSetLimit", e))
}

/// A copy between two buffers: parameter 0 is the destination, 1 the source.
#[derive(Debug, Clone, Copy)]
struct Transfer {
    direction: Direction,
    bytes: usize,
    /// `cuMemcpy*` (the host waits) rather than `cuMemcpy*Async`.
    sync: bool,
}

/// One kernel launch or copy, fully prepared: enqueueing it allocates nothing.
pub struct Launch<'b> {
    /// The function; `None` until the first launch of a lazily loaded one, and for a copy.
    func: Option<Function>,
    lazy: Option<LazyFunction>,
    copy: Option<Transfer>,
    dims: Dims,
    /// Parameter values, 8 bytes each; `params` points into it, so it never moves.
    storage: Box<[[u8; 8]]>,
    params: Vec<*mut c_void>,
    /// Launches enqueued right before and right after this one (a kernel's steps), each
    /// with the indices of this launch's parameters it takes.
    before: Vec<(Launch<'b>, Vec<usize>)>,
    then: Vec<(Launch<'b>, Vec<usize>)>,
    /// Where its parameters come from when [`Launch::set_param`] names them by the index of
    /// a larger list (a kernel that takes some of its experiment's arguments); None: the same.
    from: Option<Vec<usize>>,
    /// The L2 access-policy window its launches set, if any.
    window: Option<AccessWindow>,
    _buffers: PhantomData<&'b DeviceBuffer>,
}

impl<'b> Launch<'b> {
    pub fn new(func: &Function, dims: Dims, values: &[Param<'b>]) -> Self {
        let mut launch = Launch::new_unresolved(dims, values);
        launch.func = Some(func.clone());
        launch
    }

    /// A launch whose first enqueue loads its module (if no kernel of it loaded it yet)
    /// and looks its function up, as a runtime-API program's first launch does.
    pub fn lazy(func: LazyFunction, dims: Dims, values: &[Param<'b>]) -> Self {
        let mut launch = Launch::new_unresolved(dims, values);
        launch.lazy = Some(func);
        launch
    }

    /// A copy of the whole of `source` into `destination`, which way the buffers' places
    /// say; `sync`: the blocking `cuMemcpy*`, as `cudaMemcpy` is.
    pub fn copy(
        destination: &'b DeviceBuffer,
        source: &'b DeviceBuffer,
        sync: bool,
    ) -> Result<Self, CudaError> {
        let (dst, src) = (destination, source);
        let direction = Direction::between(src.on_host(), dst.on_host())
            .ok_or_else(|| CudaError::Library("a copy between two host buffers".into()))?;
        if dst.bytes() != src.bytes() {
            return Err(CudaError::Library(format!(
                "a copy of {} bytes into a buffer of {}",
                src.bytes(),
                dst.bytes()
            )));
        }
        let mut launch =
            Launch::new_unresolved(Dims::ONE, &[Param::Buffer(dst), Param::Buffer(src)]);
        launch.copy = Some(Transfer {
            direction,
            bytes: dst.bytes(),
            sync,
        });
        Ok(launch)
    }

    /// How CUPTI names the copies this launch and its steps make, in enqueue order, so that
    /// they are found among its records as kernels are, by name.
    pub fn copy_records(&self) -> Vec<String> {
        let steps = |list: &'_ [(Launch<'b>, Vec<usize>)]| -> Vec<Option<Transfer>> {
            list.iter().map(|(s, _)| s.copy).collect()
        };
        steps(&self.before)
            .into_iter()
            .chain([self.copy])
            .chain(steps(&self.then))
            .flatten()
            .map(|t| t.direction.record_name(t.bytes as u64))
            .collect()
    }

    fn new_unresolved(dims: Dims, values: &[Param<'b>]) -> Self {
        let mut storage: Box<[[u8; 8]]> = values.iter().map(Param::slot).collect();
        let params = storage
            .iter_mut()
            .map(|s| s.as_mut_ptr() as *mut c_void)
            .collect();
        Launch {
            func: None,
            lazy: None,
            copy: None,
            dims,
            storage,
            params,
            before: Vec::new(),
            then: Vec::new(),
            from: None,
            window: None,
            _buffers: PhantomData,
        }
    }

    /// Each launch of the kernel sets `window` (not its steps').
    pub fn set_window(&mut self, window: AccessWindow) {
        self.window = Some(window);
    }

    /// Its parameter `j` is parameter `from[j]` of the list [`Launch::set_param`] indexes.
    pub fn taking(mut self, from: Vec<usize>) -> Self {
        self.from = Some(from);
        self
    }

    /// Adds a launch enqueued after this one (and after the ones added before) wherever
    /// this one is enqueued; `from[j]` is the index of this launch's parameter that `next`
    /// takes as its parameter `j`, so that [`Launch::set_param`] reaches it too.
    pub fn then(&mut self, next: Launch<'b>, from: Vec<usize>) {
        self.then.push((next, from));
    }

    /// As [`Launch::then`], but enqueued before this one (and after the ones added before).
    pub fn before(&mut self, previous: Launch<'b>, from: Vec<usize>) {
        self.before.push((previous, from));
    }

    /// The function, loaded now if it was waiting for its first launch (its steps' too);
    /// None for a copy.
    pub(super) fn resolve(&mut self) -> Result<Option<Function>, CudaError> {
        for (step, _) in self.before.iter_mut().chain(&mut self.then) {
            step.resolve()?;
        }
        if self.copy.is_some() {
            return Ok(None);
        }
        if let Some(f) = &self.func {
            return Ok(Some(f.clone()));
        }
        let lazy = self
            .lazy
            .as_ref()
            .ok_or_else(|| CudaError::Library("a launch without a function".into()))?;
        let f = lazy.resolve()?;
        if self.dims.shared_bytes > 48 * 1024 {
            f.allow_shared_bytes(self.dims.shared_bytes)?;
        }
        self.func = Some(f.clone());
        Ok(Some(f))
    }

    /// Replaces parameter `index`, outside any timed region.
    ///
    /// # Panics
    /// Where the parameter is one of a copy's buffers and `value` is not a buffer of the same
    /// size on the same side: the copy's raw addresses must stay valid for its bytes.
    pub fn set_param(&mut self, index: usize, value: Param<'b>) {
        // Which of a launch's slots take parameter `index` (`from`: slot j takes from[j]).
        fn slots(from: &[usize], index: usize) -> impl Iterator<Item = usize> + '_ {
            (from.iter().enumerate())
                .filter(move |(_, &f)| f == index)
                .map(|(j, _)| j)
        }
        match &self.from {
            None => Self::put(self.copy, &mut self.storage, std::iter::once(index), value),
            Some(from) => Self::put(self.copy, &mut self.storage, slots(from, index), value),
        }
        for (step, from) in self.before.iter_mut().chain(&mut self.then) {
            Self::put(step.copy, &mut step.storage, slots(from, index), value);
        }
    }

    /// Writes `value` into `slots` of one launch's storage, checked against its copy.
    fn put(
        copy: Option<Transfer>,
        storage: &mut [[u8; 8]],
        slots: impl Iterator<Item = usize>,
        value: Param<'b>,
    ) {
        for slot in slots {
            if let Some(t) = copy {
                let (src_on_host, dst_on_host) = t.direction.on_host();
                let side = if slot == 0 { dst_on_host } else { src_on_host };
                let fits = matches!(value, Param::Buffer(b) if b.bytes() == t.bytes && b.on_host() == side);
                assert!(
                    fits,
                    "a copy's buffer replaced by one of another size or side"
                );
            }
            storage[slot] = value.slot();
        }
    }

    /// Enqueues the kernel on the legacy default stream, as `kernel<<<g, b>>>` does.
    #[inline]
    pub fn enqueue(&mut self) -> Result<(), CudaError> {
        // Steps are lazy exactly where the launch they follow is, and resolve with it: the
        // timed path checks one field, as a launch without steps does.
        if self.func.is_none() && self.copy.is_none() {
            self.resolve()?;
        }
        self.enqueue_on(std::ptr::null_mut()).map_err(|e| {
            // Named only on failure: the timed path does no more than enqueue.
            let call = match self.copy_records().is_empty() {
                true => "cuLaunchKernel",
                false => "cuLaunchKernel or cuMemcpy",
            };
            CudaError::driver(call, e)
        })
    }

    /// Enqueues the steps before this launch, this launch, then the steps after it.
    #[inline]
    pub(super) fn enqueue_on(&mut self, stream: sys::CUstream) -> Result<(), result::DriverError> {
        for (step, _) in &mut self.before {
            step.enqueue_one(stream)?;
        }
        self.enqueue_one(stream)?;
        for (step, _) in &mut self.then {
            step.enqueue_one(stream)?;
        }
        Ok(())
    }

    #[inline]
    fn enqueue_one(&mut self, stream: sys::CUstream) -> Result<(), result::DriverError> {
        if let Some(copy) = self.copy {
            return self.enqueue_copy(copy, stream);
        }
        let d = self.dims;
        let Some(func) = &self.func else {
            return Err(result::DriverError(
                sys::CUresult::CUDA_ERROR_INVALID_HANDLE,
            ));
        };
        // The worker checks the slots' count and sizes against the kernel's parameters
        // (`Function::param_sizes`) before a prepared launch; a lazy one cannot be checked
        // before it runs and trusts the experiment's argument list.
        let Some(w) = self.window else {
            // SAFETY: func is a live function or library kernel (it holds its code), each
            // parameter slot holds a value or the address of a buffer borrowed for 'b, and
            // the slots do not move.
            return unsafe {
                result::launch_kernel(
                    func.handle(),
                    d.grid,
                    d.block,
                    d.shared_bytes,
                    stream,
                    &mut self.params,
                )
            };
        };
        // SAFETY: a launch attribute is plain data; all zeros is a valid start for it.
        let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
        attr.value.accessPolicyWindow = sys::CUaccessPolicyWindow {
            base_ptr: u64::from_ne_bytes(self.storage[w.slot]) as *mut c_void,
            num_bytes: w.bytes,
            hitRatio: w.hit_ratio,
            hitProp: sys::CUaccessProperty::CU_ACCESS_PROPERTY_PERSISTING,
            missProp: sys::CUaccessProperty::CU_ACCESS_PROPERTY_STREAMING,
        };
        let config = sys::CUlaunchConfig {
            gridDimX: d.grid.0,
            gridDimY: d.grid.1,
            gridDimZ: d.grid.2,
            blockDimX: d.block.0,
            blockDimY: d.block.1,
            blockDimZ: d.block.2,
            sharedMemBytes: d.shared_bytes,
            hStream: stream,
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: as for `launch_kernel` above; the window's slot holds the address of a
        // buffer borrowed for 'b of at least `w.bytes` (the worker sets it from the
        // buffer's size), and `config` and `attr` outlive the call.
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                func.handle(),
                self.params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
    }
}

impl Launch<'_> {
    #[inline]
    fn enqueue_copy(
        &self,
        copy: Transfer,
        stream: sys::CUstream,
    ) -> Result<(), result::DriverError> {
        let dst = u64::from_ne_bytes(self.storage[0]);
        let src = u64::from_ne_bytes(self.storage[1]);
        let n = copy.bytes;
        use Direction::*;
        // Slots 0 and 1 hold buffers borrowed for the launch's life (`Launch::copy` checked
        // their sides and sizes; `set_param` refuses any other).
        // SAFETY: both are live buffers of at least `n` bytes on the sides the direction
        // says, a host buffer's address is its host pointer (unified addressing), and a
        // pageable one is freed only after the device is synchronized.
        let code = unsafe {
            match (copy.direction, copy.sync) {
                (HostToDevice, false) => {
                    sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, n, stream)
                }
                (HostToDevice, true) => sys::cuMemcpyHtoD_v2(dst, src as *const c_void, n),
                (DeviceToHost, false) => {
                    sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, n, stream)
                }
                (DeviceToHost, true) => sys::cuMemcpyDtoH_v2(dst as *mut c_void, src, n),
                (DeviceToDevice, false) => sys::cuMemcpyDtoDAsync_v2(dst, src, n, stream),
                (DeviceToDevice, true) => sys::cuMemcpyDtoD_v2(dst, src, n),
            }
        };
        code.result()
    }
}
