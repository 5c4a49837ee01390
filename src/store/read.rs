//! Reading a run folder back: only what the run stored (no kernel source, no template from
//! elsewhere), so it renders the same from any directory. A torn last line (a crash
//! mid-write) is dropped with a warning; a cell whose stored data is damaged (a malformed
//! or repeated record, a malformed sample, a time that is not one) is left out and named,
//! so damage loses only what it damaged; an experiment file changed since the run, or a
//! file that is not the run's own (a link), refuses the whole.

use super::rows::{each_csv_row, file_name, read_records, Unreadable};
use super::{
    PeerRow, RunMeta, CELLS_FILE, EXPERIMENT_FILE, FINDINGS_FILE, NOTES_FILE, PEERS_FILE, RUN_FILE,
    SAMPLES_FILE, TELEMETRY_FILE,
};
use crate::experiment::{DeviceFacts, Experiment, Sources};
use crate::files;
use crate::plan::Plan;
use crate::protocol::{capability, DeviceInfo};
use crate::protocol::{CellRecord, Status, Telemetry, TelemetryPoint};
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
    pub samples: Samples,
    pub telemetry: Vec<TelemetryRow>,
    pub notes: Option<String>,
    pub findings: Option<String>,
    /// The peers' readings, where the run has them.
    pub peers: Vec<PeerRow>,
    /// What was dropped as torn or unfinished, to tell the user.
    pub warnings: Vec<String>,
}

/// The timing columns of the samples: for each sample its cell index, phase and time.
#[derive(Default)]
pub struct Samples {
    pub cell: Vec<u32>,
    pub process: Vec<u32>,
    pub first: Vec<bool>,
    pub time_ns: Vec<f64>,
    /// Host start of each launch, µs from its cell's start (NaN where not recorded).
    pub start_us: Vec<f64>,
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

/// A stretch of consecutive samples of one run of a cell in one phase: its cell, process,
/// whether its samples are first launches, and where they lie.
#[derive(Debug, Clone, PartialEq)]
pub struct Stretch {
    pub cell: u32,
    pub process: u32,
    pub first: bool,
    pub at: std::ops::Range<usize>,
}

impl Samples {
    /// The samples as stretches of one run and phase, in stored order: a run's samples are
    /// written together, so that a consumer groups them a stretch at a time rather than a
    /// sample at a time.
    pub fn stretches(&self) -> impl Iterator<Item = Stretch> + '_ {
        let n = self.cell.len();
        let key = move |i: usize| (self.cell[i], self.process[i], self.first[i]);
        let mut start = 0;
        std::iter::from_fn(move || {
            if start >= n {
                return None;
            }
            let k = key(start);
            let end = (start + 1..n).find(|&i| key(i) != k).unwrap_or(n);
            let at = start..end;
            start = end;
            Some(Stretch {
                cell: k.0,
                process: k.1,
                first: k.2,
                at,
            })
        })
    }
}

/// A telemetry reading of one cell's run.
pub struct TelemetryRow {
    pub cell: u32,
    pub process: u32,
    pub point: TelemetryPoint,
}

/// The facts an experiment is checked against for a device the driver described.
pub fn device_facts(info: &DeviceInfo) -> DeviceFacts {
    let (cc_major, cc_minor) = capability(info);
    let nominal = DeviceFacts::nominal();
    let limits = info.limits;
    DeviceFacts {
        l2_bytes: info.l2_bytes,
        sm_count: info.sm_count,
        cc_major,
        cc_minor,
        mem_bytes: info.mem_bytes,
        max_threads_per_block: limits
            .map_or(nominal.max_threads_per_block, |l| l.max_threads_per_block),
        max_block: limits.map_or(nominal.max_block, |l| l.max_block),
        max_grid: limits.map_or(nominal.max_grid, |l| l.max_grid),
        max_shared_bytes: limits.map_or(nominal.max_shared_bytes, |l| l.max_shared_bytes),
        sm_clock_max_mhz: info.sm_clock_max_mhz,
        mem_clock_max_mhz: info.mem_clock_max_mhz,
        mem_bus_width_bits: info.mem_bus_width_bits,
        assumed: false,
    }
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

impl Stored {
    /// The experiment file a stored run was made from, as its `run.json` names it.
    pub fn experiment_path(dir: &Path) -> Result<PathBuf> {
        Ok(read_meta(dir)?.experiment_path)
    }

    pub fn load(dir: &Path) -> Result<Stored> {
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
            .map_or_else(DeviceFacts::nominal, device_facts);
        let mut experiment =
            Experiment::parse_set(&stored_path, &text, &facts, Sources::Skip, &meta.set)
                .map_err(|e| anyhow::anyhow!("the stored experiment does not validate: {e}"))?;
        experiment.name = crate::experiment::name_of(&meta.experiment_path)
            .map_err(|e| anyhow::anyhow!("{RUN_FILE}: {e}"))?;
        experiment.path = meta.experiment_path.clone();
        let mut plan = Plan::new(&experiment)?.select(&meta.only)?;
        if let Some(part) = &meta.shard {
            plan = plan.keep(&part.cells)?;
        }
        let mut warnings = Vec::new();
        let mut unreadable = Unreadable::default();
        let records = read_records(dir, &plan, &mut unreadable, &mut warnings)?;
        let mut stored = Stored {
            dir: dir.to_path_buf(),
            meta,
            experiment,
            plan,
            records,
            samples: Samples::default(),
            telemetry: vec![],
            peers: read_peers(dir)?,
            notes: read_optional(dir, NOTES_FILE)?.map(|n| n.trim().to_string()),
            findings: read_optional(dir, FINDINGS_FILE)?.map(|n| n.trim().to_string()),
            warnings,
        };
        stored.read_samples(&mut unreadable)?;
        stored.read_telemetry()?;
        stored.leave_out(unreadable);
        Ok(stored)
    }

    /// The runs the records hold, as (cell index, process).
    fn recorded(&self) -> HashSet<(u32, u32)> {
        self.records
            .iter()
            .map(|r| (r.cell as u32, r.process))
            .collect()
    }

    fn read_samples(&mut self, unreadable: &mut Unreadable) -> Result<()> {
        let index = self.plan.index_by_id();
        let recorded = self.recorded();
        let plan = &self.plan;
        let s = &mut self.samples;
        // Rows' problems, said after the damaged rows', as when the file was read whole.
        let mut dropped = Vec::new();
        // The first problem of each cell's rows: bounded by the cells, not the rows.
        let mut bad: HashMap<String, String> = HashMap::new();
        let mut unfinished = HashSet::new();
        let want = ["cell", "process", "phase", "time_ns", "t_us"];
        // A run's rows come together: the last row's cell and run spare a lookup a row.
        let mut last_cell: Option<(String, usize)> = None;
        let mut last_run: Option<((u32, u32), bool)> = None;
        let read = each_csv_row(&self.dir, SAMPLES_FILE, &want, |name, line, r| {
            let id = &r[0];
            let Some(cell) = remembered(&mut last_cell, id, || index.get(id).copied()) else {
                dropped.push(format!(
                    "{name}:{line}: dropped a row of cell `{id}`, which is not in the experiment's plan"
                ));
                return;
            };
            let Ok(process) = r[1].parse::<u32>() else {
                let why = format!("{name}:{line}: a process of `{}`", &r[1]);
                bad.entry(id.to_string()).or_insert(why);
                return;
            };
            let run = (cell as u32, process);
            if !remembered(&mut last_run, &run, || Some(recorded.contains(&run))).unwrap_or(false) {
                unfinished.insert(id.to_string());
                return;
            }
            // A reading is a positive time, but where the method subtracts two timings.
            let may_be_negative = plan.cells[cell].knobs.flushed_graph.reads_a_difference();
            match r[3].parse::<f64>() {
                Ok(t) if t.is_finite() && (t > 0.0 || may_be_negative) => s.time_ns.push(t),
                _ => {
                    let why = format!("{name}:{line}: a time of `{}` ns", &r[3]);
                    bad.entry(id.to_string()).or_insert(why);
                    return;
                }
            }
            s.cell.push(cell as u32);
            s.process.push(process);
            s.first.push(&r[2] == "first");
            s.start_us.push(r[4].parse().unwrap_or(f64::NAN));
        })?;
        let Some(read) = read else {
            bail!(
                "cannot read {} (is {} a run's folder?)",
                self.dir.join(SAMPLES_FILE).display(),
                self.dir.display()
            );
        };
        let name = file_name(&read.path);
        self.warnings.extend(read.torn_warning());
        for (line, id) in read.damaged {
            match id.filter(|id| index.contains_key(id.as_str())) {
                Some(id) => unreadable.add(&id, format!("{name}:{line}: a malformed row")),
                None => self
                    .warnings
                    .push(format!("{name}:{line}: dropped a malformed row")),
            }
        }
        self.warnings.extend(dropped);
        for (id, why) in bad {
            unreadable.add(&id, why);
        }
        let s = &self.samples;
        for id in unfinished {
            self.warnings.push(format!(
                "{name}: dropped the samples of cell {id}, which {CELLS_FILE} does not record as finished"
            ));
        }
        // A cell recorded as finished and ok has at least its first launch stored.
        let with_first: HashSet<(u32, u32)> = (0..s.cell.len())
            .filter(|&i| s.first[i])
            .map(|i| (s.cell[i], s.process[i]))
            .collect();
        for r in self
            .records
            .iter()
            .filter(|r| r.status == Status::Ok && !with_first.contains(&(r.cell as u32, r.process)))
        {
            unreadable.add(
                &r.id,
                format!(
                    "{name} lacks its samples (process {}), which {CELLS_FILE} records as ok",
                    r.process
                ),
            );
        }
        Ok(())
    }

    fn read_telemetry(&mut self) -> Result<()> {
        let index = self.plan.index_by_id();
        let recorded = self.recorded();
        let telemetry = &mut self.telemetry;
        let mut dropped: Vec<u64> = Vec::new();
        let want = [
            "cell", "process", "t_us", "sm_mhz", "mem_mhz", "power_w", "temp_c", "pstate",
            "throttle",
        ];
        let read = each_csv_row(&self.dir, TELEMETRY_FILE, &want, |_, line, r| {
            let f = |i: usize| &r[i];
            let (Some(&cell), Ok(process), Ok(t_us)) =
                (index.get(f(0)), f(1).parse::<u32>(), f(2).parse::<f64>())
            else {
                dropped.push(line);
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
        })?;
        // Runs before telemetry sampling have none.
        let Some(read) = read else {
            return Ok(());
        };
        let name = file_name(&read.path);
        self.warnings.extend(read.torn_warning());
        // A reading lost costs a cell nothing but that reading.
        dropped.extend(read.damaged.into_iter().map(|(line, _)| line));
        if let Some(first) = dropped.iter().min() {
            self.warnings.push(format!(
                "{name}: dropped {} malformed row(s), the first at line {first}: those readings are missing from the clocks and flags",
                dropped.len()
            ));
        }
        Ok(())
    }

    /// Leaves the unreadable cells out: their records, samples and telemetry, each named in
    /// a warning (they count as not run, and a resume runs them again).
    fn leave_out(&mut self, unreadable: Unreadable) {
        if unreadable.0.is_empty() {
            return;
        }
        let index = self.plan.index_by_id();
        let gone: HashSet<u32> = (unreadable.0.keys())
            .filter_map(|id| index.get(id.as_str()).map(|&i| i as u32))
            .collect();
        self.records.retain(|r| !unreadable.0.contains_key(&r.id));
        let s = &mut self.samples;
        let keep: Vec<bool> = s.cell.iter().map(|c| !gone.contains(c)).collect();
        for column in [&mut s.time_ns, &mut s.start_us] {
            let mut k = keep.iter();
            column.retain(|_| *k.next().expect("one flag per row"));
        }
        for column in [&mut s.cell, &mut s.process] {
            let mut k = keep.iter();
            column.retain(|_| *k.next().expect("one flag per row"));
        }
        let mut k = keep.iter();
        s.first.retain(|_| *k.next().expect("one flag per row"));
        self.telemetry.retain(|t| !gone.contains(&t.cell));
        for (id, why) in unreadable.0 {
            self.warnings.push(format!(
                "cell {id} is unreadable ({why}): the run folder is damaged there, and the cell is left out"
            ));
        }
    }

    /// A record with its samples and telemetry put back, as the worker reported it.
    pub fn with_samples(&self, rec: &CellRecord) -> CellRecord {
        let mut out = rec.clone();
        let key = (rec.cell as u32, rec.process);
        let s = &self.samples;
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

/// `peers.csv`, if the run has one.
fn read_peers(dir: &Path) -> Result<Vec<PeerRow>> {
    let Some(text) = read_optional(dir, PEERS_FILE)? else {
        return Ok(vec![]);
    };
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    reader
        .records()
        .enumerate()
        .map(|(i, r)| {
            let bad = || anyhow::anyhow!("{PEERS_FILE}:{}: malformed row", i + 2);
            let r = r.map_err(|_| bad())?;
            if r.len() != 5 {
                return Err(bad());
            }
            Ok(PeerRow {
                peer: r[0].to_string(),
                point: r[1].to_string(),
                process: r[2].parse().map_err(|_| bad())?,
                time_ns: r[3].parse().ok(),
                note: r[4].to_string(),
            })
        })
        .collect()
}

/// Seconds per run of each cell of an earlier run in `dir`, for estimates; empty if none.
pub fn previous_wall_times(dir: &Path) -> HashMap<String, f64> {
    let mut sums: HashMap<String, (f64, f64)> = HashMap::new();
    let stored = super::rows::read_cells(dir).ok().flatten();
    let text = stored.map_or(String::new(), |s| {
        String::from_utf8_lossy(&s.bytes).into_owned()
    });
    for line in text.lines() {
        if let Ok(r) = serde_json::from_str::<CellRecord>(line) {
            let e = sums.entry(r.id).or_default();
            e.0 += r.wall_s;
            e.1 += 1.0;
        }
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_come_in_stretches_of_one_run_and_phase_in_stored_order() {
        let s = Samples {
            cell: vec![0, 0, 0, 0, 1, 1, 0],
            process: vec![0, 0, 0, 1, 0, 0, 0],
            first: vec![true, false, false, false, false, false, false],
            time_ns: vec![1.0; 7],
            start_us: vec![0.0; 7],
        };
        let got: Vec<(u32, u32, bool, std::ops::Range<usize>)> = s
            .stretches()
            .map(|r| (r.cell, r.process, r.first, r.at))
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, true, 0..1),
                (0, 0, false, 1..3),
                (0, 1, false, 3..4),
                (1, 0, false, 4..6),
                // A run's samples apart from the rest still make their own stretch.
                (0, 0, false, 6..7),
            ]
        );
        assert_eq!(Samples::default().stretches().count(), 0);
    }
}
