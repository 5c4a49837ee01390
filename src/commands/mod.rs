//! The command line's commands: `runner` runs an experiment, and `plan`, `report`, `compare`,
//! `merge`, `sbatch`, `keys` and `commands` do the rest. Each file here handles one; this
//! front dispatches and turns what they return into the exit code.

mod compare;
mod exit_code;
mod merge;
mod plan;
mod preflight;
mod resources;
mod run;

use crate::cli::{exit, say, Cli, Command, Unwritten};
use crate::experiment;
use crate::{execute, plan as planning, report, store, worker};
use clap::Parser;
use exit_code::finish;
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
                ..Default::default()
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
