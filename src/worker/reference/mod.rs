//! CPU references that a kernel's output is checked against before it is timed.

mod matmul;
pub mod python;

use super::buffers::POISON;
use super::failure::Failure;
use super::shared;
use crate::experiment::Dtype;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A buffer's contents on the host, read back from the device.
pub struct HostBuffer<'a> {
    pub name: &'a str,
    pub dtype: Dtype,
    pub bytes: &'a [u8],
}

impl HostBuffer<'_> {
    pub(super) fn f64_at(&self, i: usize) -> f64 {
        let s = self.dtype.size();
        self.dtype.read(&self.bytes[i * s..(i + 1) * s])
    }

    /// Element `i` of an integer buffer, exactly; None for floats.
    pub(super) fn int_at(&self, i: usize) -> Option<i128> {
        let s = self.dtype.size();
        self.dtype.read_int(&self.bytes[i * s..(i + 1) * s])
    }

    /// Element `i` as written in a message: an integer exactly.
    pub(super) fn show(&self, i: usize) -> String {
        match self.int_at(i) {
            Some(v) => v.to_string(),
            None => self.f64_at(i).to_string(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size()
    }

    /// Whether elements `range` hold the same bytes as `other`'s, and so equal values: none
    /// a NaN (which equals nothing, itself included).
    pub(super) fn identical(&self, other: &HostBuffer, range: &std::ops::Range<usize>) -> bool {
        let s = self.dtype.size();
        let span = range.start * s..range.end * s;
        let mine = self.bytes.get(span.clone());
        let same = mine.is_some() && mine == other.bytes.get(span);
        same && !(self.dtype.is_float() && range.clone().any(|i| self.f64_at(i).is_nan()))
    }

    /// Whether element `i` still holds the poison its buffer was filled with before the
    /// checked launch: the kernel never wrote it.
    pub(super) fn poisoned(&self, i: usize) -> bool {
        let s = self.dtype.size();
        self.bytes[i * s..(i + 1) * s].iter().all(|b| *b == POISON)
    }

    /// The account of an output the kernel left (partly) unwritten: `count` of the `of`
    /// elements compared still hold the poison, the first at `first`.
    pub(super) fn unwritten(&self, count: usize, of: usize, first: usize) -> String {
        format!(
            "output `{}` was not written: {count} of {of} elements compared still hold the poison, the first {}[{first}]",
            self.name, self.name
        )
    }
}

/// Where reference results are kept between the processes of one run, so that a sweep
/// point's reference is computed once, not once per fresh process.
pub struct Cache<'a> {
    dir: Option<&'a Path>,
    /// Names the inputs: their kernel, point and seed, from which they are drawn (hashing
    /// the inputs themselves would cost more than the reference at large sizes).
    inputs: String,
    /// The run's seed of the sampled checks' elements.
    pub(super) sample_seed: u64,
}

impl<'a> Cache<'a> {
    pub fn new(dir: Option<&'a Path>, inputs: String, sample_seed: u64) -> Self {
        Cache {
            dir,
            inputs,
            sample_seed,
        }
    }

    /// The output elements the reference reads, where it reads only some (row-major
    /// ranges); None where it reads the whole output.
    pub fn elements_read(&self, reference: &str, dims: &[i64]) -> Option<Vec<Range<usize>>> {
        match (reference, dims) {
            ("matmul", &[m, _, n]) => matmul::rows_read(m as usize, n as usize, self.sample_seed),
            _ => None,
        }
    }

    /// The file of the reference `name` for these inputs and dims.
    pub(super) fn file(&self, name: &str, inputs: &[&HostBuffer], dims: &[i64]) -> Option<PathBuf> {
        let dims: Vec<u8> = dims.iter().flat_map(|d| d.to_le_bytes()).collect();
        let seed = self.sample_seed.to_le_bytes().to_vec();
        let mut parts: Vec<Vec<u8>> = vec![name.into(), self.inputs.as_bytes().into(), dims, seed];
        for i in inputs {
            parts.push(i.name.as_bytes().into());
            parts.push((i.bytes.len() as u64).to_le_bytes().into());
        }
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        shared::file(self.dir, &parts, "f64")
    }

    /// The stored values, if another process stored them.
    pub(super) fn read(&self, file: &Option<PathBuf>, count: usize) -> Option<Vec<f64>> {
        let bytes = shared::read(file.as_deref(), count * 8)?;
        Some(
            bytes
                .chunks(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        )
    }

    /// Stores values for later processes.
    pub(super) fn write(&self, file: &Option<PathBuf>, values: &[f64]) {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        shared::write(file.as_deref(), &bytes);
    }
}

/// The output elements (row-major indices, ascending) an audited region's matmul check of
/// an m x n output compares: a sample drawn from `seed` (all of a small output).
pub fn matmul_sample(m: usize, n: usize, seed: u64) -> Vec<usize> {
    matmul::matmul_cells(m, n, seed, 0)
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
