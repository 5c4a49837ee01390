//! The float64 matmul reference: every element of a small output, a sample of a large one
//! drawn from the run's seed.

use super::cache::Cache;
use crate::worker::cores;
use crate::worker::failure::Failure;
use crate::worker::host_buffer::HostBuffer;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::ops::Range;

/// Elements checked at most per matmul; larger outputs are checked at a random sample of
/// `MATMUL_SAMPLE` elements in `MATMUL_SAMPLE_ROWS` rows, so that only those rows are read
/// back (a fresh process at n = 4096 read all 64 MiB in 65 ms). The sample is drawn from
/// the run's own seed, which no kernel can know: one that computed only the rows of a
/// fixed sample would pass a check that reads only them.
const MATMUL_FULL_CHECK: usize = 512 * 512;
const MATMUL_SAMPLE: usize = 4096;
const MATMUL_SAMPLE_ROWS: usize = 64;

/// The rows of an m x n output a check reads, where it reads only some (row-major ranges).
pub(super) fn rows_read(m: usize, n: usize, seed: u64) -> Option<Vec<Range<usize>>> {
    let cells = matmul_cells((m, n), seed, MATMUL_FULL_CHECK, true);
    if cells.len() == m * n {
        return None;
    }
    let mut rows: Vec<usize> = cells.iter().map(|c| c / n).collect();
    rows.dedup();
    Some(rows.into_iter().map(|r| r * n..(r + 1) * n).collect())
}

/// The output elements a matmul's check compares: all of an output of at most
/// `full_up_to` elements; of a larger one, a random sample in a few rows, drawn from
/// `seed`, sorted. The check of a launch before the timed ones reads all of an output up
/// to 512 x 512; an audited region's, a sample of its own (its kernel was checked in full).
/// With `sorted` false, each row's columns stay in the order drawn (the same cells): a check
/// on the GPU reads them in any order, and sorting took half of the 70-160 µs the draw took
/// on an H200's host, most of an audited matmul check's host time.
pub(super) fn matmul_cells(
    (m, n): (usize, usize),
    seed: u64,
    full_up_to: usize,
    sorted: bool,
) -> Vec<usize> {
    if m * n <= full_up_to.max(MATMUL_SAMPLE) {
        return (0..m * n).collect();
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut rows = rand::seq::index::sample(&mut rng, m, m.min(MATMUL_SAMPLE_ROWS)).into_vec();
    rows.sort_unstable();
    let per_row = MATMUL_SAMPLE.div_ceil(rows.len());
    let mut cells = Vec::with_capacity(rows.len() * per_row);
    for row in rows {
        let start = cells.len();
        cells.extend((0..per_row).map(|_| row * n + rng.random_range(0..n)));
        if sorted {
            cells[start..].sort_unstable();
        }
    }
    cells
}

/// `out = a (m x k) * b (k x n)`, row-major, against a float64 reference: within a
/// relative error (`tol`, by default 1e-4), or, for an integer output without one, exactly.
pub(super) fn check(
    a: &HostBuffer,
    b: &HostBuffer,
    out: &HostBuffer,
    dims: &[i64],
    tol: Option<f64>,
    cache: &Cache,
) -> Result<String, Failure> {
    let (m, k, n) = (dims[0] as usize, dims[1] as usize, dims[2] as usize);
    if a.len() < m * k || b.len() < k * n || out.len() < m * n {
        return Err(Failure::from(format!(
            "matmul {m}x{k}x{n} does not fit the buffers ({}, {}, {} elements)",
            a.len(),
            b.len(),
            out.len()
        )));
    }
    let cells = matmul_cells((m, n), cache.sample_seed, MATMUL_FULL_CHECK, true);
    let file = cache.file("matmul", &[a, b], dims);
    let want = match cache.read(&file, cells.len()) {
        Some(w) => w,
        None => {
            let w = matmul_reference(a, b, (m, k, n), &cells);
            cache.write(&file, &w);
            w
        }
    };
    let size = out.dtype.size();
    let at_cells: Vec<u8> = (cells.iter())
        .flat_map(|&c| &out.bytes[c * size..(c + 1) * size])
        .copied()
        .collect();
    let found = HostBuffer {
        bytes: &at_cells,
        ..*out
    };
    judge(&found, (m, n), &cells, &want, tol)
}

/// The output's elements at `cells` (`found`: element j is cell j's, so a sample crosses
/// the host link and memory alone) against the float64 reference's values there (`want`,
/// in the same order): every one written, integers equal, floats within a relative error
/// of `tol` (1e-4 where none is given) over the cells.
pub(super) fn judge(
    found: &HostBuffer,
    (m, n): (usize, usize),
    cells: &[usize],
    want: &[f64],
    tol: Option<f64>,
) -> Result<String, Failure> {
    let unwritten: Vec<usize> = (0..cells.len()).filter(|&j| found.poisoned(j)).collect();
    if let Some(&first) = unwritten.first() {
        return Err(Failure::from(found.unwritten(
            unwritten.len(),
            cells.len(),
            cells[first],
        )));
    }
    let scope = if cells.len() == m * n {
        format!("all {} elements", m * n)
    } else {
        format!(
            "{} sampled elements of {} (rows drawn for this run)",
            cells.len(),
            m * n
        )
    };
    if tol.is_none() && !found.dtype.is_float() {
        // The float64 product of integers is exact below 2^53: an integer output equals it.
        let differ = (0..cells.len()).find(|&j| found.f64_at(j) != want[j]);
        return match differ {
            None => Ok(format!(
                "matmul vs float64: {scope} equal (integers, compared exactly)"
            )),
            Some(j) => Err(Failure::from(format!(
                "matmul check failed: {}[{}][{}] = {} against {} (integers are compared exactly unless the check gives a tolerance)",
                found.name,
                cells[j] / n,
                cells[j] % n,
                found.show(j),
                want[j]
            ))),
        };
    }
    let tol = tol.unwrap_or(1e-4);
    let (mut err2, mut ref2) = (0.0f64, 0.0f64);
    for (j, (&idx, &want)) in cells.iter().zip(want).enumerate() {
        let (row, col) = (idx / n, idx % n);
        let got = found.f64_at(j);
        if !got.is_finite() {
            return Err(Failure::from(format!(
                "{}[{row}][{col}] is {got}: the kernel overflowed or wrote a value that is not finite",
                found.name
            )));
        }
        err2 += (got - want).powi(2);
        ref2 += want * want;
    }
    let rel = (err2 / ref2.max(f64::MIN_POSITIVE)).sqrt();
    if rel.is_nan() || rel >= tol {
        return Err(Failure::from(format!(
            "matmul check failed: relative error {rel:.3e} over {scope}, tolerance {tol:.0e}"
        )));
    }
    Ok(format!(
        "matmul vs float64: relative error {rel:.2e} over {scope}"
    ))
}

/// The float64 product's elements at `cells` (row-major indices of the m x n output, in
/// order), each summed in the order of k, the output's rows shared out over every core. A
/// full check decodes B once and reads it a row at a time (contiguous, which vectorizes;
/// transposing B instead read it a column at a time: a 4096 x 4096 reference took 0.7 s);
/// a sampled one reads only the elements of B its cells need (decoding all of a 1024 x
/// 1024 B took most of the sampled check's time).
fn matmul_reference(
    a: &HostBuffer,
    b: &HostBuffer,
    (_, k, n): (usize, usize, usize),
    cells: &[usize],
) -> Vec<f64> {
    // The cells by output row, in their order.
    let mut rows: Vec<(usize, Vec<usize>)> = Vec::new();
    for &idx in cells {
        let (row, col) = (idx / n, idx % n);
        match rows.last_mut() {
            Some((r, cols)) if *r == row => cols.push(col),
            _ => rows.push((row, vec![col])),
        }
    }
    let whole = |cols: &[usize]| cols.len() == n && (cols.iter().enumerate()).all(|(i, &c)| i == c);
    let full = rows.iter().all(|(_, cols)| whole(cols));
    let decoded: Vec<f64> = match full {
        true => cores::each((0..k).collect(), |i| {
            (i * n..(i + 1) * n)
                .map(|j| b.f64_at(j))
                .collect::<Vec<f64>>()
        })
        .concat(),
        false => Vec::new(),
    };
    let decoded = &decoded;
    let sums_of = |(row, cols): (usize, Vec<usize>)| {
        let mut sums = vec![0.0f64; cols.len()];
        for i in 0..k {
            let x = a.f64_at(row * k + i);
            if full {
                let b_row = &decoded[i * n..(i + 1) * n];
                for (sum, &y) in sums.iter_mut().zip(b_row) {
                    *sum += x * y;
                }
            } else {
                for (sum, &col) in sums.iter_mut().zip(&cols) {
                    *sum += x * b.f64_at(i * n + col);
                }
            }
        }
        sums
    };
    cores::each(rows, sums_of).concat()
}

#[cfg(test)]
mod tests {
    use super::super::tests::f32_bytes;
    use super::super::{check, Cache};
    use super::*;
    use crate::experiment::Dtype;
    use crate::worker::buffers::POISON;
    use crate::worker::host_buffer::HostBuffer;

    #[test]
    fn matmul_accepts_right_and_rejects_wrong_and_unwritten() {
        let a = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
        let b = f32_bytes(&[5.0, 6.0, 7.0, 8.0]);
        let good = f32_bytes(&[19.0, 22.0, 43.0, 50.0]);
        let bad = f32_bytes(&[19.0, 22.0, 43.0, 51.0]);
        let nan = f32_bytes(&[19.0, 22.0, 43.0, f32::NAN]);
        let mut unwritten = good.clone();
        unwritten[8..].fill(POISON);
        let buf = |name, bytes| HostBuffer {
            name,
            dtype: Dtype::F32,
            bytes,
        };
        let ins = [buf("A", &a[..]), buf("B", &b[..])];
        let none = Cache::new(None, String::new(), 7);
        let c = |bytes: &[u8]| {
            let out = HostBuffer {
                name: "C",
                dtype: Dtype::F32,
                bytes,
            };
            check("matmul", &ins, &out, &[2, 2, 2], Some(1e-4), &none)
        };
        assert!(c(&good).is_ok());
        assert!(c(&bad).unwrap_err().message.contains("relative error"));
        assert!(c(&nan).unwrap_err().message.contains("not finite"));
        assert_eq!(
            c(&unwritten).unwrap_err().message,
            "output `C` was not written: 2 of 4 elements compared still hold the poison, the first C[2]"
        );
    }

    #[test]
    fn an_unsorted_sample_holds_the_sorted_ones_cells_row_by_row() {
        let (m, n, seed) = (320, 320, 11);
        let sorted = matmul_cells((m, n), seed, 0, true);
        let drawn = matmul_cells((m, n), seed, 0, false);
        assert_eq!(sorted.len(), MATMUL_SAMPLE);
        let row_of = |cells: &[usize]| cells.iter().map(|c| c / n).collect::<Vec<_>>();
        assert_eq!(
            row_of(&sorted),
            row_of(&drawn),
            "rows ascending, each in one run"
        );
        assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
        assert!(
            drawn.windows(2).any(|w| w[0] > w[1]),
            "columns in drawn order"
        );
        let mut again = drawn.clone();
        again.sort_unstable();
        assert_eq!(again, sorted);
    }

    #[test]
    fn a_sampled_matmul_reads_only_the_rows_it_names() {
        let (m, k, n) = (600usize, 2usize, 700usize);
        let none = Cache::new(None, String::new(), 7);
        assert!(
            none.elements_read("matmul", &[512, 2, 512]).is_none(),
            "checked whole"
        );
        assert!(none.elements_read("copy", &[]).is_none());
        let rows = (none.elements_read("matmul", &[m as i64, k as i64, n as i64])).unwrap();
        assert_eq!(rows.len(), MATMUL_SAMPLE_ROWS);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32).collect();
        // The product, but only in the rows the check reads: the rest stays zero, as a
        // partial read-back leaves it.
        let mut c = vec![0.0f32; m * n];
        for r in &rows {
            for idx in r.clone() {
                let (row, col) = (idx / n, idx % n);
                c[idx] = (0..k).map(|i| a[row * k + i] * b[i * n + col]).sum();
            }
        }
        let (a, b) = (f32_bytes(&a), f32_bytes(&b));
        let buf = |name, bytes| HostBuffer {
            name,
            dtype: Dtype::F32,
            bytes,
        };
        let ins = [buf("A", &a[..]), buf("B", &b[..])];
        let dims = [m as i64, k as i64, n as i64];
        let good = f32_bytes(&c);
        let account = check("matmul", &ins, &buf("C", &good), &dims, Some(1e-4), &none).unwrap();
        assert!(account.contains("4096 sampled elements"), "{account}");
        // A row the check reads, left unwritten, fails it.
        let row = rows[rows.len() / 2].clone();
        c[row].iter_mut().for_each(|v| *v = f32::NAN);
        let bad = f32_bytes(&c);
        assert!(check("matmul", &ins, &buf("C", &bad), &dims, Some(1e-4), &none).is_err());
        // Another run's seed reads other rows: no kernel can know which ahead.
        let other = Cache::new(None, String::new(), 8);
        assert_ne!(other.elements_read("matmul", &dims), Some(rows));
    }

    #[test]
    fn a_reference_is_computed_once_and_read_back_by_later_processes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(Some(dir.path()), "k/n=2#7".into(), 7);
        let a = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
        let b = f32_bytes(&[5.0, 6.0, 7.0, 8.0]);
        let good = f32_bytes(&[19.0, 22.0, 43.0, 50.0]);
        let buf = |name, bytes| HostBuffer {
            name,
            dtype: Dtype::F32,
            bytes,
        };
        let ins = [buf("A", &a[..]), buf("B", &b[..])];
        let checked = || {
            check(
                "matmul",
                &ins,
                &buf("C", &good),
                &[2, 2, 2],
                Some(1e-4),
                &cache,
            )
        };
        assert!(checked().is_ok());
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "stored once");
        // A later process reads the stored reference: a planted wrong value there shows it.
        let file = files[0].as_ref().unwrap().path();
        let planted: Vec<u8> = [19.0f64, 22.0, 43.0, 51.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(&file, planted).unwrap();
        assert!(checked().is_err());
    }

    #[test]
    fn an_integer_matmul_without_a_tolerance_is_exact() {
        let i32s = |v: &[i32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let (x, y) = (i32s(&[1, 2, 3, 4]), i32s(&[5, 6, 7, 8]));
        let int = |name, bytes| HostBuffer {
            name,
            dtype: Dtype::I32,
            bytes,
        };
        let none = Cache::new(None, String::new(), 7);
        let ins = [int("A", &x[..]), int("B", &y[..])];
        let good = i32s(&[19, 22, 43, 50]);
        let near = i32s(&[19, 22, 43, 51]);
        let mm = |out: &[u8], tol| {
            let out = HostBuffer {
                name: "C",
                dtype: Dtype::I32,
                bytes: out,
            };
            check("matmul", &ins, &out, &[2, 2, 2], tol, &none)
        };
        assert!(mm(&good, None).unwrap().contains("compared exactly"));
        let e = mm(&near, None).unwrap_err();
        assert!(
            e.message.contains("C[1][1] = 51 against 50"),
            "{}",
            e.message
        );
        assert!(mm(&near, Some(0.1)).is_ok(), "a tolerance given is used");
    }
}
