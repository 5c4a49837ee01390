//! NVML readings (clocks, power, temperature, throttle reasons): one at a time, or sampled
//! by a background thread during a cell. NVML is never called from inside a timed region; a
//! missing NVML or an unsupported query is recorded as absent, never an error.

use crate::protocol::{Telemetry, TelemetryPoint};
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Sensor {
    nvml: Option<Arc<Nvml>>,
    uuid: String,
}

impl Sensor {
    /// Opens NVML for the device with this UUID (`GPU-...`), if NVML is there.
    pub fn open(uuid: &str) -> Sensor {
        Sensor {
            nvml: Nvml::init().ok().map(Arc::new),
            uuid: uuid.to_string(),
        }
    }

    pub fn driver_version(&self) -> Option<String> {
        self.nvml.as_ref()?.sys_driver_version().ok()
    }

    /// The fastest PCIe link the device and its system allow.
    pub fn host_link(&self) -> Option<crate::cuda::HostLink> {
        let nvml = self.nvml.as_ref()?;
        let dev = nvml.device_by_uuid(self.uuid.as_str()).ok()?;
        Some(crate::cuda::HostLink {
            generation: dev.max_pcie_link_gen().ok()?,
            lanes: dev.max_pcie_link_width().ok()?,
        })
    }

    pub fn read(&self) -> Option<Telemetry> {
        let nvml = self.nvml.as_ref()?;
        Some(read(&nvml.device_by_uuid(self.uuid.as_str()).ok()?))
    }

    /// Starts sampling every `interval`, timestamped from `origin` (the clock the cell's
    /// samples use); `None` without NVML or with a zero interval.
    pub fn sample_every(&self, interval: Duration, origin: Instant) -> Option<Sampler> {
        let nvml = self.nvml.clone()?;
        if interval.is_zero() {
            return None;
        }
        let uuid = self.uuid.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut points = Vec::new();
            let Ok(dev) = nvml.device_by_uuid(uuid.as_str()) else {
                return points;
            };
            loop {
                let done = stopped.load(Ordering::Relaxed);
                let t_us = origin.elapsed().as_secs_f64() * 1e6;
                points.push(TelemetryPoint {
                    t_us,
                    reading: read(&dev),
                });
                if done {
                    return points;
                }
                std::thread::sleep(interval);
            }
        });
        Some(Sampler {
            stop,
            handle: Some(handle),
        })
    }
}

fn read(dev: &Device) -> Telemetry {
    Telemetry {
        sm_mhz: dev.clock_info(Clock::SM).ok(),
        mem_mhz: dev.clock_info(Clock::Memory).ok(),
        power_w: dev.power_usage().ok().map(|mw| mw as f64 / 1000.0),
        temp_c: dev.temperature(TemperatureSensor::Gpu).ok(),
        pstate: dev.performance_state().ok().map(|p| format!("{p:?}")),
        throttle: dev
            .current_throttle_reasons()
            .map(|r| {
                r.iter_names()
                    .map(|(name, _)| name.to_lowercase())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// A running background sampler; dropping it (a failed cell) stops the thread too.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<TelemetryPoint>>>,
}

impl Sampler {
    /// Stops sampling (after one last reading) and returns the series.
    pub fn finish(mut self) -> Vec<TelemetryPoint> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
