//! Memory a kernel or a copy reads and writes, freed on drop: device memory, unified
//! (managed) memory, page-locked host memory (mapped into the device or not), or pageable
//! host memory (copies only). A launch borrows the buffers it points at
//! ([`super::Launch`]), so a buffer cannot be freed while a launch may still use it.

use super::error::{Check, CudaError};
use cudarc::driver::{result, sys};
use std::ffi::c_void;
use std::ops::Range;

/// How a buffer was allocated, which says how the host fills and reads it.
#[derive(Debug)]
enum Placement {
    Device,
    /// Host-accessible at the same address: the host writes inputs in place, so they stay
    /// on the host until a kernel's first touch migrates them.
    Managed,
    /// Page-locked host memory at `host`; the device reaches it at `ptr`.
    Mapped {
        host: *mut c_void,
    },
    /// Page-locked host memory from `cuMemHostAlloc`, at `ptr` for host and device alike
    /// (unified addressing).
    Pinned,
    /// Ordinary host memory of this many bytes (at least one), at `ptr` (a leaked boxed
    /// slice): copies stage it through a driver buffer, and no kernel can address it.
    Pageable {
        allocated: usize,
    },
}

/// Which way a copy goes, from where its two buffers live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

impl Direction {
    /// The copy from a buffer on the host or device into another; None for host to host.
    pub fn between(source_on_host: bool, destination_on_host: bool) -> Option<Direction> {
        match (source_on_host, destination_on_host) {
            (true, false) => Some(Direction::HostToDevice),
            (false, true) => Some(Direction::DeviceToHost),
            (false, false) => Some(Direction::DeviceToDevice),
            (true, true) => None,
        }
    }

    /// Which ends of the copy are on the host: (source, destination), as `between` takes them.
    pub fn on_host(self) -> (bool, bool) {
        match self {
            Direction::HostToDevice => (true, false),
            Direction::DeviceToHost => (false, true),
            Direction::DeviceToDevice => (false, false),
        }
    }

    fn short(self) -> &'static str {
        match self {
            Direction::HostToDevice => "HtoD",
            Direction::DeviceToHost => "DtoH",
            Direction::DeviceToDevice => "DtoD",
        }
    }

    /// The name a CUPTI memcpy record of `bytes` gets, so that a copy is found among them as
    /// a kernel is, by its name: a copy the driver split into several records matches none.
    pub fn record_name(self, bytes: u64) -> String {
        format!("memcpy {} {bytes} B", self.short())
    }
}

/// What a memset writes over and over: the driver sets 1, 2 or 4 bytes at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    Bytes(u8),
    Halves(u16),
    Words(u32),
}

impl Fill {
    /// Units of `unit` bytes (1, 2 or 4), each the low bytes of `value`; None for another
    /// width.
    pub fn new(unit: usize, value: u32) -> Option<Fill> {
        match unit {
            1 => Some(Fill::Bytes(value as u8)),
            2 => Some(Fill::Halves(value as u16)),
            4 => Some(Fill::Words(value)),
            _ => None,
        }
    }

    fn unit(self) -> usize {
        match self {
            Fill::Bytes(_) => 1,
            Fill::Halves(_) => 2,
            Fill::Words(_) => 4,
        }
    }
}

pub struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    placement: Placement,
}

/// The device's free and total memory now, in bytes.
pub fn memory_info() -> Result<(usize, usize), CudaError> {
    result::mem_get_info().during("cuMemGetInfo")
}

impl DeviceBuffer {
    pub fn alloc(bytes: usize) -> Result<Self, CudaError> {
        // SAFETY: a plain allocation of at least one byte; freed in Drop.
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }
            .during(&format!("cuMemAlloc of {bytes} bytes"))?;
        Ok(DeviceBuffer {
            ptr,
            bytes,
            placement: Placement::Device,
        })
    }

    /// Unified memory. The caller keeps the total below the device's free memory: managed
    /// memory beyond it makes the driver evict and can stall a shared GPU.
    pub fn alloc_managed(bytes: usize) -> Result<Self, CudaError> {
        // SAFETY: a managed allocation of at least one byte, attached globally; freed in Drop.
        let ptr = unsafe {
            result::malloc_managed(bytes.max(1), sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL)
        }
        .during(&format!("cuMemAllocManaged of {bytes} bytes"))?;
        Ok(DeviceBuffer {
            ptr,
            bytes,
            placement: Placement::Managed,
        })
    }

    /// Page-locked host memory mapped into the device's address space.
    pub fn alloc_mapped(bytes: usize) -> Result<Self, CudaError> {
        // SAFETY: a page-locked allocation of at least one byte, mapped for the device;
        // freed in Drop.
        let host = unsafe { result::malloc_host(bytes.max(1), sys::CU_MEMHOSTALLOC_DEVICEMAP) }
            .during(&format!("cuMemHostAlloc(DEVICEMAP) of {bytes} bytes"))?;
        let mut ptr = 0;
        // SAFETY: host was just allocated with DEVICEMAP; the call writes one address.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut ptr, host, 0) }
            .result()
            .during("cuMemHostGetDevicePointer");
        let buffer = DeviceBuffer {
            ptr,
            bytes,
            placement: Placement::Mapped { host },
        };
        // On failure the buffer's Drop frees the host memory.
        mapped?;
        // Copies pass the host address where a kernel takes the device one: under unified
        // addressing (every 64-bit platform CUDA supports) they are the same.
        if buffer.ptr != host as sys::CUdeviceptr {
            return Err(CudaError::Library(
                "mapped memory has a device address other than its host address: this platform lacks unified addressing".into(),
            ));
        }
        Ok(buffer)
    }

    /// Page-locked host memory, which copies reach at full speed and without staging.
    pub fn alloc_pinned(bytes: usize) -> Result<Self, CudaError> {
        // SAFETY: a page-locked allocation of at least one byte; freed in Drop.
        let host = unsafe { result::malloc_host(bytes.max(1), 0) }
            .during(&format!("cuMemHostAlloc of {bytes} bytes"))?;
        Ok(DeviceBuffer {
            ptr: host as sys::CUdeviceptr,
            bytes,
            placement: Placement::Pinned,
        })
    }

    /// Ordinary (pageable) host memory, as `malloc` gives it.
    pub fn alloc_pageable(bytes: usize) -> Self {
        let allocated = bytes.max(1);
        // Owned through the raw pointer from here on; reclaimed in Drop.
        let memory = Box::into_raw(vec![0u8; allocated].into_boxed_slice());
        DeviceBuffer {
            ptr: memory as *mut u8 as sys::CUdeviceptr,
            bytes,
            placement: Placement::Pageable { allocated },
        }
    }

    /// Whether it lives on the host (a copy to or from it crosses the host link).
    pub fn on_host(&self) -> bool {
        matches!(
            self.placement,
            Placement::Mapped { .. } | Placement::Pinned | Placement::Pageable { .. }
        )
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether it is plain device memory (not managed, not on the host).
    pub fn in_device_memory(&self) -> bool {
        matches!(self.placement, Placement::Device)
    }

    /// Enqueues a copy of all of `source`, a device buffer of the same size, into this one
    /// (on the legacy stream: work enqueued after it sees the copy done).
    pub fn copy_from(&self, source: &DeviceBuffer) -> Result<(), CudaError> {
        if source.bytes != self.bytes || !self.in_device_memory() || !source.in_device_memory() {
            return Err(CudaError::Library(format!(
                "a device copy needs two buffers of device memory of one size, not {} bytes into {}",
                source.bytes, self.bytes
            )));
        }
        // SAFETY: both are live buffers of device memory holding exactly self.bytes bytes
        // (checked above), freed only after a synchronizing cuMemFree.
        unsafe { sys::cuMemcpyDtoD_v2(self.ptr, source.ptr, self.bytes) }
            .result()
            .during("cuMemcpyDtoD")
    }

    /// The device address, as a kernel parameter (or a table a kernel reads) holds it.
    pub fn address(&self) -> u64 {
        self.ptr
    }

    /// A handle another process opens to read and write this buffer in place (CUDA IPC):
    /// a Python reference's torch tensors on the GPU, with nothing crossing the host link.
    /// Device memory only.
    pub fn ipc_handle(&self) -> Result<[u8; 64], CudaError> {
        if !self.in_device_memory() {
            return Err(CudaError::Library(
                "only device memory can be shared with another process".into(),
            ));
        }
        let mut handle = sys::CUipcMemHandle { reserved: [0; 64] };
        // SAFETY: self.ptr is the base of a live cuMemAlloc allocation (placement Device);
        // the call writes the 64-byte handle.
        unsafe { sys::cuIpcGetMemHandle(&mut handle, self.ptr) }
            .result()
            .during("cuIpcGetMemHandle")?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    /// Where the host can write and read the buffer directly, when it can.
    pub(super) fn host_view(&self) -> Option<*mut u8> {
        match &self.placement {
            Placement::Device => None,
            Placement::Managed => Some(self.ptr as *mut u8),
            Placement::Mapped { host } => Some(*host as *mut u8),
            Placement::Pinned | Placement::Pageable { .. } => Some(self.ptr as *mut u8),
        }
    }

    pub fn upload(&self, data: &[u8]) -> Result<(), CudaError> {
        if data.len() != self.bytes {
            return Err(CudaError::Library(format!(
                "upload of {} bytes into a buffer of {}",
                data.len(),
                self.bytes
            )));
        }
        if let Some(host) = self.host_view() {
            // The device may still be using the buffer from earlier work.
            super::synchronize()?;
            // SAFETY: the buffer is host-accessible at `host` for exactly self.bytes bytes,
            // the device is idle (synchronized above), and data does not overlap it.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host, data.len()) };
            return Ok(());
        }
        // SAFETY: the buffer holds exactly data.len() bytes and lives as long as self.
        unsafe { result::memcpy_htod_sync(self.ptr, data) }.during("cuMemcpyHtoD")
    }

    pub fn download(&self) -> Result<Vec<u8>, CudaError> {
        let mut out = Vec::new();
        self.download_into(&mut out)?;
        Ok(out)
    }

    /// Reads the buffer back into `out`, resized to its bytes: host memory kept from one
    /// read to the next is not faulted in again (a fresh 64 MiB cost 40 ms of page faults on
    /// a virtual machine's host, the copy 4 ms).
    pub fn download_into(&self, out: &mut Vec<u8>) -> Result<(), CudaError> {
        match out.capacity() >= self.bytes {
            true => out.resize(self.bytes, 0),
            // Zeroed by the allocator, page by page as the copy touches them.
            false => *out = vec![0u8; self.bytes],
        }
        if let (Placement::Pinned | Placement::Pageable { .. }, Some(host)) =
            (&self.placement, self.host_view())
        {
            // A copy into it may still be under way.
            super::synchronize()?;
            // SAFETY: the buffer is host memory at `host` of exactly self.bytes bytes, and
            // the device is done with it (synchronized above).
            out.copy_from_slice(unsafe { std::slice::from_raw_parts(host, self.bytes) });
            return Ok(());
        }
        // SAFETY: out holds exactly self.bytes bytes; the buffer is live, and a managed or
        // mapped one is reached by the same unified address.
        unsafe { result::memcpy_dtoh_sync(out.as_mut_slice(), self.ptr) }.during("cuMemcpyDtoH")
    }

    /// Reads back only the byte `ranges` (each within the buffer), into a buffer-sized
    /// copy whose other bytes are zero: a check that reads a sample of a large output then
    /// moves kilobytes, and the untouched zeros are never faulted in.
    pub fn download_ranges(&self, ranges: &[Range<usize>]) -> Result<Vec<u8>, CudaError> {
        if let Some(r) = ranges
            .iter()
            .find(|r| r.start > r.end || r.end > self.bytes)
        {
            return Err(CudaError::Library(format!(
                "read back of bytes {r:?} of a buffer of {}",
                self.bytes
            )));
        }
        let mut out = vec![0u8; self.bytes];
        if let (Placement::Pinned | Placement::Pageable { .. }, Some(host)) =
            (&self.placement, self.host_view())
        {
            // A copy into it may still be under way.
            super::synchronize()?;
            // SAFETY: the buffer is host memory at `host` of exactly self.bytes bytes, the
            // device is done with it (synchronized above), and each range lies within it.
            let all = unsafe { std::slice::from_raw_parts(host, self.bytes) };
            for r in ranges {
                out[r.clone()].copy_from_slice(&all[r.clone()]);
            }
            return Ok(out);
        }
        // The ranges gathered on the device into one staging buffer by copies enqueued back
        // to back, then read back in one: a synchronous copy per range took 15-30 µs each
        // (a sampled check of 16 stretches of two buffers, 0.5 ms on an H200).
        let total: usize = ranges.iter().map(|r| r.len()).sum();
        let staging = DeviceBuffer::alloc(total)?;
        let mut at = 0;
        for r in ranges {
            // Device memory, or managed or mapped memory by the same unified address.
            // SAFETY: the range lies within the buffer (checked above), [at, at + len)
            // within the staging buffer of all the ranges' bytes; both live for the copy
            // (the staging buffer is freed by a synchronizing cuMemFree).
            unsafe {
                result::memcpy_dtod_async(
                    staging.ptr + at as u64,
                    self.ptr + r.start as u64,
                    r.len(),
                    std::ptr::null_mut(),
                )
            }
            .during("cuMemcpyDtoDAsync")?;
            at += r.len();
        }
        let mut gathered = vec![0u8; total];
        if total > 0 {
            // SAFETY: `gathered` holds exactly the staging buffer's bytes; the copy waits on
            // the stream the gathering copies were enqueued on.
            unsafe { result::memcpy_dtoh_sync(&mut gathered, staging.ptr) }
                .during("cuMemcpyDtoH")?;
        }
        let mut at = 0;
        for r in ranges {
            out[r.clone()].copy_from_slice(&gathered[at..at + r.len()]);
            at += r.len();
        }
        Ok(out)
    }

    /// Sets every byte by copies from the host and waits: no work runs on the GPU (a
    /// memset would, and load the driver's own kernels before a first launch). The copies
    /// come from one small block, so no host copy of the whole buffer is made.
    pub fn fill_by_copy(&self, byte: u8) -> Result<(), CudaError> {
        if self.host_view().is_some() {
            return self.upload(&vec![byte; self.bytes]);
        }
        const BLOCK: usize = 4 << 20;
        let block = vec![byte; self.bytes.min(BLOCK)];
        for start in (0..self.bytes).step_by(BLOCK) {
            let len = BLOCK.min(self.bytes - start);
            // SAFETY: [start, start + len) lies within the device buffer, which is live,
            // and block holds at least len bytes.
            unsafe { result::memcpy_htod_sync(self.ptr + start as u64, &block[..len]) }
                .during("cuMemcpyHtoD")?;
        }
        Ok(())
    }

    /// Sets every byte and waits (0xFF poisons floats to NaN).
    pub fn fill(&self, byte: u8) -> Result<(), CudaError> {
        if let (Placement::Pinned | Placement::Pageable { .. }, Some(host)) =
            (&self.placement, self.host_view())
        {
            // The device may still be using the buffer from earlier work.
            super::synchronize()?;
            // Set in place: a host copy of the buffer to upload cost as much again (a 1 GiB
            // pinned output's zeroing took 0.2 s of an audit).
            // SAFETY: the buffer is host memory at `host` of exactly self.bytes bytes, and
            // the device is done with it (synchronized above).
            unsafe { std::ptr::write_bytes(host, byte, self.bytes) };
            return Ok(());
        }
        // SAFETY: writes self.bytes bytes of a live buffer.
        unsafe { result::memset_d8_sync(self.ptr, byte, self.bytes) }.during("cuMemsetD8")
    }

    /// Enqueues a memset of every byte on the legacy default stream, without waiting.
    pub fn fill_async(&self, byte: u8) -> Result<(), CudaError> {
        self.fill_on(byte, std::ptr::null_mut())
    }

    /// Enqueues a memset of every byte on `stream` (the null stream: the legacy one, which
    /// orders it before anything enqueued later), without waiting.
    pub(super) fn fill_on(&self, byte: u8, stream: sys::CUstream) -> Result<(), CudaError> {
        // SAFETY: writes self.bytes bytes of a live buffer on a live stream (or one being
        // captured); the buffer is freed only after a synchronizing cuMemFree.
        unsafe { result::memset_d8_async(self.ptr, byte, self.bytes, stream) }
            .during("cuMemsetD8Async")
    }
}

impl DeviceBuffer {
    /// Enqueues a memset of every element to `fill` on the legacy default stream (ordered
    /// before anything enqueued later), without waiting.
    pub fn fill_with_async(&self, fill: Fill) -> Result<(), CudaError> {
        self.fill_with_on(fill, std::ptr::null_mut())
    }

    /// Enqueues a memset of every element to `fill` on `stream`, without waiting.
    pub(super) fn fill_with_on(&self, fill: Fill, stream: sys::CUstream) -> Result<(), CudaError> {
        if self.on_host() {
            return Err(CudaError::Library(
                "a memset of host memory: reset buffers live in device or managed memory".into(),
            ));
        }
        if !self.bytes.is_multiple_of(fill.unit()) {
            return Err(CudaError::Library(format!(
                "a buffer of {} bytes cannot be set {} bytes at a time",
                self.bytes,
                fill.unit()
            )));
        }
        let count = self.bytes / fill.unit();
        // SAFETY: writes `count` units of `fill`, exactly self.bytes bytes, of a live device
        // or managed buffer on a live stream (or one being captured); the buffer is freed
        // only after a synchronizing cuMemFree.
        let code = unsafe {
            match fill {
                Fill::Bytes(b) => sys::cuMemsetD8Async(self.ptr, b, count, stream),
                Fill::Halves(h) => sys::cuMemsetD16Async(self.ptr, h, count, stream),
                Fill::Words(w) => sys::cuMemsetD32Async(self.ptr, w, count, stream),
            }
        };
        code.result().during("cuMemsetAsync")
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        match &self.placement {
            Placement::Device | Placement::Managed => {
                // SAFETY: ptr came from cuMemAlloc or cuMemAllocManaged and is freed once.
                let _ = unsafe { result::free_sync(self.ptr) };
            }
            Placement::Mapped { host } => {
                // SAFETY: host came from cuMemHostAlloc and is freed once, after the device
                // is done with it (cuMemFreeHost synchronizes).
                let _ = unsafe { result::free_host(*host) };
            }
            Placement::Pinned => {
                // SAFETY: ptr is the host address cuMemHostAlloc gave, freed once, after the
                // device is done with it (cuMemFreeHost synchronizes).
                let _ = unsafe { result::free_host(self.ptr as *mut c_void) };
            }
            Placement::Pageable { allocated } => {
                // A copy from or into it may still be under way: wait before it is freed.
                let _ = super::synchronize();
                let slice = std::ptr::slice_from_raw_parts_mut(self.ptr as *mut u8, *allocated);
                // SAFETY: ptr and allocated are the boxed slice leaked in `alloc_pageable`,
                // reclaimed once, and nothing uses it any more (the device is synchronized).
                drop(unsafe { Box::from_raw(slice) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Direction;

    #[test]
    fn a_directions_ends_are_the_ends_it_was_made_from() {
        for (src, dst) in [(true, false), (false, true), (false, false)] {
            assert_eq!(Direction::between(src, dst).unwrap().on_host(), (src, dst));
        }
        assert_eq!(Direction::between(true, true), None);
    }
}
