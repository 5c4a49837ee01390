//! `runner plan`: the expanded matrix with every value evaluated, the counts, and an
//! estimate of the time.

use super::cell::{Cell, Role};
use super::cost::Estimate;
use super::probe::Probe;
use super::{Plan, Shown};
use crate::experiment::knobs::budget::{Budget, SPENDING};
use crate::experiment::knobs::counters::{COUNTED_SAMPLES, COUNTED_WARMUP};
use crate::experiment::knobs::env::JitCache;
use crate::experiment::{Aspect, Experiment};
use std::collections::HashMap;
use std::fmt::Write;

/// Cells listed one per line at most; the rest are counted.
const MAX_ROWS: usize = 2000;

/// The plan as `runner plan` prints it, with an estimate of the time from `previous` (cell
/// id -> seconds per run, from an earlier run) where it has the cell.
pub fn describe(
    exp: &Experiment,
    plan: &Plan,
    previous: &HashMap<String, f64>,
    probe: &Probe,
    shown: Shown,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} ({})", exp.title, exp.path.display());
    out += &sweep(exp);
    out += &super::kernels::describe(exp, shown);
    out += &untimed_kernels(exp);
    out += &cell_table(plan);
    out += &variants(exp);
    out += &totals(exp, plan, previous, probe);
    out
}

/// The sweep's parameters with a preview of their values, and its zipped groups.
fn sweep(exp: &Experiment) -> String {
    let mut out = String::new();
    for (name, values) in &exp.params {
        let _ = writeln!(
            out,
            "  sweep {name}: {} value(s) {}",
            values.len(),
            preview(values)
        );
    }
    for group in &exp.zipped {
        let _ = writeln!(
            out,
            "  zipped: {} advance together, one point per position (not a product)",
            group.join(", ")
        );
    }
    out
}

/// The kernels that run only in others' checks.
fn untimed_kernels(exp: &Experiment) -> String {
    let mut out = String::new();
    for (i, k) in exp.kernels.iter().enumerate() {
        if k.check_only {
            let checks: Vec<&str> = (exp.kernels.iter())
                .filter(|o| o.check_kernel.as_ref().is_some_and(|c| c.kernel == i))
                .map(|o| o.name.as_str())
                .collect();
            let _ = writeln!(
                out,
                "  kernel {} is not timed (timed = false): it runs only in the checks of {}",
                k.name,
                checks.join(", ")
            );
        }
    }
    out
}

/// One row per cell, up to [`MAX_ROWS`].
fn cell_table(plan: &Plan) -> String {
    let mut out = String::new();
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
    out
}

/// Each variant's knobs.
fn variants(exp: &Experiment) -> String {
    let mut out = String::new();
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
    out
}

/// The counts, the estimate, the budget, the clocks and the device checked against.
fn totals(exp: &Experiment, plan: &Plan, previous: &HashMap<String, f64>, probe: &Probe) -> String {
    let mut out = String::new();
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
    let estimate = Estimate::probed(exp, plan, previous, probe);
    let _ = writeln!(out, "estimated time: {}", estimate.describe(exp, plan));
    let _ = writeln!(out, "budget: {}", budget(exp, plan, &estimate));
    if let Some(line) = counters(plan, &estimate) {
        let _ = writeln!(out, "counters: {line}");
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
    let _ = writeln!(
        out,
        "checked against {}; a run checks again against the real device",
        exp.facts.describe()
    );
    out
}

/// A cell's row: each knob in its own words (`plan_text`), placed in the table's columns.
fn row(c: &Cell, width: usize) -> String {
    let k = &c.knobs;
    let steps = (!c.launch.steps.is_empty()).then(|| format!("+{} step(s)", c.launch.steps.len()));
    let region: Vec<String> = [
        Some(k.launches.plan_text()),
        steps,
        k.flushed_graph.plan_text().map(String::from),
        k.queue.plan_text(),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!(
        "{:<width$} {:<10} {:>8} {:>8} {:>6}  {:<7} {:<22} {}",
        c.id,
        k.timer.key(),
        k.warmup.plan_text(),
        k.samples.plan_text(k.samples_per_run()),
        c.runs(),
        k.process.plan_text(),
        region.join(" "),
        k.cache.plan_text(),
    )
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

/// The budget the cells run under (the default unless the experiment chose one), and the
/// cells the estimate expects it to stop.
fn budget(exp: &Experiment, plan: &Plan, estimate: &Estimate) -> String {
    let mut chosen: Vec<(Budget, Vec<&str>)> = Vec::new();
    for v in &exp.variants {
        for b in v.knobs.iter().map(|k| k.budget) {
            match chosen.iter_mut().find(|(c, _)| *c == b) {
                Some((_, names)) if !names.contains(&v.name.as_str()) => names.push(&v.name),
                Some(_) => {}
                None => chosen.push((b, vec![&v.name])),
            }
        }
    }
    let mut text = match &chosen[..] {
        [(b, _)] => b.text(),
        _ => (chosen.iter())
            .map(|(b, names)| format!("{}: {}", names.join(", "), b.text()))
            .collect::<Vec<_>>()
            .join("; "),
    };
    if chosen.iter().any(|(b, _)| *b != Budget::Fixed) {
        text += " ";
        text += SPENDING;
    }
    let stops: Vec<&str> = (estimate.budget_stops.iter())
        .map(|&i| plan.cells[i].id.as_str())
        .collect();
    match stops.len() {
        0 => text,
        n => {
            let shown = stops.iter().take(5).copied().collect::<Vec<_>>().join(", ");
            let more = if n > 5 {
                format!(" and {} more", n - 5)
            } else {
                String::new()
            };
            format!("{text}. By the estimate it stops {n} cell(s): {shown}{more}")
        }
    }
}

/// The counter passes in words: which cells read which counters, and how; None where no
/// cell reads any.
fn counters(plan: &Plan, estimate: &Estimate) -> Option<String> {
    let counting: Vec<&Cell> = (plan.cells.iter())
        .filter(|c| c.knobs.counters.wanted() && c.role == Role::Measure)
        .collect();
    if counting.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for c in &counting {
        for n in &c.knobs.counters.0 {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    Some(format!(
        "{} cell(s) read {} ({}) in {} Nsight Compute process(es) of their own before their timed runs: at most {COUNTED_WARMUP} warm-up launches and {COUNTED_SAMPLES} samples in the cell's cache state (a cold cell's caches flushed by Nsight Compute too); no timed sample runs under the profiler, and without Nsight Compute the counters are skipped",
        counting.len(),
        match names.len() {
            1 => "1 counter".to_string(),
            n => format!("{n} counters"),
        },
        names.join(", "),
        estimate.counter_passes,
    ))
}
