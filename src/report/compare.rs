//! A run against an earlier run of the same experiment: each cell's headline median in
//! both, their difference, and whether the cells long enough to judge agree within the
//! tolerance. `runner report DIR --compare EARLIER` records the earlier run in DIR, so
//! later renders compare the same way.

use super::format;
use crate::analysis::median;
use crate::experiment::Unit;
use crate::store::Stored;
use crate::verdict;
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
    pub agreement: String,
    /// This run's median over the earlier one's, with its 95% bootstrap interval.
    pub ratio: String,
    pub verdict: String,
}

/// Each cell's headline median (steady samples, or first launches where it takes none), by id.
pub fn headline_medians(s: &Stored) -> HashMap<String, f64> {
    verdict::headline_runs(s)
        .into_iter()
        .filter_map(|(id, runs)| Some((id, median(runs.into_values().flatten().collect())?)))
        .collect()
}

pub fn build(this: &Stored, earlier: &Stored, label: &str) -> Comparison {
    let (now, before) = (headline_medians(this), headline_medians(earlier));
    let verdicts = verdict::compare(
        earlier,
        this,
        verdict::DEFAULT_THRESHOLD_PCT,
        verdict::DEFAULT_FLOOR_US,
    );
    let by_cell: HashMap<&str, &verdict::CellComparison> = verdicts
        .cells
        .iter()
        .map(|c| (c.cell.as_str(), c))
        .collect();
    let unit = format::unit_for(now.values().copied(), Unit::Auto);
    let (mut judged, mut agree, mut worst) = (0, 0, 0.0f64);
    let rows = this
        .plan
        .cells
        .iter()
        .filter_map(|c| {
            let (a, b) = (*now.get(&c.id)?, *before.get(&c.id)?);
            let diff = (a - b) / b * 100.0;
            let agreement = if a < JUDGED_FROM_NS {
                "shorter than 50 µs".to_string()
            } else {
                judged += 1;
                worst = worst.max(diff.abs());
                if diff.abs() <= TOLERANCE_PCT {
                    agree += 1;
                    "agrees".to_string()
                } else {
                    format!("⚠ differs by more than {TOLERANCE_PCT}%")
                }
            };
            Some(CompareRow {
                cell: c.id.clone(),
                this: format::time(a, unit),
                earlier: format::time(b, unit),
                difference: format::percent(diff),
                agreement,
                ratio: by_cell
                    .get(c.id.as_str())
                    .map(|v| format!("{:.4} [{:.4}, {:.4}]", v.ratio, v.ratio_low, v.ratio_high))
                    .unwrap_or_default(),
                verdict: by_cell
                    .get(c.id.as_str())
                    .map(|v| v.verdict.text().to_string())
                    .unwrap_or_default(),
            })
        })
        .collect();
    Comparison {
        earlier: label.to_string(),
        summary: format!(
            "{agree} of {judged} cells of at least 50 µs agree within {TOLERANCE_PCT}%; the largest difference among them is {worst:.2}%"
        ),
        verdicts: verdicts.summary(),
        rows,
    }
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

/// `runner compare OLD NEW`: the Markdown on stdout, JSON where asked; Ok(false) when a
/// cell got slower beyond the threshold.
pub fn run_compare(
    old: &Path,
    new: &Path,
    threshold_pct: f64,
    floor_us: f64,
    json: Option<&Path>,
) -> Result<bool> {
    if !(threshold_pct > 0.0 && threshold_pct < 100.0) {
        bail!(
            "--threshold {threshold_pct}: give a percentage between 0 and 100, e.g. --threshold 2"
        );
    }
    if !(floor_us >= 0.0 && floor_us.is_finite()) {
        bail!("--floor {floor_us}: give microseconds, 0 or more, e.g. --floor 2");
    }
    let load = |dir: &Path| {
        Stored::load(dir).with_context(|| format!("{} is not a stored run", dir.display()))
    };
    let (a, b) = (load(old)?, load(new)?);
    let c = verdict::compare(&a, &b, threshold_pct, floor_us);
    print!(
        "{}",
        markdown(&c, &old.display().to_string(), &new.display().to_string())
    );
    if let Some(path) = json {
        std::fs::write(path, serde_json::to_string_pretty(&c)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(c.count(verdict::Verdict::Slower) == 0)
}

/// The comparison as a Markdown section: findings first, then the table.
fn markdown(c: &verdict::Comparison, old: &str, new: &str) -> String {
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
