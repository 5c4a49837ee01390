//! A run's cell records, read line by line as a crash or damage may have left them: from
//! `cells.jsonl.zst` (a frame per record; one stream in runs before) or the plain
//! `cells.jsonl` of older runs. The line a frame was giving when it failed to decode, a
//! line that is not UTF-8 or not a record, and a cell and process recorded twice make that
//! cell unreadable, not the run; a torn last line (a crash mid-write) is dropped with a
//! warning.

use super::format::{self, Format};
use super::frames::{Decoded, Frames, Limits, Lost};
use super::rows::{file_name, Said, Unreadable};
use super::CELLS_FILE;
use crate::files;
use crate::plan::Plan;
use crate::protocol::CellRecord;
use anyhow::{bail, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What a records file may hold, on disk and decoded.
const RECORDS_LIMITS: Limits = Limits {
    on_disk: files::MAX_RUN_FILE_BYTES,
    floor: files::MAX_RUN_FILE_BYTES,
    grows: false,
};

/// The most a line holds (a record is a few KB): a longer one is kept only in part.
const MAX_LINE_BYTES: usize = 16 << 20;

/// The most lines a records file gives: a record per run of a cell, and no plan holds more
/// runs. Lines past it are counted, not kept.
const MAX_LINES: usize = crate::plan::MAX_RUNS as usize;

/// A line of a records file.
pub(crate) struct Line {
    /// Its number in the decoded text, from 1.
    pub at: usize,
    pub bytes: Vec<u8>,
    /// Longer than `MAX_LINE_BYTES`: `bytes` are its first.
    pub too_long: bool,
    /// The frame that gave it, where that frame failed to decode after it: the damage may
    /// have reached it.
    pub lost: Option<u64>,
}

/// A run's records file as it decodes.
pub(crate) struct RecordsFile {
    pub path: PathBuf,
    /// Each line that holds more than white space, in order (the first [`MAX_LINES`]).
    pub lines: Vec<Line>,
    /// Lines past [`MAX_LINES`], not kept.
    pub beyond: u64,
    /// The frames that do not decode (a torn last one aside), each with the number of the
    /// last line it gave, where it gave one. A frame written now holds one record; an older
    /// run's stream holds them all, and the lines it gave before its last stand.
    pub lost: Vec<(Lost, Option<usize>)>,
}

/// Lines gathered from frames' bytes as they are decoded.
#[derive(Default)]
struct Gathering {
    lines: Vec<Line>,
    beyond: u64,
    current: Vec<u8>,
    too_long: bool,
    at: usize,
}

impl Gathering {
    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            if end == 0 && self.current.is_empty() && !self.too_long {
                // A run of empty lines is counted, not gathered: a file of newlines alone
                // (a bomb) took seconds a line at a time.
                let run = bytes.iter().take_while(|&&b| b == b'\n').count();
                self.at += run;
                bytes = &bytes[run..];
                continue;
            }
            self.extend(&bytes[..end]);
            self.end_line();
            bytes = &bytes[end + 1..];
        }
        self.extend(bytes);
    }

    fn extend(&mut self, part: &[u8]) {
        let room = MAX_LINE_BYTES - self.current.len();
        self.too_long |= part.len() > room;
        self.current
            .extend_from_slice(&part[..part.len().min(room)]);
    }

    fn end_line(&mut self) {
        self.at += 1;
        let mut bytes = std::mem::take(&mut self.current);
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        let blank = !self.too_long && bytes.iter().all(u8::is_ascii_whitespace);
        if !blank && self.lines.len() >= MAX_LINES {
            self.beyond += 1;
        } else if !blank {
            self.lines.push(Line {
                at: self.at,
                bytes,
                too_long: self.too_long,
                lost: None,
            });
        }
        self.too_long = false;
    }

    /// A frame's end ends its last line: no part of a frame cut short joins the next.
    fn frame_ended(&mut self) {
        if self.too_long || !self.current.is_empty() {
            self.end_line();
        }
    }
}

/// The records of the run in `dir` (`cells.jsonl.zst`, or `cells.jsonl` of an older run)
/// as they decode; None where it has none.
pub(crate) fn read_cells(dir: &Path) -> Result<Option<RecordsFile>> {
    let Some((path, format)) = format::find(dir, CELLS_FILE)? else {
        return Ok(None);
    };
    read_cells_at(path, format).map(Some)
}

/// The records file at `path`, in `format`, as it decodes, frame by frame: at most
/// `files::MAX_RUN_FILE_BYTES` of it. A frame cut short by the file's end is where a crash
/// stopped the run (a stream left open ends so at its last flush): its whole lines stand.
pub(crate) fn read_cells_at(path: PathBuf, format: Format) -> Result<RecordsFile> {
    let mut frames = Frames::open(path, CELLS_FILE, Some(format), RECORDS_LIMITS)?;
    let mut gathering = Gathering::default();
    let mut lost = Vec::new();
    let mut first = 0;
    while let Some(decoded) = frames.next(&mut |bytes| gathering.feed(bytes))? {
        gathering.frame_ended();
        let last = gathering.lines[first..].last_mut();
        if let Decoded::Lost(frame) = decoded {
            let at = last.map(|line| {
                line.lost = Some(frame.frame);
                line.at
            });
            lost.push((frame, at));
        }
        first = gathering.lines.len();
    }
    if let Some(torn) = frames.torn() {
        lost.retain(|(frame, _)| frame.frame != torn);
        for line in gathering.lines.iter_mut().filter(|l| l.lost == Some(torn)) {
            line.lost = None;
        }
    }
    Ok(RecordsFile {
        path: frames.path,
        lines: gathering.lines,
        beyond: gathering.beyond,
        lost,
    })
}

/// The id a record's line names, read as text however damaged.
fn id_in(line: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(line);
    let id = text.split("\"id\":\"").nth(1)?.split('"').next()?;
    Some(id.to_string())
}

/// Why a line holds no record. The decoder's and serde's words are part of the message.
#[derive(Debug, thiserror::Error)]
enum NoRecord<'a> {
    #[error("its {}", .0.describe())]
    Lost(&'a Lost),
    #[error("a line longer than {}", files::size_text(MAX_LINE_BYTES as u64))]
    TooLong,
    #[error("a line that is not UTF-8 text (at its byte {})", .0.valid_up_to() + 1)]
    NotText(std::str::Utf8Error),
    #[error("a malformed record: {0}")]
    Malformed(serde_json::Error),
}

/// The record a line holds, or why there is none.
fn record_of<'a>(
    line: &Line,
    lost: &'a [(Lost, Option<usize>)],
) -> Result<CellRecord, NoRecord<'a>> {
    if let Some((frame, _)) = (line.lost).and_then(|f| lost.iter().find(|(l, _)| l.frame == f)) {
        return Err(NoRecord::Lost(frame));
    }
    if line.too_long {
        return Err(NoRecord::TooLong);
    }
    let text = std::str::from_utf8(&line.bytes).map_err(NoRecord::NotText)?;
    serde_json::from_str(text).map_err(NoRecord::Malformed)
}

/// `cells.jsonl`: one record per line. A torn last line is dropped with a warning, and so
/// is a frame lost whole (its cell counts as not run); a line that cannot be read, or a cell
/// and process recorded twice, make that cell unreadable. The records, and those lost with
/// no cell to name.
pub(super) fn read_records(
    dir: &Path,
    plan: &Plan,
    unreadable: &mut Unreadable,
    warnings: &mut Vec<String>,
) -> Result<(Vec<CellRecord>, Vec<String>)> {
    let Some(stored) = read_cells(dir)? else {
        bail!(
            "cannot read {} (is {} a run's folder?): there is no such file (nor an older run's {CELLS_FILE})",
            dir.join(Format::Zstd.file(CELLS_FILE)).display(),
            dir.display()
        );
    };
    let file = file_name(&stored.path);
    let mut lost = Vec::new();
    for (frame, last) in &stored.lost {
        let what = match last {
            Some(at) => format!("what it held from line {at} on is lost"),
            None => {
                lost.push(format!("a record in {file} (its frame {})", frame.frame));
                "the record it held is lost".to_string()
            }
        };
        warnings.push(format!(
            "{file}: {}: {what}, and those cells count as not run",
            frame.describe()
        ));
    }
    if stored.beyond > 0 {
        warnings.push(format!(
            "{file}: {} lines past its first {MAX_LINES}, more records than any plan has runs, are left out",
            stored.beyond
        ));
    }
    let in_plan = plan.index_by_id();
    let mut dropped = Said::default();
    let mut records: Vec<CellRecord> = Vec::with_capacity(stored.lines.len());
    // Each cell and process: the index of the line that recorded it.
    let mut lines_of: HashMap<(String, u32), usize> = HashMap::new();
    for (n, line) in stored.lines.iter().enumerate() {
        let at = line.at;
        match record_of(line, &stored.lost) {
            Ok(r) if plan.cells.get(r.cell).is_none_or(|c| c.id != r.id) => unreadable.add(
                &r.id,
                format!(
                    "{file}:{at}: index {} is not this cell's in the stored experiment's plan",
                    r.cell
                ),
            ),
            Ok(r) => {
                match lines_of.insert((r.id.clone(), r.process), n) {
                    // The same frame stored twice (a copy gone wrong): the record is kept once.
                    Some(e) if stored.lines[e].bytes == line.bytes => {
                        let earlier = stored.lines[e].at;
                        warnings.push(format!(
                            "{file}:{at}: the record of cell {} (process {}) repeats line {earlier} byte for byte: it is kept once",
                            r.id, r.process
                        ));
                        continue;
                    }
                    Some(e) => unreadable.add(
                        &r.id,
                        format!(
                            "{file}:{at}: process {} recorded again, differently (line {})",
                            r.process, stored.lines[e].at
                        ),
                    ),
                    None => {}
                }
                records.push(r);
            }
            Err(_) if n + 1 == stored.lines.len() && line.lost.is_none() => {
                let id = id_in(&line.bytes).map_or(String::new(), |id| format!(" of cell {id}"));
                warnings.push(format!(
                    "{file}:{at}: dropped a torn last line{id} (the run stopped while writing it); that cell counts as not run"
                ));
            }
            Err(why) => match id_in(&line.bytes).filter(|id| in_plan.contains_key(id.as_str())) {
                Some(id) => unreadable.add(&id, format!("{file}:{at}: {why}")),
                None => dropped.add(|| format!("{file}:{at}: dropped a line: {why}")),
            },
        }
    }
    // A line dropped may have been any cell's record: the merge of such a part fails.
    if dropped.count() > 0 {
        let count = dropped.count();
        lost.push(format!(
            "{count} record(s) of {file} that name no cell of the plan"
        ));
    }
    warnings.extend(dropped.told("lines dropped"));
    Ok((records, lost))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_lines_are_counted_and_not_gathered() {
        let mut g = Gathering::default();
        g.feed(b"a\n\n\n");
        g.feed(b"\nb\n \nc");
        g.frame_ended();
        let lines: Vec<(usize, &[u8])> = g.lines.iter().map(|l| (l.at, &l.bytes[..])).collect();
        assert_eq!(lines, [(1, &b"a"[..]), (5, b"b"), (7, b"c")]);
    }
}
