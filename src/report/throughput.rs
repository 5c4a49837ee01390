//! Throughput: for kernels that declare the bytes they move (`bytes`) or the floating-point
//! operations they do (`flops`) per launch, and copies, each variant's median as GB/s and
//! TFLOP/s, and as a share of the device's peak (a copy to or from the host: its link's), a
//! reading above 100% flagged as impossible (a working set served from L2, or a wrong count).

use super::best;
use crate::analysis::Analysis;
use crate::cuda::{capability, DeviceInfo};
use crate::experiment::{point_label, Dtype};
use serde::Serialize;

#[derive(Serialize)]
pub struct ThroughputTable {
    pub kernel: String,
    /// `unchecked = true`: timed unchecked, by the user's choice.
    pub unchecked: bool,
    pub parameters: String,
    pub columns: Vec<String>,
    pub rows: Vec<ThroughputRow>,
    /// The line saying what `best` marks: the cells the median tables mark.
    pub best: Option<String>,
}

#[derive(Serialize)]
pub struct ThroughputRow {
    pub point: String,
    pub values: Vec<String>,
}

/// The device's peaks and where each figure comes from.
pub struct Peaks {
    /// Bytes per second of DRAM.
    pub dram: Option<f64>,
    /// Bytes per second each way over the link to the host.
    pub host_link: Option<f64>,
    /// FP32 operations per second.
    pub fp32: Option<f64>,
    /// FP64, FP16 and BF16 (no tensor cores) operations per second.
    pub fp64: Option<f64>,
    pub fp16: Option<f64>,
    pub bf16: Option<f64>,
    pub source: String,
}

impl Peaks {
    /// The peak a kernel's FLOPs of `dtype` are a share of.
    fn flops(&self, dtype: Dtype) -> Option<f64> {
        match dtype {
            Dtype::F64 => self.fp64,
            Dtype::F16 => self.fp16,
            Dtype::Bf16 => self.bf16,
            _ => self.fp32,
        }
    }
}

/// FP16 and BF16 rates without tensor cores as multiples of FP32's, by compute capability
/// (the CUDA programming guide's throughput table: packed pairs on 8.0 and 9.0, four-fold
/// FP16 on the A100).
fn half_factors(cc: (i64, i64)) -> (Option<f64>, Option<f64>) {
    match cc {
        (9, 0) => (Some(2.0), Some(2.0)),
        (8, 0) => (Some(4.0), Some(2.0)),
        (8, 6) | (8, 7) | (8, 9) => (Some(1.0), Some(1.0)),
        (7, 0) => (Some(2.0), None),
        _ => (None, None),
    }
}

/// FP64 lanes per SM by compute capability (the CUDA programming guide's throughput table).
fn fp64_lanes(cc: (i64, i64)) -> Option<f64> {
    match cc {
        (7, 0) | (8, 0) => Some(32.0),
        (9, 0) => Some(64.0),
        (7, _) | (8, _) | (12, _) => Some(2.0),
        _ => None,
    }
}

/// FP32 lanes per SM by compute capability (the CUDA programming guide's throughput table).
fn fp32_lanes(cc: (i64, i64)) -> Option<f64> {
    match cc {
        (7, _) | (8, 0) => Some(64.0),
        (8, _) | (9, 0) | (10, _) | (12, _) => Some(128.0),
        _ => None,
    }
}

/// The device's peaks; `types`: the FLOP types the experiment's kernels declare, `host`:
/// whether it copies to or from the host (a peak is described only where a kernel is
/// compared with it).
pub fn peaks(d: &DeviceInfo, types: &[Dtype], host: bool) -> Peaks {
    let dram = d
        .mem_bus_width_bits
        .map(|bits| 2.0 * d.mem_clock_max_mhz as f64 * 1e6 * bits as f64 / 8.0);
    let lanes = fp32_lanes(capability(d));
    let fp32 = lanes.map(|l| d.sm_count as f64 * d.sm_clock_max_mhz as f64 * 1e6 * l * 2.0);
    let mut source = Vec::new();
    if let (Some(p), Some(bits)) = (dram, d.mem_bus_width_bits) {
        source.push(format!(
            "DRAM {:.0} GB/s = 2 transfers x {} MHz x a {bits}-bit bus (the driver's memory clock and bus width)",
            p / 1e9,
            d.mem_clock_max_mhz
        ));
    }
    if let (Some(p), Some(l)) = (fp32, lanes) {
        source.push(format!(
            "FP32 {:.1} TFLOP/s = {} SMs x {} MHz x {l} FP32 lanes x 2 (a fused multiply-add), at the driver's maximum SM clock",
            p / 1e12,
            d.sm_count,
            d.sm_clock_max_mhz
        ));
    }
    let per_sm = |lanes: f64| d.sm_count as f64 * d.sm_clock_max_mhz as f64 * 1e6 * lanes * 2.0;
    let fp64 = fp64_lanes(capability(d)).map(per_sm);
    let (f16x, bf16x) = half_factors(capability(d));
    let fp16 = fp32.zip(f16x).map(|(p, x)| p * x);
    let bf16 = fp32.zip(bf16x).map(|(p, x)| p * x);
    if let (Some(p), true) = (fp64, types.contains(&Dtype::F64)) {
        source.push(format!(
            "FP64 {:.1} TFLOP/s = {} SMs x {} MHz x {} FP64 lanes x 2",
            p / 1e12,
            d.sm_count,
            d.sm_clock_max_mhz,
            fp64_lanes(capability(d)).unwrap_or_default()
        ));
    }
    for (dtype, peak, factor) in [(Dtype::F16, fp16, f16x), (Dtype::Bf16, bf16, bf16x)] {
        if let (Some(p), Some(x), true) = (peak, factor, types.contains(&dtype)) {
            source.push(format!(
                "{} without tensor cores {:.1} TFLOP/s = {x} x FP32",
                dtype.key().to_uppercase(),
                p / 1e12
            ));
        }
    }
    let host_link = d.host_link.filter(|_| host);
    source.extend(host_link.and_then(|l| l.describe()));
    Peaks {
        dram,
        host_link: host_link.and_then(|l| l.peak_bytes_per_s()),
        fp32,
        fp64,
        fp16,
        bf16,
        source: source.join("; "),
    }
}

/// One table per kernel that declares its work.
pub fn build(a: &Analysis, peaks: &Peaks) -> Vec<ThroughputTable> {
    let exp = &a.run.experiment;
    exp.kernels
        .iter()
        .enumerate()
        .filter(|(_, k)| {
            k.launches
                .iter()
                .any(|l| l.bytes.is_some() || l.flops.is_some())
        })
        .map(|(k, kernel)| {
            let marks = best::Marks::of(exp, k, |k, p, v| a.sound_median_at(k, p, v));
            let byte_peak = match kernel.copy {
                Some(_) if kernel.on_host(0) || kernel.on_host(1) => peaks.host_link,
                _ => peaks.dram,
            };
            ThroughputTable {
                kernel: kernel.name.clone(),
                unchecked: kernel.unchecked,
                parameters: exp.parameter_names(k),
                columns: exp.variants.iter().map(|v| v.name.clone()).collect(),
                rows: kernel
                    .points
                    .iter()
                    .zip(&kernel.launches)
                    .enumerate()
                    .map(|(i, (p, launch))| ThroughputRow {
                        point: point_label(p),
                        values: exp
                            .variants
                            .iter()
                            .enumerate()
                            .map(|(vi, v)| match a.median_at(k, p, &v.name) {
                                Some(ns) => {
                                    let flops = launch
                                        .flops
                                        .map(|f| (f, kernel.flops_type.unwrap_or(Dtype::F32)));
                                    marks.show(
                                        vi,
                                        i,
                                        cell(ns, launch.bytes, byte_peak, flops, peaks),
                                    )
                                }
                                None => "–".into(),
                            })
                            .collect(),
                    })
                    .collect(),
                best: best::note(exp),
            }
        })
        .collect()
}

/// `3012 GB/s (90%)`, `12.5 TFLOP/s (19%)`, both, and ⚠ above 100% of a peak.
fn cell(
    ns: f64,
    bytes: Option<f64>,
    byte_peak: Option<f64>,
    flops: Option<(f64, Dtype)>,
    peaks: &Peaks,
) -> String {
    let rate = |work: f64, peak: Option<f64>, scale: f64, unit: &str| {
        let per_s = work / (ns * 1e-9);
        let share = peak.map_or(String::new(), |p| {
            let pct = per_s / p * 100.0;
            format!(
                " ({pct:.0}%{})",
                if pct > 100.0 { " ⚠ above peak" } else { "" }
            )
        });
        format!("{:.1} {unit}{share}", per_s / scale)
    };
    let mut parts = Vec::new();
    if let Some(b) = bytes {
        parts.push(rate(b, byte_peak, 1e9, "GB/s"));
    }
    if let Some((f, dtype)) = flops {
        parts.push(rate(f, peaks.flops(dtype), 1e12, "TFLOP/s"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_h100s_peaks_and_a_reading_above_them() {
        let p = Peaks {
            dram: Some(3.352e12),
            host_link: Some(63.0e9),
            fp32: Some(66.9e12),
            fp64: Some(33.5e12),
            fp16: None,
            bf16: None,
            source: String::new(),
        };
        // 2 GiB moved in 0.75 ms: 2863 GB/s, 85% of the peak.
        let c = cell(750_000.0, Some(2.0 * 1073741824.0), p.dram, None, &p);
        assert_eq!(c, "2863.3 GB/s (85%)");
        assert!(cell(1_000.0, Some(4e6), p.dram, None, &p).contains("above peak"));
        // A copy of 1 GiB to the host in 20 ms: 53.7 GB/s, 85% of the link's 63 GB/s.
        let c = cell(20e6, Some(1073741824.0), p.host_link, None, &p);
        assert_eq!(c, "53.7 GB/s (85%)");
        let both = cell(1e6, Some(1e9), p.dram, Some((2e9, Dtype::F32)), &p);
        assert!(both.contains("GB/s") && both.contains("TFLOP/s"), "{both}");
        // 20 TFLOP/s: 30% of FP32's peak, 60% of FP64's; no FP16 peak, no share.
        assert!(cell(1e6, None, None, Some((2e10, Dtype::F32)), &p).ends_with("(30%)"));
        assert!(cell(1e6, None, None, Some((2e10, Dtype::F64)), &p).ends_with("(60%)"));
        assert_eq!(
            cell(1e6, None, None, Some((2e10, Dtype::F16)), &p),
            "20.0 TFLOP/s"
        );
        assert_eq!(fp64_lanes((9, 0)), Some(64.0));
        assert_eq!(half_factors((8, 0)), (Some(4.0), Some(2.0)));
        assert_eq!(half_factors((8, 9)), (Some(1.0), Some(1.0)));
        assert_eq!(fp32_lanes((9, 0)), Some(128.0));
    }
}
