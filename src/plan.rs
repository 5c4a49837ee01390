//! Experiment -> Plan: every cell (kernel x sweep point x variant, plus the floor cells that
//! read an empty kernel with each timer) with its knobs evaluated, and the worker processes
//! that will run them.

use crate::experiment::{
    self, expr, Cache, Compile, DeviceFacts, Experiment, Point, ProcessEnv, TimerKind,
    WarmupKernel, DEFAULT_TIMEOUT,
};
use crate::protocol::Run;
use serde::Serialize;

/// Warm-up launches before a floor cell's samples.
pub const FLOOR_WARMUP: u64 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A kernel of the experiment at a sweep point under a variant.
    Measure,
    /// The built-in empty kernel under one timer: what the method itself reads.
    Floor,
}

/// A methodology with its numbers fixed for one sweep point.
#[derive(Debug, Clone, Serialize)]
pub struct Knobs {
    pub timer: TimerKind,
    pub warmup: u64,
    pub warmup_kernel: WarmupKernel,
    pub samples: u64,
    pub fresh_process: bool,
    pub processes: u32,
    pub cache: Cache,
    pub env: ProcessEnv,
    pub compile: Compile,
    #[serde(skip)]
    pub timeout: std::time::Duration,
    /// Launches per timed region; a sample is the region's time divided by this.
    pub launches: u64,
    pub graph: bool,
    /// The wait kernel's length in µs for `queue = "saturate"` (`Some(None)`: sized at run time).
    pub saturate: Option<Option<u64>>,
    pub cupti_collect: bool,
    pub order: experiment::Order,
    /// Turns the cell takes in its process; `samples` are per turn.
    pub rounds: u32,
    /// Adaptive stopping; `samples` is then the most a run takes.
    pub stop: Option<experiment::StopRule>,
    /// Buffer sets used in turn; an expression of device facts, evaluated by the worker.
    pub rotate: experiment::NumExpr,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub index: usize,
    /// `matmul/n=512/events`, or `floor/events`.
    pub id: String,
    pub role: Role,
    /// Index into the experiment's kernels; `None` for the built-in empty kernel.
    pub kernel: Option<usize>,
    pub kernel_name: String,
    pub point: Point,
    pub variant: String,
    pub knobs: Knobs,
}

impl Cell {
    /// Runs of the cell: one per fresh process, or one per round.
    pub fn runs(&self) -> u32 {
        self.knobs.processes * self.knobs.rounds
    }

    /// The statistic a table shows: the steady samples, or the first launch when a cell
    /// takes no others (the post's one-launch-per-process programs).
    pub fn headline_phase(&self) -> &'static str {
        if self.knobs.samples > 0 {
            "steady"
        } else {
            "first"
        }
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub cells: Vec<Cell>,
}

/// One worker process, the environment it starts with, and the runs it performs, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerJob {
    pub env: ProcessEnv,
    pub runs: Vec<Run>,
}

impl Plan {
    pub fn new(exp: &Experiment) -> Result<Plan, String> {
        let mut cells = Vec::new();
        for (k, kernel) in exp.kernels.iter().enumerate() {
            for point in exp.points() {
                for v in &exp.variants {
                    let scope = experiment::knob_scope(&point);
                    let int = |e| expr::eval_int(e, &scope);
                    let m = &v.method;
                    let rounds = int(&m.rounds)? as u64;
                    let knobs = Knobs {
                        timer: m.timer,
                        warmup: int(&m.warmup)? as u64,
                        warmup_kernel: m.warmup_kernel,
                        // The samples asked for, split over the rounds (rounded up).
                        samples: (int(&m.samples)? as u64).div_ceil(rounds),
                        order: m.order,
                        rounds: rounds as u32,
                        stop: m.stop,
                        rotate: m.rotate.clone(),
                        fresh_process: m.fresh_process,
                        processes: int(&m.processes)? as u32,
                        cache: m.cache.clone(),
                        env: m.env.clone(),
                        compile: m.compile,
                        timeout: m.timeout,
                        launches: int(&m.launches)? as u64,
                        graph: m.graph,
                        cupti_collect: m.cupti_collect,
                        saturate: match &m.queue {
                            experiment::Queue::Idle => None,
                            experiment::Queue::Saturate { wait_us } => Some(match wait_us {
                                Some(w) => Some(int(w)? as u64),
                                None => None,
                            }),
                        },
                    };
                    let label = point
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" ");
                    cells.push(Cell {
                        index: cells.len(),
                        id: format!("{}/{label}/{}", kernel.name, v.name),
                        role: Role::Measure,
                        kernel: Some(k),
                        kernel_name: kernel.name.clone(),
                        point: point.clone(),
                        variant: v.name.clone(),
                        knobs,
                    });
                }
            }
        }
        if exp.report.floor {
            for timer in TimerKind::ALL {
                if exp.variants.iter().any(|v| v.method.timer == timer) {
                    cells.push(Cell {
                        index: cells.len(),
                        id: format!("floor/{}", timer.key()),
                        role: Role::Floor,
                        kernel: None,
                        kernel_name: "empty".into(),
                        point: vec![],
                        variant: timer.key().into(),
                        knobs: Knobs {
                            timer,
                            warmup: FLOOR_WARMUP,
                            warmup_kernel: WarmupKernel::Same,
                            samples: exp.report.floor_samples,
                            fresh_process: false,
                            processes: 1,
                            cache: Cache::Hot,
                            // The profiler reads the empty kernel in a worker under ncu too.
                            env: ProcessEnv {
                                profiler: (timer == TimerKind::Profiler)
                                    .then_some(experiment::ProfilerCache::None),
                                ..ProcessEnv::default()
                            },
                            compile: Compile::DEFAULT,
                            timeout: DEFAULT_TIMEOUT,
                            launches: 1,
                            graph: false,
                            saturate: None,
                            cupti_collect: timer == TimerKind::Cupti,
                            order: experiment::Order::Sequential,
                            rounds: 1,
                            stop: None,
                            rotate: experiment::NumExpr::Int(1),
                        },
                    });
                }
            }
        }
        Ok(Plan { cells })
    }

    /// Worker processes in the order they run: one shared process per environment for the
    /// cells that do not ask for a fresh one (environments in order of first use), then one
    /// process per fresh-process run, round-robin over cells.
    pub fn jobs(&self) -> Vec<WorkerJob> {
        let mut jobs: Vec<WorkerJob> = Vec::new();
        let mut taken = vec![false; self.cells.len()];
        for c in self.cells.iter().filter(|c| !c.knobs.fresh_process) {
            if taken[c.index] {
                continue;
            }
            // A cell that takes turns brings along the others of its point and environment
            // that take as many turns.
            let group: Vec<&Cell> = if c.knobs.rounds > 1 {
                self.cells
                    .iter()
                    .filter(|o| {
                        o.knobs.rounds == c.knobs.rounds
                            && !o.knobs.fresh_process
                            && o.kernel == c.kernel
                            && o.point == c.point
                            && o.knobs.env == c.knobs.env
                    })
                    .collect()
            } else {
                vec![c]
            };
            let runs = turns(&group);
            for g in &group {
                taken[g.index] = true;
            }
            match jobs.iter_mut().find(|j| j.env == c.knobs.env) {
                Some(job) => job.runs.extend(runs),
                None => jobs.push(WorkerJob {
                    env: c.knobs.env.clone(),
                    runs,
                }),
            }
        }
        let fresh: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| c.knobs.fresh_process)
            .collect();
        let rounds = fresh.iter().map(|c| c.knobs.processes).max().unwrap_or(0);
        // Round-robin over cells, so slow drift of the GPU spreads evenly over them.
        for p in 0..rounds {
            for c in fresh.iter().filter(|c| p < c.knobs.processes) {
                jobs.push(WorkerJob {
                    env: c.knobs.env.clone(),
                    runs: vec![Run {
                        cell: c.index,
                        process: p,
                    }],
                });
            }
        }
        jobs
    }

    /// One run of every cell that starts in `env`: what a priming process loads so that
    /// the JIT cache holds every kernel those cells use.
    pub fn priming_runs(&self, env: &ProcessEnv) -> Vec<Run> {
        self.cells
            .iter()
            .filter(|c| c.knobs.env == *env)
            .map(|c| Run {
                cell: c.index,
                process: 0,
            })
            .collect()
    }

    /// Cell index by cell id, as stored files name cells.
    pub fn index_by_id(&self) -> std::collections::HashMap<&str, u32> {
        self.cells
            .iter()
            .map(|c| (c.id.as_str(), c.index as u32))
            .collect()
    }

    /// Timed launches in the whole plan (first launches and steady samples, each
    /// `batch` or `graph` launches).
    pub fn timed_launches(&self) -> u64 {
        self.cells
            .iter()
            .map(|c| (1 + c.knobs.samples) * c.knobs.launches * c.runs() as u64)
            .sum()
    }

    pub fn untimed_launches(&self) -> u64 {
        self.cells
            .iter()
            .map(|c| c.knobs.warmup * c.runs() as u64)
            .sum()
    }
}

/// The runs of cells that take turns: round by round, each cell once per round (in plan
/// order when interleaved, in a seeded order per round when shuffled); a cell that does not
/// take turns runs once.
fn turns(group: &[&Cell]) -> Vec<Run> {
    let rounds = group.iter().map(|c| c.knobs.rounds).max().unwrap_or(1);
    let mut runs = Vec::new();
    for r in 0..rounds {
        let mut order: Vec<&&Cell> = group.iter().filter(|c| r < c.knobs.rounds).collect();
        if order
            .iter()
            .any(|c| c.knobs.order == experiment::Order::Shuffled)
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

/// Seconds a fresh worker process spends before its first cell (CUDA context, NVRTC, module
/// load), measured on an H100; used only when no earlier run gives real timings.
const PROCESS_START_S: f64 = 0.4;
/// A lower bound per launch when a kernel's time is unknown (launch and sync overhead).
const LAUNCH_FLOOR_S: f64 = 10e-6;

/// The plan as `runner plan` prints it: the matrix, the counts and an estimate of the time,
/// from `previous` (cell id -> seconds per run, from an earlier run) where it has the cell.
pub fn describe(
    exp: &Experiment,
    plan: &Plan,
    previous: &std::collections::HashMap<String, f64>,
) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "{} ({})", exp.title, exp.path.display());
    for (name, values) in &exp.params {
        let _ = writeln!(
            out,
            "  sweep {name}: {} value(s) {}",
            values.len(),
            preview(values)
        );
    }
    let _ = writeln!(
        out,
        "  kernels: {}",
        exp.kernels
            .iter()
            .map(|k| format!("{} ({})", k.name, k.source))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        out,
        "\n{:<40} {:<10} {:>8} {:>8} {:>9}  {:<7} cache",
        "cell", "timer", "warm-up", "samples", "runs", "process"
    );
    let (mut known, mut guessed) = (0.0, 0.0);
    for c in &plan.cells {
        let k = &c.knobs;
        let process = if k.fresh_process { "fresh" } else { "shared" };
        let warm = match k.warmup_kernel {
            WarmupKernel::Same => k.warmup.to_string(),
            WarmupKernel::Empty => format!("{}e", k.warmup),
        };
        let _ = writeln!(
            out,
            "{:<40} {:<10} {:>8} {:>8} {:>9}  {process:<7} {}",
            c.id,
            k.timer.key(),
            warm,
            k.samples,
            c.runs(),
            k.cache.describe()
        );
        let runs = c.runs() as f64;
        match previous.get(&c.id) {
            Some(s) => {
                known += s * runs
                    + if k.fresh_process {
                        PROCESS_START_S * runs
                    } else {
                        0.0
                    }
            }
            None => {
                guessed += runs
                    * ((1 + k.warmup + k.samples) as f64 * LAUNCH_FLOOR_S
                        + if k.fresh_process {
                            PROCESS_START_S
                        } else {
                            0.0
                        })
            }
        }
    }
    let _ = writeln!(out, "\nprocesses and compilation per variant:");
    for v in &exp.variants {
        let m = &v.method;
        let _ = writeln!(
            out,
            "  {}: environment {}; {}; cell timeout {}",
            v.name,
            m.env.describe(),
            m.compile.describe(),
            humantime::format_duration(m.timeout)
        );
    }
    let jobs = plan.jobs();
    let mut warm: Vec<&ProcessEnv> = jobs
        .iter()
        .map(|j| &j.env)
        .filter(|e| e.jit_cache == experiment::JitCache::Warm)
        .collect();
    warm.sort();
    warm.dedup();
    let priming = if warm.is_empty() {
        String::new()
    } else {
        format!(" (+{} priming the warm JIT caches)", warm.len())
    };
    let _ = writeln!(
        out,
        "\n{} cells, {} worker process(es){priming}, {} timed launches, {} warm-up launches",
        plan.cells.len(),
        jobs.len(),
        plan.timed_launches(),
        plan.untimed_launches()
    );
    // Process start-up, and the GPU warm-up the experiment asks for before its first cell.
    let startup = PROCESS_START_S + exp.gpu_warmup.as_secs_f64();
    let total = known + guessed + startup;
    if guessed == 0.0 {
        let _ = writeln!(
            out,
            "estimated time: {} (from the previous run's cell timings)",
            seconds(total)
        );
    } else if known == 0.0 {
        let _ = writeln!(out, "estimated time: at least {} (kernel times unknown until a first run; this counts process start-up and launch overhead only)", seconds(total));
    } else {
        let _ = writeln!(
            out,
            "estimated time: at least {} ({} from the previous run, the rest a lower bound)",
            seconds(total),
            seconds(known)
        );
    }
    let _ = writeln!(
        out,
        "clock policy: {}",
        crate::clock_lock::describe(exp.clocks)
    );
    if !exp.gpu_warmup.is_zero() {
        let _ = writeln!(
            out,
            "GPU warm-up: {} of busy work before the first cell",
            humantime::format_duration(exp.gpu_warmup)
        );
    }
    let _ = writeln!(out, "device facts for expressions are assumed (H100: L2 {} MiB, {} SMs) until the run reads the real device", DeviceFacts::nominal().l2_bytes >> 20, DeviceFacts::nominal().sm_count);
    out
}

fn preview(values: &[i64]) -> String {
    if values.len() <= 8 {
        format!("{values:?}")
    } else {
        format!(
            "[{}, {}, ..., {}]",
            values[0],
            values[1],
            values[values.len() - 1]
        )
    }
}

fn seconds(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.1} s")
    } else {
        format!("{:.1} min", s / 60.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn experiment(variants: &str) -> Experiment {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("k.cu"),
            "extern \"C\" __global__ void k() {}",
        )
        .unwrap();
        let text = format!(
            r#"
[experiment]
title = "t"
[sweep]
n = [1, 2]
m = "10..20 step 10"
[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
grid = ["n"]
block = [1]
{variants}
"#
        );
        let path = dir.path().join("e.toml");
        let e = Experiment::parse(Path::new(&path), &text).unwrap();
        std::mem::forget(dir);
        e
    }

    #[test]
    fn matrix_is_kernel_by_points_by_variants_plus_floor() {
        let e = experiment("[[variant]]\nname = \"a\"\ntimer = \"host\"\n[[variant]]\nname = \"b\"\nsamples = \"n * 3\"\n");
        let plan = Plan::new(&e).unwrap();
        let ids: Vec<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "k/n=1 m=10/a",
                "k/n=1 m=10/b",
                "k/n=1 m=20/a",
                "k/n=1 m=20/b",
                "k/n=2 m=10/a",
                "k/n=2 m=10/b",
                "k/n=2 m=20/a",
                "k/n=2 m=20/b",
                "floor/host",
                "floor/events"
            ]
        );
        assert_eq!(plan.cells[1].knobs.samples, 3);
        assert_eq!(plan.cells[5].knobs.samples, 6);
        assert_eq!(plan.cells[0].knobs.timer, TimerKind::Host);
        assert_eq!(plan.jobs().len(), 1);
    }

    #[test]
    fn flush_cells_plan_a_buffer_of_twice_the_l2_by_default() {
        let e = experiment("[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"cold\"\ncache = \"flush\"\n[[variant]]\nname = \"cold-1x\"\ncache = \"flush\"\nflush_bytes = \"l2_bytes\"\nflush_method = \"kernel\"\n");
        let plan = Plan::new(&e).unwrap();
        assert_eq!(plan.cells[0].knobs.cache, Cache::Hot);
        assert_eq!(
            plan.cells[1].knobs.cache.describe(),
            "flush 2 * l2_bytes bytes (memset)"
        );
        assert_eq!(
            plan.cells[2].knobs.cache.describe(),
            "flush l2_bytes bytes (write kernel)"
        );
        let floor = plan.cells.iter().find(|c| c.role == Role::Floor).unwrap();
        assert_eq!(
            floor.knobs.cache,
            Cache::Hot,
            "the floor reads the timer, not a flush"
        );
    }

    #[test]
    fn shared_cells_run_in_one_process_per_environment() {
        let e = experiment(
            "[[variant]]\nname = \"plain\"\n[[variant]]\nname = \"eager\"\nenv = { CUDA_MODULE_LOADING = \"EAGER\" }\n[[variant]]\nname = \"plain-too\"\ncompile = \"ptx\"\n[[variant]]\nname = \"cold\"\nfresh_process = true\nprocesses = 2\nenv = { CUDA_FORCE_JIT = 1 }\njit_cache = \"empty\"\n",
        );
        let plan = Plan::new(&e).unwrap();
        let jobs = plan.jobs();
        // shared: {plain, plain-too, floor} and {eager}; fresh: 4 points x 2 processes
        assert_eq!(jobs.len(), 2 + 8);
        assert_eq!(jobs[0].env, ProcessEnv::default());
        let variants = |j: &WorkerJob| -> Vec<String> {
            j.runs
                .iter()
                .map(|r| plan.cells[r.cell].variant.clone())
                .collect()
        };
        assert!(variants(&jobs[0]).iter().all(|v| v != "eager"));
        assert!(variants(&jobs[0]).contains(&"plain-too".to_string()));
        assert_eq!(variants(&jobs[1]), ["eager"; 4]);
        assert_eq!(jobs[1].env.vars["CUDA_MODULE_LOADING"], "EAGER");
        for j in &jobs[2..] {
            assert_eq!(j.runs.len(), 1);
            assert_eq!(j.env.vars["CUDA_FORCE_JIT"], "1");
            assert_eq!(j.env.jit_cache, experiment::JitCache::Empty);
        }
        let ptx = plan
            .cells
            .iter()
            .find(|c| c.variant == "plain-too")
            .unwrap();
        assert_eq!(ptx.knobs.compile.mode, experiment::CompileMode::Ptx);
        assert_eq!(
            plan.priming_runs(&jobs[1].env).len(),
            4,
            "priming loads every cell of its environment"
        );
        let text = describe(&e, &plan, &Default::default());
        assert!(
            text.contains("eager: environment CUDA_MODULE_LOADING=EAGER"),
            "{text}"
        );
        assert!(
            text.contains("cold: environment CUDA_FORCE_JIT=1, a new empty JIT cache per process"),
            "{text}"
        );
        assert!(
            text.contains("plain-too: environment inherited; PTX for the device's compute_XX"),
            "{text}"
        );
    }

    #[test]
    fn interleaved_cells_take_turns_round_by_round_and_split_their_samples() {
        let e = experiment("[[variant]]\nname = \"seq\"\n[[variant]]\nname = \"a\"\norder = \"interleaved\"\nrounds = 3\nsamples = 10\n[[variant]]\nname = \"b\"\norder = \"interleaved\"\nrounds = 3\nsamples = 10\n[report]\nfloor = false\n");
        let plan = Plan::new(&e).unwrap();
        assert_eq!(
            plan.cells[1].knobs.samples, 4,
            "10 samples over 3 rounds, rounded up"
        );
        assert_eq!(plan.cells[1].runs(), 3);
        let jobs = plan.jobs();
        assert_eq!(jobs.len(), 1);
        let first_point: Vec<(String, u32)> = jobs[0].runs[..7]
            .iter()
            .map(|r| (plan.cells[r.cell].variant.clone(), r.process))
            .collect();
        let want = [
            ("seq", 0),
            ("a", 0),
            ("b", 0),
            ("a", 1),
            ("b", 1),
            ("a", 2),
            ("b", 2),
        ];
        assert_eq!(first_point, want.map(|(v, r)| (v.to_string(), r)).to_vec());
        assert_eq!(jobs[0].runs.len(), 4 * 7, "every point the same way");
    }

    #[test]
    fn the_estimate_counts_the_gpu_warm_up() {
        let e = experiment("[[variant]]\nname = \"a\"\n[environment]\ngpu_warmup = \"30s\"\n");
        let text = describe(&e, &Plan::new(&e).unwrap(), &Default::default());
        assert!(text.contains("GPU warm-up: 30s"), "{text}");
        assert!(text.contains("at least 30."), "{text}");
    }

    #[test]
    fn shuffled_cells_take_turns_in_a_seeded_order() {
        let v =
            |n: &str| format!("[[variant]]\nname = \"{n}\"\norder = \"shuffled\"\nrounds = 8\n");
        let e = experiment(&format!(
            "{}{}{}[report]\nfloor = false\n",
            v("a"),
            v("b"),
            v("c")
        ));
        let plan = Plan::new(&e).unwrap();
        let runs = plan.jobs()[0].runs.clone();
        let rounds: Vec<Vec<usize>> = runs[..24]
            .chunks(3)
            .map(|c| c.iter().map(|r| r.cell).collect())
            .collect();
        for (r, cells) in rounds.iter().enumerate() {
            let mut sorted = cells.clone();
            sorted.sort();
            assert_eq!(sorted, [0, 1, 2], "round {r} holds each cell once");
        }
        assert!(
            rounds.iter().any(|c| c != &rounds[0]),
            "the order changes between rounds"
        );
        assert_eq!(
            runs,
            Plan::new(&e).unwrap().jobs()[0].runs,
            "and is the same every time"
        );
    }

    #[test]
    fn fresh_process_cells_get_one_process_per_run_round_robin() {
        let e = experiment("[[variant]]\nname = \"cold\"\nfresh_process = true\nprocesses = 2\nsamples = 0\n[[variant]]\nname = \"warm\"\n");
        let plan = Plan::new(&e).unwrap();
        let jobs = plan.jobs();
        // one shared job (4 warm cells + floor), then 4 cold cells x 2 processes
        assert_eq!(jobs.len(), 1 + 8);
        assert_eq!(jobs[0].runs.len(), 5);
        assert_eq!(
            jobs[1].runs,
            vec![Run {
                cell: 0,
                process: 0
            }]
        );
        assert_eq!(
            jobs[5].runs,
            vec![Run {
                cell: 0,
                process: 1
            }]
        );
        assert_eq!(plan.cells[0].headline_phase(), "first");
        assert_eq!(plan.cells[1].headline_phase(), "steady");
    }
}
