//! The device: its attributes (read without a context, so the parent can plan against the
//! real device) and its primary context, current on the worker's thread.

use super::error::{Check, CudaError};
use cudarc::driver::{result, sys};
use serde::{Deserialize, Serialize};

/// What the driver says about a device without a context. The protocol's `DeviceInfo`
/// is made from it, beside what NVML and NVRTC add.
#[derive(Debug, Clone, PartialEq)]
pub struct Queried {
    pub name: String,
    pub uuid: String,
    /// The compute capability, major and minor.
    pub capability: (i64, i64),
    pub sm_count: i64,
    pub l2_bytes: i64,
    pub mem_bytes: i64,
    pub sm_clock_max_mhz: i64,
    pub mem_clock_max_mhz: i64,
    pub mem_bus_width_bits: i64,
    /// The CUDA version the driver supports, `13.0`.
    pub cuda_driver_version: String,
    pub limits: LaunchLimits,
}

/// The launch limits a kernel's configuration is checked against.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct LaunchLimits {
    pub max_threads_per_block: i64,
    pub max_block: [i64; 3],
    pub max_grid: [i64; 3],
    /// Dynamic shared memory a block may opt in to.
    pub max_shared_bytes: i64,
}

/// Says whether libcuda can be loaded at all (cudarc panics on first use otherwise).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { sys::is_culib_present() }
}

/// How many GPUs the driver sees (honouring `CUDA_VISIBLE_DEVICES`).
pub fn device_count() -> Result<i32, CudaError> {
    if !driver_present() {
        return Err(CudaError::Library(super::NO_DRIVER.into()));
    }
    result::init().during("cuInit")?;
    result::device::get_count().during("cuDeviceGetCount")
}

/// Reads device `ordinal`'s attributes; needs the driver but creates no context.
pub fn query(ordinal: i32) -> Result<Queried, CudaError> {
    if !driver_present() {
        return Err(CudaError::Library(super::NO_DRIVER.into()));
    }
    result::init().during("cuInit")?;
    let count = result::device::get_count().during("cuDeviceGetCount")?;
    if count <= ordinal {
        return Err(CudaError::Library(format!(
            "no CUDA device {ordinal}: the driver sees {count} device(s)"
        )));
    }
    let dev = result::device::get(ordinal).during("cuDeviceGet")?;
    let attr = |a| {
        // SAFETY: dev is a device the driver just returned; attributes are plain reads.
        unsafe { result::device::get_attribute(dev, a) }
            .during("cuDeviceGetAttribute")
            .map(i64::from)
    };
    use sys::CUdevice_attribute::*;
    let mut version = 0;
    // SAFETY: writes one int through a valid pointer.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .during("cuDriverGetVersion")?;
    let (major, minor) = (
        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    Ok(Queried {
        name: result::device::get_name(dev).during("cuDeviceGetName")?,
        uuid: uuid_of(dev)?,
        capability: (major, minor),
        sm_count: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        l2_bytes: attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        // SAFETY: a plain read of the device's memory size.
        mem_bytes: unsafe { result::device::total_mem(dev) }.during("cuDeviceTotalMem")? as i64,
        sm_clock_max_mhz: attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000,
        mem_clock_max_mhz: attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? / 1000,
        mem_bus_width_bits: attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?,
        cuda_driver_version: format!("{}.{}", version / 1000, (version % 1000) / 10),
        limits: LaunchLimits {
            max_threads_per_block: attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block: [
                attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid: [
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_bytes: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        },
    })
}

/// NVRTC's version for the run's record, or why it is unavailable.
pub fn nvrtc_version() -> String {
    super::nvrtc::version().unwrap_or_else(|e| format!("unavailable ({e})"))
}

fn uuid_of(dev: sys::CUdevice) -> Result<String, CudaError> {
    let uuid = result::device::get_uuid(dev).during("cuDeviceGetUuid")?;
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

/// Phase names of a process's CUDA start-up.
pub const DRIVER_INIT: &str = "driver init";
pub const CONTEXT: &str = "context";

/// The device's primary context, current on this thread for as long as this lives.
pub struct Gpu {
    dev: sys::CUdevice,
}

impl Gpu {
    /// Starts the driver: no context, nothing on the device yet (a fresh worker starts it
    /// while the previous one may still be exiting).
    pub fn init_driver() -> Result<(), CudaError> {
        if !driver_present() {
            return Err(CudaError::Library(super::NO_DRIVER.into()));
        }
        result::init().during("cuInit")
    }

    /// Opens device `ordinal` on the started driver; `mark` is told when the context is up.
    pub fn open(ordinal: i32, mark: &mut dyn FnMut(&str)) -> Result<Gpu, CudaError> {
        let dev = result::device::get(ordinal).during("cuDeviceGet")?;
        // SAFETY: dev is a valid device; the retain is balanced by the release in Drop.
        let ctx = unsafe { result::primary_ctx::retain(dev) }.during("cuDevicePrimaryCtxRetain")?;
        // SAFETY: ctx was just retained and stays alive while self does.
        unsafe { result::ctx::set_current(ctx) }.during("cuCtxSetCurrent")?;
        synchronize()?;
        mark(CONTEXT);
        Ok(Gpu { dev })
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `open`.
        let _ = unsafe { result::primary_ctx::release(self.dev) };
    }
}

/// Waits for all work of the current context.
pub fn synchronize() -> Result<(), CudaError> {
    result::ctx::synchronize().during("cuCtxSynchronize")
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
