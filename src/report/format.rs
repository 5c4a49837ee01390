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
    let digits = if unit == Unit::Ns {
        1
    } else {
        (3 - v.abs().max(1e-9).log10().floor() as i32).clamp(0, 3) as usize
    };
    format!("{v:.digits$} {}", unit.symbol())
}

/// `+38.90%`
pub fn percent(p: f64) -> String {
    if !p.is_finite() {
        return "–".into();
    }
    format!("{p:+.2}%")
}

/// A value the way a seed published it, in its unit.
pub fn published(v: f64, unit: Unit) -> String {
    format!("{v} {}", unit.symbol())
}

pub fn bytes(b: i64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if b as f64 >= 1024.0 * MIB {
        format!("{:.1} GiB", b as f64 / 1024.0 / MIB)
    } else {
        format!("{:.1} MiB", b as f64 / MIB)
    }
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
    fn fixed_unit_and_percent() {
        assert_eq!(time(293_000.0, Unit::Ms), "0.293 ms");
        assert_eq!(percent(38.9), "+38.90%");
        assert_eq!(percent(-0.5), "-0.50%");
        assert_eq!(time(f64::NAN, Unit::Auto), "–");
    }
}
