//! The counter passes (`counters`): before a job's timed run, each of its cells that reads
//! hardware counters runs once more in a worker under Nsight Compute, with the cell's cache
//! state (`--cache-control all` for a cold cell, `none` for a hot one) and a few samples.
//! No timed sample runs under the profiler.

use super::{Cell, Plan, Role, Run};
use crate::experiment::knobs::budget::Budget;
use crate::experiment::knobs::counters::{COUNTED_SAMPLES, COUNTED_WARMUP};
use crate::experiment::knobs::env::ProfilerCache;
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
/// its own), a few samples after at most a short warm-up, and no budget.
pub fn counting(cell: &mut Cell) {
    let k = &mut cell.knobs;
    k.timer = TimerKind::Profiler;
    k.samples = Samples {
        count: k.samples.count.min(COUNTED_SAMPLES),
        stop: None,
    };
    k.budget = Budget::Fixed;
    k.warmup.launches = k.warmup.launches.min(COUNTED_WARMUP);
}
