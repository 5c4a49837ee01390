//! `runner sbatch`: an experiment as a Slurm job array, one task per part (`--shard i/N`),
//! each into its own folder and resumed where it stopped when Slurm requeues it, then a
//! job that merges the parts once the array is over.

use super::Subset;
use crate::experiment::Experiment;
use crate::plan::{self, Plan};
use crate::store;
use anyhow::{bail, Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the array asks of Slurm.
pub struct Request {
    pub parts: usize,
    pub gpus_per_task: u32,
    pub partition: Option<String>,
    /// Minutes per task; None: from `plan`'s estimate.
    pub minutes: Option<u64>,
}

/// Shell-quotes one word.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Minutes a part may take: three times its share of the plan's estimate (a lower bound
/// where no previous run gives cell times), and at least ten.
fn minutes_for(exp: &Experiment, plan: &Plan, parts: usize) -> u64 {
    let previous = store::previous_wall_times(&Path::new("reports").join(&exp.name));
    let seconds = plan::estimated_seconds(exp, plan, &previous) / parts as f64;
    ((3.0 * seconds / 60.0).ceil() as u64).max(10)
}

/// Writes `dir/slurm/array.sbatch` and `dir/slurm/merge.sbatch` for `path`'s experiment
/// (both paths as seen from where sbatch is called); returns the scripts' paths.
pub fn write(
    exp: &Experiment,
    plan: &Plan,
    path: &Path,
    dir: &Path,
    subset: &Subset,
    req: &Request,
) -> Result<(PathBuf, PathBuf)> {
    if req.parts == 0 || req.parts > plan.cells.len() {
        bail!(
            "--parts {}: give 1 to {} (the plan's cells)",
            req.parts,
            plan.cells.len()
        );
    }
    // The tasks start where sbatch is called, where `path` and `dir` are as given.
    let runner = std::env::current_exe().context("cannot find the runner's own binary")?;
    let slurm = dir.join("slurm");
    std::fs::create_dir_all(&slurm)
        .with_context(|| format!("cannot create {}", slurm.display()))?;
    let minutes = req
        .minutes
        .unwrap_or_else(|| minutes_for(exp, plan, req.parts));
    let q = |p: &Path| quote(&p.to_string_lossy());
    let mut head = format!("#!/bin/bash\n#SBATCH --job-name=runner-{}\n", exp.name);
    if let Some(p) = &req.partition {
        let _ = writeln!(head, "#SBATCH --partition={p}");
    }
    let mut array = head.clone();
    let _ = writeln!(array, "#SBATCH --array=0-{}", req.parts - 1);
    if req.gpus_per_task > 0 {
        let _ = writeln!(array, "#SBATCH --gpus-per-task={}", req.gpus_per_task);
    }
    let _ = writeln!(array, "#SBATCH --time={minutes}");
    let _ = writeln!(array, "#SBATCH --requeue");
    let _ = writeln!(array, "#SBATCH --output={}/part-%a.log", slurm.display());
    let extra: String = subset
        .arguments()
        .iter()
        .map(|a| format!(" {}", quote(a)))
        .collect();
    let _ = write!(
        array,
        "set -u\npart={parts}/part$SLURM_ARRAY_TASK_ID\n\
         # A requeued task carries on where its part stopped.\n\
         if [ -f \"$part/{name}/run.json\" ]; then\n  \
         exec {runner} run --resume \"$part/{name}\"\nfi\n\
         exec {runner} run {exp} --shard \"$SLURM_ARRAY_TASK_ID/{n}\" --out \"$part\"{extra}\n",
        parts = q(&dir.join("parts")),
        name = exp.name,
        runner = q(&runner),
        exp = q(path),
        n = req.parts,
    );
    let mut merge = head;
    let _ = writeln!(merge, "#SBATCH --time=10");
    let _ = writeln!(merge, "#SBATCH --output={}/merge.log", slurm.display());
    let _ = write!(
        merge,
        "set -u\nexec {runner} merge {parts}/part*/{name} --out {dir}\n",
        runner = q(&runner),
        parts = q(&dir.join("parts")),
        name = exp.name,
        dir = q(dir),
    );
    let (a, m) = (slurm.join("array.sbatch"), slurm.join("merge.sbatch"));
    std::fs::write(&a, array).with_context(|| format!("cannot write {}", a.display()))?;
    std::fs::write(&m, merge).with_context(|| format!("cannot write {}", m.display()))?;
    Ok((a, m))
}

/// Submits the array, then the merge to run once every task has ended; the two job ids.
pub fn submit(array: &Path, merge: &Path) -> Result<(String, String)> {
    let sbatch = |args: &[&str]| -> Result<String> {
        let out = Command::new("sbatch")
            .arg("--parsable")
            .args(args)
            .output()
            .context("cannot run sbatch: is Slurm installed and on PATH?")?;
        if !out.status.success() {
            bail!(
                "sbatch failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let id = String::from_utf8_lossy(&out.stdout);
        Ok(id.trim().split(';').next().unwrap_or("").to_string())
    };
    let job = sbatch(&[&array.to_string_lossy()])?;
    let after = format!("--dependency=afterany:{job}");
    let merged = sbatch(&[&after, &merge.to_string_lossy()])?;
    Ok((job, merged))
}
