//! NVML readings (clocks, power, temperature, throttle reasons): one at a time, or sampled
//! by a background thread during a cell. NVML is never called from inside a timed region; a
//! missing NVML or an unsupported query is recorded as absent, never an error.

use crate::protocol::{Telemetry, TelemetryPoint};
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::{Device, Nvml};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Sensor {
    nvml: Option<Arc<Nvml>>,
    uuid: String,
}

impl Sensor {
    /// Opens NVML, if it is there, before the device is known (a fresh worker opens it
    /// while it waits for the previous one to exit); [`Sensor::select`] names the device.
    pub fn open() -> Sensor {
        let nvml = Nvml::init().ok();
        // The first look-up of a device costs NVML milliseconds (about 7 ms on an H100):
        // paid here, before the device is known, and not by the first cell's set-up.
        if let Some(nvml) = &nvml {
            for i in 0..nvml.device_count().unwrap_or(0) {
                let _ = nvml.device_by_index(i).and_then(|d| d.uuid());
            }
        }
        Sensor {
            nvml: nvml.map(Arc::new),
            uuid: String::new(),
        }
    }

    /// The device read from now on, by its UUID (`GPU-...`).
    pub fn select(&mut self, uuid: &str) {
        self.uuid = uuid.to_string();
    }

    pub fn driver_version(&self) -> Option<String> {
        self.nvml.as_ref()?.sys_driver_version().ok()
    }

    /// The fastest PCIe link the device and its system allow.
    pub fn host_link(&self) -> Option<crate::protocol::HostLink> {
        let nvml = self.nvml.as_ref()?;
        let dev = nvml.device_by_uuid(self.uuid.as_str()).ok()?;
        Some(crate::protocol::HostLink {
            generation: dev.max_pcie_link_gen().ok()?,
            lanes: dev.max_pcie_link_width().ok()?,
        })
    }

    pub fn read(&self) -> Option<Telemetry> {
        let nvml = self.nvml.as_ref()?;
        Some(read(&nvml.device_by_uuid(self.uuid.as_str()).ok()?))
    }

    /// The board's energy since the driver loaded, in millijoules (NVML's counter; Volta
    /// and later). A reading takes milliseconds (about 4 ms on an H200).
    pub fn energy_mj(&self) -> Option<u64> {
        energy_mj(self.nvml.as_ref()?, &self.uuid)
    }

    /// [`Sensor::energy_mj`] read on a thread of its own, so that a loop that turns out too
    /// short to read needs not wait for it.
    pub fn energy_mj_behind(&self) -> Option<JoinHandle<Option<u64>>> {
        let (nvml, uuid) = (Arc::clone(self.nvml.as_ref()?), self.uuid.clone());
        Some(std::thread::spawn(move || energy_mj(&nvml, &uuid)))
    }

    /// Starts sampling every `interval`, timestamped from `origin` (the clock the cell's
    /// samples use), the series beginning with `start` (the cell's start reading and when
    /// it was taken, before `origin`); `None` without NVML or with a zero interval.
    pub fn sample_every(
        &self,
        interval: Duration,
        origin: Instant,
        start: Option<(Instant, Telemetry)>,
    ) -> Option<Sampler> {
        let nvml = self.nvml.clone()?;
        if interval.is_zero() {
            return None;
        }
        let uuid = self.uuid.clone();
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            let mut points: Vec<TelemetryPoint> = (start.into_iter())
                .map(|(at, reading)| TelemetryPoint {
                    t_us: -(origin.saturating_duration_since(at)).as_secs_f64() * 1e6,
                    reading,
                })
                .collect();
            let mut device = None;
            // No NVML call before the first interval has passed (the device's look-up
            // included): the start reading stands for the cell's start, and NVML's
            // milliseconds of calls beside a lazy first launch read 21-28 µs slower in runs
            // with them (benches/first-launch). It wakes at once for one last reading when
            // the sampler is finished: a cell does not wait out an interval for it.
            loop {
                let done = !matches!(
                    stopped.recv_timeout(interval),
                    Err(RecvTimeoutError::Timeout)
                );
                if device.is_none() {
                    device = nvml.device_by_uuid(uuid.as_str()).ok();
                }
                let Some(dev) = &device else {
                    return points;
                };
                let t_us = origin.elapsed().as_secs_f64() * 1e6;
                points.push(TelemetryPoint {
                    t_us,
                    reading: read(dev),
                });
                if done {
                    return points;
                }
            }
        });
        Some(Sampler {
            stop: Some(stop),
            handle: Some(handle),
        })
    }
}

fn energy_mj(nvml: &Nvml, uuid: &str) -> Option<u64> {
    nvml.device_by_uuid(uuid)
        .ok()?
        .total_energy_consumption()
        .ok()
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
    /// Dropped to stop the thread.
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<Vec<TelemetryPoint>>>,
}

impl Sampler {
    /// Stops sampling (after one last reading) and returns the series.
    pub fn finish(mut self) -> Vec<TelemetryPoint> {
        drop(self.stop.take());
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}
