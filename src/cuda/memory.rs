//! Device memory, freed on drop. A kernel launch borrows the buffers it points at
//! ([`super::Launch`]), so a buffer cannot be freed while a launch may still use it.

use super::error::{Check, CudaError};
use cudarc::driver::{result, sys};

pub struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl DeviceBuffer {
    pub fn alloc(bytes: usize) -> Result<Self, CudaError> {
        // SAFETY: a plain allocation of at least one byte; freed in Drop.
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }
            .during(&format!("cuMemAlloc of {bytes} bytes"))?;
        Ok(DeviceBuffer { ptr, bytes })
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The device address, as a kernel parameter holds it.
    pub(super) fn address(&self) -> u64 {
        self.ptr
    }

    pub fn upload(&self, data: &[u8]) -> Result<(), CudaError> {
        if data.len() != self.bytes {
            return Err(CudaError::Library(format!(
                "upload of {} bytes into a buffer of {}",
                data.len(),
                self.bytes
            )));
        }
        // SAFETY: the buffer holds exactly data.len() bytes and lives as long as self.
        unsafe { result::memcpy_htod_sync(self.ptr, data) }.during("cuMemcpyHtoD")
    }

    pub fn download(&self) -> Result<Vec<u8>, CudaError> {
        let mut out = vec![0u8; self.bytes];
        // SAFETY: out holds exactly self.bytes bytes; the buffer is live.
        unsafe { result::memcpy_dtoh_sync(&mut out, self.ptr) }.during("cuMemcpyDtoH")?;
        Ok(out)
    }

    /// Sets every byte and waits (0xFF poisons floats to NaN).
    pub fn fill(&self, byte: u8) -> Result<(), CudaError> {
        // SAFETY: writes self.bytes bytes of a live buffer.
        unsafe { result::memset_d8_sync(self.ptr, byte, self.bytes) }.during("cuMemsetD8")
    }

    /// Enqueues a memset of every byte on the legacy default stream, without waiting.
    pub fn fill_async(&self, byte: u8) -> Result<(), CudaError> {
        // SAFETY: writes self.bytes bytes of a live buffer; the null stream is the legacy
        // one, which orders the memset before anything enqueued later (and the buffer is
        // freed only after a synchronizing cuMemFree).
        unsafe { result::memset_d8_async(self.ptr, byte, self.bytes, std::ptr::null_mut()) }
            .during("cuMemsetD8Async")
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAlloc and is freed once.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}
