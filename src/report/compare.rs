//! A run against an earlier run of the same experiment: each cell's headline median in
//! both, their difference, and whether the cells long enough to judge agree within the
//! tolerance. `runner report DIR --compare EARLIER` records the earlier run in DIR, so
//! later renders compare the same way.

use super::format;
use crate::analysis::{self, Analysis};
use crate::compare;
use crate::experiment::Unit;
use crate::store::Stored;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Cells at least this long must agree with the earlier run within `TOLERANCE_PCT`.
pub const JUDGED_FROM_NS: f64 = 50_000.0;
pub const TOLERANCE_PCT: f64 = 0.3;

#[derive(Serialize)]
pub struct Comparison {
    pub earlier: String,
    pub summary: String,
    /// The verdicts' count, as `runner compare` gives them.
    pub verdicts: String,
    pub rows: Vec<CompareRow>,
}

#[derive(Serialize)]
pub struct CompareRow {
    pub cell: String,
    pub this: String,
    pub earlier: String,
    pub difference: String,
    /// The difference in SM cycles, where both runs have a clock for the cell (the probes',
    /// or Nsight Compute's for its cells: comparing a run from before it read one with a
    /// later one mixes the two, up to about 2% apart on a sub-µs kernel).
    pub cycles_difference: String,
    pub agreement: String,
    /// This run's median over the earlier one's, with its 95% bootstrap interval.
    pub ratio: String,
    pub verdict: String,
}

pub fn build(this: &Analysis, earlier: &Analysis, label: &str) -> Result<Comparison> {
    let against = compare::against::against(this, earlier)?;
    let verdicts = compare::compare(
        earlier,
        this,
        compare::DEFAULT_THRESHOLD_PCT,
        compare::DEFAULT_FLOOR_US,
    )?;
    let by_cell: HashMap<&str, &compare::CellComparison> = verdicts
        .cells
        .iter()
        .map(|c| (c.cell.as_str(), c))
        .collect();
    let unit = format::unit_for(against.medians.values().copied(), Unit::Auto);
    let mut judged = Judged::default();
    let rows = (against.cells.iter())
        .map(|x| {
            let c = x.cell;
            // A kernel whose time follows the SM clock is judged in cycles.
            let in_cycles = x.cycles_diff_pct.filter(|_| x.follows_clock);
            let agreement = if x.this_ns < JUDGED_FROM_NS {
                "shorter than 50 µs".to_string()
            } else {
                let holds = (c.knobs.queue).reading_holds_launch_time(c.knobs.timer);
                let diff = in_cycles.unwrap_or(x.diff_pct);
                judged.add(diff, in_cycles.is_some(), x.diff_pct, holds)
            };
            CompareRow {
                cell: c.id.clone(),
                this: format::time(x.this_ns, unit),
                earlier: format::time(x.earlier_ns, unit),
                difference: format::percent(x.diff_pct),
                cycles_difference: x.cycles_diff_pct.map_or("–".into(), format::percent),
                agreement,
                ratio: by_cell
                    .get(c.id.as_str())
                    .map(|v| format!("{:.4} [{:.4}, {:.4}]", v.ratio, v.ratio_low, v.ratio_high))
                    .unwrap_or_default(),
                verdict: by_cell
                    .get(c.id.as_str())
                    .map(|v| v.verdict.text().to_string())
                    .unwrap_or_default(),
            }
        })
        .collect();
    Ok(Comparison {
        earlier: label.to_string(),
        summary: judged.summary(&against.followers),
        verdicts: verdicts.summary(),
        rows,
    })
}

/// The cells long enough to judge, and how many agree: held to the tolerance where the
/// reading is the GPU's own work, told apart where it holds the host's launch time.
#[derive(Default)]
struct Judged {
    gpu_work: Tally,
    launch_time: Tally,
    /// Of those judged in cycles, how many would agree in time.
    in_cycles: usize,
    agree_in_time: usize,
}

/// How many cells, how many agree, and the largest difference among them.
#[derive(Default)]
struct Tally {
    count: usize,
    agree: usize,
    worst: f64,
}

impl Tally {
    fn add(&mut self, diff: f64) -> bool {
        let agrees = diff.abs() <= TOLERANCE_PCT;
        self.count += 1;
        self.agree += usize::from(agrees);
        self.worst = self.worst.max(diff.abs());
        agrees
    }
}

impl Judged {
    /// Judges a cell by `diff` (in cycles where `cycles`); `time_diff` for the record.
    /// A reading that holds the host's launch time is told, not held to the tolerance:
    /// that time moves between runs by about a microsecond whatever the method does.
    fn add(&mut self, diff: f64, cycles: bool, time_diff: f64, holds_launch_time: bool) -> String {
        if cycles {
            self.in_cycles += 1;
            self.agree_in_time += usize::from(time_diff.abs() <= TOLERANCE_PCT);
        }
        let unit = if cycles { "in cycles" } else { "in time" };
        if holds_launch_time {
            if self.launch_time.add(diff) {
                format!("holds the launch time; agrees {unit}")
            } else {
                format!("holds the launch time; differs by more than {TOLERANCE_PCT}% {unit}")
            }
        } else if self.gpu_work.add(diff) {
            format!("agrees {unit}")
        } else {
            format!("⚠ differs by more than {TOLERANCE_PCT}% {unit}")
        }
    }

    fn summary(&self, followers: &[&str]) -> String {
        let how = match followers {
            [] => "in time".to_string(),
            f => format!(
                "in SM cycles for {} (whose time follows the SM clock: {} of its {} such cells would agree in time), in time for the rest",
                f.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
                self.agree_in_time,
                self.in_cycles
            ),
        };
        let gpu = &self.gpu_work;
        let host = &self.launch_time;
        let mut parts = Vec::new();
        if gpu.count > 0 {
            parts.push(format!(
                "{} of {} cells of at least 50 µs that time the GPU's own work agree within {TOLERANCE_PCT}%, the largest difference among them {:.2}%",
                gpu.agree, gpu.count, gpu.worst
            ));
        }
        if host.count > 0 {
            parts.push(format!(
                "{} cells of at least 50 µs whose reading holds the host's launch time (a host timer, or events on an idle queue) are not held to it: of those, {} agree within {TOLERANCE_PCT}%, the largest difference {:.2}%",
                host.count, host.agree, host.worst
            ));
        }
        if parts.is_empty() {
            parts.push("no cell is 50 µs or longer".into());
        }
        format!("{} (judged {how})", parts.join("; "))
    }
}

/// Refuses two runs without a cell in common (by cell id: kernel, point and variant): a
/// comparison of them would say nothing, and "0 cells compared" reads as a pass.
pub fn common_cells(old: &Stored, new: &Stored) -> Result<usize> {
    let ids: std::collections::HashSet<&str> = old.records.iter().map(|r| r.id.as_str()).collect();
    let common: std::collections::HashSet<&str> = (new.records.iter())
        .map(|r| r.id.as_str())
        .filter(|id| ids.contains(id))
        .collect();
    if common.is_empty() {
        bail!(
            "{} ({}) and {} ({}) have no cell in common: nothing to compare\n  hint: compare two runs of one experiment (the same kernels, sweep points and variants)",
            old.dir.display(),
            old.meta.experiment_path.display(),
            new.dir.display(),
            new.meta.experiment_path.display()
        );
    }
    Ok(common.len())
}

/// `to` as seen from `from` (both folders), so the record survives a move of the whole tree.
pub fn relative_path(from: &Path, to: &Path) -> std::io::Result<PathBuf> {
    let (from, to) = (from.canonicalize()?, to.canonicalize()?);
    let (f, t): (Vec<Component>, Vec<Component>) =
        (from.components().collect(), to.components().collect());
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    Ok(out)
}

/// What `runner compare` says: its Markdown (for standard output), what it tells a CI
/// job, and why the new run cannot be vouched for (empty where it can).
pub struct Compared {
    pub markdown: String,
    pub gate: compare::Gate,
    pub incomplete: String,
}

/// `runner compare OLD NEW`, writing its JSON where asked.
pub fn run_compare(
    old: &Path,
    new: &Path,
    threshold_pct: f64,
    floor_us: f64,
    json: Option<&Path>,
) -> Result<Compared> {
    if !(threshold_pct > 0.0 && threshold_pct < 100.0) {
        bail!(
            "--threshold {threshold_pct}: give a percentage between 0 and 100, e.g. --threshold 2"
        );
    }
    if !(floor_us >= 0.0 && floor_us.is_finite()) {
        bail!("--floor {floor_us}: give microseconds, 0 or more, e.g. --floor 2");
    }
    let load = |dir: &Path| {
        analysis::load(dir).with_context(|| format!("{} is not a stored run", dir.display()))
    };
    let ((a, reduced_a), (b, reduced_b)) = (load(old)?, load(new)?);
    common_cells(&a, &b)?;
    let (a, b) = (Analysis::of(&a, reduced_a), Analysis::of(&b, reduced_b));
    let c = compare::compare(&a, &b, threshold_pct, floor_us)?;
    if let Some(path) = json {
        crate::files::write(path, serde_json::to_string_pretty(&c)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(Compared {
        markdown: markdown(&c, &old.display().to_string(), &new.display().to_string()),
        gate: c.gate(),
        incomplete: incomplete(&c),
    })
}

/// Why the new run cannot be vouched for: the old run's cells it lacks, and its cells that
/// did not end as their kernels expect; empty where neither.
fn incomplete(c: &compare::Comparison) -> String {
    const SHOWN: usize = 5;
    let list = |cells: Vec<String>| {
        let more = cells.len().saturating_sub(SHOWN);
        let shown = cells[..cells.len().min(SHOWN)].join(", ");
        match more {
            0 => shown,
            n => format!("{shown} and {n} more"),
        }
    };
    let mut why = Vec::new();
    let (damaged, missing): (Vec<String>, Vec<String>) =
        (c.only_old.iter().cloned()).partition(|id| c.damaged_new.contains(id));
    if !missing.is_empty() {
        why.push(format!(
            "{} cell(s) of the old run missing in the new one: {}",
            missing.len(),
            list(missing)
        ));
    }
    if !damaged.is_empty() {
        why.push(format!(
            "{} cell(s) of the old run damaged in the new one's folder (unreadable, left out): {}",
            damaged.len(),
            list(damaged)
        ));
    }
    if !c.unexpected_new.is_empty() {
        let cells = (c.unexpected_new.iter())
            .map(|(cell, word)| format!("{cell} ({word})"))
            .collect();
        why.push(format!(
            "{} cell(s) of the new run did not end as their kernels expect: {}",
            c.unexpected_new.len(),
            list(cells)
        ));
    }
    why.join("; ")
}

/// The comparison as a Markdown section: findings first, then the table.
fn markdown(c: &compare::Comparison, old: &str, new: &str) -> String {
    let mut out = format!("# {new} against {old}\n\n{}.\n", c.summary());
    for d in &c.run_differences {
        out.push_str(&format!("\n- Not like for like: {d}."));
    }
    for (what, cells) in [
        ("only in the old run", &c.only_old),
        ("only in the new run", &c.only_new),
    ] {
        if !cells.is_empty() {
            out.push_str(&format!("\n- Cells {what}: {}.", cells.join(", ")));
        }
    }
    for (cell, why) in &c.untrusted {
        out.push_str(&format!("\n- Not compared, {cell}: {why}."));
    }
    for (cell, word) in &c.unexpected_new {
        out.push_str(&format!(
            "\n- In the new run, {cell} did not end as its kernel expects: {word}."
        ));
    }
    out.push_str(
        "\n\nRatio = new median / old median of the cells' headline values; the interval is a 95% \
         percentile bootstrap over independent units (a cell's rounds or processes where it has \
         several, else blocks of consecutive samples); p is the two-sided Mann-Whitney U test on \
         the same units. A cell is slower or faster when its whole interval lies beyond the \
         threshold (the percentage, or the floor in µs where that is larger), the same when it \
         lies within it, and too noisy to tell otherwise (or with fewer than 3 units a side).\n\n\
         | cell | old | new | ratio [95% interval] | p | units (old/new) | verdict |\n\
         |---|---:|---:|---:|---:|---|---|\n",
    );
    for r in &c.cells {
        let unit = format::unit_for(
            [r.old_median_ns, r.new_median_ns],
            crate::experiment::Unit::Auto,
        );
        let note = if r.differs.is_empty() {
            String::new()
        } else {
            format!(" ({})", r.differs.join("; "))
        };
        out.push_str(&format!(
            "| {} | {} | {} | {:.4} [{:.4}, {:.4}] | {:.2e} | {} x {}/{} | {}{} |\n",
            r.cell,
            format::time(r.old_median_ns, unit),
            format::time(r.new_median_ns, unit),
            r.ratio,
            r.ratio_low,
            r.ratio_high,
            r.p_value,
            r.units,
            r.old_units,
            r.new_units,
            r.verdict.text(),
            note
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_that_holds_the_launch_time_is_told_apart_not_held_to_the_tolerance() {
        let mut judged = Judged::default();
        assert_eq!(judged.add(0.1, false, 0.1, false), "agrees in time");
        assert_eq!(
            judged.add(-0.5, true, -0.2, false),
            "⚠ differs by more than 0.3% in cycles"
        );
        assert_eq!(
            judged.add(-1.48, false, -1.48, true),
            "holds the launch time; differs by more than 0.3% in time"
        );
        assert_eq!(
            judged.add(0.2, false, 0.2, true),
            "holds the launch time; agrees in time"
        );
        assert_eq!(
            judged.summary(&["matmul"]),
            "1 of 2 cells of at least 50 µs that time the GPU's own work agree within 0.3%, \
             the largest difference among them 0.50%; 2 cells of at least 50 µs whose reading \
             holds the host's launch time (a host timer, or events on an idle queue) are not \
             held to it: of those, 1 agree within 0.3%, the largest difference 1.48% (judged \
             in SM cycles for `matmul` (whose time follows the SM clock: 1 of its 1 such cells \
             would agree in time), in time for the rest)"
        );
        assert_eq!(
            Judged::default().summary(&[]),
            "no cell is 50 µs or longer (judged in time)"
        );
    }

    #[test]
    fn relative_paths_climb_to_the_common_folder() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("reports/accuracy");
        let b = root.path().join("reports/accuracy-run1");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        assert_eq!(
            relative_path(&a, &b).unwrap(),
            PathBuf::from("../accuracy-run1")
        );
    }
}
