//! `runner`: declarative GPU benchmarking-methodology experiments, from a TOML file to a
//! Markdown report measured on the GPU.
//!
//! Data walks one way: experiment -> plan -> (worker) samples -> analysis -> report, with
//! all CUDA behind `cuda` and the run folder behind `store`.

mod analysis;
mod cli;
mod clock_lock;
mod compare;
mod cuda;
mod execute;
mod experiment;
mod files;
mod median;
mod method;
mod plan;
mod protocol;
mod report;
mod store;
mod system;
mod telemetry;
mod terminal;
mod worker;

use clap::Parser;
use cli::{exit, say, Cli, Command, RunArgs, Unwritten};
use execute::Start;
use experiment::{DeviceFacts, Experiment, Sources};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// How a run ended.
struct Ended {
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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version are printed on stdout and are no error, but a stdout that takes
        // none of them (a full disk) is.
        Err(e) if !e.use_stderr() => {
            return finish(
                e.print()
                    .map(|()| true)
                    .map_err(|w| Unwritten::from(w).into()),
            )
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(exit::USAGE);
        }
    };
    let result = match cli.command {
        Some(Command::Worker { parent }) => return worker::main(parent),
        Some(Command::Run { experiment, run: r }) => return ended(run(experiment, &r), &r),
        Some(Command::Plan {
            experiment,
            only,
            set,
            compile,
            verbose,
            probe,
        }) => plan(
            &experiment,
            &only,
            &set,
            plan::Shown {
                verbose,
                compiled: compile,
            },
            probe,
        ),
        Some(Command::Keys) => say(&experiment::knobs::reference::markdown()).map_err(Into::into),
        Some(Command::Commands) => say(&cli::markdown::commands()).map_err(Into::into),
        Some(Command::Merge { parts, out, force }) => merge(&parts, &out, force),
        Some(Command::Sbatch {
            experiment,
            parts,
            gpus_per_task,
            partition,
            minutes,
            out,
            only,
            set,
            submit,
        }) => {
            let subset = execute::Subset {
                only,
                set,
                shard: None,
            };
            let request = execute::slurm::Request {
                parts,
                gpus_per_task,
                partition,
                minutes,
            };
            sbatch(&experiment, &out, &subset, &request, submit)
        }
        Some(Command::Report {
            dir,
            template,
            compare,
            check_notes,
        }) => store::FolderLock::take(&dir)
            .and_then(|folder| {
                if let Some(earlier) = compare {
                    report::set_comparison(&folder, &earlier)?;
                }
                report::render_dir(&folder, template.as_deref())
            })
            .and_then(|r| {
                say(&format!("wrote {}\n", r.path.display()))?;
                match (check_notes, r.stale.len()) {
                    (true, n) if n > 0 => Err(anyhow::anyhow!(
                        "the notes quote {n} number(s) this run does not show (listed above)\n  hint: correct them against the run, or give a number from elsewhere a footnote (`1.2 µs[^a]`, `[^a]: where it comes from`)"
                    )),
                    _ => Ok(()),
                }
            }),
        Some(Command::Compare {
            old,
            new,
            threshold,
            floor,
            json,
        }) => return compare(&old, &new, threshold, floor, json.as_deref()),
        None => return ended(run(cli.experiment, &cli.run), &cli.run),
    };
    finish(result.map(|()| true))
}

/// A run's exit code: as [`finish`]'s, 128 + the signal's number where a signal stopped
/// it (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), or 3 where cells did not end as
/// their kernels expect (unless --allow-failures), so that CI cannot miss a failed or
/// suspect cell.
fn ended(result: anyhow::Result<Ended>, args: &RunArgs) -> ExitCode {
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

/// `runner compare`: exit 0 when every cell of OLD compared and none got slower beyond
/// the threshold, 2 when one got slower, 4 when NEW lacks a cell OLD measured or a cell of
/// NEW did not end as its kernel expects (failed, suspect, impossible; before 2), 1 on
/// error.
fn compare(old: &Path, new: &Path, threshold: f64, floor: f64, json: Option<&Path>) -> ExitCode {
    let said = report::run_compare(old, new, threshold, floor, json)
        .and_then(|c| say(&c.markdown).map(|()| c).map_err(Into::into));
    match said {
        Ok(c) if c.gate == compare::Gate::Pass => ExitCode::from(exit::OK),
        Ok(c) if c.gate == compare::Gate::Slower => ExitCode::from(exit::SLOWER),
        Ok(c) => {
            crate::terminal::tell(&format!(
                "error: the comparison is incomplete: {}",
                c.incomplete
            ));
            ExitCode::from(exit::INCOMPLETE)
        }
        Err(e) => finish(Err(e)),
    }
}

/// A mistake in the command line that clap cannot see.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

fn usage(message: &str) -> anyhow::Error {
    Usage(message.to_string()).into()
}

/// The exit code: 0 when done, 130 after an interrupt (its report still written; 143 and
/// 129 where SIGTERM and SIGHUP stopped a run, see [`ended`]), 64 for a wrong command
/// line, 141 without a word where standard output's reader went away (`| head`), 1 on any
/// other error (a full disk under standard output too).
fn finish(result: anyhow::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::from(exit::OK),
        Ok(false) => ExitCode::from(exit::INTERRUPTED),
        Err(e) if e.downcast_ref::<Unwritten>().is_some_and(Unwritten::closed) => {
            ExitCode::from(exit::BROKEN_PIPE)
        }
        Err(e) => {
            // A stderr that takes nothing (a full disk) leaves the exit code to say it.
            let _ =
                std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("error: {e:#}\n"));
            ExitCode::from(match e.is::<Usage>() {
                true => exit::USAGE,
                false => exit::ERROR,
            })
        }
    }
}

/// Reads and checks an experiment against the assumed device: needs no GPU.
fn load(path: &Path, set: &[String]) -> anyhow::Result<Experiment> {
    let facts = DeviceFacts::nominal();
    Ok(Experiment::load_set(path, &facts, Sources::Read, set)?)
}

const NO_EXPERIMENT: &str =
    "no experiment given: try `runner experiments/cold-start.toml`, or `runner --help`";

/// Runs an experiment (or resumes a run) and renders its report, also after an interrupt;
/// how it ended.
fn run(experiment: Option<PathBuf>, args: &RunArgs) -> anyhow::Result<Ended> {
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

fn sbatch(
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

/// `runner merge`: the merged run and its report, even where damage cost a part cells;
/// then an error (exit 1) naming what the merged run lacks for it.
fn merge(parts: &[PathBuf], out: &Path, force: bool) -> anyhow::Result<()> {
    let parts: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    let read = store::read_parts(&parts, out)?;
    let folder = store::new_run_folder(out, force)?;
    let merged = read.write(&folder, force)?;
    for w in &merged.warnings {
        crate::terminal::tell(&format!("warning: {w}"));
    }
    let report = report::render_dir(&folder, None)?;
    let incomplete = match merged.meta.complete {
        true => "",
        false => " (not every cell of the plan ran)",
    };
    say(&format!(
        "merged {} part(s) on {} GPU(s) into {}{incomplete}\n",
        parts.len(),
        merged.meta.devices.len(),
        report.path.display(),
    ))?;
    if !merged.lost.is_empty() {
        anyhow::bail!(
            "damage cost the parts {} cell(s) or record(s), which the merged run lacks (the warnings above say why): {}\n  hint: restore the damaged part from a copy, or run what it lost again with `runner run --resume PART`, then merge again",
            merged.lost.len(),
            merged.lost.join(", ")
        );
    }
    Ok(())
}

/// `plan --probe`: each kernel build timed on the device at its points (`plan::probe`),
/// the probe's account said.
fn probed(
    exp: &Experiment,
    plan: &plan::Plan,
    verbose: bool,
) -> anyhow::Result<plan::probe::Probe> {
    let probe = plan::probe::ProbePlan::new(plan);
    let probed = execute::probe::probe(exp, &probe.plan)?;
    let timed = probed.readings_ns.iter().flatten().count();
    let mut account = format!(
        "probe: {timed} of {} kernel builds, points and cache states timed on the device in {}\n",
        probe.plan.cells.len(),
        plan::cost::seconds(probed.wall_s)
    );
    if verbose {
        for (c, ns) in probe.plan.cells.iter().zip(&probed.readings_ns) {
            if let Some(ns) = ns {
                account += &format!("  {}: {:.1} µs a launch\n", c.id, ns / 1e3);
            }
        }
    }
    for f in &probed.failures {
        account += &format!("  failed, modelled instead: {f}\n");
    }
    say(&account)?;
    Ok(probe.measured(&probed.readings_ns))
}

fn plan(
    path: &Path,
    only: &[String],
    set: &[String],
    shown: plan::Shown,
    probe: bool,
) -> anyhow::Result<()> {
    let facts = match probe {
        true => execute::probe::device_facts()?,
        false => DeviceFacts::nominal(),
    };
    let exp = Experiment::load_set(path, &facts, Sources::Read, set)?;
    let all = plan::Plan::new(&exp)?;
    let total = all.cells.len();
    let plan = all.select(only)?;
    if !only.is_empty() {
        say(&format!(
            "only {} of {total} cells (--only {})\n",
            plan.cells.len(),
            only.join(" --only ")
        ))?;
    }
    let previous = store::previous_wall_times(&Path::new("reports").join(&exp.name));
    let probed = match probe {
        true => probed(&exp, &plan, shown.verbose)?,
        false => Default::default(),
    };
    say(&plan::describe(&exp, &plan, &previous, &probed, shown))?;
    let peers = execute::peer_runs::describe(&exp, &plan.cells);
    if !peers.is_empty() {
        say(&format!(
            "peers (other programs measuring the same, beside a variant):\n{peers}"
        ))?;
    }
    if !shown.compiled {
        return Ok(());
    }
    let found = worker::compile_plan(&exp, &plan)?;
    say(&found.account)?;
    if !found.failures.is_empty() {
        anyhow::bail!(
            "{} build(s) failed `plan --compile`:\n{}",
            found.failures.len(),
            found.failures.join("\n")
        );
    }
    Ok(())
}
