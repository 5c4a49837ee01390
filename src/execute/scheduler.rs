//! Runs the plan's worker jobs in order: starts a worker process per job in the job's
//! environment, stores each cell the moment a worker reports it, kills a worker that
//! overruns a cell's timeout, records cells whose worker died, and stops on a signal.

use super::jit_cache::{shared, JitCaches, PrimeError};
use super::peer_runs::Peers;
use super::worker_process::{self, reap, Exiting, WorkerEvent, WorkerProcess, WorkerProgram};
use super::{counter_readings, profiler, stop, INTERRUPTED};
use crate::experiment::knobs::env::ProcessEnv;
use crate::experiment::knobs::timeout::DEFAULT_TIMEOUT;
use crate::experiment::Experiment;
use crate::plan::cost::Estimate;
use crate::plan::counter_passes;
use crate::plan::{Plan, Run, WorkerJob};
use crate::protocol::{CellRecord, Claiming, CounterRecord, FailureKind, Message};
use crate::store::{self, RunMeta, Writer};
use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;
use profiled::Pass;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a worker that reported all its cells may take to exit before it is killed.
const EXIT_LIMIT: Duration = Duration::from_secs(60);

/// Runs the plan's jobs in order and stores what they report.
pub struct Scheduler<'a> {
    exp: &'a Experiment,
    plan: &'a Plan,
    writer: &'a mut Writer,
    meta: &'a mut RunMeta,
    program: &'a WorkerProgram,
    caches: JitCaches,
    /// Drawn inputs and reference results the run's workers share, removed with the run.
    run_cache: tempfile::TempDir,
    /// The run's seed of the checks' samples of large outputs (`Job::sample_seed`).
    sample_seed: u64,
    bar: ProgressBar,
    /// Each run's share of the plan's estimate, in milliseconds: what it moves the bar.
    weights: HashMap<Run, u64>,
    /// Runs stored, of those the run has.
    runs: (usize, usize),
    /// GPU warm-up still owed: the first worker that measures does it.
    gpu_warmup: Duration,
    /// The worker that reported all its cells and is exiting (the driver's teardown takes
    /// tens of milliseconds): the next starts meanwhile, held off the device until it is gone.
    exiting: Option<Exiting>,
    /// Cells whose counter pass has run, and the counters waiting for their cell's first
    /// timed record.
    counted: HashSet<usize>,
    counters: HashMap<usize, CounterRecord>,
    /// Where the run's parts share a queue (`--claims`): the claims, and the cells another
    /// part took (their fresh runs' peers are that part's).
    claiming: Option<Claiming>,
    taken: HashSet<usize>,
    /// The keys of the cells this part stored: a part that stops lets go of its other claims.
    stored_keys: HashSet<String>,
}

impl<'a> Scheduler<'a> {
    pub fn new(
        exp: &'a Experiment,
        plan: &'a Plan,
        writer: &'a mut Writer,
        meta: &'a mut RunMeta,
        program: &'a WorkerProgram,
    ) -> Result<Self> {
        let bar = super::progress::bar();
        let claiming = (meta.shard.as_ref().and_then(|s| s.claims.clone()))
            .map(|claims| Claiming::of_plan(claims, plan));
        Ok(Scheduler {
            exp,
            plan,
            writer,
            meta,
            program,
            caches: JitCaches::new()?,
            run_cache: tempfile::Builder::new()
                .prefix("runner-cache-")
                .tempdir()
                .context("cannot create a folder for the run's shared inputs")?,
            sample_seed: rand::random(),
            bar,
            weights: HashMap::new(),
            runs: (0, 0),
            gpu_warmup: exp.gpu_warmup,
            exiting: None,
            counted: HashSet::new(),
            counters: HashMap::new(),
            claiming,
            taken: HashSet::new(),
            stored_keys: HashSet::new(),
        })
    }

    /// Runs every job's runs but those in `done`, and after each fresh process the peer
    /// processes beside it (`Peers::run_beside`); false when an interrupt stopped the run
    /// early.
    pub fn run_all(mut self, done: &HashSet<Run>, peers: &mut Peers) -> Result<bool> {
        let previous = store::previous_wall_times(&Path::new("reports").join(&self.exp.name));
        let estimate = Estimate::new(self.exp, self.plan, &previous);
        let jobs = match (&self.claiming, &self.meta.shard) {
            (Some(_), Some(share)) => {
                let cost: Vec<f64> = (self.plan.cells.iter())
                    .map(|c| estimate.cell_seconds(c))
                    .collect();
                self.plan.claiming_jobs(&share.cells, &cost)
            }
            _ => self.plan.jobs(),
        };
        let jobs: Vec<WorkerJob> = jobs
            .into_iter()
            .map(|mut j| {
                j.runs.retain(|r| !done.contains(r));
                j
            })
            .filter(|j| !j.runs.is_empty())
            .collect();
        let runs: Vec<Run> = jobs.iter().flat_map(|j| j.runs.iter().copied()).collect();
        let weights = estimate.run_weights(&runs);
        // Whole milliseconds, at least one a run, so that every run moves the bar.
        self.weights = (runs.iter().zip(weights))
            .map(|(r, w)| (*r, ((w * 1e3) as u64).max(1)))
            .collect();
        self.bar.set_length(self.weights.values().sum());
        self.runs = (0, runs.len());
        self.bar.set_prefix(format!("0/{}", runs.len()));
        // A fresh process runs one run; the peers beside it run once it has exited.
        let plan = self.plan;
        let fresh = |j: &WorkerJob| match j.runs[..] {
            [run] if plan.cells[run.cell].knobs.process.fresh.is_some() => Some(run),
            _ => None,
        };
        for job in jobs {
            if INTERRUPTED.load(Ordering::SeqCst) {
                break;
            }
            let this = fresh(&job);
            self.run_job(job)?;
            let due = |r: &Run| peers.due(&plan.cells[r.cell], r.process);
            if let Some(run) = this.filter(|r| !self.taken.contains(&r.cell) && due(r)) {
                // The peers start once the worker is gone, as the next worker would.
                self.settle()?;
                let cell = &plan.cells[run.cell];
                self.bar.suspend(|| peers.run_beside(cell, run.process));
            }
        }
        self.settle()?;
        self.bar.finish_and_clear();
        let interrupted = INTERRUPTED.load(Ordering::SeqCst);
        if interrupted {
            self.release_unfinished(done)?;
        }
        Ok(!interrupted)
    }

    /// Stores a run's record, but where the run's parts share a queue, only one of a cell
    /// this part holds: its worker claimed it before it ran it. A failure of this part's own
    /// (a priming process, no ncu, a worker that died before it claimed the cell) is not
    /// recorded for a cell it does not hold: a part that cannot run cells would otherwise
    /// claim the whole queue with failures, and one that another part holds would overlap
    /// that part's record.
    fn store(&mut self, run: Run, rec: &CellRecord) -> Result<()> {
        if !self.holds_to_store(run)? {
            self.count_taken(run);
            return Ok(());
        }
        let cell = &self.plan.cells[run.cell];
        super::progress::say_compile_warnings(&self.bar, &cell.id, &rec.compile_warnings);
        match self.counters.remove(&run.cell) {
            Some(counters) => {
                let mut rec = rec.clone();
                rec.counters = Some(counters);
                self.writer.append(cell, &rec)?;
            }
            None => self.writer.append(cell, rec)?,
        }
        self.count_done(run);
        Ok(())
    }

    /// Moves the bar by a run stored or taken.
    fn count_done(&mut self, run: Run) {
        self.bar.inc(self.weights.get(&run).copied().unwrap_or(1));
        self.runs.0 += 1;
        self.bar
            .set_prefix(format!("{}/{}", self.runs.0, self.runs.1));
    }

    fn fail(&mut self, run: Run, kind: FailureKind, why: String) -> Result<()> {
        let id = self.plan.cells[run.cell].id.clone();
        let rec = CellRecord::failed(run.cell, &id, run.process, kind, why);
        self.store(run, &rec)
    }

    /// Keeps what a pass's worker reported of a run: a timed record is stored, a counted
    /// one gives its cell's counters.
    fn record(&mut self, pass: Pass, run: Run, rec: CellRecord) -> Result<()> {
        match pass {
            Pass::Timed { .. } => self.store(run, &rec),
            Pass::Counted { pass, .. } => {
                let counters =
                    counter_readings::outcome(&self.plan.cells[run.cell], pass.cache, rec);
                self.counters.insert(run.cell, counters);
                Ok(())
            }
        }
    }

    /// Records a run its pass's worker could not finish.
    fn fail_in(&mut self, pass: Pass, run: Run, kind: FailureKind, why: String) -> Result<()> {
        let id = self.plan.cells[run.cell].id.clone();
        let rec = CellRecord::failed(run.cell, &id, run.process, kind, why);
        self.record(pass, run, rec)
    }

    /// Runs one job's cells, after the counter passes of those that read counters.
    fn run_job(&mut self, job: WorkerJob) -> Result<()> {
        let vars = match self.worker_vars(&job.env) {
            Ok(v) => v,
            // A priming process stopped with the run leaves the job's cells to the resume.
            Err(why) if stop::stopping(why.status()) => return Ok(()),
            Err(why) => {
                let why = why.text();
                for run in job.runs {
                    self.fail(run, FailureKind::Priming, why.clone())?;
                }
                return Ok(());
            }
        };
        for mut pass in counter_passes::passes(self.plan, &job.runs, &self.counted) {
            // Counted where they are timed: by the part that claims them.
            let mut mine = Vec::new();
            for run in pass.runs {
                if self.mine(run)? {
                    mine.push(run);
                }
            }
            pass.runs = mine;
            self.counted.extend(pass.runs.iter().map(|r| r.cell));
            match profiler::ncu() {
                Some(ncu) => {
                    // Not timed, and no JIT cache of the run's is touched by it.
                    let mut vars = vars.clone();
                    vars.push(("CUDA_CACHE_DISABLE".into(), "1".into()));
                    let counting = Pass::Counted {
                        ncu: &ncu,
                        pass: &pass,
                    };
                    self.run_pass(counting, pass.runs.clone(), &vars)?;
                }
                None => {
                    for run in &pass.runs {
                        self.counters
                            .insert(run.cell, counter_readings::skipped(pass.cache));
                    }
                }
            }
        }
        // A profiler job's worker runs under ncu; its cells wait for ncu's report.
        let ncu = match job.env.profiler {
            None => None,
            Some(cache) => match profiler::ncu() {
                Some(ncu) => Some((ncu, cache)),
                None => return self.skip_unprofiled(job.runs),
            },
        };
        let ncu = ncu.as_ref().map(|(path, cache)| (path.as_path(), *cache));
        self.run_pass(Pass::Timed { ncu }, job.runs, &vars)
    }

    /// Runs `runs` in workers started with `vars` (under ncu where the pass says); a worker
    /// that dies or overruns a cell's timeout is replaced by a new one for the cells after
    /// it.
    fn run_pass(&mut self, pass: Pass, runs: Vec<Run>, vars: &[(String, String)]) -> Result<()> {
        let mut pending: Vec<(Run, CellRecord)> = Vec::new();
        let mut remaining: VecDeque<Run> = runs.into();
        loop {
            self.drop_taken(&mut remaining)?;
            let Some(&first) = remaining.front() else {
                break;
            };
            self.bar.set_message(self.plan.cells[first.cell].id.clone());
            // The GPU warm-up is owed by the first worker that times.
            let warmup = match pass {
                Pass::Timed { .. } => std::mem::take(&mut self.gpu_warmup),
                Pass::Counted { .. } => Duration::ZERO,
            };
            let report = tempfile::NamedTempFile::new()
                .context("cannot create a file for the profiler's report")?;
            let counters = match pass {
                Pass::Counted { pass, .. } => &pass.counters[..],
                Pass::Timed { .. } => &[],
            };
            let program = match pass.ncu() {
                Some((ncu, cache)) => {
                    profiler::wrap(ncu, self.program, cache, counters, report.path())
                }
                None => self.program.clone(),
            };
            let mut worker = self.start_worker(&program, &remaining, vars, warmup, pass)?;
            let deadline = self.plan.cells[first.cell].knobs.timeout.0 + warmup;
            let (ended, last_message) =
                self.follow(&mut worker, &mut remaining, &mut pending, pass, deadline)?;
            let Some(run) = remaining.front().copied() else {
                // ncu writes its report as the worker exits: no limit on a profiled one.
                let exiting = Exiting {
                    worker,
                    last_message,
                    limit: (!pass.profiled()).then_some(EXIT_LIMIT),
                };
                if pass.profiled() {
                    reap(exiting, self.meta, &self.bar)?;
                    self.store_profiled(&mut pending, report.path(), pass)?;
                } else {
                    self.exiting = Some(exiting);
                }
                return Ok(());
            };
            // The worker is done or stuck: end it, keep what it reported (a profiled
            // worker's cells only now get their samples, from ncu's report, unless the run
            // is stopping), then record the cell it did not finish.
            if !matches!(ended, WorkerEvent::Closed) {
                worker.kill();
            }
            let (exit, stderr) = worker.finish()?;
            // A signal that stops the run may have reached the worker too: its cell is left
            // to the resume, and so are a profiled worker's reported cells, whose samples
            // were to come from the report of the ncu that the stop killed.
            if matches!(ended, WorkerEvent::Interrupted) || stop::stopping(Some(&exit)) {
                pending.clear();
                return Ok(());
            }
            self.store_profiled(&mut pending, report.path(), pass)?;
            let (kind, why) = match ended {
                WorkerEvent::TimedOut(limit) => worker_process::timed_out(limit, &stderr),
                // Its last cell was reported failed; a new worker takes the rest.
                _ if exit.code() == Some(crate::protocol::EXIT_CONTEXT_LOST as i32) => continue,
                _ => worker_process::lost(&exit, &stderr),
            };
            self.fail_in(pass, run, kind, why)?;
            remaining.pop_front();
        }
        Ok(())
    }

    /// Starts `program` as the worker of the `remaining` runs, and lets it onto the device
    /// once the previous worker has exited.
    fn start_worker(
        &mut self,
        program: &WorkerProgram,
        remaining: &VecDeque<Run>,
        vars: &[(String, String)],
        warmup: Duration,
        pass: Pass,
    ) -> Result<WorkerProcess> {
        let runs: Vec<Run> = remaining.iter().copied().collect();
        let mut sent = worker_process::job_for(self.exp, self.plan, &runs, false, warmup);
        sent.run_cache = Some(self.run_cache.path().to_path_buf());
        sent.sample_seed = self.sample_seed;
        sent.describe_device = self.meta.device.is_none();
        sent.claiming = (self.claiming.as_ref()).map(|c| c.of_cells(runs.iter().map(|r| r.cell)));
        if let Pass::Counted { .. } = pass {
            sent.cells.iter_mut().for_each(counter_passes::counting);
            // Nothing here is timed: no probe launches among the counted ones (a kernel of
            // the probe's name would take them for its own), no NVML sampling.
            sent.telemetry.clock_probe = false;
            sent.telemetry.interval_ms = 0;
        }
        // Under the profiler, the previous worker exits first (ncu starts its own
        // processes); otherwise the new one starts while it exits and waits for its
        // exit before it creates its context: a fresh process meets an idle GPU, as a
        // program run from a shell does.
        if pass.profiled() {
            self.settle()?;
        }
        let mut worker = WorkerProcess::start_held(program, sent, vars)?;
        if let Err(e) = self.settle() {
            // Released by its drop, it would run its cells for nobody.
            worker.kill();
            return Err(e);
        }
        worker.release();
        Ok(worker)
    }

    /// Follows a worker's messages, storing each cell it reports in the order of
    /// `remaining` (a profiled worker's go to `pending`, to wait for ncu's report), until
    /// it closes, overruns the `deadline` of the cell it is on, or is interrupted: that
    /// ending, with when it last spoke.
    fn follow(
        &mut self,
        worker: &mut WorkerProcess,
        remaining: &mut VecDeque<Run>,
        pending: &mut Vec<(Run, CellRecord)>,
        pass: Pass,
        mut deadline: Duration,
    ) -> Result<(WorkerEvent, Instant)> {
        let profiled = pass.profiled();
        let mut last_message = Instant::now();
        let ended = loop {
            let next = worker.next(deadline, &INTERRUPTED);
            if matches!(next, WorkerEvent::Message(_)) {
                last_message = Instant::now();
            }
            match next {
                WorkerEvent::Message(Message::Ready { device, startup }) => {
                    // A counter pass's start-up is the profiler's, not the device's.
                    if self.meta.device.is_none() && matches!(pass, Pass::Timed { .. }) {
                        let mut device = *device;
                        device.nvrtc_version = cuda::nvrtc_version();
                        self.meta.device = Some(device);
                        self.meta.startup = Some(startup);
                        self.writer.write_meta(self.meta)?;
                    }
                }
                WorkerEvent::Message(Message::Cell(rec)) => {
                    let run = remaining
                        .pop_front()
                        .context("a worker reported more cells than it was given")?;
                    if (run.cell, run.process) != (rec.cell, rec.process) {
                        worker.kill();
                        bail!(
                            "a worker reported cell {} instead of {}",
                            rec.id,
                            self.plan.cells[run.cell].id
                        );
                    }
                    if profiled {
                        pending.push((run, *rec));
                    } else if let Err(e) = self.store(run, &rec) {
                        worker.kill();
                        return Err(e);
                    }
                    match remaining.front() {
                        Some(next) => {
                            let cell = &self.plan.cells[next.cell];
                            self.bar.set_message(cell.id.clone());
                            deadline = cell.knobs.timeout.0;
                        }
                        // Done: only its exit is left.
                        None if !profiled => break WorkerEvent::Closed,
                        None => {}
                    }
                }
                WorkerEvent::Message(Message::Taken { cell, process }) => {
                    let run = remaining.pop_front();
                    if run != Some(Run { cell, process }) {
                        worker.kill();
                        bail!("a worker reported cell {cell} taken out of turn");
                    }
                    self.count_taken(Run { cell, process });
                    match remaining.front() {
                        Some(next) => deadline = self.plan.cells[next.cell].knobs.timeout.0,
                        None if !profiled => break WorkerEvent::Closed,
                        None => {}
                    }
                }
                WorkerEvent::Message(Message::Fatal { error }) => {
                    worker.kill();
                    bail!("{error}");
                }
                WorkerEvent::Malformed(why) => {
                    worker.kill();
                    bail!("{why}");
                }
                other => break other,
            }
        };
        Ok((ended, last_message))
    }

    /// Waits for the exiting worker, if there is one.
    fn settle(&mut self) -> Result<()> {
        match self.exiting.take() {
            Some(e) => reap(e, self.meta, &self.bar),
            None => Ok(()),
        }
    }

    /// The variables a worker in `env` starts with; an error when its JIT cache could not
    /// be prepared (the job's cells are then recorded failed with it).
    fn worker_vars(&mut self, env: &ProcessEnv) -> Result<Vec<(String, String)>, PrimeError> {
        let (program, exp, plan) = (self.program, self.exp, self.plan);
        let runs = self.plan.priming_runs(env);
        let timeout: Duration = runs
            .iter()
            .map(|r| self.plan.cells[r.cell].knobs.timeout.0)
            .max()
            .unwrap_or(DEFAULT_TIMEOUT);
        let (exiting, meta, bar) = (&mut self.exiting, &mut *self.meta, &self.bar);
        self.caches.vars(env, |vars| {
            // A priming process loads kernels on the device: not beside another worker.
            if let Some(e) = exiting.take() {
                reap(e, meta, bar).map_err(|e| PrimeError::Wait(shared(e)))?;
            }
            super::jit_cache::prime(
                program,
                worker_process::job_for(exp, plan, &runs, true, Duration::ZERO),
                vars,
                timeout,
            )
        })
    }
}

#[path = "scheduler_claims.rs"]
mod claims;
#[path = "scheduler_profiled.rs"]
mod profiled;
#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
