//! The worker: a process of the same binary that opens the device, runs the planned cells
//! of its job in order and streams each finished cell to the parent as one JSON line.

mod agreement;
mod arm;
mod assemble;
mod audit;
mod buffers;
mod cell;
mod compiler;
mod cores;
mod draw;
mod failure;
mod host_buffer;
mod inputs;
mod kernels;
mod parent;
mod prepare;
mod read_back;
mod reference;
mod samples;
mod session;
mod shared;
mod stash;
mod timeline;

use crate::plan::{Cell, Run};
use crate::protocol::{
    capability, Claiming, DeviceInfo, Job, Message, Startup, EXIT_CONTEXT_LOST, SPAWNED_VAR,
};
use crate::telemetry::Sensor;
use cuda::{self, Gpu};
use failure::Failure;
use inputs::{InputCache, Prefetched};
use kernels::Kernels;
use parent::Parent;
use session::{Facts, Session};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{BufRead, Read, StdinLock, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};
use timeline::Timeline;

// What `plan --compile` (`commands/preflight.rs`) builds with, as a run builds: NVRTC once
// per build, and the arguments' sizes against the compiled parameters.
pub use assemble::{params_differ, sizes};
pub use compiler::{warnings, Build, Compiler, Image};

/// The phase from the process's start to the job's arrival.
const JOB_PHASE: &str = "job received";
/// The wait, after the context, for the inputs another thread read beside it.
const BESIDE_PHASE: &str = "first inputs read";

fn send(msg: &Message) {
    let mut out = std::io::stdout().lock();
    let line = serde_json::to_string(msg).expect("messages serialize");
    // A parent that went away cannot be told anything; the next write fails the same way.
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
}

fn fatal(error: String) -> ExitCode {
    send(&Message::Fatal { error });
    // A Python reference's interpreter and its files go with the worker.
    reference::python::end();
    ExitCode::FAILURE
}

/// Entry point of `runner __worker`: a [`Job`] on stdin, [`Message`]s on stdout.
/// `runner`: the pid of the runner that started it (`--parent`), which it never outlives.
pub fn main(runner: Option<u32>) -> ExitCode {
    let Some(parent) = Parent::watch(runner) else {
        crate::terminal::tell("the runner that started this worker is gone: not starting");
        return ExitCode::FAILURE;
    };
    let (entry, entry_wall) = (Instant::now(), SystemTime::now());
    let spawned = std::env::var(SPAWNED_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut timeline = Timeline::from_spawn(spawned, entry, entry_wall);
    // The job first (one line), so that the first cell's inputs are read on another thread
    // and NVML and the driver start while the previous worker may still be exiting; then
    // the end of the input, which the parent sends once that worker is gone, before the
    // context is created. NVML stays out of the context's creation: opened beside it, it
    // slowed it by more than it saved.
    let mut stdin = std::io::stdin().lock();
    let mut input = String::new();
    if let Err(e) = stdin.read_line(&mut input) {
        return fatal(format!("cannot read the job: {e}"));
    }
    let job: Job = match serde_json::from_str(&input) {
        Ok(j) => j,
        Err(e) => return fatal(format!("malformed job: {e}")),
    };
    timeline.mark(JOB_PHASE);
    let first = (job.runs.first())
        .and_then(|r| Some((job.cells.iter().find(|c| c.index == r.cell)?, r.process)))
        .filter(|_| !job.prime)
        .map(|(cell, process)| {
            let def = cell.kernel.and_then(|k| job.kernels.get(k));
            (
                cell.clone(),
                audit::audits(cell, def, process, job.sample_seed),
            )
        });
    let dir = job.run_cache.clone();
    let beside = std::thread::spawn(move || {
        first.map(|(cell, audited)| Prefetched::read(&cell, dir.as_deref(), audited))
    });
    let (gpu, info, sensor) = match open_device(stdin, &mut timeline, job.describe_device) {
        Ok(opened) => opened,
        Err(e) => return fatal(e.message),
    };
    let Ok(prefetched) = beside.join() else {
        return fatal("reading the first cell's inputs failed".into());
    };
    timeline.mark(BESIDE_PHASE);

    let cells: HashMap<usize, Cell> = job.cells.into_iter().map(|c| (c.index, c)).collect();
    let mut session = Session {
        _gpu: gpu,
        parent,
        facts: Facts {
            sm_count: info.sm_count,
            l2_bytes: info.l2_bytes,
        },
        sensor,
        telemetry: job.telemetry,
        kernels: Kernels::new(job.kernels, capability(&info), job.run_cache.clone()),
        timeline,
        probe: None,
        inputs: InputCache::new(job.run_cache.clone(), prefetched),
        audit_stash: None,
        timed_stash: None,
        reference_buffers: RefCell::new(None),
        matmul_scratch: Default::default(),
        stage_times: Default::default(),
        run_cache: job.run_cache,
        sample_seed: job.sample_seed,
    };
    let claiming = job.claiming;
    run_cells(
        &mut session,
        (&job.runs, &cells, claiming),
        job.prime,
        job.gpu_warmup_s,
    )
}

/// Starts NVML and the driver, then, once the parent ends the job's input (the previous
/// worker is gone), opens the context and reads the device, and tells the parent `Ready`.
fn open_device(
    mut stdin: StdinLock,
    timeline: &mut Timeline,
    describe: bool,
) -> Result<(Gpu, DeviceInfo, Sensor), Failure> {
    let mut sensor = Sensor::open();
    timeline.mark("NVML open");
    Gpu::init_driver()?;
    timeline.mark(cuda::DRIVER_INIT);
    stdin
        .read_to_end(&mut Vec::new())
        .map_err(|e| Failure::from(format!("cannot read the end of the job: {e}")))?;
    drop(stdin);
    // The wait for the previous worker's exit is not this process's cost.
    timeline.exclude();
    let gpu = Gpu::open(0, &mut |phase| timeline.mark(phase))?;
    let mut info = DeviceInfo::from(cuda::query(0)?);
    sensor.select(&info.uuid);
    if describe {
        info.driver_version = sensor.driver_version();
        info.host_link = sensor.host_link();
    }
    timeline.mark("device query");
    send(&Message::Ready {
        startup: Startup {
            driver_init_ms: timeline.ms_of(cuda::DRIVER_INIT).unwrap_or_default(),
            context_ms: timeline.ms_of(cuda::CONTEXT).unwrap_or_default(),
        },
        device: Box::new(info.clone()),
    });
    Ok((gpu, info, sensor))
}

/// Runs the job's `runs` and sends each cell's record (or, for a priming job, only loads
/// their kernels), after the GPU warm-up the job owes. Where the run's parts share a queue,
/// a run another part claimed is reported taken instead.
fn run_cells(
    session: &mut Session,
    (runs, cells, mut claiming): (&[Run], &HashMap<usize, Cell>, Option<Claiming>),
    prime: bool,
    gpu_warmup_s: f64,
) -> ExitCode {
    let cell_of = |index: usize| cells.get(&index);
    if prime {
        for run in runs {
            session.parent.leave_if_gone();
            let Some(cell) = cell_of(run.cell) else {
                return fatal(format!("the job has no cell {}", run.cell));
            };
            if let Err(e) = session.load_all(cell) {
                return fatal(e.to_string());
            }
        }
        return ExitCode::SUCCESS;
    }
    if gpu_warmup_s > 0.0 {
        if let Err(e) = session.warm_gpu(Duration::from_secs_f64(gpu_warmup_s)) {
            return fatal(e.message);
        }
    }
    for (i, run) in runs.iter().enumerate() {
        session.parent.leave_if_gone();
        if i > 0 {
            session.timeline.skip();
        }
        let Some(cell) = cell_of(run.cell) else {
            return fatal(format!("the job has no cell {}", run.cell));
        };
        match claiming.as_mut().map(|c| c.may_run(run.cell)) {
            Some(Ok(false)) => {
                send(&Message::Taken {
                    cell: run.cell,
                    process: run.process,
                });
                continue;
            }
            Some(Err(e)) => return fatal(format!("cannot claim cell {}: {e}", cell.id)),
            _ => {}
        }
        let (record, context_lost) = cell::run(session, cell, run.process);
        send(&Message::Cell(Box::new(record)));
        if context_lost {
            reference::python::end();
            return ExitCode::from(EXIT_CONTEXT_LOST);
        }
    }
    // Every cell is reported: leave the context, modules, buffers and NVML to the driver's
    // clean-up at exit instead of tearing them down one by one first (about 90 ms per
    // process on an H100, paid by every fresh process of a cold-start run).
    // A Python reference's interpreter is ended, not left computing beside the next worker.
    reference::python::end();
    std::process::exit(0)
}
