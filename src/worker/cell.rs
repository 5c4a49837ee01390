//! One cell in one process: prepare (kernel, buffers, timer, flush), sample (the checked
//! launch, warm-up, the first timed launch, the steady samples) and collect (CUPTI's spans,
//! telemetry, the host's cost per sample).

use super::assemble::{
    add_steps, check_params, copy_launch, dims_of, sizes, taken, Checker, StepCode,
};
use super::buffers::{refuse_managed_beyond_free, Buffers, Poison};
use super::inputs::{seeds_of, shares, HostInputs};
use super::kernels::Build;
use super::kernels::KernelKey;
use super::reference;
use super::timeline::Timeline;
use super::Session;
use crate::cuda::{self, CudaError, DeviceBuffer, Dims, Event, Graph, Launch, Marks, Param};
use crate::experiment::knobs::flushed_graph::FlushedGraph;
use crate::experiment::knobs::{cache::Cache, launches::Launches, queue::Queue, timer::TimerKind};
use crate::experiment::knobs::{first_launch::FirstLaunch, warmup::WarmupKernel};
use crate::method::{
    self,
    flush::FlushBuffer,
    stop::Stopper,
    timer::{Body, Saturate, Timer},
};
use crate::plan::{Cell, Role};
use crate::protocol::{
    CellRecord, Overhead, QueueRecord, Status, FIRST_TIMED_LAUNCH, OUTPUT_CHECK,
};
use std::time::{Duration, Instant};

/// A cell's failure, and whether it broke the context.
pub(super) struct Failure {
    message: String,
    context_lost: bool,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            context_lost: false,
        }
    }
}

impl From<CudaError> for Failure {
    fn from(e: CudaError) -> Self {
        Failure {
            context_lost: e.is_sticky(),
            message: e.to_string(),
        }
    }
}

/// A CUDA error of one step of the cell, named.
pub(super) fn during(what: &'static str) -> impl Fn(CudaError) -> Failure {
    move |e| Failure {
        context_lost: e.is_sticky(),
        message: format!("{what}: {e}"),
    }
}

/// Runs one cell; the flag says whether the CUDA context is lost.
pub fn run(s: &mut Session, cell: &Cell, process: u32) -> (CellRecord, bool) {
    let t0 = Instant::now();
    let mut rec = CellRecord::failed(cell.index, &cell.id, process, String::new());
    rec.cuda_env = std::env::vars()
        .filter(|(k, _)| k.starts_with("CUDA_"))
        .collect();
    // A lazy first launch follows nothing on the GPU: no probe around it.
    let probed = cell.knobs.first_launch == FirstLaunch::Prepared;
    let probe = |s: &mut Session| if probed { s.probe() } else { Ok(None) };
    let outcome = probe(s).map_err(Failure::from).and_then(|before| {
        measure(s, cell, &mut rec)?;
        if let (Some(b), Some(a)) = (before, probe(s)?) {
            rec.probe_mhz = Some((b.mhz, a.mhz));
            // Under the profiler the probes themselves are profiled: host time means nothing.
            if cell.knobs.timer != TimerKind::Profiler {
                rec.probe_timer_rate = a.timer_rate_since(&b);
            }
        }
        Ok(())
    });
    rec.wall_s = t0.elapsed().as_secs_f64();
    rec.phases = s.timeline.take();
    match outcome {
        Ok(()) => {
            rec.status = Status::Ok;
            rec.error = None;
            (rec, false)
        }
        Err(f) => {
            rec.fail(f.message);
            // A fault may surface only now; a context that cannot synchronize is lost.
            let lost = f.context_lost || cuda::synchronize().is_err();
            (rec, lost)
        }
    }
}

/// Slack added to twice the measured enqueue cost when sizing a wait kernel.
const DEFAULT_WAIT_MARGIN_NS: u64 = 10_000;

fn measure(s: &mut Session, cell: &Cell, rec: &mut CellRecord) -> Result<(), Failure> {
    let knobs = &cell.knobs;
    let timeline = &mut s.timeline;
    let spec = &cell.launch;
    let takes = cell.kernel.and_then(|k| s.kernels.def(k).takes.clone());
    let own_copy = cell.kernel.and_then(|k| s.kernels.def(k).copy);
    // The kernel, loaded now, or (lazy) compiled now and loaded by its first launch; a
    // `[[copy]]` has none.
    let (func, lazy, mut entries, steps) = match (cell.kernel, knobs.first_launch) {
        _ if own_copy.is_some() => (None, None, vec![], StepCode::Loaded(vec![])),
        (Some(k), FirstLaunch::Lazy) => {
            let (l, compile_ms) = s
                .kernels
                .lazy(k, knobs.compile, Build::of(spec), timeline)?;
            rec.compile_ms = compile_ms;
            let steps = StepCode::Lazy(l.steps());
            (None, Some((l.kernel(), l.empty())), l.entries(), steps)
        }
        _ => {
            let (loaded, cost) = s
                .kernels
                .get(KernelKey::of(cell), Build::of(spec), timeline)?;
            if let Some(cost) = cost {
                rec.compile_ms = cost.compile_ms;
                rec.module_load_ms = Some(cost.module_load_ms);
            }
            let func = loaded.func.clone();
            check_params(&func, &sizes(&spec.args, takes.as_deref()), &loaded.entry)?;
            if spec.shared_bytes > 48 * 1024 {
                func.allow_shared_bytes(spec.shared_bytes)?;
            }
            let entries = std::iter::once(loaded.entry.clone())
                .chain(loaded.steps.iter().map(|(name, _)| name.clone()))
                .collect::<Vec<_>>();
            (
                Some(func),
                None,
                entries,
                StepCode::Loaded(loaded.steps.clone()),
            )
        }
    };
    // Nothing runs on the GPU before a lazy first launch, as in a runtime-API program.
    let loads_at_first_launch = lazy.is_some();
    let poison = if loads_at_first_launch {
        Poison::ByCopy
    } else {
        Poison::ByMemset
    };

    // Every variant and round at one point times the same inputs; further sets for
    // `rotate`, which the timed samples use in turn; `inputs = "fresh"`: data of two other
    // draws, copied in turn before each timed launch.
    let point = cell.point_key();
    let share = shares(cell);
    let (set_seeds, fresh_seeds) = seeds_of(cell);
    let mut draw = |seeds: Vec<u64>| -> Result<Vec<HostInputs>, String> {
        (seeds.into_iter())
            .map(|seed| s.inputs.get(&point, &spec.args, seed, share))
            .collect()
    };
    let seed = set_seeds[0];
    let hosts = draw(set_seeds)?;
    let fresh = draw(fresh_seeds)?;
    timeline.mark("inputs");
    refuse_managed_beyond_free(&spec.args, hosts.len())?;
    // The cell's start reading (NVML's reads take milliseconds) comes before its buffers
    // are filled, so that no wait lies between the input copies and the first launch.
    let start_read = Instant::now();
    rec.telemetry_start = s.sensor.read();
    timeline.mark("telemetry start");
    // The checked output is computed from the first set.
    let first_set = hosts[0].clone();
    let sets: Vec<Buffers> = hosts
        .into_iter()
        .map(|host| Buffers::create(&spec.args, host, poison))
        .collect::<Result<_, _>>()?;
    let buffers = &sets[0];
    let params: Vec<Vec<Param>> = sets.iter().map(|b| b.params(&spec.args)).collect();
    timeline.mark("buffers");
    let dims = dims_of(spec);
    let def = cell.kernel.map(|k| s.kernels.def(k));
    let mine = taken(&params[0], takes.as_deref());
    let (launch, lazy_empty) = match (own_copy, lazy, &func) {
        (Some(op), ..) => (copy_launch(op, &params[0], 0, 1)?, None),
        (None, Some((kernel, empty)), _) => (Launch::lazy(kernel, dims, &mine), empty),
        (None, None, Some(func)) => (Launch::new(func, dims, &mine), None),
        (None, None, None) => unreachable!("a kernel is loaded or lazy"),
    };
    let mut launch = match takes {
        Some(from) => launch.taking(from),
        None => launch,
    };
    if let Some(def) = def {
        add_steps(&mut launch, def, spec, &params[0], &steps)?;
    }
    // CUPTI finds the cell's copies among its records as it finds kernels, by name.
    let copy_records = launch.copy_records();
    entries.extend(copy_records.iter().cloned());
    let flush_buf = match knobs.cache {
        Cache::Hot => None,
        Cache::Flush { bytes, method } => {
            let kernel = match KernelKey::flush(method) {
                Some(key) => Some(s.kernels.function(key, timeline)?),
                None => None,
            };
            Some((FlushBuffer::alloc(bytes as usize)?, method, kernel))
        }
    };
    let mut flush = match &flush_buf {
        None => None,
        Some((buf, method, kernel)) => {
            Some(buf.flush(*method, kernel.as_ref(), s.facts.sm_count)?)
        }
    };
    // Event nodes around each launch of a flushed graph, and around all of a hot one.
    let (marks, whole) = match (knobs.launches, knobs.flushed_graph) {
        (Launches::Graph(n), FlushedGraph::EventNodes) if flush.is_some() => (
            (0..n)
                .map(|_| Ok((Event::new()?, Event::new()?)))
                .collect::<Result<Vec<_>, CudaError>>()?,
            Some((Event::new()?, Event::new()?)),
        ),
        _ => (Vec::new(), None),
    };
    let body = match (knobs.launches, flush.as_mut(), whole.as_ref()) {
        // With `rotate`, the graph's launches take the buffer sets in turn; with a flush,
        // each comes after one, and the graph is read by event nodes around its launches
        // or against a graph of the flushes alone.
        (Launches::Graph(n), Some(f), Some(whole)) => Body::NodeTimedGraph {
            pairs: Graph::capture(
                &mut launch,
                n,
                &params,
                Some(f.prelude()),
                Marks::EachLaunch(&marks),
            )?,
            hot_marked: Graph::capture(&mut launch, n, &params, None, Marks::EachLaunch(&marks))?,
            hot: Graph::capture(&mut launch, n, &params, None, Marks::Whole(whole))?,
            marks: &marks,
            whole,
            n,
        },
        (Launches::Graph(n), Some(f), None) => Body::FlushedGraph {
            pairs: Graph::capture(&mut launch, n, &params, Some(f.prelude()), Marks::None)?,
            flushes: Graph::capture_preludes(f.prelude(), n)?,
            n,
        },
        (Launches::Graph(n), None, _) => Body::Graph(
            Graph::capture(&mut launch, n, &params, None, Marks::None)?,
            n,
        ),
        (other, _, _) => Body::Launches(other.count()),
    };
    if let Body::FlushedGraph { .. } | Body::NodeTimedGraph { .. } = body {
        flush = None;
    }
    // The wait kernel's output: one float nobody reads.
    let wait_out = DeviceBuffer::alloc(4)?;
    let saturate = match knobs.queue {
        Queue::Idle => None,
        Queue::Saturate { .. } => {
            let spin = s.kernels.function(KernelKey::Spin, timeline)?;
            let values = [Param::Buffer(&wait_out), Param::u64(0)];
            Some(Saturate::new(Launch::new(&spin, Dims::ONE, &values))?)
        }
    };
    let mut timer = Timer::new(knobs.timer, saturate, knobs.launches.count())?;
    let mut warm = match (knobs.warmup.kernel, lazy_empty) {
        (WarmupKernel::Same, _) => None,
        // The post's empty kernel shares the measured kernel's module (a prebuilt module
        // has none: the built-in one stands in).
        (WarmupKernel::Empty, Some(empty)) => Some(Launch::lazy(empty, Dims::ONE, &[])),
        (WarmupKernel::Empty, None) => Some(Launch::new(
            &s.kernels.function(KernelKey::Empty, timeline)?,
            Dims::ONE,
            &[],
        )),
    };

    // Outputs start poisoned, so only this cell's kernel can make the check pass. Nothing
    // lies between the warm-up and the first timed launch, as in the post's programs (but
    // an L2 flush, where the cell asks for one).
    let origin = Instant::now();
    let sampler = s.sensor.sample_every(
        Duration::from_millis(s.telemetry.interval_ms),
        origin,
        rec.telemetry_start
            .clone()
            .map(|reading| (start_read, reading)),
    );
    if poison == Poison::ByMemset {
        buffers.poison_outputs()?;
    }
    timeline.mark("set-up");
    let kernel_def = cell.kernel.map(|k| s.kernels.def(k).clone());
    let host = first_set;
    // The check's reference, shared with the run's other processes.
    let reference = reference::Cache::new(s.run_cache.as_deref(), format!("{point}#{seed}"));
    let checker = Checker {
        cell,
        def: kernel_def.as_ref(),
        host: &host,
        reference: &reference,
    };
    if loads_at_first_launch {
        // The next launch loads the library: with a heap as fresh as a new program's.
        cuda::release_free_heap();
        timeline.mark("heap released");
    }
    let mut warmup = knobs.warmup.launches;
    // Launches of the measured kernel are counted as they happen (also in a cell that
    // fails later), so that a profiler's per-launch report can be cut into cells.
    if warm.is_none() && warmup > 0 {
        // The first warm-up launch is the checked one: verified before anything is timed.
        launch.enqueue().map_err(during("checked launch"))?;
        cuda::synchronize().map_err(during("checked launch"))?;
        timeline.mark("checked launch");
        rec.kernel_launches += 1;
        rec.check = Some(checker.check(&mut s.kernels, timeline, buffers, None)?);
        timeline.mark(OUTPUT_CHECK);
        warmup -= 1;
    }
    if let Queue::Saturate { wait_us } = knobs.queue {
        // Sized before the warm-up, so that nothing lies between it and the first sample.
        let wait_ns = match wait_us {
            Some(us) => us * 1000,
            None => {
                let cost = timer
                    .enqueue_cost_ns(&mut launch, &body, 5)
                    .map_err(during("sizing the wait kernel"))?;
                rec.kernel_launches += 5 * body.launches();
                (2.0 * cost) as u64 + DEFAULT_WAIT_MARGIN_NS
            }
        };
        let sat = timer.saturate.as_mut().expect("made above");
        sat.wait.set_param(1, Param::u64(wait_ns));
        rec.queue = Some(QueueRecord {
            wait_ns,
            too_short: 0,
        });
        timeline.mark("wait kernel sizing");
    }
    if knobs.cupti_collect.on {
        timer.collect(!copy_records.is_empty())?;
    }
    if warmup > 0 {
        let warm_launch = warm.as_mut().unwrap_or(&mut launch);
        method::warm_up(warm_launch, warmup, knobs.timer).map_err(during("warm-up"))?;
        timeline.mark("warm-up");
        if warm.is_none() {
            rec.kernel_launches += warmup;
        }
    }

    let n = knobs.samples_per_run() as usize;
    let mut starts = Vec::with_capacity(n + 1);
    // One timed launch: the flush and the start timestamp lie outside the timer's region.
    let mut turn = 0;
    let mut timed = |starts: &mut Vec<f64>, timeline: Option<&mut Timeline>, what: &'static str| {
        if params.len() > 1 && matches!(body, Body::Launches(_)) {
            for (i, v) in params[turn % params.len()].iter().enumerate() {
                launch.set_param(i, *v);
            }
            turn += 1;
        }
        if !fresh.is_empty() {
            buffers
                .refill(&fresh[turn % fresh.len()])
                .map_err(during("copying fresh inputs"))?;
            if params.len() == 1 {
                turn += 1;
            }
        }
        if let Some(f) = flush.as_mut() {
            f.run().map_err(during("L2 flush"))?;
            if let Some(t) = timeline {
                t.mark("L2 flush");
            }
        }
        starts.push(origin.elapsed().as_secs_f64() * 1e6);
        timer.time(&mut launch, &body).map_err(during(what))
    };
    let first = timed(&mut starts, Some(&mut *timeline), "first launch")?;
    rec.kernel_launches += body.kernel_launches();
    timeline.mark(FIRST_TIMED_LAUNCH);
    if rec.check.is_none() {
        // No same-kernel warm-up: the first timed launch alone wrote the output.
        let recorded = (knobs.timer == TimerKind::Cupti).then_some(entries.as_slice());
        rec.check = Some(checker.check(&mut s.kernels, timeline, buffers, recorded)?);
        timeline.mark(OUTPUT_CHECK);
    }
    rec.first_ns = Some(first);

    let mut samples = Vec::with_capacity(n);
    let loop_start = Instant::now();
    let mut stopper = knobs.samples.stop.map(Stopper::new);
    for _ in 0..n {
        let t = timed(&mut starts, None, "timed launch")?;
        rec.kernel_launches += body.kernel_launches();
        samples.push(t);
        if let Some(why) = stopper
            .as_mut()
            .and_then(|s| s.push(t, knobs.launches.count()))
        {
            rec.stopped = Some(why);
            break;
        }
    }
    if let (Some(s), None) = (&stopper, &rec.stopped) {
        rec.stopped = Some(s.exhausted());
    }
    let harness_wall_ns = loop_start.elapsed().as_nanos() as f64 / samples.len().max(1) as f64;
    if !samples.is_empty() {
        rec.sample_wall_ns = Some(harness_wall_ns);
    }
    if n > 0 {
        timeline.mark("steady samples");
    }
    if let (Some(q), Some(sat)) = (rec.queue.as_mut(), timer.saturate.as_ref()) {
        q.too_short = sat.too_short;
    }
    let readings = timer.finish(&entries, first, samples)?;
    if readings.cupti.is_some() {
        timeline.mark("CUPTI records");
    }
    rec.first_ns = Some(readings.first_ns);
    rec.cupti = readings.cupti;
    rec.telemetry = sampler.map(|s| s.finish()).unwrap_or_default();
    rec.telemetry_end = s.sensor.read();
    rec.samples_ns = readings.samples_ns;
    rec.starts_us = starts;
    timeline.mark("telemetry end");

    if cell.role == Role::Floor && knobs.timer == TimerKind::Events && n > 0 {
        let empty = s
            .kernels
            .get(KernelKey::Empty, Build::default(), timeline)?
            .0;
        let (image, entry) = (empty.image.clone(), empty.entry.clone());
        let (bare_wall_ns, bare_events_median_ns) = cuda::bare_events_loop(&image, &entry, n)?;
        rec.overhead = Some(Overhead {
            harness_wall_ns,
            bare_wall_ns,
            bare_events_median_ns,
        });
        timeline.mark("bare cudarc loop");
    }
    Ok(())
}
