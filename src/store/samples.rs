//! A run's samples, streamed from `samples.csv.zst` (or `.gz`) a stretch at a time (one run of a cell in
//! one phase) to a [`SampleSink`], each cell declared done once the stream has passed its
//! last recorded run: a sink that reduces cells as they end holds the cells still open, not
//! the run. Runs are stored in the order their records are, so a cell ends where its last
//! run's samples do; a folder stored otherwise is streamed again with no cell done early.

use super::names::{CELLS_FILE, SAMPLES_FILE};
use super::rows::{each_csv_row, file_name, CsvRead, Said, Unreadable, MAX_DAMAGED};
use crate::plan::Plan;
use crate::protocol::{CellRecord, Status, TelemetryPoint};
use anyhow::{bail, Result};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A telemetry reading of one cell's run.
pub struct TelemetryRow {
    pub cell: u32,
    pub process: u32,
    pub point: TelemetryPoint,
}

/// Consecutive samples of one run of a cell in one phase: its cell index, process, whether
/// they are first launches, and each sample's time and host start (µs from its cell's
/// start; NaN where not recorded). Handed over, not lent: a sink that keeps it makes no copy.
pub struct RunSamples {
    pub cell: u32,
    pub process: u32,
    pub first: bool,
    pub time_ns: Vec<f64>,
    pub start_us: Vec<f64>,
}

/// What takes a run's samples as they are read.
pub trait SampleSink {
    /// Before the first stretch: the run's plan and telemetry. It comes again, and the sink
    /// forgets what it took, where the samples are streamed a second time.
    fn begin(&mut self, plan: &Plan, telemetry: &[TelemetryRow]);
    /// The next stretch, in stored order.
    fn stretch(&mut self, s: RunSamples);
    /// Cell `cell` has no samples to come.
    fn done(&mut self, cell: u32);
    /// Cells whose stored data is damaged, found once every sample is read: everything of
    /// theirs is left out.
    fn leave_out(&mut self, cells: &HashSet<u32>);
}

/// Every sample of a run, as columns: for rewriting a run folder (a resume, a merge), which
/// copies each record with its samples.
#[derive(Default)]
pub struct Samples {
    pub cell: Vec<u32>,
    pub process: Vec<u32>,
    pub first: Vec<bool>,
    pub time_ns: Vec<f64>,
    pub start_us: Vec<f64>,
}

impl SampleSink for Samples {
    fn begin(&mut self, _: &Plan, _: &[TelemetryRow]) {
        *self = Samples::default();
    }

    fn stretch(&mut self, mut s: RunSamples) {
        let n = s.time_ns.len();
        self.cell.extend(std::iter::repeat_n(s.cell, n));
        self.process.extend(std::iter::repeat_n(s.process, n));
        self.first.extend(std::iter::repeat_n(s.first, n));
        self.time_ns.append(&mut s.time_ns);
        self.start_us.append(&mut s.start_us);
    }

    fn done(&mut self, _: u32) {}

    fn leave_out(&mut self, cells: &HashSet<u32>) {
        let keep: Vec<bool> = self.cell.iter().map(|c| !cells.contains(c)).collect();
        kept(&mut self.time_ns, &keep);
        kept(&mut self.start_us, &keep);
        kept(&mut self.process, &keep);
        kept(&mut self.first, &keep);
        kept(&mut self.cell, &keep);
    }
}

/// Keeps the rows of `column` that `keep` flags.
fn kept<T>(column: &mut Vec<T>, keep: &[bool]) {
    let mut k = keep.iter();
    column.retain(|_| *k.next().expect("one flag per row"));
}

/// `look`'s answer for `key`, or the one `last` holds for it: consecutive rows of a run
/// ask the same question.
fn remembered<K, Q, V>(
    last: &mut Option<(K, V)>,
    key: &Q,
    look: impl FnOnce() -> Option<V>,
) -> Option<V>
where
    K: std::borrow::Borrow<Q>,
    Q: PartialEq + ToOwned<Owned = K> + ?Sized,
    V: Copy,
{
    if let Some((k, v)) = last {
        if k.borrow() == key {
            return Some(*v);
        }
    }
    let v = look()?;
    *last = Some((key.to_owned(), v));
    Some(v)
}

/// Which cells have ended as the stream passes the records' runs in order.
struct Ends {
    /// Each recorded run's place among the records.
    place: HashMap<(u32, u32), usize>,
    /// Each cell with its last run's place, latest last: cells end from the front.
    last: Vec<(usize, u32)>,
    ended: usize,
    done: HashSet<u32>,
}

impl Ends {
    fn of(records: &[CellRecord]) -> Ends {
        let mut place = HashMap::new();
        let mut last: HashMap<u32, usize> = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            place.insert((r.cell as u32, r.process), i);
            last.insert(r.cell as u32, i);
        }
        let mut last: Vec<(usize, u32)> = last.into_iter().map(|(c, i)| (i, c)).collect();
        last.sort_unstable();
        Ends {
            place,
            last,
            ended: 0,
            done: HashSet::new(),
        }
    }

    /// The cells that have ended before run `run` begins, which must not be one of them
    /// (`Err`: the folder is not stored in its records' order).
    fn before(&mut self, run: (u32, u32)) -> Result<Vec<u32>, ()> {
        let at = self.place.get(&run).copied().unwrap_or(usize::MAX);
        let mut out = Vec::new();
        while let Some(&(_, cell)) = self.last.get(self.ended).filter(|(i, _)| *i < at) {
            self.done.insert(cell);
            out.push(cell);
            self.ended += 1;
        }
        if self.done.contains(&run.0) {
            return Err(());
        }
        Ok(out)
    }

    /// The cells left when the stream ends.
    fn rest(&mut self) -> Vec<u32> {
        let rest = self.last[self.ended..].iter().map(|&(_, c)| c).collect();
        self.ended = self.last.len();
        rest
    }
}

/// The stretch being gathered: its key (cell, process, first) and its samples; and, where
/// cells end early, which have.
#[derive(Default)]
struct Gathering {
    key: Option<(u32, u32, bool)>,
    time_ns: Vec<f64>,
    start_us: Vec<f64>,
    ends: Option<Ends>,
}

impl Gathering {
    /// Hands the stretch gathered so far to `sink`, after ending the cells whose runs are
    /// all past it; nothing more once the folder is found out of order.
    fn hand_over(&mut self, scan: &mut Scan, sink: &mut dyn SampleSink) {
        let Some((cell, process, first)) = self.key.take() else {
            return;
        };
        if let Some(ends) = self.ends.as_mut().filter(|_| !scan.out_of_order) {
            match ends.before((cell, process)) {
                Ok(ended) => ended.into_iter().for_each(|c| sink.done(c)),
                Err(()) => scan.out_of_order = true,
            }
        }
        let (time_ns, start_us) = (
            std::mem::take(&mut self.time_ns),
            std::mem::take(&mut self.start_us),
        );
        if !scan.out_of_order {
            sink.stretch(RunSamples {
                cell,
                process,
                first,
                time_ns,
                start_us,
            });
        }
    }
}

/// What one pass over the samples found besides them.
#[derive(Default)]
pub(super) struct Scan {
    pub warnings: Vec<String>,
    pub unreadable: Unreadable,
    /// A run came after a cell it belongs to had ended: the folder is not stored in its
    /// records' order.
    out_of_order: bool,
}

/// Streams the samples in `dir` to `sink` and says what the pass found; where the folder
/// is not stored in its records' order, it streams them again, ending no cell early.
pub(super) fn stream(
    dir: &Path,
    (plan, expected): (&Plan, &[String]),
    records: &[CellRecord],
    telemetry: &[TelemetryRow],
    sink: &mut dyn SampleSink,
) -> Result<Scan> {
    sink.begin(plan, telemetry);
    let scan = pass(dir, (plan, expected), records, sink, true)?;
    if !scan.out_of_order {
        return Ok(scan);
    }
    sink.begin(plan, telemetry);
    pass(dir, (plan, expected), records, sink, false)
}

/// One pass over the samples; `early`: end each cell as soon as the records say it has.
fn pass(
    dir: &Path,
    (plan, expected): (&Plan, &[String]),
    records: &[CellRecord],
    sink: &mut dyn SampleSink,
    early: bool,
) -> Result<Scan> {
    let index = plan.index_by_id();
    let recorded: HashSet<(u32, u32)> = (records.iter())
        .map(|r| (r.cell as u32, r.process))
        .collect();
    let mut scan = Scan::default();
    let mut gathering = Gathering {
        ends: early.then(|| Ends::of(records)),
        ..Gathering::default()
    };
    let mut checks = Checks::default();
    let want = ["cell", "process", "phase", "time_ns", "t_us"];
    // A run's rows come together: the last row's cell and run spare a lookup a row.
    let mut last_cell: Option<(String, usize)> = None;
    let mut last_run: Option<((u32, u32), bool)> = None;
    let read = each_csv_row(dir, (SAMPLES_FILE, expected), &want, |name, line, r| {
        let id = &r[0];
        let Some(cell) = remembered(&mut last_cell, id, || index.get(id).copied()) else {
            checks.dropped.add(|| {
                format!("{name}:{line}: dropped a row of cell `{id}`, which is not in the experiment's plan")
            });
            return;
        };
        let Ok(process) = r[1].parse::<u32>() else {
            let why = format!("{name}:{line}: a process of `{}`", &r[1]);
            checks.bad.entry(id.to_string()).or_insert(why);
            return;
        };
        let run = (cell as u32, process);
        if !remembered(&mut last_run, &run, || Some(recorded.contains(&run))).unwrap_or(false) {
            checks.unfinished.insert(id.to_string());
            return;
        }
        // A reading is a positive time, but where the method subtracts two timings.
        let may_be_negative = plan.cells[cell].reads_a_difference();
        let time = match r[3].parse::<f64>() {
            Ok(t) if t.is_finite() && (t > 0.0 || may_be_negative) => t,
            _ => {
                let why = format!("{name}:{line}: a time of `{}` ns", &r[3]);
                checks.bad.entry(id.to_string()).or_insert(why);
                return;
            }
        };
        let first = match &r[2] {
            "first" => true,
            "steady" => false,
            phase => {
                let why = format!("{name}:{line}: a phase of `{phase}` (first or steady)");
                checks.bad.entry(id.to_string()).or_insert(why);
                return;
            }
        };
        if first {
            checks.with_first.insert(run);
        }
        let key = (cell as u32, process, first);
        if gathering.key != Some(key) {
            gathering.hand_over(&mut scan, sink);
            gathering.key = Some(key);
        }
        gathering.time_ns.push(time);
        gathering.start_us.push(r[4].parse().unwrap_or(f64::NAN));
    })?;
    gathering.hand_over(&mut scan, sink);
    if scan.out_of_order {
        return Ok(scan);
    }
    let mut ends = gathering.ends.unwrap_or_else(|| Ends::of(records));
    for cell in ends.rest() {
        sink.done(cell);
    }
    let Some(read) = read else {
        // The name the run's own format stores its samples under (its records say which).
        let format = super::format::Format::of(dir).ok().flatten();
        let name = format
            .unwrap_or(super::format::Format::Zstd)
            .file(SAMPLES_FILE);
        bail!(
            "cannot read {} (is {} a run's folder?)",
            dir.join(name).display(),
            dir.display()
        );
    };
    checks.account(read, &index, records, &mut scan);
    Ok(scan)
}

/// What the rows' checks found, told once the file is read.
#[derive(Default)]
struct Checks {
    /// Rows of cells not in the plan, said after the damaged rows', as when the file was
    /// read whole.
    dropped: Said,
    /// The first problem of each cell's rows: bounded by the cells, not the rows.
    bad: HashMap<String, String>,
    /// Cells with rows of a run `cells.jsonl` does not record.
    unfinished: HashSet<String>,
    /// The runs whose first launch is stored.
    with_first: HashSet<(u32, u32)>,
}

impl Checks {
    /// Warnings for what was dropped, and the cells the damage makes unreadable.
    fn account(
        self,
        read: CsvRead,
        index: &HashMap<&str, usize>,
        records: &[CellRecord],
        scan: &mut Scan,
    ) {
        let name = file_name(&read.path);
        scan.warnings.extend(read.warnings());
        // The run a frame was giving rows of when it failed to decode cannot be trusted.
        for (frame, last) in &read.lost {
            let frame = frame.describe();
            scan.warnings
                .push(format!("{name}: {frame}: the samples it held are lost"));
            if let Some((id, process)) = last
                .as_ref()
                .filter(|(id, _)| index.contains_key(id.as_str()))
            {
                let why = format!("{name}: {frame} while giving its samples (process {process})");
                scan.unreadable.add(id, why);
            }
        }
        let mut malformed = Said::default();
        // A run cut short while its samples were written, yet recorded as finished: its
        // samples are not all there.
        if let Some((id, process)) = (read.torn_run.as_ref()).filter(|(id, process)| {
            let cell = index.get(id.as_str()).map(|&c| c as u32);
            let process = process.parse::<u32>().ok();
            (records.iter()).any(|r| Some(r.cell as u32) == cell && Some(r.process) == process)
        }) {
            let why = format!(
                "{name}: its samples (process {process}) end where the file's end cut them short"
            );
            scan.unreadable.add(id, why);
        }
        for (line, id) in read.damaged {
            match id.filter(|id| index.contains_key(id.as_str())) {
                Some(id) => (scan.unreadable).add(&id, format!("{name}:{line}: a malformed row")),
                None => malformed.add(|| format!("{name}:{line}: dropped a malformed row")),
            }
        }
        scan.warnings
            .extend(malformed.told("malformed rows dropped"));
        // Past the rows listed, which cells the damage reached is unknown: none is trusted.
        if read.damaged_more > 0 {
            for (id, _) in index.iter() {
                let why = format!("{name}: more than {MAX_DAMAGED} malformed rows, too many to tell the cells they cost");
                scan.unreadable.add(id, why);
            }
        }
        scan.warnings
            .extend(self.dropped.told("rows of cells not in the plan dropped"));
        for (id, why) in self.bad {
            scan.unreadable.add(&id, why);
        }
        for id in self.unfinished {
            scan.warnings.push(format!(
                "{name}: dropped the samples of cell {id}, which {CELLS_FILE} does not record as finished"
            ));
        }
        // A cell recorded as finished and ok has at least its first launch stored.
        for r in (records.iter()).filter(|r| {
            r.status == Status::Ok && !self.with_first.contains(&(r.cell as u32, r.process))
        }) {
            scan.unreadable.add(
                &r.id,
                format!(
                    "{name} lacks its samples (process {}), which {CELLS_FILE} records as ok",
                    r.process
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cell: usize, process: u32) -> CellRecord {
        CellRecord {
            cell,
            process,
            ..CellRecord::default()
        }
    }

    #[test]
    fn a_cell_ends_when_the_stream_passes_its_last_run() {
        // Rounds interleaved: cell 0 and 1 in round 0, then both in round 1, then cell 2.
        let records = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0)].map(|(c, p)| record(c, p));
        let mut ends = Ends::of(&records);
        assert_eq!(ends.before((0, 0)), Ok(vec![]));
        assert_eq!(ends.before((1, 0)), Ok(vec![]));
        assert_eq!(ends.before((0, 1)), Ok(vec![]));
        // Cell 0's last run (place 2) is past once cell 1's round 1 (place 3) begins;
        // cell 1's once cell 2's does.
        assert_eq!(ends.before((1, 1)), Ok(vec![0]));
        assert_eq!(ends.before((2, 0)), Ok(vec![1]));
        assert_eq!(ends.rest(), vec![2]);
    }

    #[test]
    fn a_run_of_a_cell_already_ended_is_out_of_order() {
        let records = [(0, 0), (1, 0)].map(|(c, p)| record(c, p));
        let mut ends = Ends::of(&records);
        assert_eq!(ends.before((1, 0)), Ok(vec![0]));
        assert_eq!(ends.before((0, 0)), Err(()));
    }
}
