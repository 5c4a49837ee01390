//! The audit's method. Audited regions sit among a cell's timed regions (`worker::audit`):
//! the same launch, at positions drawn from a recorded seed, on inputs copied in just before
//! them, and checked. A kernel that cannot tell them from timed launches skips work in them
//! too and fails their check. One that can (it does all its work only on inputs it has not
//! seen) passes the check but is slower in them than in the decoys: regions staged the same
//! way with the inputs they already held, which the analysis sets against them.
//!
//! Cells that cannot hold audits among their timed launches (one launch per process, the
//! profiler's report, rotating buffer sets) get one audit launch after the timed ones,
//! judged by the fixed band of [`suspect`]: a weaker audit, which the record says.

use crate::experiment::knobs::timer::TimerKind;

/// Audited regions among a run's timed ones, and decoys beside them: enough for the
/// analysis's test, few enough to cost little.
pub const AUDITS_PER_RUN: usize = 4;
pub const DECOYS_PER_RUN: usize = 4;

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
}
