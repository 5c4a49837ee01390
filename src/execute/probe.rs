//! `runner plan --probe`'s launches on the device: the probe's cells (`plan::probe`) run in
//! one worker process, unchecked and unaudited, their records read as a run's are and
//! nothing stored; each cell's reading is the median of its samples.

use super::stop::INTERRUPTED;
use super::worker_process::{self, WorkerEvent, WorkerProcess, WorkerProgram};
use crate::experiment::{DeviceFacts, Experiment};
use crate::plan::{Plan, Run};
use crate::protocol::{DeviceInfo, Message, Status};
use anyhow::{bail, Context, Result};
use std::time::{Duration, Instant};

/// What the probe read: each probe cell's time per launch (ns; None where it failed), why
/// the failed ones failed, and how long the probe took.
pub struct Probed {
    pub readings_ns: Vec<Option<f64>>,
    pub failures: Vec<String>,
    pub wall_s: f64,
}

/// The worker's start (driver, context) beside a cell's own timeout.
const START_S: u64 = 60;

/// The device's facts, for the probe's plan and the estimate's peaks: no probe without one.
pub fn device_facts() -> Result<DeviceFacts> {
    if !cuda::driver_present() {
        bail!(cuda::NO_DRIVER);
    }
    Ok(DeviceInfo::from(cuda::query(0)?).facts())
}

/// Runs `plan`'s probe cells (`plan::probe::ProbePlan`) on the device.
pub fn probe(exp: &Experiment, plan: &Plan) -> Result<Probed> {
    let runs: Vec<Run> = (plan.cells.iter())
        .map(|c| Run {
            cell: c.index,
            process: 0,
        })
        .collect();
    let mut job = worker_process::job_for(exp, plan, &runs, false, Duration::ZERO);
    // Timed alone: a check or an audit is the run's work, not the kernel's time.
    for k in &mut job.kernels {
        k.unchecked = true;
        k.check = None;
        k.check_kernel = None;
    }
    let cache = tempfile::Builder::new()
        .prefix("runner-probe-")
        .tempdir()
        .context("cannot create a folder for the probe's shared inputs")?;
    job.run_cache = Some(cache.path().to_path_buf());
    let longest = (plan.cells.iter())
        .map(|c| c.knobs.timeout.0)
        .max()
        .unwrap_or_default();
    let limit = longest + Duration::from_secs(START_S);
    let started = Instant::now();
    let mut worker = WorkerProcess::start(&WorkerProgram::this_binary()?, job, &[])?;
    let mut probed = Probed {
        readings_ns: vec![None; plan.cells.len()],
        failures: Vec::new(),
        wall_s: 0.0,
    };
    loop {
        match worker.next(limit, &INTERRUPTED) {
            WorkerEvent::Message(Message::Cell(rec)) => {
                let reading = crate::statistics::median(rec.samples_ns.clone())
                    .filter(|_| rec.status == Status::Ok);
                match (reading, plan.cells.get(rec.cell)) {
                    (Some(ns), Some(_)) => probed.readings_ns[rec.cell] = Some(ns),
                    _ => probed.failures.push(format!(
                        "{}: {}",
                        rec.id,
                        rec.error.as_deref().unwrap_or("no samples")
                    )),
                }
            }
            // A probe claims nothing: nothing is taken from it.
            WorkerEvent::Message(Message::Ready { .. } | Message::Taken { .. }) => {}
            WorkerEvent::Message(Message::Fatal { error }) => {
                bail!("the probe's worker cannot run: {error}")
            }
            WorkerEvent::Malformed(line) => {
                worker.kill();
                bail!("the probe's worker wrote what is not a message: {line}")
            }
            WorkerEvent::TimedOut(after) => {
                worker.kill();
                bail!(
                    "the probe's worker said nothing for {}: killed",
                    humantime::format_duration(after)
                )
            }
            WorkerEvent::Interrupted => {
                worker.kill();
                bail!("the probe was interrupted")
            }
            WorkerEvent::Closed => break,
        }
    }
    let (status, stderr) = worker.finish()?;
    if !status.success() && probed.readings_ns.iter().all(Option::is_none) {
        bail!(
            "the probe's worker ended with {status}{}",
            worker_process::tail(&stderr)
        );
    }
    probed.wall_s = started.elapsed().as_secs_f64();
    Ok(probed)
}
