//! Every file the runner reads or writes goes through here, opened one way: a regular file
//! only (a FIFO would block, a device never ends), never through a symbolic link at the
//! path's last component (a run folder must not reach outside itself, nor pull a file from
//! elsewhere into its report), each read capped in size, and each whole-file write made to
//! a temporary file renamed into place, so a crash leaves the old file or the new one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a person writes: an experiment, a kernel source, a template, findings and notes.
pub const MAX_TEXT_BYTES: u64 = 16 << 20;
/// A prebuilt module (CUBIN, PTX, fatbinary) and a `.npy` header's file.
pub const MAX_MODULE_BYTES: u64 = 512 << 20;
/// A run folder's records, on disk and once decompressed, and its other stored files.
pub const MAX_RUN_FILE_BYTES: u64 = 256 << 20;
/// A run's compressed CSV as it lies on disk: about 300 million samples.
pub const MAX_SAMPLES_FILE_BYTES: u64 = 4 << 30;
/// A compressed CSV of a run once decompressed: at least this (about ten million samples)...
pub const MAX_DECOMPRESSED_BYTES: u64 = 1 << 30;
/// ... or this many times the compressed bytes decoded, where that is more (not the file's
/// size, which a sparse file inflates at no cost): samples compress about 7x, a
/// decompression bomb a thousandfold, so a large run reads whole and a bomb stops early.
pub const MAX_EXPANSION: u64 = 64;

/// An error about a file, its reason in words; callers add the path and what it was for.
fn refusal(kind: io::ErrorKind, why: impl Into<String>) -> io::Error {
    io::Error::new(kind, why.into())
}

fn symlink_refusal() -> io::Error {
    refusal(
        io::ErrorKind::InvalidInput,
        "it is a symbolic link, which the runner does not follow (put the file itself there)",
    )
}

/// Opens `path` for reading: a regular file, not through a link.
pub fn open(path: &Path) -> io::Result<File> {
    open_regular(OpenOptions::new().read(true), path)
}

/// Opens `path` as `options` say, refusing a link there (`O_NOFOLLOW`) and anything but a
/// regular file, named by what it is.
fn open_regular(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        // O_NONBLOCK: opening a FIFO returns at once, and is refused below.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW says ELOOP for a link at the last component; a loop of links
            // on the way to it says so too.
            Some(libc::ELOOP) if fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) => {
                symlink_refusal()
            }
            Some(libc::ELOOP) => refusal(
                io::ErrorKind::InvalidInput,
                "its path runs through a loop of symbolic links",
            ),
            _ => e,
        })?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(refusal(
            io::ErrorKind::InvalidInput,
            format!("it is {what}, not a regular file"),
        ));
    }
    Ok(file)
}

/// A file's bytes, refused beyond `cap` bytes.
pub fn read(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = open(path)?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok(bytes)
}

/// A file's text (UTF-8), refused beyond `cap` bytes.
pub fn read_text(path: &Path, cap: u64) -> io::Result<String> {
    String::from_utf8(read(path, cap)?)
        .map_err(|_| refusal(io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// Why a file is refused for its size.
pub fn too_large(cap: u64) -> io::Error {
    refusal(
        io::ErrorKind::InvalidData,
        format!(
            "it holds more than {}, the most the runner reads of such a file",
            size_text(cap)
        ),
    )
}

/// `16 MiB`, `1 GiB`.
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// Refuses `path` where it is a link or something other than a regular file; a path that
/// does not exist is fine (it is about to be written).
fn writable(path: &Path) -> io::Result<()> {
    not_a_link(path)?;
    match fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() => Err(refusal(
            io::ErrorKind::InvalidInput,
            "it is not a regular file",
        )),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates (or empties) `path` for writing, refusing a link there.
pub fn create(path: &Path) -> io::Result<File> {
    writable(path)?;
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Writes `path` whole: a temporary file beside it, renamed over it once written.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    write_pieces(path, &[bytes.as_ref()])
}

/// Writes `pieces` one after another as `path`, as [`write`] does: each in turn, never
/// joined (inputs reach gigabytes).
pub fn write_pieces(path: &Path, pieces: &[&[u8]]) -> io::Result<()> {
    writable(path)?;
    let tmp = temporary_beside(path);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .and_then(|mut f| pieces.iter().try_for_each(|p| f.write_all(p)))
        .and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// What a file is written as before it is renamed into place: `.NAME.tmp-PID`.
const TEMPORARY: &str = "tmp";
/// What [`replace_dir`] renames the folder it replaces to, until it is removed:
/// `.NAME.old-PID`.
const RETIRED: &str = "old";

/// A name beside `path` that no other process of the runner uses: `.NAME.tmp-PID`.
pub fn temporary_beside(path: &Path) -> PathBuf {
    beside(path, TEMPORARY)
}

/// `.NAME.WHAT-PID` beside `path`.
fn beside(path: &Path, what: &str) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{what}-{}", std::process::id()))
}

/// The file `name` is a temporary (or replaced folder) of, and the process that made it,
/// where it is one of the names this module makes: `.NAME.tmp-PID` gives (NAME, PID).
fn temporary_owner(name: &str) -> Option<(&str, u32)> {
    let (stem, pid) = name.strip_prefix('.')?.rsplit_once('-')?;
    let of = [TEMPORARY, RETIRED]
        .iter()
        .find_map(|what| stem.strip_suffix(what)?.strip_suffix('.'))
        .filter(|of| !of.is_empty())?;
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| Some((of, pid.parse().ok()?))).flatten()
}

/// The file `name` is a temporary (or replaced folder) of, where it is one: `.NAME.tmp-PID`
/// gives NAME.
pub fn temporary_of(name: &str) -> Option<&str> {
    temporary_owner(name).map(|(of, _)| of)
}

/// Removes from `dir` (not below it) the temporaries and replaced folders of processes other
/// than this one, of the files `ours` says the caller writes: what a writer that died
/// between writing and renaming left. A file of that shape named after anything else (a
/// person's `.bashrc.old-2024`) stays. Only for a caller that knows no other process writes
/// into `dir` now (it holds the folder's lock); what it removed.
pub fn remove_others_temporaries(
    dir: &Path,
    ours: impl Fn(&str) -> bool,
) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let owner = (name.to_str())
            .and_then(temporary_owner)
            .filter(|(of, _)| ours(of));
        if owner.is_some_and(|(_, pid)| pid != std::process::id()) {
            remove(&entry.path())?;
            removed.push(entry.path());
        }
    }
    Ok(removed)
}

/// Puts the folder `new` at `path` (where there is no `new`, leaves none there). The folder
/// at `path` is renamed aside whole first and removed after, so a reader finds the old
/// folder whole or the new one (or, between two renames, none): never one half removed.
pub fn replace_dir(new: &Path, path: &Path) -> io::Result<()> {
    not_a_link(path)?;
    let old = beside(path, RETIRED);
    remove(&old)?;
    let had_one = match fs::rename(path, &old) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(e),
    };
    if fs::symlink_metadata(new).is_ok() {
        if let Err(e) = fs::rename(new, path) {
            if had_one {
                let _ = fs::rename(&old, path);
            }
            return Err(e);
        }
    }
    remove(&old)
}

/// Opens `path` to read and write, creating it empty where there is none and never
/// emptying it: a file several processes open at once (a lock). A link there is refused,
/// and so is anything but a regular file.
pub fn open_shared(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    open_regular(&mut options, path)
}

/// Refuses `path` where it is a link: a file or folder inside a run folder must not lead
/// out of it.
pub fn not_a_link(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(symlink_refusal()),
        _ => Ok(()),
    }
}

/// Creates the folder `path` (and its parents), refused where it is a link.
pub fn create_dir(path: &Path) -> io::Result<()> {
    not_a_link(path)?;
    fs::create_dir_all(path)
}

/// Removes the file or folder at `path` if there is one (a link itself, never its target).
pub fn remove(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_fifos_and_devices_are_refused_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "secret").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let e = read(&link, 100).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let e = write(&link, "x").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(create(&link).is_err());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret");
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = read(&fifo, 100).unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        let e = read(Path::new("/dev/zero"), 100).unwrap_err().to_string();
        assert!(e.contains("device"), "{e}");
        let e = read(dir.path(), 100).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let e = read(&a.join("run.json"), 100).unwrap_err().to_string();
        assert!(e.contains("loop of symbolic links"), "{e}");
    }

    #[test]
    fn a_read_is_capped_and_a_write_replaces_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        write(&path, "12345").unwrap();
        assert_eq!(read(&path, 5).unwrap(), b"12345");
        let e = read(&path, 4).unwrap_err().to_string();
        assert!(e.contains("more than 4 bytes"), "{e}");
        write(&path, "6").unwrap();
        assert_eq!(read_text(&path, 5).unwrap(), "6");
        // Nothing temporary is left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn temporaries_are_told_by_name_and_only_other_processes_ones_are_removed() {
        assert_eq!(temporary_owner(".plots.tmp-123"), Some(("plots", 123)));
        assert_eq!(temporary_owner(".report.md.tmp-7"), Some(("report.md", 7)));
        assert_eq!(temporary_owner(".plots.old-42"), Some(("plots", 42)));
        for not in [
            "plots",
            ".plots.tmp-",
            ".plots.tmp-x1",
            "plots.tmp-1",
            ".tmp-1",
            ".a.tmp-+1",
        ] {
            assert_eq!(temporary_owner(not), None, "{not}");
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let theirs = d.join(".plots.tmp-4294967295");
        std::fs::create_dir_all(theirs.join("inside")).unwrap();
        std::fs::write(d.join(".report.md.tmp-1"), "half").unwrap();
        let ours = temporary_beside(&d.join("cells.md"));
        std::fs::write(&ours, "being written").unwrap();
        std::fs::write(d.join("report.md"), "kept").unwrap();
        // Of that shape, but named after files the caller does not write: a person's.
        std::fs::create_dir_all(d.join(".mozilla.old-2023/p")).unwrap();
        std::fs::write(d.join(".bashrc.old-2024"), "rc").unwrap();
        let runner_writes = |name: &str| ["plots", "report.md", "cells.md"].contains(&name);
        let removed = remove_others_temporaries(d, runner_writes).unwrap();
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert!(!theirs.exists() && !d.join(".report.md.tmp-1").exists());
        assert!(ours.exists() && d.join("report.md").exists());
        assert!(d.join(".mozilla.old-2023/p").exists() && d.join(".bashrc.old-2024").exists());
    }

    #[test]
    fn a_replaced_folder_is_swapped_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (path, new) = (dir.path().join("plots"), dir.path().join("new"));
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("old.svg"), "old").unwrap();
        std::fs::create_dir(&new).unwrap();
        std::fs::write(new.join("a.svg"), "a").unwrap();
        replace_dir(&new, &path).unwrap();
        assert!(path.join("a.svg").exists() && !path.join("old.svg").exists());
        assert!(!new.exists());
        // No new folder: none is left.
        replace_dir(&new, &path).unwrap();
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_folder_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("plots");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        assert!(create_dir(&link).is_err());
        remove(&link).unwrap();
        assert!(dir.path().exists() && !link.exists());
    }
}
