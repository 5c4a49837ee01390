//! The `lock` clock policy: lock the SM clock through NVML for a run and reset it after,
//! on success, on error and on Ctrl-C. It changes a device others may share, so it runs only
//! when the user passes `--allow-clock-changes` and is root; `runner plan` says what it would do.

use crate::experiment::ClockPolicy;
use nvml_wrapper::enums::device::GpuLockedClocksSetting;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

/// One line for `runner plan` and the report.
pub fn describe(policy: ClockPolicy) -> String {
    match policy {
        ClockPolicy::Observe => "observe: record clocks and flag cells whose SM clock moved".into(),
        ClockPolicy::Expect(mhz) => format!("expect {mhz} MHz: flag cells that ran at another SM clock"),
        ClockPolicy::Lock(mhz) => format!(
            "lock: would lock the SM clock at {mhz} MHz (nvmlDeviceSetGpuLockedClocks) for the run and reset it \
             afterwards (nvmlDeviceResetGpuLockedClocks), also on error or Ctrl-C; needs --allow-clock-changes and root"
        ),
    }
}

/// Whether this process runs as root (uid 0), read from `/proc/self/status`.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .map(|u| u == "0")
        })
        .unwrap_or(false)
}

/// Why the clocks are not locked. NVML's error is part of the message, not a source:
/// printed as a chain, it would be named twice.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The experiment locks them at these MHz, and the user did not pass
    /// `--allow-clock-changes`.
    #[error(
        "this experiment locks the SM clock at {0} MHz (clocks = {{ lock = {0} }}), which changes the GPU for \
         everyone using it.\n  Pass --allow-clock-changes to allow it, or use clocks = {{ expect = {0} }} to only check."
    )]
    NotAllowed(u32),
    /// Locking needs root.
    #[error("locking clocks needs root: run as root, or use clocks = {{ expect = <MHz> }}")]
    NotRoot,
    /// NVML refused: what the runner was doing, and NVML's error.
    #[error("{0}: {1}")]
    Nvml(String, NvmlError),
}

/// Refuses a policy that would change the device unless the user allowed it and is root.
pub fn check_allowed(policy: ClockPolicy, allowed: bool, root: bool) -> Result<(), LockError> {
    let ClockPolicy::Lock(mhz) = policy else {
        return Ok(());
    };
    if !allowed {
        return Err(LockError::NotAllowed(mhz));
    }
    if !root {
        return Err(LockError::NotRoot);
    }
    Ok(())
}

/// SM clocks locked for as long as this lives.
pub struct ClockLock {
    uuid: String,
}

impl ClockLock {
    pub fn acquire(mhz: u32, uuid: &str) -> Result<ClockLock, LockError> {
        let refused = |doing: String| move |e| LockError::Nvml(doing, e);
        let nvml = Nvml::init().map_err(refused("cannot lock clocks: NVML".into()))?;
        let mut dev = (nvml.device_by_uuid(uuid)).map_err(refused("cannot lock clocks".into()))?;
        dev.set_gpu_locked_clocks(GpuLockedClocksSetting::Numeric {
            min_clock_mhz: mhz,
            max_clock_mhz: mhz,
        })
        .map_err(refused(format!("cannot lock the SM clock at {mhz} MHz")))?;
        Ok(ClockLock {
            uuid: uuid.to_string(),
        })
    }
}

fn reset(uuid: &str) -> Result<(), NvmlError> {
    let nvml = Nvml::init()?;
    let mut dev = nvml.device_by_uuid(uuid)?;
    dev.reset_gpu_locked_clocks()
}

impl Drop for ClockLock {
    fn drop(&mut self) {
        if let Err(e) = reset(&self.uuid) {
            crate::terminal::tell(&format!(
                "warning: could not reset the SM clocks: {e}; reset them with nvidia-smi -rgc"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_is_refused_without_the_flag_and_without_root() {
        let lock = ClockPolicy::Lock(1755);
        assert!(check_allowed(lock, false, true)
            .unwrap_err()
            .to_string()
            .contains("--allow-clock-changes"));
        assert!(check_allowed(lock, true, false)
            .unwrap_err()
            .to_string()
            .contains("root"));
        assert!(check_allowed(lock, true, true).is_ok());
        assert!(check_allowed(ClockPolicy::Expect(1980), false, false).is_ok());
        assert!(check_allowed(ClockPolicy::Observe, false, false).is_ok());
    }

    #[test]
    fn plan_says_what_a_lock_would_do() {
        let d = describe(ClockPolicy::Lock(1755));
        assert!(
            d.contains("1755 MHz") && d.contains("reset") && d.contains("--allow-clock-changes"),
            "{d}"
        );
    }
}
