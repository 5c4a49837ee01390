//! `flushed_graph`: how a graph of flushed launches (`graph = N` with `cache = "flush"`) is
//! read. `"less_flushes"`: the replay of N flush and launch pairs less a replay of the N
//! flushes alone, per launch; a flush after a launch costs less than one after a flush (it
//! meets the launch's lines, not the flush's dirty ones), so a kernel that leaves much of
//! L2 clean reads low by up to ~1.4 µs (`benches/cold-graph-events`). `"event_nodes"`:
//! event nodes around each launch inside the pairs graph, their elapsed time less what the
//! same nodes add to a hot launch (a graph of N launches with nodes around each against the
//! same launches between one pair of nodes), so nothing but the launches' own L2 state
//! differs and no submission is timed. Each of its replays waits behind the wait kernel
//! (`queue = "saturate"`): once CUPTI has collected in a process, the host spends about
//! 0.4 µs more on each launch of a graph, which on an idle queue opens gaps between the hot
//! launches and reads them long (`benches/cold-graph-events/node_context.c`).

use super::cache::Cache;
use super::launches::Launches;
use super::queue::Queue;
use super::timer::TimerKind;
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushedGraph {
    /// Not a graph of flushed launches.
    #[default]
    None,
    LessFlushes,
    EventNodes,
}

impl FlushedGraph {
    /// Whether a reading is the difference of two timings (one less another), which noise
    /// can take below zero on a kernel shorter than that noise.
    pub fn reads_a_difference(self) -> bool {
        self != FlushedGraph::None
    }

    /// What `runner plan`'s cell table adds to the timed region: only event nodes, the
    /// subtraction being a flushed graph's default.
    pub fn plan_text(self) -> Option<&'static str> {
        (self == FlushedGraph::EventNodes).then_some("(event nodes)")
    }
}

impl Knob for FlushedGraph {
    const KEYS: &'static [Key] = &[Key::commented(
        "flushed_graph",
        r#""event_nodes""#,
        r#"how a graph of flushed launches (graph = N, cache = "flush") is read: "less_flushes"
        (the default): less a graph of the flushes alone; "event_nodes": event nodes around
        each launch in the graph, less what they add to a hot launch (events and queue =
        "saturate" only: each replay waits behind the wait kernel): the cold reading without
        CUPTI, within max(1%, 0.5 µs) of it at every size (reports/cold-graph), where the
        subtraction reads up to 1.4 µs short"#,
    )];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let read: Option<FlushedGraph> = layer.get("flushed_graph")?;
        let graph = matches!(Launches::read(layer)?, Launches::Graph(_));
        let flushed = matches!(Cache::read(layer)?, Cache::Flush { .. });
        let how = match (read, graph && flushed) {
            (None, false) => return Ok(FlushedGraph::None),
            (None, true) => return Ok(FlushedGraph::LessFlushes),
            (Some(FlushedGraph::None), _) | (Some(_), false) => {
                return Err(layer
                    .err_at("flushed_graph", "flushed_graph reads a graph of flushed launches")
                    .with_hint("it needs graph = N and cache = \"flush\", and takes \"less_flushes\" or \"event_nodes\""))
            }
            (Some(how), true) => how,
        };
        let timer: TimerKind = layer.get("timer")?.unwrap_or_default();
        if how == FlushedGraph::EventNodes && timer != TimerKind::Events {
            return Err(layer
                .err_at(
                    "flushed_graph",
                    format!(
                        "flushed_graph = \"event_nodes\" needs timer = \"events\", not \"{}\"",
                        timer.key()
                    ),
                )
                .with_hint("its nodes are CUDA events"));
        }
        if how == FlushedGraph::EventNodes && Queue::read(layer)? == Queue::Idle {
            return Err(layer
                .err_at(
                    "flushed_graph",
                    "flushed_graph = \"event_nodes\" replays each graph behind a wait kernel, so that the host's submission cannot open gaps between the hot launches",
                )
                .with_hint("set queue = \"saturate\""));
        }
        Ok(how)
    }

    fn describe(&self) -> Option<String> {
        match self {
            FlushedGraph::None => None,
            FlushedGraph::LessFlushes => {
                Some("less a graph of its flushes alone".into())
            }
            FlushedGraph::EventNodes => Some(
                "read by event nodes around each launch, less what they add to a hot launch"
                    .into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn event_nodes_read_only_a_flushed_graph_timed_by_events() {
        let base = "cache = \"flush\"\ngraph = 10\nqueue = \"saturate\"\n";
        assert_eq!(read::<FlushedGraph>("graph = 10").unwrap(), FlushedGraph::None);
        assert_eq!(read::<FlushedGraph>(base).unwrap(), FlushedGraph::LessFlushes);
        assert!(read::<FlushedGraph>(&format!("{base}flushed_graph = \"none\"")).is_err());
        let nodes = format!("{base}flushed_graph = \"event_nodes\"");
        assert_eq!(read::<FlushedGraph>(&nodes).unwrap(), FlushedGraph::EventNodes);
        assert!(read::<FlushedGraph>("graph = 10\nflushed_graph = \"event_nodes\"").is_err());
        assert!(read::<FlushedGraph>("cache = \"flush\"\nflushed_graph = \"event_nodes\"").is_err());
        assert!(read::<FlushedGraph>(&format!("{nodes}\ntimer = \"cupti\"")).is_err());
        let idle = nodes.replace("queue = \"saturate\"", "queue = \"idle\"");
        assert!(read::<FlushedGraph>(&idle).is_err());
        assert!(read::<FlushedGraph>(&format!("{base}flushed_graph = \"nodes\"")).is_err());
    }
}
