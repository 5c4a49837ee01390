//! The clock probe: a one-thread kernel that spins a fixed number of SM cycles and reads
//! the global nanosecond timer around them, so cycles / ns is the SM clock it ran at. Run
//! before and after a cell (never inside a timed region) it shows drift that NVML's
//! reported clock does not.

use crate::worker::gpu::{cuda_err, DeviceBuffer, Gpu, Launch};
use cudarc::driver::sys::CUfunction;

/// Cycles per probe: about 1 ms at 2 GHz, so the timer's 32 ns steps weigh 0.003%.
const CYCLES: i64 = 2_000_000;
/// Probes per reading; the median is kept.
const REPEATS: usize = 3;

pub struct Probe {
    out: DeviceBuffer,
    launch: Launch,
}

impl Probe {
    pub fn new(func: CUfunction) -> Result<Probe, String> {
        let out = DeviceBuffer::alloc(16)?;
        let values = [
            out.ptr.to_ne_bytes().to_vec(),
            CYCLES.to_ne_bytes().to_vec(),
        ];
        let launch = Launch::new(func, (1, 1, 1), (1, 1, 1), 0, &values);
        Ok(Probe { out, launch })
    }

    /// The SM clock in MHz, from the median of a few probes; the GPU is idle afterwards.
    pub fn read(&mut self, gpu: &Gpu) -> Result<f64, String> {
        let mut mhz = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            self.launch
                .enqueue()
                .map_err(|e| cuda_err("clock probe launch", e))?;
            gpu.synchronize().map_err(|e| cuda_err("clock probe", e))?;
            let bytes = self.out.download()?;
            let word = |i: usize| u64::from_ne_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
            mhz.push(effective_mhz(word(0), word(1))?);
        }
        mhz.sort_by(f64::total_cmp);
        Ok(mhz[REPEATS / 2])
    }
}

/// SM cycles over nanoseconds, in MHz.
pub fn effective_mhz(cycles: u64, ns: u64) -> Result<f64, String> {
    if ns == 0 {
        return Err("clock probe: the global timer did not advance".into());
    }
    Ok(cycles as f64 / ns as f64 * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_over_time_is_the_clock() {
        assert_eq!(effective_mhz(1_980_000, 1_000_000).unwrap(), 1980.0);
        assert!(effective_mhz(1, 0).is_err());
    }
}
