//! `timeout`: the longest a worker may take for one cell before it is killed and the cell
//! recorded failed.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeout(#[serde(with = "super::seconds")] pub Duration);

/// The default: generous, since a cell may hold minutes of samples.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

impl Default for Timeout {
    fn default() -> Self {
        Timeout(DEFAULT_TIMEOUT)
    }
}

impl Knob for Timeout {
    const KEYS: &'static [Key] = &[Key::set(
        "timeout",
        r#""10 min""#,
        "a worker that takes longer for one cell is killed, the cell failed",
    )];
    const ASPECT: Aspect = Aspect::Process;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        match layer.duration("timeout")? {
            None => Ok(Timeout::default()),
            Some(d) if d.is_zero() => {
                Err(layer.err_at("timeout", "a cell's timeout must be positive"))
            }
            Some(d) => Ok(Timeout(d)),
        }
    }

    fn describe(&self) -> Option<String> {
        Some(format!(
            "cell timeout {}",
            humantime::format_duration(self.0)
        ))
    }
}
