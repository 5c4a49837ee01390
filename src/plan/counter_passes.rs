//! The counter passes (`counters`): before a job's timed run, each of its cells that reads
//! hardware counters runs once more in a worker under Nsight Compute, with the cell's cache
//! state (`--cache-control all` for a cold cell, `none` for a hot one) and a few samples.
//! No timed sample runs under the profiler.

use super::cell::{Cell, Role};
use super::{Plan, Run};
use crate::experiment::knobs::budget::Budget;
use crate::experiment::knobs::counters::{COUNTED_SAMPLES, COUNTED_WARMUP};
use crate::experiment::knobs::cupti_collect::CuptiCollect;
use crate::experiment::knobs::env::ProfilerCache;
use crate::experiment::knobs::flushed_graph::FlushedGraph;
use crate::experiment::knobs::queue::Queue;
use crate::experiment::knobs::samples::Samples;
use crate::experiment::knobs::timer::TimerKind;
use std::collections::HashSet;

/// One worker's counter pass: the runs it counts, under one cache control, reading every
/// counter any of them asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterPass {
    pub cache: ProfilerCache,
    pub counters: Vec<String>,
    pub runs: Vec<Run>,
}

/// The counter passes of a job's `runs`: the first run of each measured cell that reads
/// counters and is not among those already `counted`, grouped by the cache control its
/// cache state asks for.
pub fn passes(plan: &Plan, runs: &[Run], counted: &HashSet<usize>) -> Vec<CounterPass> {
    let mut passes: Vec<CounterPass> = Vec::new();
    let mut seen: HashSet<usize> = HashSet::new();
    for run in runs {
        let cell = &plan.cells[run.cell];
        let wanted = cell.knobs.counters.wanted() && cell.role == Role::Measure;
        if !wanted || counted.contains(&run.cell) || !seen.insert(run.cell) {
            continue;
        }
        let cache = ProfilerCache::of(&cell.knobs.cache);
        let at = match passes.iter().position(|p| p.cache == cache) {
            Some(at) => at,
            None => {
                passes.push(CounterPass {
                    cache,
                    counters: Vec::new(),
                    runs: Vec::new(),
                });
                passes.len() - 1
            }
        };
        let pass = &mut passes[at];
        pass.runs.push(Run {
            cell: run.cell,
            process: run.process,
        });
        for c in &cell.knobs.counters.0 {
            if !pass.counters.contains(c) {
                pass.counters.push(c.clone());
            }
        }
    }
    passes
}

/// The cell as its counter pass runs it: the profiler times it (the worker keeps no time of
/// its own, and CUPTI, which Nsight Compute holds, stays off), with no wait kernel or flush
/// inside its graphs (Nsight Compute flushes a cold cell's caches itself), a few samples
/// after at most a short warm-up, and no budget.
pub fn counting(cell: &mut Cell) {
    let k = &mut cell.knobs;
    k.timer = TimerKind::Profiler;
    k.cupti_collect = CuptiCollect::default();
    k.queue = Queue::Idle;
    k.flushed_graph = FlushedGraph::None;
    k.samples = Samples {
        count: k.samples.count.min(COUNTED_SAMPLES),
        stop: None,
    };
    k.budget = Budget::Fixed;
    k.warmup.launches = k.warmup.launches.min(COUNTED_WARMUP);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::knobs::counters::MEMORY;
    use crate::testkit::{self, EMPTY_KERNEL};

    /// A CUPTI-timed cell of `copy`, hot and cold, reading counters where `counters` says.
    fn plan(dir: &std::path::Path) -> Plan {
        let text = r#"
[experiment]
title = "t"
[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
grid = [1]
block = [1]
[defaults]
timer = "cupti"
warmup = 10
samples = 100
[[variant]]
name = "hot"
counters = "memory"
[[variant]]
name = "cold"
cache = "flush"
counters = ["dram__bytes_read.sum"]
[[variant]]
name = "plain"
[report]
floor = false
"#;
        Plan::new(&testkit::experiment_in(
            dir,
            &[("k.cu", EMPTY_KERNEL)],
            text,
        ))
        .unwrap()
    }

    #[test]
    fn each_counting_cell_is_counted_once_under_its_cache_control() {
        let tmp = tempfile::tempdir().unwrap();
        let plan = plan(tmp.path());
        let runs: Vec<Run> = (plan.cells.iter())
            .map(|c| Run {
                cell: c.index,
                process: 0,
            })
            .collect();
        let found = passes(&plan, &runs, &HashSet::new());
        assert_eq!(found.len(), 2, "{found:?}");
        let hot = found
            .iter()
            .find(|p| p.cache == ProfilerCache::None)
            .unwrap();
        assert_eq!(hot.counters.len(), MEMORY.len());
        let cold = found
            .iter()
            .find(|p| p.cache == ProfilerCache::All)
            .unwrap();
        assert_eq!(cold.counters, ["dram__bytes_read.sum"]);
        // Once counted, a cell is not counted again.
        let done: HashSet<usize> = (found.iter())
            .flat_map(|p| p.runs.iter().map(|r| r.cell))
            .collect();
        assert!(passes(&plan, &runs, &done).is_empty());
    }

    #[test]
    fn a_counted_cell_runs_under_the_profiler_with_few_launches_and_no_cupti() {
        let tmp = tempfile::tempdir().unwrap();
        let mut cell = plan(tmp.path()).cells[0].clone();
        assert!(cell.knobs.cupti_collect.on);
        counting(&mut cell);
        let k = &cell.knobs;
        assert_eq!(k.timer, TimerKind::Profiler);
        assert!(!k.cupti_collect.on);
        assert_eq!(
            (k.samples.count, k.warmup.launches),
            (COUNTED_SAMPLES, COUNTED_WARMUP)
        );
        assert_eq!(k.budget, Budget::Fixed);
    }
}
