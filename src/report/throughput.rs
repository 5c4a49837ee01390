//! Throughput: for kernels that declare the bytes they move (`bytes`, or `reads` and
//! `writes` apart) or the floating-point operations they do (`flops`) per launch, and
//! copies, each variant's median as GB/s (read and written beside the total, where declared
//! apart) and TFLOP/s, and as a share of the device's peak (a copy to or from the host: its
//! link's); a reading above 100% is L2's work, or impossible (`analysis::trust` says which).

use super::best;
use super::format;
use super::layout::{self, Part};
use crate::analysis::{peaks::Peaks, trust::Verdict, Analysis};
use crate::experiment::point_label;
use crate::experiment::rates::FlopsType;
use serde::Serialize;

#[derive(Serialize)]
pub struct ThroughputTable {
    pub kernel: String,
    /// `unchecked = true`: timed unchecked, by the user's choice.
    pub unchecked: bool,
    /// The table (sweep point, then a column a variant), split where it is wider than a
    /// line may be.
    pub parts: Vec<Part>,
    /// The line saying what `best` marks: the cells the median tables mark.
    pub best: Option<String>,
    /// Whether it declares its reads and writes apart: its cells show each.
    pub apart: bool,
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
            let header = std::iter::once(exp.parameter_names(k))
                .chain(exp.variants.iter().map(|v| v.name.clone()))
                .collect();
            let rows = kernel
                .points
                .iter()
                .zip(&kernel.launches)
                .enumerate()
                .map(|(i, (p, launch))| {
                    std::iter::once(point_label(p))
                        .chain(exp.variants.iter().enumerate().map(|(vi, v)| {
                            match a.median_at(k, p, &v.name) {
                                Some(ns) => {
                                    let flops = launch.flops.map(|f| (f, kernel.counted_as()));
                                    let bytes = Bytes {
                                        total: launch.bytes,
                                        apart: launch.reads_writes,
                                        peak: byte_peak,
                                    };
                                    let mut text = cell(ns, bytes, flops, peaks);
                                    // A suspect cell's rate is not one to quote: the verdict
                                    // alone; an impossible one keeps the rate that makes it so.
                                    match (a.run.plan.cell_at(k, p, &v.name)).map(|c| a.verdict(c))
                                    {
                                        Some(verdict @ Verdict::Suspect(_)) => {
                                            text = verdict.word().into()
                                        }
                                        Some(verdict @ Verdict::Impossible(_)) => {
                                            text = format!("{text} {}", verdict.word())
                                        }
                                        _ => {}
                                    }
                                    marks.show(vi, i, text)
                                }
                                None => "–".into(),
                            }
                        }))
                        .collect()
                })
                .collect();
            ThroughputTable {
                kernel: kernel.name.clone(),
                unchecked: kernel.unchecked,
                parts: layout::split(header, rows, 1),
                best: best::note(exp),
                apart: kernel.launches.iter().any(|l| l.reads_writes.is_some()),
            }
        })
        .collect()
}

/// The least share of a launch's bytes the smaller of its read and written ones must hold for
/// the table to give the two apart.
const SIDE_SHOWN: f64 = 0.01;

/// A launch's declared bytes: in all, and read and written where declared apart; and the
/// peak they are a share of.
struct Bytes {
    total: Option<f64>,
    apart: Option<(f64, f64)>,
    peak: Option<f64>,
}

/// `3012 GB/s (90%)`, `12.50 TFLOP/s (19%)`, or both, four significant digits; above 100% of
/// the DRAM peak, where L2 served the work (else the cell's verdict calls it impossible),
/// "from L2"; bytes declared apart with the GB/s of each, `3012 GB/s (90%; read 2008, write
/// 1004)`, where each side is at least [`SIDE_SHOWN`] of the bytes (an argmax's 16 KiB written
/// beside 64 MiB read said nothing, and widened its table past a readable line).
fn cell(ns: f64, bytes: Bytes, flops: Option<(f64, FlopsType)>, peaks: &Peaks) -> String {
    let per_s = |work: f64| work / (ns * 1e-9);
    // `over`: what a share above 100% means, where it is not impossible.
    let share = |work: f64, peak: Option<f64>, over: &str| {
        peak.map(|p| {
            let pct = per_s(work) / p * 100.0;
            format!("{pct:.0}%{}", if pct > 100.0 { over } else { "" })
        })
    };
    // The rate, and what the parentheses after it hold.
    let rate = |work: f64, scale: f64, unit: &str, notes: Vec<String>| {
        let notes = match notes.is_empty() {
            true => String::new(),
            false => format!(" ({})", notes.join("; ")),
        };
        format!("{} {unit}{notes}", format::number(per_s(work) / scale))
    };
    let mut parts = Vec::new();
    if let Some(b) = bytes.total {
        let over = if bytes.peak == peaks.dram {
            ", from L2"
        } else {
            ""
        };
        let gb_s = |b: f64| format::number(per_s(b) / 1e9);
        let shown = |&(r, w): &(f64, f64)| r.min(w) >= SIDE_SHOWN * (r + w);
        let apart = (bytes.apart.filter(shown))
            .map(|(r, w)| format!("read {}, write {}", gb_s(r), gb_s(w)));
        let notes = share(b, bytes.peak, over)
            .into_iter()
            .chain(apart)
            .collect();
        parts.push(rate(b, 1e9, "GB/s", notes));
    }
    if let Some((f, t)) = flops {
        let notes = share(f, peaks.flops(&t), "").into_iter().collect();
        parts.push(rate(f, 1e12, "TFLOP/s", notes));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::rates::Tensor;
    use crate::experiment::Dtype;

    const F32: FlopsType = FlopsType::Cores(Dtype::F32);

    /// Bytes in all against `peak`, not declared apart.
    fn total(bytes: f64, peak: Option<f64>) -> Bytes {
        Bytes {
            total: Some(bytes),
            apart: None,
            peak,
        }
    }

    const NO_BYTES: Bytes = Bytes {
        total: None,
        apart: None,
        peak: None,
    };

    fn h100() -> Peaks {
        Peaks {
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
        }
    }

    #[test]
    fn an_h100s_peaks_and_a_reading_above_them() {
        let p = h100();
        // 2 GiB moved in 0.75 ms: 2863 GB/s, 85% of the peak.
        let c = cell(750_000.0, total(2.0 * 1073741824.0, p.dram), None, &p);
        assert_eq!(c, "2863 GB/s (85%)");
        assert!(cell(1_000.0, total(4e6, p.dram), None, &p).contains("from L2"));
        // A copy of 1 GiB to the host in 20 ms: 53.69 GB/s, 85% of the link's 63 GB/s.
        let c = cell(20e6, total(1073741824.0, p.host_link), None, &p);
        assert_eq!(c, "53.69 GB/s (85%)");
        let both = cell(1e6, total(1e9, p.dram), Some((2e9, F32)), &p);
        assert!(both.contains("GB/s") && both.contains("TFLOP/s"), "{both}");
        // 20 TFLOP/s: 30% of FP32's peak, 60% of FP64's; no FP16 peak, no share.
        assert!(cell(1e6, NO_BYTES, Some((2e10, F32)), &p).ends_with("(30%)"));
        let fp64 = Some((2e10, FlopsType::Cores(Dtype::F64)));
        assert!(cell(1e6, NO_BYTES, fp64, &p).ends_with("(60%)"));
        let fp16 = Some((2e10, FlopsType::Cores(Dtype::F16)));
        assert_eq!(cell(1e6, NO_BYTES, fp16, &p), "20.00 TFLOP/s");
        // 200 TFLOP/s on the tensor cores: 20% of their dense FP16 peak.
        let tensor = Some((2e11, FlopsType::Tensor(Tensor::F16)));
        assert!(cell(1e6, NO_BYTES, tensor, &p).ends_with("(20%)"));
    }

    #[test]
    fn bytes_declared_apart_show_each_beside_the_total() {
        let mut p = h100();
        let dp4a = FlopsType::Declared(crate::experiment::rates::DeclaredPeak {
            per_sm_clock: 512.0,
            name: "INT8 dp4a (operations)".into(),
        });
        p.per_sm_clock.push((dp4a.clone(), 133.8e12));
        // 2 GB read and 1 GB written in 1 ms: 3000 GB/s in all, 89% of the DRAM peak.
        let apart = |peak| Bytes {
            total: Some(3e9),
            apart: Some((2e9, 1e9)),
            peak,
        };
        assert_eq!(
            cell(1e6, apart(p.dram), None, &p),
            "3000 GB/s (89%; read 2000, write 1000)"
        );
        assert_eq!(
            cell(1e6, apart(None), Some((2e10, dp4a)), &p),
            "3000 GB/s (read 2000, write 1000), 20.00 TFLOP/s (15%)"
        );
        // 64 MiB read, 16 KiB written: the split says nothing.
        let argmax = Bytes {
            total: Some(67_125_248.0),
            apart: Some((67_108_864.0, 16_384.0)),
            peak: p.dram,
        };
        assert_eq!(
            cell(16_320.0, argmax, None, &p),
            "4113 GB/s (123%, from L2)"
        );
    }
}
