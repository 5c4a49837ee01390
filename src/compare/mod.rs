//! Two stored runs of an experiment, cell by cell: the ratio of the new run's headline
//! median to the old one's with a bootstrap interval, a Mann-Whitney U p-value, and the
//! change it reads as against a threshold (faster, slower, same, or too noisy to tell). The report
//! renders it (`runner compare`, `runner report --compare`).

pub mod against;
mod join;

use crate::analysis::units::seed_of;
use crate::analysis::Analysis;
use crate::statistics::{mann_whitney_p, median_of, ratio_interval};
use crate::store::{Stored, SOURCES_DIR};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The defaults: a change is one beyond both 2% and 2 µs. Five comparisons of committed runs
/// of one experiment (accuracy-run1, -run3, -run4 and accuracy; events-run1 and -run2: the
/// same experiment and method, other sessions and other H100s) give no cell slower or
/// faster at these; at 2% alone, cells of a few µs moved by up to 1.2 µs between sessions
/// (an event-timed launch's overhead) and 1 to 21 of them were called changed.
pub const DEFAULT_THRESHOLD_PCT: f64 = 2.0;
pub const DEFAULT_FLOOR_US: f64 = 2.0;

/// Fewer independent units than this on either side cannot give a verdict.
const MIN_UNITS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Faster,
    Slower,
    Same,
    TooNoisy,
}

impl Change {
    pub fn text(self) -> &'static str {
        match self {
            Change::Faster => "faster",
            Change::Slower => "⚠ slower",
            Change::Same => "same",
            Change::TooNoisy => "too noisy to tell",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct CellComparison {
    pub cell: String,
    pub old_median_ns: f64,
    pub new_median_ns: f64,
    /// new / old, and its 95% bootstrap interval.
    pub ratio: f64,
    pub ratio_low: f64,
    pub ratio_high: f64,
    pub p_value: f64,
    /// What one independent unit is: a round, a process, or a block of samples.
    pub units: String,
    pub old_units: usize,
    pub new_units: usize,
    pub verdict: Change,
    /// Why this cell's two runs are not like for like, where they are not.
    pub differs: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Comparison {
    pub threshold_pct: f64,
    pub floor_us: f64,
    /// What differs between the two runs as a whole (experiment, GPU, driver, runner).
    pub run_differences: Vec<String>,
    pub cells: Vec<CellComparison>,
    /// Cells in only one of the runs.
    pub only_old: Vec<String>,
    pub only_new: Vec<String>,
    /// Of `only_old`, those the new run measured but whose stored data is damaged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damaged_new: Vec<String>,
    /// Cells left out because a run's reading of them is not trusted (failed, suspect,
    /// impossible): the cell, and which run says what.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untrusted: Vec<(String, String)>,
    /// Cells of the new run that did not end as their kernels expect (failed, suspect or
    /// impossible; or written to be caught and trusted), with the verdict's word.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unexpected_new: Vec<(String, String)>,
}

/// What a comparison tells a CI job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Every cell of the old run compared, none slower.
    Pass,
    /// A cell got slower beyond the threshold.
    Slower,
    /// The new run cannot be vouched for: it lacks a cell the old one measured, or a cell
    /// of it did not end as its kernel expects. Said before a slower cell: a run that
    /// failed or left cells out is no measure of speed.
    Incomplete,
}

impl Comparison {
    pub fn count(&self, v: Change) -> usize {
        self.cells.iter().filter(|c| c.verdict == v).count()
    }

    pub fn gate(&self) -> Gate {
        if !self.only_old.is_empty() || !self.unexpected_new.is_empty() {
            Gate::Incomplete
        } else if self.count(Change::Slower) > 0 {
            Gate::Slower
        } else {
            Gate::Pass
        }
    }

    /// One sentence: how many cells got which verdict, and how many were left out.
    pub fn summary(&self) -> String {
        let left_out = match self.untrusted.len() {
            0 => String::new(),
            n => format!(" ({n} left out: a run's reading of them is not trusted)"),
        };
        format!(
            "{} cells compared at a threshold of {}% and {} µs: {} slower, {} faster, {} the same, {} too noisy to tell{left_out}",
            self.cells.len(),
            self.threshold_pct,
            self.floor_us,
            self.count(Change::Slower),
            self.count(Change::Faster),
            self.count(Change::Same),
            self.count(Change::TooNoisy)
        )
    }
}

/// Files under `dir` (recursively) by their path relative to it, with their bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if let (Ok(rel), Ok(bytes)) = (p.strip_prefix(dir), std::fs::read(&p)) {
                out.insert(rel.to_string_lossy().into_owned(), bytes);
            }
        }
    }
    out
}

/// What differs between the runs as a whole, and the source files that differ.
fn run_differences(old: &Stored, new: &Stored) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let (a, b) = (&old.meta, &new.meta);
    if a.experiment_sha256 != b.experiment_sha256 {
        out.push("the experiment files differ".to_string());
    }
    let device =
        |m: &crate::store::RunMeta| m.device.as_ref().map(|d| (d.name.clone(), d.uuid.clone()));
    if device(a) != device(b) {
        out.push("the GPUs differ".into());
    }
    let driver =
        |m: &crate::store::RunMeta| m.device.as_ref().and_then(|d| d.driver_version.clone());
    if driver(a) != driver(b) {
        out.push(format!(
            "the drivers differ ({} against {})",
            driver(a).unwrap_or_default(),
            driver(b).unwrap_or_default()
        ));
    }
    let commit = |m: &crate::store::RunMeta| m.git.as_ref().map(|g| g.commit.clone());
    if commit(a) != commit(b) {
        out.push("the runner was built from different commits".into());
    }
    let (sa, sb) = (
        files(&old.dir.join(SOURCES_DIR)),
        files(&new.dir.join(SOURCES_DIR)),
    );
    // A run stored without its sources (trimmed to its records and samples) says so: its
    // files are unknown, not different.
    let missing = [(&sa, "the old run"), (&sb, "the new run")]
        .into_iter()
        .filter(|(files, _)| files.is_empty())
        .map(|(_, which)| which)
        .collect::<Vec<_>>();
    if missing.len() == 1 {
        out.push(format!(
            "{} holds no kernel sources (`{SOURCES_DIR}/`): they are not compared",
            missing[0]
        ));
        return (out, Vec::new());
    }
    let changed: Vec<String> = sa
        .keys()
        .chain(sb.keys())
        .filter(|k| sa.get(*k) != sb.get(*k))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !changed.is_empty() {
        out.push(format!("kernel sources differ: {}", changed.join(", ")));
    }
    (out, changed)
}

/// Cell by cell: a change is one beyond `threshold_pct` of the old median and beyond
/// `floor_us`, whichever is larger.
pub fn compare(
    old: &Analysis,
    new: &Analysis,
    threshold_pct: f64,
    floor_us: f64,
) -> anyhow::Result<Comparison> {
    let matched = join::by_cell(old, new)?;
    let (run_differences, changed) = run_differences(old.run, new.run);
    let (doubts_old, doubts_new) = (doubts(old), doubts(new));
    let mut cells = Vec::new();
    let mut untrusted = Vec::new();
    for &(o, n) in &matched.both {
        let cell = &new.run.plan.cells[n];
        let (Some(before), Some(after)) = (old.reduced.units.get(&o), new.reduced.units.get(&n))
        else {
            continue;
        };
        let (what, a, b) = (&before.what, &before.values[..], &after.values[..]);
        // A speed-up from a reading the audit or the device's peaks do not support is none.
        let doubt = [("old", &doubts_old), ("new", &doubts_new)]
            .into_iter()
            .filter_map(|(run, d)| Some(format!("{run} run: {}", d.get(cell.id.as_str())?)))
            .collect::<Vec<_>>();
        if !doubt.is_empty() {
            untrusted.push((cell.id.clone(), doubt.join("; ")));
            continue;
        }
        let (old_median, new_median) = (median_of(a), median_of(b));
        let (ratio_low, ratio_high) = ratio_interval(a, b, seed_of(&cell.id));
        let t = (threshold_pct / 100.0).max(floor_us * 1e3 / old_median);
        let verdict = if a.len() < MIN_UNITS || b.len() < MIN_UNITS {
            Change::TooNoisy
        } else if ratio_low > 1.0 + t {
            Change::Slower
        } else if ratio_high < 1.0 - t {
            Change::Faster
        } else if ratio_low >= 1.0 - t && ratio_high <= 1.0 + t {
            Change::Same
        } else {
            Change::TooNoisy
        };
        // The stored copy of a source keeps its path below the experiment's folder: match
        // whole file names, so `stream.cu` is not taken for `mystream.cu`.
        let source = cell
            .kernel
            .and_then(|k| new.run.experiment.kernels.get(k))
            .and_then(|k| k.source.rsplit('/').next())
            .filter(|s| !s.is_empty());
        let differs = source
            .filter(|s| changed.iter().any(|c| c.rsplit('/').next() == Some(*s)))
            .map(|s| vec![format!("source {s} differs")])
            .unwrap_or_default();
        cells.push(CellComparison {
            cell: cell.id.clone(),
            old_median_ns: old_median,
            new_median_ns: new_median,
            ratio: new_median / old_median,
            ratio_low,
            ratio_high,
            p_value: mann_whitney_p(a, b),
            units: what.clone(),
            old_units: a.len(),
            new_units: b.len(),
            verdict,
            differs,
        });
    }
    Ok(Comparison {
        threshold_pct,
        floor_us,
        run_differences,
        cells,
        damaged_new: (matched.only_old.iter())
            .filter(|id| new.run.left_out().any(|l| l == id.as_str()))
            .cloned()
            .collect(),
        only_old: matched.only_old,
        only_new: matched.only_new,
        untrusted,
        unexpected_new: unexpected(new),
    })
}

/// The cells of a run that did not end as their kernels expect, by id, with the verdict's
/// word: as `runner run` counts them for its exit status.
fn unexpected(a: &Analysis) -> Vec<(String, String)> {
    (a.run.plan.cells.iter())
        .filter_map(|c| {
            let caught = (c.kernel)
                .and_then(|k| a.run.experiment.kernels.get(k))
                .is_some_and(|k| k.expect_caught);
            let v = a.verdict(c);
            (v.as_expected(caught) == Some(false)).then(|| (c.id.clone(), v.word().to_string()))
        })
        .collect()
}

/// The cells of a run whose reading is not trusted, by id, with the verdict's word.
fn doubts<'a>(a: &'a Analysis) -> HashMap<&'a str, &'static str> {
    (a.run.plan.cells.iter())
        .filter_map(|c| {
            let v = a.verdict(c);
            v.reason().map(|_| (c.id.as_str(), v.word()))
        })
        .collect()
}
