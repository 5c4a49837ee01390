//! `runner plan`: the expanded matrix with every value evaluated, the counts, and an
//! estimate of the time.

use super::{Cell, Plan};
use crate::experiment::knobs::{
    cache::{bytes_text, Cache, FlushMethod},
    env::JitCache,
    flushed_graph::FlushedGraph,
    launches::Launches,
    queue::Queue,
    warmup::WarmupKernel,
};
use crate::experiment::{Aspect, Experiment};
use std::collections::HashMap;
use std::fmt::Write;

/// Seconds a fresh worker process spends before its first cell (CUDA context, NVRTC, module
/// load), measured on an H100; used only when no earlier run gives real timings.
const PROCESS_START_S: f64 = 0.4;
/// A lower bound per launch when a kernel's time is unknown (launch and sync overhead).
const LAUNCH_FLOOR_S: f64 = 10e-6;
/// Cells listed one per line at most; the rest are counted.
const MAX_ROWS: usize = 2000;

/// The plan as `runner plan` prints it, with an estimate of the time from `previous` (cell
/// id -> seconds per run, from an earlier run) where it has the cell.
/// The plan's time: the previous run's cell times where known, a lower bound elsewhere, with
/// process start-up and the GPU warm-up the experiment asks for before its first cell.
pub fn estimated_seconds(exp: &Experiment, plan: &Plan, previous: &HashMap<String, f64>) -> f64 {
    let (known, guessed) = estimate(plan, previous);
    known + guessed + PROCESS_START_S + exp.gpu_warmup.as_secs_f64()
}

pub fn describe(exp: &Experiment, plan: &Plan, previous: &HashMap<String, f64>) -> String {
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
    for k in &exp.kernels {
        let own = k
            .points
            .first()
            .map_or(0, Vec::len)
            .saturating_sub(exp.params.len());
        if own > 0 {
            let names: Vec<&str> = k.points[0][exp.params.len()..]
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            let _ = writeln!(
                out,
                "  kernel {} also sweeps {}: {} point(s)",
                k.name,
                names.join(", "),
                k.points.len()
            );
        }
    }
    let kernels: Vec<String> = exp
        .kernels
        .iter()
        .map(|k| match k.source.is_empty() {
            true => format!("{} ({})", k.name, k.entry),
            false => format!("{} ({})", k.name, k.source),
        })
        .collect();
    let _ = writeln!(out, "  kernels: {}", kernels.join(", "));
    for k in &exp.kernels {
        let resets: Vec<String> = (k.args.iter())
            .filter_map(|a| match &a.kind {
                crate::experiment::ArgKind::Buffer {
                    init: crate::experiment::Init::Reset(v),
                    ..
                } => Some(format!("{} to {v}", a.name)),
                _ => None,
            })
            .collect();
        if !resets.is_empty() {
            let _ = writeln!(
                out,
                "  kernel {} resets {} before every launch (checked, warm-up, timed, audit), outside the timed region; in a graph as memset nodes, timed apart and taken off",
                k.name,
                resets.join(", ")
            );
        }
    }
    let width = plan
        .cells
        .iter()
        .map(|c| c.id.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "\n{:<width$} {:<10} {:>8} {:>8} {:>6}  {:<7} {:<22} cache",
        "cell", "timer", "warm-up", "samples", "runs", "process", "timed region"
    );
    for c in plan.cells.iter().take(MAX_ROWS) {
        let _ = writeln!(out, "{}", row(c, width));
    }
    if plan.cells.len() > MAX_ROWS {
        let _ = writeln!(out, "... and {} more cells", plan.cells.len() - MAX_ROWS);
    }
    let _ = writeln!(
        out,
        "\nvariants (values listed by point where they differ):"
    );
    for v in &exp.variants {
        let text: Vec<String> = Aspect::ALL
            .iter()
            .flat_map(|a| v.describe(&exp.points, *a))
            .collect();
        let _ = writeln!(out, "  {}: {}", v.name, text.join("; "));
    }
    let (known, guessed) = estimate(plan, previous);
    let jobs = plan.jobs();
    let mut warm: Vec<_> = jobs
        .iter()
        .map(|j| &j.env)
        .filter(|e| e.jit_cache == JitCache::Warm)
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
    let total = estimated_seconds(exp, plan, previous);
    let _ = writeln!(
        out,
        "estimated time: {}",
        if guessed == 0.0 {
            format!("{} (from the previous run's cell timings)", seconds(total))
        } else if known == 0.0 {
            format!("at least {} (kernel times unknown until a first run; this counts process start-up and launch overhead only)", seconds(total))
        } else {
            format!(
                "at least {} ({} from the previous run, the rest a lower bound)",
                seconds(total),
                seconds(known)
            )
        }
    );
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
    let _ = writeln!(
        out,
        "checked against {}; a run checks again against the real device",
        exp.facts.describe()
    );
    out
}

fn row(c: &Cell, width: usize) -> String {
    let k = &c.knobs;
    let warm = match k.warmup.kernel {
        WarmupKernel::Same => k.warmup.launches.to_string(),
        WarmupKernel::Empty => format!("{}e", k.warmup.launches),
    };
    let mut region = match k.launches {
        Launches::Single => "1 launch".to_string(),
        Launches::Batch(n) => format!("batch of {n}"),
        Launches::Graph(n) => format!("graph of {n}"),
    };
    if !c.launch.steps.is_empty() {
        region += &format!(" +{} step(s)", c.launch.steps.len());
    }
    if k.flushed_graph == FlushedGraph::EventNodes {
        region += " (event nodes)";
    }
    if let Queue::Saturate { wait_us } = k.queue {
        region += &match wait_us {
            Some(w) => format!(" +{w}µs wait"),
            None => " +wait".to_string(),
        };
    }
    let cache = match k.cache {
        Cache::Hot => "hot".to_string(),
        Cache::Flush { bytes, method } => format!(
            "flush {} ({})",
            bytes_text(bytes),
            match method {
                FlushMethod::Memset => "memset",
                FlushMethod::Kernel => "write kernel",
                FlushMethod::Read => "read kernel",
            }
        ),
    };
    let samples = match k.samples.stop {
        Some(_) => format!("≤{}", k.samples_per_run()),
        None => k.samples_per_run().to_string(),
    };
    format!(
        "{:<width$} {:<10} {:>8} {:>8} {:>6}  {:<7} {:<22} {cache}",
        c.id,
        k.timer.key(),
        warm,
        samples,
        c.runs(),
        if k.process.fresh.is_some() {
            "fresh"
        } else {
            "shared"
        },
        region,
    )
}

/// Seconds known from the previous run, and a lower bound for the cells it lacks.
fn estimate(plan: &Plan, previous: &HashMap<String, f64>) -> (f64, f64) {
    let (mut known, mut guessed) = (0.0, 0.0);
    for c in &plan.cells {
        match cell_seconds(c, previous) {
            (s, true) => known += s,
            (s, false) => guessed += s,
        }
    }
    (known, guessed)
}

/// A cell's time, all its runs: the previous run's time per run (`previous`, by cell id)
/// where it has the cell, else a lower bound; each fresh process's start-up added. Whether
/// the previous run had it. What the plan's estimate and a shard's balance both count.
pub fn cell_seconds(c: &Cell, previous: &HashMap<String, f64>) -> (f64, bool) {
    let k = &c.knobs;
    let runs = c.runs() as f64;
    let start = if k.process.fresh.is_some() {
        PROCESS_START_S
    } else {
        0.0
    };
    match previous.get(&c.id) {
        Some(s) => ((s + start) * runs, true),
        None => {
            let launches = (1 + k.warmup.launches + k.samples_per_run()) * k.launches.count();
            (runs * (launches as f64 * LAUNCH_FLOOR_S + start), false)
        }
    }
}

fn preview(values: &[crate::experiment::SweepValue]) -> String {
    if values.len() <= 8 {
        let shown: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        format!("[{}]", shown.join(", "))
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
