//! `samples`, `stop`: steady samples after the first launch, and adaptive stopping.

use super::timer::TimerKind;
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    /// Steady samples asked for (with `stop`: the most a cell takes).
    pub count: u64,
    pub stop: Option<StopRule>,
}

impl Default for Samples {
    fn default() -> Self {
        Samples {
            count: FIXED_SAMPLES,
            stop: None,
        }
    }
}

impl Samples {
    /// A run's `per_run` samples in `runner plan`'s cell table, `≤` where a stop rule may
    /// end them sooner.
    pub fn plan_text(&self, per_run: u64) -> String {
        match self.stop {
            Some(_) => format!("≤{per_run}"),
            None => per_run.to_string(),
        }
    }
}

/// Adaptive stopping: once the median is this precise (its 95% interval within `ci_pct`
/// of it), or, by NVBench's rule, once the samples' relative standard deviation is under
/// `rsd_pct` or has stopped changing; with at least `min_samples` samples and `min_gpu_ns`
/// of measured time, and at `timeout` whatever the precision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    /// The median's rule, where set (runs from before it have none: NVBench's rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_pct: Option<f64>,
    pub rsd_pct: f64,
    /// NVBench's rule also ends a cell whose noise no longer changes (runs from before it
    /// did not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub settles: bool,
    pub min_samples: u64,
    pub min_gpu_ns: f64,
    #[serde(with = "super::seconds")]
    pub timeout: Duration,
}

impl StopRule {
    /// `stop = {}`, and a cell's rule where it gives neither `samples` nor `stop`: its
    /// median within 0.5% (95%), after 10 samples and 0.5 s of GPU time, at most 15 s
    /// (NVBench's bounds of a state).
    pub fn precise() -> StopRule {
        StopRule {
            ci_pct: Some(PRECISION_PCT),
            rsd_pct: PRECISION_PCT,
            settles: true,
            min_samples: 10,
            min_gpu_ns: 0.5e9,
            timeout: Duration::from_secs(15),
        }
    }
}

/// The precision a stop rule asks for by default, in percent of the median (or, by
/// NVBench's rule, the samples' relative standard deviation).
const PRECISION_PCT: f64 = 0.5;
/// The samples a cell takes where it gives `samples` nowhere and stops on no rule (a
/// timer whose readings come after the last launch).
const FIXED_SAMPLES: u64 = 100;

/// `stop = { ci_pct = 0.5, min_samples = 10, min_gpu_time = "0.5s", timeout = "15s" }`, or
/// `rsd_pct` for NVBench's rule.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStop {
    ci_pct: Option<f64>,
    rsd_pct: Option<f64>,
    min_samples: Option<u64>,
    min_gpu_time: Option<String>,
    timeout: Option<String>,
}

/// The most samples an adaptive cell takes when it does not set `samples`.
pub const ADAPTIVE_MAX_SAMPLES: u64 = 100_000;
/// The most samples a cell (or the floor's) takes: ten million launches of one kernel.
pub const MAX_SAMPLES: i64 = 10_000_000;

impl Knob for Samples {
    const KEYS: &'static [Key] = &[
        Key::commented(
            "samples",
            "100",
            "a fixed count of steady samples after the first launch (0: first launch only);
            given neither `samples` nor `stop`, a cell stops once its median is precise, as
            `stop = {}` does, or takes 100 where CUPTI or the profiler times it",
        ),
        Key::commented(
            "stop",
            r#"{ ci_pct = 0.5, min_samples = 10, min_gpu_time = "0.5s", timeout = "15s" }"#,
            "adaptive: stop once the median's 95% interval is within `ci_pct` percent of it
            (`stop = {}`: 0.5, the default without `samples`), or with `rsd_pct` instead by
            NVBench's rule (the samples' relative standard deviation under it, or no longer
            changing); `samples` is then the most a cell takes (default 100000); a cell of
            several runs (rounds, fresh processes) splits the GPU time and the timeout among
            them (its rounds, the most samples too), the timeout counting no audit; only with
            a timer that reads each sample as it is taken, not CUPTI or the profiler",
        ),
    ];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let timer: TimerKind = layer.get("timer")?.unwrap_or_default();
        let stop = match layer.get::<RawStop>("stop")? {
            None => None,
            Some(r) => {
                if !timer.reads_each_sample() {
                    return Err(layer
                        .err_at(
                            "stop",
                            "stop needs a timer that reads each sample as it is taken",
                        )
                        .with_hint("CUPTI's spans arrive after the cell's last launch"));
                }
                if r.ci_pct.is_some() && r.rsd_pct.is_some() {
                    return Err(layer
                        .err_at("stop", "stop gives both ci_pct and rsd_pct")
                        .with_hint("give ci_pct for the median's precision, or rsd_pct for NVBench's rule"));
                }
                let percent = |key: &str, value: f64| {
                    match value > 0.0 && value <= 100.0 {
                        true => Ok(value),
                        false => Err(layer
                            .err_at("stop", format!("stop.{key} is {value}"))
                            .with_hint(format!("give a percentage above 0 and at most 100, e.g. {key} = 0.5"))),
                    }
                };
                let ci_pct = match r.rsd_pct {
                    Some(_) => None,
                    None => Some(percent("ci_pct", r.ci_pct.unwrap_or(PRECISION_PCT))?),
                };
                let rsd_pct = percent("rsd_pct", r.rsd_pct.unwrap_or(PRECISION_PCT))?;
                let min_samples = r.min_samples.unwrap_or(StopRule::precise().min_samples);
                if min_samples > MAX_SAMPLES as u64 {
                    return Err(layer
                        .err_at("stop", format!("stop.min_samples is {min_samples}, more than the {MAX_SAMPLES} a cell takes"))
                        .with_hint(format!("give stop.min_samples at most {MAX_SAMPLES}")));
                }
                let duration = |text: Option<String>, default| match text {
                    None => Ok(default),
                    Some(t) => super::parse_duration(&t).map_err(|m| {
                        layer
                            .err_at("stop", format!("stop: {m}"))
                            .with_hint("write a duration such as \"0.5s\" or \"15s\"")
                    }),
                };
                let precise = StopRule::precise();
                Some(StopRule {
                    ci_pct,
                    rsd_pct,
                    min_samples,
                    min_gpu_ns: match r.min_gpu_time {
                        None => precise.min_gpu_ns,
                        text => duration(text, Duration::ZERO)?.as_nanos() as f64,
                    },
                    timeout: duration(r.timeout, precise.timeout)?,
                    ..precise
                })
            }
        };
        let count = layer.int("samples", 0..=MAX_SAMPLES)?.map(|n| n as u64);
        // Neither given: the median's precision decides, where the timer reads each sample
        // as it is taken; a fixed `samples` is what a cell asks for by giving it.
        let stop = match (stop, count) {
            (None, None) if timer.reads_each_sample() => Some(StopRule::precise()),
            (stop, _) => stop,
        };
        let default = match stop {
            Some(_) => ADAPTIVE_MAX_SAMPLES,
            None => FIXED_SAMPLES,
        };
        Ok(Samples {
            count: count.unwrap_or(default),
            stop,
        })
    }

    fn describe(&self) -> Option<String> {
        let (n, st) = match (self.count, &self.stop) {
            (0, _) => return Some("first launch only".into()),
            (n, None) => return Some(format!("first launch + {n} samples")),
            (n, Some(st)) => (n, st),
        };
        let precise = match st.ci_pct {
            Some(ci) => format!("the median's 95% interval is within {ci}% of it"),
            None if st.settles => format!(
                "the RSD is under {}% or no longer changing (NVBench's rule)",
                st.rsd_pct
            ),
            None => format!("the RSD is under {}%", st.rsd_pct),
        };
        Some(format!(
            "first launch + samples until {precise} (at least {} samples and {} ms of GPU time; at most {n} samples or {})",
            st.min_samples,
            st.min_gpu_ns / 1e6,
            humantime::format_duration(st.timeout)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn an_adaptive_stop_takes_nvbench_defaults_and_needs_a_direct_timer() {
        let s: Samples = read("stop = { rsd_pct = 1.0 }").unwrap();
        assert_eq!(s.count, ADAPTIVE_MAX_SAMPLES);
        let st = s.stop.unwrap();
        assert_eq!((st.min_samples, st.timeout.as_secs()), (10, 15));
        assert_eq!((st.ci_pct, st.rsd_pct), (None, 1.0));
        // By default the median's precision.
        let st = read::<Samples>("stop = {}").unwrap().stop.unwrap();
        assert_eq!(st.ci_pct, Some(0.5));
        assert_eq!(read::<Samples>("stop = { ci_pct = 2 }").unwrap().stop.unwrap().ci_pct, Some(2.0));
        assert!(read::<Samples>("stop = { ci_pct = 1, rsd_pct = 1 }").is_err());
        assert!(read::<Samples>("stop = { ci_pct = 0 }").is_err());
        assert!(read::<Samples>("timer = \"cupti\"\nstop = {}").is_err());
        assert!(read::<Samples>("stop = { rsd = 1 }").is_err());
        assert_eq!(read::<Samples>("samples = 0").unwrap().count, 0);
    }

    #[test]
    fn a_cell_that_gives_no_count_stops_on_its_medians_precision_unless_cupti_times_it() {
        let s: Samples = read("").unwrap();
        assert_eq!((s.count, s.stop), (ADAPTIVE_MAX_SAMPLES, Some(StopRule::precise())));
        assert_eq!(s.stop, read::<Samples>("stop = {}").unwrap().stop);
        let fixed: Samples = read("samples = 300").unwrap();
        assert_eq!((fixed.count, fixed.stop), (300, None));
        let cupti: Samples = read("timer = \"cupti\"").unwrap();
        assert_eq!((cupti.count, cupti.stop), (FIXED_SAMPLES, None));
        let capped: Samples = read("samples = 500\nstop = { min_gpu_time = \"0s\" }").unwrap();
        assert_eq!((capped.count, capped.stop.unwrap().min_gpu_ns), (500, 0.0));
    }
}
