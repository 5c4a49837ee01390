//! How a run folder stores its samples, telemetry and cell records. New runs write zstd:
//! each finished run's CSV rows as one frame of `samples.csv.zst` and `telemetry.csv.zst`,
//! and each record as one frame of `cells.jsonl.zst`, so that every frame decodes on its
//! own and a damaged one loses only itself (`frames.rs` reads on past it). Records were one
//! stream flushed after each record, which compresses them 5x against 2x a frame each
//! (`reports/trust`: 232 records, 354 KB of JSON, 73 KB as a stream, 177 KB as frames,
//! 173 KB at level 19), but a damaged block lost every record after it; the records stay
//! smaller than the samples. Runs written before are gzip members and plain `cells.jsonl`,
//! or one records stream: they are read as they are, and a resumed one goes on in its own
//! format (a stream's records rewritten as frames).

use super::CELLS_FILE;
use anyhow::{bail, Result};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// zstd's level for new runs. The parent compresses while a worker measures beside it:
/// level 3 writes a million samples in 0.3 s (gzip took 1.7 s, level 9 1.6 s, 19 90 s)
/// and decodes 2-3x faster than gzip at any level; 9 would be 8% smaller.
const ZSTD_LEVEL: i32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Zstd,
    /// Runs written before zstd: gzip CSVs, plain JSON lines.
    Gzip,
}

impl Format {
    /// The name `name` (a CSV, or the records) is stored under in this format.
    pub fn file(self, name: &str) -> String {
        match self {
            Format::Zstd => format!("{name}.zst"),
            Format::Gzip if name == CELLS_FILE => name.to_string(),
            Format::Gzip => format!("{name}.gz"),
        }
    }

    /// The format of the run in `dir`, by its records; None where it has none yet.
    pub fn of(dir: &Path) -> Result<Option<Format>> {
        Ok(find(dir, CELLS_FILE)?.map(|(_, format)| format))
    }

    /// The bytes every file of this format starts with, None where it has none (plain).
    pub fn magic(self, name: &str) -> Option<&'static [u8]> {
        match self {
            Format::Zstd => Some(&[0x28, 0xb5, 0x2f, 0xfd]),
            Format::Gzip if name == CELLS_FILE => None,
            // With deflate's method byte, the only one gzip has.
            Format::Gzip => Some(&[0x1f, 0x8b, 0x08]),
        }
    }

    /// Refuses `path` (stored as `name`) where it does not start as this format does.
    pub fn check_magic(self, path: &Path, name: &str, file: impl Read) -> Result<()> {
        let Some(magic) = self.magic(name) else {
            return Ok(());
        };
        let mut head = Vec::new();
        file.take(magic.len() as u64).read_to_end(&mut head)?;
        if head.len() == magic.len() && head != magic {
            let what = match self {
                Format::Zstd => "zstd",
                Format::Gzip => "gzip",
            };
            let rows = if name == CELLS_FILE {
                "records"
            } else {
                "rows"
            };
            bail!(
                "{} is not {what} data: the run folder is damaged (its {rows} cannot be read)",
                path.display()
            );
        }
        Ok(())
    }

    /// `text` as appended to the stored file `name`: a zstd frame, a gzip member, or as it
    /// is (an older run's plain records).
    pub fn frame(self, name: &str, text: &[u8]) -> io::Result<Vec<u8>> {
        match self {
            Format::Zstd => {
                // Told the size, zstd sizes its tables to a cell's rows.
                let mut z = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
                z.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
                z.compress(text)
            }
            Format::Gzip if name == CELLS_FILE => Ok(text.to_vec()),
            Format::Gzip => {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), Default::default());
                gz.write_all(text)?;
                gz.finish()
            }
        }
    }
}

/// Where `name` (a CSV, or the records) is stored in `dir`, and in which format; None
/// where it is in neither. A folder holding it in both is refused: it is not one run's.
pub fn find(dir: &Path, name: &str) -> Result<Option<(PathBuf, Format)>> {
    let [zstd, gzip] = [Format::Zstd, Format::Gzip].map(|f| (dir.join(f.file(name)), f));
    let there = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    match (there(&zstd.0), there(&gzip.0)) {
        (true, true) => bail!(
            "{} holds both {} and {}: a run writes one of them\n  hint: keep the one its run wrote (a run since zstd writes `.zst`) and move the other out of the folder",
            dir.display(),
            Format::Zstd.file(name),
            Format::Gzip.file(name)
        ),
        (true, false) => Ok(Some(zstd)),
        (false, true) => Ok(Some(gzip)),
        (false, false) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::damage_tests::{rows, write_runs};
    use crate::store::rows::each_csv_row;
    use crate::store::SAMPLES_FILE;

    #[test]
    fn runs_appended_as_frames_read_back_in_either_format() {
        for format in [Format::Zstd, Format::Gzip] {
            let dir = tempfile::tempdir().unwrap();
            write_runs(dir.path(), format, &["a,0,1\na,0,2\n", "b,0,3\n"]);
            let (got, read) = rows(dir.path());
            assert_eq!(got, ["a=1", "a=2", "b=3"]);
            assert!(read.warnings().is_empty() && read.lost.is_empty());
            assert_eq!(find(dir.path(), SAMPLES_FILE).unwrap().unwrap().1, format);
        }
    }

    #[test]
    fn a_folder_with_both_formats_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        write_runs(dir.path(), Format::Zstd, &["a,0,1\n"]);
        write_runs(dir.path(), Format::Gzip, &["a,0,1\n"]);
        let e = format!(
            "{:#}",
            each_csv_row(dir.path(), (SAMPLES_FILE, &[]), &[], |_, _, _| {})
                .err()
                .unwrap()
        );
        assert!(
            e.contains("samples.csv.zst") && e.contains("samples.csv.gz") && e.contains("hint"),
            "{e}"
        );
    }

    #[test]
    fn a_zst_file_that_is_not_zstd_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("samples.csv.zst"), "cell,time_ns\na,1\n").unwrap();
        let e = format!(
            "{:#}",
            each_csv_row(dir.path(), (SAMPLES_FILE, &[]), &[], |_, _, _| {})
                .err()
                .unwrap()
        );
        assert!(e.contains("samples.csv.zst is not zstd data"), "{e}");
    }

    #[test]
    fn an_older_run_is_gzip_and_plain_records_and_goes_on_so() {
        let old = Path::new("reports/statistics");
        assert_eq!(Format::of(old).unwrap(), Some(Format::Gzip));
        for name in [
            SAMPLES_FILE,
            crate::store::names::TELEMETRY_FILE,
            CELLS_FILE,
        ] {
            assert!(old.join(Format::Gzip.file(name)).exists(), "{name}");
        }
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(Format::of(empty.path()).unwrap(), None);
    }
}
