//! Reading a run folder back: only what the run stored (no kernel source, no template from
//! elsewhere), so it renders the same from any directory. A torn last line (a crash
//! mid-write) is dropped with a warning; a cell whose stored data is damaged (a malformed
//! or repeated record, a malformed sample, a time that is not one) is left out and named,
//! so damage loses only what it damaged; an experiment file changed since the run, or a
//! file that is not the run's own (a link), refuses the whole.

use super::format::Format;
use super::names::{samples_header, TELEMETRY_HEADER};
use super::names::{
    EXPERIMENT_FILE, FINDINGS_FILE, NOTES_FILE, PEERS_FILE, RUN_FILE, TELEMETRY_FILE,
};
use super::records::read_records;
use super::rows::{each_csv_row, file_name, Unreadable};
use super::samples::{self, SampleSink, Samples, TelemetryRow};
use super::{PeerRow, RunMeta};
use crate::experiment::{DeviceFacts, Experiment, Sources};
use crate::files;
use crate::plan::Plan;
use crate::protocol::DeviceInfo;
use crate::protocol::{CellRecord, Telemetry, TelemetryPoint};
use anyhow::{bail, Context, Result};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// A run read back from disk.
pub struct Stored {
    pub dir: PathBuf,
    pub meta: RunMeta,
    pub experiment: Experiment,
    pub plan: Plan,
    pub records: Vec<CellRecord>,
    pub telemetry: Vec<TelemetryRow>,
    pub notes: Option<String>,
    pub findings: Option<String>,
    /// The peers' readings, where the run has them.
    pub peers: Vec<PeerRow>,
    /// What was dropped as torn, unfinished or damaged, to tell the user.
    pub warnings: Vec<String>,
    /// What damage cost the run, each in a few words: a cell left out (`cell ID`), or a
    /// record lost with no cell to name (a merge that loses them fails).
    pub lost: Vec<String>,
    /// How the folder's files are stored (runs before zstd keep gzip).
    format: Format,
}

/// A run file's text, refused where it is a link, not a regular file, or larger than `cap`.
pub(super) fn read_text(dir: &Path, name: &str, cap: u64) -> Result<String> {
    let path = dir.join(name);
    files::read_text(&path, cap).with_context(|| {
        format!(
            "cannot read {} (is {} a run's folder?)",
            path.display(),
            dir.display()
        )
    })
}

/// An optional file a person wrote (findings, notes): None where there is none.
fn read_optional(dir: &Path, name: &str) -> Result<Option<String>> {
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    files::read_text(&path, files::MAX_TEXT_BYTES)
        .map(Some)
        .with_context(|| format!("cannot read {}", path.display()))
}

/// How `lost` names a cell that damage left out.
const LEFT_OUT: &str = "cell ";

impl Stored {
    /// The experiment file a stored run was made from, as its `run.json` names it.
    pub fn experiment_path(dir: &Path) -> Result<PathBuf> {
        Ok(read_meta(dir)?.experiment_path)
    }

    /// Reads the run in `dir`, streaming its samples to `sink` (see [`SampleSink`]).
    pub fn load(dir: &Path, sink: &mut dyn SampleSink) -> Result<Stored> {
        let meta = read_meta(dir)?;
        let text = read_text(dir, EXPERIMENT_FILE, files::MAX_TEXT_BYTES)?;
        let stored_path = dir.join(EXPERIMENT_FILE);
        // The run's own record of what it ran: a changed file would put another
        // experiment's words on these samples.
        let sha = crate::system::sha256_hex(text.as_bytes());
        if sha != meta.experiment_sha256 {
            bail!(
                "{} is not the experiment this run was made with (its sha256 is {sha}, {RUN_FILE} records {}): a stored run is rendered only as it ran\n  hint: restore the file (e.g. `git checkout -- {}`), or run the changed experiment anew",
                stored_path.display(),
                meta.experiment_sha256,
                stored_path.display()
            );
        }
        // Checked against the device it ran on; the kernel sources are not needed. Errors
        // name the stored file, the path it ran from names the run.
        let facts = meta
            .device
            .as_ref()
            .map_or_else(DeviceFacts::nominal, DeviceInfo::facts);
        let mut experiment =
            Experiment::parse_set(&stored_path, &text, &facts, Sources::Skip, &meta.set)
                .map_err(|e| anyhow::anyhow!("the stored experiment does not validate: {e}"))?;
        experiment.name = crate::experiment::name_of(&meta.experiment_path)
            .map_err(|e| anyhow::anyhow!("{RUN_FILE}: {e}"))?;
        experiment.path = meta.experiment_path.clone();
        let mut plan = Plan::new(&experiment)?.select(&meta.only)?;
        if let Some(part) = meta.shard.as_ref().filter(|p| p.claims.is_none()) {
            plan = plan.keep(&part.cells)?;
        }
        let mut warnings = Vec::new();
        let mut unreadable = Unreadable::default();
        let (records, lost) = read_records(dir, &plan, &mut unreadable, &mut warnings)?;
        let (peers, peer_warnings) = read_peers(dir)?;
        let mut stored = Stored {
            dir: dir.to_path_buf(),
            meta,
            experiment,
            plan,
            records,
            telemetry: vec![],
            peers,
            notes: read_optional(dir, NOTES_FILE)?.map(|n| n.trim().to_string()),
            findings: read_optional(dir, FINDINGS_FILE)?.map(|n| n.trim().to_string()),
            warnings,
            lost,
            format: Format::of(dir)?.unwrap_or(Format::Zstd),
        };
        // Telemetry first, for the sink; its warnings after the samples'.
        let before = stored.warnings.len();
        stored.read_telemetry()?;
        let telemetry_warnings = stored.warnings.split_off(before);
        let params: Vec<String> = (stored.experiment.params.iter())
            .map(|(n, _)| n.clone())
            .collect();
        let header = samples_header(&params);
        let scan = samples::stream(
            dir,
            (&stored.plan, &header),
            &stored.records,
            &stored.telemetry,
            sink,
        )?;
        stored.warnings.extend(scan.warnings);
        stored.warnings.extend(telemetry_warnings);
        for (id, why) in scan.unreadable.0 {
            unreadable.add(&id, why);
        }
        stored.leave_out(unreadable, sink);
        stored.warnings.extend(peer_warnings);
        Ok(stored)
    }

    /// The name the run file `name` (`SAMPLES_FILE`, `CELLS_FILE`, ...) has in this folder.
    pub fn stored_name(&self, name: &str) -> String {
        self.format.file(name)
    }

    /// The runs the records hold, as (cell index, process).
    fn recorded(&self) -> HashSet<(u32, u32)> {
        self.records
            .iter()
            .map(|r| (r.cell as u32, r.process))
            .collect()
    }

    fn read_telemetry(&mut self) -> Result<()> {
        let index = self.plan.index_by_id();
        let recorded = self.recorded();
        let telemetry = &mut self.telemetry;
        // Malformed rows: how many, and the first's line.
        let mut dropped: (u64, Option<u64>) = (0, None);
        // Every column the runner writes is read.
        let header = TELEMETRY_HEADER.map(String::from);
        let read = each_csv_row(
            &self.dir,
            (TELEMETRY_FILE, &header),
            &TELEMETRY_HEADER,
            |_, line, r| {
                let f = |i: usize| &r[i];
                let (Some(&cell), Ok(process), Ok(t_us)) =
                    (index.get(f(0)), f(1).parse::<u32>(), f(2).parse::<f64>())
                else {
                    dropped = (dropped.0 + 1, dropped.1.or(Some(line)));
                    return;
                };
                if !recorded.contains(&(cell as u32, process)) {
                    return;
                }
                telemetry.push(TelemetryRow {
                    cell: cell as u32,
                    process,
                    point: TelemetryPoint {
                        t_us,
                        reading: Telemetry {
                            sm_mhz: f(3).parse().ok(),
                            mem_mhz: f(4).parse().ok(),
                            power_w: f(5).parse().ok(),
                            temp_c: f(6).parse().ok(),
                            pstate: (!f(7).is_empty()).then(|| f(7).to_string()),
                            throttle: f(8)
                                .split(';')
                                .filter(|t| !t.is_empty())
                                .map(String::from)
                                .collect(),
                        },
                    },
                });
            },
        );
        // Telemetry costs the cells nothing: a file that cannot be read is left out whole.
        // A file that is not a regular one (a link, a FIFO) refuses the run, as anywhere in
        // the folder; only a file the runner cannot read as telemetry is left out.
        let refused = |e: &anyhow::Error| {
            (e.chain()).any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidInput)
            })
        };
        let read = match read {
            Ok(read) => read,
            Err(e) if refused(&e) => return Err(e),
            Err(e) => {
                telemetry.clear();
                self.warnings.push(format!(
                    "{e:#}: the run's clocks, power and flags are left out; its cells stand"
                ));
                return Ok(());
            }
        };
        // Runs before telemetry sampling have none.
        let Some(read) = read else {
            return Ok(());
        };
        let name = file_name(&read.path);
        self.warnings.extend(read.warnings());
        // A reading lost costs a cell nothing but that reading; those of the run a frame
        // was giving when it failed to decode cannot be trusted.
        for (frame, last) in &read.lost {
            let run = last.as_ref().and_then(|(cell, process)| {
                Some((
                    *index.get(cell.as_str())? as u32,
                    process.parse::<u32>().ok()?,
                ))
            });
            self.telemetry.retain(|t| Some((t.cell, t.process)) != run);
            let of = last.as_ref().map_or(String::new(), |(cell, process)| {
                format!(", and so is every reading of cell {cell} (process {process}), which it was giving when it failed")
            });
            self.warnings.push(format!(
                "{name}: {}: its readings are missing from the clocks and flags{of}",
                frame.describe()
            ));
        }
        let damaged = read.damaged.iter().map(|(line, _)| *line);
        let first = damaged.chain(dropped.1).min();
        let count = dropped.0 + read.damaged.len() as u64 + read.damaged_more;
        if let Some(first) = first {
            self.warnings.push(format!(
                "{name}: dropped {count} malformed row(s), the first at line {first}: those readings are missing from the clocks and flags"
            ));
        }
        Ok(())
    }

    /// The cells damage left out of the run (as [`Stored::leave_out`] names them in `lost`).
    pub fn left_out(&self) -> impl Iterator<Item = &str> {
        self.lost.iter().filter_map(|l| l.strip_prefix(LEFT_OUT))
    }

    /// Leaves the unreadable cells out: their records, samples and telemetry, each named in
    /// a warning (they count as not run, and a resume runs them again).
    fn leave_out(&mut self, unreadable: Unreadable, sink: &mut dyn SampleSink) {
        if unreadable.0.is_empty() {
            return;
        }
        let index = self.plan.index_by_id();
        let gone: HashSet<u32> = (unreadable.0.keys())
            .filter_map(|id| index.get(id.as_str()).map(|&i| i as u32))
            .collect();
        self.records.retain(|r| !unreadable.0.contains_key(&r.id));
        sink.leave_out(&gone);
        self.telemetry.retain(|t| !gone.contains(&t.cell));
        for (id, why) in unreadable.0 {
            self.lost.push(format!("{LEFT_OUT}{id}"));
            self.warnings.push(format!(
                "cell {id} is unreadable ({why}): the run folder is damaged there, and the cell is left out"
            ));
        }
    }

    /// A record with its samples and telemetry put back, as the worker reported it.
    pub fn with_samples(&self, rec: &CellRecord, s: &Samples) -> CellRecord {
        let mut out = rec.clone();
        let key = (rec.cell as u32, rec.process);
        for i in (0..s.cell.len()).filter(|&i| (s.cell[i], s.process[i]) == key) {
            if s.first[i] {
                out.first_ns = Some(s.time_ns[i]);
                out.starts_us.insert(0, s.start_us[i]);
            } else {
                out.samples_ns.push(s.time_ns[i]);
                out.starts_us.push(s.start_us[i]);
            }
        }
        out.telemetry = self
            .telemetry
            .iter()
            .filter(|t| (t.cell, t.process) == key)
            .map(|t| t.point.clone())
            .collect();
        out
    }
}

/// `run.json`.
fn read_meta(dir: &Path) -> Result<RunMeta> {
    serde_json::from_str(&read_text(dir, RUN_FILE, files::MAX_TEXT_BYTES)?)
        .with_context(|| format!("malformed {}", dir.join(RUN_FILE).display()))
}

/// The longest row of `peers.csv` read: a reading and its note are a few hundred bytes.
const MAX_PEER_ROW_BYTES: usize = 1 << 20;

/// `peers.csv`, if the run has one, with a warning where rows cannot be read: those
/// readings alone are lost. A row repeated is kept once; a reading given twice, differently,
/// is dropped both times.
fn read_peers(dir: &Path) -> Result<(Vec<PeerRow>, Vec<String>)> {
    let path = dir.join(PEERS_FILE);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(Default::default());
    }
    let bytes = files::read(&path, files::MAX_TEXT_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(&bytes[..]);
    let (mut rows, mut dropped, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
    // Each reading's (peer, point, process), with its row's place and line.
    let mut seen: HashMap<(String, String, u32), (usize, u64)> = HashMap::new();
    let mut conflicting = HashSet::new();
    let mut record = csv::ByteRecord::new();
    loop {
        let line = |r: &csv::ByteRecord| r.position().map_or(0, |p| p.line());
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {
                match peer_row(&record).filter(|_| record.as_slice().len() <= MAX_PEER_ROW_BYTES) {
                    Some(row) => {
                        let key = (row.peer.clone(), row.point.clone(), row.process);
                        match seen.get(&key) {
                            None => {
                                seen.insert(key, (rows.len(), line(&record)));
                                rows.push(row);
                            }
                            Some(&(i, earlier)) if rows[i] == row => warnings.push(format!(
                                "{PEERS_FILE}:{}: repeats line {earlier}: the reading is kept once",
                                line(&record)
                            )),
                            Some(&(i, earlier)) => {
                                warnings.push(format!(
                                "{PEERS_FILE}:{}: peer {} at {} (process {}) read again, differently from line {earlier}: both readings are dropped",
                                line(&record), row.peer, row.point, row.process
                            ));
                                conflicting.insert(i);
                            }
                        }
                    }
                    None => dropped.push(line(&record)),
                }
            }
            Err(e) => {
                warnings.push(format!(
                    "{PEERS_FILE}: cannot be read on from line {} ({e}): the readings of peers after it are missing",
                    line(&record)
                ));
                break;
            }
        }
    }
    if let Some(first) = dropped.first() {
        warnings.insert(0, format!(
            "{PEERS_FILE}: dropped {} malformed row(s) (or longer than {}), the first at line {first}: those readings of peers are missing",
            dropped.len(),
            files::size_text(MAX_PEER_ROW_BYTES as u64)
        ));
    }
    let rows = (rows.into_iter().enumerate())
        .filter(|(i, _)| !conflicting.contains(i))
        .map(|(_, row)| row)
        .collect();
    Ok((rows, warnings))
}

/// A row of `peers.csv`: peer, point, process, time (empty where there is none) and note.
fn peer_row(r: &csv::ByteRecord) -> Option<PeerRow> {
    let text = |i: usize| std::str::from_utf8(r.get(i)?).ok();
    if r.len() != 5 {
        return None;
    }
    Some(PeerRow {
        peer: text(0)?.to_string(),
        point: text(1)?.to_string(),
        process: text(2)?.parse().ok()?,
        time_ns: text(3)?.parse().ok(),
        note: text(4)?.to_string(),
    })
}

/// Seconds per run of each cell of an earlier run in `dir`, for estimates; empty if none.
pub fn previous_wall_times(dir: &Path) -> HashMap<String, f64> {
    let mut sums: HashMap<String, (f64, f64)> = HashMap::new();
    let stored = super::records::read_cells(dir).ok().flatten();
    let lines = stored.map_or(Vec::new(), |s| s.lines);
    for line in lines.iter().filter(|l| l.lost.is_none()) {
        if let Ok(r) = serde_json::from_slice::<CellRecord>(&line.bytes) {
            let e = sums.entry(r.id).or_default();
            e.0 += r.wall_s;
            e.1 += 1.0;
        }
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}
