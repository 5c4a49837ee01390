//! The device as the driver and NVML describe it: the facts a worker reports, the parent
//! plans against and the analysis reads peaks from. Here, not in `cuda`, so that the stages
//! after the worker read them without reaching into CUDA; and the one place the driver's
//! answer becomes them (`From<cuda::Queried>`) and the facts an experiment is checked
//! against (`DeviceInfo::facts`).

use crate::experiment::DeviceFacts;
pub use cuda::LaunchLimits;
use cuda::Queried;
use serde::{Deserialize, Serialize};

/// What the driver says about a device: names, versions, sizes and launch limits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub uuid: String,
    pub compute_capability: String,
    pub sm_count: i64,
    pub l2_bytes: i64,
    pub mem_bytes: i64,
    pub sm_clock_max_mhz: i64,
    pub mem_clock_max_mhz: i64,
    /// The memory bus width, for the DRAM bandwidth's peak.
    #[serde(default)]
    pub mem_bus_width_bits: Option<i64>,
    pub cuda_driver_version: String,
    /// Filled by the parent: loading NVRTC costs a fresh worker ~15 ms, and a worker that
    /// reads a compiled image from the run's cache never needs it.
    pub nvrtc_version: String,
    /// From NVML, when it is available.
    pub driver_version: Option<String>,
    #[serde(default)]
    pub limits: Option<LaunchLimits>,
    /// The PCIe link to the host, from NVML, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_link: Option<HostLink>,
}

/// A PCIe link: the fastest the device and the system it sits in allow (an idle link trains
/// down; copies run at this).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct HostLink {
    pub generation: u32,
    pub lanes: u32,
}

impl HostLink {
    /// Transfers per lane per second (GT/s) and the share of them that carries data (line
    /// encoding), by PCIe generation.
    fn signalling(&self) -> Option<(f64, f64)> {
        match self.generation {
            1 => Some((2.5, 0.8)),
            2 => Some((5.0, 0.8)),
            3 => Some((8.0, 128.0 / 130.0)),
            4 => Some((16.0, 128.0 / 130.0)),
            5 => Some((32.0, 128.0 / 130.0)),
            _ => None,
        }
    }

    /// Bytes per second each way, before packet overheads: what a copy could reach at most.
    pub fn peak_bytes_per_s(&self) -> Option<f64> {
        let (gt, share) = self.signalling()?;
        Some(gt * 1e9 * self.lanes as f64 * share / 8.0)
    }

    /// How [`HostLink::peak_bytes_per_s`] is reached, for a report's note on its peaks.
    pub fn describe(&self) -> Option<String> {
        let (gt, share) = self.signalling()?;
        Some(format!(
            "PCIe {}.0 x{} {:.1} GB/s each way = {gt} GT/s x {} lanes x {} encoding / 8 (NVML's fastest link for the device and system; packet headers keep copies below it)",
            self.generation,
            self.lanes,
            self.peak_bytes_per_s()? / 1e9,
            self.lanes,
            if share > 0.9 { "128b/130b" } else { "8b/10b" }
        ))
    }
}

impl From<Queried> for DeviceInfo {
    /// The driver's answer; NVML's and NVRTC's parts are filled in where they are read.
    fn from(q: Queried) -> DeviceInfo {
        let (major, minor) = q.capability;
        DeviceInfo {
            name: q.name,
            uuid: q.uuid,
            compute_capability: format!("{major}.{minor}"),
            sm_count: q.sm_count,
            l2_bytes: q.l2_bytes,
            mem_bytes: q.mem_bytes,
            sm_clock_max_mhz: q.sm_clock_max_mhz,
            mem_clock_max_mhz: q.mem_clock_max_mhz,
            mem_bus_width_bits: Some(q.mem_bus_width_bits),
            cuda_driver_version: q.cuda_driver_version,
            nvrtc_version: String::new(),
            driver_version: None,
            limits: Some(q.limits),
            host_link: None,
        }
    }
}

impl DeviceInfo {
    /// The facts an experiment is checked against for this device (the nominal device's
    /// launch limits where a record from before them has none).
    pub fn facts(&self) -> DeviceFacts {
        let (cc_major, cc_minor) = capability(self);
        let nominal = DeviceFacts::nominal();
        let limits = self.limits;
        DeviceFacts {
            l2_bytes: self.l2_bytes,
            sm_count: self.sm_count,
            cc_major,
            cc_minor,
            mem_bytes: self.mem_bytes,
            max_threads_per_block: limits
                .map_or(nominal.max_threads_per_block, |l| l.max_threads_per_block),
            max_block: limits.map_or(nominal.max_block, |l| l.max_block),
            max_grid: limits.map_or(nominal.max_grid, |l| l.max_grid),
            max_shared_bytes: limits.map_or(nominal.max_shared_bytes, |l| l.max_shared_bytes),
            sm_clock_max_mhz: self.sm_clock_max_mhz,
            mem_clock_max_mhz: self.mem_clock_max_mhz,
            mem_bus_width_bits: self.mem_bus_width_bits,
            assumed: false,
        }
    }
}

/// The compute capability as numbers: `"9.0"` -> (9, 0).
pub fn capability(info: &DeviceInfo) -> (i64, i64) {
    let mut parts = info
        .compute_capability
        .split('.')
        .map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pcie_links_peak_follows_its_generation_and_lanes() {
        let gen5 = HostLink {
            generation: 5,
            lanes: 16,
        };
        let peak = gen5.peak_bytes_per_s().unwrap();
        assert!((peak / 1e9 - 63.0).abs() < 0.1, "{peak}");
        assert!(gen5
            .describe()
            .unwrap()
            .starts_with("PCIe 5.0 x16 63.0 GB/s"));
        let gen3 = HostLink {
            generation: 3,
            lanes: 8,
        };
        assert!((gen3.peak_bytes_per_s().unwrap() / 1e9 - 7.88).abs() < 0.01);
        let unknown = HostLink {
            generation: 9,
            lanes: 16,
        };
        assert_eq!(unknown.peak_bytes_per_s(), None);
    }
}
