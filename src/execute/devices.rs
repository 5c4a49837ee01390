//! `--devices 0,1` (or `all`): one run spread over several GPUs of this machine. Each GPU
//! runs a part of the plan (`--shard i/N`) in a runner of its own that sees only that GPU
//! (`CUDA_VISIBLE_DEVICES`, counted within the list the runner itself was started with), in
//! `DIR/parts/gpu<i>/`, taking cells from one queue (`--claims DIR/parts/claims-<when>`,
//! one per run): its own share first, then the cells no part has reached. The parts are
//! then merged into `DIR`, each cell marked with the GPU that ran it. With `--each`, every
//! GPU runs the whole plan instead, so that "identical" GPUs can be compared cell by cell.

use super::stop::{self, Stop};
use super::Subset;
use crate::plan::shard::Shard;
use crate::store::{self, FolderLock};
use anyhow::{bail, Context, Result};
use rustix::process::{kill_process, Pid};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

/// What a run over several GPUs came to.
pub struct Outcome {
    /// Every part finished (and, but with `--each`, merged complete).
    pub finished: bool,
    /// Each part's run folder that this run wrote.
    pub parts: Vec<PathBuf>,
    /// The signal that stopped the run, passed on to every part: the parts stopped after
    /// their finished cells and resume on their own; nothing was merged.
    pub stopped: Option<Stop>,
    /// `dir`, locked until its report is written.
    pub folder: FolderLock,
}

/// The GPUs `--devices` names: a list of ordinals, or `all` the driver sees.
pub fn parse(text: &str) -> Result<Vec<String>> {
    let list: Vec<String> = match text.trim() {
        "all" => {
            let n = cuda::device_count().map_err(|e| anyhow::anyhow!("--devices all: {e}"))?;
            (0..n).map(|i| i.to_string()).collect()
        }
        t => t.split(',').map(|d| d.trim().to_string()).collect(),
    };
    if list.is_empty() || list.iter().any(|d| d.parse::<u32>().is_err()) {
        bail!("--devices {text}: write GPU ordinals such as 0,1, or all");
    }
    let mut unique = list.clone();
    unique.sort();
    unique.dedup();
    if unique.len() != list.len() {
        bail!("--devices {text}: a GPU is named twice");
    }
    Ok(list)
}

/// What a part's `CUDA_VISIBLE_DEVICES` holds for the GPU the user calls `ordinal`: the
/// ordinal itself, or where the runner was started with `CUDA_VISIBLE_DEVICES` already set
/// (`inherited`), that list's entry at the ordinal (ordinals count the GPUs this process sees).
fn visible_as(ordinal: &str, inherited: Option<&str>) -> Result<String> {
    let Some(list) = inherited.map(str::trim).filter(|l| !l.is_empty()) else {
        return Ok(ordinal.to_string());
    };
    let entries: Vec<&str> = list.split(',').map(str::trim).collect();
    let index: usize = ordinal.parse().context("a GPU ordinal")?;
    match entries.get(index) {
        Some(entry) => Ok(entry.to_string()),
        None => bail!(
            "--devices names GPU {ordinal}, but CUDA_VISIBLE_DEVICES={list} shows this runner {} GPU(s): name ordinals below {}, or unset CUDA_VISIBLE_DEVICES",
            entries.len(),
            entries.len()
        ),
    }
}

/// Runs `path` over `devices` into `dir` and (but with `each`) merges the parts there,
/// `dir` locked from before the parts start to after its report. SIGINT, SIGTERM and SIGHUP
/// are passed on to every part, which stops after its finished cells, as a run on one GPU
/// does. `allow_clock_changes` and `force` are passed on to every part (each locks its own
/// GPU's clocks where the experiment asks; each replaces its folder's earlier part). A run
/// already in `dir` is refused, before any part starts, unless `force`.
pub fn run(
    path: &Path,
    dir: &Path,
    devices: &[String],
    subset: &Subset,
    each: bool,
    allow_clock_changes: bool,
    force: bool,
) -> Result<Outcome> {
    if !cuda::driver_present() {
        bail!(cuda::NO_DRIVER);
    }
    stop::stop_on_signals()?;
    let me = std::env::current_exe().context("cannot find the runner's own binary")?;
    let name = crate::experiment::name_of(path)?;
    // Each part locks its own folder below this one.
    let folder = store::new_run_folder(dir, force)?;
    if !each {
        // Only checked here: the merge at the end makes room.
        store::may_write(&folder, force)?;
    }
    // A second's margin for file systems whose clock for times of change runs coarse.
    let started = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    let inherited = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let claims = new_queue(dir, force)?;
    let mut children = Vec::new();
    let mut parts: Vec<PathBuf> = Vec::new();
    for (i, gpu) in devices.iter().enumerate() {
        let visible = visible_as(gpu, inherited.as_deref())?;
        let out = dir.join("parts").join(format!("gpu{gpu}"));
        let shard = Shard {
            index: i,
            count: devices.len(),
        };
        let mut cmd = Command::new(&me);
        cmd.arg("run")
            .arg(path)
            .arg("--out")
            .arg(&out)
            .env("CUDA_VISIBLE_DEVICES", visible);
        if !each {
            cmd.arg("--shard").arg(shard.to_string());
            cmd.arg("--claims").arg(&claims);
        }
        if allow_clock_changes {
            cmd.arg("--allow-clock-changes");
        }
        // The parts' cells are judged where they are reported: here, after the merge.
        cmd.arg("--allow-failures");
        if force {
            cmd.arg("--force");
        }
        cmd.args(subset.arguments());
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start the runner for GPU {gpu}"))?;
        children.push((gpu.clone(), child));
        parts.push(out.join(&name));
    }
    let (finished, stopped) = wait_for_parts(children)?;
    parts.retain(|p| written_since(p, started));
    if let Some(stop) = stopped {
        return Ok(Outcome {
            finished: false,
            parts,
            stopped: Some(stop),
            folder,
        });
    }
    if parts.is_empty() {
        bail!("no GPU's part wrote a run");
    }
    if each {
        return Ok(Outcome {
            finished,
            parts,
            stopped: None,
            folder,
        });
    }
    let present: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    let merged = store::read_parts(&present, dir)?.write(&folder, force)?;
    for w in &merged.warnings {
        crate::terminal::tell(&format!("warning: {w}"));
    }
    Ok(Outcome {
        finished: finished && merged.meta.complete,
        parts,
        stopped: None,
        folder,
    })
}

/// The parts' one queue of cells: a folder of this run's own in `dir/parts/`, so that no
/// claim of an earlier run there (an interrupted one, whose parts resume through theirs)
/// is taken for this run's; `force`, which replaces the parts, removes the earlier queues.
fn new_queue(dir: &Path, force: bool) -> Result<PathBuf> {
    let parts = dir.join("parts");
    if force {
        for entry in std::fs::read_dir(&parts).into_iter().flatten() {
            let path = entry.context("cannot list the run's parts")?.path();
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(QUEUE))
            {
                std::fs::remove_dir_all(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
            }
        }
    }
    Ok(parts.join(queue_name()))
}

/// How the folders of a run's queues of cells are named: `claims-` and when the run began.
const QUEUE: &str = "claims-";

/// A new queue's folder name, one per run started.
pub fn queue_name() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let ns = since.map_or(0, |d| d.as_nanos());
    format!("{QUEUE}{ns:x}-{:x}", std::process::id())
}

/// Whether the part in `dir` wrote its run since `started`: a part that wrote nothing may
/// have left an older run there, which is left out (and said).
fn written_since(dir: &Path, started: std::time::SystemTime) -> bool {
    let written = std::fs::metadata(dir.join(store::RUN_FILE)).and_then(|m| m.modified());
    let fresh = written.is_ok_and(|t| t >= started);
    if !fresh && dir.join(store::RUN_FILE).exists() {
        crate::terminal::tell(&format!(
            "warning: {} holds an earlier run, left out of the merge",
            dir.display()
        ));
    }
    fresh
}

/// Waits for every part's runner, passing a stopping signal this runner gets on to those
/// still running (a `kill` of this runner alone, or a scheduler that signals only it);
/// whether every part ended well, and the signal, if one came.
fn wait_for_parts(children: Vec<(String, Child)>) -> Result<(bool, Option<Stop>)> {
    let (mut finished, mut passed_on) = (true, false);
    let mut running = children;
    while !running.is_empty() {
        if let (Some(stop), false) = (stop::stopped(), passed_on) {
            for (_, child) in &running {
                let pid = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
                // A part that has just ended cannot be signalled, and needs not be.
                let _ = pid.map(|pid| kill_process(pid, stop.signal()));
            }
            passed_on = true;
        }
        let mut still = Vec::new();
        for (gpu, mut child) in running {
            match child.try_wait().context("cannot wait for a GPU's runner")? {
                Some(status) if !status.success() && stop::stopped().is_none() => {
                    crate::terminal::tell(&format!(
                        "warning: the part on GPU {gpu} ended with {status}"
                    ));
                    finished = false;
                }
                Some(_) => finished &= stop::stopped().is_none(),
                None => still.push((gpu, child)),
            }
        }
        running = still;
        if !running.is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok((finished, stop::stopped()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_count_the_gpus_an_inherited_visible_list_leaves() {
        assert_eq!(visible_as("1", None).unwrap(), "1");
        assert_eq!(visible_as("1", Some("")).unwrap(), "1");
        assert_eq!(visible_as("0", Some("2,3")).unwrap(), "2");
        assert_eq!(visible_as("1", Some("GPU-a, GPU-b")).unwrap(), "GPU-b");
        let e = visible_as("2", Some("2,3")).unwrap_err().to_string();
        assert!(
            e.contains("CUDA_VISIBLE_DEVICES=2,3") && e.contains("below 2"),
            "{e}"
        );
    }

    #[test]
    fn a_device_list_is_ordinals_each_once() {
        assert_eq!(parse("0, 1").unwrap(), ["0", "1"]);
        assert!(parse("0,0").is_err());
        assert!(parse("gpu0").is_err());
    }
}
