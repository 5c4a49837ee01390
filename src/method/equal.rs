//! Two buffers compared on the GPU: the first byte at which they differ (the built-in
//! `kernels/audit.cu`), so that checking a copy or an output against its reference's, or
//! reading an input back after the audit's launch, moves eight bytes across the host link
//! instead of the buffers.

use crate::experiment::Dtype;
use cuda::{CudaError, DeviceBuffer, Dims, Function, Launch, Param};

/// Blocks and threads of the comparison: enough to read at full bandwidth on any GPU.
const GRID: u32 = 1024;
const BLOCK: u32 = 256;

/// Bytes of the words a comparison writes what it found into: `out_of_tolerance`'s tally.
pub const WORDS: usize = 9 * 8;

/// A built-in comparison kernel and the device words it writes what it found into, which
/// the session keeps (`worker::kernels`): each call reads them back before it returns.
pub struct Comparison<'a> {
    pub func: Function,
    pub words: &'a DeviceBuffer,
}

/// The launch of a comparison kernel: a grid-stride loop over the buffers.
fn grid_stride() -> Dims {
    Dims {
        grid: (GRID, 1, 1),
        block: (BLOCK, 1, 1),
        shared_bytes: 0,
    }
}

/// The first byte at which `a` and `b` (both in device memory, of one size) differ, with
/// `func` the built-in `first_difference`; None where they are equal. With `nans_of` a float
/// type, a NaN in `a` counts as a difference too (its element's first byte): a NaN equals
/// nothing, itself included.
pub fn first_difference(
    Comparison { func, words: first }: Comparison,
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
    first.fill(0xFF)?;
    let dims = grid_stride();
    let values = [
        Param::Buffer(a),
        Param::Buffer(b),
        Param::u64(a.bytes() as u64),
        Param::bytes(&nan_kind(nans_of).to_ne_bytes()),
        Param::Buffer(first),
    ];
    Launch::new(&func, dims, &values).enqueue()?;
    let bytes = first.download()?;
    let at = u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes"));
    Ok((at != u64::MAX).then_some(at as usize))
}

/// `buf`'s checksum under `key` (`checksum` in `kernels/audit.cu`): what a buffer the
/// worker keeps on the device held, to tell later that nothing wrote it.
pub fn checksum(
    Comparison { func, words: sum }: &Comparison,
    buf: &DeviceBuffer,
    key: u64,
) -> Result<u64, CudaError> {
    sum.fill(0)?;
    let dims = grid_stride();
    let values = [
        Param::Buffer(buf),
        Param::u64(buf.bytes() as u64),
        Param::u64(key),
        Param::Buffer(sum),
    ];
    Launch::new(func, dims, &values).enqueue()?;
    let bytes = sum.download()?;
    Ok(u64::from_ne_bytes(bytes[..8].try_into().expect("8 bytes")))
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

/// What a check's compare on the GPU found (`out_of_tolerance` in `kernels/audit.cu`), every
/// element judged as the host's compare judges one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tally {
    /// Elements outside the tolerance, and the first of them.
    pub bad: u64,
    /// Of those, the elements still holding the poison where the reference's do not, and
    /// the first of them.
    pub unwritten: u64,
    pub first_unwritten: Option<usize>,
    /// The largest error (NaN where one is) and the largest finite relative error.
    pub max_abs: f64,
    pub max_rel: f64,
    /// The first element outside with the largest error (a NaN's where every one is).
    pub worst: Option<usize>,
}

/// `got` against `want` (in device memory, of one size, `count` elements of `dtype`), every
/// element within `|got - want| <= atol + rtol * |want|`, with `func` the built-in
/// `out_of_tolerance`: a 134M-element output in a millisecond, where the host took seconds
/// and a sample of it let a kernel that skipped a tenth of its rows pass one check in five.
/// With `sample` (a key and a number of groups of 16 bytes), only the groups the key draws
/// (`worker::samples::on_gpu`: an audit's check of a large output).
pub fn out_of_tolerance(
    Comparison { func, words: tally }: Comparison,
    (got, want): (&DeviceBuffer, &DeviceBuffer),
    dtype: Dtype,
    (rtol, atol): (f64, f64),
    sample: Option<(u64, u64)>,
) -> Result<Tally, CudaError> {
    let count = (got.bytes().min(want.bytes()) / dtype.size()) as u64;
    let (sample_key, sampled) = sample.unwrap_or((0, 0));
    let dims = grid_stride();
    let pass = |worst_bits: u64| -> Result<[u64; 9], CudaError> {
        let firsts_unset = [0, u64::MAX, 0, u64::MAX, 0, 0, 0, 0, u64::MAX];
        tally.upload(&firsts_unset.map(u64::to_ne_bytes).concat())?;
        let values = [
            Param::Buffer(got),
            Param::Buffer(want),
            Param::u64(count),
            Param::bytes(&dtype.code().to_ne_bytes()),
            Param::bytes(&(dtype.size() as u32).to_ne_bytes()),
            Param::bytes(&rtol.to_ne_bytes()),
            Param::bytes(&atol.to_ne_bytes()),
            Param::u64(worst_bits),
            Param::u64(sample_key),
            Param::u64(sampled),
            Param::Buffer(tally),
        ];
        Launch::new(&func, dims, &values).enqueue()?;
        let bytes = tally.download()?;
        let word = |k: usize| u64::from_ne_bytes(bytes[8 * k..8 * k + 8].try_into().expect("8"));
        Ok(std::array::from_fn(word))
    };
    let found = pass(u64::MAX)?;
    let index = |v: u64| (v != u64::MAX).then_some(v as usize);
    let worst = match (found[0], found[7]) {
        (0, _) => None,
        // Every error outside is a NaN's: the first of them.
        (_, 0) => index(found[1]),
        (_, worst_bits) => index(pass(worst_bits)?[8]),
    };
    Ok(Tally {
        bad: found[0],
        unwritten: found[2],
        first_unwritten: index(found[3]),
        max_abs: match found[6] {
            0 => f64::from_bits(found[4]),
            _ => f64::NAN,
        },
        max_rel: f64::from_bits(found[5]),
        worst,
    })
}
