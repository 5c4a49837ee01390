//! Adaptive stopping bound to a cell: the stopping rule its knobs ask for (the median's, or
//! NVBench's for `rsd_pct`; the rules are `statistics`'), and its timeout, which ends the
//! cell whatever its precision. Says why in the protocol's terms.

use crate::experiment::knobs::samples::StopRule;
use crate::protocol::Stopped;
use crate::statistics::{Least, MedianRule, NoiseRule, StoppingRule, Verdict};
use std::time::Duration;

pub struct Stopper {
    rule: Box<dyn StoppingRule>,
    timeout: Duration,
}

impl Stopper {
    /// The rule of one of a cell's `runs` (rounds, fresh processes): each takes its share of
    /// the cell's minimum GPU time and timeout, as of its budget, so that a
    /// cell of ten rounds takes as long as one of a single run; each still takes the minimum
    /// count and stops once its own median is as precise as asked.
    pub fn new(knobs: StopRule, runs: u32) -> Stopper {
        let runs = f64::from(runs.max(1));
        let least = Least {
            samples: knobs.min_samples,
            gpu_ns: knobs.min_gpu_ns / runs,
        };
        let rule: Box<dyn StoppingRule> = match knobs.ci_pct {
            Some(target) => Box::new(MedianRule::new(target, least)),
            None => Box::new(NoiseRule::new(knobs.rsd_pct, knobs.settles, least)),
        };
        // To the millisecond, so that a share reads as the timeout it is (`2s 142ms`).
        let share = knobs.timeout.as_millis() as f64 / runs;
        Stopper {
            rule,
            timeout: Duration::from_millis(share.round() as u64),
        }
    }

    /// Adds the newest sample (the last of `all`, every sample so far; `launches` launches
    /// each) and says why to stop, if it is time to; `elapsed`: the loop's time so far, its
    /// audits left out.
    pub fn push(&mut self, all: &[f64], launches: u64, elapsed: Duration) -> Option<Stopped> {
        let verdict = self.rule.push(*all.last()?, all, launches);
        let (reached, samples) = (self.rule.reached().into(), self.rule.samples());
        match verdict {
            Some(Verdict::Precise) => Some(Stopped::Precise { reached, samples }),
            Some(Verdict::Settled) => Some(Stopped::Settled { reached, samples }),
            None => (elapsed >= self.timeout).then_some(Stopped::Timeout {
                after: self.timeout,
                reached,
                samples,
            }),
        }
    }

    /// Why the cell ended when it took every sample it was allowed (`all` of them).
    pub fn exhausted(&mut self, all: &[f64]) -> Stopped {
        Stopped::Cap {
            reached: self.rule.exhausted(all).into(),
            samples: self.rule.samples(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(ci_pct: Option<f64>, min_samples: u64, timeout: Duration) -> StopRule {
        StopRule {
            ci_pct,
            rsd_pct: 0.5,
            settles: true,
            min_samples,
            min_gpu_ns: 0.0,
            timeout,
        }
    }

    /// The reason the stopper gives for `samples`, pushed one by one as the sample loop does.
    fn stop(knobs: StopRule, samples: impl Iterator<Item = f64>) -> Option<Stopped> {
        stop_run(knobs, 1, samples)
    }

    /// The same for one of a cell's `runs`.
    fn stop_run(knobs: StopRule, runs: u32, samples: impl Iterator<Item = f64>) -> Option<Stopped> {
        let mut s = Stopper::new(knobs, runs);
        let mut all = Vec::new();
        samples
            .map(|x| {
                all.push(x);
                s.push(&all, 1, Duration::ZERO)
            })
            .find(Option::is_some)
            .flatten()
            .or_else(|| Some(s.exhausted(&all)))
    }

    #[test]
    fn the_knobs_choose_the_rule_and_its_reason_reads_as_the_report_prints_it() {
        let minute = Duration::from_secs(60);
        let steady = std::iter::repeat_n(25_000.0, 1000);
        let why = stop(knobs(Some(0.5), 10, minute), steady).unwrap();
        assert_eq!(
            why.to_string(),
            "precise enough: median ±0.00% (95%) after 10 samples"
        );
        let alternating = (0..1000).map(|i| if i % 2 == 0 { 9_000.0 } else { 11_000.0 });
        let why = stop(knobs(None, 2, minute), alternating).unwrap();
        assert!(
            why.to_string()
                .starts_with("noise no longer changing: RSD 10.00%"),
            "{why}"
        );
        let drift = (0..100).map(|i| 10_000.0 + f64::from(i) * 100.0);
        let why = stop(knobs(None, 10, minute), drift).unwrap();
        assert!(
            why.to_string().starts_with("sample cap reached: RSD ")
                && why.to_string().ends_with(" over 100 samples"),
            "{why}"
        );
    }

    #[test]
    fn each_run_of_a_cell_takes_its_share_of_the_minimum_gpu_time_and_the_timeout() {
        let rule = StopRule {
            min_gpu_ns: 1e6,
            ..knobs(Some(0.5), 10, Duration::from_secs(60))
        };
        let steady = || std::iter::repeat_n(1_000.0, 5000);
        let samples = |why: Option<Stopped>| match why {
            Some(Stopped::Precise { samples, .. }) => samples,
            other => panic!("{other:?}"),
        };
        // 1 ms of GPU time in 1 µs samples: 1000 for a cell of one run, 100 for each of ten.
        assert_eq!(samples(stop_run(rule, 1, steady())), 1000);
        assert_eq!(samples(stop_run(rule, 10, steady())), 100);
        let ten = Stopper::new(knobs(None, 10, Duration::from_secs(15)), 10);
        assert_eq!(ten.timeout, Duration::from_millis(1500));
    }

    #[test]
    fn a_timeout_stops_whatever_the_spread() {
        let why = stop(knobs(None, 1000, Duration::ZERO), [1.0].into_iter()).unwrap();
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
