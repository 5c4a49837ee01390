//! A plot's axes: where sizes that double go on a log axis, and the ticks of a log one.

use crate::experiment::expr::significant;

/// How a plot's x axis is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XScale {
    Linear,
    /// Log where the x values grow geometrically (sizes that double), ticked at each.
    LogIfGeometric,
    /// Log, ticked at 1, 2 and 5 of each decade (a roofline's intensities).
    Log,
}

/// Sweep values that grow by steps of a quarter or more (sizes that double, or go 256, 384,
/// 512, 768): a log axis spaces them evenly, where a linear one crowds the small ones into a
/// corner (0-1000 of a 256-4096 sweep held five of its seven points).
pub(super) fn geometric(xs: &[f64]) -> bool {
    xs.len() >= 3 && xs[0] > 0.0 && xs.windows(2).all(|w| w[1] >= 1.25 * w[0])
}

/// Ticks at 1, 2 and 5 of each decade within `lo..hi` (a log axis's own decades alone left
/// a plot of 6-70 µs with no tick among its points).
pub(super) fn decade_ticks(lo: f64, hi: f64) -> Vec<f64> {
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
pub(super) fn tick(v: f64) -> String {
    significant(v, 3)
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
