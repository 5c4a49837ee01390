//! The parent side of a run: checks the experiment against the real device, prepares the
//! run folder (new, or an interrupted run resumed), and hands the plan's jobs to the
//! scheduler; Ctrl-C, SIGTERM or SIGHUP stops it after the cells that finished (`stop`).

mod counter_readings;
pub mod devices;
mod jit_cache;
pub mod peer_runs;
pub mod probe;
mod profiler;
mod progress;
mod scheduler;
pub mod slurm;
mod stop;
mod worker_process;

use crate::clock_lock::{self, ClockLock};
use crate::experiment::{ClockPolicy, DeviceFacts, Experiment, Sources};
use crate::plan::cost::{seconds, Estimate};
use crate::plan::{shard::Shard, Plan, Run};
use crate::protocol::DeviceInfo;
use crate::store::{self, FolderLock, RunMeta, Samples, ShardCells, Stored, Writer};
use crate::system;
use anyhow::{bail, Context, Result};
use scheduler::Scheduler;
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::SystemTime;
pub use stop::Stop;
use stop::INTERRUPTED;
use worker_process::WorkerProgram;

/// Where a run's results went (its folder, still locked, for its report), whether every
/// planned run finished, and the signal that stopped it early, if one did.
pub struct Outcome {
    pub folder: FolderLock,
    pub complete: bool,
    pub stopped: Option<Stop>,
}

/// What to do with a run folder that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Start the run afresh in it, refused where another run's finished cells lie there.
    New,
    /// Start the run afresh in it, replacing the run there (`--force`).
    Replace,
    /// Keep its finished cells and run the rest; the experiment and its sources must be
    /// unchanged.
    Resume,
}

/// Which part of an experiment a new run takes: `--only` clauses select cells, `--set`
/// clauses replace sweep parameters' values.
#[derive(Debug, Clone, Default)]
pub struct Subset {
    pub only: Vec<String>,
    pub set: Vec<String>,
    /// `--shard i/N`: part i of N, balanced by `reports/<name>/`'s cell times.
    pub shard: Option<Shard>,
    /// `--claims DIR`: the queue the parts share.
    pub claims: Option<std::path::PathBuf>,
}

impl Subset {
    /// `--only` and `--set` as a runner's command line repeats them for its parts.
    pub fn arguments(&self) -> Vec<String> {
        let only = self
            .only
            .iter()
            .flat_map(|o| ["--only".to_string(), o.clone()]);
        let set = self
            .set
            .iter()
            .flat_map(|s| ["--set".to_string(), s.clone()]);
        only.chain(set).collect()
    }
}

/// Runs `path`'s experiment into `dir`, checked against the real device. `subset`: the
/// part a new run takes (a resumed run keeps its own).
pub fn run(
    path: &Path,
    dir: &Path,
    start: Start,
    allow_clock_changes: bool,
    subset: &Subset,
) -> Result<Outcome> {
    // A folder a new run may not take is refused before anything else, even without a GPU.
    if start != Start::Resume {
        store::may_become_run(dir, start == Start::Replace)?;
    }
    // Checked once, against the real device where there is one; mistakes in the file and
    // a run that cannot resume are reported even without a GPU.
    let device = match cuda::driver_present() {
        true => Some(DeviceInfo::from(cuda::query(0)?)),
        false => None,
    };
    let facts = device
        .as_ref()
        .map_or_else(DeviceFacts::nominal, DeviceInfo::facts);
    let load = |set: &[String]| anyhow::Ok(Experiment::load_set(path, &facts, Sources::Read, set)?);
    let mut exp = load(&subset.set)?;
    clock_lock::check_allowed(exp.clocks, allow_clock_changes, clock_lock::is_root())?;
    let inputs = inputs_sha256(&exp);
    // A resumed run is read under the lock it writes under; a new one reads nothing.
    let (folder, stored) = match start {
        Start::New | Start::Replace => (None, None),
        Start::Resume => {
            let folder = FolderLock::take(dir)?;
            let stored = resumable(dir, path, &inputs)?;
            (Some(folder), Some(stored))
        }
    };
    if stored.is_some()
        && !(subset.only.is_empty() && subset.set.is_empty() && subset.shard.is_none())
    {
        bail!("--only, --set or --shard with --resume: a resumed run keeps the cells it was started with (add --force to start over with a new selection)");
    }
    let (only, set) = match &stored {
        Some((s, _)) => (s.meta.only.clone(), s.meta.set.clone()),
        None => (subset.only.clone(), subset.set.clone()),
    };
    if set != subset.set {
        exp = load(&set)?;
    }
    let (plan, shard) = planned(&exp, &only, stored.as_ref().map(|(s, _)| s), subset)?;
    // A run that could not start a cell leaves the folder as it was (a cluster's part too:
    // its task fails, and the merge names the cells it lacks).
    let Some(device) = device else {
        bail!(cuda::NO_DRIVER);
    };
    // Peers run beside variants the selection kept.
    exp.peers
        .retain(|p| plan.cells.iter().any(|c| c.variant == p.variant));
    let resumed = stored.is_some();
    let folder = match folder {
        Some(folder) => folder,
        None => store::new_run_folder(dir, start == Start::Replace)?,
    };
    // From here a signal leaves a folder that resumes: the run stops between cells.
    stop::stop_on_signals()?;
    let (mut meta, mut writer, done) = match stored {
        Some((stored, samples)) => resume_folder(&folder, &stored, &samples)?,
        None => {
            store::claim(&folder, start == Start::Replace, |_| false)?;
            let meta = new_meta(&exp, &plan, dir, inputs, only, set, shard);
            let writer = Writer::create(&folder, &exp, &meta)?;
            (meta, writer, HashSet::new())
        }
    };
    // Held for the whole run; dropping it resets the clocks, also on an early return.
    let _lock = match exp.clocks {
        ClockPolicy::Lock(mhz) => Some(ClockLock::acquire(mhz, &device.uuid)?),
        _ => None,
    };
    let started = SystemTime::now();
    let complete = run_cells(&exp, &plan, &mut writer, &mut meta, &done)?;
    meta.complete = complete;
    meta.finished_utc = Some(now());
    writer.write_meta(&meta)?;
    // A resumed run's clock ran only for its rest.
    if let (Some(e), Ok(took), false) = (meta.estimate, started.elapsed(), resumed) {
        // A part that takes cells from a queue was estimated by its share alone.
        let share = match meta.shard.as_ref().is_some_and(|s| s.claims.is_some()) {
            true => " for its share, before the cells it took from the others' or left to them",
            false => "",
        };
        crate::terminal::tell(&format!(
            "ran for {}; the plan estimated {} ({} for a first run){share}",
            seconds(took.as_secs_f64()),
            seconds(e.seconds),
            seconds(e.modelled_seconds)
        ));
    }
    Ok(Outcome {
        folder,
        complete,
        stopped: stop::stopped(),
    })
}

/// The plan of the run's cells: those `only` selects and, of them, one shard's part (a
/// resumed run's own, or the part `subset.shard` asks for, balanced by the committed runs'
/// cell times). A part that takes cells from a shared queue keeps the whole plan.
fn planned(
    exp: &Experiment,
    only: &[String],
    stored: Option<&Stored>,
    subset: &Subset,
) -> Result<(Plan, Option<ShardCells>)> {
    let mut plan = Plan::new(exp)?.select(only)?;
    let shard = match (stored, subset.shard) {
        (Some(s), _) => s.meta.shard.clone(),
        (None, Some(shard)) => {
            let previous = store::previous_wall_times(&Path::new("reports").join(&exp.name));
            Some(ShardCells {
                shard,
                cells: plan.shard_ids(shard, &Estimate::new(exp, &plan, &previous)),
                claims: subset
                    .claims
                    .as_deref()
                    .map(|d| claims_in(d, shard))
                    .transpose()?,
            })
        }
        (None, None) => None,
    };
    if let Some(part) = &shard {
        // A part that takes cells from a queue may start with none of its own.
        if part.cells.is_empty() && part.claims.is_none() {
            bail!(
                "--shard {}: this part has no cells (the plan has {}): use fewer parts",
                part.shard,
                plan.cells.len()
            );
        }
        if part.claims.is_none() {
            plan = plan.keep(&part.cells)?;
        }
    }
    Ok((plan, shard))
}

/// Part `shard`'s claims in the queue folder `dir`, made where it is not yet, by its full
/// path (a resumed part finds it from anywhere).
fn claims_in(dir: &Path, shard: Shard) -> Result<crate::protocol::Claims> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--claims {}: cannot make the folder", dir.display()))?;
    let dir = dir
        .canonicalize()
        .with_context(|| format!("--claims {}: cannot find the folder", dir.display()))?;
    Ok(crate::protocol::Claims {
        dir,
        part: shard.to_string(),
    })
}

/// A resumed run's folder: its meta marked unfinished again, a writer that appends to it,
/// and the runs that finished before.
fn resume_folder(
    folder: &FolderLock,
    stored: &Stored,
    samples: &Samples,
) -> Result<(RunMeta, Writer, HashSet<Run>)> {
    let done: HashSet<Run> = stored
        .records
        .iter()
        .map(|r| Run {
            cell: r.cell,
            process: r.process,
        })
        .collect();
    let mut meta = stored.meta.clone();
    meta.finished_utc = None;
    meta.complete = false;
    let writer = Writer::resume(folder, stored, samples, &meta)?;
    Ok((meta, writer, done))
}

/// A new run's meta as it starts: what it runs, where, and the plan's estimate.
fn new_meta(
    exp: &Experiment,
    plan: &Plan,
    dir: &Path,
    inputs: String,
    only: Vec<String>,
    set: Vec<String>,
    shard: Option<ShardCells>,
) -> RunMeta {
    // A part that takes cells from a queue is estimated by its share.
    let share = (shard.as_ref())
        .filter(|s| s.claims.is_some())
        .and_then(|s| plan.clone().keep(&s.cells).ok());
    RunMeta {
        experiment_path: exp.path.clone(),
        experiment_sha256: system::sha256_hex(exp.text.as_bytes()),
        inputs_sha256: Some(inputs),
        git: system::git(&exp.path, dir),
        runner_version: env!("CARGO_PKG_VERSION").to_string(),
        started_utc: now(),
        peers_s: None,
        workers: None,
        estimate: Some(estimate(exp, share.as_ref().unwrap_or(plan))),
        finished_utc: None,
        complete: false,
        only,
        set,
        shard,
        host: system::host(),
        device: None,
        devices: vec![],
        startup: None,
    }
}

/// Runs the plan's cells that are not `done`, then, where all of them ran, the peers;
/// whether the run is complete (nothing interrupted it).
fn run_cells(
    exp: &Experiment,
    plan: &Plan,
    writer: &mut Writer,
    meta: &mut RunMeta,
    done: &HashSet<Run>,
) -> Result<bool> {
    let program = WorkerProgram::this_binary()?;
    let claims = meta.shard.as_ref().and_then(|s| s.claims.clone());
    let claiming = claims.map(|c| crate::protocol::Claiming::of_plan(c, plan));
    let mut peers = peer_runs::Peers::new(exp, &plan.cells).claiming(claiming);
    let complete = Scheduler::new(exp, plan, writer, meta, &program)?.run_all(done, &mut peers)?;
    if complete && !exp.peers.is_empty() {
        let (rows, seconds) = peers.finish();
        writer.write_peers(&rows)?;
        meta.peers_s = Some(seconds);
    }
    // An interrupt during the last peers leaves the run incomplete too.
    Ok(complete && !INTERRUPTED.load(Ordering::SeqCst))
}

/// The plan's estimate of a new run, which it states before the run starts.
fn estimate(exp: &Experiment, plan: &Plan) -> store::RunEstimate {
    let previous = store::previous_wall_times(&Path::new("reports").join(&exp.name));
    let estimate = Estimate::new(exp, plan, &previous);
    crate::terminal::tell(&format!("estimated time: {}", estimate.describe(exp, plan)));
    store::RunEstimate {
        seconds: estimate.total_s(plan),
        modelled_seconds: Estimate::new(exp, plan, &Default::default()).total_s(plan),
    }
}

/// The stored run in `dir`, if the experiment and its sources are as they were.
fn resumable(dir: &Path, path: &Path, inputs: &str) -> Result<(Stored, Samples)> {
    let mut samples = Samples::default();
    let stored = Stored::load(dir, &mut samples)
        .with_context(|| format!("cannot resume: {} is not a readable run", dir.display()))?;
    if stored.meta.inputs_sha256.as_deref() != Some(inputs) {
        bail!(
            "cannot resume {}: {} or a kernel source it names changed since the run started (or the run predates resuming)\n  hint: pass --force to start the run over in that folder",
            dir.display(),
            path.display()
        );
    }
    for w in &stored.warnings {
        crate::terminal::tell(&format!("warning: {w}"));
    }
    Ok((stored, samples))
}

/// The experiment file and every kernel source it compiles, hashed together, with the path,
/// size and modification time of every `.npy` file it reads at any point (they may hold
/// gigabytes).
fn inputs_sha256(exp: &Experiment) -> String {
    let mut all = exp.text.clone().into_bytes();
    for k in &exp.kernels {
        all.extend(format!("\0{}\0", k.source).bytes());
        all.extend(k.code());
        let files: std::collections::BTreeSet<&str> = (k.launches.iter())
            .flat_map(|l| &l.args)
            .filter_map(|a| match a {
                crate::experiment::ArgValue::Buffer {
                    init: crate::experiment::Init::Npy { path, .. },
                    ..
                } => Some(path.as_str()),
                _ => None,
            })
            .collect();
        for path in files {
            let stamp = std::fs::metadata(path)
                .map(|m| format!("{:?} {:?}", m.len(), m.modified().ok()))
                .unwrap_or_default();
            all.extend(format!("\0{path}\0{stamp}").bytes());
        }
    }
    system::sha256_hex(&all)
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
