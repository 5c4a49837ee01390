//! The rows of a run's stored files, read as a crash or damage may have left them: the
//! gzip members of a CSV that decode (a torn last row dropped with a warning), and the
//! records of `cells.jsonl`; a damaged row or record makes its cell unreadable, not the run.

use super::CELLS_FILE;
use crate::files;
use crate::plan::Plan;
use crate::protocol::CellRecord;
use anyhow::{bail, Context, Result};
use flate2::read::MultiGzDecoder;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The gzip magic number every member starts with.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A CSV file's bytes: the gzip members that decode (a torn last member gives what it
/// holds), or a plain `.csv` of an older run; at most `MAX_DECOMPRESSED_BYTES` of text.
pub(super) fn read_csv_bytes(dir: &Path, name: &str) -> Result<Option<(PathBuf, Vec<u8>)>> {
    let gz = dir.join(name);
    if std::fs::symlink_metadata(&gz).is_ok() {
        let file = files::open(&gz).with_context(|| format!("cannot read {}", gz.display()))?;
        if file.metadata()?.len() > files::MAX_RUN_FILE_BYTES {
            return Err(files::too_large(files::MAX_RUN_FILE_BYTES))
                .with_context(|| format!("cannot read {}", gz.display()));
        }
        let mut magic = [0u8; 2];
        let mut head = file.take(2);
        let n = head.read(&mut magic)?;
        if n == 2 && magic != GZIP_MAGIC {
            bail!(
                "{} is not gzip data: the run folder is damaged (its samples cannot be read)",
                gz.display()
            );
        }
        let file = files::open(&gz)?;
        let mut bytes = Vec::new();
        // Bytes decoded before a torn member's end stay in `bytes`.
        let _ = MultiGzDecoder::new(file)
            .take(files::MAX_DECOMPRESSED_BYTES + 1)
            .read_to_end(&mut bytes);
        if bytes.len() as u64 > files::MAX_DECOMPRESSED_BYTES {
            bail!(
                "{} decompresses to more than {}, the most the runner reads: the run is too large to render (split it into parts) or the file is damaged",
                gz.display(),
                files::size_text(files::MAX_DECOMPRESSED_BYTES)
            );
        }
        return Ok(Some((gz, bytes)));
    }
    let plain = dir.join(name.trim_end_matches(".gz"));
    if std::fs::symlink_metadata(&plain).is_err() {
        return Ok(None);
    }
    let bytes = files::read(&plain, files::MAX_DECOMPRESSED_BYTES)
        .with_context(|| format!("cannot read {}", plain.display()))?;
    Ok(Some((plain, bytes)))
}

/// The columns asked for, by position, each readable row with its line number, and the
/// lines of rows that are not (the first field of each where it can be read).
pub(super) struct Rows {
    pub cols: Vec<usize>,
    pub rows: Vec<(u64, csv::StringRecord)>,
    pub damaged: Vec<(u64, Option<String>)>,
}

/// CSV rows with their line numbers; a malformed last row is torn (dropped, with a
/// warning), a malformed row before it is damage the caller decides about.
pub(super) fn csv_rows(
    path: &Path,
    bytes: &[u8],
    want: &[&str],
    warnings: &mut Vec<String>,
) -> Result<Rows> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
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
    let all: Vec<_> = reader.records().collect();
    let total = all.len();
    let mut rows = Rows {
        cols,
        rows: Vec::with_capacity(total),
        damaged: Vec::new(),
    };
    for (i, row) in all.into_iter().enumerate() {
        let line = i as u64 + 2;
        match row {
            Ok(r) if r.len() == header.len() => rows.rows.push((line, r)),
            _ if i + 1 == total => warnings.push(format!(
                "{}:{line}: dropped a torn last row (the run stopped while writing it)",
                file_name(path)
            )),
            row => {
                let first = row.ok().and_then(|r| r.get(0).map(String::from));
                rows.damaged.push((line, first));
            }
        }
    }
    Ok(rows)
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

/// `cells.jsonl`: one record per line; a torn last line is dropped with a warning, a
/// malformed line before it or a cell and process recorded twice make that cell unreadable.
pub(super) fn read_records(
    dir: &Path,
    plan: &Plan,
    unreadable: &mut Unreadable,
    warnings: &mut Vec<String>,
) -> Result<Vec<CellRecord>> {
    let text = super::read::read_text(dir, CELLS_FILE, files::MAX_RUN_FILE_BYTES)?;
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
                format!("{CELLS_FILE}:{at}: index {} is not this cell's in the stored experiment's plan", r.cell),
            ),
            Ok(r) => {
                if let Some(earlier) = lines_of.insert((r.id.clone(), r.process), at) {
                    unreadable.add(
                        &r.id,
                        format!("{CELLS_FILE}:{at}: process {} recorded again (line {earlier})", r.process),
                    );
                }
                records.push(r);
            }
            Err(_) if n + 1 == lines.len() => {
                let id = id_in(line).map_or(String::new(), |id| format!(" of cell {id}"));
                warnings.push(format!(
                    "{CELLS_FILE}:{at}: dropped a torn last line{id} (the run stopped while writing it); that cell counts as not run"
                ));
            }
            Err(e) => match id_in(line) {
                Some(id) => unreadable.add(&id, format!("{CELLS_FILE}:{at}: a malformed record: {e}")),
                None => warnings.push(format!("{CELLS_FILE}:{at}: dropped a malformed line: {e}")),
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
