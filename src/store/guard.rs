//! A run never destroys another: a folder that holds finished cells is written into only by
//! the run it holds (resumed, or its parts merged again), or with `--force`, which clears
//! the old run first. Both are asked under the folder's lock ([`FolderLock`]), so that the
//! answer holds until the writer is done.

use super::format::Format;
use super::lock::LOCK_FILE;
use super::names::is_run;
use super::names::{CELLS_FILE, RUN_FILE};
use super::written::{runner_writes, stored_names, ABOUT_FILES, RUN_FILES};
use super::FolderLock;
use super::RunMeta;
use crate::files;
use anyhow::{bail, Context, Result};
use std::path::{Component, Path, PathBuf};

/// Whether a new run (or a merge) may make `dir` its folder, asked before anything is made
/// or touched: refused where `dir` lies inside another run's folder (a report of that run
/// replaces what it renders, `plots/` with all below it) or is not a run's and holds files
/// the runner does not write, unless `force` (then only what the runner writes is
/// replaced: [`claim`]).
pub fn may_become_run(dir: &Path, force: bool) -> Result<()> {
    if force {
        return Ok(());
    }
    if let Some(run) = enclosing_run(dir) {
        bail!(
            "{} lies inside the run folder {}: that run's files and report would reach what is written here\n  hint: write elsewhere with --out, or pass --force",
            dir.display(),
            run.display()
        );
    }
    if let Some(name) = foreign_entry(dir)? {
        bail!(
            "{} is not a run folder (it holds no run.json) but holds `{name}`, which the runner does not write: a run there would mix with what is yours\n  hint: name a new or empty folder with --out, or pass --force to write the run's files among them (only what the runner writes is replaced)",
            dir.display()
        );
    }
    Ok(())
}

/// The lock of `dir` for a new run or a merge, the folder made where there is none, once
/// [`may_become_run`] allows it.
pub fn new_run_folder(dir: &Path, force: bool) -> Result<FolderLock> {
    may_become_run(dir, force)?;
    FolderLock::create(dir)
}

/// The run folder `dir` lies inside, if any; a run's own parts (`RUN/parts/...`) are its
/// own.
fn enclosing_run(dir: &Path) -> Option<PathBuf> {
    let dir = std::path::absolute(dir).ok()?;
    let mut below: Option<Component> = None;
    for above in dir.ancestors() {
        if above != dir && is_run(above) {
            let part = below.is_some_and(|c| c.as_os_str() == "parts");
            return (!part).then(|| above.to_path_buf());
        }
        below = above.components().next_back();
    }
    None
}

/// The first entry of the existing folder `dir` that is not a run's and not a name the
/// runner writes (its temporaries and lock included); None where `dir` is a run's, or
/// is new.
fn foreign_entry(dir: &Path) -> Result<Option<String>> {
    if is_run(dir) || !dir.is_dir() {
        return Ok(None);
    }
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let temporary = files::temporary_of(&name).is_some_and(runner_writes);
        if !(name == LOCK_FILE || runner_writes(&name) || temporary) {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// Whether `dir` may receive a run, and makes room for it: refused where the folder holds
/// finished cells of a run for which `same` is false, unless `force`. What is allowed is
/// cleared of the old run's files (with `force`, also the findings and notes written about
/// it); files the runner does not write (`parts/`, `slurm/`, a person's own) stay.
pub fn claim(lock: &FolderLock, force: bool, same: impl Fn(&RunMeta) -> bool) -> Result<()> {
    let dir = lock.dir();
    let replaced = refuse_another(dir, force, same)?;
    let about: &[&str] = if replaced { &ABOUT_FILES } else { &[] };
    let names = RUN_FILES.iter().chain(about).map(|n| n.to_string());
    for name in names.chain(stored_names()) {
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
    use crate::store::FINDINGS_FILE;

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
        let lock = new_run_folder(&run, false).unwrap();
        let e = format!("{:#}", claim(&lock, true, |_| false).unwrap_err());
        assert!(e.contains("symbolic link"), "{e}");
        assert!(outside.exists());
    }

    #[test]
    fn a_folder_that_is_not_a_run_or_lies_inside_one_is_refused_before_it_is_touched() {
        let dir = folder_with_a_run();
        let d = dir.path();
        // Inside a run: its report would replace `plots/` with what is below it.
        let inside = d.join("plots/merged");
        let e = format!("{:#}", new_run_folder(&inside, false).unwrap_err());
        assert!(e.contains("lies inside the run folder"), "{e}");
        assert!(!d.join("plots").exists(), "nothing was made");
        // A run's own parts lie inside it.
        new_run_folder(&d.join("parts/gpu0/x"), false).unwrap();
        // A person's folder: refused, nothing touched, unless forced.
        let mine = tempfile::tempdir().unwrap();
        let m = mine.path();
        std::fs::create_dir_all(m.join("plots")).unwrap();
        std::fs::write(m.join("plots/mine.svg"), "<svg").unwrap();
        std::fs::write(m.join("thesis.tex"), "x").unwrap();
        std::fs::write(m.join(LOCK_FILE), "mine").unwrap();
        let e = format!("{:#}", new_run_folder(m, false).unwrap_err());
        assert!(
            e.contains("holds `thesis.tex`") && e.contains("--force"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(m.join(LOCK_FILE)).unwrap(), "mine");
        let e = format!("{:#}", FolderLock::take(m).unwrap_err());
        assert!(e.contains("not a run folder"), "{e}");
        assert_eq!(std::fs::read_to_string(m.join(LOCK_FILE)).unwrap(), "mine");
        // What the runner writes alone (a crashed run's start) is no one else's.
        let started = tempfile::tempdir().unwrap();
        std::fs::create_dir(started.path().join("sources")).unwrap();
        drop(new_run_folder(started.path(), false).unwrap());
        drop(new_run_folder(m, true).unwrap());
        assert!(m.join("thesis.tex").exists() && m.join("plots/mine.svg").exists());
    }
}
