//! `runner EXPERIMENT` (`runner run`): a run, on one GPU, several, or as a Slurm array, its
//! report rendered, also after an interrupt, and how it ended.

use super::exit_code::{finish, usage};
use crate::cli::{exit, say, RunArgs, Unwritten};
use crate::execute::{self, Start};
use crate::experiment::{DeviceFacts, Experiment, Sources};
use crate::{experiment, plan, report, store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How a run ended.
pub(super) struct Ended {
    /// Every planned run finished (no interrupt).
    complete: bool,
    /// The signal that stopped it early, if one did.
    stopped: Option<execute::Stop>,
    /// Cells that did not end as their kernels expect (failed, suspect, impossible, or a
    /// kernel written to be caught that passed), each as `cell (verdict)`.
    unexpected: Vec<String>,
}

/// What a run ends by saying: its trust, then its findings.
fn print_ending(r: &report::Rendered) -> Result<(), Unwritten> {
    let findings: String = r.findings.iter().map(|f| format!("  - {f}\n")).collect();
    say(&format!("trust: {}\nfindings:\n{findings}", r.trust.line()))
}

/// The cells of a rendered run that did not end as their kernels expect.
fn unexpected(r: &report::Rendered) -> Vec<String> {
    (r.trust.unexpected.iter())
        .map(|(cell, verdict)| format!("{cell} ({})", verdict.word()))
        .collect()
}

/// A run's exit code: as [`finish`]'s, 128 + the signal's number where a signal stopped
/// it (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), or 3 where cells did not end as
/// their kernels expect (unless --allow-failures), so that CI cannot miss a failed or
/// suspect cell.
pub(super) fn ended(result: anyhow::Result<Ended>, args: &RunArgs) -> ExitCode {
    match result {
        Ok(Ended {
            complete: false,
            stopped: Some(stop),
            ..
        }) => ExitCode::from(stop.exit_code()),
        Ok(e) if e.complete && !e.unexpected.is_empty() && !args.allow_failures => {
            const SHOWN: usize = 5;
            let more = match e.unexpected.len().saturating_sub(SHOWN) {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            crate::terminal::tell(&format!(
                "error: {} cell(s) did not end as their kernels expect: {}{more} (the report's first lines say why); --allow-failures exits 0 anyway",
                e.unexpected.len(),
                e.unexpected[..e.unexpected.len().min(SHOWN)].join(", ")
            ));
            ExitCode::from(exit::UNTRUSTED)
        }
        other => finish(other.map(|e| e.complete)),
    }
}

/// Runs an experiment (or resumes a run) and renders its report, also after an interrupt;
/// how it ended.
pub(super) fn run(experiment: Option<PathBuf>, args: &RunArgs) -> anyhow::Result<Ended> {
    let (path, dir, start) = match (&args.resume, experiment) {
        (Some(dir), given) => {
            let path = match given {
                Some(p) => p,
                None => store::Stored::experiment_path(dir)?,
            };
            let start = match args.force {
                true => Start::Replace,
                false => Start::Resume,
            };
            (path, dir.clone(), start)
        }
        (None, Some(path)) => {
            let dir = args.out.join(experiment::name_of(&path)?);
            let start = match args.force {
                true => Start::Replace,
                false => Start::New,
            };
            (path, dir, start)
        }
        (None, None) => return Err(usage(NO_EXPERIMENT)),
    };
    let subset = execute::Subset {
        only: args.only.clone(),
        set: args.set.clone(),
        shard: args.shard,
        claims: args.claims.clone(),
    };
    if let Some(list) = &args.devices {
        if args.resume.is_some() || args.shard.is_some() {
            return Err(usage("--devices runs a part per GPU and merges them: resume a part with `runner run --resume DIR/parts/gpuN/NAME`, then `runner merge`; --shard splits across machines instead"));
        }
        let devices = execute::devices::parse(list)?;
        let execute::devices::Outcome {
            finished,
            parts,
            stopped,
            folder,
        } = execute::devices::run(
            &path,
            &dir,
            &devices,
            &subset,
            args.each,
            args.allow_clock_changes,
            args.force,
        )?;
        if let Some(stop) = stopped {
            return stopped_over_gpus(stop, &parts, &dir);
        }
        if !args.each {
            let report = report::render_dir(&folder, None)?;
            say(&format!(
                "wrote {} ({} GPUs)\n",
                report.path.display(),
                devices.len()
            ))?;
            print_ending(&report)?;
            return Ok(Ended {
                complete: finished,
                stopped: None,
                unexpected: unexpected(&report),
            });
        }
        return report_each(&parts, finished);
    }
    let outcome = execute::run(&path, &dir, start, args.allow_clock_changes, &subset)?;
    let report = report::render_dir(&outcome.folder, None)?;
    if outcome.complete {
        say(&format!("wrote {}\n", report.path.display()))?;
    } else {
        say(&format!(
            "{}: wrote {} with the cells that finished; `runner run --resume {}` runs the rest\n",
            outcome
                .stopped
                .map_or("interrupted".into(), execute::Stop::said),
            report.path.display(),
            outcome.folder.dir().display()
        ))?;
    }
    print_ending(&report)?;
    Ok(Ended {
        complete: outcome.complete,
        stopped: outcome.stopped,
        unexpected: unexpected(&report),
    })
}

/// The reports of a run with `--each`: every GPU's part, each after the first compared with
/// the first's.
fn report_each(parts: &[PathBuf], finished: bool) -> anyhow::Result<Ended> {
    let mut untrusted = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let part = store::FolderLock::take(part)?;
        if i > 0 {
            report::set_comparison(&part, &parts[0])?;
        }
        let report = report::render_dir(&part, None)?;
        say(&format!("wrote {}\n", report.path.display()))?;
        print_ending(&report)?;
        untrusted.extend(unexpected(&report));
    }
    Ok(Ended {
        complete: finished,
        stopped: None,
        unexpected: untrusted,
    })
}

/// A run over several GPUs that `stop` ended: each part stopped after its finished cells,
/// and resumes on its own; nothing was merged.
fn stopped_over_gpus(stop: execute::Stop, parts: &[PathBuf], dir: &Path) -> anyhow::Result<Ended> {
    let resume: Vec<String> = (parts.iter())
        .map(|p| format!("`runner run --resume {}`", p.display()))
        .collect();
    let rest = match resume.is_empty() {
        true => "no part had written a run yet".to_string(),
        false => format!("{} run the rest, then `runner merge`", resume.join(", ")),
    };
    say(&format!(
        "{}: each GPU's part stopped after its finished cells; {rest} (nothing was merged into {})\n",
        stop.said(),
        dir.display()
    ))?;
    Ok(Ended {
        complete: false,
        stopped: Some(stop),
        unexpected: Vec::new(),
    })
}

pub(super) fn sbatch(
    path: &Path,
    out: &Path,
    subset: &execute::Subset,
    request: &execute::slurm::Request,
    submit: bool,
) -> anyhow::Result<()> {
    let exp = load(path, &subset.set)?;
    let plan = plan::Plan::new(&exp)?.select(&subset.only)?;
    let dir = out.join(&exp.name);
    let (array, merge) = execute::slurm::write(&exp, &plan, path, &dir, subset, request)?;
    say(&format!(
        "wrote {} and {}\n",
        array.display(),
        merge.display()
    ))?;
    if submit {
        let (job, merged) = execute::slurm::submit(&array, &merge)?;
        say(&format!(
            "submitted array job {job} ({} parts) and merge job {merged}\n",
            request.parts
        ))?;
    }
    Ok(())
}

/// Reads and checks an experiment against the assumed device: needs no GPU.
fn load(path: &Path, set: &[String]) -> anyhow::Result<Experiment> {
    let facts = DeviceFacts::nominal();
    Ok(Experiment::load_set(path, &facts, Sources::Read, set)?)
}

const NO_EXPERIMENT: &str =
    "no experiment given: try `runner experiments/cold-start.toml`, or `runner --help`";
