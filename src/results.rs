//! A run on disk, in one folder: the experiment as run, the run's metadata, one CSV row per
//! sample and one JSON line per finished cell. Each cell is appended and flushed the moment
//! it finishes, so an interrupt or a crash loses no completed cell.

use crate::experiment::Experiment;
use crate::plan::{Cell, Plan};
use crate::protocol::{CellRecord, DeviceInfo, Startup, Telemetry, TelemetryPoint};
use crate::system::{Git, Host};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

pub const EXPERIMENT_FILE: &str = "experiment.toml";
pub const RUN_FILE: &str = "run.json";
pub const SAMPLES_FILE: &str = "samples.csv";
pub const CELLS_FILE: &str = "cells.jsonl";
pub const SUMMARY_FILE: &str = "summary.csv";
pub const TELEMETRY_FILE: &str = "telemetry.csv";
pub const REPORT_FILE: &str = "report.md";
/// Optional: the path, relative to the run's folder, of an earlier run its report compares with.
pub const COMPARE_FILE: &str = "compare_to";
/// Optional, written by a person after reading the run; the report includes it.
pub const NOTES_FILE: &str = "notes.md";

/// The run's metadata (`run.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    /// The experiment file as given, relative to where the runner ran.
    pub experiment_path: PathBuf,
    pub experiment_sha256: String,
    pub git: Option<Git>,
    pub runner_version: String,
    pub started_utc: String,
    pub finished_utc: Option<String>,
    /// Whether every planned run finished (false after an interrupt or a fatal error).
    pub complete: bool,
    pub host: Host,
    pub device: Option<DeviceInfo>,
    /// CUDA start-up of the first worker process.
    pub startup: Option<Startup>,
}

/// Writes a run as it happens.
pub struct Writer {
    dir: PathBuf,
    samples: BufWriter<File>,
    cells: BufWriter<File>,
    telemetry: BufWriter<File>,
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    Ok(BufWriter::new(File::create(path).with_context(|| {
        format!("cannot create {}", path.display())
    })?))
}

impl Writer {
    /// Starts a run in `dir`, replacing the files of an earlier run there.
    pub fn create(dir: &Path, exp: &Experiment, meta: &RunMeta) -> Result<Writer> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        fs::write(dir.join(EXPERIMENT_FILE), &exp.text)
            .with_context(|| format!("cannot write into {}", dir.display()))?;
        let mut samples = create(&dir.join(SAMPLES_FILE))?;
        let params: Vec<&str> = exp.params.iter().map(|(n, _)| n.as_str()).collect();
        writeln!(
            samples,
            "cell,kernel,variant,timer,{}{}process,phase,index,time_ns,t_us",
            params.join(","),
            if params.is_empty() { "" } else { "," }
        )?;
        samples.flush()?;
        let mut telemetry = create(&dir.join(TELEMETRY_FILE))?;
        writeln!(
            telemetry,
            "cell,process,t_us,sm_mhz,mem_mhz,power_w,temp_c,pstate,throttle"
        )?;
        telemetry.flush()?;
        let writer = Writer {
            telemetry,
            dir: dir.to_path_buf(),
            samples,
            cells: create(&dir.join(CELLS_FILE))?,
        };
        writer.write_meta(meta)?;
        Ok(writer)
    }

    pub fn write_meta(&self, meta: &RunMeta) -> Result<()> {
        let tmp = self.dir.join(".run.json.tmp");
        fs::write(&tmp, serde_json::to_string_pretty(meta)? + "\n")?;
        fs::rename(&tmp, self.dir.join(RUN_FILE))?;
        Ok(())
    }

    /// Appends a finished cell: its samples to the CSV, the rest to `cells.jsonl`.
    pub fn append(&mut self, cell: &Cell, n_params: usize, rec: &CellRecord) -> Result<()> {
        let mut coords = format!(
            "{},{},{},{},",
            cell.id,
            cell.kernel_name,
            cell.variant,
            cell.knobs.timer.key()
        );
        for i in 0..n_params {
            if let Some((_, v)) = cell.point.get(i) {
                coords += &v.to_string();
            }
            coords.push(',');
        }
        let start = |i: usize| {
            rec.starts_us
                .get(i)
                .map_or(String::new(), |t| format!("{t:.1}"))
        };
        if let Some(first) = rec.first_ns {
            writeln!(
                self.samples,
                "{coords}{},first,0,{first},{}",
                rec.process,
                start(0)
            )?;
        }
        for (i, t) in rec.samples_ns.iter().enumerate() {
            writeln!(
                self.samples,
                "{coords}{},steady,{i},{t},{}",
                rec.process,
                start(i + 1)
            )?;
        }
        self.samples.flush()?;
        let opt = |v: Option<String>| v.unwrap_or_default();
        for p in &rec.telemetry {
            let r = &p.reading;
            writeln!(
                self.telemetry,
                "{},{},{:.1},{},{},{},{},{},{}",
                cell.id,
                rec.process,
                p.t_us,
                opt(r.sm_mhz.map(|v| v.to_string())),
                opt(r.mem_mhz.map(|v| v.to_string())),
                opt(r.power_w.map(|v| format!("{v:.3}"))),
                opt(r.temp_c.map(|v| v.to_string())),
                opt(r.pstate.clone()),
                r.throttle.join(";")
            )?;
        }
        self.telemetry.flush()?;
        let stored = CellRecord {
            samples_ns: vec![],
            starts_us: vec![],
            telemetry: vec![],
            ..rec.clone()
        };
        writeln!(self.cells, "{}", serde_json::to_string(&stored)?)?;
        self.cells.flush()?;
        Ok(())
    }
}

/// A run read back from disk.
pub struct Stored {
    pub meta: RunMeta,
    pub experiment: Experiment,
    pub plan: Plan,
    pub records: Vec<CellRecord>,
    pub samples: Samples,
    pub telemetry: Vec<TelemetryRow>,
    pub notes: Option<String>,
}

/// The timing columns of `samples.csv`: for each sample its cell index, phase and time.
#[derive(Default)]
pub struct Samples {
    pub cell: Vec<u32>,
    pub process: Vec<u32>,
    pub first: Vec<bool>,
    pub time_ns: Vec<f64>,
    /// Host start of each launch, µs from its cell's start (NaN where not recorded).
    pub start_us: Vec<f64>,
}

/// A telemetry reading of one cell's run, as `telemetry.csv` stores it.
pub struct TelemetryRow {
    pub cell: u32,
    pub process: u32,
    pub point: TelemetryPoint,
}

impl Stored {
    pub fn load(dir: &Path) -> Result<Stored> {
        let read = |name: &str| {
            fs::read_to_string(dir.join(name)).with_context(|| {
                format!(
                    "cannot read {} (is {} a run's folder?)",
                    dir.join(name).display(),
                    dir.display()
                )
            })
        };
        let meta: RunMeta = serde_json::from_str(&read(RUN_FILE)?)
            .with_context(|| format!("malformed {}", dir.join(RUN_FILE).display()))?;
        let text = read(EXPERIMENT_FILE)?;
        // Parse under the original path, so kernel sources resolve as they did for the run.
        let experiment = Experiment::parse(&meta.experiment_path, &text)
            .map_err(|e| anyhow::anyhow!("the stored experiment no longer validates: {e}"))?;
        let plan = Plan::new(&experiment).map_err(anyhow::Error::msg)?;
        let records = read(CELLS_FILE)?
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).with_context(|| {
                    format!(
                        "{}:{}: malformed cell record",
                        dir.join(CELLS_FILE).display(),
                        i + 1
                    )
                })
            })
            .collect::<Result<Vec<CellRecord>>>()?;
        let samples = read_samples(&dir.join(SAMPLES_FILE), &plan)?;
        let telemetry = read_telemetry(&dir.join(TELEMETRY_FILE), &plan)?;
        let notes = fs::read_to_string(dir.join(NOTES_FILE))
            .ok()
            .map(|n| n.trim().to_string());
        Ok(Stored {
            meta,
            experiment,
            plan,
            records,
            samples,
            telemetry,
            notes,
        })
    }
}

fn read_samples(path: &Path, plan: &Plan) -> Result<Samples> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = BufReader::with_capacity(1 << 20, file).lines();
    let header = lines.next().transpose()?.unwrap_or_default();
    let cols: Vec<&str> = header.split(',').collect();
    let find = |name: &str| {
        cols.iter()
            .position(|c| *c == name)
            .with_context(|| format!("{}: no `{name}` column", path.display()))
    };
    let (c_cell, c_phase, c_time) = (find("cell")?, find("phase")?, find("time_ns")?);
    let (c_process, c_start) = (find("process")?, find("t_us").ok());
    let index = plan.index_by_id();
    let mut s = Samples::default();
    for (n, line) in lines.enumerate() {
        let line = line?;
        let f: Vec<&str> = line.split(',').collect();
        let at = || format!("{}:{}", path.display(), n + 2);
        let (Some(cell), Some(phase), Some(time)) = (f.get(c_cell), f.get(c_phase), f.get(c_time))
        else {
            bail!("{}: too few fields", at());
        };
        let Some(&cell) = index.get(cell) else {
            bail!("{}: cell `{cell}` is not in the experiment's plan", at())
        };
        s.cell.push(cell);
        let process = f.get(c_process).unwrap_or(&"");
        s.process.push(
            process
                .parse()
                .with_context(|| format!("{}: bad process `{process}`", at()))?,
        );
        s.start_us.push(
            c_start
                .and_then(|c| f.get(c))
                .and_then(|t| t.parse().ok())
                .unwrap_or(f64::NAN),
        );
        s.first.push(*phase == "first");
        s.time_ns.push(
            time.parse()
                .with_context(|| format!("{}: bad time `{time}`", at()))?,
        );
    }
    Ok(s)
}

/// `telemetry.csv`, if the run has one (runs before telemetry sampling have none).
fn read_telemetry(path: &Path, plan: &Plan) -> Result<Vec<TelemetryRow>> {
    let Ok(text) = fs::read_to_string(path) else {
        return Ok(vec![]);
    };
    let index = plan.index_by_id();
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let bad = || anyhow::anyhow!("{}:{}: malformed telemetry row", path.display(), n + 1);
        if f.len() != 9 {
            return Err(bad());
        }
        let cell = *index.get(f[0]).ok_or_else(bad)?;
        let num = |s: &str| s.parse::<f64>().ok();
        rows.push(TelemetryRow {
            cell,
            process: f[1].parse().map_err(|_| bad())?,
            point: TelemetryPoint {
                t_us: f[2].parse().map_err(|_| bad())?,
                reading: Telemetry {
                    sm_mhz: f[3].parse().ok(),
                    mem_mhz: f[4].parse().ok(),
                    power_w: num(f[5]),
                    temp_c: f[6].parse().ok(),
                    pstate: (!f[7].is_empty()).then(|| f[7].to_string()),
                    throttle: f[8]
                        .split(';')
                        .filter(|t| !t.is_empty())
                        .map(String::from)
                        .collect(),
                },
            },
        });
    }
    Ok(rows)
}

/// Seconds per run of each cell of an earlier run in `dir`, for estimates; empty if none.
pub fn previous_wall_times(dir: &Path) -> std::collections::HashMap<String, f64> {
    let mut sums: std::collections::HashMap<String, (f64, f64)> = Default::default();
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
