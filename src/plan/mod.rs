//! Experiment -> Plan: every cell (kernel x sweep point x variant, plus the floor cells that
//! read an empty kernel with each timer) with its knobs and launch fixed, and the worker
//! processes that will run them.

pub mod audit_rounds;
mod buffers;
mod by_point;
mod cell;
pub mod cost;
pub mod counter_passes;
mod describe;
mod kernels;
mod measure;
mod model;
pub mod probe;
mod select;
pub mod shard;

use crate::experiment::knobs::{
    cupti_collect::CuptiCollect, env::ProcessEnv, order::OrderKind, samples::Samples,
    timer::TimerKind, warmup::Warmup,
};
use crate::experiment::{ConfigError, Experiment, Knobs, LaunchSpec, Point};
pub use cell::{draw_key, point_id, Cell, Headline, Role};
pub use describe::describe;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// What `runner plan` was asked to show beyond the plan itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shown {
    /// Each buffer's type, length and init at every point (`--verbose`).
    pub verbose: bool,
    /// The kernels are compiled after the plan (`--compile`), which shows what only the
    /// compiled code knows (static shared memory, registers).
    pub compiled: bool,
}

/// Warm-up launches before a floor cell's samples.
pub const FLOOR_WARMUP: u64 = 100;

#[derive(Debug, Clone)]
pub struct Plan {
    pub cells: Vec<Cell>,
}

/// One run of a cell in a worker process (fresh-process cells run once per process,
/// interleaved ones once per round).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Run {
    pub cell: usize,
    pub process: u32,
}

/// One worker process, the environment it starts with, and the runs it performs, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerJob {
    pub env: ProcessEnv,
    pub runs: Vec<Run>,
}

/// The most runs of cells a plan holds (a fresh process or a round each): about five days
/// of process starts alone.
pub const MAX_RUNS: u64 = 1_000_000;

impl Plan {
    /// Kernel `k`'s cell at point `p` under `variant`.
    pub fn cell_at(&self, k: usize, p: &Point, variant: &str) -> Option<&Cell> {
        (self.cells.iter()).find(|c| c.kernel == Some(k) && c.variant == variant && c.point == *p)
    }

    pub fn new(exp: &Experiment) -> Result<Plan, ConfigError> {
        let mut cells = Vec::new();
        // A kernel that is not timed runs only in the checks of others.
        for (k, kernel) in exp.timed_kernels() {
            for p in 0..kernel.points.len() {
                // A kernel may run under some variants only, or skip some points.
                for v in exp.variants.iter().filter(|v| kernel.runs_at(p, &v.name)) {
                    cells.push(measure::measure_cell(exp, cells.len(), k, kernel, p, v)?);
                }
            }
        }
        let runs: u64 = cells.iter().map(|c| u64::from(c.runs())).sum();
        if runs > MAX_RUNS {
            return Err(exp
                .error(format!("the plan has {runs} runs of its cells (processes and rounds), more than the {MAX_RUNS} a run may hold"))
                .with_hint("ask for fewer processes or rounds, or split the experiment"));
        }
        if exp.report.floor {
            for timer in TimerKind::ALL {
                let used = exp
                    .variants
                    .iter()
                    .any(|v| v.knobs.iter().any(|k| k.timer == timer));
                if used {
                    cells.push(floor_cell(cells.len(), timer, exp.report.floor_samples));
                }
            }
        }
        Ok(Plan { cells })
    }

    /// Worker processes in the order they run: one shared process per environment for the
    /// cells that do not ask for a fresh one (environments in order of first use; in each,
    /// the cells of one draw key together), then one process per fresh-process run,
    /// round-robin over cells.
    pub fn jobs(&self) -> Vec<WorkerJob> {
        let mut jobs: Vec<WorkerJob> = Vec::new();
        // Cells that time the same data one after another, so that it is drawn and uploaded
        // once and then copied on the device (draw keys in the order they first appear).
        let mut groups = self.turn_groups();
        let mut first_seen: HashMap<String, usize> = HashMap::new();
        for group in &groups {
            let next = first_seen.len();
            first_seen.entry(group[0].draw_key()).or_insert(next);
        }
        groups.sort_by_cached_key(|g| first_seen[&g[0].draw_key()]);
        for group in groups {
            let env = group[0].knobs.process_env();
            let runs = turns(&group);
            match jobs.iter_mut().find(|j| j.env == env) {
                Some(job) => job.runs.extend(runs),
                None => jobs.push(WorkerJob { env, runs }),
            }
        }
        let fresh: Vec<&Cell> = (self.cells.iter())
            .filter(|c| c.knobs.process.fresh.is_some())
            .collect();
        let rounds = fresh
            .iter()
            .map(|c| c.knobs.process.count())
            .max()
            .unwrap_or(0);
        // Round-robin over cells, so slow drift of the GPU spreads evenly over them.
        for p in 0..rounds {
            for c in fresh.iter().filter(|c| p < c.knobs.process.count()) {
                jobs.push(WorkerJob {
                    env: c.knobs.process_env(),
                    runs: vec![Run {
                        cell: c.index,
                        process: p,
                    }],
                });
            }
        }
        jobs
    }

    /// The shared process's cells in the groups that take turns in one worker, in the
    /// plan's order: a cell that takes turns brings along the others of its point and
    /// environment that take as many turns; any other cell is a group of its own.
    fn turn_groups(&self) -> Vec<Vec<&Cell>> {
        let shared = |c: &&Cell| c.knobs.process.fresh.is_none();
        let mut taken = vec![false; self.cells.len()];
        let mut groups = Vec::new();
        for c in self.cells.iter().filter(shared) {
            if taken[c.index] {
                continue;
            }
            let env = c.knobs.process_env();
            let group: Vec<&Cell> = match c.knobs.order.rounds > 1 {
                true => (self.cells.iter().filter(shared))
                    .filter(|o| {
                        o.knobs.order.rounds == c.knobs.order.rounds
                            && o.kernel == c.kernel
                            && o.point == c.point
                            && o.knobs.process_env() == env
                    })
                    .collect(),
                false => vec![c],
            };
            for g in &group {
                taken[g.index] = true;
            }
            groups.push(group);
        }
        groups
    }

    /// What a part of a run over several GPUs claims each cell by (`--claims`), by cell
    /// index: the id of its turn group's first cell, so that cells that take turns stay in
    /// one worker; a fresh process's cell, its own id (all its processes on one GPU).
    pub fn claim_keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.cells.iter().map(|c| c.id.as_str()).collect();
        for group in self.turn_groups() {
            for c in &group {
                keys[c.index] = &group[0].id;
            }
        }
        keys
    }

    /// One run of every cell that starts in `env`: what a priming process loads so that
    /// the JIT cache holds every kernel those cells use.
    pub fn priming_runs(&self, env: &ProcessEnv) -> Vec<Run> {
        self.cells
            .iter()
            .filter(|c| c.knobs.process_env() == *env)
            .map(|c| Run {
                cell: c.index,
                process: 0,
            })
            .collect()
    }

    /// Cell index by cell id, as stored files name cells.
    pub fn index_by_id(&self) -> std::collections::HashMap<&str, usize> {
        self.cells
            .iter()
            .map(|c| (c.id.as_str(), c.index))
            .collect()
    }

    /// Timed launches in the whole plan (first launches and steady samples, each
    /// `batch` or `graph` launches).
    pub fn timed_launches(&self) -> u64 {
        self.cells
            .iter()
            .map(|c| (1 + c.knobs.samples_per_run()) * c.knobs.launches.count() * c.runs() as u64)
            .sum()
    }

    pub fn untimed_launches(&self) -> u64 {
        self.cells
            .iter()
            .map(|c| c.knobs.warmup.launches * c.runs() as u64)
            .sum()
    }
}

/// The built-in empty kernel under one timer.
fn floor_cell(index: usize, timer: TimerKind, samples: u64) -> Cell {
    Cell {
        index,
        id: format!("floor/{}", timer.key()),
        role: Role::Floor,
        kernel: None,
        kernel_name: "empty".into(),
        point: vec![],
        variant: timer.key().into(),
        knobs: Knobs {
            timer,
            warmup: Warmup {
                launches: FLOOR_WARMUP,
                ..Default::default()
            },
            samples: Samples {
                count: samples,
                stop: None,
            },
            cupti_collect: CuptiCollect {
                on: timer == TimerKind::Cupti,
                beside_timer: false,
            },
            ..Default::default()
        },
        launch: LaunchSpec {
            bytes: None,
            reads_writes: None,
            flops: None,
            options: vec![],
            entry: String::new(),
            step_entries: Vec::new(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            shared_bytes: 0,
            args: vec![],
            check_dims: vec![],
            tolerances: Default::default(),
            steps: vec![],
        },
        reference_launch: None,
    }
}

/// The runs of cells that take turns: round by round, each cell once per round (in plan
/// order when interleaved, in a seeded order per round when shuffled); a cell that does not
/// take turns runs once.
fn turns(group: &[&Cell]) -> Vec<Run> {
    let rounds = group
        .iter()
        .map(|c| c.knobs.order.rounds)
        .max()
        .unwrap_or(1);
    let mut runs = Vec::new();
    for r in 0..rounds {
        let mut order: Vec<&&Cell> = group.iter().filter(|c| r < c.knobs.order.rounds).collect();
        if order
            .iter()
            .any(|c| c.knobs.order.kind == OrderKind::Shuffled)
        {
            use rand::{seq::SliceRandom, SeedableRng};
            let mut rng = rand::rngs::SmallRng::seed_from_u64(0x5eed ^ u64::from(r));
            order.shuffle(&mut rng);
        }
        runs.extend(order.into_iter().map(|c| Run {
            cell: c.index,
            process: r,
        }));
    }
    runs
}

#[cfg(test)]
mod cost_tests;
#[cfg(test)]
mod tests;
