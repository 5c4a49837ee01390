//! Two runs of an experiment matched cell by cell: a full join, by cell id, of each run's
//! cells that have a headline reading. `runner compare` and the report's comparison with an
//! earlier run both start from it.

use crate::analysis::Analysis;
use polars::prelude::*;

/// The cells both runs read, as (earlier run's plan index, later run's plan index) in the
/// later run's order, and the ids each run alone read, sorted.
#[derive(Debug, PartialEq)]
pub struct Matched {
    pub both: Vec<(usize, usize)>,
    pub only_old: Vec<String>,
    pub only_new: Vec<String>,
}

/// Run `a`'s cells that have a headline reading: their ids and, under `side`, their index
/// in its plan.
fn read(a: &Analysis, side: &str) -> PolarsResult<DataFrame> {
    let (ids, index): (Vec<&str>, Vec<u32>) = (a.run.plan.cells.iter())
        .filter(|c| a.reduced.units.contains_key(&c.index))
        .map(|c| (c.id.as_str(), c.index as u32))
        .unzip();
    DataFrame::new_infer_height(vec![
        Column::new("cell".into(), ids),
        Column::new(side.into(), index),
    ])
}

pub fn by_cell(old: &Analysis, new: &Analysis) -> PolarsResult<Matched> {
    // A plan's ids are unique: a join that finds one twice is refused, not multiplied.
    let mut args = JoinArgs::new(JoinType::Full).with_coalesce(JoinCoalesce::CoalesceColumns);
    args.validation = JoinValidation::OneToOne;
    let joined = read(old, "old")?.join(&read(new, "new")?, ["cell"], ["cell"], args, None)?;
    let (ids, o, n) = (
        joined.column("cell")?.str()?,
        joined.column("old")?.u32()?,
        joined.column("new")?.u32()?,
    );
    let mut m = Matched {
        both: Vec::new(),
        only_old: Vec::new(),
        only_new: Vec::new(),
    };
    for ((id, o), n) in ids.iter().zip(o.iter()).zip(n.iter()) {
        let id = id.unwrap_or_default().to_string();
        match (o, n) {
            (Some(o), Some(n)) => m.both.push((o as usize, n as usize)),
            (Some(_), None) => m.only_old.push(id),
            (None, Some(_)) => m.only_new.push(id),
            (None, None) => {}
        }
    }
    m.both.sort_unstable_by_key(|&(_, n)| n);
    m.only_old.sort();
    m.only_new.sort();
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn cells_match_by_id_and_the_rest_fall_to_one_side() {
        let dir = Path::new("reports/statistics");
        let ((old, old_reduced), (new, mut new_reduced)) = (
            crate::analysis::load(dir).unwrap(),
            crate::analysis::load(dir).unwrap(),
        );
        let read: Vec<usize> = (new.plan.cells.iter())
            .filter(|c| new_reduced.units.contains_key(&c.index))
            .map(|c| c.index)
            .collect();
        assert!(read.len() >= 3);
        // The later run lost its second cell's reading.
        new_reduced.units.remove(&read[1]);
        let (a, b) = (
            Analysis::of(&old, old_reduced),
            Analysis::of(&new, new_reduced),
        );
        let m = by_cell(&a, &b).unwrap();
        let kept: Vec<(usize, usize)> = (read.iter().enumerate())
            .filter(|&(i, _)| i != 1)
            .map(|(_, &c)| (c, c))
            .collect();
        assert_eq!(m.both, kept, "in the later run's order");
        assert_eq!(m.only_old, vec![new.plan.cells[read[1]].id.clone()]);
        assert!(m.only_new.is_empty());
    }
}
