//! A word of page-locked host memory that the device reads and the host sets: how the host
//! releases a kernel that waits for it (NVBench's blocking kernel), without a copy or a
//! synchronize between enqueueing work and letting it run.

use super::{CudaError, DeviceBuffer};

/// A 64-bit word the host writes and a kernel polls (`volatile` on the device).
pub struct HostFlag {
    buffer: DeviceBuffer,
}

impl HostFlag {
    /// A flag holding 0.
    pub fn new() -> Result<HostFlag, CudaError> {
        let flag = HostFlag {
            buffer: DeviceBuffer::alloc_mapped(std::mem::size_of::<u64>())?,
        };
        flag.set(0);
        Ok(flag)
    }

    /// The memory a kernel polls (its device address is its host address).
    pub fn buffer(&self) -> &DeviceBuffer {
        &self.buffer
    }

    /// Writes `value` for the device to see: a volatile store, then a fence, so that it is
    /// not held back behind later host work.
    pub fn set(&self, value: u64) {
        let word = self.word();
        // SAFETY: `word` is the start of this flag's own page-locked allocation (8 bytes,
        // aligned by cuMemHostAlloc), live as long as `self`; the device only reads it.
        unsafe { std::ptr::write_volatile(word, value) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }

    fn word(&self) -> *mut u64 {
        self.buffer
            .host_view()
            .expect("a mapped buffer has a host address")
            .cast::<u64>()
    }
}
