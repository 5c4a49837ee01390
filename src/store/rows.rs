//! The rows of a run's stored files, read as a crash or damage may have left them: the
//! gzip members or zstd frames of a CSV that decode (a torn last row dropped with a
//! warning), and the records of `cells.jsonl`; a damaged row or record makes its cell
//! unreadable, not the run.

use super::format::{self, Bounded, Format};
use super::CELLS_FILE;
use crate::files;
use crate::plan::Plan;
use crate::protocol::CellRecord;
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// A stored file `name` at `path`, checked to be of its `format`, as what it decodes to,
/// and its size on disk, which may be at most `cap`.
fn open_stored(path: &Path, name: &str, format: Format, cap: u64) -> Result<(Box<dyn Read>, u64)> {
    let file = files::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let size = file.metadata()?.len();
    if size > cap {
        return Err(files::too_large(cap))
            .with_context(|| format!("cannot read {}", path.display()));
    }
    let mut file = BufReader::new(file);
    format.check_magic(path, name, file.fill_buf()?)?;
    Ok((format.decoder(name, file)?, size))
}

/// A stored CSV file, read as a stream: the gzip members or zstd frames that decode (a
/// torn or damaged one ends the data, as a crash leaves it), or a plain `.csv` of an older
/// run. Streaming keeps a run's samples out of memory as text: only the rows' values are
/// kept.
struct StoredCsv {
    path: PathBuf,
    /// None for plain text.
    format: Option<Format>,
    source: Box<dyn Read>,
    /// The most it is read to.
    cap: u64,
}

fn open_csv(dir: &Path, name: &str) -> Result<Option<StoredCsv>> {
    if let Some((path, format)) = format::find(dir, name)? {
        let (source, size) = open_stored(&path, name, format, files::MAX_SAMPLES_FILE_BYTES)?;
        return Ok(Some(StoredCsv {
            path,
            format: Some(format),
            source,
            cap: files::decompressed_cap(size),
        }));
    }
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let file = files::open(&path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Some(StoredCsv {
        path,
        format: None,
        source: Box::new(file),
        cap: files::MAX_DECOMPRESSED_BYTES,
    }))
}

/// A readable row of a stored CSV, indexed by the position of a column among those asked
/// for.
pub(super) struct Row<'a> {
    record: &'a csv::ByteRecord,
    cols: &'a [usize],
}

impl std::ops::Index<usize> for Row<'_> {
    type Output = str;

    /// The value of the `i`th column asked for; empty where it is not UTF-8 (no value the
    /// runner writes is), which the caller then finds malformed.
    fn index(&self, i: usize) -> &str {
        std::str::from_utf8(&self.record[self.cols[i]]).unwrap_or("")
    }
}

/// What reading a stored CSV found besides its rows: where it is, the lines of rows that
/// are not readable (the first field of each where it can be read), the line of a torn
/// last row, dropped, and why zstd frames stopped decoding before the file's end.
pub(super) struct CsvRead {
    pub path: PathBuf,
    pub damaged: Vec<(u64, Option<String>)>,
    pub torn: Option<u64>,
    pub undecoded: Option<io::Error>,
}

impl CsvRead {
    /// The warning for a torn last row, or else for a torn or damaged frame, where there
    /// was one.
    pub fn torn_warning(&self) -> Option<String> {
        let file = file_name(&self.path);
        if let Some(line) = self.torn {
            return Some(format!(
                "{file}:{line}: dropped a torn last row (the run stopped while writing it)"
            ));
        }
        self.undecoded.as_ref().map(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => {
                format!("{file}: dropped a torn last frame (the run stopped while writing it)")
            }
            _ => format!(
                "{file}: dropped the rows from a frame that does not decode on ({e}): the run folder is damaged there"
            ),
        })
    }
}

/// Streams each readable row of the stored CSV `name` in `dir` to `row`, with the file's
/// name (`samples.csv` in an older run) and its line number, without holding the file: a
/// malformed last row is torn (dropped), a malformed row before it is damage the caller
/// decides about. None where the run has no such file.
pub(super) fn each_csv_row(
    dir: &Path,
    name: &str,
    want: &[&str],
    mut row: impl FnMut(&str, u64, Row),
) -> Result<Option<CsvRead>> {
    let Some(StoredCsv {
        path,
        format,
        source,
        cap,
    }) = open_csv(dir, name)?
    else {
        return Ok(None);
    };
    let bounded = Bounded::new(source, cap);
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .buffer_capacity(1 << 20)
        .from_reader(bounded);
    let header = reader
        .headers()
        .with_context(|| format!("{}: no header", path.display()))?
        .clone();
    let cols = want
        .iter()
        .map(|name| {
            header.iter().position(|c| c == *name).with_context(|| {
                format!(
                    "{}: no `{name}` column (its header is `{}`): the run folder is damaged",
                    path.display(),
                    header.iter().collect::<Vec<_>>().join(",")
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let file = file_name(&path);
    let mut read = CsvRead {
        path,
        damaged: Vec::new(),
        torn: None,
        undecoded: None,
    };
    // One row behind, so that the last one is known as last; bytes, not text, since
    // checking every field as UTF-8 costs more than reading it.
    // Two records read into by turns, so that no row allocates.
    let (mut this, mut next) = (csv::ByteRecord::new(), csv::ByteRecord::new());
    let mut pending: Option<(u64, csv::Result<()>)> = None;
    let mut line = 1u64;
    loop {
        let got = reader.read_byte_record(&mut next);
        let more = !matches!(got, Ok(false));
        if let Some((at, r)) = pending.take() {
            match r {
                Ok(()) if this.len() == header.len() => row(
                    &file,
                    at,
                    Row {
                        record: &this,
                        cols: &cols,
                    },
                ),
                _ if !more => read.torn = Some(at),
                r => {
                    let first = (r.ok()).and_then(|()| {
                        this.get(0)
                            .map(|id| String::from_utf8_lossy(id).into_owned())
                    });
                    read.damaged.push((at, first));
                }
            }
        }
        if !more {
            break;
        }
        std::mem::swap(&mut this, &mut next);
        line += 1;
        pending = Some((line, got.map(|_| ())));
    }
    let bounded = reader.into_inner();
    if bounded.over {
        bail!(
            "{} decompresses to more than {} ({}x its size, or {}), the most the runner reads: the file is damaged, or the run too large to render (split it into parts)",
            read.path.display(),
            files::size_text(cap),
            files::MAX_EXPANSION,
            files::size_text(files::MAX_DECOMPRESSED_BYTES)
        );
    }
    // A gzip member that stops decoding says so by its torn row alone, as it always has.
    if format == Some(Format::Zstd) {
        read.undecoded = bounded.failed;
    }
    Ok(Some(read))
}

/// Cells whose stored data cannot be trusted, each with why: left out of the run read
/// back, and named in its warnings, so that damage loses only what it damaged.
#[derive(Default)]
pub(super) struct Unreadable(pub std::collections::BTreeMap<String, String>);

impl Unreadable {
    pub fn add(&mut self, id: &str, why: String) {
        self.0.entry(id.to_string()).or_insert(why);
    }
}

/// A run's records file as it decodes.
pub(crate) struct RecordsFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// Why decoding stopped before the file's end, where damage stopped it (a zstd stream
    /// that a stopped run left open reads to its last flush, and says nothing).
    pub damage: Option<io::Error>,
}

/// The records of the run in `dir` (`cells.jsonl.zst`, or `cells.jsonl` of an older run)
/// as they decode; None where it has none.
pub(crate) fn read_cells(dir: &Path) -> Result<Option<RecordsFile>> {
    let Some((path, format)) = format::find(dir, CELLS_FILE)? else {
        return Ok(None);
    };
    read_cells_at(path, format).map(Some)
}

/// The records file at `path`, in `format`, as it decodes: at most
/// `files::MAX_RUN_FILE_BYTES` of it.
pub(crate) fn read_cells_at(path: PathBuf, format: Format) -> Result<RecordsFile> {
    let cap = files::MAX_RUN_FILE_BYTES;
    let (records, _) = open_stored(&path, CELLS_FILE, format, files::MAX_RUN_FILE_BYTES)?;
    let mut decoded = Bounded::new(records, cap);
    let mut bytes = Vec::new();
    decoded.read_to_end(&mut bytes)?;
    if decoded.over {
        bail!(
            "{} decompresses to more than {}, the most the runner reads of a run's records: the file is damaged",
            path.display(),
            files::size_text(cap)
        );
    }
    let damage = (decoded.failed).filter(|e| e.kind() != io::ErrorKind::UnexpectedEof);
    Ok(RecordsFile {
        path,
        bytes,
        damage,
    })
}

/// The records' text: a last character cut short is a torn line's, left to be dropped as
/// one.
fn records_text(dir: &Path, stored: RecordsFile) -> Result<String> {
    String::from_utf8(stored.bytes).or_else(|e| {
        let valid = e.utf8_error().valid_up_to();
        if e.utf8_error().error_len().is_some() {
            bail!(
                "cannot read {} (is {} a run's folder?): it is not UTF-8 text",
                stored.path.display(),
                dir.display()
            );
        }
        let mut bytes = e.into_bytes();
        bytes.truncate(valid);
        Ok(String::from_utf8(bytes).expect("valid up to here"))
    })
}

/// `cells.jsonl`: one record per line; a torn last line is dropped with a warning, a
/// malformed line before it or a cell and process recorded twice make that cell unreadable.
pub(super) fn read_records(
    dir: &Path,
    plan: &Plan,
    unreadable: &mut Unreadable,
    warnings: &mut Vec<String>,
) -> Result<Vec<CellRecord>> {
    let Some(stored) = read_cells(dir)? else {
        bail!(
            "cannot read {} (is {} a run's folder?): there is no such file",
            dir.join(CELLS_FILE).display(),
            dir.display()
        );
    };
    let file = file_name(&stored.path);
    if let Some(e) = &stored.damage {
        warnings.push(format!(
            "{file}: dropped the records from a part that does not decode on ({e}): the run folder is damaged there"
        ));
    }
    let text = records_text(dir, stored)?;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    let id_in = |line: &str| {
        line.split("\"id\":\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .map(String::from)
    };
    let mut records: Vec<CellRecord> = Vec::with_capacity(lines.len());
    let mut lines_of: HashMap<(String, u32), usize> = HashMap::new();
    for (n, (i, line)) in lines.iter().enumerate() {
        let at = i + 1;
        match serde_json::from_str::<CellRecord>(line) {
            Ok(r) if plan.cells.get(r.cell).is_none_or(|c| c.id != r.id) => unreadable.add(
                &r.id,
                format!(
                    "{file}:{at}: index {} is not this cell's in the stored experiment's plan",
                    r.cell
                ),
            ),
            Ok(r) => {
                if let Some(earlier) = lines_of.insert((r.id.clone(), r.process), at) {
                    unreadable.add(
                        &r.id,
                        format!(
                            "{file}:{at}: process {} recorded again (line {earlier})",
                            r.process
                        ),
                    );
                }
                records.push(r);
            }
            Err(_) if n + 1 == lines.len() => {
                let id = id_in(line).map_or(String::new(), |id| format!(" of cell {id}"));
                warnings.push(format!(
                    "{file}:{at}: dropped a torn last line{id} (the run stopped while writing it); that cell counts as not run"
                ));
            }
            Err(e) => match id_in(line) {
                Some(id) => unreadable.add(&id, format!("{file}:{at}: a malformed record: {e}")),
                None => warnings.push(format!("{file}:{at}: dropped a malformed line: {e}")),
            },
        }
    }
    Ok(records)
}

/// A file's name alone: warnings end up in the report, which must not depend on where the
/// run folder lies.
pub(super) fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned())
}
