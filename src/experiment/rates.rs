//! What a device does at its peak, from facts the driver gives (compute capability, SM
//! count, SM and memory clocks, memory bus) and the CUDA programming guide's throughput
//! tables. Shared by `runner plan`'s estimate of a kernel's time (against an assumed H100 or
//! the run's device) and the analysis's peaks, which judge the readings.

use super::{DeviceFacts, Dtype};

/// FP32 lanes per SM by compute capability (the CUDA programming guide's throughput table).
pub fn fp32_lanes(cc: (i64, i64)) -> Option<f64> {
    match cc {
        (7, _) | (8, 0) => Some(64.0),
        (8, _) | (9, 0) | (10, _) | (12, _) => Some(128.0),
        _ => None,
    }
}

/// FP64 lanes per SM by compute capability (the CUDA programming guide's throughput table).
pub fn fp64_lanes(cc: (i64, i64)) -> Option<f64> {
    match cc {
        (7, 0) | (8, 0) => Some(32.0),
        (9, 0) => Some(64.0),
        (7, _) | (8, _) | (12, _) => Some(2.0),
        _ => None,
    }
}

/// FP16 and BF16 rates without tensor cores as multiples of FP32's, by compute capability
/// (the CUDA programming guide's throughput table: packed pairs on 8.0 and 9.0, four-fold
/// FP16 on the A100).
pub fn half_factors(cc: (i64, i64)) -> (Option<f64>, Option<f64>) {
    match cc {
        (9, 0) => (Some(2.0), Some(2.0)),
        (8, 0) => (Some(4.0), Some(2.0)),
        (8, 6) | (8, 7) | (8, 9) => (Some(1.0), Some(1.0)),
        (7, 0) => (Some(2.0), None),
        _ => (None, None),
    }
}

/// The most operations per SM per clock of any type on any unit, by compute capability:
/// INT8 (A100) and FP8 (H100) on tensor cores with 2:4 sparsity (NVIDIA's data sheets: 1248
/// TOPS on 108 SMs at 1410 MHz; 3958 TFLOP/s on 132 SMs at 1830 MHz); None where not known.
pub fn ops_per_sm_clock(cc: (i64, i64)) -> Option<f64> {
    match cc {
        (8, 0) => Some(8192.0),
        (9, 0) => Some(16384.0),
        _ => None,
    }
}

/// DRAM bytes per second: two transfers per memory clock over the bus.
pub fn dram(mem_clock_mhz: i64, bus_bits: i64) -> f64 {
    2.0 * mem_clock_mhz as f64 * 1e6 * bus_bits as f64 / 8.0
}

/// FLOPs per second of `dtype` on the CUDA cores (a fused multiply-add counts two) of
/// `sm_count` SMs at `mhz`; None where the compute capability's tables are not known.
pub fn core_flops(cc: (i64, i64), sm_count: i64, mhz: i64, dtype: Dtype) -> Option<f64> {
    let per_lane = sm_count as f64 * mhz as f64 * 1e6 * 2.0;
    let fp32 = fp32_lanes(cc).map(|l| l * per_lane);
    let (f16x, bf16x) = half_factors(cc);
    match dtype {
        Dtype::F64 => fp64_lanes(cc).map(|l| l * per_lane),
        Dtype::F16 => fp32.zip(f16x).map(|(p, x)| p * x),
        Dtype::Bf16 => fp32.zip(bf16x).map(|(p, x)| p * x),
        _ => fp32,
    }
}

impl DeviceFacts {
    /// The device's DRAM bytes per second, where its memory bus is known.
    pub fn dram_peak(&self) -> Option<f64> {
        self.mem_bus_width_bits
            .map(|bits| dram(self.mem_clock_max_mhz, bits))
    }

    /// FLOPs per second of `dtype` on the CUDA cores at the driver's maximum SM clock.
    pub fn flops_peak(&self, dtype: Dtype) -> Option<f64> {
        core_flops(
            (self.cc_major, self.cc_minor),
            self.sm_count,
            self.sm_clock_max_mhz,
            dtype,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_per_sm_follow_the_programming_guides_table() {
        assert_eq!(fp64_lanes((9, 0)), Some(64.0));
        assert_eq!(half_factors((8, 0)), (Some(4.0), Some(2.0)));
        assert_eq!(half_factors((8, 9)), (Some(1.0), Some(1.0)));
        assert_eq!(fp32_lanes((9, 0)), Some(128.0));
        // An H100's sparse FP8 tensor cores do 64 times its FP32 lanes' FLOPs per clock.
        assert_eq!(ops_per_sm_clock((9, 0)), Some(64.0 * 2.0 * 128.0));
        assert_eq!(ops_per_sm_clock((8, 9)), None);
    }

    #[test]
    fn the_assumed_h100_has_its_data_sheets_peaks() {
        let h100 = DeviceFacts::nominal();
        // 2 x 2619 MHz x 5120 bits: 3.35 TB/s; 132 SMs x 1980 MHz x 128 lanes x 2: 66.9 TFLOP/s.
        assert_eq!(h100.dram_peak().unwrap().round(), 3_352_320_000_000.0);
        assert_eq!(
            h100.flops_peak(Dtype::F32).unwrap().round(),
            66_908_160_000_000.0
        );
        assert_eq!(
            h100.flops_peak(Dtype::F64),
            h100.flops_peak(Dtype::F32).map(|p| p / 2.0)
        );
    }
}
