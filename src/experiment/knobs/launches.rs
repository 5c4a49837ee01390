//! `batch`, `graph`: what one timed region holds.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Launches {
    /// One launch.
    #[default]
    Single,
    /// Launches back to back in one timed region; the reading is per launch.
    Batch(u64),
    /// Launches captured in a CUDA graph whose replay is timed; the reading is per launch.
    /// With an L2 flush (`cache`), the graph holds a flush before each launch (read as
    /// `flushed_graph` says).
    Graph(u64),
}

/// The most launches one timed region holds, back to back or in a graph.
pub const MAX_LAUNCHES_PER_REGION: i64 = 100_000;

impl Launches {
    /// Launches per timed region: a reading is divided by this.
    pub fn count(self) -> u64 {
        match self {
            Launches::Single => 1,
            Launches::Batch(n) | Launches::Graph(n) => n,
        }
    }

    /// The same kind of region holding `n` launches (the audit's shorter regions).
    pub fn with_count(self, n: u64) -> Launches {
        match self {
            Launches::Single => Launches::Single,
            Launches::Batch(_) => Launches::Batch(n),
            Launches::Graph(_) => Launches::Graph(n),
        }
    }

    /// The timed region in `runner plan`'s cell table.
    pub fn plan_text(self) -> String {
        match self {
            Launches::Single => "1 launch".into(),
            Launches::Batch(n) => format!("batch of {n}"),
            Launches::Graph(n) => format!("graph of {n}"),
        }
    }
}

impl Knob for Launches {
    const KEYS: &'static [Key] = &[
        Key::set(
            "batch",
            "1",
            "launches back to back in one timed region, read per launch",
        ),
        Key::commented(
            "graph",
            "10",
            r#"or: launches captured in a CUDA graph, the replay timed, read per launch; with
            cache = "flush": a flush before each launch in the graph, read as flushed_graph
            says"#,
        ),
    ];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let per_region = 1..=MAX_LAUNCHES_PER_REGION;
        match (
            layer.int("batch", per_region.clone())?,
            layer.int("graph", per_region)?,
        ) {
            (Some(_), Some(_)) => Err(layer
                .err_at("graph", "batch and graph exclude each other")
                .with_hint("graph = N already times N launches per replay")),
            (Some(1), None) | (None, None) => Ok(Launches::Single),
            (Some(n), None) => Ok(Launches::Batch(n as u64)),
            (None, Some(n)) => Ok(Launches::Graph(n as u64)),
        }
    }

    fn describe(&self) -> Option<String> {
        match self {
            Launches::Single => None,
            Launches::Batch(n) => Some(format!(
                "{n} launches back to back per timed region (hot by nature)"
            )),
            Launches::Graph(n) => Some(format!(
                "a CUDA graph of {n} launches per timed region"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn batch_and_graph_are_told_apart_and_exclude_each_other() {
        assert_eq!(read::<Launches>("").unwrap(), Launches::Single);
        assert_eq!(read::<Launches>("batch = 10").unwrap(), Launches::Batch(10));
        assert_eq!(read::<Launches>("graph = 10").unwrap(), Launches::Graph(10));
        assert_ne!(
            read::<Launches>("batch = 10").unwrap().describe(),
            read::<Launches>("graph = 10").unwrap().describe()
        );
        assert!(read::<Launches>("batch = 2\ngraph = 2").is_err());
        assert!(read::<Launches>("graph = 0").is_err());
    }
}
