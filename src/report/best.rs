//! The tuning marker (`[report] best = "block"`): at each point of the other parameters, the
//! value of the tuned parameter whose median is lowest, per kernel and variant, marked in
//! the median and throughput tables.

use crate::experiment::{Experiment, Point};
use std::collections::HashMap;

/// The values of the parameters other than the tuned one, which a group of points shares.
type Others<'a> = Vec<(&'a str, String)>;

/// For each point, whether its median is the lowest among the points that differ from it
/// only in `param`. `medians[i]` is point `i`'s, `None` where its cell failed or did not
/// run: such a point never wins, and a group with fewer than two medians has no winner
/// (nothing was compared). Ties go to the first point.
pub fn lowest_over(points: &[Point], param: &str, medians: &[Option<f64>]) -> Vec<bool> {
    // Per value of the other parameters: its points' (index, median).
    let mut groups: HashMap<Others, Vec<(usize, f64)>> = HashMap::new();
    for (i, (point, median)) in points.iter().zip(medians).enumerate() {
        let others = point
            .iter()
            .filter(|(name, _)| name != param)
            .map(|(name, v)| (name.as_str(), v.to_string()))
            .collect();
        if let Some(m) = median {
            groups.entry(others).or_default().push((i, *m));
        }
    }
    let mut best = vec![false; points.len()];
    for contenders in groups.values().filter(|c| c.len() > 1) {
        if let Some((i, _)) = contenders.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
            best[*i] = true;
        }
    }
    best
}

/// A kernel's best cells: per variant, in the experiment's order, whether each point is
/// best; empty where the experiment tunes no parameter.
pub struct Marks(Vec<Vec<bool>>);

impl Marks {
    /// `median(kernel, point, variant)` is a cell's median, `None` where it failed.
    pub fn of(
        exp: &Experiment,
        k: usize,
        median: impl Fn(usize, &Point, &str) -> Option<f64>,
    ) -> Marks {
        let Some(param) = &exp.report.best else {
            return Marks(vec![]);
        };
        Marks(
            exp.variants
                .iter()
                .map(|v| {
                    let points = &exp.kernels[k].points;
                    let medians: Vec<Option<f64>> =
                        points.iter().map(|p| median(k, p, &v.name)).collect();
                    lowest_over(points, param, &medians)
                })
                .collect(),
        )
    }

    /// Variant `v`'s cell at point `i` as `text`, bold where it is best:
    /// `**1.234 µs** (best)`.
    pub fn show(&self, v: usize, i: usize, text: String) -> String {
        match self.0.get(v).and_then(|m| m.get(i)) {
            Some(true) => format!("**{text}** (best)"),
            _ => text,
        }
    }
}

/// The line under a marked table, saying what the marker compares.
pub fn note(exp: &Experiment) -> Option<String> {
    let param = exp.report.best.as_ref()?;
    Some(if exp.params.len() > 1 {
        format!(
            "best: the lowest median over `{param}` at each value of the other parameters, per variant."
        )
    } else {
        format!("best: the lowest median over `{param}`, per variant.")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: &crate::experiment::SweepValue) -> i64 {
        v.as_f64().unwrap() as i64
    }

    fn points(ns: &[i64], blocks: &[i64]) -> Vec<Point> {
        ns.iter()
            .flat_map(|&n| {
                blocks.iter().map(move |&b| {
                    vec![("n".to_string(), n.into()), ("block".to_string(), b.into())]
                })
            })
            .collect()
    }

    #[test]
    fn the_lowest_median_wins_at_each_value_of_the_other_parameters() {
        // n = 1: blocks 128, 256, 512; n = 2: the same.
        let p = points(&[1, 2], &[128, 256, 512]);
        let medians = [
            Some(3.0),
            Some(1.0),
            Some(2.0),
            Some(5.0),
            Some(6.0),
            Some(4.0),
        ];
        assert_eq!(
            lowest_over(&p, "block", &medians),
            [false, true, false, false, false, true]
        );
        // Over n instead: each block's lower n.
        assert_eq!(
            lowest_over(&p, "n", &medians),
            [true, true, true, false, false, false]
        );
    }

    #[test]
    fn failed_cells_never_win_and_a_lone_median_is_not_marked() {
        let p = points(&[1, 2], &[128, 256]);
        // n = 1: the 256 cell failed, which would have been fastest; n = 2: only one ran.
        let medians = [Some(3.0), None, None, Some(1.0)];
        assert_eq!(
            lowest_over(&p, "block", &medians),
            [false, false, false, false]
        );
        let medians = [Some(3.0), Some(2.0), None, Some(1.0)];
        assert_eq!(
            lowest_over(&p, "block", &medians),
            [false, true, false, false]
        );
    }

    #[test]
    fn each_variant_is_marked_apart_under_a_note_naming_the_parameter() {
        let text = "[experiment]\ntitle = \"t\"\n[sweep]\nn = [1, 2]\nblock = [128, 256]\n\
            [[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\n\
            [[variant]]\nname = \"hot\"\n[[variant]]\nname = \"cold\"\n[report]\nbest = \"block\"\n";
        let exp = Experiment::from_text(text).unwrap();
        // Hot: block 256 faster at both n; cold: block 128 faster, its n = 2 cell failed.
        let median = |_: usize, p: &Point, v: &str| match (v, int(&p[0].1), int(&p[1].1)) {
            ("hot", n, b) => Some((n * 1000 - b) as f64),
            (_, 2, 128) => None,
            (_, n, b) => Some((n * 1000 + b) as f64),
        };
        assert_eq!(
            Marks::of(&exp, 0, median).0,
            [[false, true, false, true], [true, false, false, false]]
        );
        assert_eq!(
            note(&exp).unwrap(),
            "best: the lowest median over `block` at each value of the other parameters, per variant."
        );
    }

    #[test]
    fn a_tie_goes_to_the_first_point_and_the_marker_is_bold() {
        let p = points(&[1], &[64, 128]);
        assert_eq!(
            lowest_over(&p, "block", &[Some(2.0), Some(2.0)]),
            [true, false]
        );
        let marks = Marks(vec![vec![false, true]]);
        assert_eq!(marks.show(0, 1, "1.234 µs".into()), "**1.234 µs** (best)");
        assert_eq!(marks.show(0, 0, "2.000 µs".into()), "2.000 µs");
        assert_eq!(
            Marks(vec![]).show(0, 1, "1.234 µs".into()),
            "1.234 µs",
            "no parameter tuned: nothing marked"
        );
    }
}
