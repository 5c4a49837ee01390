//! What a run costs before it runs: each run of a cell from an earlier run's time where
//! there is one, else from the model ([`super::model`]: the kernel's launches at the
//! device's peaks, and what every cell pays besides), plus what the run pays once (worker
//! processes, NVRTC builds, the GPU warm-up, peer programs). `runner plan` states it with
//! its basis; the progress bar weighs each run by it and refines it as runs end.

use super::cell::Cell;
pub use super::model::PROCESS_S;
use super::model::{model, COMPILE_S, COUNTER_PASS_S, HELPERS_S, PEER_S};
use super::probe::Probe;
use super::{Plan, Run};
use crate::experiment::knobs::env::JitCache;
use crate::experiment::Experiment;
use std::collections::{HashMap, HashSet};

/// How far a first run's modelled time may be off: the project's first runs took between
/// these many times what the model said (reports/plan-probe, eighteen first runs at
/// 4e9be81 on an H200: 0.93-6.04 as the model reads them now; a kernel far below its
/// peaks, such as `scatter-add`'s atomics, or one that declares no work, takes longer). `store::committed_tests` and
/// `store::probe_table_tests` keep it true.
pub const MODEL_RANGE: (f64, f64) = (0.5, 6.5);

/// How far a first run's time may be off where `plan --probe` timed its kernels: the
/// project's first runs took between these many times what the probed estimate said
/// (reports/plan-probe: 0.81-1.15 for the eighteen at 4e9be81 on an H200; 0.65-1.35 at
/// fa07446 before the model counted a draw's device copies and the GPU's compares).
pub const PROBE_RANGE: (f64, f64) = (0.65, 1.5);

/// The estimate of a run, in seconds, by what it counts.
pub struct Estimate {
    /// Seconds of each run of each cell (by cell index), and whether an earlier run gave it.
    pub per_run: Vec<(f64, bool)>,
    /// Of the modelled cells: their kernels' launches, and everything else they do.
    pub launches_s: f64,
    pub work_s: f64,
    pub processes: usize,
    pub builds: usize,
    pub peer_processes: usize,
    pub gpu_warmup_s: f64,
    /// Kernels of modelled cells that declare neither bytes nor flops (and were not probed).
    pub undeclared: Vec<String>,
    /// Modelled cells whose kernel's time per launch a probe measured, and those it did not.
    pub probed: usize,
    pub unprobed: usize,
    /// Cells the budget is expected to stop before their sample count.
    pub budget_stops: Vec<usize>,
    /// Counter passes (a process under Nsight Compute each), and their cells' share (of
    /// which that of cells an earlier run gave).
    pub counter_passes: usize,
    pub counted_s: f64,
    pub counted_known_s: f64,
}

impl Estimate {
    /// The estimate of `plan`: a cell's time per run from `previous` (cell id -> seconds
    /// per run, an earlier run's) where it has the cell, else from the model.
    pub fn new(exp: &Experiment, plan: &Plan, previous: &HashMap<String, f64>) -> Estimate {
        Estimate::probed(exp, plan, previous, &Probe::default())
    }

    /// As [`Estimate::new`], the model taking a kernel's time per launch and the compiles'
    /// from what `plan --probe` measured, where it did.
    pub fn probed(
        exp: &Experiment,
        plan: &Plan,
        previous: &HashMap<String, f64>,
        probe: &Probe,
    ) -> Estimate {
        let jobs = plan.jobs();
        // A warm JIT cache is filled by a process of its own first.
        let mut warm: Vec<_> = (jobs.iter())
            .map(|j| &j.env)
            .filter(|e| e.jit_cache == JitCache::Warm)
            .collect();
        warm.dedup();
        let mut e = Estimate {
            per_run: Vec::with_capacity(plan.cells.len()),
            launches_s: 0.0,
            work_s: 0.0,
            processes: jobs.len() + warm.len(),
            builds: 0,
            peer_processes: (exp.peers.iter())
                .map(|p| p.commands.iter().flatten().count() * p.processes as usize)
                .sum(),
            gpu_warmup_s: exp.gpu_warmup.as_secs_f64(),
            undeclared: Vec::new(),
            probed: 0,
            unprobed: 0,
            budget_stops: Vec::new(),
            counter_passes: 0,
            counted_s: 0.0,
            counted_known_s: 0.0,
        };
        let mut counted = HashSet::new();
        for j in &jobs {
            for pass in super::counter_passes::passes(plan, &j.runs, &counted) {
                counted.extend(pass.runs.iter().map(|r| r.cell));
                e.counter_passes += 1;
            }
        }
        let (mut points, mut draws) = (HashSet::new(), HashSet::new());
        let mut builds = HashSet::new();
        for c in &plan.cells {
            let kernel = c.kernel.map(|k| &exp.kernels[k]);
            let per_launch = probe.per_launch.get(&c.index).copied();
            let m = model(exp, c, kernel, per_launch);
            let runs = f64::from(c.runs());
            if let Some(s) = previous.get(&c.id) {
                // A cell's stored wall time holds no counter pass: the model's is added.
                e.counted_s += m.counted_s;
                e.counted_known_s += m.counted_s;
                e.per_run.push((*s + m.counted_s / runs, true));
                continue;
            }
            // A point's reference is computed, and a draw key's inputs drawn, once per run,
            // by its first cell.
            let once = f64::from(u8::from(points.insert(c.point_key()))) * m.per_point_s
                + f64::from(u8::from(draws.insert(c.draw_key()))) * m.per_draw_s;
            // Each kernel build of the cell and its reference kernel, compiled once per run
            // (the empty kernel's is the runner's own).
            if let Some(k) = c.kernel {
                builds.insert((k, c.launch.entry.clone(), c.launch.options.clone()));
            }
            if let (Some(r), Some(kc)) = (
                &c.reference_launch,
                kernel.and_then(|k| k.check_kernel.as_ref()),
            ) {
                builds.insert((kc.kernel, r.entry.clone(), r.options.clone()));
            }
            // The floor's empty kernel is the model's own launch cost, probe or not.
            match (per_launch, c.kernel) {
                (_, None) => {}
                (Some(_), _) => e.probed += 1,
                (None, _) => e.unprobed += 1,
            }
            e.launches_s += m.launches_s * runs;
            e.work_s += m.work_s * runs + once;
            e.counted_s += m.counted_s;
            e.per_run
                .push((m.launches_s + m.work_s + (once + m.counted_s) / runs, false));
            if m.stopped {
                e.budget_stops.push(c.index);
            }
            if let Some(k) = kernel.filter(|_| !m.declared) {
                if !e.undeclared.contains(&k.name) {
                    e.undeclared.push(k.name.clone());
                }
            }
        }
        e.builds = builds.len();
        e
    }

    /// Seconds the run pays once, whatever its cells: processes, compiles, peers, warm-up.
    fn fixed_s(&self) -> f64 {
        let compiles = self.compiles_s();
        self.processes as f64 * PROCESS_S
            + self.counter_passes as f64 * COUNTER_PASS_S
            + compiles
            + self.peer_processes as f64 * PEER_S
            + self.gpu_warmup_s
    }

    /// The run's NVRTC compiles: each build's, and the runner's own kernels'.
    fn compiles_s(&self) -> f64 {
        match self.builds {
            0 => 0.0,
            n => n as f64 * COMPILE_S + HELPERS_S,
        }
    }

    /// A cell's seconds, all its runs, each fresh process's start and exit with its run.
    pub fn cell_seconds(&self, c: &Cell) -> f64 {
        let start = match c.knobs.process.fresh {
            Some(_) => PROCESS_S,
            None => 0.0,
        };
        (self.per_run[c.index].0 + start) * f64::from(c.runs())
    }

    pub fn total_s(&self, plan: &Plan) -> f64 {
        let cells: f64 = (plan.cells.iter())
            .map(|c| self.per_run[c.index].0 * f64::from(c.runs()))
            .sum();
        cells + self.fixed_s()
    }

    /// Each run's weight for the progress bar: its cell's time per run, and its share of
    /// what the run pays once (spread over the runs in proportion; the GPU warm-up, which
    /// comes first, on the first).
    pub fn run_weights(&self, runs: &[Run]) -> Vec<f64> {
        let cells: f64 = runs.iter().map(|r| self.per_run[r.cell].0).sum();
        let spread = match cells > 0.0 {
            true => 1.0 + (self.fixed_s() - self.gpu_warmup_s) / cells,
            false => 1.0,
        };
        let mut weights: Vec<f64> = (runs.iter())
            .map(|r| self.per_run[r.cell].0 * spread)
            .collect();
        if let Some(first) = weights.first_mut() {
            *first += self.gpu_warmup_s;
        }
        weights
    }

    /// The estimate in words, with its basis: `runner plan`'s line.
    pub fn describe(&self, exp: &Experiment, plan: &Plan) -> String {
        let total = seconds(self.total_s(plan));
        let known: Vec<&Cell> = (plan.cells.iter())
            .filter(|c| self.per_run[c.index].1)
            .collect();
        let known_s: f64 = (known.iter())
            .map(|c| self.per_run[c.index].0 * f64::from(c.runs()))
            .sum();
        let modelled = known.len() < plan.cells.len();
        let mut parts = Vec::new();
        if !known.is_empty() {
            let ran = known_s - self.counted_known_s;
            parts.push(format!("the cells it ran {}", seconds(ran)));
        }
        if modelled {
            let device = match exp.facts.assumed {
                true => "an assumed H100's",
                false => "the device's",
            };
            let mut launches = match (self.probed, self.unprobed) {
                (_, 0) => format!(
                    "the kernels' launches {} as the probe timed them",
                    seconds(self.launches_s)
                ),
                (0, _) => format!(
                    "the kernels' launches {} at {device} peaks (bytes and flops as declared)",
                    seconds(self.launches_s)
                ),
                (p, u) => format!(
                    "the kernels' launches {} as the probe timed them ({p} cells) or at {device} peaks ({u} cells it could not time)",
                    seconds(self.launches_s)
                ),
            };
            if !self.undeclared.is_empty() {
                launches += &format!(
                    "; {} declare neither, counted as a matmul check's 2 m n k FLOPs or their buffers crossing DRAM once, which may be far too little",
                    self.undeclared.join(", ")
                );
            }
            parts.push(launches);
            parts.push(format!(
                "inputs drawn and uploaded, checks, audits and what each cell run pays besides {}",
                seconds(self.work_s)
            ));
        }
        parts.push(format!(
            "{} worker process(es) started and ended {}",
            self.processes,
            seconds(self.processes as f64 * PROCESS_S)
        ));
        if self.counter_passes > 0 {
            parts.push(format!(
                "{} counter pass(es) under Nsight Compute {}",
                self.counter_passes,
                seconds(self.counter_passes as f64 * COUNTER_PASS_S + self.counted_s)
            ));
        }
        if self.builds > 0 {
            parts.push(format!(
                "{} NVRTC build(s) and the runner's own kernels {}",
                self.builds,
                seconds(self.compiles_s())
            ));
        }
        if self.peer_processes > 0 {
            parts.push(format!(
                "{} peer program run(s) {}",
                self.peer_processes,
                seconds(self.peer_processes as f64 * PEER_S)
            ));
        }
        if self.gpu_warmup_s > 0.0 {
            parts.push(format!("GPU warm-up {}", seconds(self.gpu_warmup_s)));
        }
        let basis = match (known.is_empty(), modelled) {
            (false, false) => "from the previous run's cell times",
            (true, _) => "for a first run, modelled",
            (false, true) => "from the previous run's cell times where it has them, else modelled",
        };
        let spread = match (modelled, self.unprobed) {
            (false, _) => String::new(),
            (true, 0) => format!(
                ". Probed, the project's first runs took {} to {} times what it said: {} to {}",
                PROBE_RANGE.0,
                PROBE_RANGE.1,
                seconds(self.total_s(plan) * PROBE_RANGE.0),
                seconds(self.total_s(plan) * PROBE_RANGE.1),
            ),
            (true, _) => format!(
                ". A model, not a bound: the project's first runs took {} to {} times what it said ({} to {}), longer where a kernel runs far below its peaks; `runner plan --probe` times each kernel on the device first, and a run in `reports/<name>` gives the next plan its cell times",
                MODEL_RANGE.0,
                MODEL_RANGE.1,
                seconds(self.total_s(plan) * MODEL_RANGE.0),
                seconds(self.total_s(plan) * MODEL_RANGE.1),
            ),
        };
        format!("{total} {basis}: {}{spread}", parts.join("; "))
    }
}

/// Seconds as `runner plan` and the progress bar write them.
pub fn seconds(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}
