//! Adaptive stopping: after each sample, whether the cell's samples are precise enough to
//! stop (NVBench's criterion: relative standard deviation under a target, with at least a
//! minimum count and GPU time), or it ran out of time. Running sums keep each check O(1).

use crate::experiment::knobs::samples::StopRule;
use std::time::Instant;

pub struct Stopper {
    rule: StopRule,
    started: Instant,
    n: u64,
    mean: f64,
    m2: f64,
    total_ns: f64,
}

impl Stopper {
    pub fn new(rule: StopRule) -> Stopper {
        Stopper {
            rule,
            started: Instant::now(),
            n: 0,
            mean: 0.0,
            m2: 0.0,
            total_ns: 0.0,
        }
    }

    /// Relative standard deviation of the samples so far, in percent (over n).
    fn rsd_pct(&self) -> f64 {
        if self.n < 2 || self.mean == 0.0 {
            return f64::INFINITY;
        }
        (self.m2 / self.n as f64).sqrt() / self.mean.abs() * 100.0
    }

    /// Adds a sample (`gpu_ns` of measured time, for `launches` launches per sample) and
    /// says why to stop, if it is time to.
    pub fn push(&mut self, sample_ns: f64, launches: u64) -> Option<String> {
        self.n += 1;
        let delta = sample_ns - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (sample_ns - self.mean);
        self.total_ns += sample_ns * launches as f64;
        let rsd = self.rsd_pct();
        if self.n >= self.rule.min_samples
            && self.total_ns >= self.rule.min_gpu_ns
            && rsd <= self.rule.rsd_pct
        {
            return Some(format!(
                "precise enough: RSD {rsd:.2}% after {} samples",
                self.n
            ));
        }
        (self.started.elapsed() >= self.rule.timeout).then(|| {
            format!(
                "timeout after {}: RSD {rsd:.2}% over {} samples",
                humantime::format_duration(self.rule.timeout),
                self.n
            )
        })
    }

    /// Why the cell ended when it took every sample it was allowed.
    pub fn exhausted(&self) -> String {
        format!(
            "sample cap reached: RSD {:.2}% over {} samples",
            self.rsd_pct(),
            self.n
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rule(min_samples: u64, min_gpu_ns: f64) -> StopRule {
        StopRule {
            rsd_pct: 0.5,
            min_samples,
            min_gpu_ns,
            timeout: Duration::from_secs(60),
        }
    }

    #[test]
    fn steady_samples_stop_once_count_and_time_are_reached() {
        let mut s = Stopper::new(rule(10, 50_000.0));
        for i in 0..9 {
            assert_eq!(s.push(10_000.0 + (i % 2) as f64, 1), None, "sample {i}");
        }
        // 10 samples, 100 µs of GPU time, RSD ~0.005%.
        let why = s.push(10_000.0, 1).unwrap();
        assert!(why.contains("after 10 samples"), "{why}");
    }

    #[test]
    fn noisy_samples_do_not_stop_early() {
        let mut s = Stopper::new(rule(2, 0.0));
        for i in 0..1000 {
            let x = if i % 2 == 0 { 9_000.0 } else { 11_000.0 };
            assert_eq!(s.push(x, 1), None, "RSD 10% never qualifies");
        }
        assert!(s.exhausted().contains("RSD 10.00% over 1000 samples"));
    }

    #[test]
    fn batches_count_their_launches_as_gpu_time() {
        let mut s = Stopper::new(rule(2, 100_000.0));
        assert_eq!(s.push(10_000.0, 10), None);
        assert!(
            s.push(10_000.0, 10).is_some(),
            "2 samples x 10 launches x 10 µs"
        );
    }

    #[test]
    fn a_timeout_stops_whatever_the_spread() {
        let mut s = Stopper::new(StopRule {
            timeout: Duration::ZERO,
            ..rule(1000, 0.0)
        });
        assert!(s.push(1.0, 1).unwrap().starts_with("timeout"));
    }
}
