//! Reading a run folder back: only what the run stored (no kernel source, no template from
//! elsewhere), so it renders the same from any directory. A torn last line (a crash
//! mid-write) is dropped with a warning; anything else malformed is an error naming the
//! file and line.

use super::{
    PeerRow, RunMeta, CELLS_FILE, EXPERIMENT_FILE, FINDINGS_FILE, NOTES_FILE, PEERS_FILE, RUN_FILE,
    SAMPLES_FILE, TELEMETRY_FILE,
};
use crate::cuda::{self, DeviceInfo};
use crate::experiment::{DeviceFacts, Experiment, Sources};
use crate::plan::Plan;
use crate::protocol::{CellRecord, Status, Telemetry, TelemetryPoint};
use anyhow::{bail, Context, Result};
use flate2::read::MultiGzDecoder;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Read;
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

/// A telemetry reading of one cell's run.
pub struct TelemetryRow {
    pub cell: u32,
    pub process: u32,
    pub point: TelemetryPoint,
}

/// The facts an experiment is checked against for a device the driver described.
pub fn device_facts(info: &DeviceInfo) -> DeviceFacts {
    let (cc_major, cc_minor) = cuda::capability(info);
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
        assumed: false,
    }
}

fn read_text(dir: &Path, name: &str) -> Result<String> {
    fs::read_to_string(dir.join(name)).with_context(|| {
        format!(
            "cannot read {} (is {} a run's folder?)",
            dir.join(name).display(),
            dir.display()
        )
    })
}

/// A CSV file's bytes: the gzip members that decode (a torn last member gives what it
/// holds), or a plain `.csv` of an older run.
fn read_csv_bytes(dir: &Path, name: &str) -> Result<Option<(PathBuf, Vec<u8>)>> {
    let gz = dir.join(name);
    if let Ok(file) = fs::File::open(&gz) {
        let mut bytes = Vec::new();
        // Bytes decoded before a torn member's end stay in `bytes`.
        let _ = MultiGzDecoder::new(file).read_to_end(&mut bytes);
        return Ok(Some((gz, bytes)));
    }
    let plain = dir.join(name.trim_end_matches(".gz"));
    match fs::read(&plain) {
        Ok(bytes) => Ok(Some((plain, bytes))),
        Err(_) => Ok(None),
    }
}

/// The columns asked for, by position, and each row with its line number.
type Rows = (Vec<usize>, Vec<(u64, csv::StringRecord)>);

/// CSV rows with their line numbers; a malformed last row is torn (dropped, with a
/// warning), a malformed row before it an error.
fn csv_rows(path: &Path, bytes: &[u8], want: &[&str], warnings: &mut Vec<String>) -> Result<Rows> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let header = reader
        .headers()
        .with_context(|| format!("{}: no header", path.display()))?
        .clone();
    let cols = want
        .iter()
        .map(|name| {
            header
                .iter()
                .position(|c| c == *name)
                .with_context(|| format!("{}: no `{name}` column", path.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let rows: Vec<_> = reader.records().collect();
    let total = rows.len();
    let mut out = Vec::with_capacity(total);
    for (i, row) in rows.into_iter().enumerate() {
        let line = i as u64 + 2;
        let ok = row.ok().filter(|r| r.len() == header.len());
        match ok {
            Some(r) => out.push((line, r)),
            None if i + 1 == total => warnings.push(format!(
                "{}:{line}: dropped a torn last row (the run stopped while writing it)",
                file_name(path)
            )),
            None => bail!("{}:{line}: malformed row", path.display()),
        }
    }
    Ok((cols, out))
}

impl Stored {
    /// The experiment file a stored run was made from, as its `run.json` names it.
    pub fn experiment_path(dir: &Path) -> Result<PathBuf> {
        let meta: RunMeta = serde_json::from_str(&read_text(dir, RUN_FILE)?)
            .with_context(|| format!("malformed {}", dir.join(RUN_FILE).display()))?;
        Ok(meta.experiment_path)
    }

    pub fn load(dir: &Path) -> Result<Stored> {
        let meta: RunMeta = serde_json::from_str(&read_text(dir, RUN_FILE)?)
            .with_context(|| format!("malformed {}", dir.join(RUN_FILE).display()))?;
        let text = read_text(dir, EXPERIMENT_FILE)?;
        // Checked against the device it ran on; the kernel sources are not needed.
        let facts = meta
            .device
            .as_ref()
            .map_or_else(DeviceFacts::nominal, device_facts);
        let experiment = Experiment::parse_set(
            &meta.experiment_path,
            &text,
            &facts,
            Sources::Skip,
            &meta.set,
        )
        .map_err(|e| anyhow::anyhow!("the stored experiment does not validate: {e}"))?;
        let mut plan = Plan::new(&experiment)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .select(&meta.only)?;
        if let Some(part) = &meta.shard {
            plan = plan.keep(&part.cells)?;
        }
        let mut warnings = Vec::new();
        let records = read_records(dir, &mut warnings)?;
        if let Some(r) = records
            .iter()
            .find(|r| plan.cells.get(r.cell).is_none_or(|c| c.id != r.id))
        {
            bail!(
                "{}: cell {} (index {}) is not in the stored experiment's plan: the run folder is damaged or its experiment.toml was changed",
                dir.join(CELLS_FILE).display(),
                r.id,
                r.cell
            );
        }
        let mut stored = Stored {
            dir: dir.to_path_buf(),
            meta,
            experiment,
            plan,
            records,
            samples: Samples::default(),
            telemetry: vec![],
            peers: read_peers(dir)?,
            notes: fs::read_to_string(dir.join(NOTES_FILE))
                .ok()
                .map(|n| n.trim().to_string()),
            findings: fs::read_to_string(dir.join(FINDINGS_FILE))
                .ok()
                .map(|n| n.trim().to_string()),
            warnings,
        };
        stored.read_samples()?;
        stored.read_telemetry()?;
        Ok(stored)
    }

    /// The runs the records hold, as (cell index, process).
    fn recorded(&self) -> HashSet<(u32, u32)> {
        self.records
            .iter()
            .map(|r| (r.cell as u32, r.process))
            .collect()
    }

    fn read_samples(&mut self) -> Result<()> {
        let Some((path, bytes)) = read_csv_bytes(&self.dir, SAMPLES_FILE)? else {
            bail!(
                "cannot read {} (is {} a run's folder?)",
                self.dir.join(SAMPLES_FILE).display(),
                self.dir.display()
            );
        };
        let (cols, rows) = csv_rows(
            &path,
            &bytes,
            &["cell", "process", "phase", "time_ns", "t_us"],
            &mut self.warnings,
        )?;
        let index = self.plan.index_by_id();
        let recorded = self.recorded();
        let mut unfinished = HashSet::new();
        let s = &mut self.samples;
        for (line, r) in rows {
            let at = || format!("{}:{line}", path.display());
            let id = &r[cols[0]];
            let Some(&cell) = index.get(id) else {
                bail!("{}: cell `{id}` is not in the experiment's plan", at());
            };
            let process: u32 = r[cols[1]]
                .parse()
                .with_context(|| format!("{}: bad process `{}`", at(), &r[cols[1]]))?;
            if !recorded.contains(&(cell as u32, process)) {
                unfinished.insert(id.to_string());
                continue;
            }
            s.cell.push(cell as u32);
            s.process.push(process);
            s.first.push(&r[cols[2]] == "first");
            s.time_ns.push(
                r[cols[3]]
                    .parse()
                    .with_context(|| format!("{}: bad time `{}`", at(), &r[cols[3]]))?,
            );
            s.start_us.push(r[cols[4]].parse().unwrap_or(f64::NAN));
        }
        for id in unfinished {
            self.warnings.push(format!(
                "{}: dropped the samples of cell {id}, which {CELLS_FILE} does not record as finished",
                file_name(&path)
            ));
        }
        // A cell recorded as finished and ok has at least its first launch stored.
        let with_first: HashSet<(u32, u32)> = (0..s.cell.len())
            .filter(|&i| s.first[i])
            .map(|i| (s.cell[i], s.process[i]))
            .collect();
        if let Some(r) = self
            .records
            .iter()
            .find(|r| r.status == Status::Ok && !with_first.contains(&(r.cell as u32, r.process)))
        {
            bail!(
                "{} lacks the samples of cell {} (process {}), which {CELLS_FILE} records as ok: the run folder is damaged",
                path.display(),
                r.id,
                r.process
            );
        }
        Ok(())
    }

    fn read_telemetry(&mut self) -> Result<()> {
        // Runs before telemetry sampling have none.
        let Some((path, bytes)) = read_csv_bytes(&self.dir, TELEMETRY_FILE)? else {
            return Ok(());
        };
        let (cols, rows) = csv_rows(
            &path,
            &bytes,
            &[
                "cell", "process", "t_us", "sm_mhz", "mem_mhz", "power_w", "temp_c", "pstate",
                "throttle",
            ],
            &mut self.warnings,
        )?;
        let index = self.plan.index_by_id();
        let recorded = self.recorded();
        for (line, r) in rows {
            let bad = || anyhow::anyhow!("{}:{line}: malformed telemetry row", path.display());
            let f = |i: usize| &r[cols[i]];
            let cell = *index.get(f(0)).ok_or_else(bad)? as u32;
            let process: u32 = f(1).parse().map_err(|_| bad())?;
            if !recorded.contains(&(cell, process)) {
                continue;
            }
            self.telemetry.push(TelemetryRow {
                cell,
                process,
                point: TelemetryPoint {
                    t_us: f(2).parse().map_err(|_| bad())?,
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
        }
        Ok(())
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

/// A file's name alone: warnings end up in the report, which must not depend on where the
/// run folder lies.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned())
}

/// `cells.jsonl`: one record per line; a torn last line is dropped with a warning.
fn read_records(dir: &Path, warnings: &mut Vec<String>) -> Result<Vec<CellRecord>> {
    let path = dir.join(CELLS_FILE);
    let text = read_text(dir, CELLS_FILE)?;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    let mut records = Vec::with_capacity(lines.len());
    for (n, (i, line)) in lines.iter().enumerate() {
        match serde_json::from_str::<CellRecord>(line) {
            Ok(r) => records.push(r),
            Err(_) if n + 1 == lines.len() => {
                let id = line
                    .split("\"id\":\"")
                    .nth(1)
                    .and_then(|s| s.split('"').next())
                    .map_or(String::new(), |id| format!(" of cell {id}"));
                warnings.push(format!(
                    "{CELLS_FILE}:{}: dropped a torn last line{id} (the run stopped while writing it); that cell counts as not run",
                    i + 1
                ));
            }
            Err(e) => bail!("{}:{}: malformed cell record: {e}", path.display(), i + 1),
        }
    }
    Ok(records)
}

/// `peers.csv`, if the run has one.
fn read_peers(dir: &Path) -> Result<Vec<PeerRow>> {
    let path = dir.join(PEERS_FILE);
    let Ok(mut reader) = csv::Reader::from_path(&path) else {
        return Ok(vec![]);
    };
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
    for line in fs::read_to_string(dir.join(CELLS_FILE))
        .unwrap_or_default()
        .lines()
    {
        if let Ok(r) = serde_json::from_str::<CellRecord>(line) {
            let e = sums.entry(r.id).or_default();
            e.0 += r.wall_s;
            e.1 += 1.0;
        }
    }
    sums.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}
