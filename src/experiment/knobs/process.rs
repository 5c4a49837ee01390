//! `fresh_process`, `processes`: whether each run of a cell starts a new process (its first
//! launch is then the process's), and how many.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Process {
    /// Fresh processes per cell; `None`: the cell runs in a shared process.
    pub fresh: Option<u32>,
}

impl Process {
    /// Runs of the cell that its process setting makes (one in a shared process).
    pub fn count(&self) -> u32 {
        self.fresh.unwrap_or(1)
    }

    /// The process in `runner plan`'s cell table.
    pub fn plan_text(&self) -> &'static str {
        match self.fresh {
            Some(_) => "fresh",
            None => "shared",
        }
    }
}

/// The most fresh processes a cell (or a peer, at a point) takes.
pub const MAX_PROCESSES: i64 = 10_000;

impl Knob for Process {
    const KEYS: &'static [Key] = &[
        Key::set(
            "fresh_process",
            "false",
            "run each cell in a new process: its first launch is the process's",
        ),
        Key::set(
            "processes",
            "1",
            "fresh processes per cell (only with fresh_process)",
        ),
    ];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let fresh = layer.get("fresh_process")?.unwrap_or(false);
        if !fresh && layer.variant_sets("processes") {
            return Err(layer
                .err_at("processes", "processes needs fresh_process = true")
                .with_hint("each fresh process contributes one first launch"));
        }
        if !fresh {
            // A default `processes` applies to the variants that run in fresh processes.
            return Ok(Process { fresh: None });
        }
        // Within MAX_PROCESSES, which fits.
        let n = layer.int("processes", 1..=MAX_PROCESSES)?.unwrap_or(1) as u32;
        Ok(Process { fresh: Some(n) })
    }

    fn describe(&self) -> Option<String> {
        Some(match self.fresh {
            None => "one shared process".into(),
            Some(n) => format!("{n} fresh processes"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn processes_need_fresh_ones() {
        assert_eq!(read::<Process>("").unwrap().fresh, None);
        let p: Process = read("fresh_process = true\nprocesses = 5").unwrap();
        assert_eq!(p.count(), 5);
        assert!(read::<Process>("processes = 5").is_err());
    }
}
