//! The parent side of a run: starts worker processes for the plan's jobs, stores each cell
//! the moment a worker reports it, records cells whose worker died, and shows progress.

use crate::clock_lock::{self, ClockLock};
use crate::experiment::{ClockPolicy, Experiment};
use crate::plan::Plan;
use crate::protocol::{CellRecord, Job, Message, Run};
use crate::results::{RunMeta, Writer};
use crate::{system, worker};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

/// Runs every cell of `exp` and stores the run in `out/<experiment name>/`; returns that folder.
pub fn run(exp: &Experiment, out: &Path, allow_clock_changes: bool) -> Result<PathBuf> {
    clock_lock::check_allowed(exp.clocks, allow_clock_changes, clock_lock::is_root())
        .map_err(anyhow::Error::msg)?;
    if !worker::gpu::driver_present() {
        bail!(crate::NO_DRIVER);
    }
    // Held for the whole run; dropping it resets the clocks, also on an early return.
    let _lock = match exp.clocks {
        ClockPolicy::Lock(mhz) => {
            let uuid = worker::gpu::device_uuid(0).map_err(anyhow::Error::msg)?;
            Some(ClockLock::acquire(mhz, &uuid).map_err(anyhow::Error::msg)?)
        }
        _ => None,
    };
    let plan = Plan::new(exp).map_err(anyhow::Error::msg)?;
    let dir = out.join(&exp.name);
    let mut meta = RunMeta {
        experiment_path: exp.path.clone(),
        experiment_sha256: system::sha256_hex(exp.text.as_bytes()),
        git: system::git(&exp.path),
        runner_version: env!("CARGO_PKG_VERSION").to_string(),
        started_utc: now(),
        finished_utc: None,
        complete: false,
        host: system::host(),
        device: None,
        startup: None,
    };
    let mut writer = Writer::create(&dir, exp, &meta)?;
    let jobs = plan.jobs();
    let bar = ProgressBar::new(jobs.iter().map(|j| j.runs.len() as u64).sum());
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} cells, eta {eta} {msg}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let n_params = exp.params.len();
    for job in jobs {
        let mut remaining: VecDeque<Run> = job.runs.into();
        while let Some(next) = remaining.front() {
            bar.set_message(plan.cells[next.cell].id.clone());
            let worker = Worker::start(exp, remaining.iter().copied().collect())?;
            let (exit, stderr) = worker.drain(|msg| match msg {
                Message::Ready { device, startup } => {
                    if meta.device.is_none() {
                        meta.device = Some(device);
                        meta.startup = Some(startup);
                        writer.write_meta(&meta)?;
                    }
                    Ok(())
                }
                Message::Cell(rec) => {
                    let run = remaining
                        .pop_front()
                        .context("a worker reported more cells than it was given")?;
                    if (run.cell, run.process) != (rec.cell, rec.process) {
                        bail!(
                            "a worker reported cell {} instead of {}",
                            rec.id,
                            plan.cells[run.cell].id
                        );
                    }
                    writer.append(&plan.cells[run.cell], n_params, &rec)?;
                    bar.inc(1);
                    if let Some(next) = remaining.front() {
                        bar.set_message(plan.cells[next.cell].id.clone());
                    }
                    Ok(())
                }
                Message::Fatal { error } => bail!("{error}"),
            })?;
            if let Some(run) = remaining.front().copied() {
                if exit.code() == Some(worker::EXIT_CONTEXT_LOST as i32) {
                    continue; // its last cell was reported failed; a new worker takes the rest
                }
                let cell = &plan.cells[run.cell];
                let why = format!(
                    "worker process ended ({exit}) while running this cell{}",
                    tail(&stderr)
                );
                writer.append(
                    cell,
                    n_params,
                    &CellRecord::failed(run.cell, &cell.id, run.process, why),
                )?;
                remaining.pop_front();
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    meta.complete = true;
    meta.finished_utc = Some(now());
    writer.write_meta(&meta)?;
    Ok(dir)
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

fn tail(stderr: &str) -> String {
    let t = stderr.trim();
    if t.is_empty() {
        return String::new();
    }
    let start = t.char_indices().rev().nth(2000).map_or(0, |(i, _)| i);
    format!("; its stderr ends: {}", &t[start..])
}

/// A running worker process.
struct Worker {
    child: std::process::Child,
}

impl Worker {
    fn start(exp: &Experiment, runs: Vec<Run>) -> Result<Worker> {
        let exe = std::env::current_exe().context("cannot find the runner's own executable")?;
        let mut child = Command::new(exe)
            .arg("__worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start a worker process")?;
        let job = Job {
            experiment_path: exp.path.clone(),
            experiment_text: exp.text.clone(),
            runs,
        };
        let mut stdin = child.stdin.take().expect("stdin is piped");
        stdin
            .write_all(serde_json::to_string(&job)?.as_bytes())
            .context("cannot send the job to the worker")?;
        Ok(Worker { child })
    }

    /// Feeds each message to `on`, until the worker closes its output; returns its exit
    /// status and what it wrote to stderr. An error from `on` kills the worker.
    fn drain(
        mut self,
        mut on: impl FnMut(Message) -> Result<()>,
    ) -> Result<(std::process::ExitStatus, String)> {
        let mut stderr = self.child.stderr.take().expect("stderr is piped");
        let err_thread = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let stdout = BufReader::new(self.child.stdout.take().expect("stdout is piped"));
        let mut outcome = Ok(());
        for line in stdout.lines() {
            let line = line.context("cannot read from the worker")?;
            let msg: Message = match serde_json::from_str(&line) {
                Ok(m) => m,
                Err(e) => {
                    outcome = Err(anyhow::anyhow!(
                        "malformed message from the worker ({e}): {line}"
                    ));
                    break;
                }
            };
            if let Err(e) = on(msg) {
                outcome = Err(e);
                break;
            }
        }
        if outcome.is_err() {
            let _ = self.child.kill();
        }
        let status = self.child.wait().context("cannot wait for the worker")?;
        let stderr = err_thread.join().unwrap_or_default();
        outcome.map(|_| (status, stderr))
    }
}
