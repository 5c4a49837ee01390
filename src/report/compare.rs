//! A run against an earlier run of the same experiment: each cell's headline median in
//! both, their difference, and whether the cells long enough to judge agree within the
//! tolerance. `runner report DIR --compare EARLIER` records the earlier run in DIR, so
//! later renders compare the same way.

use super::format;
use crate::analysis::median;
use crate::experiment::Unit;
use crate::plan::Headline;
use crate::store::Stored;
use crate::verdict;
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
    let mut times: HashMap<u32, Vec<f64>> = HashMap::new();
    for i in 0..s.samples.cell.len() {
        let cell = &s.plan.cells[s.samples.cell[i] as usize];
        if s.samples.first[i] == (cell.headline() == Headline::First) {
            times
                .entry(s.samples.cell[i])
                .or_default()
                .push(s.samples.time_ns[i]);
        }
    }
    times
        .into_iter()
        .filter_map(|(c, t)| Some((s.plan.cells[c as usize].id.clone(), median(t)?)))
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
