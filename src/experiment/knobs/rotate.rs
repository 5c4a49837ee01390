//! `rotate`: sets of the kernel's buffers that the timed samples use in turn (a cold cache
//! without a flush, once the sets together outgrow L2); with `graph = N`, the graph's N
//! launches take them in turn, so that every launch of a replay is cold and none waits on
//! the host.

use super::launches::Launches;
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rotate(pub u64);

impl Default for Rotate {
    fn default() -> Self {
        Rotate(1)
    }
}

impl Rotate {
    /// The sets a cell allocates: a graph of N launches uses at most N of them.
    pub fn sets(self, launches: Launches) -> u64 {
        match launches {
            Launches::Graph(n) => self.0.min(n),
            _ => self.0,
        }
    }
}

/// The most buffer sets a cell rotates through.
pub const MAX_ROTATE: i64 = 10_000;

impl Knob for Rotate {
    const KEYS: &'static [Key] = &[Key::set(
        "rotate",
        "1",
        r#"sets of the kernel's buffers the timed samples use in turn (expression; enough sets
        make each launch cold, no flush); with graph = N the graph's launches take them in
        turn: with queue = "saturate" a cold reading without CUPTI for kernels that leave L2
        dirty (reports/cold-graph)"#,
    )];
    const ASPECT: Aspect = Aspect::Cache;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let Some(n) = layer.int("rotate", 1..=MAX_ROTATE)? else {
            return Ok(Rotate(1));
        };
        Ok(Rotate(n as u64))
    }

    fn describe(&self) -> Option<String> {
        (self.0 > 1).then(|| {
            format!(
                "{} buffer sets taken in turn (in a graph, at most one per launch)",
                self.0
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn rotation_counts_sets_also_in_graphs() {
        assert_eq!(read::<Rotate>("").unwrap(), Rotate(1));
        assert_eq!(read::<Rotate>("rotate = \"n // 8\"").unwrap(), Rotate(64));
        assert_eq!(read::<Rotate>("rotate = 4\ngraph = 10").unwrap(), Rotate(4));
    }

    #[test]
    fn a_graph_allocates_no_more_sets_than_it_has_launches() {
        assert_eq!(Rotate(201).sets(Launches::Graph(100)), 100);
        assert_eq!(Rotate(3).sets(Launches::Graph(10)), 3);
        assert_eq!(Rotate(201).sets(Launches::Batch(10)), 201);
    }
}
