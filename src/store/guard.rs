//! A run never destroys another: a folder that holds finished cells is written into only by
//! the run it holds (resumed, or its parts merged again), or with `--force`, which clears
//! the old run first. Both are asked under the folder's lock ([`FolderLock`]), so that the
//! answer holds until the writer is done.

use super::format::Format;
use super::FolderLock;
use super::{
    RunMeta, CELLS_FILE, CELLS_REPORT_FILE, COMPARE_FILE, EXPERIMENT_FILE, FINDINGS_FILE,
    NOTES_FILE, PEERS_FILE, REPORT_FILE, RUN_FILE, SAMPLES_FILE, SOURCES_DIR, SUMMARY_FILE,
    TELEMETRY_FILE, TEMPLATE_FILE,
};
use crate::files;
use anyhow::{bail, Context, Result};
use std::path::Path;

/// What a run stores as it goes, named in each format (and plain, as the oldest runs did).
const STORED_FILES: [&str; 3] = [SAMPLES_FILE, TELEMETRY_FILE, CELLS_FILE];

/// What else a run writes into its folder, and what its report renders there.
const RUN_FILES: [&str; 9] = [
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
const ABOUT_FILES: [&str; 3] = [FINDINGS_FILE, NOTES_FILE, COMPARE_FILE];

/// Whether `dir` may receive a run, and makes room for it: refused where the folder holds
/// finished cells of a run for which `same` is false, unless `force`. What is allowed is
/// cleared of the old run's files (with `force`, also the findings and notes written about
/// it); files the runner does not write (`parts/`, `slurm/`, a person's own) stay.
pub fn claim(lock: &FolderLock, force: bool, same: impl Fn(&RunMeta) -> bool) -> Result<()> {
    let dir = lock.dir();
    let replaced = refuse_another(dir, force, same)?;
    let about: &[&str] = if replaced { &ABOUT_FILES } else { &[] };
    let stored = STORED_FILES.iter().flat_map(|name| {
        [Format::Zstd, Format::Gzip]
            .map(|f| f.file(name))
            .into_iter()
            .chain([name.to_string()])
    });
    let names = RUN_FILES.iter().chain(about).map(|n| n.to_string());
    for name in names.chain(stored) {
        let path = dir.join(name);
        files::remove(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(())
}

/// Whether a new run may go into `dir` (as [`claim`], but nothing is removed): a run of
/// parts checks before its parts start, and makes room once they are merged.
pub fn may_write(lock: &FolderLock, force: bool) -> Result<()> {
    refuse_another(lock.dir(), force, |_| false).map(|_| ())
}

/// Refuses another run's finished cells in `dir` unless `force`; whether there are some
/// (to be replaced).
fn refuse_another(dir: &Path, force: bool, same: impl Fn(&RunMeta) -> bool) -> Result<bool> {
    let finished = finished_cells(dir)?;
    let meta: Option<RunMeta> = files::read_text(&dir.join(RUN_FILE), files::MAX_TEXT_BYTES)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let ours = meta.as_ref().is_some_and(same);
    if finished > 0 && !ours && !force {
        let what = meta.as_ref().map_or(String::new(), |m| {
            format!(
                " ({}, started {})",
                m.experiment_path.display(),
                m.started_utc
            )
        });
        bail!(
            "{} holds a run with {finished} finished cell(s){what}: a new run there would replace it\n  hint: pass --force to replace it (its report, findings.md and notes.md go too), write elsewhere with --out, or continue that run with `runner run --resume {}`",
            dir.display(),
            dir.display()
        );
    }
    Ok(finished > 0 && !ours)
}

/// Lines of `cells.jsonl` in `dir`, in either format: the cells a run there finished (0
/// where there is none).
fn finished_cells(dir: &Path) -> Result<usize> {
    let mut lines = 0;
    for format in [Format::Zstd, Format::Gzip] {
        let path = dir.join(format.file(CELLS_FILE));
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        lines += super::records::read_cells_at(path, format)?.lines.len();
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(started: &str) -> RunMeta {
        serde_json::from_value(serde_json::json!({
            "experiment_path": "experiments/x.toml",
            "experiment_sha256": "abc",
            "git": null,
            "runner_version": "0",
            "started_utc": started,
            "finished_utc": null,
            "complete": true,
            "host": { "cpu": "", "cores": 1, "os": "", "kernel": "" },
            "device": null,
            "startup": null
        }))
        .unwrap()
    }

    fn folder_with_a_run() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join(CELLS_FILE), "{}\n{}\n").unwrap();
        std::fs::write(
            d.join(RUN_FILE),
            serde_json::to_string(&meta("t0")).unwrap(),
        )
        .unwrap();
        std::fs::write(d.join(FINDINGS_FILE), "- 3 µs").unwrap();
        std::fs::create_dir(d.join("parts")).unwrap();
        dir
    }

    #[test]
    fn another_run_is_refused_unless_forced_and_then_cleared_whole() {
        let dir = folder_with_a_run();
        let d = dir.path();
        let lock = FolderLock::take(d).unwrap();
        let e = claim(&lock, false, |_| false).unwrap_err().to_string();
        assert!(
            e.contains("2 finished cell(s)") && e.contains("--force") && e.contains("x.toml"),
            "{e}"
        );
        assert!(may_write(&lock, false).is_err() && may_write(&lock, true).is_ok());
        assert!(d.join(CELLS_FILE).exists() && d.join(FINDINGS_FILE).exists());
        claim(&lock, true, |_| false).unwrap();
        assert!(!d.join(CELLS_FILE).exists() && !d.join(FINDINGS_FILE).exists());
        assert!(
            d.join("parts").exists(),
            "what the runner does not write stays"
        );
    }

    #[test]
    fn the_same_run_and_an_empty_folder_are_written_without_force() {
        let dir = folder_with_a_run();
        let d = dir.path();
        claim(&FolderLock::take(d).unwrap(), false, |m| {
            m.started_utc == "t0"
        })
        .unwrap();
        assert!(!d.join(CELLS_FILE).exists());
        assert!(
            d.join(FINDINGS_FILE).exists(),
            "findings about the same run stay"
        );
        claim(&FolderLock::create(&d.join("new")).unwrap(), false, |_| {
            false
        })
        .unwrap();
    }

    #[test]
    fn a_cells_file_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "{}\n").unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::os::unix::fs::symlink(&outside, run.join(CELLS_FILE)).unwrap();
        let lock = FolderLock::take(&run).unwrap();
        let e = format!("{:#}", claim(&lock, true, |_| false).unwrap_err());
        assert!(e.contains("symbolic link"), "{e}");
        assert!(outside.exists());
    }
}
