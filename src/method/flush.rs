//! L2 eviction before a timed launch: write (or read) a buffer larger than L2, then
//! synchronize, all outside the timed region; or, in a graph, before each of its launches.
//! The buffer is allocated once per cell, never in the loop.

use crate::experiment::knobs::cache::FlushMethod;
use cuda::{synchronize, CudaError, DeviceBuffer, Dims, Function, Launch, Param, Prelude};

/// The flush buffer, allocated once per cell.
pub struct FlushBuffer(DeviceBuffer);

/// An L2 flush ready to run: the buffer's memset, or the flush kernel's launch over it.
pub struct Flush<'b> {
    buf: &'b DeviceBuffer,
    /// The write or read kernel's launch (none for `FlushMethod::Memset`).
    kernel: Option<Launch<'b>>,
}

/// Threads per block and blocks per SM of a flush kernel: enough to saturate bandwidth.
const BLOCK: u32 = 256;
const BLOCKS_PER_SM: u32 = 8;

impl FlushBuffer {
    pub fn alloc(bytes: usize) -> Result<FlushBuffer, FlushError> {
        DeviceBuffer::alloc(bytes)
            .map(FlushBuffer)
            .map_err(|e| FlushError::DoesNotFit(bytes, e))
    }

    /// A flush over this buffer; `kernel` is the built-in flush kernel of `method` (none
    /// for a memset).
    pub fn flush(
        &self,
        method: FlushMethod,
        kernel: Option<&Function>,
        sm_count: i64,
    ) -> Result<Flush<'_>, FlushError> {
        let buf = &self.0;
        let kernel = match (method, kernel) {
            (FlushMethod::Memset, _) => None,
            (FlushMethod::Kernel | FlushMethod::Read, Some(func)) => {
                let words = (buf.bytes() / 4) as u64;
                let dims = Dims {
                    grid: (sm_count.max(1) as u32 * BLOCKS_PER_SM, 1, 1),
                    block: (BLOCK, 1, 1),
                    shared_bytes: 0,
                };
                let params = [
                    Param::Buffer(buf),
                    Param::u64(words),
                    Param::bytes(&0xA5A5_A5A5u32.to_ne_bytes()),
                ];
                Some(Launch::new(func, dims, &params))
            }
            (FlushMethod::Kernel | FlushMethod::Read, None) => {
                return Err(FlushError::KernelNotLoaded)
            }
        };
        Ok(Flush { buf, kernel })
    }
}

/// Why no flush could be made. The CUDA error is part of the message, not a source.
#[derive(Debug, thiserror::Error)]
pub enum FlushError {
    /// The buffer of so many bytes could not be allocated.
    #[error("the L2 flush buffer ({0} bytes) does not fit: {1}")]
    DoesNotFit(usize, CudaError),
    /// A flush by kernel was asked for without the kernel.
    #[error("the flush kernel is not loaded")]
    KernelNotLoaded,
}

impl<'b> Flush<'b> {
    /// The flush as a graph captures it before each launch.
    pub fn prelude(&mut self) -> Prelude<'_, 'b> {
        match &mut self.kernel {
            Some(launch) => Prelude::Launch(launch),
            None => Prelude::Memset(self.buf),
        }
    }

    /// Evicts L2 and waits until the flush is done.
    pub fn run(&mut self) -> Result<(), CudaError> {
        match &mut self.kernel {
            Some(launch) => launch.enqueue()?,
            None => self.buf.fill_async(0)?,
        }
        synchronize()
    }
}
