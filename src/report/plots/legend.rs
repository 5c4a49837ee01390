//! Where a plot's legend goes: the corner of the plotting area with the fewest of its points
//! under it.

use plotters::prelude::SeriesLabelPosition;

/// A corner of the plotting area, for the legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Corner {
    UpperLeft,
    UpperRight,
    LowerLeft,
    LowerRight,
}

/// The corner whose legend box would cover the fewest of `points` (each as a fraction of the
/// plotting area's width and height from its lower left; `series` lines of legend), the
/// upper right on a tie: a legend in the middle of the right edge hid the ends of the lines
/// that ran there.
fn legend_corner(points: &[(f64, f64)], series: usize) -> Corner {
    let (w, h) = (0.4, (0.06 + 0.05 * series as f64).min(0.9));
    let covered = |corner: Corner| {
        let (left, low) = match corner {
            Corner::UpperLeft => (true, false),
            Corner::UpperRight => (false, false),
            Corner::LowerLeft => (true, true),
            Corner::LowerRight => (false, true),
        };
        (points.iter())
            .filter(|&&(x, y)| {
                let in_x = if left { x <= w } else { x >= 1.0 - w };
                let in_y = if low { y <= h } else { y >= 1.0 - h };
                in_x && in_y
            })
            .count()
    };
    [
        Corner::UpperRight,
        Corner::UpperLeft,
        Corner::LowerRight,
        Corner::LowerLeft,
    ]
    .into_iter()
    .min_by_key(|&c| covered(c))
    .expect("four corners")
}

/// Where plotters puts a legend in `corner`.
fn legend_position(corner: Corner) -> SeriesLabelPosition {
    match corner {
        Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
        Corner::UpperRight => SeriesLabelPosition::UpperRight,
        Corner::LowerLeft => SeriesLabelPosition::LowerLeft,
        Corner::LowerRight => SeriesLabelPosition::LowerRight,
    }
}

/// Where `v` lies in `range` as drawn (on a log axis, by its log), from 0 to 1.
fn fraction(v: f64, range: &std::ops::Range<f64>, log: bool) -> f64 {
    let at = |x: f64| if log { x.ln() } else { x };
    let (lo, hi) = (at(range.start), at(range.end));
    match hi > lo {
        true => (at(v) - lo) / (hi - lo),
        false => 0.5,
    }
}

/// Where the legend of `series` lines goes: the corner with the fewest of their `points`
/// under it, each placed as drawn on its axes.
pub(super) fn legend_for(
    (points, series): (impl Iterator<Item = (f64, f64)>, usize),
    (x_drawn, log_x): (&std::ops::Range<f64>, bool),
    (y_drawn, log_y): (&std::ops::Range<f64>, bool),
) -> SeriesLabelPosition {
    let placed: Vec<(f64, f64)> = points
        .map(|(x, y)| (fraction(x, x_drawn, log_x), fraction(y, y_drawn, log_y)))
        .collect();
    legend_position(legend_corner(&placed, series))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legend_goes_to_the_corner_with_the_fewest_points_under_it() {
        // Lines rising to the upper right: the upper left is empty.
        let rising = [(0.0, 0.1), (0.5, 0.5), (1.0, 0.95), (0.95, 0.9)];
        assert_eq!(legend_corner(&rising, 4), Corner::UpperLeft);
        // Lines falling from the upper left: the upper right is empty.
        let falling = [(0.0, 0.95), (0.5, 0.5), (1.0, 0.1)];
        assert_eq!(legend_corner(&falling, 4), Corner::UpperRight);
        // Nothing anywhere: the upper right.
        assert_eq!(legend_corner(&[], 2), Corner::UpperRight);
    }
}
