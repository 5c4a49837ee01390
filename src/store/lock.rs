//! One writer at a time in a run folder. A run (new or resumed), a merge into the folder and
//! a render of its report each hold the folder's lock while they write, so that two never
//! interleave: a second waits for the first, and after a moment says which process holds
//! it. The lock is `flock` on `.lock` in the folder, which the kernel lets go of when its
//! holder dies; the holder removes the file as it lets go, so a finished run folder holds
//! none.

use super::names::is_run;
use super::written::runner_writes;
use crate::files;
use anyhow::{bail, Context, Result};
use std::fs::{File, TryLockError};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The lock file inside a run folder.
pub const LOCK_FILE: &str = ".lock";

/// How long a writer waits without a word.
const MOMENT: Duration = Duration::from_secs(1);
/// How often a waiting writer tries again.
const POLL: Duration = Duration::from_millis(50);
/// The most of a holder's line a waiting writer reads.
const MAX_HOLDER_BYTES: u64 = 4096;

/// A run folder this process alone writes, until dropped.
#[derive(Debug)]
pub struct FolderLock {
    dir: PathBuf,
    path: PathBuf,
    /// Holds the lock while open.
    _file: File,
}

impl FolderLock {
    /// Creates the folder `dir` where there is none, then takes its lock: for a new run (or
    /// merge), once [`super::guard::new_run_folder`] has found `dir` may become one.
    pub(super) fn create(dir: &Path) -> Result<FolderLock> {
        files::create_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        FolderLock::lock(dir)
    }

    /// Takes the lock of the run folder `dir`: refused, before anything in it is touched,
    /// where `dir` is not a run's (no `run.json`).
    pub fn take(dir: &Path) -> Result<FolderLock> {
        if !dir.is_dir() {
            let looped =
                std::fs::metadata(dir).is_err_and(|e| e.raw_os_error() == Some(libc::ELOOP));
            let what = match looped {
                true => "runs through a loop of symbolic links",
                false => "is not a folder",
            };
            bail!(
                "{} {what}\n  hint: name a run folder, the one that holds run.json",
                dir.display()
            );
        }
        let refusal = || {
            anyhow::anyhow!(
                "{} is not a run folder: it holds no run.json, so nothing in it was touched\n  hint: name a run folder, the one that holds run.json",
                dir.display()
            )
        };
        // A run being merged again lacks its run.json for a moment, under its writer's lock:
        // then this waits for that writer, and asks again.
        if !is_run(dir) && !held(dir) {
            return Err(refusal());
        }
        let lock = FolderLock::lock(dir)?;
        match is_run(dir) {
            true => Ok(lock),
            false => Err(refusal()),
        }
    }

    /// Takes the lock of the folder `dir`, once no other process holds it (waiting as long
    /// as that takes, and saying who holds it after a moment). Under it, what a writer of
    /// the runner that died left half written in the folder is removed: no one else
    /// writes there now.
    fn lock(dir: &Path) -> Result<FolderLock> {
        let path = dir.join(LOCK_FILE);
        let started = Instant::now();
        let mut said = false;
        loop {
            let mut file = files::open_shared(&path)
                .with_context(|| format!("cannot lock {}", path.display()))?;
            match file.try_lock() {
                // The file the holder removed as it let go: the path holds another by now.
                Ok(()) if !is_at(&file, &path) => continue,
                Ok(()) => {
                    write_holder(&mut file)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    files::remove_others_temporaries(dir, runner_writes).with_context(|| {
                        format!(
                            "cannot clear what a stopped writer left in {}",
                            dir.display()
                        )
                    })?;
                    return Ok(FolderLock {
                        dir: dir.to_path_buf(),
                        path,
                        _file: file,
                    });
                }
                Err(TryLockError::WouldBlock) => {
                    if !said && started.elapsed() >= MOMENT {
                        crate::terminal::tell(&waiting(dir, &holder(&mut file)));
                        said = true;
                    }
                    std::thread::sleep(POLL);
                }
                Err(TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", path.display()))
                }
            }
        }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for FolderLock {
    /// Removes the lock file while still holding it: a process waiting on that file finds
    /// it is no longer at the path, and takes the path's new one.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether another process holds the lock of `dir` now: its lock file is there, and
/// locked. Nothing is made, written or locked to find out.
fn held(dir: &Path) -> bool {
    let Ok(file) = files::open(&dir.join(LOCK_FILE)) else {
        return false;
    };
    matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock))
}

/// Whether `file` is the file at `path` now.
fn is_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Writes who holds the lock into its file: this process, its host and command line, and
/// since when.
fn write_holder(file: &mut File) -> std::io::Result<()> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut args = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
    let program = args.next().map_or("runner".into(), |p| {
        let name = Path::new(&p)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        name.unwrap_or(p)
    });
    let command = std::iter::once(program).chain(args).collect::<Vec<_>>();
    let line = format!(
        "pid {} on {}: `{}`, since {}\n",
        std::process::id(),
        host.trim(),
        command.join(" "),
        humantime::format_rfc3339_seconds(SystemTime::now())
    );
    file.set_len(0)?;
    file.write_all(line.as_bytes())
}

/// The holder's line from the lock file, as it wrote it.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.take(MAX_HOLDER_BYTES).read_to_string(&mut text);
    match text.trim() {
        "" => "a process that has not said which yet".into(),
        line => line.into(),
    }
}

/// What a writer says while it waits.
fn waiting(dir: &Path, holder: &str) -> String {
    format!(
        "waiting for {}: another runner writes there ({holder}); this goes on once it is done (stop that one to go on sooner)",
        dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A folder that holds a run.
    fn run_folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(super::super::RUN_FILE), "{}").unwrap();
        dir
    }

    #[test]
    fn a_second_writer_waits_for_the_first_and_no_lock_file_is_left() {
        let dir = run_folder();
        let first = FolderLock::take(dir.path()).unwrap();
        let line = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert!(
            line.starts_with(&format!("pid {} on ", std::process::id())) && line.contains("`"),
            "{line}"
        );
        let (sent, taken) = mpsc::channel();
        let path = dir.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let lock = FolderLock::take(&path).unwrap();
            sent.send(()).unwrap();
            drop(lock);
        });
        assert!(
            taken.recv_timeout(Duration::from_millis(300)).is_err(),
            "the second writer did not wait"
        );
        drop(first);
        taken.recv_timeout(Duration::from_secs(10)).unwrap();
        second.join().unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "run.json alone"
        );
    }

    #[test]
    fn what_a_stopped_writer_left_goes_and_a_folder_is_needed() {
        let dir = run_folder();
        let left = dir.path().join(".plots.tmp-4294967295");
        std::fs::create_dir(&left).unwrap();
        std::fs::write(left.join("a.svg"), "<svg").unwrap();
        drop(FolderLock::take(dir.path()).unwrap());
        assert!(!left.exists());
        let e = FolderLock::take(&dir.path().join("none")).unwrap_err();
        assert!(format!("{e:#}").contains("is not a folder"), "{e:#}");
        let made = FolderLock::create(&dir.path().join("a/b")).unwrap();
        assert!(made.dir().is_dir());
    }

    #[test]
    fn a_waiting_writer_names_the_holder() {
        let said = waiting(Path::new("runs/x"), "pid 7 on h: `runner report runs/x`");
        assert!(said.contains("runs/x") && said.contains("pid 7"), "{said}");
        let dir = tempfile::tempdir().unwrap();
        let mut empty = files::open_shared(&dir.path().join(LOCK_FILE)).unwrap();
        assert!(holder(&mut empty).contains("not said"));
    }
}
