//! Methods in words: a variant against another, a method against its reference, a peer
//! program against its variant.

use super::words::{against, count, listed, signed_pct, spot, time, MAX_SENTENCE};
use crate::analysis::agreement::{TOLERANCE_FRACTION, TOLERANCE_NS};
use crate::analysis::findings::{Bias, Difference, PeerAgreement, Reading, ALIKE_FRACTION};
use crate::experiment::Unit;
use crate::report::format;

/// A variant against another.
pub(super) fn difference(d: &Difference) -> String {
    let (lo, hi) = (d.lowest.1, d.highest.1);
    let range = if d.cells == 1 || signed_pct(lo) == signed_pct(hi) {
        signed_pct(hi)
    } else {
        format!("{} to {}", signed_pct(lo), signed_pct(hi))
    };
    let largest = if lo.abs() > hi.abs() {
        &d.lowest.0
    } else {
        &d.highest.0
    };
    let times = against(largest.ns, largest.against_ns.unwrap_or(f64::NAN));
    // One cell: where it is, then the times; more: how many, then where the largest is.
    let alike = lo >= -ALIKE_FRACTION && hi <= ALIKE_FRACTION;
    let (a, b, at) = (&d.a, &d.b, spot(&largest.at));
    let within = ALIKE_FRACTION * 100.0;
    let mut text = match (d.cells, alike) {
        (1, true) => format!("`{a}` and `{b}` agree within {within}% for {at}: {range}, {times}"),
        (1, false) => format!("`{a}` reads {range} against `{b}` for {at}: {times}"),
        (n, true) => format!(
            "`{a}` and `{b}` agree within {within}% over {n} cells: {range}; the largest is for {at}: {times}"
        ),
        (n, false) => format!(
            "`{a}` reads {range} against `{b}` over {n} cells; the largest is for {at}: {times}"
        ),
    };
    // What else the sentence may say while it stays under MAX_SENTENCE: why a flushed
    // variant reads faster than a hot one first, then what sets the two variants apart
    // (written next to them).
    let why = d.cold_faster.map(|(n, read)| {
        let why = match read {
            true => ": a read flush leaves L2 clean, a hot launch writes back the dirty lines of the one before",
            false => "",
        };
        format!("; flushed reads faster than hot at {}{why}", count(n, "cell"))
    });
    let (sets_a, sets_b) = &d.differs;
    let apart = (!sets_a.is_empty()).then(|| {
        let against = match sets_b.is_empty() {
            true => String::new(),
            false => format!(", against {}", sets_b.join("; ")),
        };
        format!(" (`{a}`: {}{against})", sets_a.join("; "))
    });
    let length = |t: &Option<String>| t.as_ref().map_or(0, |t| t.chars().count());
    let why = why.filter(|w| text.chars().count() + w.chars().count() < MAX_SENTENCE);
    let apart =
        apart.filter(|a| text.chars().count() + length(&why) + a.chars().count() < MAX_SENTENCE);
    text += &apart.unwrap_or_default();
    text += &why.unwrap_or_default();
    text + "."
}

/// A method against its reference.
pub(super) fn bias(b: &Bias) -> String {
    let (within, outside, n) = (b.within, b.cells - b.within, b.cells);
    let head = match (within, outside) {
        (_, 0) => format!(
            "is within {} of `{}` at all {}",
            tolerance(),
            b.reference,
            count(n, "cell")
        ),
        (0, _) => format!(
            "is outside {} of `{}` at all {}",
            tolerance(),
            b.reference,
            count(n, "cell")
        ),
        (w, o) if w >= o => format!(
            "is within {} of `{}` at {w} of {n} cells",
            tolerance(),
            b.reference
        ),
        (_, o) => format!(
            "is outside {} of `{}` at {o} of {n} cells",
            tolerance(),
            b.reference
        ),
    };
    format!(
        "`{}` {head}: from {} to {}.",
        b.method,
        bias_at(&b.lowest),
        bias_at(&b.highest)
    )
}

/// The methods within tolerance of their reference at every cell.
pub(super) fn bias_within(methods: &[Bias], of: usize) -> String {
    let each: Vec<String> = (methods.iter())
        .map(|b| {
            let d = |r: &Reading| r.ns - r.against_ns.unwrap_or(r.ns);
            format!(
                "`{}` ({} against `{}`)",
                b.method,
                signed_range(d(&b.lowest), d(&b.highest)),
                b.reference
            )
        })
        .collect();
    format!(
        "{} of {of} methods are within {} of their reference at every cell: {}.",
        methods.len(),
        tolerance(),
        listed(&each)
    )
}

/// A peer program against the variant it stands beside.
pub(super) fn peer(p: &PeerAgreement) -> String {
    let tolerance = if p.first_launch {
        "max(10%, 20 µs)"
    } else {
        "max(1%, 2 µs)"
    };
    let r = &p.largest;
    let theirs = r.against_ns.unwrap_or(r.ns);
    let (verb, n) = match p.agree {
        0 => (
            "differs from",
            format!("beyond {tolerance} at all {}", count(p.points, "point")),
        ),
        a => (
            "agrees with",
            format!("within {tolerance} at {a} of {}", count(p.points, "point")),
        ),
    };
    format!(
        "`{}` {verb} the peer `{}` ({}) {n}; the largest difference is {}, for {}: {}.",
        p.variant,
        p.peer,
        p.label,
        signed_pct((r.ns - theirs) / theirs),
        spot(&r.at),
        against(r.ns, theirs)
    )
}

/// `-0.4300 µs (-0.89%) for `matmul` at n=512`: a reading's bias against what it is set
/// against.
fn bias_at(r: &Reading) -> String {
    let reference = r.against_ns.unwrap_or(r.ns);
    let ns = r.ns - reference;
    format!(
        "{}{} ({}) for {}",
        if ns < 0.0 { "-" } else { "+" },
        time(ns.abs()),
        signed_pct(ns / reference),
        spot(&r.at)
    )
}

fn tolerance() -> String {
    format!(
        "max({}%, {} µs)",
        TOLERANCE_FRACTION * 100.0,
        TOLERANCE_NS / 1e3
    )
}

/// Two signed times in one unit, joined by `to`: `-1.725 µs to +0.7534 µs`.
fn signed_range(lo: f64, hi: f64) -> String {
    let unit = format::unit_for([lo, hi], Unit::Auto);
    let signed = |ns: f64| {
        let sign = if ns < 0.0 { "-" } else { "+" };
        format!("{sign}{}", format::time(ns.abs(), unit))
    };
    format!("{} to {}", signed(lo), signed(hi))
}

#[cfg(test)]
mod tests {
    use super::super::tests::reading;
    use super::*;

    #[test]
    fn a_difference_says_why_a_flush_reads_faster_and_what_differs_while_it_is_short() {
        let d = Difference {
            a: "cold".into(),
            b: "hot".into(),
            cells: 5,
            lowest: (
                reading("copy/block=1024/cold", 217_000.0, Some(223_700.0)),
                -0.030,
            ),
            highest: (
                reading("copy/block=64/cold", 220_000.0, Some(225_900.0)),
                -0.026,
            ),
            differs: (
                vec!["L2 flushed before each timed launch: 100.0 MiB by a read kernel".into()],
                vec!["hot L2".into()],
            ),
            cold_faster: Some((5, true)),
        };
        let text = difference(&d);
        assert!(text.starts_with("`cold` reads -3.0% to -2.6% against `hot` over 5 cells; the largest is for `copy` at block=1024: 217.0 µs against 223.7 µs; flushed reads faster than hot at 5 cells: a read flush leaves L2 clean"), "{text}");
        assert!(
            !text.contains("by a read kernel"),
            "over {MAX_SENTENCE} characters: {text}"
        );
        let short = Difference {
            cold_faster: None,
            ..d
        };
        assert!(difference(&short).ends_with("(`cold`: L2 flushed before each timed launch: 100.0 MiB by a read kernel, against hot L2)."));
    }

    fn bias_of(within: usize) -> Bias {
        Bias {
            method: "events".into(),
            reference: "cupti".into(),
            cells: 3,
            within,
            lowest: reading("k/n=1/events", 1_500.0, Some(2_000.0)),
            highest: reading("k/n=2/events", 8_000.0, Some(2_000.0)),
        }
    }

    #[test]
    fn a_bias_says_within_or_outside_by_the_majority_of_cells() {
        assert_eq!(
            bias(&bias_of(1)),
            "`events` is outside max(1%, 0.5 µs) of `cupti` at 2 of 3 cells: from -500.0 ns (-25%) for `k` at n=1 to +6.000 µs (+300%) for `k` at n=2."
        );
        assert!(bias(&bias_of(3)).contains("is within max(1%, 0.5 µs) of `cupti` at all 3 cells"));
        assert_eq!(
            bias_within(&[bias_of(3)], 5),
            "1 of 5 methods are within max(1%, 0.5 µs) of their reference at every cell: `events` (-500.0 ns to +6000.0 ns against `cupti`)."
        );
    }

    #[test]
    fn a_peer_names_its_tolerance_and_largest_difference() {
        let p = PeerAgreement {
            peer: "post-03".into(),
            label: "post's program".into(),
            variant: "no-warmup".into(),
            points: 2,
            agree: 2,
            first_launch: true,
            largest: reading("matmul/n=512/no-warmup", 225_200.0, Some(215_400.0)),
        };
        assert_eq!(
            peer(&p),
            "`no-warmup` agrees with the peer `post-03` (post's program) within max(10%, 20 µs) at 2 of 2 points; the largest difference is +4.5%, for `matmul` at n=512: 225.2 µs against 215.4 µs."
        );
    }
}
