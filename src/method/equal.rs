//! Two buffers compared on the GPU: the first byte at which they differ (the built-in
//! `kernels/audit.cu`), so that checking a copy or an output against its reference's, or
//! reading an input back after the audit's launch, moves eight bytes across the host link
//! instead of the buffers.

use crate::experiment::Dtype;
use cuda::{CudaError, DeviceBuffer, Dims, Function, Launch, Param};

/// Blocks and threads of the comparison: enough to read at full bandwidth on any GPU.
const GRID: u32 = 1024;
const BLOCK: u32 = 256;

/// The first byte at which `a` and `b` (both in device memory, of one size) differ, with
/// `func` the built-in `first_difference`; None where they are equal. With `nans_of` a float
/// type, a NaN in `a` counts as a difference too (its element's first byte): a NaN equals
/// nothing, itself included.
pub fn first_difference(
    func: &Function,
    a: &DeviceBuffer,
    b: &DeviceBuffer,
    nans_of: Option<Dtype>,
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
        Param::bytes(&nan_kind(nans_of).to_ne_bytes()),
        Param::Buffer(&first),
    ];
    Launch::new(func, dims, &values).enqueue()?;
    let bytes = first.download()?;
    let at = u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes"));
    Ok((at != u64::MAX).then_some(at as usize))
}

/// The kernel's `nan_kind` for a type: 0 for none (integers, or bytes alone).
fn nan_kind(dtype: Option<Dtype>) -> u32 {
    match dtype {
        Some(Dtype::F16) => 1,
        Some(Dtype::Bf16) => 2,
        Some(Dtype::F32) => 3,
        Some(Dtype::F64) => 4,
        _ => 0,
    }
}
