//! The command line: its subcommands, their arguments and the exit codes.

use crate::{execute, plan, verdict};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;

/// The exit codes, each with one meaning, so that scripts and CI can tell them apart.
pub mod exit {
    /// Done.
    pub const OK: u8 = 0;
    /// An error: bad input, a damaged run folder, a refused write; the message says which.
    pub const ERROR: u8 = 1;
    /// `runner compare` found a cell that got slower: a CI gate.
    pub const SLOWER: u8 = 2;
    /// A run whose cells did not all end as their kernels expect: failed, suspect or
    /// impossible, or a kernel written to be caught that passed (unless --allow-failures).
    pub const UNTRUSTED: u8 = 3;
    /// `runner compare`: the new run lacks a cell the old one measured, or a cell of it
    /// did not end as its kernel expects (failed, suspect, impossible): a comparison that
    /// cannot vouch for the new run, said before "slower".
    pub const INCOMPLETE: u8 = 4;
    /// The command line is wrong (EX_USAGE); clap's own code for it, 2, means "slower".
    pub const USAGE: u8 = 64;
    /// Standard output's reader went away (`runner plan X | head -1`): 128 + SIGPIPE, as a
    /// shell shows a program that signal ended; nothing more is said.
    pub const BROKEN_PIPE: u8 = 141;
    /// Interrupted by Ctrl-C (SIGINT), with the report of the cells that finished written.
    /// A run stopped by another signal exits as a shell reports that signal, 128 + its
    /// number (`execute::Stop::exit_code`): 143 for SIGTERM (`kill`, Slurm's `scancel` or
    /// time limit), 129 for SIGHUP (a closed terminal); its report is written too.
    pub const INTERRUPTED: u8 = 130;
}

#[derive(Parser)]
#[command(
    name = "runner",
    version,
    about = "Runs GPU benchmarking-methodology experiments and writes Markdown reports"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Experiment to run (same as `runner run EXPERIMENT`).
    pub experiment: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Folder that receives `<experiment name>/`.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// Allow an experiment's `clocks = { lock = MHz }` to lock the GPU's clocks (needs root).
    #[arg(long)]
    pub allow_clock_changes: bool,
    /// Continue the interrupted run in this folder: its finished cells are kept.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Replace a run already in the output folder (its cells, report, findings.md and
    /// notes.md), which is otherwise refused; with --resume: start that run over, even if
    /// the experiment changed.
    #[arg(long)]
    pub force: bool,
    /// Run only the cells that match: `kernel=`, `variant=` or a sweep parameter, with
    /// comma-separated globs (`--only variant=events*,graph --only n=512,1024`); repeat to
    /// narrow further.
    #[arg(long, value_name = "KEY=PATTERNS")]
    pub only: Vec<String>,
    /// Replace a sweep parameter's values for this run (`--set n=512,1024`, `--set
    /// size=2^12..2^20`); recorded in the run, so resume and report keep them.
    #[arg(long, value_name = "KEY=VALUES")]
    pub set: Vec<String>,
    /// Run part i (from 0) of N disjoint parts of the plan, balanced by the cell times of
    /// `reports/<name>/` where there are some; `runner merge` joins the parts.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<plan::shard::Shard>,
    /// Spread the cells over these GPUs of this machine (`0,1` or `all`): a part per GPU in
    /// `DIR/<name>/parts/`, merged into `DIR/<name>/`, each cell marked with its GPU.
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
    /// With --devices: every GPU runs every cell (no merge); each GPU's report compares its
    /// cells with the first GPU's, with verdicts.
    #[arg(long, requires = "devices")]
    pub each: bool,
    /// Exit 0 even where cells failed, were suspect or impossible, or a kernel written to be
    /// caught passed (by default such a run exits 3).
    #[arg(long)]
    pub allow_failures: bool,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run an experiment on the GPU and write its report.
    Run {
        /// The experiment (with --resume: optional, the run's own by default).
        experiment: Option<PathBuf>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Show the expanded matrix, sample counts and an estimate of the time; needs no GPU.
    Plan {
        experiment: PathBuf,
        /// Plan only the cells that match, as `run --only` does.
        #[arg(long, value_name = "KEY=PATTERNS")]
        only: Vec<String>,
        /// Replace a sweep parameter's values, as `run --set` does.
        #[arg(long, value_name = "KEY=VALUES")]
        set: Vec<String>,
        /// Also compile every kernel with NVRTC as the run would (no GPU needed), check the
        /// arguments against the compiled parameters and show what each build uses
        /// (registers, spills, shared and local memory) and NVRTC's warnings; exits 1 on any
        /// failure.
        #[arg(long)]
        compile: bool,
        /// Also show each buffer's type, length and init at every sweep point.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Print every methodology key of `[defaults]` and `[[variant]]` with its documentation,
    /// in Markdown: the reference README.md holds, made from the knobs' own files.
    Keys,
    /// Re-render a stored run's report from its samples; needs no GPU.
    Report {
        dir: PathBuf,
        /// Template to render with instead of the run's.
        #[arg(long)]
        template: Option<PathBuf>,
        /// An earlier run of the same experiment to compare with, cell by cell (remembered
        /// in DIR for later renders).
        #[arg(long)]
        compare: Option<PathBuf>,
        /// Fail where notes.md or findings.md quotes a number the run does not show.
        #[arg(long)]
        check_notes: bool,
    },
    /// Compare two stored runs cell by cell: ratio of medians with a bootstrap interval, a
    /// Mann-Whitney U p-value and a verdict; exits 2 when a cell got slower, 4 when NEW
    /// lacks a cell OLD measured or a cell of NEW failed (or was suspect or impossible);
    /// needs no GPU.
    Compare {
        old: PathBuf,
        new: PathBuf,
        /// A ratio within 1 +- this percentage is "the same".
        #[arg(long, default_value_t = verdict::DEFAULT_THRESHOLD_PCT)]
        threshold: f64,
        /// Nor is a change smaller than this many microseconds.
        #[arg(long, default_value_t = verdict::DEFAULT_FLOOR_US)]
        floor: f64,
        /// Also write the comparison as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Join the run folders of one run's parts (`--shard`, one per GPU or machine) into one
    /// run folder and report; needs no GPU.
    Merge {
        parts: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Replace another run in --out (refused otherwise); a merge of the same run there
        /// is replaced without it.
        #[arg(long)]
        force: bool,
    },
    /// Write (and with --submit, submit) a Slurm job array for an experiment: one task per
    /// part (`--shard i/N`), resumed when requeued, and a job that merges the parts into
    /// `OUT/<name>/` once the array has ended; needs no GPU.
    Sbatch {
        experiment: PathBuf,
        /// How many parts (array tasks).
        #[arg(long)]
        parts: usize,
        #[arg(long, default_value_t = 1)]
        gpus_per_task: u32,
        #[arg(long)]
        partition: Option<String>,
        /// Minutes per task (default: three times a part's share of `plan`'s estimate).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=execute::slurm::MAX_MINUTES))]
        minutes: Option<u64>,
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        #[arg(long, value_name = "KEY=PATTERNS")]
        only: Vec<String>,
        #[arg(long, value_name = "KEY=VALUES")]
        set: Vec<String>,
        /// Submit with sbatch (else only write the scripts).
        #[arg(long)]
        submit: bool,
    },
    /// Internal: a worker process (job on stdin, results on stdout).
    #[command(name = "__worker", hide = true)]
    Worker {
        /// The runner's pid: the worker ends when that runner is gone.
        #[arg(long)]
        parent: Option<u32>,
    },
}

/// Writes a command's result to standard output. Rust ignores SIGPIPE, so a reader that
/// went away makes the write fail, and `println!` would panic: here it is an [`Unwritten`],
/// which ends the command with [`exit::BROKEN_PIPE`] (any other failure, a full disk, is an
/// error).
pub fn say(text: &str) -> Result<(), Unwritten> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Unwritten)
}

/// Standard output could not be written.
#[derive(Debug)]
pub struct Unwritten(std::io::Error);

impl Unwritten {
    /// Whether the reader went away (a closed pipe), which ends a command quietly.
    pub fn closed(&self) -> bool {
        self.0.kind() == std::io::ErrorKind::BrokenPipe
    }
}

impl std::fmt::Display for Unwritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl std::error::Error for Unwritten {}
