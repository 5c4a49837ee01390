//! Adaptive stopping: after each sample, whether the cell's samples are precise enough to
//! stop, or it ran out of time. Two rules:
//! - the median's (`ci_pct`): its distribution-free 95% interval lies within a share of it.
//!   The spread of the samples is not the precision of their median, which narrows as
//!   samples come: a 25 µs matmul whose samples' RSD stays at 5% has its median to 0.5% after
//!   a few thousand samples. Checked every sixteenth of the samples so far (at least 16), so
//!   its order statistics cost a few operations a sample;
//! - NVBench's (`rsd_pct`): the samples' relative standard deviation under a target, or no
//!   longer changing (over its last 512 values, those about the current one within 5% of
//!   it, looked at every 16 samples once there are 64), so that a kernel whose noise will
//!   never fall under the target ends with the noise it has. Running sums keep it O(1).
//!
//! Either needs at least a minimum count and GPU time; a timeout ends the cell whatever
//! its precision.

use crate::experiment::knobs::samples::StopRule;
use crate::median::median_interval;
use crate::protocol::{Precision, Stopped};
use std::collections::VecDeque;
use std::time::Instant;

/// NVBench's rule: the RSDs it looks back over, how many it needs first, how often it looks,
/// and how close to the current one they must lie (as a share of it).
const NOISE_HISTORY: usize = 512;
const NOISE_SEEN: usize = 64;
const NOISE_EVERY: u64 = 16;
const NOISE_SETTLED: f64 = 0.05;

pub struct Stopper {
    rule: StopRule,
    started: Instant,
    n: u64,
    mean: f64,
    m2: f64,
    total_ns: f64,
    /// When to look at the median's interval next.
    next_look: u64,
    /// The median's interval at the last look, as a percentage of it.
    ci_pct: f64,
    /// The last RSDs, for NVBench's rule.
    noise: VecDeque<f64>,
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
            next_look: 0,
            ci_pct: f64::INFINITY,
            noise: VecDeque::new(),
        }
    }

    /// Relative standard deviation of the samples so far, in percent (over n).
    fn rsd_pct(&self) -> f64 {
        if self.n < 2 || self.mean == 0.0 {
            return f64::INFINITY;
        }
        (self.m2 / self.n as f64).sqrt() / self.mean.abs() * 100.0
    }

    /// The median's 95% interval of `samples`, its wider side as a percentage of it.
    fn look_at_the_median(samples: &[f64]) -> f64 {
        match median_interval(&mut samples.to_vec()) {
            Some((lo, mid, hi)) if mid > 0.0 => (mid - lo).max(hi - mid) / mid * 100.0,
            _ => f64::INFINITY,
        }
    }

    /// Whether NVBench's noise has settled: its last values lie about the current one
    /// within [`NOISE_SETTLED`] of it.
    fn noise_settled(&self, rsd: f64) -> bool {
        if self.noise.len() <= NOISE_SEEN || !self.n.is_multiple_of(NOISE_EVERY) || !rsd.is_finite()
        {
            return false;
        }
        let spread = (self.noise.iter().map(|x| (x - rsd).powi(2)).sum::<f64>()
            / self.noise.len() as f64)
            .sqrt();
        spread / rsd < NOISE_SETTLED
    }

    /// The precision reached, by the rule's measure.
    fn reached(&self) -> Precision {
        match self.rule.ci_pct {
            Some(_) => Precision::MedianCiPct(self.ci_pct),
            None => Precision::RsdPct(self.rsd_pct()),
        }
    }

    /// Adds a sample (`gpu_ns` of measured time, for `launches` launches per sample; `all`:
    /// every sample so far, this one last) and says why to stop, if it is time to.
    pub fn push(&mut self, all: &[f64], launches: u64) -> Option<Stopped> {
        let sample_ns = *all.last()?;
        self.n += 1;
        let delta = sample_ns - self.mean;
        self.mean += delta / self.n as f64;
        self.m2 += delta * (sample_ns - self.mean);
        self.total_ns += sample_ns * launches as f64;
        let rsd = self.rsd_pct();
        let enough = self.n >= self.rule.min_samples && self.total_ns >= self.rule.min_gpu_ns;
        let samples = self.n;
        let why = match self.rule.ci_pct {
            Some(target) => {
                if enough && self.n >= self.next_look {
                    self.next_look = self.n + (self.n / 16).max(16);
                    self.ci_pct = Self::look_at_the_median(all);
                }
                (enough && self.ci_pct <= target).then(|| Stopped::Precise {
                    reached: self.reached(),
                    samples,
                })
            }
            None => {
                if rsd.is_finite() {
                    if self.noise.len() == NOISE_HISTORY {
                        self.noise.pop_front();
                    }
                    self.noise.push_back(rsd);
                }
                let settled = self.rule.settles && enough && self.noise_settled(rsd);
                let reached = Precision::RsdPct(rsd);
                match (rsd <= self.rule.rsd_pct, settled) {
                    _ if !enough => None,
                    (true, _) => Some(Stopped::Precise { reached, samples }),
                    (false, true) => Some(Stopped::Settled { reached, samples }),
                    (false, false) => None,
                }
            }
        };
        why.or_else(|| {
            (self.started.elapsed() >= self.rule.timeout).then(|| Stopped::Timeout {
                after: self.rule.timeout,
                reached: self.reached(),
                samples,
            })
        })
    }

    /// Why the cell ended when it took every sample it was allowed (`all` of them).
    pub fn exhausted(&mut self, all: &[f64]) -> Stopped {
        if self.rule.ci_pct.is_some() {
            self.ci_pct = Self::look_at_the_median(all);
        }
        Stopped::Cap {
            reached: self.reached(),
            samples: self.n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rule(min_samples: u64, min_gpu_ns: f64) -> StopRule {
        StopRule {
            ci_pct: None,
            rsd_pct: 0.5,
            settles: true,
            min_samples,
            min_gpu_ns,
            timeout: Duration::from_secs(60),
        }
    }

    /// Pushes `x` onto `all` and into the stopper, as the sample loop does.
    fn push(s: &mut Stopper, all: &mut Vec<f64>, x: f64, launches: u64) -> Option<Stopped> {
        all.push(x);
        s.push(all, launches)
    }

    #[test]
    fn steady_samples_stop_once_count_and_time_are_reached() {
        let mut s = Stopper::new(rule(10, 50_000.0));
        let mut all = Vec::new();
        for i in 0..9 {
            assert_eq!(
                push(&mut s, &mut all, 10_000.0 + (i % 2) as f64, 1),
                None,
                "sample {i}"
            );
        }
        // 10 samples, 100 µs of GPU time, RSD ~0.005%.
        let why = push(&mut s, &mut all, 10_000.0, 1).unwrap();
        assert!(
            matches!(why, Stopped::Precise { reached: Precision::RsdPct(r), samples: 10 } if r < 0.01),
            "{why}"
        );
    }

    #[test]
    fn noise_that_stops_changing_ends_the_cell_with_the_noise_it_has() {
        // RSD 10% from the start: settled once 64 values of it are seen.
        let mut s = Stopper::new(rule(2, 0.0));
        let mut all = Vec::new();
        let mut stopped = None;
        for i in 0..1000 {
            let x = if i % 2 == 0 { 9_000.0 } else { 11_000.0 };
            if let Some(why) = push(&mut s, &mut all, x, 1) {
                stopped = Some((i + 1, why));
                break;
            }
        }
        let (n, why) = stopped.expect("settled noise stops the cell");
        assert!(n <= 96, "{n}");
        assert!(matches!(why, Stopped::Settled { .. }), "{why:?}");
        assert!(
            why.to_string()
                .starts_with("noise no longer changing: RSD 10.00%"),
            "{why}"
        );
        // Noise still growing does not stop: samples that drift for 1,000 samples.
        let mut s = Stopper::new(rule(10, 0.0));
        let mut all = Vec::new();
        for i in 0..1000u32 {
            let x = 10_000.0 + f64::from(i) * 100.0;
            assert_eq!(push(&mut s, &mut all, x, 1), None, "sample {i}");
        }
        assert!(matches!(
            s.exhausted(&all),
            Stopped::Cap {
                reached: Precision::RsdPct(_),
                samples: 1000
            }
        ));
    }

    #[test]
    fn the_medians_rule_stops_when_its_interval_is_narrow_not_the_samples() {
        // Samples of RSD ~5% (a spread no RSD target of 0.5% ever meets), their median
        // pinned ever closer as they come.
        let mut s = Stopper::new(StopRule {
            ci_pct: Some(0.5),
            ..rule(10, 0.0)
        });
        let mut all = Vec::new();
        let mut stopped = None;
        for i in 0..100_000u64 {
            let x = 25_000.0 * (1.0 + 0.05 * (((i * 7919) % 201) as f64 / 100.0 - 1.0) * 1.7);
            if let Some(why) = push(&mut s, &mut all, x, 1) {
                stopped = Some((i + 1, why));
                break;
            }
        }
        let (n, why) = stopped.expect("the median's interval narrows");
        assert!((100..20_000).contains(&n), "{n}: {why}");
        assert!(
            matches!(why, Stopped::Precise { reached: Precision::MedianCiPct(p), samples } if p <= 0.5 && samples == n),
            "{why:?}"
        );
        assert!(
            why.to_string().starts_with("precise enough: median ±0.")
                && why.to_string().contains("(95%)"),
            "{why}"
        );
        // Too few samples say nothing.
        let mut s = Stopper::new(StopRule {
            ci_pct: Some(50.0),
            ..rule(1, 0.0)
        });
        let mut all = Vec::new();
        for x in [1.0, 2.0, 3.0, 4.0, 5.0] {
            assert_eq!(push(&mut s, &mut all, x, 1), None);
        }
    }

    #[test]
    fn batches_count_their_launches_as_gpu_time() {
        let mut s = Stopper::new(rule(2, 100_000.0));
        let mut all = Vec::new();
        assert_eq!(push(&mut s, &mut all, 10_000.0, 10), None);
        assert!(
            push(&mut s, &mut all, 10_000.0, 10).is_some(),
            "2 samples x 10 launches x 10 µs"
        );
    }

    #[test]
    fn a_timeout_stops_whatever_the_spread() {
        let mut s = Stopper::new(StopRule {
            timeout: Duration::ZERO,
            ..rule(1000, 0.0)
        });
        let mut all = Vec::new();
        let why = push(&mut s, &mut all, 1.0, 1).unwrap();
        assert!(
            matches!(why, Stopped::Timeout { samples: 1, .. }),
            "{why:?}"
        );
        assert!(
            why.to_string().starts_with("timeout after 0s: RSD inf%"),
            "{why}"
        );
    }
}
