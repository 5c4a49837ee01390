//! A plot's axes: where sizes that double go on a log axis, the ticks of a log one, and the
//! labels of each.

use crate::experiment::expr::significant;
use std::ops::Range;

/// How a plot's x axis is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XScale {
    Linear,
    /// Log where the x values grow geometrically (sizes that double), ticked at each.
    LogIfGeometric,
    /// Log, ticked at 1, 2 and 5 of each decade (a roofline's intensities).
    Log,
}

/// A line plot's axes: which is a log one, the ranges drawn, and a log axis's ticks.
pub(super) struct Axes {
    pub log_x: bool,
    pub log_y: bool,
    pub x: Range<f64>,
    pub y: Range<f64>,
    pub x_ticks: Vec<f64>,
    pub y_ticks: Vec<f64>,
}

impl Axes {
    /// The axes of lines through `xs` (sorted, each once) within `bounds`: a log y axis where
    /// the values span more than a decade, the x axis as `x_scale` asks (a log one ticked at
    /// each x value, or for `Log` at 1, 2 and 5 of each decade).
    pub fn of(xs: &[f64], x_scale: XScale, bounds: ((f64, f64), (f64, f64))) -> Axes {
        let ((x0, x1), (y0, y1)) = bounds;
        let log_y = y0 > 0.0 && y1 / y0 > 10.0;
        let pad = ((y1 - y0) * 0.08).max(y1.abs() * 0.01).max(1e-9);
        let (log_x, x_ticks) = match x_scale {
            XScale::Linear => (false, xs.to_vec()),
            XScale::LogIfGeometric => (geometric(xs), xs.to_vec()),
            XScale::Log => (x0 > 0.0, decade_ticks(x0 / 1.15, x1 * 1.15)),
        };
        Axes {
            log_x,
            log_y,
            x: if log_x { x0 / 1.15..x1 * 1.15 } else { x0..x1 },
            y: if log_y {
                y0 * 0.8..y1 * 1.25
            } else {
                (y0 - pad)..(y1 + pad)
            },
            x_ticks,
            y_ticks: decade_ticks(y0 * 0.8, y1 * 1.25),
        }
    }

    /// An x tick's label: a whole number as it is; else as its axis's other ticks are.
    pub fn x_label(&self, x: f64) -> String {
        match (x.fract() == 0.0, self.log_x) {
            (true, _) => format!("{x:.0}"),
            (false, true) => tick(x),
            (false, false) => linear_tick(x, self.x.end - self.x.start),
        }
    }

    /// A y tick's label: on a log axis, 1, 2 and 5 of a decade; on a linear one, to the
    /// decimal the ticks plotters spaces differ in.
    pub fn y_label(&self, y: f64) -> String {
        match self.log_y {
            true => tick(y),
            false => linear_tick(y, self.y.end - self.y.start),
        }
    }
}

/// Sweep values that grow by steps of a quarter or more (sizes that double, or go 256, 384,
/// 512, 768): a log axis spaces them evenly, where a linear one crowds the small ones into a
/// corner (0-1000 of a 256-4096 sweep held five of its seven points).
fn geometric(xs: &[f64]) -> bool {
    xs.len() >= 3 && xs[0] > 0.0 && xs.windows(2).all(|w| w[1] >= 1.25 * w[0])
}

/// Ticks at 1, 2 and 5 of each decade within `lo..hi` (a log axis's own decades alone left
/// a plot of 6-70 µs with no tick among its points).
fn decade_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    if !(lo > 0.0 && lo < hi && hi.is_finite()) {
        return ticks;
    }
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let t = m * decade;
            if (lo..=hi).contains(&t) {
                ticks.push(t);
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// A tick's label: three significant digits, no more than it needs (`20`, `0.5`, `1500`).
fn tick(v: f64) -> String {
    significant(v, 3)
}

/// A linear axis's tick label over a span of `span`: to the decimal that tells ticks a
/// fiftieth of it apart, no trailing zeros (three significant digits had labelled a ratio's
/// ticks 1.005 and 1.01 both `1.01`, and 0.9999... `1`).
fn linear_tick(v: f64, span: f64) -> String {
    let step = span.abs() / 50.0;
    let decimals = match step > 0.0 && step.is_finite() {
        true => (-step.log10().floor()).clamp(0.0, 12.0) as usize,
        false => return tick(v),
    };
    let text = format!("{v:.decimals$}");
    let text = match text.contains('.') {
        true => text.trim_end_matches('0').trim_end_matches('.'),
        false => &text,
    };
    match text {
        "-0" => "0".to_string(),
        t => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_axis_ticks_each_decade_at_one_two_and_five() {
        assert_eq!(decade_ticks(4.8, 87.5), [5.0, 10.0, 20.0, 50.0]);
        assert_eq!(decade_ticks(150.0, 1200.0), [200.0, 500.0, 1000.0]);
        // No decades to tick from zero, or to infinity.
        assert!(decade_ticks(0.0, 10.0).is_empty());
        assert!(decade_ticks(1.0, f64::INFINITY).is_empty());
        assert_eq!(tick(20.0), "20");
        assert_eq!(tick(0.5), "0.5");
        assert_eq!(tick(1500.0), "1500");
    }

    #[test]
    fn a_linear_axis_labels_each_tick_apart_from_its_neighbours() {
        // A ratio near 1: 0.975 to 1.013.
        let labels: Vec<String> = [0.975, 0.995, 1.0, 1.005, 1.01]
            .iter()
            .map(|&v| linear_tick(v, 0.038))
            .collect();
        assert_eq!(labels, ["0.975", "0.995", "1", "1.005", "1.01"]);
        assert_eq!(linear_tick(1500.0, 2000.0), "1500");
        assert_eq!(linear_tick(7.5, 20.0), "7.5");
        // A zero that arithmetic left a residue of, and one below it.
        assert_eq!(linear_tick(2.7e-17, 1.0), "0");
        assert_eq!(linear_tick(-1e-17, 1.0), "0");
        assert_eq!(linear_tick(3.0, 0.0), "3");
    }

    #[test]
    fn sizes_that_double_go_on_a_log_axis_and_a_few_close_ones_do_not() {
        assert!(geometric(&[1024.0, 2048.0, 4096.0, 8192.0]));
        assert!(geometric(&[256.0, 512.0, 1024.0]));
        assert!(geometric(&[
            256.0, 384.0, 512.0, 768.0, 1024.0, 2048.0, 4096.0
        ]));
        assert!(!geometric(&[100.0, 120.0, 140.0]));
        assert!(!geometric(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
        assert!(!geometric(&[0.0, 2.0, 4.0]));
        assert!(!geometric(&[1.0, 2.0]));
    }
}
