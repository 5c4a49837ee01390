//! `timer = "profiler"`: the cell's worker runs under Nsight Compute, which times each
//! kernel launch (`gpu__time_duration.sum`, clocks left alone, caches flushed or not as the
//! cell asks); the launches of the measured kernel become the cell's samples. Each launch's
//! elapsed SM cycles per second come from the same pass (`sm__cycles_elapsed.avg.per_second`)
//! and count the cell's cycles: under the profiler the clock probe is itself profiled, and
//! need not see the clock the timed launches ran at.

use super::worker_process::WorkerProgram;
use crate::experiment::knobs::env::ProfilerCache;
use crate::protocol::{CellRecord, Counter, CounterRecord, FailureKind, Status};
use std::path::{Path, PathBuf};

/// The metrics read for each launch, in one pass: its time, and its elapsed SM cycles over
/// that time (the SM clock as the launch saw it, start-up included: a sub-µs kernel reads
/// about 1.9% below the clock probe, a 20 ms one within 0.02%).
const TIME: &str = "gpu__time_duration.sum";
const SM_CLOCK: &str = "sm__cycles_elapsed.avg.per_second";

/// One profiled launch: its kernel, its time, its elapsed SM cycles per second and any
/// other counter the pass read (`counters`).
#[derive(Debug, Clone, PartialEq)]
pub struct Profiled {
    pub kernel: String,
    pub ns: f64,
    pub sm_hz: Option<f64>,
    pub counters: Vec<Counter>,
}

/// Why a cell's profiled timing or counters were skipped: there is no `ncu` to run.
pub const NO_NCU: &str = "skipped: Nsight Compute (ncu) is not on PATH";

/// `ncu` on PATH, else where the CUDA toolkit installs it.
pub fn ncu() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("ncu"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let p = PathBuf::from("/usr/local/cuda/bin/ncu");
        p.is_file().then_some(p)
    })
}

/// `program` run under `ncu`, its report written as CSV to `log`: each launch's time and
/// SM clock, and the `counters` asked for.
pub fn wrap(
    ncu: &Path,
    program: &WorkerProgram,
    cache: ProfilerCache,
    counters: &[String],
    log: &Path,
) -> WorkerProgram {
    let mut metrics: Vec<&str> = vec![TIME, SM_CLOCK];
    for c in counters {
        if !metrics.contains(&c.as_str()) {
            metrics.push(c);
        }
    }
    let mut args: Vec<String> = [
        "--metrics",
        &metrics.join(","),
        "--clock-control",
        "none",
        "--cache-control",
        cache.flag(),
        "--csv",
        "--print-units",
        "base",
        "--log-file",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(log.to_string_lossy().into_owned());
    args.push(program.program.to_string_lossy().into_owned());
    args.extend(program.args.iter().cloned());
    WorkerProgram {
        program: ncu.to_path_buf(),
        args,
    }
}

/// Why ncu's report gives a cell no readings: each cell that ran records it as its error
/// (with ncu's last words where the whole report cannot be read).
#[derive(Debug, thiserror::Error)]
pub enum Unprofiled {
    #[error("the profiler's report has no CSV table")]
    NoTable,
    #[error("the profiler's report has no `{0}` column")]
    NoColumn(String),
    #[error("the profiler reported time in `{0}`")]
    TimeUnit(String),
    #[error("the profiler reported `{0}` as a time")]
    NotATime(String),
    #[error("the profiler reported no time for a launch of {0}")]
    NoTime(String),
    #[error("the profiler reported {0} launches of {1}, fewer than the cells launched")]
    TooFew(usize, String),
}

/// Each profiled launch in the report, in launch order (the report's IDs), with its time
/// in nanoseconds and, where the report has it, its SM clock.
pub fn launches(report: &str) -> Result<Vec<Profiled>, Unprofiled> {
    let mut lines = report.lines().skip_while(|l| !l.starts_with("\"ID\""));
    let header = split(lines.next().ok_or(Unprofiled::NoTable)?);
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| Unprofiled::NoColumn(name.to_string()))
    };
    let (id, kernel, metric, unit, value) = (
        col("ID")?,
        col("Kernel Name")?,
        col("Metric Name")?,
        col("Metric Unit")?,
        col("Metric Value")?,
    );
    let mut out: Vec<Profiled> = Vec::new();
    let mut by_id: std::collections::HashMap<String, usize> = Default::default();
    for line in lines.filter(|l| l.starts_with('"')) {
        let f = split(line);
        // A row short of the header's columns is not a metric's row.
        let (Some(id), Some(kernel), Some(metric), Some(unit), Some(value)) = (
            f.get(id),
            f.get(kernel),
            f.get(metric),
            f.get(unit),
            f.get(value),
        ) else {
            continue;
        };
        let number = value.replace(',', "").parse::<f64>();
        let index = *by_id.entry(id.clone()).or_insert_with(|| {
            out.push(Profiled {
                kernel: kernel.clone(),
                ns: f64::NAN,
                sm_hz: None,
                counters: Vec::new(),
            });
            out.len() - 1
        });
        // Every metric is kept as a counter too: a counter pass may ask for these two.
        if let Ok(value) = number {
            out[index].counters.push(Counter {
                name: metric.clone(),
                unit: unit.clone(),
                value,
            });
        }
        match metric.as_str() {
            TIME => {
                let scale = match unit.as_str() {
                    "nsecond" | "ns" => 1.0,
                    "usecond" | "us" => 1e3,
                    "msecond" | "ms" => 1e6,
                    "second" | "s" => 1e9,
                    other => return Err(Unprofiled::TimeUnit(other.to_string())),
                };
                let ns = number.map_err(|_| Unprofiled::NotATime(value.clone()))?;
                out[index].ns = ns * scale;
            }
            // A clock it could not read leaves the launch without one: its time still counts.
            SM_CLOCK => {
                let scale = match unit.as_str() {
                    "hz" | "Hz" | "cycle/second" => Some(1.0),
                    "cycle/nsecond" => Some(1e9),
                    _ => None,
                };
                out[index].sm_hz = scale.zip(number.ok()).map(|(s, v)| s * v);
            }
            _ => {}
        }
    }
    if let Some(l) = out.iter().find(|l| l.ns.is_nan()) {
        return Err(Unprofiled::NoTime(l.kernel.clone()));
    }
    Ok(out)
}

/// Splits one CSV line of quoted fields.
fn split(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let (mut cur, mut quoted) = (String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

/// Each record's own launches in the report: the cells ran in order, each launching its
/// kernel `kernel_launches` times, the timed launches (the first, then `per_sample` per
/// sample) last but for the audit's. `entry(record)` names its kernel. Gives each cell
/// that ran its timed and audit launches, or why the report is short of them; a failed
/// cell's launches still take their place, and it gets `None`.
fn cut<'a>(
    records: &[CellRecord],
    launches: &'a [Profiled],
    entry: impl Fn(&CellRecord) -> String,
    per_sample: impl Fn(&CellRecord) -> u64,
) -> Vec<Option<Result<Cut<'a>, Unprofiled>>> {
    let mut taken: std::collections::HashMap<String, usize> = Default::default();
    records
        .iter()
        .map(|rec| {
            let name = entry(rec);
            let mine: Vec<&Profiled> = launches
                .iter()
                .filter(|l| l.kernel == name || l.kernel.starts_with(&format!("{name}(")))
                .collect();
            let from = *taken.get(&name).unwrap_or(&0);
            let count = rec.kernel_launches as usize;
            taken.insert(name.clone(), from + count);
            if rec.status != crate::protocol::Status::Ok || count == 0 {
                return None;
            }
            let per = per_sample(rec).max(1) as usize;
            let timed = (1 + rec.samples_ns.len()) * per;
            let after = rec.audit.as_ref().map_or(0, |a| a.launches as usize);
            let Some(all) = mine
                .get(from..from + count)
                .filter(|all| all.len() >= timed + after)
            else {
                return Some(Err(Unprofiled::TooFew(mine.len(), name)));
            };
            let (timed, audit) = all[count - after - timed..].split_at(timed);
            Some(Ok(Cut {
                timed: timed.to_vec(),
                audit: audit.to_vec(),
                per,
            }))
        })
        .collect()
}

/// One cell's launches in a profiler's report.
struct Cut<'a> {
    /// The first timed launch's, then each sample's `per` launches.
    timed: Vec<&'a Profiled>,
    audit: Vec<&'a Profiled>,
    per: usize,
}

/// Gives each record its samples from its timed launches, and its audit the time of the
/// launch after them.
pub fn assign(
    records: &mut [CellRecord],
    launches: &[Profiled],
    entry: impl Fn(&CellRecord) -> String,
    per_sample: impl Fn(&CellRecord) -> u64,
) {
    let cuts = cut(records, launches, entry, per_sample);
    for (rec, cut) in records.iter_mut().zip(cuts) {
        let Cut { timed, audit, per } = match cut {
            None => continue,
            Some(Err(why)) => {
                rec.fail(FailureKind::Profiler, why.to_string());
                continue;
            }
            Some(Ok(c)) => c,
        };
        let values: Vec<f64> = timed
            .chunks(per)
            .map(|c| c.iter().map(|l| l.ns).sum::<f64>() / c.len() as f64)
            .collect();
        rec.first_ns = values.first().copied();
        rec.samples_ns = values[1..].to_vec();
        rec.profiler_sm_mhz =
            crate::statistics::median(timed.iter().filter_map(|l| l.sm_hz).collect())
                .map(|hz| hz / 1e6);
        // The analysis sets the audit launch's time against the reading.
        if let (Some(a), Some(launch)) = (rec.audit.as_mut(), audit.first()) {
            a.launch_ns = Some(launch.ns);
        }
    }
}

/// Gives each record of a counter pass its counters: each one's median over the steady
/// samples' launches (all timed launches where there are no steady samples), so that a
/// first launch after no warm-up does not stand for the cell.
pub fn assign_counters(
    records: &mut [CellRecord],
    launches: &[Profiled],
    cache: ProfilerCache,
    entry: impl Fn(&CellRecord) -> String,
    per_sample: impl Fn(&CellRecord) -> u64,
) {
    let cuts = cut(records, launches, entry, per_sample);
    for (rec, cut) in records.iter_mut().zip(cuts) {
        let Cut { timed, per, .. } = match cut {
            None => continue,
            Some(Err(why)) => {
                rec.fail(FailureKind::Profiler, why.to_string());
                continue;
            }
            Some(Ok(c)) => c,
        };
        let steady = if timed.len() > per {
            &timed[per..]
        } else {
            &timed[..]
        };
        let mut values: Vec<Counter> = Vec::new();
        for l in steady {
            for c in &l.counters {
                if !values.iter().any(|v| v.name == c.name) {
                    let all = steady
                        .iter()
                        .flat_map(|l| l.counters.iter().filter(|x| x.name == c.name))
                        .map(|x| x.value)
                        .collect();
                    if let Some(value) = crate::statistics::median(all) {
                        values.push(Counter { value, ..c.clone() });
                    }
                }
            }
        }
        rec.counters = Some(CounterRecord {
            cache: cache.flag().to_string(),
            launches: steady.len() as u64,
            launch_ns: crate::statistics::median(steady.iter().map(|l| l.ns).collect()),
            values,
            error: None,
        });
    }
}

/// Gives a profiled worker's `records` their launches from ncu's report at `report`: their
/// samples, or in a counter pass (`counted`: its cache control) their counters. Where the
/// report cannot be read, each cell that ran fails with why, and ncu's last words.
pub fn read_report(
    records: &mut [CellRecord],
    report: &Path,
    counted: Option<ProfilerCache>,
    entry: impl Fn(&CellRecord) -> String,
    per_sample: impl Fn(&CellRecord) -> u64,
) {
    let text = std::fs::read_to_string(report).unwrap_or_default();
    match (launches(&text), counted) {
        (Ok(launches), None) => assign(records, &launches, entry, per_sample),
        (Ok(launches), Some(cache)) => {
            assign_counters(records, &launches, cache, entry, per_sample)
        }
        (Err(e), _) => {
            let said: Vec<&str> = text.lines().rev().take(5).collect();
            let why = format!("{e}; ncu said: {}", said.join(" / "));
            for r in records.iter_mut().filter(|r| r.status == Status::Ok) {
                r.fail(FailureKind::Profiler, why.clone());
            }
        }
    }
}

#[cfg(test)]
#[path = "profiler_tests.rs"]
mod tests;
