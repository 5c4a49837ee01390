//! `budget`: the most GPU time a cell's steady samples take, after a minimum count, so that
//! one slow kernel cannot hold the run for its fixed sample count (NVBench bounds each state
//! the same way). `budget = "none"` takes every sample asked for.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Budget {
    /// Every sample `samples` asks for.
    Fixed,
    /// Stop once the steady samples hold `gpu_time` (split evenly over the cell's runs),
    /// but never before `min_samples` of them.
    Gpu {
        #[serde(with = "super::seconds")]
        gpu_time: Duration,
        min_samples: u64,
    },
}

/// The default's GPU time: over twice the longest cell of the committed experiments (the
/// statistics run's 5000 samples of a 2.8 ms matmul, 13.8 s), thermal's and drift's
/// three-minute cells aside, which say `budget = "none"`; a 100 s cell stops at 30 s.
pub const DEFAULT_GPU_TIME: Duration = Duration::from_secs(30);
/// The default's minimum count: NVBench's `min_samples`.
pub const DEFAULT_MIN_SAMPLES: u64 = 10;

impl Default for Budget {
    fn default() -> Self {
        Budget::Gpu {
            gpu_time: DEFAULT_GPU_TIME,
            min_samples: DEFAULT_MIN_SAMPLES,
        }
    }
}

/// `budget = { gpu_time = "30s", min_samples = 10 }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBudget {
    gpu_time: Option<String>,
    min_samples: Option<u64>,
}

const HINT: &str = "write budget = \"30s\" (GPU time), budget = { gpu_time = \"30s\", min_samples = 10 }, or budget = \"none\" for fixed sample counts";

impl Knob for Budget {
    const KEYS: &'static [Key] = &[Key::set(
        "budget",
        r#"{ gpu_time = "30s", min_samples = 10 }"#,
        r#"the default: a cell stops taking samples once they hold 30 s of GPU time, after 10
        at least (a cell of several runs splits it); "none": every sample asked for; "2 min":
        that GPU time, at least 10 samples"#,
    )];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let Some(raw) = layer.raw("budget") else {
            return Ok(Budget::default());
        };
        let err = |m: String| layer.err(raw, format!("budget: {m}")).with_hint(HINT);
        let (time, min_samples) = match raw.get_ref() {
            toml::Value::String(s) if s.trim() == "none" => return Ok(Budget::Fixed),
            toml::Value::String(s) => (Some(s.clone()), None),
            toml::Value::Table(_) => {
                let r = layer.get::<RawBudget>("budget")?.expect("set");
                (r.gpu_time, r.min_samples)
            }
            other => return Err(err(format!("`{other}` is neither a duration nor a table"))),
        };
        let gpu_time = match time {
            None => DEFAULT_GPU_TIME,
            Some(t) => super::parse_duration(&t).map_err(|e| err(e.into()))?,
        };
        if gpu_time.is_zero() {
            return Err(err("a GPU time of zero would stop every cell at its minimum".into()));
        }
        let min_samples = min_samples.unwrap_or(DEFAULT_MIN_SAMPLES);
        if min_samples > super::samples::MAX_SAMPLES as u64 {
            return Err(err(format!(
                "min_samples is {min_samples}, more than the {} a cell takes",
                super::samples::MAX_SAMPLES
            )));
        }
        Ok(Budget::Gpu {
            gpu_time,
            min_samples,
        })
    }

    /// Said only where the experiment chose a budget: the default cuts no cell of the
    /// committed runs (nor of those run before it existed), and a cell it stops says so.
    fn describe(&self) -> Option<String> {
        (*self != Budget::default()).then(|| self.text())
    }
}

/// How any budget is spent, which `runner plan` says once after the budgets it lists.
pub const SPENDING: &str = "(split over a cell's runs; CUPTI and profiler cells count the sample loop's wall time); budget = \"none\" takes every sample";

impl Budget {
    /// The budget in words, as `runner plan` and the methodology state it.
    pub fn text(&self) -> String {
        match self {
            Budget::Fixed => "no budget: every sample asked for".into(),
            Budget::Gpu {
                gpu_time,
                min_samples,
            } => format!(
                "stops once the steady samples hold {} of GPU time (at least {min_samples} samples)",
                humantime::format_duration(*gpu_time)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn a_budget_reads_as_none_a_duration_or_a_table() {
        assert_eq!(read::<Budget>("").unwrap(), Budget::default());
        assert_eq!(read::<Budget>("budget = \"none\"").unwrap(), Budget::Fixed);
        assert_eq!(
            read::<Budget>("budget = \"2 min\"").unwrap(),
            Budget::Gpu {
                gpu_time: Duration::from_secs(120),
                min_samples: DEFAULT_MIN_SAMPLES
            }
        );
        assert_eq!(
            read::<Budget>("budget = { min_samples = 3 }").unwrap(),
            Budget::Gpu {
                gpu_time: DEFAULT_GPU_TIME,
                min_samples: 3
            }
        );
        for bad in [
            "budget = \"soon\"",
            "budget = \"0s\"",
            "budget = 30",
            "budget = { gpu = \"1s\" }",
        ] {
            let e = read::<Budget>(bad).unwrap_err().to_string();
            assert!(e.contains("t.toml:1:"), "{bad}: {e}");
        }
    }

    #[test]
    fn only_a_chosen_budget_describes_itself() {
        assert_eq!(Budget::default().describe(), None);
        assert!(Budget::Fixed.describe().unwrap().contains("every sample"));
    }
}
