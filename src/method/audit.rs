//! The audit's verdict. After a cell's timed samples, one more launch of its kernel runs on
//! new inputs (`worker::audit`), timed as the cell's own timer would see the kernel; a
//! reading far faster than that launch is suspect: the timed launches did not do the work
//! the audit launch did.

use crate::experiment::knobs::timer::TimerKind;

/// A reading is suspect where the audit launch took more than this many times as long...
pub const SUSPECT_RATIO: f64 = 2.0;
/// ...plus this much. A launch on its own meets a colder instruction cache, TLB and queue
/// than timed launches that follow one another, and the events' floor moves by about a
/// microsecond: a few-µs kernel may read twice as long alone without cheating, so it takes
/// a skipped-work speed-up of more than this to be called.
pub const SUSPECT_SLACK_NS: f64 = 5_000.0;

/// Why a cell's reading (ns per launch) is suspect against its audit launch's time, or
/// None. A host timer around an async launch (`timer = "host"`) reads only the enqueue, far
/// below any kernel by design, and is not judged.
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
