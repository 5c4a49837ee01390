//! Throughput: for kernels that declare the bytes they move (`bytes`) or the floating-point
//! operations they do (`flops`) per launch, and copies, each variant's median as GB/s and
//! TFLOP/s, and as a share of the device's peak (a copy to or from the host: its link's); a
//! reading above 100% is L2's work, or impossible (`analysis::trust` says which).

use super::best;
use super::format;
use crate::analysis::{peaks::Peaks, trust::Verdict, Analysis};
use crate::experiment::point_label;
use crate::experiment::rates::FlopsType;
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

/// One table per kernel that declares its work.
pub fn build(a: &Analysis, peaks: &Peaks) -> Vec<ThroughputTable> {
    let exp = &a.run.experiment;
    exp.timed_kernels()
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
                                    let flops = launch.flops.map(|f| (f, kernel.counted_as()));
                                    let mut text = cell(ns, launch.bytes, byte_peak, flops, peaks);
                                    if let Some(c) = a.run.plan.cell_at(k, p, &v.name) {
                                        if let v @ (Verdict::Suspect(_) | Verdict::Impossible(_)) =
                                            a.verdict(c)
                                        {
                                            text = format!("{text} {}", v.word());
                                        }
                                    }
                                    marks.show(vi, i, text)
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

/// `3012 GB/s (90%)`, `12.50 TFLOP/s (19%)`, or both, four significant digits; above 100% of the DRAM peak, where L2
/// served the work (else the cell's verdict calls it impossible), "from L2".
fn cell(
    ns: f64,
    bytes: Option<f64>,
    byte_peak: Option<f64>,
    flops: Option<(f64, FlopsType)>,
    peaks: &Peaks,
) -> String {
    // `over`: what a share above 100% means, where it is not impossible.
    let rate = |work: f64, peak: Option<f64>, scale: f64, unit: &str, over: &str| {
        let per_s = work / (ns * 1e-9);
        let share = peak.map_or(String::new(), |p| {
            let pct = per_s / p * 100.0;
            format!(" ({pct:.0}%{})", if pct > 100.0 { over } else { "" })
        });
        format!("{} {unit}{share}", format::number(per_s / scale))
    };
    let mut parts = Vec::new();
    if let Some(b) = bytes {
        let over = if byte_peak == peaks.dram {
            ", from L2"
        } else {
            ""
        };
        parts.push(rate(b, byte_peak, 1e9, "GB/s", over));
    }
    if let Some((f, dtype)) = flops {
        parts.push(rate(f, peaks.flops(&dtype), 1e12, "TFLOP/s", ""));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::rates::Tensor;
    use crate::experiment::Dtype;

    const F32: FlopsType = FlopsType::Cores(Dtype::F32);

    #[test]
    fn an_h100s_peaks_and_a_reading_above_them() {
        let p = Peaks {
            dram: Some(3.352e12),
            host_link: Some(63.0e9),
            fp32: Some(66.9e12),
            fp64: Some(33.5e12),
            fp16: None,
            bf16: None,
            int32: None,
            per_sm_clock: vec![(FlopsType::Tensor(Tensor::F16), 989.5e12)],
            ceiling: None,
            source: String::new(),
        };
        // 2 GiB moved in 0.75 ms: 2863 GB/s, 85% of the peak.
        let c = cell(750_000.0, Some(2.0 * 1073741824.0), p.dram, None, &p);
        assert_eq!(c, "2863 GB/s (85%)");
        assert!(cell(1_000.0, Some(4e6), p.dram, None, &p).contains("from L2"));
        // A copy of 1 GiB to the host in 20 ms: 53.69 GB/s, 85% of the link's 63 GB/s.
        let c = cell(20e6, Some(1073741824.0), p.host_link, None, &p);
        assert_eq!(c, "53.69 GB/s (85%)");
        let both = cell(1e6, Some(1e9), p.dram, Some((2e9, F32)), &p);
        assert!(both.contains("GB/s") && both.contains("TFLOP/s"), "{both}");
        // 20 TFLOP/s: 30% of FP32's peak, 60% of FP64's; no FP16 peak, no share.
        assert!(cell(1e6, None, None, Some((2e10, F32)), &p).ends_with("(30%)"));
        assert!(cell(
            1e6,
            None,
            None,
            Some((2e10, FlopsType::Cores(Dtype::F64))),
            &p
        )
        .ends_with("(60%)"));
        assert_eq!(
            cell(
                1e6,
                None,
                None,
                Some((2e10, FlopsType::Cores(Dtype::F16))),
                &p
            ),
            "20.00 TFLOP/s"
        );
        // 200 TFLOP/s on the tensor cores: 20% of their dense FP16 peak.
        let tensor = Some((2e11, FlopsType::Tensor(Tensor::F16)));
        assert!(cell(1e6, None, None, tensor, &p).ends_with("(20%)"));
    }
}
