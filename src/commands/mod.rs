//! The command line's commands: `runner` runs an experiment, and `plan`, `report`, `compare`,
//! `merge`, `sbatch`, `keys` and `commands` do the rest. Each file here handles one; this
//! front dispatches and turns what they return into the exit code.

mod compare;
mod merge;
mod plan;
mod run;

use crate::cli::{exit, say, Cli, Command, Unwritten};
use crate::experiment::{self, DeviceFacts, Experiment, Sources};
use crate::{execute, plan as planning, report, store, worker};
use clap::Parser;
use std::path::Path;
use std::process::ExitCode;

/// The command line parsed and its command run: the process's exit code.
pub fn main() -> ExitCode {
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
        Some(Command::Run { experiment, run: r }) => return run::ended(run::run(experiment, &r), &r),
        Some(Command::Plan {
            experiment,
            only,
            set,
            compile,
            verbose,
            probe,
        }) => plan::plan(
            &experiment,
            &only,
            &set,
            planning::Shown {
                verbose,
                compiled: compile,
            },
            probe,
        ),
        Some(Command::Keys) => say(&experiment::knobs::reference::markdown()).map_err(Into::into),
        Some(Command::Commands) => say(&crate::cli::markdown::commands()).map_err(Into::into),
        Some(Command::Merge { parts, out, force }) => merge::merge(&parts, &out, force),
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
            run::sbatch(&experiment, &out, &subset, &request, submit)
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
        }) => return compare::compare(&old, &new, threshold, floor, json.as_deref()),
        None => return run::ended(run::run(cli.experiment, &cli.run), &cli.run),
    };
    finish(result.map(|()| true))
}

/// A mistake in the command line that clap cannot see.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Usage(String);

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
