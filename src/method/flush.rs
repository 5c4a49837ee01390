//! L2 eviction before a timed launch: write (or read) a buffer larger than L2, then
//! synchronize, all outside the timed region. The buffer is allocated once per cell, never in
//! the loop.

use crate::experiment::FlushMethod;
use crate::worker::gpu::{DeviceBuffer, Gpu, Launch};
use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::CUfunction;

pub struct Flush {
    buf: DeviceBuffer,
    /// The write or read kernel's launch (none for `FlushMethod::Memset`).
    kernel: Option<Launch>,
}

/// Threads per block and blocks per SM of a flush kernel: enough to saturate bandwidth.
const BLOCK: u32 = 256;
const BLOCKS_PER_SM: u32 = 8;

impl Flush {
    /// `kernel` is the built-in flush kernel of `method` (none for a memset).
    pub fn new(
        bytes: usize,
        method: FlushMethod,
        kernel: Option<CUfunction>,
        sm_count: i64,
    ) -> Result<Flush, String> {
        let buf = DeviceBuffer::alloc(bytes)
            .map_err(|e| format!("the L2 flush buffer ({bytes} bytes) does not fit: {e}"))?;
        let kernel = match (method, kernel) {
            (FlushMethod::Memset, _) => None,
            (FlushMethod::Kernel | FlushMethod::Read, Some(func)) => {
                let words = (bytes / 4) as u64;
                let values = [
                    buf.ptr.to_ne_bytes().to_vec(),
                    words.to_ne_bytes().to_vec(),
                    0xA5A5_A5A5u32.to_ne_bytes().to_vec(),
                ];
                Some(Launch::new(
                    func,
                    (sm_count.max(1) as u32 * BLOCKS_PER_SM, 1, 1),
                    (BLOCK, 1, 1),
                    0,
                    &values,
                ))
            }
            (FlushMethod::Kernel | FlushMethod::Read, None) => {
                return Err("the flush kernel is not loaded".into())
            }
        };
        Ok(Flush { buf, kernel })
    }

    /// Evicts L2 and waits until the flush is done.
    pub fn run(&mut self, gpu: &Gpu) -> Result<(), DriverError> {
        match &mut self.kernel {
            Some(launch) => launch.enqueue()?,
            // SAFETY: the buffer is live and `bytes` long; the null stream is the legacy one.
            None => unsafe {
                result::memset_d8_async(self.buf.ptr, 0, self.buf.bytes, std::ptr::null_mut())?
            },
        }
        gpu.synchronize()
    }
}
