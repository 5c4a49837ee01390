//! `runner sbatch`: an experiment as a Slurm job array, one task per part (`--shard i/N`),
//! each into its own folder and resumed where it stopped when Slurm requeues it, then a
//! job that merges the parts once the array is over. Every value in a script is
//! shell-quoted (`shlex`), and one that no quoting carries safely (a newline, a NUL, an
//! `#SBATCH` value that would need quotes) is refused.

use super::Subset;
use crate::experiment::Experiment;
use crate::plan::{self, Plan};
use crate::{files, store};
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

/// The most minutes a task may ask for: a year.
pub const MAX_MINUTES: u64 = 366 * 24 * 60;

/// One word for a line of bash, shell-quoted; refused where it holds a newline or a NUL,
/// which would end the line (or the string) whatever the quoting.
fn quote(what: &str, word: &str) -> Result<String> {
    if word.contains(['\n', '\r', '\0']) {
        bail!("{what} {word:?} holds a newline or NUL, which a job script cannot carry: rename it");
    }
    shlex::try_quote(word)
        .map(|q| q.into_owned())
        .map_err(|e| anyhow::anyhow!("{what} {word:?} cannot be quoted: {e}"))
}

/// A value of an `#SBATCH` line, which sbatch reads without a shell: refused unless it is
/// made of characters that need no quoting, none of them a `%` (Slurm expands `%j` and the
/// like in file names), and does not open with a `-` (an option, to sbatch).
fn sbatch_value<'a>(what: &str, value: &'a str) -> Result<&'a str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-.,/:+=@~".contains(c);
    if value.is_empty() || !value.chars().all(plain) || value.starts_with('-') {
        bail!("{what} {value:?}: an #SBATCH line takes letters, digits and `_-.,/:+=@~` only, not opening with `-`; choose one written so");
    }
    Ok(value)
}

/// Minutes a part may take: three times its share of the plan's estimate (modelled where
/// no previous run gives cell times), and at least ten.
fn minutes_for(exp: &Experiment, plan: &Plan, parts: usize) -> u64 {
    let previous = store::previous_wall_times(&Path::new("reports").join(&exp.name));
    let estimate = plan::cost::Estimate::new(exp, plan, &previous);
    let seconds = estimate.total_s(plan) / parts as f64;
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
    if !(1..=MAX_MINUTES).contains(&req.minutes.unwrap_or(1)) {
        bail!("--minutes: give 1 to {MAX_MINUTES} minutes per task");
    }
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
    let minutes = req
        .minutes
        .unwrap_or_else(|| minutes_for(exp, plan, req.parts));
    let q = |what: &str, p: &Path| quote(what, &p.to_string_lossy());
    let logs = slurm.to_string_lossy();
    let logs = sbatch_value("the output folder", &logs)?;
    let mut head = format!(
        "#!/bin/bash\n#SBATCH --job-name=runner-{}\n",
        sbatch_value("the experiment's name", &exp.name)?
    );
    if let Some(p) = &req.partition {
        let _ = writeln!(
            head,
            "#SBATCH --partition={}",
            sbatch_value("--partition", p)?
        );
    }
    let mut array = head.clone();
    let _ = writeln!(array, "#SBATCH --array=0-{}", req.parts - 1);
    if req.gpus_per_task > 0 {
        let _ = writeln!(array, "#SBATCH --gpus-per-task={}", req.gpus_per_task);
    }
    let _ = writeln!(array, "#SBATCH --time={minutes}");
    let _ = writeln!(array, "#SBATCH --requeue");
    let _ = writeln!(array, "#SBATCH --output={logs}/part-%a.log");
    let extra = subset
        .arguments()
        .iter()
        .map(|a| quote("an argument", a).map(|a| format!(" {a}")))
        .collect::<Result<String>>()?;
    let (runner, parts, name) = (
        q("the runner's path", &runner)?,
        q("the output folder", &dir.join("parts"))?,
        quote("the experiment's name", &exp.name)?,
    );
    let _ = write!(
        array,
        "set -u\npart={parts}/part$SLURM_ARRAY_TASK_ID\n\
         # A requeued task carries on where its part stopped.\n\
         if [ -f \"$part\"/{name}/run.json ]; then\n  \
         exec {runner} run --resume \"$part\"/{name}\nfi\n\
         exec {runner} run {exp} --shard \"$SLURM_ARRAY_TASK_ID/{n}\" --claims {queue} --out \"$part\"{extra}\n",
        exp = q("the experiment's path", path)?,
        n = req.parts,
        // This array's own queue: a script written again starts another.
        queue = q("the queue's folder", &dir.join("parts").join(super::devices::queue_name()))?,
    );
    let mut merge = head;
    let _ = writeln!(merge, "#SBATCH --time=10");
    let _ = writeln!(merge, "#SBATCH --output={logs}/merge.log");
    let _ = write!(
        merge,
        "set -u\nexec {runner} merge {parts}/part*/{name} --out {dir}\n",
        dir = q("the output folder", dir)?,
    );
    files::create_dir(&slurm).with_context(|| format!("cannot create {}", slurm.display()))?;
    let (a, m) = (slurm.join("array.sbatch"), slurm.join("merge.sbatch"));
    files::write(&a, array).with_context(|| format!("cannot write {}", a.display()))?;
    files::write(&m, merge).with_context(|| format!("cannot write {}", m.display()))?;
    Ok((a, m))
}

/// The job id in `sbatch --parsable`'s answer (`ID` or `ID;CLUSTER`), refused unless it is
/// one: the answer is passed on to the next `sbatch` as its `--dependency`, and shown.
fn job_id(answer: &[u8]) -> Result<String> {
    const MAX_ANSWER_BYTES: usize = 4096;
    let text = String::from_utf8_lossy(&answer[..answer.len().min(MAX_ANSWER_BYTES)]);
    let id = text.trim().split(';').next().unwrap_or("");
    match !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit()) {
        true => Ok(id.to_string()),
        false => bail!(
            "sbatch answered `{}`, which is not a job id: nothing more was submitted\n  hint: check `sbatch --parsable` on this cluster; the array job may have been submitted, see squeue",
            crate::terminal::visible(text.trim().chars().take(80).collect::<String>().as_str())
        ),
    }
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
        job_id(&out.stdout)
    };
    // A script's path that opens with `-` would be read as an option: `./` before it.
    let script = |p: &Path| match p.to_string_lossy().starts_with('-') {
        true => Path::new(".").join(p).to_string_lossy().into_owned(),
        false => p.to_string_lossy().into_owned(),
    };
    let job = sbatch(&[&script(array)])?;
    let after = format!("--dependency=afterany:{job}");
    let merged = sbatch(&[&after, &script(merge)])?;
    Ok((job, merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_job_id_is_taken_from_sbatch() {
        assert_eq!(job_id(b"4242\n").unwrap(), "4242");
        assert_eq!(job_id(b"4242;cluster\n").unwrap(), "4242");
        for bad in [&b"$(touch x)"[..], b"", b"12 34", b"\x1b]0;t\x07"] {
            let e = job_id(bad).unwrap_err().to_string();
            assert!(e.contains("not a job id"), "{e}");
            assert!(!e.contains('\u{1b}'), "{e}");
        }
        let huge = vec![b'7'; 20 << 20];
        assert!(job_id(&huge).is_err());
    }
}
