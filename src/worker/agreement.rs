//! A reference kernel's check: the checked kernel's output against the reference's,
//! element by element, integers exactly unless the experiment gives a tolerance.

use super::cores;
use super::failure::{during, Failure};
use super::host_buffer::HostBuffer;
use super::kernels::{KernelKey, Kernels};
use super::samples;
use super::timeline::Timeline;
use crate::experiment::Dtype;
use cuda::DeviceBuffer;

/// Compares an output with a reference kernel's: every element within
/// `|got - want| <= atol + rtol * |want|`; the account names the largest errors and where.
/// Integers are compared as stored (no detour through f64), so with no tolerance (their
/// default) exactly.
/// Only the element `ranges` are compared where given (an audit's sample of a large output:
/// the rest was never read back).
pub fn compare(
    got: &HostBuffer,
    want: &HostBuffer,
    (rtol, atol): (f64, f64),
    ranges: Option<&[std::ops::Range<usize>]>,
) -> Result<String, Failure> {
    if got.len() != want.len() || got.dtype != want.dtype {
        return Err(Failure::from(format!(
            "{}: {} elements against the reference's {}",
            got.name,
            got.len(),
            want.len()
        )));
    }
    let total = got.len();
    let whole = 0..total;
    let ranges = ranges.unwrap_or(std::slice::from_ref(&whole));
    let n: usize = ranges.iter().map(|r| r.len()).sum();
    let tally = tally_on_every_core(ranges, |range| {
        let mut tally = Tally::default();
        // Most pieces of a right output match their reference bit for bit: a byte compare
        // finds them at memory speed (element by element took 19 ns an int on a 2-core host).
        if got.identical(want, &range) {
            return tally;
        }
        for i in range {
            tally.add(i, got, want, (rtol, atol));
        }
        tally
    });
    let n_text = match n == total {
        true => n.to_string(),
        false => format!("{n} sampled of {total}"),
    };
    let worst = (got.show(tally.worst), want.show(tally.worst));
    account(got, (n, &n_text), tally, (rtol, atol), worst)
}

/// An output against the reference's, both in device memory and of one size, compared on
/// the GPU element by element with their tolerance: every element, or where an audit gives
/// the seed of a `sample` and the output is large, the groups it draws
/// ([`samples::on_gpu`]); None where either lives elsewhere.
pub fn on_gpu(
    kernels: &mut Kernels,
    timeline: &mut Timeline,
    (mine, ref_out): (Option<&DeviceBuffer>, Option<&DeviceBuffer>),
    (name, dtype, tolerances): (&str, Dtype, (f64, f64)),
    sample: Option<u64>,
) -> Result<Option<String>, Failure> {
    let in_device = |b: &&DeviceBuffer| b.in_device_memory();
    let (Some(mine), Some(ref_out)) = (mine.filter(in_device), ref_out.filter(in_device)) else {
        return Ok(None);
    };
    if mine.bytes() != ref_out.bytes() {
        return Ok(None);
    }
    let len = mine.bytes() / dtype.size();
    let comparing = during("comparing an output with the reference's");
    // One pass: a first pass for bit-equal outputs read both buffers again wherever they
    // differed, as a float kernel's do from a float64 reference's (a tenth of an audited
    // check's time for a 512 MiB output on an H200).
    let compare = kernels.comparison(KernelKey::OutOfTolerance, timeline)?;
    let sampled = sample.and_then(|seed| samples::on_gpu(len, dtype, seed));
    let both = (mine, ref_out);
    let tally = crate::method::equal::out_of_tolerance(compare, both, dtype, tolerances, sampled)
        .map_err(&comparing)?;
    let worst = tally.worst.unwrap_or(0);
    let element = worst * dtype.size()..(worst + 1) * dtype.size();
    // Read back whole, the element in its place.
    let show = |bytes: &[u8]| HostBuffer { name, dtype, bytes }.show(worst);
    let values = match tally.bad {
        0 => Default::default(),
        _ => (
            show(
                &mine
                    .download_ranges(std::slice::from_ref(&element))
                    .map_err(&comparing)?,
            ),
            show(
                &ref_out
                    .download_ranges(std::slice::from_ref(&element))
                    .map_err(&comparing)?,
            ),
        ),
    };
    let output = HostBuffer {
        name,
        dtype,
        bytes: &[],
    };
    let judged = sampled.map_or(len, |(_, groups)| groups as usize * (16 / dtype.size()));
    account_of_gpu(&output, (judged, len), &tally, tolerances, values).map(Some)
}

/// The account of an output compared on the GPU (`equal::out_of_tolerance`), as [`compare`]
/// gives it: `n` elements judged of `total`, `worst` the worst one's value and the
/// reference's.
fn account_of_gpu(
    got: &HostBuffer,
    (n, total): (usize, usize),
    found: &crate::method::equal::Tally,
    tolerances: (f64, f64),
    worst: (String, String),
) -> Result<String, Failure> {
    let tally = Tally {
        max_abs: found.max_abs,
        max_rel: found.max_rel,
        worst: found.worst.unwrap_or(0),
        worst_abs: 0.0,
        bad: found.bad as usize,
        unwritten: found.unwritten as usize,
        first_unwritten: found.first_unwritten,
    };
    let n_text = match n == total {
        true => n.to_string(),
        false => format!("{n} sampled of {total}"),
    };
    account(got, (n, &n_text), tally, tolerances, worst)
}

/// Passed, or the failure that names the elements outside the tolerance and the worst of
/// them (`worst`: its value and the reference's), over `n` elements compared.
fn account(
    got: &HostBuffer,
    (n, n_text): (usize, &str),
    tally: Tally,
    (rtol, atol): (f64, f64),
    (worst_got, worst_want): (String, String),
) -> Result<String, Failure> {
    let exact = !got.dtype.is_float() && rtol == 0.0 && atol == 0.0;
    let Tally {
        max_abs,
        max_rel,
        worst,
        bad,
        unwritten,
        first_unwritten,
        ..
    } = tally;
    if let Some(first) = first_unwritten {
        return Err(Failure::from(got.unwritten(unwritten, n, first)));
    }
    let (name, n) = (got.name, n_text);
    let worst = format!("the worst {name}[{worst}] = {worst_got} against {worst_want}");
    match (exact, bad) {
        (_, 0) => Ok(passed(name, exact, n, (max_abs, max_rel))),
        (true, _) => Err(Failure::from(format!(
            "{name}: {bad} of {n} elements differ (integers are compared exactly unless check_kernel gives atol or rtol), {worst}"
        ))),
        (false, _) => Err(Failure::from(format!(
            "{name}: max abs error {max_abs:.3e}, max rel error {max_rel:.3e} over {n} elements; {bad} outside atol {atol:e} + rtol {rtol:e}, {worst}"
        ))),
    }
}

/// The account of an output within its tolerance: `n` elements compared.
fn passed(name: &str, exact: bool, n: &str, (max_abs, max_rel): (f64, f64)) -> String {
    match exact {
        true => format!("{name}: all {n} elements equal (integers, compared exactly)"),
        false => format!(
            "{name}: max abs error {max_abs:.3e}, max rel error {max_rel:.3e} over {n} elements"
        ),
    }
}

/// What a comparison found over a range of elements.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    max_abs: f64,
    max_rel: f64,
    /// The first element of the largest error among those outside the tolerance.
    worst: usize,
    worst_abs: f64,
    bad: usize,
    /// Elements that differ because they still hold the poison (where the reference's do
    /// not), and the first of them.
    unwritten: usize,
    first_unwritten: Option<usize>,
}

impl Tally {
    /// Element `i` of `got` against `want`'s, within `atol + rtol * |want|`.
    fn add(&mut self, i: usize, got: &HostBuffer, want: &HostBuffer, (rtol, atol): (f64, f64)) {
        let (g, w) = (got.f64_at(i), want.f64_at(i));
        // Integers exactly, as stored (no detour through f64); the i128 arithmetic below is
        // slow, and an element equal to its reference (most of them) needs none.
        let ints = match got.dtype.is_float() {
            true => None,
            false => got.int_at(i).zip(want.int_at(i)),
        };
        let equal = match ints {
            Some((gi, wi)) => gi == wi,
            // Infinities alike are equal; a NaN equals nothing.
            None => g == w,
        };
        if equal {
            return;
        }
        let (abs, within) = match ints {
            Some((gi, wi)) => {
                let abs = gi.abs_diff(wi) as f64;
                (abs, abs <= atol + rtol * wi.unsigned_abs() as f64)
            }
            // A NaN on either side is outside any tolerance; infinities must match exactly.
            _ if !(g.is_finite() && w.is_finite()) => ((g - w).abs(), g == w),
            _ => ((g - w).abs(), (g - w).abs() <= atol + rtol * w.abs()),
        };
        let rel = abs / w.abs().max(f64::MIN_POSITIVE);
        if !within {
            if self.bad == 0 || abs > self.worst_abs {
                (self.worst, self.worst_abs) = (i, abs);
            }
            self.bad += 1;
            if got.poisoned(i) && !want.poisoned(i) {
                self.unwritten += 1;
                self.first_unwritten.get_or_insert(i);
            }
        }
        if abs > self.max_abs || abs.is_nan() {
            self.max_abs = abs;
        }
        if rel.is_finite() && rel > self.max_rel {
            self.max_rel = rel;
        }
    }

    /// This tally followed by `later`'s (of the elements after this one's), as one pass
    /// over both would have found.
    fn then(self, later: Tally) -> Tally {
        let later_worse = later.bad > 0 && (self.bad == 0 || later.worst_abs > self.worst_abs);
        let (worst, worst_abs) = match later_worse {
            true => (later.worst, later.worst_abs),
            false => (self.worst, self.worst_abs),
        };
        Tally {
            max_abs: match self.max_abs.is_nan() || later.max_abs.is_nan() {
                true => f64::NAN,
                false => self.max_abs.max(later.max_abs),
            },
            max_rel: self.max_rel.max(later.max_rel),
            worst,
            worst_abs,
            bad: self.bad + later.bad,
            unwritten: self.unwritten + later.unwritten,
            first_unwritten: self.first_unwritten.or(later.first_unwritten),
        }
    }
}

/// `tally` over `ranges` cut into pieces shared out over every core, joined in order: a
/// 134M-element output took 2.8 s on one core.
fn tally_on_every_core(
    ranges: &[std::ops::Range<usize>],
    tally: impl Fn(std::ops::Range<usize>) -> Tally + Sync + Send,
) -> Tally {
    const PIECE: usize = 1 << 16;
    let pieces: Vec<_> = (ranges.iter())
        .flat_map(|r| {
            (r.start..r.end)
                .step_by(PIECE)
                .map(move |s| s..(s + PIECE).min(r.end))
        })
        .collect();
    (cores::each(pieces, tally).into_iter()).fold(Tally::default(), Tally::then)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Dtype;
    use crate::worker::buffers::POISON;

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn identical_bytes_pass_at_once_but_a_nan_on_both_sides_fails() {
        let want = f32_bytes(&[1.0, 2.0, f32::INFINITY, 4.0]);
        let view = |bytes| HostBuffer {
            name: "C",
            dtype: Dtype::F32,
            bytes,
        };
        let same = compare(&view(&want), &view(&want), (1e-5, 1e-6), None).unwrap();
        assert!(same.contains("max abs error 0.000e0"), "{same}");
        let nan = f32_bytes(&[1.0, f32::NAN, 3.0, 4.0]);
        let err = compare(&view(&nan), &view(&nan), (1e-5, 1e-6), None).unwrap_err();
        assert!(err.message.contains("1 outside"), "{}", err.message);
        let ints: Vec<u8> = [7i32, -3, 9].iter().flat_map(|x| x.to_ne_bytes()).collect();
        let int = |bytes| HostBuffer {
            name: "H",
            dtype: Dtype::I32,
            bytes,
        };
        let same = compare(&int(&ints), &int(&ints), (0.0, 0.0), None).unwrap();
        assert!(same.contains("all 3 elements equal"), "{same}");
    }

    #[test]
    fn an_output_found_identical_on_the_gpu_reads_as_the_host_compare_of_it() {
        let floats = f32_bytes(&[1.0, -2.5, 0.0]);
        let ints: Vec<u8> = [7i32, -3].iter().flat_map(|x| x.to_ne_bytes()).collect();
        for (dtype, bytes, tolerances) in [
            (Dtype::F32, &floats, (1e-5, 1e-6)),
            (Dtype::I32, &ints, (0.0, 0.0)),
            (Dtype::I32, &ints, (0.0, 1.0)),
        ] {
            let view = HostBuffer {
                name: "y",
                dtype,
                bytes,
            };
            let on_host = compare(&view, &view, tolerances, None).unwrap();
            let none_apart = crate::method::equal::Tally {
                bad: 0,
                unwritten: 0,
                first_unwritten: None,
                max_abs: 0.0,
                max_rel: 0.0,
                worst: None,
            };
            let on_gpu = account_of_gpu(
                &view,
                (view.len(), view.len()),
                &none_apart,
                tolerances,
                <_>::default(),
            );
            assert_eq!(on_gpu.unwrap(), on_host);
        }
    }

    #[test]
    fn an_output_tallied_on_the_gpu_reads_as_the_host_compare_of_it() {
        let want = f32_bytes(&[1.0, 2.0, 3.0, 4.0]);
        let got = f32_bytes(&[1.0, 2.5, 3.0, 4.25]);
        let mut unwritten = got.clone();
        unwritten[12..].fill(POISON);
        let view = |bytes| HostBuffer {
            name: "y",
            dtype: Dtype::F32,
            bytes,
        };
        // What out_of_tolerance finds over all four: two outside, the worst y[1].
        let found = crate::method::equal::Tally {
            bad: 2,
            unwritten: 0,
            first_unwritten: None,
            max_abs: 0.5,
            max_rel: 0.25,
            worst: Some(1),
        };
        let values = ("2.5".to_string(), "2".to_string());
        let tolerances = (1e-5, 1e-6);
        let on_host = compare(&view(&got), &view(&want), tolerances, None).unwrap_err();
        let on_gpu = account_of_gpu(&view(&[]), (4, 4), &found, tolerances, values.clone());
        assert_eq!(on_gpu.unwrap_err().message, on_host.message);
        let on_host = compare(&view(&unwritten), &view(&want), tolerances, None).unwrap_err();
        let left = crate::method::equal::Tally {
            unwritten: 1,
            first_unwritten: Some(3),
            ..found
        };
        let on_gpu = account_of_gpu(&view(&[]), (4, 4), &left, tolerances, values);
        assert_eq!(on_gpu.unwrap_err().message, on_host.message);
    }

    #[test]
    fn a_tally_shared_over_cores_is_the_tally_of_one_pass() {
        let n = 3 * (1 << 16) + 5;
        let want: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let mut got = want.clone();
        for (i, off) in [(7, 2.0), (1 << 16, 9.0), ((1 << 16) + 1, 9.0), (n - 1, 0.5)] {
            got[i] += off;
        }
        got[2 << 16] = f32::NAN;
        let (got, want) = (f32_bytes(&got), f32_bytes(&want));
        let buf = |bytes| HostBuffer {
            name: "y",
            dtype: Dtype::F32,
            bytes,
        };
        let (got, want) = (buf(&got), buf(&want));
        let pass = |range: std::ops::Range<usize>| {
            let mut t = Tally::default();
            for i in range {
                t.add(i, &got, &want, (1e-6, 0.0));
            }
            t
        };
        let (shared, one) = (
            tally_on_every_core(std::slice::from_ref(&(0..n)), pass),
            pass(0..n),
        );
        assert_eq!((shared.worst, shared.bad), (one.worst, one.bad));
        assert_eq!((shared.worst, shared.bad), (1 << 16, 5));
        assert!(shared.max_abs.is_nan() && one.max_abs.is_nan());
        assert_eq!(shared.max_rel, one.max_rel);
    }

    #[test]
    fn a_kernel_check_names_the_worst_element() {
        let buf = |name, bytes| HostBuffer {
            name,
            dtype: Dtype::F32,
            bytes,
        };
        let want = f32_bytes(&[1.0, 2.0, 3.0]);
        let close = f32_bytes(&[1.0, 2.0000001, 3.0]);
        let off = f32_bytes(&[1.0, 2.0, 3.5]);
        assert!(compare(&buf("y", &close), &buf("y", &want), (1e-5, 1e-6), None).is_ok());
        let e = compare(&buf("y", &off), &buf("y", &want), (1e-5, 1e-6), None).unwrap_err();
        assert!(
            e.message.contains("y[2] = 3.5 against 3") && e.message.contains("1 outside"),
            "{}",
            e.message
        );
        let mut left = want.clone();
        left[4..].fill(POISON);
        let e = compare(&buf("y", &left), &buf("y", &want), (1e-5, 1e-6), None).unwrap_err();
        assert!(
            e.message.starts_with("output `y` was not written: 2 of 3"),
            "{}",
            e.message
        );
        let inf = f32_bytes(&[1.0, 2.0, f32::INFINITY]);
        assert!(compare(&buf("y", &off), &buf("y", &inf), (1e-5, 1e-6), None).is_err());
        assert!(compare(&buf("y", &inf), &buf("y", &inf), (1e-5, 1e-6), None).is_ok());
        let ints = |v: &[i32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let (a, b) = (ints(&[200_000]), ints(&[200_001]));
        let int = |name, bytes| HostBuffer {
            name,
            dtype: Dtype::I32,
            bytes,
        };
        assert!(
            compare(&int("k", &a), &int("k", &b), (0.0, 0.0), None).is_err(),
            "integers without a tolerance match exactly"
        );
        assert!(
            compare(&int("k", &a), &int("k", &b), (1e-5, 0.0), None).is_ok(),
            "a tolerance the experiment gives holds for integers too"
        );
        assert!(compare(&buf("y", &want), &buf("y", &want[..8]), (1e-5, 1e-6), None).is_err());
    }

    #[test]
    fn integers_are_compared_exactly_unless_the_check_gives_a_tolerance() {
        let (rtol, atol) = Dtype::U32.default_tolerances();
        assert_eq!((rtol, atol), (0.0, 0.0));
        let u32s = |v: &[u32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let bins = |bytes| HostBuffer {
            name: "bins",
            dtype: Dtype::U32,
            bytes,
        };
        let (want, off) = (u32s(&[5, 1_000_000, 7]), u32s(&[5, 1_000_001, 7]));
        let ok = compare(&bins(&want), &bins(&want), (rtol, atol), None).unwrap();
        assert_eq!(
            ok,
            "bins: all 3 elements equal (integers, compared exactly)"
        );
        let e = compare(&bins(&off), &bins(&want), (rtol, atol), None).unwrap_err();
        assert!(
            e.message.contains("1 of 3 elements differ")
                && e.message.contains("bins[1] = 1000001 against 1000000"),
            "{}",
            e.message
        );
        // An atol the experiment gives lets a count be off by it.
        assert!(compare(&bins(&off), &bins(&want), (0.0, 1.0), None).is_ok());
        // 64-bit integers beyond f64's 53 bits still differ by one.
        let u64s = |v: u64| v.to_ne_bytes().to_vec();
        let (a, b) = (u64s((1 << 60) + 1), u64s(1 << 60));
        let big = |bytes| HostBuffer {
            name: "k",
            dtype: Dtype::U64,
            bytes,
        };
        let e = compare(&big(&a), &big(&b), (0.0, 0.0), None).unwrap_err();
        assert!(
            e.message
                .contains("k[0] = 1152921504606846977 against 1152921504606846976"),
            "{}",
            e.message
        );
    }
}
