//! What a device does at its peak, from facts the driver gives (compute capability, SM
//! count, SM and memory clocks, memory bus) and the CUDA programming guide's throughput
//! tables. Shared by `runner plan`'s estimate of a kernel's time (against an assumed H100 or
//! the run's device) and the analysis's peaks, which judge the readings.

use super::error::BadValue;
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

/// 32-bit integer multiply-adds (IMAD) per SM per clock by compute capability (the CUDA
/// programming guide's throughput table: 64 on 7.x, 8.x and 9.0; not known beyond).
pub fn int32_lanes(cc: (i64, i64)) -> Option<f64> {
    match cc {
        (7, _) | (8, _) | (9, 0) => Some(64.0),
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

/// What a kernel's declared FLOPs are counted against: the CUDA cores of one type, or the
/// tensor cores of one (`flops_type`); or a unit the tables lack, at the rate the kernel
/// states (`peak`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum FlopsType {
    Cores(Dtype),
    Tensor(Tensor),
    Declared(DeclaredPeak),
}

/// A peak a kernel gives itself (`peak = { per_sm_clock = 512, name = "INT8 dp4a
/// (operations)" }`): operations per SM per clock, so that it holds on any device as the
/// built-in types' do, and how the reports name it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DeclaredPeak {
    pub per_sm_clock: f64,
    pub name: String,
}

impl DeclaredPeak {
    /// How `peak` is written, as errors show it.
    pub const EXAMPLE: &'static str =
        "peak = { per_sm_clock = 512, name = \"INT8 dp4a (operations)\" }";

    /// `peak`'s table: a positive, finite `per_sm_clock` and a one-line `name`, nothing else.
    pub fn parse(value: &toml::Value) -> Result<DeclaredPeak, BadValue> {
        let toml::Value::Table(table) = value else {
            return Err(BadValue(format!("peak = {value} is not a table")));
        };
        if let Some(other) = table
            .keys()
            .find(|k| !["per_sm_clock", "name"].contains(&k.as_str()))
        {
            return Err(BadValue(format!(
                "peak has no key `{other}`: it takes per_sm_clock and name"
            )));
        }
        let per_sm_clock = match table.get("per_sm_clock") {
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(toml::Value::Float(f)) => *f,
            Some(other) => {
                return Err(BadValue(format!(
                    "peak's per_sm_clock = {other} is not a number"
                )))
            }
            None => return Err(BadValue("peak needs per_sm_clock".into())),
        };
        if !(per_sm_clock.is_finite() && per_sm_clock > 0.0) {
            return Err(BadValue(format!(
                "peak's per_sm_clock is {per_sm_clock}, not a positive number of operations per SM per clock"
            )));
        }
        let name = match table.get("name") {
            Some(toml::Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => s,
            Some(other) => {
                return Err(BadValue(format!(
                    "peak's name = {other} is not a name on one line"
                )))
            }
            None => return Err(BadValue("peak needs a name".into())),
        };
        Ok(DeclaredPeak {
            per_sm_clock,
            name: name.trim().to_string(),
        })
    }
}

/// The tensor cores' input types: dense matrix multiply-accumulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Tensor {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
    I8,
}

impl Default for FlopsType {
    fn default() -> Self {
        FlopsType::Cores(Dtype::F32)
    }
}

impl FlopsType {
    /// The values `flops_type` takes, as the key reference and errors list them.
    pub const KEYS: &'static str = "f16, bf16, f32, f64, i32 (CUDA cores; i32: integer multiply-adds), tensor-f16, tensor-bf16, tensor-tf32, tensor-e4m3, tensor-e5m2, tensor-i8 (tensor cores, dense)";

    pub fn parse(text: &str) -> Option<FlopsType> {
        let tensor = match text.strip_prefix("tensor-") {
            None => {
                return Dtype::parse(text)
                    .filter(|d| d.is_float() || *d == Dtype::I32)
                    .map(FlopsType::Cores)
            }
            Some(t) => t,
        };
        Some(FlopsType::Tensor(match tensor {
            "f16" => Tensor::F16,
            "bf16" => Tensor::Bf16,
            "tf32" => Tensor::Tf32,
            "e4m3" => Tensor::E4m3,
            "e5m2" => Tensor::E5m2,
            "i8" => Tensor::I8,
            _ => return None,
        }))
    }

    /// How a report names the peak: `FP32`, `FP16 (without tensor cores)`, `FP16 tensor-core
    /// (dense)`, a declared peak's own name.
    pub fn name(&self) -> &str {
        match self {
            FlopsType::Cores(Dtype::F64) => "FP64",
            FlopsType::Cores(Dtype::F16) => "FP16 (without tensor cores)",
            FlopsType::Cores(Dtype::Bf16) => "BF16 (without tensor cores)",
            FlopsType::Cores(Dtype::I32) => "INT32 multiply-add (operations)",
            FlopsType::Cores(_) => "FP32",
            FlopsType::Tensor(Tensor::F16) => "FP16 tensor-core (dense)",
            FlopsType::Tensor(Tensor::Bf16) => "BF16 tensor-core (dense)",
            FlopsType::Tensor(Tensor::Tf32) => "TF32 tensor-core (dense)",
            FlopsType::Tensor(Tensor::E4m3) => "FP8 E4M3 tensor-core (dense)",
            FlopsType::Tensor(Tensor::E5m2) => "FP8 E5M2 tensor-core (dense)",
            FlopsType::Tensor(Tensor::I8) => "INT8 tensor-core (dense, operations)",
            FlopsType::Declared(d) => &d.name,
        }
    }

    /// Operations per second of this type on `sm_count` SMs at `mhz`; None where the
    /// compute capability's tables are not known or lack the type.
    pub fn peak(&self, cc: (i64, i64), sm_count: i64, mhz: i64) -> Option<f64> {
        match self {
            FlopsType::Cores(dtype) => core_flops(cc, sm_count, mhz, *dtype),
            _ => (self.per_sm_clock(cc)).map(|ops| ops * sm_count as f64 * mhz as f64 * 1e6),
        }
    }

    /// Operations per SM per clock, where they are not the CUDA cores' (whose peaks the
    /// reports derive from their lanes): the tensor cores' by `rates.rs`, a declared peak's.
    pub fn per_sm_clock(&self, cc: (i64, i64)) -> Option<f64> {
        match self {
            FlopsType::Cores(_) => None,
            FlopsType::Tensor(t) => tensor_ops_per_sm_clock(cc, *t),
            FlopsType::Declared(d) => Some(d.per_sm_clock),
        }
    }
}

/// Dense tensor-core operations (a multiply-add counts two) per SM per clock, by compute
/// capability and input type: NVIDIA's published dense peaks over the SMs and the clock they
/// are quoted at. 8.0 (A100: 312 TFLOP/s FP16 on 108 SMs at 1410 MHz, TF32 156, INT8 624
/// TOPS, no FP8); 8.9 (L40S: 362 FP16 on 142 SMs at 2520 MHz, TF32 181, FP8 and INT8 733);
/// 9.0 (H100 SXM: 989 FP16 on 132 SMs at 1830 MHz, TF32 495, FP8 and INT8 1979); 10.0 (B200:
/// twice 9.0's per SM); 12.0 (RTX PRO 6000 Blackwell: as 8.9's per SM). GeForce parts run
/// FP16 and BF16 with FP32 accumulation at half these rates.
pub fn tensor_ops_per_sm_clock(cc: (i64, i64), t: Tensor) -> Option<f64> {
    let (half, tf32, fp8, int8) = match cc {
        (8, 0) => (2048.0, 1024.0, None, 4096.0),
        (8, 9) | (12, _) => (1024.0, 512.0, Some(2048.0), 2048.0),
        (9, 0) => (4096.0, 2048.0, Some(8192.0), 8192.0),
        (10, _) => (8192.0, 4096.0, Some(16384.0), 16384.0),
        _ => return None,
    };
    match t {
        Tensor::F16 | Tensor::Bf16 => Some(half),
        Tensor::Tf32 => Some(tf32),
        Tensor::E4m3 | Tensor::E5m2 => fp8,
        Tensor::I8 => Some(int8),
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
        Dtype::I32 => int32_lanes(cc).map(|l| l * per_lane),
        _ => fp32,
    }
}

impl DeviceFacts {
    /// The device's DRAM bytes per second, where its memory bus is known.
    pub fn dram_peak(&self) -> Option<f64> {
        self.mem_bus_width_bits
            .map(|bits| dram(self.mem_clock_max_mhz, bits))
    }

    /// Operations per second of `flops` at the driver's maximum SM clock.
    pub fn flops_peak(&self, flops: &FlopsType) -> Option<f64> {
        let cc = (self.cc_major, self.cc_minor);
        flops.peak(cc, self.sm_count, self.sm_clock_max_mhz)
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
    fn tensor_peaks_follow_the_data_sheets() {
        let tensor = |t: &str| FlopsType::parse(t).unwrap();
        // An H100 SXM at the 1830 MHz its data sheet quotes: 989 TFLOP/s dense FP16.
        let h100 = |t: &str| tensor(t).peak((9, 0), 132, 1830).unwrap() / 1e12;
        assert!((h100("tensor-f16") - 989.5).abs() < 0.5);
        assert!((h100("tensor-tf32") - 494.7).abs() < 0.5);
        assert!((h100("tensor-e4m3") - 1978.9).abs() < 0.5);
        // An A100: 312 dense FP16, 624 INT8 TOPS, no FP8.
        let a100 = |t: &str| tensor(t).peak((8, 0), 108, 1410).map(|p| p / 1e12);
        assert!((a100("tensor-bf16").unwrap() - 311.9).abs() < 0.5);
        assert!((a100("tensor-i8").unwrap() - 623.8).abs() < 0.5);
        assert_eq!(a100("tensor-e5m2"), None);
        // The dense tensor peaks stay below the sparse ceiling.
        assert!(tensor_ops_per_sm_clock((9, 0), Tensor::E4m3) < ops_per_sm_clock((9, 0)));
        assert_eq!(FlopsType::parse("f32"), Some(FlopsType::Cores(Dtype::F32)));
        assert_eq!(FlopsType::parse("i32"), Some(FlopsType::Cores(Dtype::I32)));
        assert_eq!(FlopsType::parse("i8"), None);
        // An H100 SXM's IMADs: 132 SMs x 1980 MHz x 64 x 2 = 33.5 TOPS, half its FP32.
        let imad = FlopsType::parse("i32")
            .unwrap()
            .peak((9, 0), 132, 1980)
            .unwrap();
        assert_eq!(
            imad,
            FlopsType::default().peak((9, 0), 132, 1980).unwrap() / 2.0
        );
        assert_eq!(FlopsType::parse("tensor-f64"), None);
        assert_eq!(tensor("tensor-f16").name(), "FP16 tensor-core (dense)");
    }

    /// `docs/peaks.md`: every peak the runner knows, per SM per clock by compute capability,
    /// as `flops_type` names them, made from the tables above (`UPDATE_DOCS=1 cargo test
    /// peaks_table` writes it again).
    #[test]
    fn the_peaks_table_in_the_docs_is_the_codes() {
        let ccs = [(8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0)];
        let mut types: Vec<(&str, FlopsType)> = ["f64", "f32", "f16", "bf16", "i32"]
            .iter()
            .map(|t| (*t, FlopsType::parse(t).unwrap()))
            .collect();
        for t in [
            "tensor-f16",
            "tensor-bf16",
            "tensor-tf32",
            "tensor-e4m3",
            "tensor-e5m2",
            "tensor-i8",
        ] {
            types.push((t, FlopsType::parse(t).unwrap()));
        }
        let per_clock = |t: &FlopsType, cc| t.peak(cc, 1, 1).map(|p| p / 1e6);
        let mut out = String::from(
            "# Peaks the runner knows\n\n\
             Operations per SM per clock (a multiply-add counts two), by `flops_type` and compute\n\
             capability: multiply by the SM count and the SM clock for a device's peak, as reports\n\
             do at the driver's maximum clock. CUDA cores: the CUDA C++ Programming Guide's\n\
             arithmetic-instructions throughput table. Tensor cores, dense: NVIDIA's data sheets'\n\
             peaks over their SMs and quoted clocks (A100 for 8.0, L40S for 8.9, H100 SXM for 9.0,\n\
             B200 for 10.0, RTX PRO 6000 Blackwell for 12.0). `–`: not known, so no share of a peak\n\
             is given. A reading above its type's peak means the kernel ran on another unit (set\n\
             `flops_type`) or declares more FLOPs than it does. Made from `src/experiment/rates.rs`\n\
             (`UPDATE_DOCS=1 cargo test peaks_table`).\n\n\
             Work on a unit this table lacks (int8 dot products with `__dp4a` on the CUDA cores)\n\
             may state its own rate instead of `flops_type`: `peak = { per_sm_clock = 512, name =\n\
             \"INT8 dp4a (operations)\" }`, operations per SM per clock, multiplied as the table's\n\
             are and named as given wherever a share of it is shown (experiments/dp4a.toml). A\n\
             reading above such a peak means its `per_sm_clock` is too low or the kernel declares\n\
             more operations than it does.\n\n",
        );
        let _ = std::fmt::Write::write_fmt(
            &mut out,
            format_args!(
                "| flops_type | {} |\n|---|{}\n",
                ccs.map(|(a, b)| format!("{a}.{b}")).join(" | "),
                "---:|".repeat(ccs.len())
            ),
        );
        for (key, t) in &types {
            let cells: Vec<String> = (ccs.iter())
                .map(|&cc| per_clock(t, cc).map_or("–".into(), |v| format!("{v:.0}")))
                .collect();
            out.push_str(&format!(
                "| `{key}` ({}) | {} |\n",
                t.name(),
                cells.join(" | ")
            ));
        }
        let most: Vec<String> = (ccs.iter())
            .map(|&cc| ops_per_sm_clock(cc).map_or("–".into(), |v| format!("{v:.0}")))
            .collect();
        out.push_str(&format!(
            "| any type, any unit (2:4 sparse; the ceiling for impossible readings) | {} |\n",
            most.join(" | ")
        ));
        let path = std::path::Path::new("docs/peaks.md");
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &out).unwrap();
        }
        let kept = std::fs::read_to_string(path).unwrap_or_default();
        assert_eq!(
            kept, out,
            "docs/peaks.md is stale: UPDATE_DOCS=1 cargo test peaks_table"
        );
    }

    #[test]
    fn a_declared_peak_is_per_sm_per_clock_and_refuses_what_is_not_one() {
        let table = |text: &str| text.parse::<toml::Table>().unwrap()["peak"].clone();
        let dp4a = DeclaredPeak::parse(&table(
            "peak = { per_sm_clock = 512, name = \" INT8 dp4a (operations) \" }",
        ))
        .unwrap();
        assert_eq!(dp4a.name, "INT8 dp4a (operations)");
        let declared = FlopsType::Declared(dp4a);
        // 132 SMs x 1980 MHz x 512: 133.8 TOPS on any compute capability.
        let h100 = declared.peak((9, 0), 132, 1980).unwrap();
        assert_eq!(h100, 512.0 * 132.0 * 1980e6);
        assert_eq!(declared.peak((5, 0), 132, 1980), Some(h100));
        assert_eq!(declared.name(), "INT8 dp4a (operations)");
        assert_eq!(declared.per_sm_clock((5, 0)), Some(512.0));
        let refused = |text: &str| DeclaredPeak::parse(&table(text)).unwrap_err().0;
        assert!(refused("peak = 512").contains("not a table"));
        assert!(refused("peak = { per_sm_clock = 0, name = \"x\" }").contains("not a positive"));
        assert!(refused("peak = { per_sm_clock = -1.5, name = \"x\" }").contains("-1.5"));
        assert!(refused("peak = { per_sm_clock = \"512\", name = \"x\" }").contains("not a number"));
        assert!(refused("peak = { per_sm_clock = 512, nmae = \"x\" }").contains("`nmae`"));
        assert!(refused("peak = { per_sm_clock = 512 }").contains("needs a name"));
        assert!(refused("peak = { per_sm_clock = 512, name = \" \" }").contains("one line"));
        assert!(refused("peak = { name = \"x\" }").contains("needs per_sm_clock"));
    }

    #[test]
    fn the_assumed_h100_has_its_data_sheets_peaks() {
        let h100 = DeviceFacts::nominal();
        // 2 x 2619 MHz x 5120 bits: 3.35 TB/s; 132 SMs x 1980 MHz x 128 lanes x 2: 66.9 TFLOP/s.
        assert_eq!(h100.dram_peak().unwrap().round(), 3_352_320_000_000.0);
        assert_eq!(
            h100.flops_peak(&FlopsType::default()).unwrap().round(),
            66_908_160_000_000.0
        );
        assert_eq!(
            h100.flops_peak(&FlopsType::Cores(Dtype::F64)),
            h100.flops_peak(&FlopsType::default()).map(|p| p / 2.0)
        );
    }
}
