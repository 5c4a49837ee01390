//! The audit's verdict. Audited regions sit among a cell's timed regions (`worker::audit`):
//! the same launch, at positions drawn from a recorded seed, on inputs staged for them, and
//! checked. A kernel that cannot tell them from timed launches skips work in them too and
//! fails their check. One that can (it does all its work only on inputs it has not seen)
//! passes the check, but is slower in them than in its timed neighbours: [`judge`] sets the
//! two against each other with a rank test of stated false-alarm rate.
//!
//! Cells that cannot hold audits among their timed launches (one launch per process, the
//! profiler's report, rotating buffer sets) get one audit launch after the timed ones,
//! judged by the fixed band of [`suspect`]: a weaker audit, which the record says.

use crate::experiment::knobs::timer::TimerKind;

/// Audited regions among a run's timed ones: enough for the rank test to reach
/// [`FALSE_ALARM`] from 10 timed samples on (1 / C(14, 4) < 0.001), few enough to cost little.
pub const AUDITS_PER_RUN: usize = 4;

pub use crate::protocol::AUDIT_MARGIN_SHARE as MARGIN_SHARE;
pub use crate::protocol::{AUDIT_FALSE_ALARM as FALSE_ALARM, AUDIT_MARGIN_NS as MARGIN_NS};

/// What the rank test found for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The chance, for an honest kernel, that the audited readings rank this high among the
    /// timed ones.
    pub p_value: f64,
    /// The smallest share of its work a kernel could skip in the timed launches alone and
    /// still be caught here: None where the samples are too few for the test to reach its
    /// false-alarm rate.
    pub detection_limit: Option<f64>,
    /// Why the run's reading is suspect, where it is.
    pub suspect: Option<String>,
}

/// Sets a run's audited readings against its timed ones (ns per launch), at a false-alarm
/// rate of `alpha`. The statistic is the rank of the fastest audited reading among all: under
/// an honest kernel every arrangement of the readings is as likely, so the chance that all
/// `k` audited ones lie among the `m` slowest of `n + k` is C(m, k) / C(n + k, k). A kernel
/// that skips work only when it can tell it is timed makes every audited reading slow.
/// Suspect: that chance is below `alpha`, and the audited median exceeds the timed one by
/// more than the margin. None where there is nothing to compare.
pub fn judge(timed: &[f64], audited: &[f64], alpha: f64) -> Option<Judgement> {
    let timed: Vec<f64> = timed.iter().copied().filter(|t| t.is_finite()).collect();
    let audited: Vec<f64> = audited.iter().copied().filter(|t| t.is_finite()).collect();
    let (n, k) = (timed.len(), audited.len());
    if n == 0 || k == 0 {
        return None;
    }
    let fastest_audit = audited.iter().copied().fold(f64::INFINITY, f64::min);
    let slower = timed.iter().filter(|&&t| t >= fastest_audit).count();
    let p_value = choose_ratio(k + slower, n + k, k);
    let median = crate::median::median(timed.clone()).expect("not empty");
    let audit_median = crate::median::median(audited.clone()).expect("not empty");
    let margin = (MARGIN_SHARE * median).max(MARGIN_NS);
    let mut descending = timed;
    descending.sort_by(|a, b| b.total_cmp(a));
    // The most timed readings the audited ones may leave above them and still be caught.
    let allowed = (0..n)
        .take_while(|&r| choose_ratio(k + r, n + k, k) < alpha)
        .last();
    let detection_limit = allowed.map(|r| {
        let needed = descending[r].max(median + margin);
        1.0 - median / needed
    });
    let suspect = (p_value < alpha && audit_median > median + margin).then(|| {
        format!(
            "suspect: {k} audited launches on new inputs, placed at random among the timed ones, read {:.3} µs (median) against the timed launches' {:.3} µs ({:.2}x); all {k} were slower than {} of the {n} timed readings (p = {:.1e} < {alpha}): the timed launches skipped work the audited ones did (a kernel that tells new inputs from the ones it has seen)",
            audit_median / 1e3,
            median / 1e3,
            audit_median / median,
            n - slower,
            p_value,
        )
    });
    Some(Judgement {
        p_value,
        detection_limit,
        suspect,
    })
}

/// C(m, k) / C(total, k): the chance that `k` readings drawn at random from `total` all lie
/// among a given `m`.
fn choose_ratio(m: usize, total: usize, k: usize) -> f64 {
    (0..k)
        .map(|i| m.saturating_sub(i) as f64 / (total - i) as f64)
        .product()
}

/// A post-loop audit launch's band: suspect where it took more than this many times the
/// reading...
pub const SUSPECT_RATIO: f64 = 2.0;
/// ...plus this much. A launch on its own meets a colder instruction cache, TLB and queue
/// than timed launches that follow one another, and the events' floor moves by about a
/// microsecond: a few-µs kernel may read twice as long alone without cheating.
pub const SUSPECT_SLACK_NS: f64 = 5_000.0;

/// The weaker audit's verdict: why a cell's reading (ns per launch) is suspect against one
/// audit launch after its timed ones, or None. It lets through any kernel that skips less
/// than half its work, which is why it is used only where audits cannot sit among the
/// timed launches. A host timer around an async launch reads only the enqueue, and is not
/// judged.
pub fn suspect(timer: TimerKind, reading_ns: f64, audit_ns: f64) -> Option<String> {
    let judged = timer != TimerKind::Host && reading_ns.is_finite() && audit_ns.is_finite();
    (judged && audit_ns > SUSPECT_RATIO * reading_ns + SUSPECT_SLACK_NS).then(|| {
        format!(
            "suspect: the timed launches read {:.3} µs, but one launch on new inputs took {:.3} µs ({:.1}x, more than {SUSPECT_RATIO}x + {} µs): the timed launches did not do the work the audit launch did (a result kept from earlier inputs, or work skipped once done)",
            reading_ns / 1e3,
            audit_ns / 1e3,
            audit_ns / reading_ns,
            SUSPECT_SLACK_NS / 1e3
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_far_below_its_audit_launch_is_suspect() {
        // The lazy-output matmul: 1.57 µs read, 46.6 µs when it has to compute.
        let why = suspect(TimerKind::Cupti, 1_570.0, 46_600.0).unwrap();
        assert!(
            why.contains("1.570 µs") && why.contains("46.600 µs"),
            "{why}"
        );
        // Within twice the reading plus 5 µs: a short kernel alone, a colder launch.
        assert!(suspect(TimerKind::Events, 1_000.0, 6_900.0).is_none());
        assert!(suspect(TimerKind::Events, 1_000.0, 7_100.0).is_some());
        assert!(suspect(TimerKind::Cupti, 100_000.0, 200_000.0).is_none());
        assert!(suspect(TimerKind::Cupti, 100_000.0, 210_000.0).is_some());
        // A host timer around an async launch reads the enqueue only: never judged.
        assert!(suspect(TimerKind::Host, 2_000.0, 500_000.0).is_none());
        // A reading still to come (the profiler's) is not judged here.
        assert!(suspect(TimerKind::Profiler, f64::NAN, 46_600.0).is_none());
    }

    /// Timed readings around `level` with a spread of ±0.5%.
    fn timed(level: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| level * (1.0 + 0.005 * ((i * 7 % 11) as f64 / 5.0 - 1.0)))
            .collect()
    }

    #[test]
    fn audits_slower_than_every_timed_reading_are_suspect() {
        // A kernel that skips a tenth of its work when timed: 315 µs timed, 350 audited.
        let j = judge(
            &timed(315e3, 20),
            &[350e3, 351e3, 349e3, 352e3],
            FALSE_ALARM,
        )
        .unwrap();
        // 1 / C(24, 4) = 1 / 10626.
        assert!((j.p_value - 1.0 / 10626.0).abs() < 1e-9, "{}", j.p_value);
        let why = j.suspect.unwrap();
        assert!(why.contains("1.11x") && why.contains("20 timed"), "{why}");
        // The limit: the audits must clear the slowest timed reading and the 2% margin.
        let limit = j.detection_limit.unwrap();
        assert!(limit > 0.019 && limit < 0.03, "{limit}");
    }

    #[test]
    fn honest_audits_among_the_timed_readings_are_not_suspect() {
        let t = timed(100e3, 50);
        let j = judge(&t, &[t[3], t[10], t[20], t[33]], FALSE_ALARM).unwrap();
        assert!(j.p_value > 0.01 && j.suspect.is_none(), "{j:?}");
    }

    #[test]
    fn a_difference_within_the_margin_is_not_suspect() {
        // All four audits above every timed reading, but by 1%: the written inputs' share.
        let j = judge(&timed(100e3, 50), &[101.6e3; 4], FALSE_ALARM).unwrap();
        assert!(j.p_value < FALSE_ALARM && j.suspect.is_none(), "{j:?}");
        // A 1 µs kernel: 0.3 µs is within the events' spread.
        let j = judge(&timed(1e3, 50), &[1.3e3; 4], FALSE_ALARM).unwrap();
        assert!(j.suspect.is_none(), "{j:?}");
    }

    #[test]
    fn too_few_samples_give_no_detection_limit() {
        // 1 / C(9, 4) = 1/126: above the false-alarm rate whatever the readings.
        let j = judge(&timed(100e3, 5), &[200e3; 4], FALSE_ALARM).unwrap();
        assert_eq!(j.detection_limit, None);
        assert!(j.suspect.is_none());
        assert!(judge(&[], &[1.0], FALSE_ALARM).is_none());
        assert!(judge(&[1.0], &[], FALSE_ALARM).is_none());
    }

    #[test]
    fn the_limit_grows_with_the_noise() {
        let quiet = judge(&timed(100e3, 100), &[100e3; 4], FALSE_ALARM).unwrap();
        let noisy: Vec<f64> = (0..100)
            .map(|i| 100e3 * (1.0 + 0.1 * ((i * 37 % 100) as f64 / 100.0)))
            .collect();
        let noisy = judge(&noisy, &[100e3; 4], FALSE_ALARM).unwrap();
        let (q, n) = (
            quiet.detection_limit.unwrap(),
            noisy.detection_limit.unwrap(),
        );
        assert!(q < 0.025 && n > 0.03, "{q} {n}");
    }
}
