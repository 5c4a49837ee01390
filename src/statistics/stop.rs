//! Stopping rules: after each sample, whether the samples are precise enough to stop taking
//! more. Two, behind one trait (as NVBench's stopping criteria are):
//! - the median's ([`MedianRule`]): its distribution-free 95% interval lies within a share of
//!   it. The spread of the samples is not the precision of their median, which narrows as
//!   samples come: a 25 µs matmul whose samples' RSD stays at 5% has its median to 0.5% after
//!   a few thousand samples. Checked every sixteenth of the samples so far (at least 16), so
//!   its order statistics cost a few operations a sample;
//! - NVBench's ([`NoiseRule`]): the samples' relative standard deviation under a target, or
//!   no longer changing (over its last 512 values, those about the current one within 5% of
//!   it, looked at every 16 samples once there are 64), so that a kernel whose noise will
//!   never fall under the target ends with the noise it has. Running sums keep it O(1).
//!
//! Either needs at least a minimum count and GPU time ([`Least`]). The worker binds a rule to
//! a cell's knobs and its timeout (`method::stop`).

use super::order::{interval_pct, median_interval};
use std::collections::VecDeque;

/// NVBench's rule: the RSDs it looks back over, how many it needs first, how often it looks,
/// and how close to the current one they must lie (as a share of it).
const NOISE_HISTORY: usize = 512;
const NOISE_SEEN: usize = 64;
const NOISE_EVERY: u64 = 16;
const NOISE_SETTLED: f64 = 0.05;

/// How precise the samples are by a rule's measure, in percent; infinite where it cannot be
/// told yet (too few samples).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reached {
    /// The median's 95% interval, its wider side as a percentage of it.
    MedianCiPct(f64),
    /// The samples' relative standard deviation.
    RsdPct(f64),
}

/// Why a rule stops the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The precision the rule asks for is reached.
    Precise,
    /// NVBench's: the noise stopped changing above its target.
    Settled,
}

/// A stopping rule, told every sample as it comes.
pub trait StoppingRule {
    /// Takes a sample of `sample_ns`, measured over `launches` launches (`all`: every sample
    /// so far, this one last), and says whether to stop, and why.
    fn push(&mut self, sample_ns: f64, all: &[f64], launches: u64) -> Option<Verdict>;

    /// How precise the samples are, by the rule's measure.
    fn reached(&self) -> Reached;

    /// The samples it was told of.
    fn samples(&self) -> u64;

    /// How precise `all` the samples are once no more come: a rule that looks only now and
    /// then looks once more.
    fn exhausted(&mut self, _all: &[f64]) -> Reached {
        self.reached()
    }
}

/// The least a rule needs before it may stop: samples, and GPU time measured (each sample's
/// time by its launches).
#[derive(Debug, Clone, Copy)]
pub struct Least {
    pub samples: u64,
    pub gpu_ns: f64,
}

/// What both rules count: the samples, and the GPU time they measured.
struct Count {
    least: Least,
    n: u64,
    total_ns: f64,
}

impl Count {
    fn new(least: Least) -> Count {
        Count {
            least,
            n: 0,
            total_ns: 0.0,
        }
    }

    /// Counts a sample of `launches` launches; whether there are enough now.
    fn push(&mut self, sample_ns: f64, launches: u64) -> bool {
        self.n += 1;
        self.total_ns += sample_ns * launches as f64;
        self.n >= self.least.samples && self.total_ns >= self.least.gpu_ns
    }
}

/// The median's rule: its 95% interval within `target` percent of it.
pub struct MedianRule {
    target: f64,
    count: Count,
    /// When to look at the median's interval next.
    next_look: u64,
    /// The median's interval at the last look, as a percentage of it.
    ci_pct: f64,
}

impl MedianRule {
    pub fn new(target: f64, least: Least) -> MedianRule {
        MedianRule {
            target,
            count: Count::new(least),
            next_look: 0,
            ci_pct: f64::INFINITY,
        }
    }

    /// The median's 95% interval of `samples`, its wider side as a percentage of it.
    fn look(samples: &[f64]) -> f64 {
        match median_interval(&mut samples.to_vec()) {
            Some(interval @ (_, mid, _)) if mid > 0.0 => interval_pct(interval),
            _ => f64::INFINITY,
        }
    }
}

impl StoppingRule for MedianRule {
    fn push(&mut self, sample_ns: f64, all: &[f64], launches: u64) -> Option<Verdict> {
        let enough = self.count.push(sample_ns, launches);
        let n = self.count.n;
        if enough && n >= self.next_look {
            self.next_look = n + (n / 16).max(16);
            self.ci_pct = Self::look(all);
        }
        (enough && self.ci_pct <= self.target).then_some(Verdict::Precise)
    }

    fn reached(&self) -> Reached {
        Reached::MedianCiPct(self.ci_pct)
    }

    fn samples(&self) -> u64 {
        self.count.n
    }

    fn exhausted(&mut self, all: &[f64]) -> Reached {
        self.ci_pct = Self::look(all);
        self.reached()
    }
}

/// NVBench's rule: the samples' RSD under `target` percent, or, where it `settles`, no longer
/// changing.
pub struct NoiseRule {
    target: f64,
    settles: bool,
    count: Count,
    mean: f64,
    m2: f64,
    /// The last RSDs.
    noise: VecDeque<f64>,
}

impl NoiseRule {
    pub fn new(target: f64, settles: bool, least: Least) -> NoiseRule {
        NoiseRule {
            target,
            settles,
            count: Count::new(least),
            mean: 0.0,
            m2: 0.0,
            noise: VecDeque::new(),
        }
    }

    /// Relative standard deviation of the samples so far, in percent (over n).
    fn rsd_pct(&self) -> f64 {
        if self.count.n < 2 || self.mean == 0.0 {
            return f64::INFINITY;
        }
        (self.m2 / self.count.n as f64).sqrt() / self.mean.abs() * 100.0
    }

    /// Whether the noise has settled: its last values lie about the current one within
    /// [`NOISE_SETTLED`] of it.
    fn noise_settled(&self, rsd: f64) -> bool {
        if self.noise.len() <= NOISE_SEEN
            || !self.count.n.is_multiple_of(NOISE_EVERY)
            || !rsd.is_finite()
        {
            return false;
        }
        let spread = (self.noise.iter().map(|x| (x - rsd).powi(2)).sum::<f64>()
            / self.noise.len() as f64)
            .sqrt();
        spread / rsd < NOISE_SETTLED
    }
}

impl StoppingRule for NoiseRule {
    fn push(&mut self, sample_ns: f64, _all: &[f64], launches: u64) -> Option<Verdict> {
        let enough = self.count.push(sample_ns, launches);
        let delta = sample_ns - self.mean;
        self.mean += delta / self.count.n as f64;
        self.m2 += delta * (sample_ns - self.mean);
        let rsd = self.rsd_pct();
        if rsd.is_finite() {
            if self.noise.len() == NOISE_HISTORY {
                self.noise.pop_front();
            }
            self.noise.push_back(rsd);
        }
        let settled = self.settles && enough && self.noise_settled(rsd);
        match (rsd <= self.target, settled) {
            _ if !enough => None,
            (true, _) => Some(Verdict::Precise),
            (false, true) => Some(Verdict::Settled),
            (false, false) => None,
        }
    }

    fn reached(&self) -> Reached {
        Reached::RsdPct(self.rsd_pct())
    }

    fn samples(&self) -> u64 {
        self.count.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn least(samples: u64, gpu_ns: f64) -> Least {
        Least { samples, gpu_ns }
    }

    /// NVBench's rule with a target of 0.5%, settling.
    fn noise(samples: u64, gpu_ns: f64) -> NoiseRule {
        NoiseRule::new(0.5, true, least(samples, gpu_ns))
    }

    /// Pushes `x` onto `all` and into the rule, as the sample loop does.
    fn push(
        r: &mut dyn StoppingRule,
        all: &mut Vec<f64>,
        x: f64,
        launches: u64,
    ) -> Option<Verdict> {
        all.push(x);
        r.push(x, all, launches)
    }

    #[test]
    fn steady_samples_stop_once_count_and_time_are_reached() {
        let mut r = noise(10, 50_000.0);
        let mut all = Vec::new();
        for i in 0..9 {
            assert_eq!(
                push(&mut r, &mut all, 10_000.0 + (i % 2) as f64, 1),
                None,
                "sample {i}"
            );
        }
        // 10 samples, 100 µs of GPU time, RSD ~0.005%.
        assert_eq!(push(&mut r, &mut all, 10_000.0, 1), Some(Verdict::Precise));
        assert!(matches!(r.reached(), Reached::RsdPct(p) if p < 0.01));
        assert_eq!(r.samples(), 10);
    }

    #[test]
    fn noise_that_stops_changing_ends_the_cell_with_the_noise_it_has() {
        // RSD 10% from the start: settled once 64 values of it are seen.
        let mut r = noise(2, 0.0);
        let mut all = Vec::new();
        let mut stopped = None;
        for i in 0..1000 {
            let x = if i % 2 == 0 { 9_000.0 } else { 11_000.0 };
            if let Some(why) = push(&mut r, &mut all, x, 1) {
                stopped = Some((i + 1, why));
                break;
            }
        }
        let (n, why) = stopped.expect("settled noise stops the cell");
        assert!(n <= 96, "{n}");
        assert_eq!(why, Verdict::Settled);
        assert!(matches!(r.reached(), Reached::RsdPct(p) if format!("{p:.2}") == "10.00"));
        // Noise still growing does not stop: samples that drift for 1,000 samples.
        let mut r = noise(10, 0.0);
        let mut all = Vec::new();
        for i in 0..1000u32 {
            let x = 10_000.0 + f64::from(i) * 100.0;
            assert_eq!(push(&mut r, &mut all, x, 1), None, "sample {i}");
        }
        assert!(matches!(r.exhausted(&all), Reached::RsdPct(_)));
        assert_eq!(r.samples(), 1000);
    }

    #[test]
    fn the_medians_rule_stops_when_its_interval_is_narrow_not_the_samples() {
        // Samples of RSD ~5% (a spread no RSD target of 0.5% ever meets), their median
        // pinned ever closer as they come.
        let mut r = MedianRule::new(0.5, least(10, 0.0));
        let mut all = Vec::new();
        let mut stopped = None;
        for i in 0..100_000u64 {
            let x = 25_000.0 * (1.0 + 0.05 * (((i * 7919) % 201) as f64 / 100.0 - 1.0) * 1.7);
            if let Some(why) = push(&mut r, &mut all, x, 1) {
                stopped = Some((i + 1, why));
                break;
            }
        }
        let (n, why) = stopped.expect("the median's interval narrows");
        assert!((100..20_000).contains(&n), "{n}");
        assert_eq!(why, Verdict::Precise);
        assert!(matches!(r.reached(), Reached::MedianCiPct(p) if p <= 0.5));
        assert_eq!(r.samples(), n);
        // Too few samples say nothing.
        let mut r = MedianRule::new(50.0, least(1, 0.0));
        let mut all = Vec::new();
        for x in [1.0, 2.0, 3.0, 4.0, 5.0] {
            assert_eq!(push(&mut r, &mut all, x, 1), None);
        }
        assert_eq!(r.exhausted(&all), Reached::MedianCiPct(f64::INFINITY));
    }

    #[test]
    fn batches_count_their_launches_as_gpu_time() {
        let mut r = noise(2, 100_000.0);
        let mut all = Vec::new();
        assert_eq!(push(&mut r, &mut all, 10_000.0, 10), None);
        assert!(
            push(&mut r, &mut all, 10_000.0, 10).is_some(),
            "2 samples x 10 launches x 10 µs"
        );
    }
}
