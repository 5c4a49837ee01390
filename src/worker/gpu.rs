//! A thin, owned layer over cudarc's driver `result` API. The timed regions call these
//! directly so they hold exactly what a methodology names: no allocation, no event
//! tracking, no logging. Every CUDA call's result is checked and turned into a message.

use cudarc::driver::{result, sys};
use std::ffi::{c_void, CString};
use std::time::Instant;

use super::timeline::Timeline;
use crate::experiment::DeviceFacts;
use crate::protocol::DeviceInfo;

/// Phase names of a process's CUDA start-up.
pub const DRIVER_INIT: &str = "driver init";
pub const CONTEXT: &str = "context";

/// A CUDA error with the call that produced it.
pub fn cuda_err(what: &str, e: result::DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{what}: {name} ({text})")
}

/// Whether a driver error leaves the context unusable, so the process must not go on.
pub fn is_sticky(e: &result::DriverError) -> bool {
    use sys::CUresult::*;
    matches!(
        e.0,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
}

/// Says whether libcuda can be loaded at all (cudarc panics on first use otherwise).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

/// Says whether libnvrtc can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The device, its primary context made current on this thread.
pub struct Gpu {
    dev: sys::CUdevice,
    pub facts: DeviceFacts,
    pub info: DeviceInfo,
}

impl Gpu {
    /// Opens device `ordinal`, marking the driver's and the context's start-up on `timeline`.
    pub fn open(ordinal: i32, timeline: &mut Timeline) -> Result<Gpu, String> {
        if !driver_present() {
            return Err(crate::NO_DRIVER.into());
        }
        result::init().map_err(|e| cuda_err("cuInit", e))?;
        timeline.mark(DRIVER_INIT);
        let count = result::device::get_count().map_err(|e| cuda_err("cuDeviceGetCount", e))?;
        if count <= ordinal {
            return Err(format!(
                "no CUDA device {ordinal}: the driver sees {count} device(s)"
            ));
        }
        let dev = result::device::get(ordinal).map_err(|e| cuda_err("cuDeviceGet", e))?;
        // SAFETY: dev is a valid device; the context is released in Drop.
        let ctx = unsafe { result::primary_ctx::retain(dev) }
            .map_err(|e| cuda_err("cuDevicePrimaryCtxRetain", e))?;
        unsafe { result::ctx::set_current(ctx) }.map_err(|e| cuda_err("cuCtxSetCurrent", e))?;
        result::ctx::synchronize().map_err(|e| cuda_err("cuCtxSynchronize", e))?;
        timeline.mark(CONTEXT);
        let attr = |a| {
            unsafe { result::device::get_attribute(dev, a) }
                .map_err(|e| cuda_err("cuDeviceGetAttribute", e))
        };
        use sys::CUdevice_attribute::*;
        let facts = DeviceFacts {
            l2_bytes: attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as i64,
            sm_count: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as i64,
            cc_major: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as i64,
            cc_minor: attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as i64,
            mem_bytes: unsafe { result::device::total_mem(dev) }
                .map_err(|e| cuda_err("cuDeviceTotalMem", e))? as i64,
        };
        let mut version = 0;
        unsafe { sys::cuDriverGetVersion(&mut version) }
            .result()
            .map_err(|e| cuda_err("cuDriverGetVersion", e))?;
        let uuid = uuid_of(dev)?;
        let info = DeviceInfo {
            name: result::device::get_name(dev).map_err(|e| cuda_err("cuDeviceGetName", e))?,
            uuid,
            compute_capability: format!("{}.{}", facts.cc_major, facts.cc_minor),
            sm_count: facts.sm_count,
            l2_bytes: facts.l2_bytes,
            mem_bytes: facts.mem_bytes,
            sm_clock_max_mhz: attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as i64 / 1000,
            mem_clock_max_mhz: attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as i64 / 1000,
            cuda_driver_version: format!("{}.{}", version / 1000, (version % 1000) / 10),
            nvrtc_version: crate::worker::compile::nvrtc_version()
                .unwrap_or_else(|e| format!("unavailable ({e})")),
            driver_version: None,
        };
        timeline.mark("device query");
        Ok(Gpu { dev, facts, info })
    }

    pub fn synchronize(&self) -> Result<(), result::DriverError> {
        result::ctx::synchronize()
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `open`.
        let _ = unsafe { result::primary_ctx::release(self.dev) };
    }
}

/// The UUID of CUDA device `ordinal`, in NVML's form, without creating a context.
pub fn device_uuid(ordinal: i32) -> Result<String, String> {
    result::init().map_err(|e| cuda_err("cuInit", e))?;
    uuid_of(result::device::get(ordinal).map_err(|e| cuda_err("cuDeviceGet", e))?)
}

fn uuid_of(dev: sys::CUdevice) -> Result<String, String> {
    let uuid = result::device::get_uuid(dev).map_err(|e| cuda_err("cuDeviceGetUuid", e))?;
    Ok(format_uuid(&uuid.bytes.map(|b| b as u8)))
}

/// NVML's form of a device UUID: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn format_uuid(b: &[u8; 16]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

pub fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Device memory, freed on drop.
pub struct DeviceBuffer {
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
}

impl DeviceBuffer {
    pub fn alloc(bytes: usize) -> Result<Self, String> {
        // SAFETY: plain allocation; freed in Drop.
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }
            .map_err(|e| cuda_err(&format!("cuMemAlloc of {bytes} bytes"), e))?;
        Ok(DeviceBuffer { ptr, bytes })
    }

    pub fn upload(&self, data: &[u8]) -> Result<(), String> {
        assert_eq!(data.len(), self.bytes);
        unsafe { result::memcpy_htod_sync(self.ptr, data) }.map_err(|e| cuda_err("cuMemcpyHtoD", e))
    }

    pub fn download(&self) -> Result<Vec<u8>, String> {
        let mut out = vec![0u8; self.bytes];
        unsafe { result::memcpy_dtoh_sync(&mut out, self.ptr) }
            .map_err(|e| cuda_err("cuMemcpyDtoH", e))?;
        Ok(out)
    }

    /// Sets every byte (0xFF poisons floats to NaN).
    pub fn fill(&self, byte: u8) -> Result<(), String> {
        unsafe { result::memset_d8_sync(self.ptr, byte, self.bytes) }
            .map_err(|e| cuda_err("cuMemsetD8", e))
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// A loaded module, unloaded on drop.
pub struct Module(sys::CUmodule);

impl Module {
    /// Loads a CUBIN or a NUL-terminated PTX image (PTX is JIT-compiled here).
    pub fn load(image: &[u8]) -> Result<Module, String> {
        let m = unsafe { result::module::load_data(image.as_ptr() as *const c_void) }
            .map_err(|e| cuda_err("cuModuleLoadData", e))?;
        Ok(Module(m))
    }

    pub fn function(&self, name: &str) -> Result<sys::CUfunction, String> {
        let c = CString::new(name).map_err(|_| format!("bad kernel name {name:?}"))?;
        unsafe { result::module::get_function(self.0, c) }
            .map_err(|e| cuda_err(&format!("cuModuleGetFunction({name})"), e))
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let _ = unsafe { result::module::unload(self.0) };
    }
}

/// A CUDA event with timing enabled, destroyed on drop.
pub struct Event(pub sys::CUevent);

impl Event {
    pub fn new() -> Result<Event, String> {
        result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map(Event)
            .map_err(|e| cuda_err("cuEventCreate", e))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

/// One kernel launch, fully prepared: enqueueing it does no allocation.
pub struct Launch {
    func: sys::CUfunction,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    /// Parameter values, 8 bytes each; `params` points into it, so it never moves.
    storage: Box<[[u8; 8]]>,
    params: Vec<*mut c_void>,
}

impl Launch {
    /// `values` are each parameter's bytes (at most 8), in the kernel's order.
    pub fn new(
        func: sys::CUfunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        values: &[Vec<u8>],
    ) -> Self {
        let mut storage: Box<[[u8; 8]]> = values
            .iter()
            .map(|v| {
                let mut slot = [0u8; 8];
                slot[..v.len()].copy_from_slice(v);
                slot
            })
            .collect();
        let params = storage
            .iter_mut()
            .map(|s| s.as_mut_ptr() as *mut c_void)
            .collect();
        Launch {
            func,
            grid,
            block,
            shared_bytes,
            storage,
            params,
        }
    }

    /// Replaces parameter `index`'s value (at most 8 bytes), outside any timed region.
    pub fn set_param(&mut self, index: usize, value: &[u8]) {
        let slot = &mut self.storage[index];
        *slot = [0u8; 8];
        slot[..value.len()].copy_from_slice(value);
    }

    /// Enqueues the kernel on the legacy default stream, as `kernel<<<g, b>>>` does.
    #[inline]
    pub fn enqueue(&mut self) -> Result<(), result::DriverError> {
        self.enqueue_on(std::ptr::null_mut())
    }

    /// Enqueues the kernel on `stream` (a capturing stream, for a graph).
    #[inline]
    pub fn enqueue_on(&mut self, stream: sys::CUstream) -> Result<(), result::DriverError> {
        // SAFETY: func comes from a live module, params point at storage owned by self,
        // and buffers outlive every launch of a cell.
        unsafe {
            result::launch_kernel(
                self.func,
                self.grid,
                self.block,
                self.shared_bytes,
                stream,
                &mut self.params,
            )
        }
    }
}

/// `count` launches captured in a CUDA graph, instantiated once; replays go on the legacy
/// default stream like every other launch.
pub struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
}

impl Graph {
    pub fn capture(launch: &mut Launch, count: u64) -> Result<Graph, String> {
        // The legacy stream cannot be captured; a stream of its own is, then destroyed.
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| cuda_err("cuStreamCreate", e))?;
        let captured = (|| {
            // SAFETY: the stream is live; the launches only record into the graph.
            unsafe {
                result::stream::begin_capture(
                    stream,
                    sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
                .map_err(|e| cuda_err("cuStreamBeginCapture", e))?;
                for _ in 0..count {
                    launch
                        .enqueue_on(stream)
                        .map_err(|e| cuda_err("launch during graph capture", e))?;
                }
                let graph = result::stream::end_capture(stream)
                    .map_err(|e| cuda_err("cuStreamEndCapture", e))?;
                match result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) {
                    Ok(exec) => Ok(Graph { graph, exec }),
                    Err(e) => {
                        let _ = result::graph::destroy(graph);
                        Err(cuda_err("cuGraphInstantiate", e))
                    }
                }
            }
        })();
        // SAFETY: nothing uses the stream after the capture.
        let _ = unsafe { result::stream::destroy(stream) };
        captured
    }

    /// Replays the graph on the legacy default stream.
    #[inline]
    pub fn launch(&self) -> Result<(), result::DriverError> {
        // SAFETY: exec is a live instantiated graph.
        unsafe { result::graph::launch(self.exec, std::ptr::null_mut()) }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: both were created in `capture` and are destroyed once.
        unsafe {
            let _ = result::graph::exec_destroy(self.exec);
            let _ = result::graph::destroy(self.graph);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_in_nvml_form() {
        let b: [u8; 16] = core::array::from_fn(|i| i as u8);
        assert_eq!(format_uuid(&b), "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
    }
}
