//! The pause test's second reading by CUPTI (`tells::pause_test`): records clear slow pauses
//! by events only where the pauses read again ran as the samples' did by the cell's timer.

use super::bounds::Tell;
use super::tells::*;
use super::tells_tests::{by_events_with, run, steady};
use crate::protocol::KernelRecords;

/// `reread-skip` of the fourth adversary on an H200, by events on an idle queue: its samples'
/// seven pauses at all its work (61.4 µs), its timed launches 49.4 µs; after the samples it
/// skips everywhere, so CUPTI's records read its pauses as its timed launches (48.4 µs), and
/// the cell's timer beside them 50.4 µs for both (CUPTI adds a µs). `pauses_by_timer`: the
/// timer's readings of the pauses read again.
fn read_again(pauses_by_timer: Vec<f64>) -> Option<Judgement> {
    let jitter = |base: f64, n: usize| -> Vec<f64> {
        (0..n)
            .map(|i| base + 40.0 * (i % 5) as f64 - 80.0)
            .collect()
    };
    let mut r = run(jitter(61.3e3, 2), jitter(61.5e3, 2), jitter(61.4e3, 7));
    let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
    among.by_cupti = Some(KernelRecords {
        timed_ns: jitter(48.4e3, 56),
        pauses_ns: jitter(48.4e3, 8),
        timer_timed_ns: jitter(50.4e3, 56),
        timer_pauses_ns: pauses_by_timer,
        samples_ns: jitter(49.4e3, 200),
        ..Default::default()
    });
    by_events_with(&r, &steady(200, 0.8e3, 49.4e3))
}

#[test]
fn records_of_pauses_that_ran_otherwise_by_the_cells_timer_clear_nothing() {
    let j = read_again(vec![
        50.4e3, 50.5e3, 50.3e3, 50.6e3, 50.4e3, 50.2e3, 50.5e3, 50.4e3,
    ])
    .unwrap();
    let why = j.test(Tell::Pause).unwrap().suspect.clone().unwrap();
    assert!(
        why.contains("ran otherwise once its samples were over"),
        "{why}"
    );
    assert!(!j.test(Tell::Pause).unwrap().by_cupti);
}

#[test]
fn records_of_pauses_the_cells_timer_read_as_the_samples_did_clear_them() {
    // An honest kernel whose pauses the host's launch slows by events, in both readings.
    let j = read_again(vec![
        62.4e3, 62.3e3, 62.5e3, 62.2e3, 62.6e3, 62.4e3, 62.3e3, 62.5e3,
    ])
    .unwrap();
    assert!(j.test(Tell::Pause).unwrap().suspect.is_none(), "{j:?}");
    assert!(j.test(Tell::Pause).unwrap().by_cupti);
    // Records from before these readings (no timer's readings) clear as they did.
    let j = read_again(vec![]).unwrap();
    assert!(j.test(Tell::Pause).unwrap().suspect.is_none(), "{j:?}");
}
