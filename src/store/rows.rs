//! The rows of a run's stored CSVs, read as a crash or damage may have left them: frame by
//! frame (`frames.rs`), each row parsed within its frame and capped in length. A torn last
//! row or frame is dropped with a warning, and so are the rows of a frame that repeats
//! another's runs (kept once); a malformed row, and a frame that does not decode with the
//! runs it gave rows of before it failed, are told to the caller, which decides what each
//! costs.

use super::format;
use super::frames::{Decoded, Frames, Limits, Lost};
use crate::files;
use anyhow::{bail, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The most one row holds, in bytes and in fields: a row the runner writes has a few
/// hundred bytes and a few dozen fields, and a longer one is parsed past, not held.
const MAX_ROW_BYTES: usize = 1 << 20;
const MAX_ROW_FIELDS: usize = 1 << 12;

/// What a stored CSV may hold: a compressed one is decoded to its cap as it decodes.
pub(super) const CSV_LIMITS: Limits = Limits {
    on_disk: files::MAX_SAMPLES_FILE_BYTES,
    floor: files::MAX_DECOMPRESSED_BYTES,
    grows: true,
};

/// The stored CSV `name` in `dir`: compressed, or a plain `.csv` of an older run; None
/// where there is none.
fn open_csv(dir: &Path, name: &str) -> Result<Option<Frames>> {
    if let Some((path, format)) = format::find(dir, name)? {
        return Frames::open(path, name, Some(format), CSV_LIMITS).map(Some);
    }
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let plain = Limits {
        grows: false,
        ..CSV_LIMITS
    };
    Frames::open(path, name, None, plain).map(Some)
}

/// Bytes as text, whatever they hold: names for warnings.
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Field `j` of a row parsed into `bytes`, its fields ending at `ends`.
fn field<'a>(bytes: &'a [u8], ends: &[usize], j: usize) -> &'a [u8] {
    let start = if j == 0 { 0 } else { ends[j - 1] };
    &bytes[start..ends[j]]
}

/// A readable row of a stored CSV, indexed by the position of a column among those asked
/// for.
pub(super) struct Row<'a> {
    bytes: &'a [u8],
    ends: &'a [usize],
    cols: &'a [usize],
}

impl Row<'_> {
    fn field(&self, i: usize) -> &[u8] {
        field(self.bytes, self.ends, self.cols[i])
    }
}

impl std::ops::Index<usize> for Row<'_> {
    type Output = str;

    /// The value of the `i`th column asked for; empty where it is not UTF-8 (no value the
    /// runner writes is), which the caller then finds malformed.
    fn index(&self, i: usize) -> &str {
        std::str::from_utf8(self.field(i)).unwrap_or("")
    }
}

/// A row as parsed: its fields' bytes end to end and where each ends; for a row past the
/// caps, its first field alone where that fit, or nothing.
struct Parsed<'a> {
    bytes: &'a [u8],
    ends: &'a [usize],
    too_long: bool,
}

/// Rows parsed from a frame's bytes as they are decoded, each held within the caps.
struct Parser {
    core: csv_core::Reader,
    bytes: Vec<u8>,
    ends: Vec<usize>,
    nout: usize,
    nend: usize,
    /// Once the row being parsed passed a cap: how much of it is kept (its first field,
    /// or nothing); the rest is parsed into the room after it and thrown away.
    kept: Option<(usize, usize)>,
}

impl Parser {
    fn new() -> Parser {
        Parser {
            core: csv_core::Reader::new(),
            bytes: vec![0; 1 << 12],
            ends: vec![0; 1 << 6],
            nout: 0,
            nend: 0,
            kept: None,
        }
    }

    /// Parses `input`, the next bytes of a frame, handing each whole row to `row`.
    fn feed(&mut self, mut input: &[u8], row: &mut dyn FnMut(Parsed)) {
        while !input.is_empty() {
            let (read, _) = self.step(input, row);
            input = &input[read..];
        }
    }

    /// Ends the frame: a last row without its line's end is a row too. The next frame is
    /// parsed afresh, so that a frame cut short leaves no part row to the next.
    fn finish(&mut self, row: &mut dyn FnMut(Parsed)) {
        while let (_, csv_core::ReadRecordResult::Record) = self.step(&[], row) {}
        self.core.reset();
        (self.nout, self.nend, self.kept) = (0, 0, None);
    }

    /// One step of the parser over `input` (empty: the frame's end): the bytes it read.
    fn step(
        &mut self,
        input: &[u8],
        row: &mut dyn FnMut(Parsed),
    ) -> (usize, csv_core::ReadRecordResult) {
        self.make_room();
        let (result, read, nout, nend) = self.core.read_record(
            input,
            &mut self.bytes[self.nout..],
            &mut self.ends[self.nend..],
        );
        self.nout += nout;
        self.nend += nend;
        if result == csv_core::ReadRecordResult::Record {
            let too_long = self.kept.take().map(|(nout, nend)| {
                (self.nout, self.nend) = (nout, nend);
            });
            row(Parsed {
                bytes: &self.bytes[..self.nout],
                ends: &self.ends[..self.nend],
                too_long: too_long.is_some(),
            });
            (self.nout, self.nend) = (0, 0);
        }
        (read, result)
    }

    /// Room for the parser to write into: the buffers grown up to their caps, and past
    /// them the room after what the row keeps.
    fn make_room(&mut self) {
        if let Some(kept) = self.kept {
            (self.nout, self.nend) = kept;
            return;
        }
        if self.nout == self.bytes.len() && self.bytes.len() < MAX_ROW_BYTES {
            self.bytes.resize(self.bytes.len() * 2, 0);
        }
        if self.nend == self.ends.len() && self.ends.len() < MAX_ROW_FIELDS {
            self.ends.resize(self.ends.len() * 2, 0);
        }
        if self.nout == self.bytes.len() || self.nend == self.ends.len() {
            let first = self.nend > 0 && self.ends[0] <= self.bytes.len() / 2;
            let kept = if first { (self.ends[0], 1) } else { (0, 0) };
            (self.nout, self.nend) = kept;
            self.kept = Some(kept);
        }
    }
}

/// A frame's rows of a run that an earlier frame holds: skipped, as a frame stored twice.
pub(super) struct Repeat {
    pub frame: u64,
    pub earlier: u64,
    pub cell: String,
    pub process: String,
}

/// A run as a row names it: its cell's and its process's bytes.
type RunKey = (Vec<u8>, Vec<u8>);

/// The runs (a row's first two columns asked for: its cell and process) each frame
/// holds, to tell a frame stored twice.
#[derive(Default)]
struct Runs {
    /// Each run with the frame that held it first.
    first_in: HashMap<RunKey, u64>,
    /// The last row's run, and whether an earlier frame held it: a run's rows come together.
    last: Option<(RunKey, bool)>,
}

impl Runs {
    /// Whether a frame before `frame` held the run of `cell` and `process`; where one did,
    /// it is noted in `repeats`.
    fn repeated(&mut self, frame: u64, run: (&[u8], &[u8]), repeats: &mut Vec<Repeat>) -> bool {
        if let Some(((cell, process), repeated)) = &self.last {
            if (cell.as_slice(), process.as_slice()) == run {
                return *repeated;
            }
        }
        let key = (run.0.to_vec(), run.1.to_vec());
        let repeated = match self.first_in.get(&key) {
            Some(&earlier) if earlier != frame => {
                repeats.push(Repeat {
                    frame,
                    earlier,
                    cell: lossy(run.0),
                    process: lossy(run.1),
                });
                true
            }
            Some(_) => false,
            None => {
                self.first_in.insert(key.clone(), frame);
                false
            }
        };
        self.last = Some((key, repeated));
        repeated
    }
}

/// The malformed rows a file's reading lists, each with its cell: a file with more is
/// damaged past telling which cells it cost (a crash tears one row).
pub(super) const MAX_DAMAGED: usize = 100_000;

/// The warnings of one kind a reading says one by one; the rest are counted in one line, so
/// ten million dropped rows cost a few lines of the report and no memory per row.
pub(super) const MAX_SAID: usize = 20;

/// Warnings of one kind: the first [`MAX_SAID`] said, the rest counted.
#[derive(Default)]
pub(super) struct Said {
    lines: Vec<String>,
    more: u64,
}

impl Said {
    /// Adds the warning `line` makes, made only where it is said.
    pub fn add(&mut self, line: impl FnOnce() -> String) {
        match self.lines.len() < MAX_SAID {
            true => self.lines.push(line()),
            false => self.more += 1,
        }
    }

    /// How many were added.
    pub fn count(&self) -> u64 {
        self.lines.len() as u64 + self.more
    }

    /// The warnings, the count of the rest (`what` they were) last.
    pub fn told(self, what: &str) -> Vec<String> {
        let more = (self.more > 0).then(|| format!("... and {} more {what}", self.more));
        self.lines.into_iter().chain(more).collect()
    }
}

/// What reading a stored CSV found besides its rows.
pub(super) struct CsvRead {
    pub path: PathBuf,
    /// The lines of rows that are not readable, with the first field of each where it can
    /// be read.
    pub damaged: Vec<(u64, Option<String>)>,
    /// Malformed rows beyond the [`MAX_DAMAGED`] listed: too many to tell cell by cell.
    pub damaged_more: u64,
    /// The line of a torn last row, dropped.
    pub torn: Option<u64>,
    /// Whether the file ends in a frame that a crash cut short (what it gave stands).
    pub torn_frame: bool,
    /// The run (cell, process) whose rows that frame was giving when it was cut: they
    /// stand only where the run is not recorded as finished.
    pub torn_run: Option<(String, String)>,
    /// The lost frame that held the header, where the header the runner writes was read
    /// in its place.
    pub header_assumed: Option<String>,
    /// What the file's frames are called: `frame`, or a gzip file's `member`.
    pub unit: &'static str,
    /// Frames that do not decode, each with the run (cell, process) of the last row it gave,
    /// which the damage may have reached. A frame written now holds one run; an older
    /// run's member may hold many, and those it gave before that one stand.
    pub lost: Vec<(Lost, Option<(String, String)>)>,
    pub repeats: Vec<Repeat>,
}

impl CsvRead {
    /// What every reader of the file is told: a torn last row or frame, dropped, and
    /// frames that repeat a run, kept once.
    pub fn warnings(&self) -> Vec<String> {
        let file = file_name(&self.path);
        let torn = match (self.torn, self.torn_frame) {
            (Some(line), _) => Some(format!(
                "{file}:{line}: dropped a torn last row (the run stopped while writing it)"
            )),
            (None, true) => Some(format!(
                "{file}: dropped a torn last {} (the run stopped while writing it)",
                self.unit
            )),
            (None, false) => None,
        };
        let repeats = self.repeats.iter().map(|r| {
            format!(
                "{file}: {unit} {} repeats the rows of cell {} (process {}) that {unit} {} holds: they are kept once",
                r.frame, r.cell, r.process, r.earlier, unit = self.unit
            )
        });
        let header = (self.header_assumed.as_ref()).map(|frame| {
            format!("{file}: {frame}, and it held the file's header: read on with the header the runner writes")
        });
        header.into_iter().chain(torn).chain(repeats).collect()
    }
}

/// The header: each column's name, and where the columns asked for are (or which is not).
struct Header {
    names: Vec<String>,
    cols: Result<Vec<usize>, NoColumn>,
}

/// A column asked for, and the header that lacks it.
#[derive(Debug, thiserror::Error)]
#[error("no `{0}` column (its header is `{1}`)")]
struct NoColumn(String, String);

impl Header {
    fn of(names: Vec<String>, want: &[&str]) -> Header {
        let cols = (want.iter())
            .map(|w| {
                let at = names.iter().position(|c| c == w);
                at.ok_or_else(|| NoColumn(w.to_string(), names.join(",")))
            })
            .collect();
        Header { names, cols }
    }
}

/// A stored CSV being read: its header, the line and frame reached, and what it found.
struct Reading<'a> {
    file: String,
    want: &'a [&'a str],
    /// The header the runner writes, assumed where the file's own is lost (empty: none).
    expected: &'a [String],
    header: Option<Header>,
    line: u64,
    /// Frames read to their end.
    frames: u64,
    /// The last row, where it is malformed: damage, unless it is the file's last (torn).
    malformed: Option<(u64, Option<String>)>,
    /// The run (cell, process) of the last frame's last row.
    last_run: Option<(String, String)>,
    runs: Runs,
    read: CsvRead,
}

impl Reading<'_> {
    fn take(&mut self, parsed: Parsed, row: &mut impl FnMut(&str, u64, Row)) {
        let Some(header) = &self.header else {
            let names = (0..parsed.ends.len())
                .map(|j| lossy(field(parsed.bytes, parsed.ends, j)))
                .collect();
            self.header = Some(Header::of(names, self.want));
            return;
        };
        let Ok(cols) = &header.cols else {
            return;
        };
        self.line += 1;
        if let Some(damaged) = self.malformed.take() {
            match self.read.damaged.len() < MAX_DAMAGED {
                true => self.read.damaged.push(damaged),
                false => self.read.damaged_more += 1,
            }
        }
        if parsed.too_long || parsed.ends.len() != header.names.len() {
            let first = (parsed.ends.first()).map(|_| lossy(field(parsed.bytes, parsed.ends, 0)));
            self.malformed = Some((self.line, first));
            return;
        }
        let r = Row {
            bytes: parsed.bytes,
            ends: parsed.ends,
            cols,
        };
        let run = (r.field(0), cols.get(1).map_or(&[][..], |_| r.field(1)));
        if !(self.runs).repeated(self.frames + 1, run, &mut self.read.repeats) {
            row(&self.file, self.line, r);
        }
    }

    /// After each frame, lost or whole.
    fn frame_ended(&mut self, decoded: Decoded) -> Result<()> {
        self.frames += 1;
        let last = match self.runs.last.take() {
            Some(((cell, process), false)) => Some((lossy(&cell), lossy(&process))),
            _ => None,
        };
        if last.is_some() {
            self.last_run.clone_from(&last);
        }
        let lost = match decoded {
            Decoded::Lost(lost) => Some(lost),
            Decoded::Whole => None,
        };
        // The header lost with its frame: the one the runner writes, where the reader knows it.
        if let (None, Some(lost), false) = (&self.header, &lost, self.expected.is_empty()) {
            self.header = Some(Header::of(self.expected.to_vec(), self.want));
            self.read.header_assumed = Some(lost.describe());
        }
        self.check_header(lost.as_ref())?;
        self.read.lost.extend(lost.map(|lost| (lost, last)));
        Ok(())
    }

    /// Refuses the file where its header lacks a column asked for, or where `lost`, a frame
    /// that did not decode, gave no header.
    fn check_header(&self, lost: Option<&Lost>) -> Result<()> {
        let path = self.read.path.display();
        let why = lost.map_or(String::new(), |l| format!("; {}", l.describe()));
        match (&self.header, lost) {
            (None, Some(lost)) => bail!(
                "{path}: {}, and it holds the file's header: the run folder is damaged there",
                lost.describe()
            ),
            (Some(Header { cols: Err(no), .. }), _) => {
                bail!("{path}: {no}{why}: the run folder is damaged")
            }
            _ => Ok(()),
        }
    }

    fn finish(mut self, frames: &Frames) -> Result<CsvRead> {
        if self.header.is_none() {
            self.header = Some(Header::of(Vec::new(), self.want));
            self.check_header(None)?;
        }
        self.read.torn = self.malformed.take().map(|(line, _)| line);
        if let Some(torn) = frames.torn() {
            let (cut, lost) = (self.read.lost.drain(..)).partition(|(l, _)| l.frame == torn);
            self.read.lost = lost;
            self.read.torn_run = cut.into_iter().find_map(|(_, run)| run);
            self.read.torn_frame = true;
        }
        // A torn last row was the last run's.
        if self.read.torn.is_some() && self.read.torn_run.is_none() {
            self.read.torn_run = self.last_run.take();
        }
        Ok(self.read)
    }
}

/// Streams each readable row of the stored CSV `name` in `dir` to `row`, with the file's
/// name (`samples.csv` in an older run) and its line number, without holding the file; the
/// columns `want` asks for open with a row's cell and process, which name its run;
/// `expected`: the header the runner writes, read in place of one a lost frame held (empty:
/// such a loss refuses the file). None where the run has no such file.
pub(super) fn each_csv_row(
    dir: &Path,
    (name, expected): (&str, &[String]),
    want: &[&str],
    mut row: impl FnMut(&str, u64, Row),
) -> Result<Option<CsvRead>> {
    let Some(mut frames) = open_csv(dir, name)? else {
        return Ok(None);
    };
    let mut reading = Reading {
        file: file_name(&frames.path),
        want,
        expected,
        header: None,
        line: 1,
        frames: 0,
        malformed: None,
        last_run: None,
        runs: Runs::default(),
        read: CsvRead {
            path: frames.path.clone(),
            damaged: Vec::new(),
            damaged_more: 0,
            torn: None,
            torn_frame: false,
            torn_run: None,
            header_assumed: None,
            unit: frames.unit(),
            lost: Vec::new(),
            repeats: Vec::new(),
        },
    };
    let mut parser = Parser::new();
    while let Some(decoded) =
        frames.next(&mut |bytes| parser.feed(bytes, &mut |p| reading.take(p, &mut row)))?
    {
        parser.finish(&mut |p| reading.take(p, &mut row));
        reading.frame_ended(decoded)?;
    }
    reading.finish(&frames).map(Some)
}

/// Cells whose stored data cannot be trusted, each with why: left out of the run read
/// back, and named in its warnings, so that damage loses only what it damaged.
#[derive(Default)]
pub(super) struct Unreadable(pub BTreeMap<String, String>);

impl Unreadable {
    pub fn add(&mut self, id: &str, why: String) {
        self.0.entry(id.to_string()).or_insert(why);
    }
}

/// A file's name alone: warnings end up in the report, which must not depend on where the
/// run folder lies.
pub(super) fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned())
}
