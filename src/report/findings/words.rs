//! The words the findings' sentences share: times, shares and signed percentages as the tables
//! show them, counts, places and lists. A leaf of the folder, so that the sentences of each
//! kind and the front that dispatches to them both import it.

use crate::analysis::findings::NamedCell;
use crate::experiment::Unit;
use crate::report::format;

/// At most this many cells a finding lists by name.
const MAX_LISTED: usize = 4;

/// The longest a sentence grows by what it may leave out, in characters.
pub(super) const MAX_SENTENCE: usize = 300;

pub(super) fn time(ns: f64) -> String {
    format::time(ns, Unit::Auto)
}

/// Two times in the smaller one's unit (`116.5 µs against 1449 µs`), or each in its own
/// where one is over ten times the other (`35.29 ms against 603.6 µs`).
pub(super) fn against(ns: f64, other: f64) -> String {
    let (lo, hi) = (ns.min(other), ns.max(other));
    let unit = match hi / lo > 10.0 {
        true => Unit::Auto,
        false => format::unit_for([lo], Unit::Auto),
    };
    format!(
        "{} against {}",
        format::time(ns, unit),
        format::time(other, unit)
    )
}

/// A fraction as a signed percentage with two significant digits or more: `+0.17%`,
/// `-4.5%`, `+360%`.
pub(super) fn signed_pct(fraction: f64) -> String {
    let p = fraction * 100.0;
    let decimals = match p.abs() {
        x if x < 1.0 => 2,
        x if x < 10.0 => 1,
        _ => 0,
    };
    format!("{p:+.decimals$}%")
}

/// A share as a percentage: `89%`, `4.5%`.
pub(super) fn share(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// A speed-up (baseline / kernel) as it reads: `1.52x faster`, `1.10x slower`.
pub(super) fn speed(ratio: f64) -> String {
    crate::report::kernels::speedup(1.0, ratio)
}

/// A count rounded up to two significant digits, its thousands apart: `1,100`, `90,000`,
/// `45`: for a bound that errs high anyway.
pub(super) fn rounded_up(n: u64) -> String {
    let step = 10u64.pow((n.max(1).ilog10()).saturating_sub(1));
    let digits = n.div_ceil(step).saturating_mul(step).to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count with its noun: `1 cell`, `3 cells`.
pub(super) fn count(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// Where a cell is: `at n=512 (hot)`, or `under hot` without a sweep; with its kernel
/// first where asked: `` `matmul` at n=512 (hot) ``.
pub(super) fn place(at: &NamedCell, kernel: bool) -> String {
    let k = if kernel {
        format!("`{}` ", at.kernel)
    } else {
        String::new()
    };
    match at.point.as_str() {
        "" => format!("{k}under {}", at.variant),
        p => format!("{k}at {p} ({})", at.variant),
    }
}

/// A kernel at a point, without the variant: `` `matmul` at n=512 ``.
pub(super) fn spot(at: &NamedCell) -> String {
    match at.point.as_str() {
        "" => format!("`{}`", at.kernel),
        p => format!("`{}` at {p}", at.kernel),
    }
}

/// `a, b, c, d, …` of at most [`MAX_LISTED`].
pub(super) fn listed(items: &[String]) -> String {
    let mut shown: Vec<String> = items.iter().take(MAX_LISTED).cloned().collect();
    if items.len() > MAX_LISTED {
        shown.push("…".into());
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::tests::reading;
    use super::*;

    #[test]
    fn numbers_read_as_the_tables_show_them() {
        assert_eq!(signed_pct(0.0017), "+0.17%");
        assert_eq!(signed_pct(-0.045), "-4.5%");
        assert_eq!(signed_pct(3.6), "+360%");
        assert_eq!((share(0.891), share(0.028)), ("89%".into(), "2.8%".into()));
        assert_eq!(against(216_500.0, 1_449_000.0), "216.5 µs against 1449 µs");
        assert_eq!(against(35.29e6, 603_600.0), "35.29 ms against 603.6 µs");
        assert_eq!(speed(0.5), "2.00x slower");
        // A bound that errs high, rounded up.
        let bounds = [7, 45, 100, 1_098, 89_637, 1_000_001].map(rounded_up);
        assert_eq!(bounds, ["7", "45", "100", "1,100", "90,000", "1,100,000"]);
        let cells: Vec<String> = (1..=6).map(|i| i.to_string()).collect();
        assert_eq!(listed(&cells), "1, 2, 3, 4, …");
        let at = reading("k//hot", 1.0, None).at;
        assert_eq!(
            (place(&at, true), spot(&at)),
            ("`k` under hot".into(), "`k`".into())
        );
    }
}
