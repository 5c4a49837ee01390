//! What one run of a cell costs by the model, for a first run: the kernel's launches (its
//! declared work at the device's peaks), each timed region's own cost (events or clock, the
//! synchronize, a flush, a wait), and the host's work around them (inputs drawn and
//! uploaded, the check and the audit's, the reference's).
//!
//! The host's constants are the H100's as the committed runs at 5ac6784 and e04683c time
//! them (accuracy-audited, trust, cold-start-audited, events, softmax, latency), each phase
//! of `cells.jsonl` against the size of what it handles. What the runner has done on the
//! GPU since (a check's compare, a draw's later cells' inputs copied there, the audit's
//! draws and regions) is counted at the DRAM peak, as the eighteen first runs at 4e9be81 on
//! an H200 bear out (reports/plan-probe).

use super::audit_rounds::{self as audit, AUDIT_SHARE_CAP, SPOTS, STAGE_PER_DRAW, STAGE_SLACK_NS};
use super::cell::{Cell, Role};
use crate::experiment::knobs::counters::{COUNTED_SAMPLES, COUNTED_WARMUP};
use crate::experiment::knobs::{
    budget::Budget, cache::Cache, flushed_graph::FlushedGraph, inputs::Inputs, launches::Launches,
    queue::Queue, timer::TimerKind,
};
use crate::experiment::{ArgValue, Experiment, Init, Kernel, LaunchSpec, Memory};

/// A worker process's start (NVML, driver, context) and exit, outside its cells, and a peer
/// program's process (its CUDA start-up, the launch it times, its exit): the run's wall time
/// less its cells, solved for both over cold-start-audited (151 workers, 30 peers, 26.4 s)
/// and first-launch (120 workers, 60 peers, about 26 s) at ca377c4: 0.147 s and 0.14 s
/// (0.20 s a worker at e04683c, before the exit overlapped the next start).
pub const PROCESS_S: f64 = 0.15;
/// A kernel build compiled by NVRTC once per run (images are shared by the run's
/// processes): 21 ms a build for the incore experiment's 24 at ca377c4 (44 ms the first in
/// its process), 25-75 ms for the committed kernels, 0.11-0.19 s for templates.
pub const COMPILE_S: f64 = 0.04;
/// The runner's own kernels (the audit's comparison, the empty, wait, flush and probe
/// kernels), compiled as one program once per run: 60 ms (trust on the H100, at 4350064).
pub const HELPERS_S: f64 = 0.06;
pub const PEER_S: f64 = 0.14;
/// What a cell run pays whatever its kernel: module load, set-up, telemetry readings,
/// records (trust: 2-4 ms a cell beside its kernel, inputs and checks).
const CELL_S: f64 = 3e-3;
/// A launch's own cost beyond its work (the launch latency a kernel of no work shows).
const LAUNCH_S: f64 = 3e-6;
/// A timed region's cost beyond its launches: the events or clock around it, the
/// synchronize, the reading (each report's floor: 13 µs per event-timed sample).
const REGION_S: f64 = 12e-6;
/// Host time per element drawn, on every core: uniform 1 ns (the 1 GiB copy's 256 Mi floats
/// in 0.22 s, the stencil's 128 Mi in 68 ms), normal 3.5 ns (softmax's 32 Mi halves in
/// 106 ms), a pointer chase 17 ns on one core (latency's 64 MiB in 0.29 s).
const DRAW_UNIFORM_S: f64 = 1e-9;
const DRAW_NORMAL_S: f64 = 3.5e-9;
const DRAW_CHASE_S: f64 = 17e-9;
/// Device memory allocated and inputs uploaded, per byte of a draw's inputs (the first cell
/// of a draw key: the cells after it copy them on the device) or of buffers the host writes
/// every run: 120 ms for the 2 GiB copy in accuracy-audited.
const BUFFER_S_PER_BYTE: f64 = 6e-11;
/// A check's compare on the GPU (since d6fa89c): a launch and its read-back of the verdict,
/// and the output and the reference's read once each at the DRAM peak (one pass since
/// this stop; a pass for bit-equal outputs came first before).
const GPU_COMPARE_S: f64 = 50e-6;
const GPU_COMPARE_READS: f64 = 2.0;
/// An output element downloaded and compared on the host against the CPU's reference.
const CPU_CHECK_S: f64 = 15e-9;
/// The CPU's float64 matmul reference per multiply-add, on the H100's 16 host cores: over
/// every element up to 512 x 512 (134 M in 12.5-15 ms), the 4096 sampled elements beyond
/// (at n = 1024, 4.2 M in 2.8-3.4 ms, a millisecond of it starting the threads).
const FULL_REFERENCE_S: f64 = 0.1e-9;
const SAMPLED_REFERENCE_S: f64 = 0.7e-9;
/// Elements of the matmul reference's output compared beyond 512 x 512 (a sample).
const SAMPLED_ELEMENTS: f64 = 4096.0;
/// A Python reference's request and reply (`check_python`), the interpreter already up.
const PYTHON_CALL_S: f64 = 2e-3;
/// A Python reference's data written, read and worked on, per byte of the launch's buffers.
const PYTHON_S_PER_BYTE: f64 = 2e-9;
/// Nsight Compute's profiling of each launch of the kernel (accuracy: 20-24 ms a launch).
const PROFILED_LAUNCH_S: f64 = 0.02;
/// A launch in a counter pass: Nsight Compute's replay of it for each group of counters,
/// with the kernel's memory saved and restored between. The memory set on the H100: about
/// 0.24 s a profiled launch in reports/counters (105 s of counter passes, some 430
/// launches) and 0.25 s in reports/l2-cache (40 s, 160 launches).
const COUNTED_LAUNCH_S: f64 = 0.25;
/// Nsight Compute's own start and end around a counter pass's worker (not measured apart:
/// a guess within the launches' share above).
pub const COUNTER_PASS_S: f64 = 3.0;
/// Host-link bytes per second each way, for copies to or from host memory.
const HOST_LINK_BYTES_PER_S: f64 = 25e9;
/// The clock probe before and after a cell run (3.4 ms each).
const PROBE_S: f64 = 7e-3;

/// What one run of a cell costs by the model.
pub struct Modelled {
    /// The kernel's launches: checked, warm-up, timed (with what each timed region adds),
    /// audited.
    pub launches_s: f64,
    /// The rest of a run: buffers, checks, the audit's draw, probes, the cell's fixed cost.
    pub work_s: f64,
    /// Once per point and run: its CPU reference computed.
    pub per_point_s: f64,
    /// Once per draw key and run (`Cell::draw_key`): its inputs drawn.
    pub per_draw_s: f64,
    /// Whether the kernel declares its work (else its time is a guess).
    pub declared: bool,
    /// Whether the budget is expected to stop the cell.
    pub stopped: bool,
    /// The cell's counter pass, once for all its runs: its launches under Nsight Compute
    /// (a cold cell's flushes too) and its work again.
    pub counted_s: f64,
}

/// The model of one run of `c`; `probed`: its kernel's time per launch as `plan --probe`
/// measured it, which replaces its declared work at the peaks.
pub fn model(exp: &Experiment, c: &Cell, kernel: Option<&Kernel>, probed: Option<f64>) -> Modelled {
    let k = &c.knobs;
    let spec = &c.launch;
    let (kernel_s, declared) = match probed {
        Some(s) => (s, true),
        None => launch_seconds(exp, spec, kernel),
    };
    let count = k.launches.count() as f64;
    let profiled = match k.timer {
        TimerKind::Profiler => PROFILED_LAUNCH_S,
        _ => 0.0,
    };
    // A region of `launches`: a timed one's, or an audit's shorter one.
    let region_of = |launches: f64| region_seconds(exp, c, kernel_s + profiled, launches);
    let gpu_s = count * kernel_s;
    let region_s = region_of(count);
    let planned = k.samples_per_run();
    let (samples, stopped) = samples_taken(k, c.runs(), planned, gpu_s, region_s);
    let warmup_s = k.warmup.launches as f64 * (kernel_s + profiled);
    let checked = kernel.is_some_and(Kernel::is_checked);
    // The checked launch (the audit's launches are `audit_regions`').
    let extra = match checked {
        true => kernel_s + REGION_S + profiled,
        false => 0.0,
    };
    let launches_s = (1 + samples) as f64 * region_s + warmup_s + extra;
    let sets = k.rotate.sets(k.launches) as f64;
    let (inputs, device) = (input_bytes(spec) * sets, spec.device_bytes() as f64 * sets);
    let mut work_s = CELL_S;
    if exp.telemetry.clock_probe {
        work_s += PROBE_S;
    }
    // Drawn and uploaded once per draw key and run, the cells after it copying the inputs
    // on the device (the audit draws its own on the GPU), the outputs allocated and
    // poisoned there; written by the host into managed and mapped buffers every cell run.
    let (mut per_point_s, mut per_draw_s) = (0.0, 0.0);
    let draw = draw_seconds(spec);
    let first_set = input_bytes(spec);
    match (host_written(spec), k.process.fresh.is_some()) {
        (true, _) => work_s += draw + device * BUFFER_S_PER_BYTE,
        // A fresh process uploads the draw (kept on the host for the run) itself.
        (false, true) => {
            per_draw_s += draw;
            work_s += inputs * BUFFER_S_PER_BYTE + (device - inputs).max(0.0) / dram(exp);
        }
        // The first set's inputs once per draw key; rotating sets after it every run.
        (false, false) => {
            per_draw_s += draw + first_set * BUFFER_S_PER_BYTE;
            work_s += (inputs - first_set) * BUFFER_S_PER_BYTE
                + (2.0 * first_set + (device - inputs).max(0.0)) / dram(exp);
        }
    }
    if let Some(kernel) = kernel.filter(|_| checked) {
        let (check_s, audit_s, reference_s) = check_seconds(exp, kernel, c);
        let samples_s = samples as f64 * region_s;
        // Where a region is several launches, each audited one is followed by launches alone.
        let alone_s = match count > 1.0 && k.timer != TimerKind::Cupti && !k.cupti_collect.on {
            true => {
                SPOTS as f64 * (kernel_s + REGION_S + alone_check_seconds(exp, kernel, c, audit_s))
            }
            false => 0.0,
        };
        // Where a timed region is many launches, the audit's hold fewer.
        let (short, capture_s) = audit_region_launches(c, samples, kernel_s);
        let each = (
            region_of(short) + stage_seconds(exp, spec),
            audit_s,
            alone_s,
        );
        work_s += check_s + capture_s + audit_regions(c, kernel, each, samples_s);
        per_point_s += reference_s;
    }
    let counted_s = match k.counters.wanted() && c.role == Role::Measure {
        true => {
            let launches = 2 * u64::from(checked)
                + k.warmup.launches.min(COUNTED_WARMUP)
                + 1
                + k.samples.count.min(COUNTED_SAMPLES);
            let profiled = match k.cache {
                Cache::Flush { .. } => 2.0,
                Cache::Hot => 1.0,
            };
            launches as f64 * count * (kernel_s + profiled * COUNTED_LAUNCH_S) + work_s
        }
        false => 0.0,
    };
    Modelled {
        launches_s,
        work_s,
        per_point_s,
        per_draw_s,
        declared: declared || c.role == Role::Floor,
        stopped,
        counted_s,
    }
}

/// Steady samples a run takes, and whether the budget ends them before the count or stop
/// rule would: all it asks for; under an adaptive stop as many as its minimum GPU time takes
/// (where the project's cells stopped, their medians precise by then) within its time
/// limit; as many as the budget lets it; never fewer than each one's minimum count.
fn samples_taken(
    k: &crate::experiment::Knobs,
    runs: u32,
    planned: u64,
    gpu_s: f64,
    region_s: f64,
) -> (u64, bool) {
    let mut n = planned;
    if let Some(stop) = k.samples.stop {
        // Each run takes its share of the minimum GPU time and the timeout, as the worker's
        // `Stopper` gives it.
        let share = f64::from(runs.max(1));
        let by_time = (stop.timeout.as_secs_f64() / share / region_s).ceil() as u64;
        let by_gpu = match gpu_s > 0.0 {
            true => (stop.min_gpu_ns * 1e-9 / share / gpu_s).ceil() as u64,
            false => 0,
        };
        n = n.min(by_gpu.min(by_time).max(stop.min_samples));
    }
    if let Budget::Gpu {
        gpu_time,
        min_samples,
    } = k.budget
    {
        // What the worker's meter counts: GPU time, or for CUPTI and the profiler the
        // loop's wall time.
        let per = match k.timer.reads_each_sample() {
            true => gpu_s,
            false => region_s,
        };
        let share = gpu_time.as_secs_f64() / f64::from(runs.max(1));
        if per > 0.0 {
            let by_budget = ((share / per).ceil() as u64).max(min_samples);
            if by_budget < n {
                return (by_budget, true);
            }
        }
    }
    (n, false)
}

/// A run's audit: where it sits among the timed launches, the first round's regions (as
/// `audit::first_round` gives them over the cell's runs, shared among them: their floor, and
/// the others within the planned share of the samples' time) and the later
/// rounds' within [`AUDIT_SHARE_CAP`] of the samples' `samples_s`, each region `region_s`
/// with its stage and each audited one checked (`check_s`) and followed by its launches alone
/// (`alone_s`, where a region is several launches); else the weaker audit's one launch after
/// the samples, and its check.
fn audit_regions(
    c: &Cell,
    kernel: &Kernel,
    (region_s, check_s, alone_s): (f64, f64, f64),
    samples_s: f64,
) -> f64 {
    let k = &c.knobs;
    let (samples, runs) = (k.samples_per_run() as usize, c.runs() as usize);
    // A `[[copy]]` is checked, not audited.
    if kernel.copy.is_some() {
        return 0.0;
    }
    let weaker = k.timer == TimerKind::Profiler
        || k.rotate.sets(k.launches) > 1
        || k.inputs == Inputs::Fresh
        || kernel.copies();
    let add = |a: [usize; 3], b: [usize; 3]| [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
    // An unjudged cell runs its audited regions alone.
    let run = |counts| audit::kinds_run(audit::unjudged(c).is_none(), counts);
    let all = (0..runs)
        .map(|rank| run(audit::first_round(samples, runs, rank)))
        .fold([0; 3], add);
    let floor = (0..runs)
        .map(|rank| run(audit::run_floor(samples, runs, rank)))
        .fold([0; 3], add);
    // The weaker audit: one launch after the samples, in one of the cell's runs.
    if weaker || all[0] == 0 {
        return (region_s + check_s) / runs as f64;
    }
    // Among the timed launches, each audited region's check and the launches alone after it.
    let check_s = check_s + alone_s;
    let cost =
        |[a, d, p]: [usize; 3]| ((a + d + p) as f64 * region_s + a as f64 * check_s) / runs as f64;
    // The first round's floor, and its others while all stay within the planned share of
    // the samples.
    let first = cost(floor).max(cost(all).min(audit::PLANNED_SHARE * samples_s));
    // Later rounds, each a whole round: the second in the next ROUND samples, each after in
    // twice as many.
    let [a, d, p] = run(audit::counts(usize::MAX));
    let round_s = (a + d + p) as f64 * region_s + a as f64 * check_s;
    let (mut later, mut span) = (0.0, audit::ROUND);
    let mut covered = audit::ROUND;
    while covered < samples {
        later += round_s;
        covered += span;
        span *= 2;
    }
    first + later.min(AUDIT_SHARE_CAP * samples_s)
}

/// A timed region of `launches` of `c`'s kernel, each `launch_s` (under the profiler, what it
/// adds too): its launches, the events or clock around it, its wait kernel, fresh inputs and
/// flushes (a flushed graph holds a flush per launch, and the graph of flushes alone is timed
/// too).
fn region_seconds(exp: &Experiment, c: &Cell, launch_s: f64, launches: f64) -> f64 {
    let k = &c.knobs;
    let flush_s = match k.cache {
        Cache::Flush { bytes, .. } => bytes as f64 / dram(exp) + REGION_S,
        Cache::Hot => 0.0,
    };
    let flushes = match k.launches {
        Launches::Graph(_) => 2.0 * launches,
        _ => 1.0,
    };
    let wait_s = match k.queue {
        Queue::Saturate { wait_us: Some(us) } => us as f64 * 1e-6,
        // Released by the host once the region is enqueued: the enqueue itself.
        Queue::Saturate { wait_us: None } => launches * LAUNCH_S,
        Queue::Idle => 0.0,
    };
    let fresh_s = match k.inputs {
        Inputs::Fresh => input_bytes(&c.launch) * BUFFER_S_PER_BYTE,
        Inputs::Same => 0.0,
    };
    launches * launch_s + REGION_S + wait_s + fresh_s + flushes * flush_s
}

/// Launches in each of the audit's regions of `c`, whose runs take `samples` samples of
/// `kernel_s` a launch (`audit_rounds::region_launches`; a timed region's where the timer
/// reads the regions only after the samples), and what capturing them as a graph costs.
fn audit_region_launches(c: &Cell, samples: u64, kernel_s: f64) -> (f64, f64) {
    let k = &c.knobs;
    let n = k.launches.count();
    let graphs = match (k.launches, k.cache, k.flushed_graph) {
        (Launches::Graph(_), Cache::Flush { .. }, FlushedGraph::EventNodes) => 3,
        (Launches::Graph(_), Cache::Flush { .. }, _) => 2,
        (Launches::Graph(_), ..) => 1,
        _ => 0,
    };
    if matches!(k.timer, TimerKind::Cupti | TimerKind::Profiler) {
        return (n as f64, 0.0);
    }
    let span = (samples as usize).min(audit::ROUND);
    let round = audit::first_round(span, c.runs() as usize, 0);
    let regions = audit::kinds_run(audit::unjudged(c).is_none(), round)
        .iter()
        .sum();
    let short = audit::region_launches(n, (span, regions), kernel_s * 1e9, graphs);
    let capture_ns = match short < n {
        true => (short * graphs) as f64 * audit::GRAPH_CAPTURE_NS_PER_LAUNCH,
        false => 0.0,
    };
    (short as f64, capture_ns * 1e-9)
}

/// A region's stage: the held inputs read back and the kernel's inputs drawn, each at the
/// DRAM peak, and its pause.
fn stage_seconds(exp: &Experiment, spec: &LaunchSpec) -> f64 {
    let read_and_draw = 2.0 * input_bytes(spec) / dram(exp);
    STAGE_PER_DRAW * read_and_draw + STAGE_SLACK_NS as f64 * 1e-9 + LAUNCH_S
}

/// A launch of the kernel (and its steps) at the device's peaks: its declared work; where
/// it declares none, a matmul check's 2 m n k FLOPs, else its buffers crossing DRAM once.
/// And whether it declared its work.
fn launch_seconds(exp: &Experiment, spec: &LaunchSpec, kernel: Option<&Kernel>) -> (f64, bool) {
    let launches = 1.0 + spec.steps.len() as f64;
    let Some(kernel) = kernel else {
        return (LAUNCH_S, true);
    };
    let bytes_per_s = match kernel.copy {
        Some(_) if kernel.on_host(0) || kernel.on_host(1) => HOST_LINK_BYTES_PER_S,
        _ => dram(exp),
    };
    let flops_peak = exp.facts.flops_peak(&kernel.counted_as());
    let declared = spec.bytes.is_some() || spec.flops.is_some();
    let matmul = match (&kernel.check, &spec.check_dims[..]) {
        (Some(c), [m, k, n]) if c.reference == "matmul" => Some(2.0 * (m * k * n) as f64),
        _ => None,
    };
    let (bytes, flops) = match declared {
        true => (spec.bytes.unwrap_or(0.0), spec.flops),
        false => (spec.buffer_bytes() as f64, matmul),
    };
    let flops_s = match (flops, flops_peak) {
        (Some(f), Some(peak)) => f / peak,
        _ => 0.0,
    };
    let work = (bytes / bytes_per_s).max(flops_s);
    (launches * LAUNCH_S + work, declared)
}

/// A check's compare of the outputs with a reference kernel's, on the GPU.
fn reference_compare_seconds(exp: &Experiment, outputs: &[usize], spec: &LaunchSpec) -> f64 {
    let outputs: f64 = outputs.iter().map(|&o| bytes(spec, o)).sum();
    GPU_COMPARE_S + GPU_COMPARE_READS * outputs / dram(exp)
}

/// What a launch alone after an audited region costs beside the launch: a compare with the
/// outputs its region's check left, where a reference kernel made them; else the check of
/// `audit_s` again.
fn alone_check_seconds(exp: &Experiment, kernel: &Kernel, c: &Cell, audit_s: f64) -> f64 {
    match (&kernel.check_kernel, &kernel.check_python) {
        (Some(kc), None) => reference_compare_seconds(exp, &kc.outputs, &c.launch),
        _ => audit_s,
    }
}

/// A check's cost per check (outputs downloaded and compared; a `copy` check compares on
/// the GPU), and its CPU reference's once per point.
fn check_seconds(exp: &Experiment, kernel: &Kernel, c: &Cell) -> (f64, f64, f64) {
    let spec = &c.launch;
    if let (Some(reference), Some(kc)) = (&c.reference_launch, &kernel.check_kernel) {
        let theirs = launch_seconds(exp, reference, Some(&exp.kernels[kc.kernel])).0;
        // Compared on the GPU; the reference's buffers made once a cell, copied there from
        // the draw's; the audit draws its own into them on the GPU.
        let compare = reference_compare_seconds(exp, &kc.outputs, spec);
        let buffers = 2.0 * reference.device_bytes() as f64 / dram(exp);
        let check = compare + theirs + buffers;
        return (check, compare + theirs + buffers / 2.0, 0.0);
    }
    if let Some(pc) = &kernel.check_python {
        // The data set through files both ways, the function's own time unknown: counted
        // at the per-element cost of a NumPy expression, plus a request's round trip.
        let bytes = spec.device_bytes() as f64;
        let outputs: f64 = pc.outputs.iter().map(|&o| elements(spec, o)).sum();
        let each = PYTHON_CALL_S + bytes * PYTHON_S_PER_BYTE + outputs * CPU_CHECK_S;
        return (each, each, 0.0);
    }
    let Some(check) = &kernel.check else {
        return (0.0, 0.0, 0.0);
    };
    if check.reference == "copy" {
        let s = bytes(spec, check.output) / dram(exp);
        return (s, s, 0.0);
    }
    let [m, k, n] = match spec.check_dims[..] {
        [m, k, n] => [m as f64, k as f64, n as f64],
        _ => {
            let s = elements(spec, check.output) * CPU_CHECK_S;
            return (s, s, 0.0);
        }
    };
    // The audit's matmul reference runs on the GPU at a sample of cells.
    match m * n <= 512.0 * 512.0 {
        true => (
            m * n * CPU_CHECK_S,
            SAMPLED_ELEMENTS * CPU_CHECK_S,
            m * n * k * FULL_REFERENCE_S,
        ),
        false => (
            SAMPLED_ELEMENTS * CPU_CHECK_S,
            SAMPLED_ELEMENTS * CPU_CHECK_S,
            SAMPLED_ELEMENTS * k * SAMPLED_REFERENCE_S,
        ),
    }
}

fn dram(exp: &Experiment) -> f64 {
    exp.facts.dram_peak().unwrap_or(1e12)
}

fn elements(spec: &LaunchSpec, arg: usize) -> f64 {
    match &spec.args[arg] {
        ArgValue::Buffer { len, .. } => *len as f64,
        ArgValue::Scalar { .. } => 0.0,
    }
}

fn bytes(spec: &LaunchSpec, arg: usize) -> f64 {
    match &spec.args[arg] {
        ArgValue::Buffer { dtype, len, .. } => (*len * dtype.size()) as f64,
        ArgValue::Scalar { .. } => 0.0,
    }
}

/// Bytes of the buffers the kernel reads (not written by it).
fn input_bytes(spec: &LaunchSpec) -> f64 {
    (spec.args.iter().enumerate())
        .filter(|(_, a)| matches!(a, ArgValue::Buffer { init, .. } if !init.is_written()))
        .map(|(i, _)| bytes(spec, i))
        .sum()
}

/// The host's time to draw the inputs drawn at random.
fn draw_seconds(spec: &LaunchSpec) -> f64 {
    (spec.args.iter())
        .map(|a| match a {
            ArgValue::Buffer { init, len, .. } => {
                *len as f64
                    * match init {
                        Init::Uniform(..) => DRAW_UNIFORM_S,
                        Init::Normal(..) => DRAW_NORMAL_S,
                        Init::Chase(_) => DRAW_CHASE_S,
                        _ => 0.0,
                    }
            }
            ArgValue::Scalar { .. } => 0.0,
        })
        .sum()
}

/// Whether the host writes the cell's inputs itself (managed or mapped memory), every run.
fn host_written(spec: &LaunchSpec) -> bool {
    (spec.args.iter()).any(|a| {
        matches!(a, ArgValue::Buffer { memory: Memory::Managed | Memory::Mapped, init, .. } if !init.is_written())
    })
}
