//! CPU references that a kernel's output is checked against before it is timed.

use crate::experiment::Dtype;
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// Elements checked at most per matmul; larger outputs are checked at a fixed random sample.
const MATMUL_FULL_CHECK: usize = 512 * 512;
const MATMUL_SAMPLE: usize = 4096;

/// A buffer's contents on the host, read back from the device.
pub struct HostBuffer<'a> {
    pub name: &'a str,
    pub dtype: Dtype,
    pub bytes: &'a [u8],
}

impl HostBuffer<'_> {
    fn f64_at(&self, i: usize) -> f64 {
        let s = self.dtype.size();
        let b = &self.bytes[i * s..(i + 1) * s];
        match self.dtype {
            Dtype::F32 => f32::from_ne_bytes(b.try_into().unwrap()) as f64,
            Dtype::F64 => f64::from_ne_bytes(b.try_into().unwrap()),
            Dtype::I32 => i32::from_ne_bytes(b.try_into().unwrap()) as f64,
            Dtype::U32 => u32::from_ne_bytes(b.try_into().unwrap()) as f64,
            Dtype::I64 => i64::from_ne_bytes(b.try_into().unwrap()) as f64,
            Dtype::U64 => u64::from_ne_bytes(b.try_into().unwrap()) as f64,
        }
    }

    fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size()
    }
}

/// Compares `out` against the named reference; Ok holds a one-line account of the check.
pub fn check(
    reference: &str,
    inputs: &[HostBuffer],
    out: &HostBuffer,
    dims: &[i64],
    tolerance: f64,
) -> Result<String, String> {
    match reference {
        "matmul" => matmul(&inputs[0], &inputs[1], out, dims, tolerance),
        "copy" => copy(&inputs[0], out),
        other => Err(format!("unknown reference `{other}`")),
    }
}

/// `out = a (m x k) * b (k x n)`, row-major, against a float64 reference.
fn matmul(
    a: &HostBuffer,
    b: &HostBuffer,
    out: &HostBuffer,
    dims: &[i64],
    tol: f64,
) -> Result<String, String> {
    let (m, k, n) = (dims[0] as usize, dims[1] as usize, dims[2] as usize);
    if a.len() < m * k || b.len() < k * n || out.len() < m * n {
        return Err(format!(
            "matmul {m}x{k}x{n} does not fit the buffers ({}, {}, {} elements)",
            a.len(),
            b.len(),
            out.len()
        ));
    }
    let cells: Vec<usize> = if m * n <= MATMUL_FULL_CHECK {
        (0..m * n).collect()
    } else {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        (0..MATMUL_SAMPLE)
            .map(|_| rng.random_range(0..m * n))
            .collect()
    };
    // Decoded once, B transposed: each reference element is then a contiguous dot product.
    let a: Vec<f64> = (0..m * k).map(|i| a.f64_at(i)).collect();
    let mut bt = vec![0.0; k * n];
    for i in 0..k {
        for j in 0..n {
            bt[j * k + i] = b.f64_at(i * n + j);
        }
    }
    let (mut err2, mut ref2) = (0.0f64, 0.0f64);
    for &idx in &cells {
        let (row, col) = (idx / n, idx % n);
        let want: f64 = a[row * k..(row + 1) * k]
            .iter()
            .zip(&bt[col * k..(col + 1) * k])
            .map(|(x, y)| x * y)
            .sum();
        let got = out.f64_at(idx);
        if !got.is_finite() {
            return Err(format!(
                "{}[{row}][{col}] is {got}: the kernel did not write it or overflowed",
                out.name
            ));
        }
        err2 += (got - want).powi(2);
        ref2 += want * want;
    }
    let rel = (err2 / ref2.max(f64::MIN_POSITIVE)).sqrt();
    let scope = if cells.len() == m * n {
        format!("all {} elements", m * n)
    } else {
        format!("{} sampled elements of {}", cells.len(), m * n)
    };
    if rel.is_nan() || rel >= tol {
        return Err(format!(
            "matmul check failed: relative error {rel:.3e} over {scope}, tolerance {tol:.0e}"
        ));
    }
    Ok(format!(
        "matmul vs float64: relative error {rel:.2e} over {scope}"
    ))
}

fn copy(src: &HostBuffer, out: &HostBuffer) -> Result<String, String> {
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
    Err(format!(
        "copy check failed: {}[{}] differs from {}",
        out.name,
        i / out.dtype.size(),
        src.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn matmul_accepts_right_and_rejects_wrong_and_unwritten() {
        let a = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
        let b = f32_bytes(&[5.0, 6.0, 7.0, 8.0]);
        let good = f32_bytes(&[19.0, 22.0, 43.0, 50.0]);
        let bad = f32_bytes(&[19.0, 22.0, 43.0, 51.0]);
        let nan = f32_bytes(&[19.0, 22.0, 43.0, f32::NAN]);
        let buf = |name, bytes| HostBuffer {
            name,
            dtype: Dtype::F32,
            bytes,
        };
        let ins = [buf("A", &a[..]), buf("B", &b[..])];
        assert!(check("matmul", &ins, &buf("C", &good), &[2, 2, 2], 1e-4).is_ok());
        assert!(check("matmul", &ins, &buf("C", &bad), &[2, 2, 2], 1e-4)
            .unwrap_err()
            .contains("relative error"));
        assert!(check("matmul", &ins, &buf("C", &nan), &[2, 2, 2], 1e-4)
            .unwrap_err()
            .contains("did not write"));
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
        assert!(check("copy", &[buf("src", &s)], &buf("dst", &s), &[], 0.0).is_ok());
        assert!(check("copy", &[buf("src", &s)], &buf("dst", &d), &[], 0.0)
            .unwrap_err()
            .contains("dst[1]"));
    }
}
