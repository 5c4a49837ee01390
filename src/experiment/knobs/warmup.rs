//! `warmup`, `warmup_kernel`: launches before the first timed one, and of which kernel.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Warmup {
    pub launches: u64,
    pub kernel: WarmupKernel,
}

/// What the warm-up launches run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupKernel {
    /// The measured kernel itself.
    #[default]
    Same,
    /// The built-in empty kernel (`kernels/empty.cu`).
    Empty,
}

impl Warmup {
    /// The warm-up in `runner plan`'s cell table: its launches, `e` marking an empty
    /// kernel's.
    pub fn plan_text(&self) -> String {
        match self.kernel {
            WarmupKernel::Same => self.launches.to_string(),
            WarmupKernel::Empty => format!("{}e", self.launches),
        }
    }
}

/// The most warm-up launches a cell takes.
pub const MAX_WARMUP: i64 = 10_000_000;

impl Knob for Warmup {
    const KEYS: &'static [Key] = &[
        Key::set(
            "warmup",
            "0",
            "warm-up launches (may be an expression of the sweep)",
        ),
        Key::set(
            "warmup_kernel",
            r#""same""#,
            r#""same" | "empty" (kernels/empty.cu)"#,
        ),
    ];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        Ok(Warmup {
            launches: layer.int("warmup", 0..=MAX_WARMUP)?.unwrap_or(0) as u64,
            kernel: layer.get("warmup_kernel")?.unwrap_or_default(),
        })
    }

    fn describe(&self) -> Option<String> {
        Some(match (self.launches, self.kernel) {
            (0, _) => "no warm-up".into(),
            (n, WarmupKernel::Same) => format!("warm-up {n} launches"),
            (n, WarmupKernel::Empty) => format!("warm-up {n} launches of an empty kernel"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn warm_up_may_follow_the_sweep_and_not_go_negative() {
        let w: Warmup = read("warmup = \"n // 2\"\nwarmup_kernel = \"empty\"").unwrap();
        assert_eq!((w.launches, w.kernel), (256, WarmupKernel::Empty));
        assert!(read::<Warmup>("warmup = \"n - 1000\"").is_err());
    }
}
