//! How a run folder stores its samples, telemetry and cell records. New runs write zstd:
//! each finished run's CSV rows as one frame of `samples.csv.zst` and `telemetry.csv.zst`,
//! and `cells.jsonl.zst` as one stream flushed after each record (records are small and
//! alike, so a frame each would compress them 2x, a stream 5x). Runs written before are
//! gzip members and plain `cells.jsonl`: they are read as they are, and a resumed one goes
//! on in its own format.

use super::CELLS_FILE;
use anyhow::{bail, Result};
use std::io::{self, BufRead, Read, Write};
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
    fn magic(self, name: &str) -> Option<&'static [u8]> {
        match self {
            Format::Zstd => Some(&[0x28, 0xb5, 0x2f, 0xfd]),
            Format::Gzip if name == CELLS_FILE => None,
            Format::Gzip => Some(&[0x1f, 0x8b]),
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

    /// `text` as one gzip member or zstd frame, to append to a stored CSV.
    pub fn compress(self, text: &[u8]) -> io::Result<Vec<u8>> {
        match self {
            Format::Zstd => {
                // Told the size, zstd sizes its tables to a cell's rows.
                let mut z = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
                z.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
                z.compress(text)
            }
            Format::Gzip => {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), Default::default());
                gz.write_all(text)?;
                gz.finish()
            }
        }
    }

    /// The records' writer on `file`: each `flush` puts what was written on disk.
    pub fn records_writer(self, file: std::fs::File) -> io::Result<Box<dyn Write>> {
        Ok(match self {
            Format::Zstd => {
                let mut z = zstd::Encoder::new(file, ZSTD_LEVEL)?;
                z.include_checksum(true)?;
                // The frame's end is written when the run's writer goes; a run stopped
                // before that leaves it open, and reads back to its last flush.
                Box::new(z.auto_finish())
            }
            Format::Gzip => Box::new(io::BufWriter::new(file)),
        })
    }

    /// What `source`, stored as `name`, holds: all its gzip members or zstd frames.
    pub fn decoder<'a>(
        self,
        name: &str,
        source: impl BufRead + 'a,
    ) -> io::Result<Box<dyn Read + 'a>> {
        Ok(match self {
            Format::Zstd => Box::new(zstd::Decoder::with_buffer(source)?),
            Format::Gzip if name == CELLS_FILE => Box::new(source),
            Format::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(source)),
        })
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

/// A reader that ends where its source fails (the data decoded so far stands, as a torn
/// last frame or member leaves it; the error is kept) or passes `limit` bytes (noted, so
/// that the caller refuses it).
pub struct Bounded<R> {
    inner: R,
    read: u64,
    limit: u64,
    pub over: bool,
    pub failed: Option<io::Error>,
}

impl<R> Bounded<R> {
    pub fn new(inner: R, limit: u64) -> Bounded<R> {
        Bounded {
            inner,
            read: 0,
            limit,
            over: false,
            failed: None,
        }
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.over || self.failed.is_some() {
            return Ok(0);
        }
        let n = self.inner.read(buf).unwrap_or_else(|e| {
            self.failed = Some(e);
            0
        });
        self.read += n as u64;
        self.over = self.read > self.limit;
        Ok(if self.over { 0 } else { n })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::rows::{each_csv_row, read_cells};
    use crate::store::SAMPLES_FILE;

    /// `samples.csv` in `dir` in `format`: a header, then one frame (or member) per run.
    fn write_runs(dir: &Path, format: Format, runs: &[&str]) -> PathBuf {
        let path = dir.join(format.file(SAMPLES_FILE));
        let mut bytes = format.compress(b"cell,time_ns\n").unwrap();
        for rows in runs {
            bytes.extend(format.compress(rows.as_bytes()).unwrap());
        }
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Each row's cell and time, and the warning reading them gave.
    fn rows(dir: &Path) -> (Vec<String>, Option<String>) {
        let mut got = Vec::new();
        let read = each_csv_row(dir, SAMPLES_FILE, &["cell", "time_ns"], |_, _, r| {
            got.push(format!("{}={}", &r[0], &r[1]));
        })
        .unwrap()
        .unwrap();
        (got, read.torn_warning())
    }

    #[test]
    fn runs_appended_as_frames_read_back_in_either_format() {
        for format in [Format::Zstd, Format::Gzip] {
            let dir = tempfile::tempdir().unwrap();
            write_runs(dir.path(), format, &["a,1\na,2\n", "b,3\n"]);
            assert_eq!(
                rows(dir.path()),
                (vec!["a=1".into(), "a=2".into(), "b=3".into()], None)
            );
            assert_eq!(find(dir.path(), SAMPLES_FILE).unwrap().unwrap().1, format);
        }
    }

    #[test]
    fn a_torn_last_zstd_frame_is_dropped_with_a_warning_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_runs(dir.path(), Format::Zstd, &["a,1\n"]);
        let last = Format::Zstd
            .compress("b,2\n".repeat(100).as_bytes())
            .unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend(&last[..last.len() / 2]);
        std::fs::write(&path, bytes).unwrap();
        let (got, warning) = rows(dir.path());
        assert_eq!(got, ["a=1"]);
        let warning = warning.unwrap();
        assert!(
            warning.starts_with("samples.csv.zst: dropped a torn last frame"),
            "{warning}"
        );
    }

    #[test]
    fn a_frame_that_does_not_decode_drops_what_follows_it_as_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_runs(dir.path(), Format::Zstd, &["a,1\n", "b,2\n", "c,3\n"]);
        let mut bytes = std::fs::read(&path).unwrap();
        // The last frame's checksum no longer matches its content.
        let end = bytes.len() - 1;
        bytes[end] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
        let (got, warning) = rows(dir.path());
        assert_eq!(got, ["a=1", "b=2"]);
        assert!(warning.unwrap().contains("damaged"));
    }

    #[test]
    fn a_folder_with_both_formats_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        write_runs(dir.path(), Format::Zstd, &["a,1\n"]);
        write_runs(dir.path(), Format::Gzip, &["a,1\n"]);
        let e = format!(
            "{:#}",
            each_csv_row(dir.path(), SAMPLES_FILE, &[], |_, _, _| {})
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
            each_csv_row(dir.path(), SAMPLES_FILE, &[], |_, _, _| {})
                .err()
                .unwrap()
        );
        assert!(e.contains("samples.csv.zst is not zstd data"), "{e}");
    }

    #[test]
    fn a_zstd_bomb_is_read_up_to_the_limit_only() {
        let bomb = Format::Zstd.compress(&vec![b'\n'; 64 << 20]).unwrap();
        assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
        let source = Format::Zstd.decoder(SAMPLES_FILE, &bomb[..]).unwrap();
        let mut bounded = Bounded::new(source, 1 << 20);
        let n = io::copy(&mut bounded, &mut io::sink()).unwrap();
        assert!(bounded.over && n <= 1 << 20, "{n} bytes read");
    }

    #[test]
    fn records_read_back_to_the_last_flush_of_a_stream_left_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(Format::Zstd.file(CELLS_FILE));
        let mut w = Format::Zstd
            .records_writer(std::fs::File::create(&path).unwrap())
            .unwrap();
        for line in ["{\"a\":1}", "{\"b\":2}"] {
            writeln!(w, "{line}").unwrap();
            w.flush().unwrap();
        }
        // A run killed here never ends the frame.
        std::mem::forget(w);
        let read = read_cells(dir.path()).unwrap().unwrap();
        assert_eq!(read.bytes, b"{\"a\":1}\n{\"b\":2}\n");
        assert!(read.damage.is_none());
        assert_eq!(Format::of(dir.path()).unwrap(), Some(Format::Zstd));
    }

    #[test]
    fn an_older_run_is_gzip_and_plain_records_and_goes_on_so() {
        let old = Path::new("reports/statistics");
        assert_eq!(Format::of(old).unwrap(), Some(Format::Gzip));
        for name in [SAMPLES_FILE, crate::store::TELEMETRY_FILE, CELLS_FILE] {
            assert!(old.join(Format::Gzip.file(name)).exists(), "{name}");
        }
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(Format::of(empty.path()).unwrap(), None);
    }
}
