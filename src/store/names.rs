//! The names the runner writes in a run folder (`written.rs` gathers them by kind), and what
//! makes a folder a run's. A folder is touched only once it is proven a run's, or may become
//! one.

use std::path::Path;

pub const EXPERIMENT_FILE: &str = "experiment.toml";
pub const RUN_FILE: &str = "run.json";
/// The samples' CSV, stored as `samples.csv.zst` (`.gz` in older runs, plain in the oldest).
pub const SAMPLES_FILE: &str = "samples.csv";
/// The cell records, stored as `cells.jsonl.zst` (plain in older runs).
pub const CELLS_FILE: &str = "cells.jsonl";
pub const SUMMARY_FILE: &str = "summary.csv";
/// The telemetry's CSV, stored as `telemetry.csv.zst` (`.gz` in older runs).
pub const TELEMETRY_FILE: &str = "telemetry.csv";
pub const REPORT_FILE: &str = "report.md";
/// The report's per-cell tables (statistics, phases, checks and telemetry), beside it.
pub const CELLS_REPORT_FILE: &str = "cells.md";
/// The kernel sources the run compiled, at their paths relative to the experiment file.
pub const SOURCES_DIR: &str = "sources";
/// The experiment's own report template, when it names one.
pub const TEMPLATE_FILE: &str = "template.md.j2";
/// Optional: the path, relative to the run's folder, of an earlier run its report compares with.
pub const COMPARE_FILE: &str = "compare_to";
/// The readings of the experiment's peer programs, taken after its cells.
pub const PEERS_FILE: &str = "peers.csv";
/// Optional, written by a person after reading the run: the few sentences, each with its
/// number, that the report opens with.
pub const FINDINGS_FILE: &str = "findings.md";
/// Optional, written by a person after reading the run; the report includes it.
pub const NOTES_FILE: &str = "notes.md";

/// Whether `dir` holds a run: its `run.json`, a file.
pub(super) fn is_run(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(RUN_FILE)).is_ok_and(|m| m.is_file())
}

/// The samples' CSV header a run writes, for an experiment of these sweep parameters: what
/// a reader assumes where the file's header frame is lost.
pub(super) fn samples_header(params: &[String]) -> Vec<String> {
    let mut h: Vec<String> = ["cell", "kernel", "variant", "timer"]
        .map(String::from)
        .to_vec();
    h.extend(params.iter().cloned());
    h.extend(["process", "phase", "index", "time_ns", "t_us"].map(String::from));
    h
}

/// The telemetry's CSV header.
pub(super) const TELEMETRY_HEADER: [&str; 9] = [
    "cell", "process", "t_us", "sm_mhz", "mem_mhz", "power_w", "temp_c", "pstate", "throttle",
];
