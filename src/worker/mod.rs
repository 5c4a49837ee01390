//! The worker: a process of the same binary that opens the device, runs the cells of its
//! job in order and streams each finished cell to the parent as one JSON line.

pub mod compile;
mod cupti;
pub mod gpu;
pub mod reference;
mod timeline;

use crate::experiment::{
    self, expr, Cache, Compile, Dtype, Experiment, FlushMethod, Init, ResolvedArg, ResolvedLaunch,
    TimerKind, WarmupKernel,
};
use crate::method::flush::Flush;
use crate::method::{
    self,
    probe::{Probe, Reading},
    stop::Stopper,
    timer::{Body, Saturate, Timer},
};
use crate::plan::{Cell, Plan, Role};
use crate::protocol::{
    CellRecord, CuptiRecord, Job, Message, Overhead, QueueRecord, Startup, Status,
};
use crate::telemetry::{Sampler, Sensor};
use gpu::{cuda_err, DeviceBuffer, Gpu, Graph, Launch, Module};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::collections::hash_map::{Entry, HashMap};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};
use timeline::Timeline;

/// The built-in empty kernel: warm-up with `warmup_kernel = "empty"` and the floor cells.
pub const EMPTY_SOURCE: &str = include_str!("../../kernels/empty.cu");
const EMPTY_ENTRY: &str = "empty";
/// The built-in L2 flush kernels, for `flush_method = "kernel"` (write) and `"read"`.
const FLUSH_SOURCE: &str = include_str!("../../kernels/flush.cu");
const FLUSH_ENTRY: &str = "flush_l2";
const FLUSH_READ_ENTRY: &str = "flush_l2_read";
/// The built-in clock probe, for `[telemetry] clock_probe = true`.
const PROBE_SOURCE: &str = include_str!("../../kernels/clock_probe.cu");
const PROBE_ENTRY: &str = "clock_probe";
/// The built-in wait kernel, for `queue = "saturate"`.
const SPIN_SOURCE: &str = include_str!("../../kernels/spin.cu");
const SPIN_ENTRY: &str = "spin";

/// Phase names the report looks for.
pub const FIRST_TIMED_LAUNCH: &str = "first timed launch";
pub const OUTPUT_CHECK: &str = "output check";

/// Exit code of a worker whose CUDA context broke: the parent starts a new one for the rest.
pub const EXIT_CONTEXT_LOST: u8 = 3;

fn send(msg: &Message) {
    let mut out = std::io::stdout().lock();
    let line = serde_json::to_string(msg).expect("messages serialize");
    // A parent that went away cannot be told anything; the next write fails the same way.
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}

fn fatal(error: String) -> ExitCode {
    send(&Message::Fatal { error });
    ExitCode::FAILURE
}

/// Entry point of `runner __worker`: a [`Job`] on stdin, [`Message`]s on stdout.
pub fn main() -> ExitCode {
    let (entry, entry_wall) = (Instant::now(), SystemTime::now());
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        return fatal(format!("cannot read the job: {e}"));
    }
    let job: Job = match serde_json::from_str(&input) {
        Ok(j) => j,
        Err(e) => return fatal(format!("malformed job: {e}")),
    };
    let mut timeline = Timeline::from_spawn(job.spawned_unix_ns, entry, entry_wall);
    let exp = match Experiment::parse(&job.experiment_path, &job.experiment_text) {
        Ok(e) => e,
        Err(e) => return fatal(e.to_string()),
    };
    let plan = match Plan::new(&exp) {
        Ok(p) => p,
        Err(e) => return fatal(e),
    };
    timeline.mark("job set-up");
    let gpu = match Gpu::open(0, &mut timeline) {
        Ok(g) => g,
        Err(e) => return fatal(e),
    };
    let sensor = Sensor::open(&gpu.info.uuid);
    let mut device = gpu.info.clone();
    device.driver_version = sensor.driver_version();
    send(&Message::Ready {
        device,
        startup: Startup {
            driver_init_ms: timeline.ms_of(gpu::DRIVER_INIT).unwrap_or_default(),
            context_ms: timeline.ms_of(gpu::CONTEXT).unwrap_or_default(),
        },
    });
    timeline.mark("NVML open");

    let mut session = Session {
        gpu: &gpu,
        sensor: &sensor,
        exp: &exp,
        kernels: Kernels::default(),
        timeline,
        probe: None,
        inputs: InputCache::default(),
    };
    if job.prime {
        for run in &job.runs {
            if let Err(e) = session.load_all(&plan.cells[run.cell]) {
                return fatal(e);
            }
        }
        return ExitCode::SUCCESS;
    }
    if job.gpu_warmup_s > 0.0 {
        if let Err(e) = session.warm_gpu(Duration::from_secs_f64(job.gpu_warmup_s)) {
            return fatal(e);
        }
    }
    for (i, run) in job.runs.iter().enumerate() {
        if i > 0 {
            session.timeline.skip();
        }
        let cell = &plan.cells[run.cell];
        let (record, context_lost) = run_cell(&mut session, cell, run.process);
        send(&Message::Cell(Box::new(record)));
        if context_lost {
            return ExitCode::from(EXIT_CONTEXT_LOST);
        }
    }
    ExitCode::SUCCESS
}

/// A compiled and loaded kernel, kept for the life of the process.
struct Loaded {
    cubin: Vec<u8>,
    entry: String,
    _module: Module,
    func: cudarc::driver::sys::CUfunction,
}

/// Kernels loaded so far in this process, by experiment index (`None`: the empty kernel).
#[derive(Default)]
struct Kernels(HashMap<KernelKey, Loaded>);

/// Which kernel: one of the experiment's as a cell compiles it, or a built-in (always a
/// CUBIN for the device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum KernelKey {
    Experiment(usize, Compile),
    Empty,
    Flush,
    FlushRead,
    Spin,
    Probe,
}

impl KernelKey {
    fn of(cell: &Cell) -> KernelKey {
        cell.kernel.map_or(KernelKey::Empty, |k| {
            KernelKey::Experiment(k, cell.knobs.compile)
        })
    }

    /// The kernel an L2 flush launches (none for a memset).
    fn flush(method: FlushMethod) -> Option<KernelKey> {
        match method {
            FlushMethod::Memset => None,
            FlushMethod::Kernel => Some(KernelKey::Flush),
            FlushMethod::Read => Some(KernelKey::FlushRead),
        }
    }

    /// How the phases of loading it are named: `module load`, `module load (empty kernel)`.
    fn phase(self, what: &str) -> String {
        match self {
            KernelKey::Experiment(..) => what.to_string(),
            KernelKey::Empty => format!("{what} (empty kernel)"),
            KernelKey::Flush => format!("{what} (flush kernel)"),
            KernelKey::FlushRead => format!("{what} (read flush kernel)"),
            KernelKey::Spin => format!("{what} (wait kernel)"),
            KernelKey::Probe => format!("{what} (clock probe)"),
        }
    }
}

/// What loading a kernel cost the run that loaded it first in its process.
struct LoadCost {
    compile_ms: f64,
    module_load_ms: f64,
}

impl Kernels {
    /// The kernel, compiling and loading it on first use (with what that cost, also marked
    /// on `timeline`).
    fn get(
        &mut self,
        exp: &Experiment,
        gpu: &Gpu,
        index: KernelKey,
        timeline: &mut Timeline,
    ) -> Result<(&Loaded, Option<LoadCost>), String> {
        let slot = match self.0.entry(index) {
            Entry::Occupied(o) => return Ok((o.into_mut(), None)),
            Entry::Vacant(v) => v,
        };
        let (source, file, entry, how) = match index {
            KernelKey::Experiment(k, how) => {
                let k = &exp.kernels[k];
                (
                    k.source_text.as_str(),
                    k.source.clone(),
                    k.entry.as_str(),
                    how,
                )
            }
            builtin => {
                let (source, file, entry) = match builtin {
                    KernelKey::Empty => (EMPTY_SOURCE, "kernels/empty.cu", EMPTY_ENTRY),
                    KernelKey::Flush => (FLUSH_SOURCE, "kernels/flush.cu", FLUSH_ENTRY),
                    KernelKey::FlushRead => (FLUSH_SOURCE, "kernels/flush.cu", FLUSH_READ_ENTRY),
                    KernelKey::Spin => (SPIN_SOURCE, "kernels/spin.cu", SPIN_ENTRY),
                    KernelKey::Probe => (PROBE_SOURCE, "kernels/clock_probe.cu", PROBE_ENTRY),
                    KernelKey::Experiment(..) => unreachable!("matched above"),
                };
                (source, file.to_string(), entry, Compile::DEFAULT)
            }
        };
        let compiled = compile::compile(
            source,
            &file,
            entry,
            how,
            (gpu.facts.cc_major, gpu.facts.cc_minor),
        )?;
        timeline.mark(&index.phase("NVRTC compile"));
        let t = Instant::now();
        let module = Module::load(&compiled.image)?;
        let module_load_ms = gpu::ms(t);
        timeline.mark(&index.phase("module load"));
        let func = module.function(&compiled.lowered_entry)?;
        timeline.mark(&index.phase("function lookup"));
        let cost = LoadCost {
            compile_ms: compiled.compile_ms,
            module_load_ms,
        };
        let loaded = slot.insert(Loaded {
            cubin: compiled.image,
            entry: compiled.lowered_entry,
            _module: module,
            func,
        });
        Ok((loaded, Some(cost)))
    }
}

/// A cell's failure, and whether it broke the context.
struct Failure {
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

fn driver_failure(what: &str, e: cudarc::driver::result::DriverError) -> Failure {
    Failure {
        message: cuda_err(what, e),
        context_lost: gpu::is_sticky(&e),
    }
}

/// What a worker keeps across the cells of its job.
struct Session<'a> {
    gpu: &'a Gpu,
    sensor: &'a Sensor,
    exp: &'a Experiment,
    kernels: Kernels,
    timeline: Timeline,
    /// The clock probe, made on first use when the experiment asks for it.
    probe: Option<Probe>,
    inputs: InputCache,
}

impl Session<'_> {
    /// Keeps every SM busy writing a buffer twice the L2's size for `span` (the
    /// experiment's `gpu_warmup`), so the first cell does not meet an idle GPU.
    fn warm_gpu(&mut self, span: Duration) -> Result<(), String> {
        let func = self
            .kernels
            .get(self.exp, self.gpu, KernelKey::Flush, &mut self.timeline)?
            .0
            .func;
        let bytes = 2 * self.gpu.facts.l2_bytes as usize;
        let mut busy = Flush::new(
            bytes,
            FlushMethod::Kernel,
            Some(func),
            self.gpu.facts.sm_count,
        )?;
        let start = Instant::now();
        while start.elapsed() < span {
            busy.run(self.gpu).map_err(|e| cuda_err("GPU warm-up", e))?;
        }
        self.timeline.mark("GPU warm-up");
        Ok(())
    }

    /// The SM clock as the probe reads it now, when the experiment asks for probes.
    fn probe(&mut self) -> Result<Option<Reading>, String> {
        if !self.exp.telemetry.clock_probe {
            return Ok(None);
        }
        if self.probe.is_none() {
            let func = self
                .kernels
                .get(self.exp, self.gpu, KernelKey::Probe, &mut self.timeline)?
                .0
                .func;
            self.probe = Some(Probe::new(func)?);
        }
        let reading = self.probe.as_mut().expect("made above").read(self.gpu)?;
        self.timeline.mark("clock probe");
        Ok(Some(reading))
    }

    /// Compiles and loads every kernel `cell` launches (what a priming process does).
    fn load_all(&mut self, cell: &Cell) -> Result<(), String> {
        let mut keys = vec![KernelKey::of(cell)];
        if cell.knobs.warmup_kernel == WarmupKernel::Empty {
            keys.push(KernelKey::Empty);
        }
        if let Cache::Flush { method, .. } = cell.knobs.cache {
            keys.extend(KernelKey::flush(method));
        }
        if cell.knobs.saturate.is_some() {
            keys.push(KernelKey::Spin);
        }
        for key in keys {
            self.kernels
                .get(self.exp, self.gpu, key, &mut self.timeline)?;
        }
        Ok(())
    }
}

/// Runs one cell; the flag says whether the CUDA context is lost.
fn run_cell(s: &mut Session, cell: &Cell, process: u32) -> (CellRecord, bool) {
    let gpu = s.gpu;
    let t0 = Instant::now();
    let mut rec = CellRecord::failed(cell.index, &cell.id, process, String::new());
    rec.cuda_env = std::env::vars()
        .filter(|(k, _)| k.starts_with("CUDA_"))
        .collect();
    let outcome = s.probe().map_err(Failure::from).and_then(|before| {
        measure(s, cell, &mut rec)?;
        if let (Some(b), Some(a)) = (before, s.probe()?) {
            rec.probe_mhz = Some((b.mhz, a.mhz));
            // Under the profiler the probes themselves are profiled: host time means nothing.
            if cell.knobs.env.profiler.is_none() {
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
            let lost = f.context_lost || gpu.synchronize().is_err();
            (rec, lost)
        }
    }
}

fn measure(s: &mut Session, cell: &Cell, rec: &mut CellRecord) -> Result<(), Failure> {
    let (gpu, sensor, exp, kernels) = (s.gpu, s.sensor, s.exp, &mut s.kernels);
    let inputs = &mut s.inputs;
    let timeline = &mut s.timeline;
    let (loaded, cost) = kernels.get(exp, gpu, KernelKey::of(cell), timeline)?;
    if let Some(cost) = cost {
        rec.compile_ms = Some(cost.compile_ms);
        rec.module_load_ms = Some(cost.module_load_ms);
    }
    let func = loaded.func;
    let spec = match cell.kernel {
        Some(k) => exp.kernels[k].resolve(&cell.point, &gpu.facts)?,
        None => ResolvedLaunch {
            grid: (1, 1, 1),
            block: (1, 1, 1),
            shared_bytes: 0,
            args: vec![],
            check_dims: vec![],
        },
    };

    // Every variant and round at one point times the same inputs.
    let point = cell
        .id
        .rsplit_once('/')
        .map_or(cell.id.as_str(), |(p, _)| p);
    let seed = fnv1a(point.as_bytes());
    let buffers = Buffers::create(&spec.args, inputs.get(point, &spec.args, seed))?;
    // Further sets for `rotate`: the timed samples use the sets in turn, each set's data
    // out of L2 by the time it comes round again when the sets together exceed it.
    let sets = expr::eval_int(
        &cell.knobs.rotate,
        &experiment::scope(&cell.point, &gpu.facts),
    )?;
    let rotation: Vec<Buffers> = (1..sets)
        .map(|i| {
            let seed = seed.wrapping_add(i as u64);
            Buffers::create(&spec.args, inputs.get(point, &spec.args, seed))
        })
        .collect::<Result<_, _>>()?;
    let params: Vec<Vec<Vec<u8>>> = std::iter::once(&buffers)
        .chain(&rotation)
        .map(|b| b.param_values(&spec.args))
        .collect();
    timeline.mark("buffers");
    let mut launch = Launch::new(func, spec.grid, spec.block, spec.shared_bytes, &params[0]);
    let body = if cell.knobs.graph {
        Body::Graph(
            Graph::capture(&mut launch, cell.knobs.launches)?,
            cell.knobs.launches,
        )
    } else {
        Body::Launches(cell.knobs.launches)
    };
    // The wait kernel's output: one float nobody reads.
    let wait_out = DeviceBuffer::alloc(4)?;
    let saturate = match cell.knobs.saturate {
        None => None,
        Some(_) => {
            let func = kernels.get(exp, gpu, KernelKey::Spin, timeline)?.0.func;
            let values = [
                wait_out.ptr.to_ne_bytes().to_vec(),
                0u64.to_ne_bytes().to_vec(),
            ];
            Some(Saturate::new(Launch::new(
                func,
                (1, 1, 1),
                (1, 1, 1),
                0,
                &values,
            ))?)
        }
    };
    let mut timer = Timer::new(cell.knobs.timer, saturate)?;
    let mut warm = match cell.knobs.warmup_kernel {
        WarmupKernel::Same => None,
        WarmupKernel::Empty => Some(Launch::new(
            kernels.get(exp, gpu, KernelKey::Empty, timeline)?.0.func,
            (1, 1, 1),
            (1, 1, 1),
            0,
            &[],
        )),
    };

    let mut flush = match &cell.knobs.cache {
        Cache::Hot => None,
        Cache::Flush { bytes, method } => {
            let bytes = expr::eval_int(bytes, &experiment::scope(&cell.point, &gpu.facts))?;
            let kernel = match KernelKey::flush(*method) {
                Some(key) => Some(kernels.get(exp, gpu, key, timeline)?.0.func),
                None => None,
            };
            Some(Flush::new(
                bytes as usize,
                *method,
                kernel,
                gpu.facts.sm_count,
            )?)
        }
    };

    // Outputs start poisoned, so only this cell's kernel can make the check pass. Nothing
    // lies between the warm-up and the first timed launch, as in the post's programs (but
    // an L2 flush, where the cell asks for one).
    rec.telemetry_start = sensor.read();
    let origin = Instant::now();
    let sampler = sensor.sample_every(Duration::from_millis(exp.telemetry.interval_ms), origin);
    buffers.poison_outputs()?;
    timeline.mark("set-up");
    let mut warmup = cell.knobs.warmup;
    // Launches of the measured kernel are counted as they happen (also in a cell that
    // fails later), so that a profiler's per-launch report can be cut into cells.
    if warm.is_none() && warmup > 0 {
        // The first warm-up launch is the checked one: verified before anything is timed.
        launch
            .enqueue()
            .map_err(|e| driver_failure("checked launch", e))?;
        gpu.synchronize()
            .map_err(|e| driver_failure("checked launch", e))?;
        timeline.mark("checked launch");
        rec.kernel_launches += 1;
        rec.check = Some(buffers.check(exp, cell, &spec)?);
        timeline.mark(OUTPUT_CHECK);
        warmup -= 1;
    }
    if let Some(asked) = cell.knobs.saturate {
        // Sized before the warm-up, so that nothing lies between it and the first sample.
        let wait_ns = match asked {
            Some(us) => us * 1000,
            None => {
                let cost = timer
                    .enqueue_cost_ns(gpu, &mut launch, &body, 5)
                    .map_err(|e| driver_failure("sizing the wait kernel", e))?;
                rec.kernel_launches += 5 * body.launches();
                (2.0 * cost) as u64 + DEFAULT_WAIT_MARGIN_NS
            }
        };
        let s = timer.saturate.as_mut().expect("made above");
        s.wait.set_param(1, &wait_ns.to_ne_bytes());
        rec.queue = Some(QueueRecord {
            wait_ns,
            too_short: 0,
        });
        timeline.mark("wait kernel sizing");
    }
    // CUPTI records from before the warm-up: its first launches pay CUPTI's start-up.
    let collector = if cell.knobs.cupti_collect {
        Some(cupti::Collector::start()?)
    } else {
        None
    };
    if warmup > 0 {
        let warm_launch = warm.as_mut().unwrap_or(&mut launch);
        method::warm_up(gpu, warm_launch, warmup, cell.knobs.timer)?;
        timeline.mark("warm-up");
        if warm.is_none() {
            rec.kernel_launches += warmup;
        }
    }

    let n = cell.knobs.samples as usize;
    let mut starts = Vec::with_capacity(n + 1);
    // One timed launch: the flush and the start timestamp lie outside the timer's region.
    let mut turn = 0;
    let mut timed = |starts: &mut Vec<f64>, timeline: Option<&mut Timeline>, what: &str| {
        if params.len() > 1 {
            for (i, v) in params[turn % params.len()].iter().enumerate() {
                launch.set_param(i, v);
            }
            turn += 1;
        }
        if let Some(f) = flush.as_mut() {
            f.run(gpu).map_err(|e| driver_failure("L2 flush", e))?;
            if let Some(t) = timeline {
                t.mark("L2 flush");
            }
        }
        starts.push(origin.elapsed().as_secs_f64() * 1e6);
        timer
            .time(gpu, &mut launch, &body)
            .map_err(|e| driver_failure(what, e))
    };
    let first = timed(&mut starts, Some(&mut *timeline), "first launch")?;
    rec.kernel_launches += body.launches();
    timeline.mark(FIRST_TIMED_LAUNCH);
    if rec.check.is_none() {
        // No same-kernel warm-up: the first timed launch alone wrote the output.
        rec.check = Some(buffers.check(exp, cell, &spec)?);
        timeline.mark(OUTPUT_CHECK);
    }
    rec.first_ns = Some(first);

    let mut samples = Vec::with_capacity(n);
    let loop_start = Instant::now();
    let mut stopper = cell.knobs.stop.map(Stopper::new);
    for _ in 0..n {
        let t = timed(&mut starts, None, "timed launch")?;
        rec.kernel_launches += body.launches();
        samples.push(t);
        if let Some(why) = stopper
            .as_mut()
            .and_then(|s| s.push(t, cell.knobs.launches))
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
    if let Some(c) = collector.filter(|_| cell.knobs.timer == TimerKind::Cupti) {
        let entry = &kernels
            .get(exp, gpu, KernelKey::of(cell), timeline)?
            .0
            .entry;
        let spans = c.finish(entry, (1 + n) * cell.knobs.launches as usize)?;
        let reading = cupti_reading(&spans, cell.knobs.launches);
        rec.first_ns = Some(reading.per_sample[0]);
        samples = reading.per_sample[1..].to_vec();
        rec.cupti = Some(reading.record);
        timeline.mark("CUPTI records");
    }
    if let (Some(q), Some(s)) = (rec.queue.as_mut(), timer.saturate.as_ref()) {
        q.too_short = s.too_short;
    }
    rec.telemetry = sampler.map(Sampler::finish).unwrap_or_default();
    rec.telemetry_end = sensor.read();
    rec.samples_ns = samples;
    rec.starts_us = starts;
    timeline.mark("telemetry end");

    if cell.role == Role::Floor && cell.knobs.timer == TimerKind::Events && n > 0 {
        let (cubin, entry) = {
            let l = kernels.get(exp, gpu, KernelKey::Empty, timeline)?.0;
            (l.cubin.clone(), l.entry.clone())
        };
        let (bare_wall_ns, bare_events_median_ns) = method::bare::events_loop(&cubin, &entry, n)?;
        rec.overhead = Some(Overhead {
            harness_wall_ns,
            bare_wall_ns,
            bare_events_median_ns,
        });
        timeline.mark("bare cudarc loop");
    }
    Ok(())
}

/// Slack added to twice the measured enqueue cost when sizing a wait kernel.
const DEFAULT_WAIT_MARGIN_NS: u64 = 10_000;

/// CUPTI's spans turned into samples: per sample, the mean span of its launches.
struct CuptiReading {
    per_sample: Vec<f64>,
    record: CuptiRecord,
}

fn cupti_reading(spans: &[cupti::Span], launches: u64) -> CuptiReading {
    let per_sample = spans
        .chunks(launches as usize)
        .map(|c| c.iter().map(|s| (s.end - s.start) as f64).sum::<f64>() / c.len() as f64)
        .collect();
    // The first launch of each sample: how long it waited after it was handed to the GPU.
    let firsts = || spans.chunks(launches as usize).map(|c| &c[0]);
    let latency: Vec<f64> = firsts()
        .filter(|s| s.submitted > 0 && s.start >= s.submitted)
        .map(|s| (s.start - s.submitted) as f64)
        .collect();
    let queued: Vec<f64> = firsts()
        .filter(|s| s.queued > 0 && s.submitted >= s.queued)
        .map(|s| (s.submitted - s.queued) as f64)
        .collect();
    CuptiReading {
        per_sample,
        record: CuptiRecord {
            records: spans.len() as u64,
            submitted_to_start_median_ns: crate::summary::median(latency),
            queued_to_submitted_median_ns: crate::summary::median(queued),
        },
    }
}

/// FNV-1a: a stable seed from a cell's id, the same on every machine and toolchain.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100000001b3)
    })
}

/// Initial contents of a cell's input buffers, one per argument (None: not an input), by
/// the seed they were drawn with.
type HostInputs = Rc<Vec<Option<Vec<u8>>>>;

/// Inputs already drawn in this worker for the current kernel and sweep point: the cells of
/// one point (every variant, every round) time the same data, drawn once. Drawing 1 GiB of
/// random floats takes about a second, far longer than most cells' samples.
#[derive(Default)]
struct InputCache {
    point: String,
    args: Vec<ResolvedArg>,
    sets: HashMap<u64, HostInputs>,
}

impl InputCache {
    fn get(&mut self, point: &str, args: &[ResolvedArg], seed: u64) -> HostInputs {
        if self.point != point || self.args != args {
            // A new point: the old data is never asked for again.
            self.point = point.to_string();
            self.args = args.to_vec();
            self.sets.clear();
        }
        self.sets
            .entry(seed)
            .or_insert_with(|| Rc::new(draw_inputs(args, seed)))
            .clone()
    }
}

/// Random contents for each `uniform` buffer, from one generator seeded with `seed`.
fn draw_inputs(args: &[ResolvedArg], seed: u64) -> Vec<Option<Vec<u8>>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    args.iter()
        .map(|a| match a {
            ResolvedArg::Buffer {
                dtype,
                len,
                init: Init::Uniform(lo, hi),
            } => Some(random_bytes(&mut rng, *dtype, *len, *lo, *hi)),
            _ => None,
        })
        .collect()
}

/// A cell's device buffers with the host copies of their initial contents.
struct Buffers {
    device: Vec<Option<DeviceBuffer>>,
    host: HostInputs,
}

impl Buffers {
    /// Allocates every buffer argument, uploads the inputs and poisons the outputs.
    fn create(args: &[ResolvedArg], host: HostInputs) -> Result<Buffers, String> {
        let mut device = Vec::new();
        for (a, data) in args.iter().zip(host.iter()) {
            match a {
                ResolvedArg::Buffer { dtype, len, .. } => {
                    let bytes = len
                        .checked_mul(dtype.size())
                        .ok_or("buffer size overflows")?;
                    let buf = DeviceBuffer::alloc(bytes)?;
                    match data {
                        Some(data) => buf.upload(data)?,
                        None => buf.fill(0xFF)?,
                    }
                    device.push(Some(buf));
                }
                ResolvedArg::Scalar { .. } => device.push(None),
            }
        }
        Ok(Buffers { device, host })
    }

    fn param_values(&self, args: &[ResolvedArg]) -> Vec<Vec<u8>> {
        args.iter()
            .zip(&self.device)
            .map(|(a, d)| match (a, d) {
                (_, Some(buf)) => buf.ptr.to_ne_bytes().to_vec(),
                (ResolvedArg::Scalar { dtype, value }, None) => scalar_bytes(*dtype, *value),
                (ResolvedArg::Buffer { .. }, None) => {
                    unreachable!("every buffer argument has a device buffer")
                }
            })
            .collect()
    }

    /// Outputs are poisoned (all bits set: NaN for floats) so an unwritten element fails the check.
    fn poison_outputs(&self) -> Result<(), String> {
        for (d, h) in self.device.iter().zip(self.host.iter()) {
            if let (Some(buf), None) = (d, h) {
                buf.fill(0xFF)?;
            }
        }
        Ok(())
    }

    fn check(
        &self,
        exp: &Experiment,
        cell: &Cell,
        spec: &ResolvedLaunch,
    ) -> Result<String, String> {
        let Some(check) = cell.kernel.and_then(|k| exp.kernels[k].check.as_ref()) else {
            return Ok("no output to check".into());
        };
        let kernel = &exp.kernels[cell.kernel.expect("checked kernels are experiment kernels")];
        let dtype = |i: usize| match spec.args[i] {
            ResolvedArg::Buffer { dtype, .. } => dtype,
            ResolvedArg::Scalar { dtype, .. } => dtype,
        };
        let out_bytes = self.device[check.output]
            .as_ref()
            .ok_or("the checked output is not a buffer")?
            .download()?;
        let inputs: Vec<reference::HostBuffer> = check
            .inputs
            .iter()
            .map(|&i| reference::HostBuffer {
                name: &kernel.args[i].name,
                dtype: dtype(i),
                bytes: self.host[i].as_deref().unwrap_or(&[]),
            })
            .collect();
        let out = reference::HostBuffer {
            name: &kernel.args[check.output].name,
            dtype: dtype(check.output),
            bytes: &out_bytes,
        };
        reference::check(
            &check.reference,
            &inputs,
            &out,
            &spec.check_dims,
            check.tolerance,
        )
    }
}

fn random_bytes(rng: &mut SmallRng, dtype: Dtype, len: usize, lo: f64, hi: f64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len * dtype.size());
    for _ in 0..len {
        let v = rng.random_range(lo..hi);
        push_scalar(
            &mut out,
            dtype,
            if matches!(dtype, Dtype::F32 | Dtype::F64) {
                v
            } else {
                v.floor()
            },
        );
    }
    out
}

fn scalar_bytes(dtype: Dtype, v: f64) -> Vec<u8> {
    let mut out = Vec::with_capacity(8);
    push_scalar(&mut out, dtype, v);
    out
}

/// Appends `v` in `dtype`'s bytes (no allocation per element: inputs hold millions).
fn push_scalar(out: &mut Vec<u8>, dtype: Dtype, v: f64) {
    match dtype {
        Dtype::F32 => out.extend_from_slice(&(v as f32).to_ne_bytes()),
        Dtype::F64 => out.extend_from_slice(&v.to_ne_bytes()),
        Dtype::I32 => out.extend_from_slice(&(v as i32).to_ne_bytes()),
        Dtype::U32 => out.extend_from_slice(&(v as u32).to_ne_bytes()),
        Dtype::I64 => out.extend_from_slice(&(v as i64).to_ne_bytes()),
        Dtype::U64 => out.extend_from_slice(&(v as u64).to_ne_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_drawn_once_per_point_and_seed() {
        let args = vec![
            ResolvedArg::Buffer {
                dtype: Dtype::F32,
                len: 4,
                init: Init::Uniform(1.0, 2.0),
            },
            ResolvedArg::Buffer {
                dtype: Dtype::F32,
                len: 4,
                init: Init::Output,
            },
            ResolvedArg::Scalar {
                dtype: Dtype::I32,
                value: 4.0,
            },
        ];
        let mut cache = InputCache::default();
        let a = cache.get("k/n=1", &args, 7);
        assert_eq!(
            a.iter().map(Option::is_some).collect::<Vec<_>>(),
            [true, false, false]
        );
        assert!(Rc::ptr_eq(&a, &cache.get("k/n=1", &args, 7)));
        // Another seed (a rotation set) draws other data; the same seed draws the same data.
        assert_ne!(a[0], cache.get("k/n=1", &args, 8)[0]);
        let again = cache.get("k/n=2", &args, 7);
        assert!(!Rc::ptr_eq(&a, &again) && a[0] == again[0]);
        assert_eq!(
            cache.sets.len(),
            1,
            "a new point drops the old point's data"
        );
    }

    #[test]
    fn cupti_spans_become_per_launch_samples_and_latencies() {
        let span = |start: u64, end: u64, submitted: u64| cupti::Span {
            name: "k".into(),
            start,
            end,
            queued: submitted.saturating_sub(100),
            submitted,
        };
        // Two samples of a batch of 2: spans of 10 and 20 ns, then 30 and 30 ns.
        let spans = [
            span(1000, 1010, 900),
            span(1010, 1030, 0),
            span(2000, 2030, 1500),
            span(2030, 2060, 0),
        ];
        let r = cupti_reading(&spans, 2);
        assert_eq!(r.per_sample, [15.0, 30.0]);
        assert_eq!(r.record.records, 4);
        // Only each sample's first launch counts: 100 and 500 ns from submission to start.
        assert_eq!(r.record.submitted_to_start_median_ns, Some(300.0));
        assert_eq!(r.record.queued_to_submitted_median_ns, Some(100.0));
    }

    #[test]
    fn seeds_are_stable() {
        assert_eq!(fnv1a(b""), 0xcbf29ce484222325);
        assert_ne!(
            fnv1a(b"matmul/n=512/events#0"),
            fnv1a(b"matmul/n=512/events#1")
        );
    }

    #[test]
    fn scalars_encode_in_their_dtype() {
        assert_eq!(
            scalar_bytes(Dtype::I32, 512.0),
            512i32.to_ne_bytes().to_vec()
        );
        assert_eq!(scalar_bytes(Dtype::F32, 1.5), 1.5f32.to_ne_bytes().to_vec());
    }

    #[test]
    fn random_inputs_stay_in_range_and_are_not_zero() {
        let mut rng = SmallRng::seed_from_u64(1);
        let b = random_bytes(&mut rng, Dtype::F32, 1000, 0.0, 100.0);
        let v: Vec<f32> = b
            .chunks(4)
            .map(|c| f32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert!(v.iter().all(|x| (0.0..100.0).contains(x)));
        assert!(v.iter().filter(|x| **x == 0.0).count() < 2);
    }
}
