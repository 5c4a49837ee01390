//! CUPTI's spans turned into a timer's readings.

use super::spans::{apart, cupti_reading, kernel_medians};
use cuda::cupti::Span;

#[test]
fn each_kernel_of_a_launch_gets_its_median_span() {
    let span = |name: &str, start: u64, end: u64| Span {
        name: name.into(),
        start,
        end,
        queued: 0,
        submitted: 0,
    };
    let spans = [
        span("first", 0, 100),
        span("second", 110, 120),
        span("first", 200, 290),
        span("second", 300, 330),
        span("first", 400, 520),
        span("second", 530, 540),
    ];
    assert_eq!(
        kernel_medians(&spans),
        [("first".to_string(), 100.0), ("second".to_string(), 10.0)]
    );
}

#[test]
fn cupti_spans_become_per_launch_samples_and_latencies() {
    let span = |start: u64, end: u64, submitted: u64| Span {
        name: "k".into(),
        start,
        end,
        queued: submitted.saturating_sub(100),
        submitted,
    };
    // Two samples of a batch of 2: spans of 10 and 20 ns, then 30 and 30 ns.
    let spans = [
        span(1000, 1010, 900),
        span(1010, 1030, 0),
        span(2000, 2030, 1500),
        span(2030, 2060, 0),
    ];
    let r = cupti_reading(&spans, 2);
    assert_eq!(r.per_sample, [15.0, 30.0]);
    assert_eq!(r.firsts, [10.0, 30.0]);
    // The second sample began 970 ns after the first ended.
    assert!(r.gaps[0].is_nan());
    assert_eq!(r.gaps[1], 970.0);
    assert_eq!(r.record.records, 4);
    // Only each sample's first launch counts: 100 and 500 ns from submission to start.
    assert_eq!(r.record.submitted_to_start_median_ns, Some(300.0));
    assert_eq!(r.record.queued_to_submitted_median_ns, Some(100.0));
}

#[test]
fn each_region_reads_its_own_launches_however_many_it_holds() {
    // A timed region of three launches, an audit's of one, a timed one again; each span
    // 10 ns longer than the one before.
    let spans: Vec<Span> = (0..7u64)
        .map(|i| Span {
            name: "k".into(),
            start: 100 * i,
            end: 100 * i + 10 * (i + 1),
            queued: 0,
            submitted: 0,
        })
        .collect();
    let spans = cuda::cupti::Spans {
        launches: spans,
        kernels: None,
    };
    let busy = super::spans::busy_per_launch(&spans, &[3, 1, 3]);
    assert_eq!(busy, vec![20.0, 40.0, 60.0]);
    // Fewer records than asked for: the regions they hold.
    assert_eq!(
        super::spans::busy_per_launch(&spans, &[3, 3, 3]),
        vec![20.0, 50.0, 70.0]
    );
}

#[test]
fn untimed_regions_are_neither_samples_nor_audits() {
    // Places 0-2 timed, 3 an audited region, 4 untimed before a region after the samples,
    // 5 that region.
    let per = [10.0, 11.0, 12.0, 50.0, 13.0, 51.0];
    let audits = [(3, f64::NAN), (5, f64::NAN)];
    let (audited, timed) = apart(&per, (&audits, &[4]));
    assert_eq!(audited, vec![50.0, 51.0]);
    assert_eq!(timed, vec![10.0, 11.0, 12.0]);
    let (_, all_timed) = apart(&per, (&audits, &[]));
    assert_eq!(all_timed, vec![10.0, 11.0, 12.0, 13.0]);
}
