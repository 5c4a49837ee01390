//! NVML readings (clocks, power, temperature, throttle reasons). Read only outside timed
//! regions; a missing NVML or an unsupported query is recorded as absent, never an error.

use crate::protocol::Telemetry;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Nvml;

pub struct Sensor {
    nvml: Option<Nvml>,
    uuid: String,
}

impl Sensor {
    /// Opens NVML for the device with this UUID (`GPU-...`), if NVML is there.
    pub fn open(uuid: &str) -> Sensor {
        Sensor {
            nvml: Nvml::init().ok(),
            uuid: uuid.to_string(),
        }
    }

    pub fn driver_version(&self) -> Option<String> {
        self.nvml.as_ref()?.sys_driver_version().ok()
    }

    pub fn read(&self) -> Option<Telemetry> {
        let nvml = self.nvml.as_ref()?;
        let dev = nvml.device_by_uuid(self.uuid.as_str()).ok()?;
        Some(Telemetry {
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
        })
    }
}
