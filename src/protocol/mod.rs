//! Messages between the parent and its worker processes: one JSON job on the worker's stdin,
//! one JSON line per message on its stdout, so finished cells stream back as they complete.
//! The data in them (cell records, the device, CUPTI's account) is all that the stages after
//! the worker read, so it lives here rather than in `cuda` or `method`, which fill it.

use crate::experiment::{Kernel, TelemetrySpec};
use crate::plan::{Cell, Run};
use serde::{Deserialize, Serialize};

mod before;
mod claims;
mod confirm;
mod device;
mod energy;
mod failure;
mod host;
mod nan;
mod ranks;
mod regions;
mod stopped;

pub use before::{RegionsBefore, BEFORE_WINDOW};
pub use claims::{Claiming, Claims};
pub use confirm::{
    lead_launches, margin_ns, past_the_hosts_launch, rest_of_region, samples_split, splits_in_two,
    spread_look, spreads_wide, KernelRecords, ALONE_IF_SPLIT, AUDIT_SHARE_CAP, CONFIRM_AUDITS,
    CONFIRM_PAUSES, CONFIRM_RATIO, CUPTI_FIRSTS, CUPTI_LEADS, CUPTI_PAUSES, CUPTI_STAGED,
    CUPTI_TIMED_PER_PAUSE, CUPTI_WARM_UP, DECOYS_AGAIN, FALSE_ALARM, HOST_LAUNCH_NS,
    HOST_SPREAD_NS, MARGIN_NS, MARGIN_SHARE, MIN_SAMPLES, SPLIT_PAUSES, SPREAD_AGAIN,
    SPREAD_DECOYS, SPREAD_PAUSES, STAGE_CONFIRMATIONS, Z_FALSE_ALARM,
};
pub use device::{capability, DeviceInfo, HostLink};
pub use energy::Energy;
pub use failure::FailureKind;
pub use host::{RegionHostTimes, SpreadLook};
pub use ranks::{
    pauses_ranked, ranked_again, ranked_over, ranks_read_again, sorted_finite, RunRanks,
    RANKS_AGAIN_ALARM, RANKS_AGAIN_PAUSES, RANKS_SCREEN,
};
pub use regions::{FirstLaunches, Gaps};
pub use stopped::{Counted, Stopped};

/// Phase names the report looks for.
pub const FIRST_TIMED_LAUNCH: &str = "first timed launch";
pub const OUTPUT_CHECK: &str = "output check";

/// Exit code of a worker whose CUDA context broke: the parent starts a new one for the rest.
pub const EXIT_CONTEXT_LOST: u8 = 3;

/// The variable that tells a worker when the parent started it (ns since the Unix epoch), so
/// that it can time its own start-up.
pub const SPAWNED_VAR: &str = "RUNNER_SPAWNED_UNIX_NS";

/// What a worker process must run: the planned cells themselves (the worker neither reads
/// nor plans the experiment again) and the kernels they launch.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    /// The cells its runs name, each once.
    pub cells: Vec<Cell>,
    /// The experiment's kernels, by index (sources included).
    pub kernels: Vec<Kernel>,
    pub telemetry: TelemetrySpec,
    pub runs: Vec<Run>,
    /// Load the runs' kernels (filling the JIT cache) and launch nothing.
    #[serde(default)]
    pub prime: bool,
    /// A folder the run's workers share drawn inputs and reference results in.
    #[serde(default)]
    pub run_cache: Option<std::path::PathBuf>,
    /// Keep the GPU busy this long before the first cell (the run's first worker only).
    #[serde(default)]
    pub gpu_warmup_s: f64,
    /// Add NVML's facts (driver version, PCIe link) to the device's description: the run
    /// keeps only its first worker's, so later workers skip the queries.
    #[serde(default)]
    pub describe_device: bool,
    /// The seed a check that reads a sample of a large output draws it from: one per run,
    /// drawn by the runner, so that no kernel knows which elements will be read.
    #[serde(default)]
    pub sample_seed: u64,
    /// Where the run's parts share one queue (`--claims`): each run is claimed before it
    /// runs, and one another part claimed is reported `Taken`.
    #[serde(default)]
    pub claiming: Option<Claiming>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Sent once the device is open.
    Ready {
        device: Box<DeviceInfo>,
        startup: Startup,
    },
    Cell(Box<CellRecord>),
    /// Another part of the run claimed this run's cell (`--claims`): not run here.
    Taken {
        cell: usize,
        process: u32,
    },
    /// The worker cannot run anything (no device, bad job).
    Fatal {
        error: String,
    },
}

/// Host-clock durations of a worker's start-up, from process start.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Startup {
    pub driver_init_ms: f64,
    pub context_ms: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    #[default]
    Failed,
    /// Not run, for a reason that is not a failure (a tool that is not installed).
    Skipped,
}

/// The outcome of one cell in one process. Samples travel here and are stored in the CSV;
/// the rest is stored as one line of `cells.jsonl`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CellRecord {
    pub cell: usize,
    pub id: String,
    pub process: u32,
    /// The GPU (its UUID) that ran it, where a run spans several (`runner merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What failed, where the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureKind>,
    /// How the output was checked, or why the check failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// NVRTC and module load of this cell's kernel, when this cell paid for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_ms: Option<f64>,
    /// NVRTC's warnings when this cell compiled its kernel (each once, as NVRTC writes it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compile_warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_load_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_ns: Option<f64>,
    /// NaN (JSON null) where the value comes later: CUPTI's or the profiler's.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nan::null_as_nan"
    )]
    pub samples_ns: Vec<f64>,
    /// Host time of each timed launch's start (first, then samples), in µs from the cell's
    /// start: the clock the telemetry series uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub starts_us: Vec<f64>,
    /// NVML readings sampled during the cell (stored in `telemetry.csv`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub telemetry: Vec<TelemetryPoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry_start: Option<Telemetry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry_end: Option<Telemetry>,
    /// Host wall time of the whole cell (set-up, warm-up, samples), for estimates.
    pub wall_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<Overhead>,
    /// Where the time went, in order, on the host clock from the process's start: the
    /// process's own start-up (in the first cell a process runs), then this cell's phases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Span>,
    /// The wait kernel of `queue = "saturate"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueRecord>,
    /// Launches of the measured kernel in this cell (checked, warm-up, timed), so that a
    /// profiler's per-launch report can be cut into cells.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kernel_launches: u64,
    /// Host wall time per steady sample, flush, rotation and timer included: what a
    /// sample of this methodology costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_wall_ns: Option<f64>,
    /// The board's energy over the steady samples (audited regions among them included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<Energy>,
    /// Why a cell stopped taking samples before its count: an adaptive stop, or the budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// The SM clock the clock probe measured just before and just after the cell, in MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_mhz: Option<(f64, f64)>,
    /// Nsight Compute's elapsed SM cycles per second over the cell's timed launches (their
    /// median), in MHz: the clock its cycles are counted at, since under the profiler the
    /// probe is profiled too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler_sm_mhz: Option<f64>,
    /// GPU timer nanoseconds per host nanosecond from the probe before the cell to the one
    /// after it: 1 when the GPU's timer, which events and CUPTI read, keeps the host's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_timer_rate: Option<f64>,
    /// What CUPTI's records said beside the spans (`timer = "cupti"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cupti: Option<CuptiRecord>,
    /// One more launch after the timed ones, on new inputs: checked, timed, set against the
    /// reading. None for a failed cell, an unchecked kernel and the floor cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditRecord>,
    /// What `l2_persist` set: the L2 set aside and the access-policy window on the buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_window: Option<String>,
    /// The `CUDA_*` variables the worker process started with: the environment it ran in.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub cuda_env: std::collections::BTreeMap<String, String>,
    /// Hardware counters of the measured kernel from the cell's counter pass (`counters`),
    /// on the first run of the cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<CounterRecord>,
}

/// What Nsight Compute counted for a cell's kernel in a pass of its own, before the timed
/// run: each counter's median over the pass's steady launches, or why there are none.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CounterRecord {
    /// Nsight Compute's `--cache-control`: `all` (caches flushed before each counted
    /// launch, a cold cell) or `none` (a hot one).
    pub cache: String,
    /// Launches whose counters the medians are of.
    pub launches: u64,
    /// The median launch's time under the profiler, in ns: what the counted launches took,
    /// to set against the cell's reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<Counter>,
    /// Why the pass gave no counters (no Nsight Compute, the pass failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One counter's value, in Nsight Compute's base unit (`byte`, `%`, ...).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Counter {
    pub name: String,
    pub unit: String,
    pub value: f64,
}

impl CounterRecord {
    /// A counter's value by name.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|c| c.name == name).map(|c| c.value)
    }
}

/// CUPTI's account of a cell's timed launches, beside their spans (`method::timer` fills it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CuptiRecord {
    pub records: u64,
    /// Median time from the launch's submission to the GPU to the kernel's start.
    pub submitted_to_start_median_ns: Option<f64>,
    /// Median time from the launch being queued to its submission.
    pub queued_to_submitted_median_ns: Option<f64>,
    /// Where a launch runs a kernel and its steps: each kernel's median span, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<(String, f64)>,
}

/// The audit of a cell's timed launches (`worker::audit`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AuditRecord {
    /// How the audit launch's output was checked against the reference on its inputs.
    pub check: String,
    /// Which inputs held new data, or that none could be redrawn and the outputs were
    /// poisoned again instead.
    pub inputs: String,
    /// The audit launch's time as the cell's timer sees the kernel, in ns; None until the
    /// profiler's report gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_ns: Option<f64>,
    /// Launches of the kernel the audit made after the timed ones (a profiler's report
    /// holds them last).
    pub launches: u64,
    /// Why the cell's reading is suspect against the audit launch's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect: Option<String>,
    /// Why the two times are not set against each other, where they are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unjudged: Option<String>,
    /// The audited regions among the timed ones, where the cell could hold them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub among: Option<AuditsAmong>,
    /// Why the cell got only the weaker audit (one launch after the timed ones, judged by
    /// a fixed band), where it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weaker: Option<String>,
    /// Host time the audit took: inputs staged and restored, audited regions, checks.
    #[serde(default)]
    pub cost_s: f64,
    /// Of `cost_s`: the regions among the timed ones (each with its copy in), and the
    /// checks and comparisons after the audited ones. The rest staged the audit's inputs.
    #[serde(default)]
    pub regions_s: f64,
    #[serde(default)]
    pub checks_s: f64,
}

/// Regions among a run's timed ones (`worker::audit`): audited regions, the decoys set
/// against them (staged as they are, on the data the buffers held) and the pauses set
/// against the timed launches (the same pause, nothing drawn). The analysis judges them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AuditsAmong {
    /// The seed the positions were drawn from.
    pub seed: u64,
    /// The steady samples (0-based) each audited region ran just before.
    pub positions: Vec<u64>,
    /// Each audited region's reading as the cell's timer sees it, ns per launch.
    #[serde(deserialize_with = "nan::null_as_nan")]
    pub readings_ns: Vec<f64>,
    /// The steady samples each decoy ran just before, and the decoys' readings.
    pub decoy_positions: Vec<u64>,
    #[serde(deserialize_with = "nan::null_as_nan")]
    pub decoys_ns: Vec<f64>,
    /// The steady samples each pause ran just before, and the pauses' readings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pause_positions: Vec<u64>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "nan::null_as_nan"
    )]
    pub pauses_ns: Vec<f64>,
    /// The seed of the draws on the GPU (draw 0 the timed launches' data, draw k the k-th
    /// audited region's), where the inputs were drawn there; older runs copied two data
    /// sets in turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_seed: Option<u64>,
    /// What a draw of all the inputs took on the GPU, and the pause every stage waited out
    /// from its start (a quarter more than the held data's read-back and a draw, timed back
    /// to back as a stage runs them), in ns: timed once a worker process for inputs of the
    /// same shapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_ns: Option<u64>,
    /// Stages whose draw outlasted the pause (their region followed a longer gap).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late: u64,
    /// Regions of the schedule left out: they would have taken the audit past its share of
    /// the cell's time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub capped: u64,
    /// Single launches checked on an audited region's draw, where the region is several or
    /// where the run's timed samples split in two (`ALONE_IF_SPLIT`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spots: u64,
    /// Each of those launches as events read it behind a wait kernel, less their reading of
    /// an empty kernel (none where the host outlasted the wait, nor in runs from before
    /// they were read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alone_ns: Vec<f64>,
    /// Where the audited regions that were probes ran (the steady sample each ran before) and
    /// what each read: the held data with a few of its elements drawn anew
    /// (`worker::audit::among::Among::audited_draw`), each checked as any audited region.
    /// Not among `positions` and `readings_ns`, which the timing tests take: a kernel whose kept
    /// result a probe's changed elements moved by less than the tolerance passes its check and
    /// reads as a decoy does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_positions: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes_ns: Vec<f64>,
    /// Launches in each region, where fewer than in a timed one
    /// (`plan::audit_rounds::region_launches`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_launches: Option<u64>,
    /// The gaps on the GPU before the regions, where CUPTI's records give them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<Gaps>,
    /// In a region of several launches (a batch, a graph): each region's first launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firsts: Option<FirstLaunches>,
    /// Where the pauses read slow by events on an idle queue: pauses and timed launches
    /// again, read from CUPTI's kernel records (see [`KernelRecords`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_cupti: Option<KernelRecords>,
    /// Where the pauses' ranks among the timed launches lay between two chances: pauses and
    /// launches again, read from CUPTI's kernel records ([`RANKS_SCREEN`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks_again: Option<KernelRecords>,
    /// The timed samples just before each region (none in runs from before them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<RegionsBefore>,
    /// Each region's host time (none in runs from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<RegionHostTimes>,
    /// The looks at the timed samples' spread, in order (none in runs from before them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub looks: Vec<SpreadLook>,
}

/// The wait kernel a `queue = "saturate"` cell ran before each timed region: one the host
/// released once the region was enqueued (`released`; absent in older folders, whose waits
/// all had a set length), or one of `wait_ns`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QueueRecord {
    pub wait_ns: u64,
    /// Timed regions (first included) whose wait went wrong: of a set length, it had ended
    /// before they were enqueued; released by the host, it gave up waiting.
    pub too_short: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
}

impl QueueRecord {
    /// The flag of a cell whose runs' waits went wrong (`queues`: its runs'), if any did.
    pub fn flag<'a>(queues: impl Iterator<Item = &'a QueueRecord>) -> Option<String> {
        let (mut missed, mut released) = (0, false);
        for q in queues {
            missed += q.too_short;
            released |= q.released;
        }
        (missed > 0).then(|| match released {
            true => format!("wait kernel gave up on the host for {missed} timed region(s)"),
            false => format!("wait kernel too short for {missed} timed region(s)"),
        })
    }
}

/// A contiguous stretch of a worker's time, in ms from the moment the parent started it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Span {
    pub name: String,
    pub start_ms: f64,
    pub ms: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CellRecord {
    /// The SM clock this run's probes read: the mean of the probes before and after it.
    pub fn probed_mhz(&self) -> Option<f64> {
        self.probe_mhz.map(|(b, a)| (b + a) / 2.0)
    }

    /// Marks the cell failed: no samples, what failed and why kept.
    pub fn fail(&mut self, kind: FailureKind, why: String) {
        self.status = Status::Failed;
        self.error = Some(why);
        self.failure = Some(kind);
        self.first_ns = None;
        self.samples_ns.clear();
    }

    /// The record of a run before it ends: failed, with nothing in it, until the run says
    /// otherwise.
    pub fn new(cell: usize, id: &str, process: u32) -> Self {
        CellRecord {
            cell,
            id: id.to_string(),
            process,
            status: Status::Failed,
            ..Default::default()
        }
    }

    /// The record of a run that failed, as the parent records one its worker did not finish.
    pub fn failed(cell: usize, id: &str, process: u32, kind: FailureKind, error: String) -> Self {
        let mut r = CellRecord::new(cell, id, process);
        r.fail(kind, error);
        r
    }
}

/// NVML readings at one moment; each field is absent where NVML could not say.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Telemetry {
    pub sm_mhz: Option<u32>,
    pub mem_mhz: Option<u32>,
    pub power_w: Option<f64>,
    pub temp_c: Option<u32>,
    pub pstate: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttle: Vec<String>,
}

/// One NVML reading of a sampled series, `t_us` from the cell's start.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TelemetryPoint {
    pub t_us: f64,
    #[serde(flatten)]
    pub reading: Telemetry,
}

/// Host wall time per sample of the harness's events loop and of a bare cudarc loop doing
/// the same (empty kernel between two events), measured back to back in one process.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Overhead {
    pub harness_wall_ns: f64,
    pub bare_wall_ns: f64,
    /// The bare loop's own events reading of the empty kernel (median).
    pub bare_events_median_ns: f64,
}
