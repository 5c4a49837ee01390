//! The clock probe: a one-thread kernel that spins a fixed number of SM cycles and reads
//! the global nanosecond timer around them, so cycles / ns is the SM clock it ran at. Run
//! before and after a cell (never inside a timed region) it shows drift that NVML's
//! reported clock does not. Cycles per GPU nanosecond rise as much when the GPU's timer runs
//! slow as when the SM clock runs fast, so each reading also keeps the timer's and the host
//! clock's time: between two readings, GPU ns per host ns says whether the timer kept time.

use cuda::{synchronize, CudaError, DeviceBuffer, Dims, Function, Launch, Param};
use std::time::{Duration, Instant};

/// Cycles per probe: about 1 ms at 2 GHz, so the timer's 32 ns steps weigh 0.003%.
const CYCLES: i64 = 2_000_000;
/// Probes per reading; the median is kept.
const REPEATS: usize = 3;
/// The shortest time between two readings over which the timer's rate is worth reporting.
const MIN_RATE_INTERVAL: Duration = Duration::from_millis(100);

/// The probe's output buffer, allocated once per process.
pub struct Probe {
    out: DeviceBuffer,
    func: Function,
}

/// One reading: the SM clock, and the GPU timer's and the host clock's time at its end.
pub struct Reading {
    pub mhz: f64,
    gpu_ns: u64,
    host: Instant,
}

impl Reading {
    /// GPU timer nanoseconds per host nanosecond since `earlier` (1 when the GPU's timer keeps
    /// the host's time); none over less than `MIN_RATE_INTERVAL`. The host notices a probe's
    /// end some µs late: on the H100 the rate read within 0.02% of 1 from 0.1 s on, and up to
    /// 1% off over 10-30 ms.
    pub fn timer_rate_since(&self, earlier: &Reading) -> Option<f64> {
        let host = self.host.duration_since(earlier.host);
        let gpu_ns = self.gpu_ns.checked_sub(earlier.gpu_ns)? as f64;
        (host >= MIN_RATE_INTERVAL).then(|| gpu_ns / host.as_nanos() as f64)
    }
}

impl Probe {
    pub fn new(func: Function) -> Result<Probe, CudaError> {
        Ok(Probe {
            out: DeviceBuffer::alloc(24)?,
            func,
        })
    }

    /// The SM clock in MHz, from the median of a few probes; the GPU is idle afterwards.
    pub fn read(&self) -> Result<Reading, ProbeError> {
        let params = [Param::Buffer(&self.out), Param::u64(CYCLES as u64)];
        let mut launch = Launch::new(&self.func, Dims::ONE, &params);
        let mut mhz = Vec::with_capacity(REPEATS);
        // Each probe's end on the GPU's timer and when the host saw it.
        let mut ends = Vec::with_capacity(REPEATS);
        for _ in 0..REPEATS {
            launch.enqueue()?;
            synchronize()?;
            let host = Instant::now();
            let bytes = self.out.download()?;
            let word = |i: usize| u64::from_ne_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap());
            mhz.push(effective_mhz(word(0), word(1))?);
            ends.push((word(2), host));
        }
        mhz.sort_by(f64::total_cmp);
        let (gpu_ns, host) = soonest_seen(&ends);
        Ok(Reading {
            mhz: mhz[REPEATS / 2],
            gpu_ns,
            host,
        })
    }
}

/// The probe end the host saw soonest after the GPU's timer marked it: a host thread that
/// was descheduled after one synchronize (a few ms, now and then) would make its stamp late.
fn soonest_seen(ends: &[(u64, Instant)]) -> (u64, Instant) {
    let (gpu0, host0) = ends[0];
    *ends
        .iter()
        .min_by_key(|(gpu, host)| {
            host.duration_since(host0).as_nanos() as i128 - (*gpu as i128 - gpu0 as i128)
        })
        .expect("at least one probe")
}

/// SM cycles over nanoseconds, in MHz.
pub fn effective_mhz(cycles: u64, ns: u64) -> Result<f64, ProbeError> {
    if ns == 0 {
        return Err(ProbeError::TimerStill);
    }
    Ok(cycles as f64 / ns as f64 * 1e3)
}

/// Why the probe gave no reading. The CUDA error is part of the message, not a source.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Its launch, or reading its output back, failed.
    #[error("clock probe: {0}")]
    Cuda(CudaError),
    /// The global timer read the same before and after the probe's cycles.
    #[error("clock probe: the global timer did not advance")]
    TimerStill,
}

impl From<CudaError> for ProbeError {
    fn from(e: CudaError) -> Self {
        ProbeError::Cuda(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timer_rate_compares_gpu_and_host_time() {
        let host = Instant::now();
        let at = |gpu_ns, host_ns| Reading {
            mhz: 1980.0,
            gpu_ns,
            host: host + Duration::from_nanos(host_ns),
        };
        let rate = at(1_992_500_000, 2_000_000_000)
            .timer_rate_since(&at(0, 0))
            .unwrap();
        assert!((rate - 0.99625).abs() < 1e-12);
        let late = 200_000_000;
        assert_eq!(
            at(5, late).timer_rate_since(&at(9, 0)),
            None,
            "timer went back"
        );
        assert_eq!(
            at(1_000, 1_000).timer_rate_since(&at(0, 0)),
            None,
            "too short"
        );
    }

    #[test]
    fn the_probe_end_seen_soonest_is_kept() {
        let t = Instant::now();
        let ms = |n| t + Duration::from_millis(n);
        // The second probe ended 2 ms after the first but was seen 5 ms after: late.
        let ends = [(0, ms(0)), (2_000_000, ms(5)), (4_000_000, ms(4))];
        assert_eq!(soonest_seen(&ends), (0, ms(0)));
        let ends = [(0, ms(3)), (2_000_000, ms(2))];
        assert_eq!(soonest_seen(&ends), (2_000_000, ms(2)));
    }

    #[test]
    fn cycles_over_time_is_the_clock() {
        assert_eq!(effective_mhz(1_980_000, 1_000_000).unwrap(), 1980.0);
        assert!(effective_mhz(1, 0).is_err());
    }
}
