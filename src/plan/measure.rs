//! The cells that measure: one per timed kernel, sweep point and variant, the variant's
//! knobs applied to the kernel's launch, refused where those knobs cannot time the kernel
//! there or its buffers do not fit the device.

use super::cell::{point_id, Cell, Role};
use crate::experiment::knobs::cache::Cache;
use crate::experiment::knobs::inputs::Inputs;
use crate::experiment::knobs::timer::TimerKind;
use crate::experiment::{
    point_label, ConfigError, Experiment, Kernel, Knobs, LaunchSpec, Point, Variant,
};

/// The cell that measures kernel `k` at its point `p` under variant `v`; `index` is its
/// place in the plan.
pub(super) fn measure_cell(
    exp: &Experiment,
    index: usize,
    k: usize,
    kernel: &Kernel,
    p: usize,
    v: &Variant,
) -> Result<Cell, ConfigError> {
    let point = &kernel.points[p];
    // Knobs are read at the experiment's points; a kernel's own axes extend them.
    let knobs = v.knobs[kernel.base[p]].clone();
    let label = point_id(point);
    let id = if label.is_empty() {
        format!("{}/{}", kernel.name, v.name)
    } else {
        format!("{}/{label}/{}", kernel.name, v.name)
    };
    let mut launch = kernel.launches[p].clone();
    knobs.launch_config.apply(&mut launch);
    if kernel.module.is_some() && !knobs.nvrtc_options.0.is_empty() {
        return Err(exp
            .error(format!(
                "cell {id}: `{}` is a prebuilt module, which takes no NVRTC options",
                kernel.name
            ))
            .with_hint(
                "build the module with the options instead, or leave options out of this variant",
            ));
    }
    knobs.nvrtc_options.apply(&mut launch);
    let reference_launch = reference_launch(exp, kernel, point, &id)?;
    refuse_untimeable(
        exp,
        &id,
        kernel,
        &knobs,
        &launch,
        reference_launch.is_some(),
    )?;
    refuse_resets_between_launches(exp, &id, &knobs, &launch)?;
    refuse_window_elsewhere(exp, &id, kernel, &knobs, &launch)?;
    let check_bytes = reference_launch.as_ref().map_or(0, |l| l.device_bytes());
    fits(exp, &id, &knobs, &launch, check_bytes)?;
    Ok(Cell {
        index,
        id,
        role: Role::Measure,
        kernel: Some(k),
        kernel_name: kernel.name.clone(),
        point: point.clone(),
        variant: v.name.clone(),
        knobs,
        launch,
        reference_launch,
    })
}

/// The launch, at the same point, of the kernel this one is checked against
/// (`check_kernel`), if any.
fn reference_launch(
    exp: &Experiment,
    kernel: &Kernel,
    point: &Point,
    id: &str,
) -> Result<Option<LaunchSpec>, ConfigError> {
    Ok(match &kernel.check_kernel {
        None => None,
        Some(c) => {
            let reference = &exp.kernels[c.kernel];
            let at = reference.point_for(point);
            Some(reference.launches[at.ok_or_else(|| {
                exp.error(format!("cell {id}: the reference kernel `{}` is not swept over {}", reference.name, point_label(point)))
                    .with_hint("a reference kernel takes the same sweep as the kernel it checks, its own axes included")
            })?].clone())
        }
    })
}

/// Refuses a cell whose knobs cannot time its kernel: a check after a batch or graph with
/// no warm-up before it, the profiler on a kernel with steps or copies, CUPTI where it would
/// take other copies for the timed ones, a graph that cannot capture the copies.
fn refuse_untimeable(
    exp: &Experiment,
    id: &str,
    kernel: &Kernel,
    knobs: &Knobs,
    launch: &LaunchSpec,
    checked_by_kernel: bool,
) -> Result<(), ConfigError> {
    let checked_after_warmup = knobs.warmup.launches > 0
        && knobs.warmup.kernel == crate::experiment::knobs::warmup::WarmupKernel::Same;
    if checked_by_kernel && !checked_after_warmup && knobs.launches.count() > 1 {
        return Err(exp
            .error(format!("cell {id}: a kernel checked against a reference kernel is checked after one launch, but the first timed region here holds {} (batch or graph) and no warm-up of the kernel comes first", knobs.launches.count()))
            .with_hint("add warmup = 1 (or more): the first warm-up launch is the checked one"));
    }
    let python_in_place = (kernel.check_python.as_ref())
        .is_some_and(|pc| pc.outputs.iter().any(|&o| kernel.updates_in_place(o)));
    if python_in_place && !checked_after_warmup && knobs.launches.count() > 1 {
        return Err(exp
            .error(format!("cell {id}: `{}` updates its checked output in place, which the first timed region here updates {} times (batch or graph) before it is checked, and no warm-up of the kernel comes first", kernel.name, knobs.launches.count()))
            .with_hint("add warmup = 1 (or more): the first warm-up launch is the checked one"));
    }
    if !kernel.steps.is_empty() && knobs.timer == TimerKind::Profiler {
        return Err(exp
            .error(format!("cell {id}: the profiler times each kernel launch on its own, so it cannot time `{}` with its steps as one region", kernel.name))
            .with_hint("time a kernel with steps by cupti or events; its steps alone can be separate kernels under the profiler"));
    }
    if !kernel.steps.is_empty() && knobs.counters.wanted() {
        return Err(exp
            .error(format!("cell {id}: counters are read for one kernel's launches, and `{}` runs steps", kernel.name))
            .with_hint("read counters of its steps as separate kernels, or drop `counters` for this kernel's variant"));
    }
    let copies = kernel.copies();
    if copies && knobs.counters.wanted() {
        return Err(exp
            .error(format!(
                "cell {id}: counters are read for kernel launches only, and `{}` copies",
                kernel.name
            ))
            .with_hint("drop `counters` for this kernel's variant"));
    }
    if copies && knobs.timer == TimerKind::Profiler {
        return Err(exp
            .error(format!(
                "cell {id}: the profiler times kernel launches only, and `{}` copies",
                kernel.name
            ))
            .with_hint("time copies by events, cupti or a host timer"));
    }
    let checks_output = kernel.is_checked();
    if copies && knobs.timer == TimerKind::Cupti && checks_output && !checked_after_warmup {
        return Err(exp
            .error(format!("cell {id}: CUPTI is timing `{}`'s copies, and with no warm-up of the kernel its output check runs among the timed launches, where its own copies would be taken for them", kernel.name))
            .with_hint("add warmup = 1 (or more): the first warm-up launch is the checked one"));
    }
    if copies && knobs.timer == TimerKind::Cupti && knobs.inputs == Inputs::Fresh {
        return Err(exp
            .error(format!("cell {id}: CUPTI would take the copies of fresh inputs between samples for the timed copies of `{}`", kernel.name))
            .with_hint("time copies with inputs = \"same\", or by events"));
    }
    let pageable = (launch.args.iter()).any(|a| {
        matches!(a, crate::experiment::ArgValue::Buffer { memory, .. } if *memory == crate::experiment::Memory::Pageable)
    });
    if copies
        && matches!(
            knobs.launches,
            crate::experiment::knobs::launches::Launches::Graph(_)
        )
        && (pageable || kernel.copies_synchronously())
    {
        return Err(exp
            .error(format!("cell {id}: a CUDA graph cannot capture `{}`'s copies: a sync copy blocks the host, and one of pageable memory is staged by it", kernel.name))
            .with_hint("time these copies without graph, or make them async copies of pinned memory"));
    }
    Ok(())
}

/// Refuses a cell of a kernel with `reset` buffers where a reset cannot come before every
/// launch: a lazy first launch (nothing may run on the GPU before it), a graph whose
/// launches event nodes time one by one (their hot graphs have no room for the resets).
fn refuse_resets_between_launches(
    exp: &Experiment,
    id: &str,
    knobs: &Knobs,
    launch: &LaunchSpec,
) -> Result<(), ConfigError> {
    use crate::experiment::knobs::{flushed_graph::FlushedGraph, launches::Launches};
    if !launch.resets_each_launch() {
        return Ok(());
    }
    if knobs.first_launch == crate::experiment::knobs::first_launch::FirstLaunch::Lazy {
        return Err(exp
            .error(format!("cell {id}: a lazy first launch has nothing on the GPU before it, but the kernel's `reset` buffers are set by a memset before every launch"))
            .with_hint("time this kernel with first_launch = \"prepared\""));
    }
    match knobs.launches {
        Launches::Graph(_) if knobs.flushed_graph == FlushedGraph::EventNodes => Err(exp
            .error(format!("cell {id}: event nodes time a flushed graph's launches against hot graphs that have no room for the kernel's `reset` buffers"))
            .with_hint("leave flushed_graph at its default: the graph of resets, flushes and launches is read less a graph of the resets and flushes alone")),
        _ => Ok(()),
    }
}

/// Refuses a cell whose buffers (every rotation set, and a reference kernel's for its
/// check) and flush do not fit the device.
fn fits(
    exp: &Experiment,
    id: &str,
    knobs: &Knobs,
    launch: &LaunchSpec,
    check_bytes: u64,
) -> Result<(), ConfigError> {
    let buffers = launch
        .device_bytes()
        .saturating_mul(knobs.rotate.sets(knobs.launches))
        .saturating_add(check_bytes);
    let flush = match knobs.cache {
        Cache::Flush { bytes, .. } => bytes,
        Cache::Hot => 0,
    };
    let need = buffers.saturating_add(flush);
    if need <= exp.facts.mem_bytes as u64 {
        return Ok(());
    }
    Err(exp
        .error(format!(
            "cell {id} needs {} of device memory ({} sets of buffers, {} flush), more than {} has",
            crate::experiment::knobs::cache::bytes_text(need),
            knobs.rotate.sets(knobs.launches),
            crate::experiment::knobs::cache::bytes_text(flush),
            exp.facts.describe()
        ))
        .with_hint("use fewer rotation sets, a smaller flush or smaller sizes"))
}

/// Refuses an `l2_persist` that names no buffer argument of the kernel, or a kernel that
/// copies: the window is set on kernel launches, on one of their buffers.
fn refuse_window_elsewhere(
    exp: &Experiment,
    id: &str,
    kernel: &Kernel,
    knobs: &Knobs,
    launch: &LaunchSpec,
) -> Result<(), ConfigError> {
    let Some(name) = &knobs.l2_persist.0 else {
        return Ok(());
    };
    let buffers: Vec<&str> = (kernel.args.iter().zip(&launch.args))
        .filter(|(_, a)| matches!(a, crate::experiment::ArgValue::Buffer { .. }))
        .map(|(d, _)| d.name.as_str())
        .collect();
    if kernel.copies() {
        return Err(exp
            .error(format!(
                "cell {id}: l2_persist sets a window on kernel launches, and `{}` copies",
                kernel.name
            ))
            .with_hint(
                "leave l2_persist out of this kernel's variants (a kernel's own `variants` can)",
            ));
    }
    if !buffers.contains(&name.as_str()) {
        return Err(exp
            .error(format!(
                "cell {id}: l2_persist names `{name}`, which is not a buffer argument of `{}`",
                kernel.name
            ))
            .with_hint(format!("name one of its buffers: {}", buffers.join(", "))));
    }
    Ok(())
}
