//! `runner`: declarative GPU benchmarking-methodology experiments, from a TOML file to a
//! Markdown report measured on the GPU.
//!
//! Data walks one way: experiment -> plan -> (worker) samples -> summary -> report.

mod clock_lock;
mod execute;
mod experiment;
mod method;
mod plan;
mod protocol;
mod report;
mod results;
mod summary;
mod system;
mod telemetry;
mod worker;

use clap::{Parser, Subcommand};
use experiment::Experiment;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What a machine without the CUDA driver is told.
pub const NO_DRIVER: &str = "no CUDA driver: libcuda could not be loaded, so nothing can run on a GPU here.\n  \
`runner plan EXPERIMENT` shows what a run would do, and `runner report DIR` renders a stored run, without a GPU.";

#[derive(Parser)]
#[command(
    name = "runner",
    version,
    about = "Runs GPU benchmarking-methodology experiments and writes Markdown reports"
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Experiment to run (same as `runner run EXPERIMENT`).
    experiment: Option<PathBuf>,
    /// Folder that receives `<experiment name>/`.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Allow an experiment's `clocks = { lock = MHz }` to lock the GPU's clocks (needs root).
    #[arg(long)]
    allow_clock_changes: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment on the GPU and write its report.
    Run {
        experiment: PathBuf,
        /// Folder that receives `<experiment name>/`.
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        /// Allow an experiment's `clocks = { lock = MHz }` to lock the GPU's clocks (needs root).
        #[arg(long)]
        allow_clock_changes: bool,
    },
    /// Show the expanded matrix, sample counts and an estimate of the time; needs no GPU.
    Plan { experiment: PathBuf },
    /// Re-render a stored run's report from its samples; needs no GPU.
    Report {
        dir: PathBuf,
        /// Template to render with instead of the experiment's.
        #[arg(long)]
        template: Option<PathBuf>,
        /// An earlier run of the same experiment to compare with, cell by cell (remembered
        /// in DIR for later renders).
        #[arg(long)]
        compare: Option<PathBuf>,
    },
    /// Internal: a worker process (job on stdin, results on stdout).
    #[command(name = "__worker", hide = true)]
    Worker,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Worker) => return worker::main(),
        Some(Command::Run {
            experiment,
            out,
            allow_clock_changes,
        }) => return finish(run(&experiment, &out, allow_clock_changes)),
        Some(Command::Plan { experiment }) => plan(&experiment),
        Some(Command::Report {
            dir,
            template,
            compare,
        }) => compare
            .map_or(Ok(()), |earlier| report::set_comparison(&dir, &earlier))
            .and_then(|()| report::render_dir(&dir, template.as_deref()))
            .map(|p| println!("wrote {}", p.display())),
        None => match cli.experiment {
            Some(experiment) => return finish(run(&experiment, &cli.out, cli.allow_clock_changes)),
            None => Err(anyhow::anyhow!(
                "no experiment given: try `runner experiments/cold-start.toml`, or `runner --help`"
            )),
        },
    };
    finish(result.map(|()| true))
}

/// The exit code: 0 when done, 130 after an interrupt (its report still written), 1 on error.
fn finish(result: anyhow::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(130),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn load(path: &Path) -> anyhow::Result<Experiment> {
    Experiment::load(path).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Runs an experiment and renders its report, also after an interrupt; whether it finished.
fn run(path: &Path, out: &Path, allow_clock_changes: bool) -> anyhow::Result<bool> {
    let exp = load(path)?;
    let outcome = execute::run(&exp, out, allow_clock_changes)?;
    let report = report::render_dir(&outcome.dir, None)?;
    if outcome.complete {
        println!("wrote {}", report.display());
    } else {
        println!(
            "interrupted: wrote {} with the cells that finished",
            report.display()
        );
    }
    Ok(outcome.complete)
}

fn plan(path: &Path) -> anyhow::Result<()> {
    let exp = load(path)?;
    let plan = plan::Plan::new(&exp).map_err(anyhow::Error::msg)?;
    let previous = results::previous_wall_times(&Path::new("reports").join(&exp.name));
    print!("{}", plan::describe(&exp, &plan, &previous));
    Ok(())
}
