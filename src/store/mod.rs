//! The run folder: everything needed to re-render a run anywhere. The experiment as run,
//! the kernel sources it compiled, `run.json`, the samples and telemetry as compressed CSV
//! (a zstd frame per cell; a gzip member in older runs) and one JSON line per finished cell
//! (a zstd frame each; one stream, or plain, in older runs), written in that order and
//! flushed the moment a cell finishes, so an interrupt or a crash loses no completed cell,
//! and read back frame by frame, so that damage loses only the frames it touches.

mod format;
mod frames;
mod guard;
mod lock;
mod merge;
mod names;
mod read;
mod records;
mod rows;
mod samples;
mod write;
mod written;

#[cfg(test)]
mod committed_tests;
#[cfg(test)]
mod damage_tests;
#[cfg(test)]
mod probe_table_tests;

use crate::protocol::DeviceInfo;
use crate::protocol::Startup;
use crate::system::{Git, Host};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub use guard::{claim, may_become_run, may_write, new_run_folder};
pub use lock::FolderLock;
pub use merge::read_parts;
pub use names::{
    CELLS_FILE, CELLS_REPORT_FILE, COMPARE_FILE, FINDINGS_FILE, NOTES_FILE, REPORT_FILE, RUN_FILE,
    SAMPLES_FILE, SOURCES_DIR, SUMMARY_FILE, TEMPLATE_FILE,
};
pub use read::{previous_wall_times, Stored};
pub use samples::{RunSamples, SampleSink, Samples, TelemetryRow};
pub use write::Writer;

/// One reading of a peer program: its time, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerRow {
    pub peer: String,
    /// The sweep point as tables label it.
    pub point: String,
    pub process: u32,
    pub time_ns: Option<f64>,
    pub note: String,
}

/// The plan's estimate of a run, in seconds: as `runner plan` stated it (from an earlier
/// run's cell times where `reports/<name>/` has them), and the model's alone, as for a
/// first run.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct RunEstimate {
    pub seconds: f64,
    pub modelled_seconds: f64,
}

/// How many worker processes a run started, and their exits' total time.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct WorkerCount {
    pub processes: u64,
    pub exit_s: f64,
}

/// The run's metadata (`run.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    /// The experiment file as given, relative to where the runner ran.
    pub experiment_path: PathBuf,
    pub experiment_sha256: String,
    /// The experiment file and every kernel source it names, hashed together: a resumed
    /// run must find them unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_sha256: Option<String>,
    /// The commit the runner was built from, and whether the code differed from it.
    pub git: Option<Git>,
    pub runner_version: String,
    pub started_utc: String,
    pub finished_utc: Option<String>,
    /// Seconds the peer programs took, after the cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers_s: Option<f64>,
    /// Worker processes started, and the seconds from each one's last cell to its exit
    /// (CUDA's teardown), summed: where a run of fresh processes spends its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkerCount>,
    /// What the plan estimated the run would take before it started, to hold against its
    /// start and finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<RunEstimate>,
    /// Whether every planned run finished (false after an interrupt or a fatal error).
    pub complete: bool,
    /// The `--only` clauses the run was planned with: a part of the experiment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// `--shard i/N`: the part of the plan the run was given, by cell id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardCells>,
    /// The `--set` clauses that replaced sweep parameters' values for the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<String>,
    pub host: Host,
    pub device: Option<DeviceInfo>,
    /// A merged run's GPUs, one per part that ran on its own (`runner merge`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DeviceInfo>,
    /// CUDA start-up of the first worker process.
    pub startup: Option<Startup>,
}

/// A shard's part of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ShardCells {
    pub shard: crate::plan::shard::Shard,
    /// Its share; with `claims`, the share it runs first, before it takes others' cells.
    pub cells: Vec<String>,
    /// The queue it takes cells from (`--claims`): its records are numbered in the whole
    /// plan, whose cells it may run any of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims: Option<crate::protocol::Claims>,
}

/// The records a run in `dir` stored, as text: for tests that read them as a person would.
#[cfg(test)]
pub fn stored_records(dir: &std::path::Path) -> String {
    let read = records::read_cells(dir).unwrap().expect("a run's records");
    let lines = read
        .lines
        .into_iter()
        .map(|l| String::from_utf8(l.bytes).unwrap());
    lines.map(|l| l + "\n").collect()
}
