//! The device's peaks, from the driver's facts and the CUDA programming guide's throughput
//! tables: DRAM and host-link bytes per second, FLOPs per second by type. A reading above
//! one is reported as a share of it, and judged impossible where no cache explains it
//! ([`super::trust`]).

use crate::experiment::rates::{
    core_flops, dram, fp32_lanes, fp64_lanes, half_factors, int32_lanes, ops_per_sm_clock,
    FlopsType,
};
use crate::experiment::Dtype;
use crate::protocol::{capability, DeviceInfo};

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
    /// INT32 multiply-adds per second (two operations each), on the CUDA cores.
    pub int32: Option<f64>,
    /// The peaks given per SM per clock that the experiment's kernels count against: the
    /// tensor cores' dense ones of the types they declare, and those they state (`peak`).
    pub per_sm_clock: Vec<(FlopsType, f64)>,
    /// The most operations per second the device does of any type on any unit (FP8 or INT8
    /// on tensor cores, with 2:4 sparsity), where its tables are known.
    pub ceiling: Option<f64>,
    pub source: String,
}

impl Peaks {
    /// The peak a kernel's FLOPs of `flops` are a share of.
    pub fn flops(&self, flops: &FlopsType) -> Option<f64> {
        match flops {
            FlopsType::Cores(Dtype::F64) => self.fp64,
            FlopsType::Cores(Dtype::F16) => self.fp16,
            FlopsType::Cores(Dtype::Bf16) => self.bf16,
            FlopsType::Cores(Dtype::I32) => self.int32,
            FlopsType::Cores(_) => self.fp32,
            FlopsType::Tensor(_) | FlopsType::Declared(_) => {
                (self.per_sm_clock.iter()).find_map(|(t, p)| (t == flops).then_some(*p))
            }
        }
    }

    /// The most operations per second any unit of the device does, whatever their type:
    /// above it a reading is impossible however its `flops` are counted (a kernel on tensor
    /// cores is well above [`Peaks::flops`], and a quantized one may declare its work in
    /// any float type).
    pub fn flops_ceiling(&self) -> Option<f64> {
        self.ceiling
    }
}

/// The device's peaks; `types`: the FLOP types the experiment's kernels declare, `host`:
/// whether it copies to or from the host (a peak is described only where a kernel is
/// compared with it).
pub fn peaks(d: &DeviceInfo, flops: &[FlopsType], host: bool) -> Peaks {
    let types: Vec<Dtype> = (flops.iter())
        .filter_map(|f| match f {
            FlopsType::Cores(d) => Some(*d),
            FlopsType::Tensor(_) | FlopsType::Declared(_) => None,
        })
        .collect();
    // A device that reports no clocks (zero) has no peak to share a reading of.
    let positive = |p: f64| (p > 0.0).then_some(p);
    let dram = d
        .mem_bus_width_bits
        .and_then(|bits| positive(dram(d.mem_clock_max_mhz, bits)));
    let lanes = fp32_lanes(capability(d));
    let cores =
        |dtype| core_flops(capability(d), d.sm_count, d.sm_clock_max_mhz, dtype).and_then(positive);
    let fp32 = cores(Dtype::F32);
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
    let (fp64, fp16, bf16) = (cores(Dtype::F64), cores(Dtype::F16), cores(Dtype::Bf16));
    let int32 = cores(Dtype::I32);
    let (f16x, bf16x) = half_factors(capability(d));
    let per_clock = [
        (
            Dtype::F64,
            fp64,
            "FP64 {} TFLOP/s",
            fp64_lanes(capability(d)),
            "FP64 lanes",
        ),
        (
            Dtype::I32,
            int32,
            "INT32 {} TOPS",
            int32_lanes(capability(d)),
            "multiply-adds",
        ),
    ];
    for (dtype, peak, what, lanes, of) in per_clock {
        if let (Some(p), Some(l), true) = (peak, lanes, types.contains(&dtype)) {
            let (sms, mhz) = (d.sm_count, d.sm_clock_max_mhz);
            let rate = what.replace("{}", &format!("{:.1}", p / 1e12));
            source.push(format!("{rate} = {sms} SMs x {mhz} MHz x {l} {of} x 2"));
        }
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
    let per_sm_clock = per_sm_clock_peaks(d, flops, &mut source);
    let clocks = d.sm_count as f64 * d.sm_clock_max_mhz as f64 * 1e6;
    let ceiling = ops_per_sm_clock(capability(d)).and_then(|ops| positive(ops * clocks));
    let host_link = d.host_link.filter(|_| host);
    source.extend(host_link.and_then(|l| l.describe()));
    Peaks {
        dram,
        host_link: host_link.and_then(|l| l.peak_bytes_per_s()),
        fp32,
        fp64,
        fp16,
        bf16,
        int32,
        per_sm_clock,
        ceiling,
        source: source.join("; "),
    }
}

/// The peaks given per SM per clock of the types in `flops`, each once, with its source
/// line: the tensor cores' (NVIDIA's dense peaks) and those kernels state (`peak`).
fn per_sm_clock_peaks(
    d: &DeviceInfo,
    flops: &[FlopsType],
    source: &mut Vec<String>,
) -> Vec<(FlopsType, f64)> {
    let (cc, sms, mhz) = (capability(d), d.sm_count, d.sm_clock_max_mhz);
    let mut out: Vec<(FlopsType, f64)> = Vec::new();
    for f in flops {
        let (Some(p), Some(ops), false) = (
            f.peak(cc, sms, mhz).filter(|p| *p > 0.0),
            f.per_sm_clock(cc),
            out.iter().any(|(t, _)| t == f),
        ) else {
            continue;
        };
        let from = match f {
            FlopsType::Declared(_) => "the kernel's `peak`",
            _ => "NVIDIA's dense peaks, `rates.rs`",
        };
        source.push(format!(
            "{} {:.1} TFLOP/s = {sms} SMs x {mhz} MHz x {ops} operations per SM per clock ({from})",
            f.name(),
            p / 1e12,
        ));
        out.push((f.clone(), p));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::rates::Tensor;

    fn h100(sm_mhz: i64, mem_mhz: i64) -> DeviceInfo {
        DeviceInfo {
            name: "H100".into(),
            uuid: String::new(),
            compute_capability: "9.0".into(),
            sm_count: 132,
            l2_bytes: 50 << 20,
            mem_bytes: 80 << 30,
            sm_clock_max_mhz: sm_mhz,
            mem_clock_max_mhz: mem_mhz,
            mem_bus_width_bits: Some(5120),
            cuda_driver_version: String::new(),
            nvrtc_version: String::new(),
            driver_version: None,
            limits: None,
            host_link: None,
        }
    }

    #[test]
    fn a_device_that_reports_no_clocks_has_no_peaks() {
        let tensor = FlopsType::Tensor(Tensor::F16);
        let p = peaks(&h100(1980, 2619), std::slice::from_ref(&tensor), false);
        assert!(p.dram.is_some() && p.fp32.is_some() && p.flops(&tensor).is_some());
        // Zero clocks gave "inf% of the 0 GB/s DRAM peak": no peak, no share.
        let p = peaks(&h100(0, 0), std::slice::from_ref(&tensor), false);
        assert_eq!(
            (p.dram, p.fp32, p.flops(&tensor), p.ceiling),
            (None, None, None, None)
        );
    }

    #[test]
    fn a_declared_peak_is_a_peak_on_any_device_and_says_where_it_comes_from() {
        let dp4a = FlopsType::Declared(crate::experiment::rates::DeclaredPeak {
            per_sm_clock: 512.0,
            name: "INT8 dp4a (operations)".into(),
        });
        let mut unknown = h100(1980, 2619);
        unknown.compute_capability = "5.0".into();
        let p = peaks(&unknown, &[dp4a.clone(), dp4a.clone()], false);
        assert_eq!(p.flops(&dp4a), Some(512.0 * 132.0 * 1980e6));
        assert_eq!(p.fp32, None);
        assert_eq!(
            p.source,
            "DRAM 3352 GB/s = 2 transfers x 2619 MHz x a 5120-bit bus (the driver's memory clock and bus width); \
             INT8 dp4a (operations) 133.8 TFLOP/s = 132 SMs x 1980 MHz x 512 operations per SM per clock (the kernel's `peak`)"
        );
    }
}
