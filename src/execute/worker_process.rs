//! One worker process seen from the parent: started with its job and environment, read
//! line by line on a thread so that the parent can wait with a deadline, and killed when a
//! cell overruns it.

use crate::experiment::Experiment;
use crate::plan::{Plan, Run};
use crate::protocol::{FailureKind, Job, Message, SPAWNED_VAR};
use crate::store::RunMeta;
use anyhow::{Context, Result};
use indicatif::ProgressBar;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The program a worker process runs: the runner's own binary (`runner __worker`), the
/// profiler around it, or a stand-in that speaks the same protocol.
#[derive(Clone)]
pub struct WorkerProgram {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl WorkerProgram {
    /// `runner __worker --parent PID`: the worker does not outlive this runner.
    pub fn this_binary() -> Result<Self> {
        let exe = std::env::current_exe().context("cannot find the runner's own executable")?;
        Ok(WorkerProgram {
            program: exe,
            args: ["__worker", "--parent", &std::process::id().to_string()]
                .map(String::from)
                .to_vec(),
        })
    }

    #[cfg(test)]
    pub fn new(program: &str, args: &[&str]) -> Self {
        WorkerProgram {
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }
}

/// A line of a worker's output that is no `Message`, and why: a sentence for the person, as
/// the error that stops the run (nothing tells one malformed line from another).
#[derive(Debug, thiserror::Error)]
#[error("malformed message from the worker ({error}): {line}")]
pub struct Malformed {
    error: serde_json::Error,
    line: String,
}

/// What waiting on a worker gave.
pub enum WorkerEvent {
    Message(Message),
    /// A line that is not a message.
    Malformed(Malformed),
    /// The worker closed its output (it exited or is about to).
    Closed,
    /// Nothing within the deadline.
    TimedOut(Duration),
    /// Ctrl-C was pressed.
    Interrupted,
}

/// A running worker process.
pub struct WorkerProcess {
    child: Child,
    /// Taken by the thread that sends the job.
    stdin: Option<ChildStdin>,
    /// While held, the worker's input stays open after the job: the worker waits for its
    /// end before it creates its context.
    hold: Option<mpsc::Sender<()>>,
    /// Each line of the worker's output, or, for one that is no `Message`, the line itself
    /// and why.
    lines: Receiver<Result<Message, Malformed>>,
    stderr: Option<JoinHandle<String>>,
}

/// How often a waiting parent looks at the interrupt flag.
const POLL: Duration = Duration::from_millis(100);

impl WorkerProcess {
    /// Starts `program` with `vars` added to the environment and sends it the job; it goes
    /// on to the device at once.
    pub fn start(
        program: &WorkerProgram,
        job: Job,
        vars: &[(String, String)],
    ) -> Result<WorkerProcess> {
        let mut worker = WorkerProcess::start_held(program, job, vars)?;
        worker.release();
        Ok(worker)
    }

    /// As [`WorkerProcess::start`], but the worker stops before it creates its context
    /// until [`WorkerProcess::release`]: it can start (and open NVML, and read its inputs)
    /// while the previous worker exits, and still meet an idle GPU.
    pub fn start_held(
        program: &WorkerProgram,
        job: Job,
        vars: &[(String, String)],
    ) -> Result<WorkerProcess> {
        let mut worker = WorkerProcess::spawn(program, vars)?;
        worker.send(&job)?;
        Ok(worker)
    }

    /// Lets a held worker go on to the device: its input ends (the worker waits for the end).
    pub fn release(&mut self) {
        drop(self.hold.take());
    }

    /// Starts `program` with `vars` added to the environment; it opens the device while it
    /// waits for its job ([`WorkerProcess::send`]).
    fn spawn(program: &WorkerProgram, vars: &[(String, String)]) -> Result<WorkerProcess> {
        let spawned_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let mut child = Command::new(&program.program)
            .args(&program.args)
            // Its own process group, so that a kill reaches anything it started and Ctrl-C
            // reaches only the parent, which stops the worker itself.
            .process_group(0)
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .env(SPAWNED_VAR, spawned_unix_ns.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start a worker process ({})",
                    program.program.display()
                )
            })?;
        let stdin = child.stdin.take();
        let mut err = child.stderr.take().expect("stderr is piped");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let out = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { break };
                let msg = serde_json::from_str::<Message>(&line)
                    .map_err(|error| Malformed { error, line });
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        Ok(WorkerProcess {
            child,
            stdin,
            hold: None,
            lines,
            stderr: Some(stderr),
        })
    }

    /// Sends the job, once, as one line from a thread (a job larger than the pipe waits
    /// for the worker to read it, and the parent must stay free to time it out), then
    /// keeps the input open until [`WorkerProcess::release`].
    fn send(&mut self, job: &Job) -> Result<()> {
        let text = serde_json::to_string(job)? + "\n";
        let (hold, released) = mpsc::channel::<()>();
        if let Some(mut stdin) = self.stdin.take() {
            // A worker that died before reading its job is reported by its exit status.
            std::thread::spawn(move || {
                let _ = stdin.write_all(text.as_bytes());
                // Returns when the sender is dropped: released, or the worker abandoned.
                let _ = released.recv();
            });
        }
        self.hold = Some(hold);
        Ok(())
    }

    /// The next message, waiting at most `limit`.
    pub fn next(&mut self, limit: Duration, interrupted: &AtomicBool) -> WorkerEvent {
        let deadline = Instant::now() + limit;
        loop {
            if interrupted.load(Ordering::SeqCst) {
                return WorkerEvent::Interrupted;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return WorkerEvent::TimedOut(limit);
            }
            match self.lines.recv_timeout(left.min(POLL)) {
                Ok(Ok(msg)) => return WorkerEvent::Message(msg),
                Ok(Err(why)) => return WorkerEvent::Malformed(why),
                Err(RecvTimeoutError::Disconnected) => return WorkerEvent::Closed,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// Kills the worker's whole process group.
    pub fn kill(&mut self) {
        let group = i32::try_from(self.child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        if let Some(group) = group {
            // The group this worker leads; an error means it is gone already.
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }

    /// Waits for the process to exit; its exit status and what it wrote to stderr.
    pub fn finish(self) -> Result<(ExitStatus, String)> {
        self.finish_within(None)
    }

    /// As [`WorkerProcess::finish`], killing the process if it has not exited within
    /// `limit` (a worker whose cells are all reported must only exit).
    pub fn finish_within(mut self, limit: Option<Duration>) -> Result<(ExitStatus, String)> {
        self.release();
        let start = Instant::now();
        let status = loop {
            let Some(limit) = limit else {
                break self.child.wait();
            };
            match self.child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if start.elapsed() > limit => {
                    self.kill();
                    break self.child.wait();
                }
                Ok(None) => std::thread::sleep(Duration::from_micros(500)),
                Err(e) => break Err(e),
            }
        }
        .context("cannot wait for a worker process")?;
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        Ok((status, stderr))
    }
}

/// The end of a worker's stderr, for the message that says why it failed.
pub(super) fn tail(stderr: &str) -> String {
    let t = stderr.trim();
    if t.is_empty() {
        return String::new();
    }
    let start = t.char_indices().rev().nth(2000).map_or(0, |(i, _)| i);
    format!("; its stderr ends: {}", &t[start..])
}

/// The job a worker is sent: its runs and the planned cells they name.
pub fn job_for(
    exp: &Experiment,
    plan: &Plan,
    runs: &[Run],
    prime: bool,
    gpu_warmup: Duration,
) -> Job {
    let mut cells: Vec<usize> = runs.iter().map(|r| r.cell).collect();
    cells.sort_unstable();
    cells.dedup();
    Job {
        cells: cells.into_iter().map(|c| plan.cells[c].clone()).collect(),
        kernels: exp.kernels.clone(),
        telemetry: exp.telemetry.clone(),
        runs: runs.to_vec(),
        prime,
        run_cache: None,
        gpu_warmup_s: gpu_warmup.as_secs_f64(),
        describe_device: false,
        sample_seed: 0,
        claiming: None,
    }
}

/// Why a cell whose worker overran the cell's timeout failed.
pub fn timed_out(limit: Duration, stderr: &str) -> (FailureKind, String) {
    let why = format!(
        "no result within the cell's timeout of {}: worker killed{}",
        humantime::format_duration(limit),
        tail(stderr)
    );
    (FailureKind::Timeout, why)
}

/// Why a cell whose worker ended while it ran the cell failed.
pub fn lost(exit: &ExitStatus, stderr: &str) -> (FailureKind, String) {
    let why = format!(
        "worker process ended ({exit}) while running this cell{}",
        tail(stderr)
    );
    (FailureKind::WorkerLost, why)
}

/// A worker that reported all its cells, with when it last spoke and how long it may take
/// to exit.
pub struct Exiting {
    pub worker: WorkerProcess,
    pub last_message: Instant,
    pub limit: Option<Duration>,
}

/// Waits for a worker that reported all its cells to exit (killed past its limit: it only
/// has to exit), counts its exit time, and says so where it did not exit cleanly.
pub fn reap(exiting: Exiting, meta: &mut RunMeta, bar: &ProgressBar) -> Result<()> {
    let (status, stderr) = exiting.worker.finish_within(exiting.limit)?;
    let count = meta.workers.get_or_insert_with(Default::default);
    count.processes += 1;
    count.exit_s += exiting.last_message.elapsed().as_secs_f64();
    if !status.success() {
        bar.suspend(|| {
            crate::terminal::tell(&format!(
                "warning: a worker reported all its cells but ended with {status}{}",
                tail(&stderr)
            ))
        });
    }
    Ok(())
}
