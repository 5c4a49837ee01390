//! CPU references that a kernel's output is checked against before it is timed.

mod cache;
mod interpreter;
mod matmul;
pub mod python;
pub mod python_gpu;
#[cfg(test)]
mod python_tests;

pub use cache::Cache;

use super::failure::Failure;
use super::host_buffer::HostBuffer;
use std::ops::Range;

/// Which elements a reference reads is the reference's own rule: the cache asks it here,
/// where `matmul` (which reads the cache) is known.
impl Cache<'_> {
    /// The output elements the reference reads, where it reads only some (row-major
    /// ranges); None where it reads the whole output.
    pub fn elements_read(&self, reference: &str, dims: &[i64]) -> Option<Vec<Range<usize>>> {
        match (reference, dims) {
            ("matmul", &[m, _, n]) => matmul::rows_read(m as usize, n as usize, self.sample_seed),
            _ => None,
        }
    }
}

/// The output elements (row-major indices, rows ascending) an audited region's matmul check
/// of an m x n output compares: a sample drawn from `seed` (all of a small output).
pub fn matmul_sample(m: usize, n: usize, seed: u64) -> Vec<usize> {
    matmul::matmul_cells((m, n), seed, 0, false)
}

/// A matmul's output at `cells` (`found`: element j is cell j's) against float64 reference
/// values computed elsewhere (on the GPU, for an audit's draw); Ok holds the check's account.
pub fn matmul_judge(
    found: &HostBuffer,
    (m, n): (usize, usize),
    cells: &[usize],
    want: &[f64],
    tolerance: Option<f64>,
) -> Result<String, Failure> {
    matmul::judge(found, (m, n), cells, want, tolerance)
}

/// Compares `out` against the named reference; Ok holds a one-line account of the check.
pub fn check(
    reference: &str,
    inputs: &[HostBuffer],
    out: &HostBuffer,
    dims: &[i64],
    tolerance: Option<f64>,
    cache: &Cache,
) -> Result<String, Failure> {
    match reference {
        "matmul" => matmul::check(&inputs[0], &inputs[1], out, dims, tolerance, cache),
        "copy" => copy(&inputs[0], out),
        other => Err(Failure::from(format!("unknown reference `{other}`"))),
    }
}

fn copy(src: &HostBuffer, out: &HostBuffer) -> Result<String, Failure> {
    let n = src.bytes.len().min(out.bytes.len());
    // A slice comparison (memcmp) first: outputs of a GiB compare in a fraction of a second.
    if src.bytes[..n] == out.bytes[..n] {
        return Ok(format!("copy: all {} elements equal", n / out.dtype.size()));
    }
    // The slices differ, so some byte does.
    let i = src.bytes[..n]
        .iter()
        .zip(&out.bytes[..n])
        .position(|(a, b)| a != b)
        .unwrap_or_default();
    let elements = n / out.dtype.size();
    let unwritten = (0..elements)
        .filter(|&e| out.poisoned(e) && !src.poisoned(e))
        .count();
    if unwritten > 0 {
        let first = (0..elements)
            .find(|&e| out.poisoned(e) && !src.poisoned(e))
            .unwrap_or_default();
        return Err(Failure::from(out.unwritten(unwritten, elements, first)));
    }
    Err(Failure::from(format!(
        "copy check failed: {}[{}] differs from {}",
        out.name,
        i / out.dtype.size(),
        src.name
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Dtype;

    pub(super) fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn copy_finds_first_difference() {
        let s = f32_bytes(&[1.0, 2.0, 3.0]);
        let d = f32_bytes(&[1.0, 9.0, 3.0]);
        let buf = |name, bytes| HostBuffer {
            name,
            dtype: Dtype::F32,
            bytes,
        };
        assert!(check(
            "copy",
            &[buf("src", &s)],
            &buf("dst", &s),
            &[],
            None,
            &Cache::new(None, String::new(), 7)
        )
        .is_ok());
        assert!(check(
            "copy",
            &[buf("src", &s)],
            &buf("dst", &d),
            &[],
            None,
            &Cache::new(None, String::new(), 7)
        )
        .unwrap_err()
        .message
        .contains("dst[1]"));
    }
}
