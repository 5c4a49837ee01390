//! Numbers as a reader should see them: times with a unit, percentages with a sign.

use crate::experiment::Unit;

/// Formats nanoseconds in `unit`; `Auto` picks the unit per value and keeps 4 significant digits.
pub fn time(ns: f64, unit: Unit) -> String {
    if !ns.is_finite() {
        return "–".into();
    }
    let unit = match unit {
        Unit::Auto => match ns.abs() {
            x if x < 1e3 => Unit::Ns,
            x if x < 1e6 => Unit::Us,
            x if x < 1e9 => Unit::Ms,
            _ => Unit::S,
        },
        u => u,
    };
    let v = ns / unit.ns_per_unit();
    if v == 0.0 {
        return format!("0 {}", unit.symbol());
    }
    // Four significant digits (more decimals for a small value in a large unit).
    let digits = if unit == Unit::Ns {
        1
    } else {
        (3 - v.abs().max(1e-9).log10().floor() as i32).clamp(0, 6) as usize
    };
    format!("{v:.digits$} {}", unit.symbol())
}

/// A number with four significant digits (`1234`, `12.34`, `0.001234`).
pub fn number(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.digits$}")
}

/// The unit a table shows all its times in: `asked`, or for `Auto` the unit that suits
/// the median of the table's values (one unit per table, so columns compare at a glance).
pub fn unit_for(values: impl IntoIterator<Item = f64>, asked: Unit) -> Unit {
    if asked != Unit::Auto {
        return asked;
    }
    let mut v: Vec<f64> = values
        .into_iter()
        .filter(|x| x.is_finite() && *x != 0.0)
        .map(f64::abs)
        .collect();
    if v.is_empty() {
        return Unit::Us;
    }
    v.sort_by(f64::total_cmp);
    match v[v.len() / 2] {
        x if x < 1e3 => Unit::Ns,
        x if x < 1e6 => Unit::Us,
        x if x < 1e9 => Unit::Ms,
        _ => Unit::S,
    }
}

/// `+38.90%`
pub fn percent(p: f64) -> String {
    if !p.is_finite() {
        return "–".into();
    }
    format!("{p:+.2}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_unit_keeps_four_significant_digits() {
        assert_eq!(time(238_412.0, Unit::Auto), "238.4 µs");
        assert_eq!(time(15_518_000.0, Unit::Auto), "15.52 ms");
        assert_eq!(time(1_953_000.0, Unit::Auto), "1.953 ms");
        assert_eq!(time(5_800.0, Unit::Auto), "5.800 µs");
        assert_eq!(time(904.4, Unit::Auto), "904.4 ns");
        assert_eq!(time(2.5e9, Unit::Auto), "2.500 s");
    }

    #[test]
    fn a_table_takes_the_unit_of_its_median_value() {
        let u = unit_for([12_900.0, 46_400.0, 2_750_000.0], Unit::Auto);
        assert_eq!(u, Unit::Us);
        assert_eq!(time(2_750_000.0, u), "2750 µs");
        assert_eq!(time(864.0, u), "0.8640 µs");
        assert_eq!(unit_for([1.0], Unit::Ms), Unit::Ms);
        assert_eq!(
            time(300.0, Unit::Ms),
            "0.000300 ms",
            "a small value keeps its digits"
        );
    }

    #[test]
    fn fixed_unit_and_percent() {
        assert_eq!(time(293_000.0, Unit::Ms), "0.2930 ms");
        assert_eq!(percent(38.9), "+38.90%");
        assert_eq!(percent(-0.5), "-0.50%");
        assert_eq!(time(f64::NAN, Unit::Auto), "–");
    }
}
