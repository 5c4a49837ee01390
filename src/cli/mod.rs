//! The command line: its subcommands, their arguments and the exit codes.

use crate::{compare, execute, plan};

pub mod markdown;
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

/// What `runner --help` shows after the commands: the exit codes, one a line, as Markdown
/// that `docs/commands.md` takes as it is (the `exit` constants above are the code's).
const EXIT_CODES: &str = "\
Exit codes:
- 0: done.
- 1: an error: bad input, a damaged or refused run folder, no GPU. The message names the
  file, the line and the fix. A full disk is exit 1 too, in one line.
- 2: `runner compare` found a cell that got slower.
- 3: a run whose cells did not all end as their kernels expect: failed, suspect or
  impossible, or a kernel written to be caught that passed. The report's first lines say
  which; `--allow-failures` exits 0.
- 4: `runner compare`'s new run lacks a cell the old one measured, or a cell of it did not
  end as its kernel expects.
- 64: a wrong command line: an unknown flag, a missing or malformed value.
- 141: standard output's reader went away (`runner plan X | head -1`). The command stops
  without a word.
- 130: interrupted by Ctrl-C; 143: stopped by SIGTERM; 129: stopped by SIGHUP. Each writes
  the report of the finished cells first.";

#[derive(Parser)]
#[command(
    name = "runner",
    version,
    about = "Runs GPU benchmarking-methodology experiments and writes Markdown reports",
    after_long_help = EXIT_CODES
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Experiment to run (same as `runner run EXPERIMENT`, which takes the same options).
    pub experiment: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Folder that receives `<experiment name>/`.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub out: PathBuf,
    /// Allow an experiment's `clocks = { lock = MHz }` to lock the GPU's clocks (needs root).
    #[arg(long)]
    pub allow_clock_changes: bool,
    /// Continue the interrupted run in this folder: its finished cells are kept.
    ///
    /// The rest of the cells run. An experiment or kernel source changed since is refused.
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
    ///
    /// The run records it, so a resume and a re-render keep it, and the report's Run table
    /// names it.
    #[arg(long, value_name = "KEY=PATTERNS")]
    pub only: Vec<String>,
    /// Replace a sweep parameter's values for this run (`--set n=512,1024`, `--set
    /// size=2^12..2^20`); recorded in the run, so resume and report keep them.
    ///
    /// The parameter may be one of `[sweep]` or a kernel's own. The values are a list or a
    /// range as the file writes them. The report's Run table names them.
    #[arg(long, value_name = "KEY=VALUES")]
    pub set: Vec<String>,
    /// Run part i (from 0) of N disjoint parts of the plan, balanced by the cell times of
    /// `reports/<name>/` where there are some; `runner merge` joins the parts.
    ///
    /// Without earlier cell times the parts are balanced by the plan's model of each cell
    /// (`runner plan`). Cells whose inputs are drawn alike go to one part, which draws and
    /// uploads them once, unless they hold over half a part's share. Each part goes into its
    /// own folder. The part's cell ids are recorded, so it resumes and renders alone. On a
    /// cluster: one array task per part, `--shard $SLURM_ARRAY_TASK_ID/N`, each into its own
    /// `--out` (`runner sbatch` writes such a job).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<plan::shard::Shard>,
    /// With --shard: the parts take their cells from one queue, this folder, which all of
    /// them see (a shared file system on a cluster).
    ///
    /// Each part runs its own share first, then takes the cells no part has claimed yet:
    /// no part sits idle while another has cells left, however wrong the estimate that
    /// split them. Both go the costliest draw first, so the parts end on short cells,
    /// together. A resumed part keeps its claims.
    #[arg(long, value_name = "DIR", requires = "shard")]
    pub claims: Option<PathBuf>,
    /// Spread the cells over these GPUs of this machine (`0,1` or `all`): a part per GPU in
    /// `DIR/<name>/parts/`, merged into `DIR/<name>/`, each cell marked with its GPU.
    ///
    /// A runner per GPU (`CUDA_VISIBLE_DEVICES`) runs its part (`--shard i/N`) into
    /// `DIR/<name>/parts/gpu<i>/`, and takes the cells another part has not reached once
    /// its own are done (`--claims DIR/<name>/parts/claims-<when>`, a queue per run). Each
    /// cell in `cells.jsonl` names its GPU. A run already in `DIR/<name>/` is refused
    /// before any part starts, unless `--force`. SIGINT, SIGTERM and SIGHUP reach every
    /// part, which stops after its finished cells; nothing is merged, and each part resumes
    /// with `runner run --resume DIR/<name>/parts/gpu<i>/<name>`.
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
    /// With --devices: every GPU runs every cell (no merge); each GPU's report compares its
    /// cells with the first GPU's, with verdicts.
    ///
    /// It answers: how much do two "identical" GPUs differ?
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
    ///
    /// Runs every cell and writes `DIR/<name>/`. `<name>` is the experiment file's name,
    /// which must be an identifier, as kernel names are. At its end the run prints its trust
    /// in one line, then its findings. Without a GPU nothing is written and the run fails.
    ///
    /// A folder that holds finished cells of another run is refused; `--force` replaces
    /// that run. The run exits 3 where a cell failed, was suspect or impossible, or a cell
    /// of a kernel written to be caught (`expect = "caught"`) passed, unless
    /// `--allow-failures`.
    Run {
        /// The experiment (with --resume: optional, the run's own by default).
        experiment: Option<PathBuf>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Show the expanded matrix, sample counts and an estimate of the time; needs no GPU.
    ///
    /// For each kernel it prints: its entry and the arguments it takes; its grid, block and
    /// dynamic shared memory, and its steps'; its buffers as inputs, outputs, scratch and
    /// reset; the bytes and FLOPs it declares per launch; what checks it (the CPU reference,
    /// or the reference kernel with the arguments it is given by name, and the experiment's
    /// tolerances); and which kernels it is the reference of. Static shared memory is the
    /// compiled kernel's: unknown until `--compile`. A value that differs by point is
    /// written once per run of points: "grid 4 (n=1024), 16 (n=4096)".
    ///
    /// Then the zipped sweep parameters, the expanded matrix with every value evaluated,
    /// and the sample counts. Then an estimate of the time with its basis: the previous
    /// run's cell times where `reports/<name>/` has them, else a model of what the run does
    /// (docs/cost.md). Last, the per-cell budget and the cells it is expected to stop, and
    /// every `[[peer]]` program and command the run would start.
    Plan {
        /// The experiment file.
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
        ///
        /// It compiles every build the cells use, their reference kernels' too, for the GPU
        /// here or else the assumed H100. NVRTC loads on its own. The arguments each entry
        /// and step is given are checked against its compiled parameters: read by the
        /// driver where there is a GPU, else from the PTX NVRTC writes.
        ///
        /// Each entry of each build shows its registers, spills, local memory per thread,
        /// static shared memory and the most threads a block may have. The driver reads
        /// them (`cuFuncGetAttribute`) where there is a GPU; else they come from ptxas's
        /// report of each CUBIN (`--ptxas-options=-v`). Spills come from ptxas alone. A
        /// figure neither gives is named with what it needs: a GPU, for a PTX or prebuilt
        /// build and for the threads a block may have.
        ///
        /// NVRTC's warnings are shown once each; a run keeps them too, in the record of the
        /// cell that compiled and on standard error. A compile error is shown at its
        /// source's `path:line:`. Any failure, or no NVRTC, exits 1.
        #[arg(long)]
        compile: bool,
        /// Also show each buffer's type, length and init at every sweep point.
        #[arg(long, short)]
        verbose: bool,
        /// Time each kernel on the GPU first, for the estimate: a few seconds.
        ///
        /// Each kernel build the plan times, at each of its points, hot or flushed as its
        /// cells are, is launched once to warm up and three times under events, unchecked
        /// and unaudited, in one worker process; nothing is stored. The estimate of cells
        /// without an earlier run's times then counts each launch at its probed time instead
        /// of its declared work at the device's peaks, and gives the range the project's
        /// own runs fell in against it. Needs a GPU.
        #[arg(long)]
        probe: bool,
    },
    /// Print every methodology key of `[defaults]` and `[[variant]]` with its documentation,
    /// in Markdown: the reference docs/keys.md holds, made from the knobs' own files.
    ///
    /// Each key comes with an example value and what it does. Needs no GPU.
    Keys,
    /// Re-render a stored run's report from its samples; needs no GPU.
    ///
    /// Writes `DIR/report.md` and `DIR/cells.md` from the stored run alone, from any
    /// directory. The same inputs give the same bytes. The report is rendered whole before
    /// `report.md`, `cells.md`, `summary.csv` and `plots/` are replaced, each written beside
    /// its place and renamed into it (`plots/` as a folder), so a failure leaves the earlier
    /// ones and a reader finds each whole. A run, a resume, a merge and a report each hold
    /// the run folder's lock (`DIR/.lock`, removed as they end) while they write: another on
    /// the same folder waits, and after a second says which process holds it; what a writer
    /// stopped half-way left (`.NAME.tmp-PID`, `.plots.old-PID`) is removed by the next.
    Report {
        /// The run folder.
        dir: PathBuf,
        /// Template to render with instead of the run's.
        #[arg(long, value_name = "FILE")]
        template: Option<PathBuf>,
        /// An earlier run of the same experiment to compare with, cell by cell (remembered
        /// in DIR for later renders).
        ///
        /// It is remembered in `DIR/compare_to`, and refused where the two runs have no cell
        /// in common. The comparison carries `runner compare`'s verdicts. An earlier run
        /// that cannot be read is left out with a warning.
        #[arg(long, value_name = "EARLIER")]
        compare: Option<PathBuf>,
        /// Fail where notes.md or findings.md quotes a number the run does not show.
        ///
        /// It exits 1. docs/reports.md says which numbers are checked.
        #[arg(long)]
        check_notes: bool,
    },
    /// Compare two stored runs cell by cell: ratio of medians with a bootstrap interval, a
    /// Mann-Whitney U p-value and a verdict; exits 2 when a cell got slower, 4 when NEW
    /// lacks a cell OLD measured or a cell of NEW failed (or was suspect or impossible);
    /// needs no GPU.
    ///
    /// Per cell: the ratio of NEW's median to OLD's, with a 95% bootstrap interval over
    /// independent units (rounds, processes, or blocks of samples). The verdict is faster,
    /// slower, the same, or too noisy to tell: a change must exceed both --threshold and
    /// --floor. It names what is not like for like: experiment, kernel sources, GPU, driver,
    /// runner commit.
    ///
    /// Exit 2 (a slower cell) makes it a CI gate. Exit 4 comes first, where NEW cannot be
    /// vouched for: it lacks a cell OLD measured, or a cell of it did not end as its kernel
    /// expects (failed, suspect or impossible, or a kernel written to be caught that
    /// passed). Such cells are named on stderr and in the Markdown. Two runs with no cell in
    /// common are an error.
    Compare {
        /// The earlier run's folder.
        old: PathBuf,
        /// The later run's folder.
        new: PathBuf,
        /// A ratio within 1 +- this percentage is "the same".
        #[arg(long, value_name = "PCT", default_value_t = compare::DEFAULT_THRESHOLD_PCT)]
        threshold: f64,
        /// Nor is a change smaller than this many microseconds.
        #[arg(long, value_name = "US", default_value_t = compare::DEFAULT_FLOOR_US)]
        floor: f64,
        /// Also write the comparison as JSON to this file.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Join the run folders of one run's parts (`--shard`, one per GPU or machine) into one
    /// run folder and report; needs no GPU.
    ///
    /// Its `run.json` says the run is complete only once all else is written, so a merge
    /// killed half-way never reads as complete. Refused: parts of different experiments,
    /// `--set` or `--only`; parts that overlap; a part named twice, by another path or as a
    /// copy (told by its `run.json` and `cells.jsonl`).
    ///
    /// What reading a part dropped is printed as warnings. Where damage cost a part cells,
    /// the rest is merged and rendered, what it lost is named, and the merge exits 1.
    Merge {
        /// The parts' run folders.
        parts: Vec<PathBuf>,
        /// The folder of the merged run.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Replace another run in --out (refused otherwise); a merge of the same run there
        /// is replaced without it.
        ///
        /// The same run there is one with fewer of its parts done.
        #[arg(long)]
        force: bool,
    },
    /// Write (and with --submit, submit) a Slurm job array for an experiment: one task per
    /// part (`--shard i/N`), resumed when requeued, and a job that merges the parts into
    /// `DIR/<name>/` once the array has ended; needs no GPU.
    ///
    /// It writes `DIR/<name>/slurm/array.sbatch`: a job array, a part per task, each
    /// running `run --shard $SLURM_ARRAY_TASK_ID/N` into `DIR/<name>/parts/part<i>/` and
    /// resumed from there when Slurm requeues it. The parts take cells from one queue
    /// (`--claims DIR/<name>/parts/claims-<when>`, one per script written): a task that
    /// starts late or ends early leaves or takes the cells no part has reached. And
    /// `merge.sbatch`, which merges the parts into `DIR/<name>/` once the array has ended.
    /// A part on a node without a GPU writes nothing and fails; the merge joins the parts
    /// that ran and says the run is incomplete.
    ///
    /// Every value in the scripts is shell-quoted. A value that no quoting carries is
    /// refused: a newline or NUL; an `#SBATCH` value other than letters, digits and
    /// `_-.,/:+=@~`, or one opening with `-`, which sbatch would read as an option; a `%`,
    /// which Slurm expands in a log's name. A script's path opening with `-` is given to
    /// sbatch as `./-...`.
    Sbatch {
        /// The experiment file.
        experiment: PathBuf,
        /// How many parts (array tasks).
        #[arg(long, value_name = "N")]
        parts: usize,
        /// GPUs each task asks Slurm for (0: none asked).
        #[arg(long, value_name = "N", default_value_t = 1)]
        gpus_per_task: u32,
        /// The Slurm partition to submit to (else Slurm's default).
        #[arg(long, value_name = "P")]
        partition: Option<String>,
        /// Minutes per task (default: three times a part's share of `plan`'s estimate).
        ///
        /// From 1 to a year.
        #[arg(long, value_name = "M", value_parser = clap::value_parser!(u64).range(1..=execute::slurm::MAX_MINUTES))]
        minutes: Option<u64>,
        /// Folder that receives `<experiment name>/`, as for `run`.
        #[arg(long, value_name = "DIR", default_value = "reports")]
        out: PathBuf,
        /// Run only the cells that match, as `run --only` does.
        #[arg(long, value_name = "KEY=PATTERNS")]
        only: Vec<String>,
        /// Replace a sweep parameter's values, as `run --set` does.
        #[arg(long, value_name = "KEY=VALUES")]
        set: Vec<String>,
        /// Submit with sbatch (else only write the scripts).
        #[arg(long)]
        submit: bool,
    },
    /// Internal: the command reference in Markdown, as docs/commands.md holds it.
    #[command(name = "__commands", hide = true)]
    Commands,
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

/// Standard output could not be written. The I/O error is part of the message, not a
/// source.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to standard output: {0}")]
pub struct Unwritten(std::io::Error);

impl Unwritten {
    /// Whether the reader went away (a closed pipe), which ends a command quietly.
    pub fn closed(&self) -> bool {
        self.0.kind() == std::io::ErrorKind::BrokenPipe
    }
}

impl From<std::io::Error> for Unwritten {
    fn from(e: std::io::Error) -> Self {
        Unwritten(e)
    }
}
