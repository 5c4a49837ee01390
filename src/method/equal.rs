//! Two buffers compared on the GPU: the first byte at which they differ (the built-in
//! `kernels/audit.cu`), so that checking a copy, or reading an input back after the audit's
//! launch, moves eight bytes across the host link instead of the buffers.

use crate::cuda::{CudaError, DeviceBuffer, Dims, Function, Launch, Param};

/// Blocks and threads of the comparison: enough to read at full bandwidth on any GPU.
const GRID: u32 = 1024;
const BLOCK: u32 = 256;

/// The first byte at which `a` and `b` (both in device memory, of one size) differ, with
/// `func` the built-in `first_difference`; None where they are equal.
pub fn first_difference(
    func: &Function,
    a: &DeviceBuffer,
    b: &DeviceBuffer,
) -> Result<Option<usize>, CudaError> {
    if a.bytes() != b.bytes() {
        return Err(CudaError::Library(format!(
            "a comparison of {} bytes with {}",
            a.bytes(),
            b.bytes()
        )));
    }
    let first = DeviceBuffer::alloc(8)?;
    first.fill(0xFF)?;
    let dims = Dims {
        grid: (GRID, 1, 1),
        block: (BLOCK, 1, 1),
        shared_bytes: 0,
    };
    let values = [
        Param::Buffer(a),
        Param::Buffer(b),
        Param::u64(a.bytes() as u64),
        Param::Buffer(&first),
    ];
    Launch::new(func, dims, &values).enqueue()?;
    let bytes = first.download()?;
    let at = u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes"));
    Ok((at != u64::MAX).then_some(at as usize))
}
