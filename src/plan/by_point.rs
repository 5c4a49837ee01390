//! Values that follow the sweep, written by point: once where every point agrees, else
//! grouped by the points they hold at (`runner plan`'s kernels and buffers).

use crate::experiment::Point;

/// Groups of values listed in full; more are cut to their ends.
const MAX_GROUPS: usize = 4;

/// One value per point, written once where all agree, else as the values with the points
/// they hold at, named by the parameters that vary ("256 (n=1024), 4096 (n=16384 to
/// n=65536)"); more than a few groups are cut to their ends.
pub(super) fn by_point(points: &[Point], values: &[String]) -> String {
    listed(points, values, MAX_GROUPS)
}

/// As [`by_point`], every group listed: what `--verbose` shows.
pub(super) fn every_point(points: &[Point], values: &[String]) -> String {
    listed(points, values, usize::MAX)
}

fn listed(points: &[Point], values: &[String], max_groups: usize) -> String {
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        match groups.last_mut() {
            Some((_, end)) if values[*end] == *v => *end = i,
            _ => groups.push((i, i)),
        }
    }
    if groups.len() <= 1 {
        return values.first().cloned().unwrap_or_default();
    }
    let varying: Vec<usize> = (0..points[0].len())
        .filter(|&j| points.iter().any(|p| p[j].1 != points[0][j].1))
        .collect();
    let label = |p: &Point, of: &[usize]| {
        (of.iter())
            .map(|&j| format!("{}={}", p[j].0, p[j].1))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // A run of points is named by what holds over all of it (`dtype=f16`), else by its ends.
    let show = |&(start, end): &(usize, usize)| {
        let run = &points[start..=end];
        let held: Vec<usize> = (varying.iter().copied())
            .filter(|&j| run.iter().all(|p| p[j].1 == run[0][j].1))
            .collect();
        let at = match (start == end, held.is_empty()) {
            (true, _) => label(&points[start], &varying),
            (false, false) => label(&points[start], &held),
            (false, true) => format!(
                "{} to {}",
                label(&points[start], &varying),
                label(&points[end], &varying)
            ),
        };
        format!("{} ({at})", values[start])
    };
    if groups.len() <= max_groups {
        return groups.iter().map(show).collect::<Vec<_>>().join(", ");
    }
    format!(
        "{}, {}, ..., {} ({} values)",
        show(&groups[0]),
        show(&groups[1]),
        show(&groups[groups.len() - 1]),
        groups.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_differs_by_point_is_written_once_per_run_of_points() {
        let points: Vec<Point> = [1024i64, 2048, 4096, 8192]
            .iter()
            .map(|&n| vec![("m".to_string(), 3.into()), ("n".to_string(), n.into())])
            .collect();
        let text = |v: &[&str]| {
            let values: Vec<String> = v.iter().map(|s| s.to_string()).collect();
            by_point(&points, &values)
        };
        assert_eq!(text(&["256"; 4]), "256");
        assert_eq!(
            text(&["4", "8", "8", "16"]),
            "4 (n=1024), 8 (n=2048 to n=4096), 16 (n=8192)"
        );
        // A run over which one parameter holds is named by it.
        let typed: Vec<Point> = ["f16", "bf16"]
            .iter()
            .flat_map(|t| {
                [256i64, 1024].map(|c| {
                    let t = crate::experiment::SweepValue::Text(t.to_string());
                    vec![("dtype".to_string(), t), ("cols".to_string(), c.into())]
                })
            })
            .collect();
        let values: Vec<String> = ["k<__half>", "k<__half>", "k<bf16>", "k<bf16>"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            by_point(&typed, &values),
            "k<__half> (dtype=f16), k<bf16> (dtype=bf16)"
        );
        let many: Vec<Point> = (0..8i64)
            .map(|i| vec![("n".to_string(), i.into())])
            .collect();
        let values: Vec<String> = (0..8).map(|i| (i * 10).to_string()).collect();
        assert_eq!(
            by_point(&many, &values),
            "0 (n=0), 10 (n=1), ..., 70 (n=7) (8 values)"
        );
    }
}
