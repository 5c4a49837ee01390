//! What the runner writes in a run folder, by kind and in every stored format: what a new run
//! clears, and whose temporaries a writer clears. A file apart from the names (`names.rs`),
//! since it reads the formats (`format.rs`), which read the names.

use super::format::Format;
use super::names::{
    CELLS_FILE, CELLS_REPORT_FILE, COMPARE_FILE, EXPERIMENT_FILE, FINDINGS_FILE, NOTES_FILE,
    PEERS_FILE, REPORT_FILE, RUN_FILE, SAMPLES_FILE, SOURCES_DIR, SUMMARY_FILE, TELEMETRY_FILE,
    TEMPLATE_FILE,
};

/// What a run stores as it goes, named in each format (and plain, as the oldest runs did).
pub(super) const STORED_FILES: [&str; 3] = [SAMPLES_FILE, TELEMETRY_FILE, CELLS_FILE];

/// What else a run writes into its folder, and what its report renders there.
pub(super) const RUN_FILES: [&str; 9] = [
    EXPERIMENT_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    REPORT_FILE,
    CELLS_REPORT_FILE,
    TEMPLATE_FILE,
    PEERS_FILE,
    SOURCES_DIR,
    "plots",
];

/// What a person wrote about the run in a folder (and the run it is compared with).
pub(super) const ABOUT_FILES: [&str; 3] = [FINDINGS_FILE, NOTES_FILE, COMPARE_FILE];

/// Where a run on several GPUs keeps its parts, and a cluster's job its scripts and logs.
const PART_DIRS: [&str; 2] = ["parts", "slurm"];

/// The stored files' names in every format.
pub(super) fn stored_names() -> impl Iterator<Item = String> {
    STORED_FILES.iter().flat_map(|name| {
        [Format::Zstd, Format::Gzip]
            .map(|f| f.file(name))
            .into_iter()
            .chain([name.to_string()])
    })
}

/// Whether the runner writes a file or folder of this name in a run folder (its lock
/// aside): only such names' temporaries are cleared, and only such files may stand in a
/// folder a new run takes without `--force`.
pub(super) fn runner_writes(name: &str) -> bool {
    let listed = RUN_FILES.iter().chain(&ABOUT_FILES).chain(&PART_DIRS);
    listed.into_iter().any(|n| *n == name) || stored_names().any(|n| n == name)
}
