//! The pause test (`tells`) where a cell's timed samples split in two behaviors and its
//! pauses were read again by CUPTI (`protocol::SPLIT_PAUSES`), on records made to show a
//! kernel that pads some of its timed launches up to its pauses, and an honest one of two
//! speeds.

use super::bounds::*;
use super::stats::Stats;
use super::tells::*;
use super::tells_tests::run;
use super::two_speeds::speeds;
use crate::protocol::{CellRecord, KernelRecords};

/// A cell timed by CUPTI whose 200 samples pad 37% of its launches up to 137 µs and skip a
/// quarter of its work in the rest (106 µs), its three pauses and three staged regions
/// after a long gap at 137-144 µs, and CUPTI's records of `records` (timed, pauses, staged).
fn padded(records: [Vec<f64>; 3]) -> CellRecord {
    padded_staged(records, false)
}

/// As [`padded`], the records' pauses `pauses_staged` or not.
fn padded_staged(records: [Vec<f64>; 3], pauses_staged: bool) -> CellRecord {
    let mut r = run(
        vec![142.8e3, 142.3e3],
        vec![144.4e3],
        vec![140.2e3, 140.3e3, 137.0e3],
    );
    r.samples_ns = speeds(200, 37, (105.8e3, 136.8e3));
    let [timed_ns, pauses_ns, staged_ns] = records;
    let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
    among.by_cupti = Some(KernelRecords {
        timed_ns,
        pauses_ns,
        staged_ns,
        pauses_staged,
        ..Default::default()
    });
    r
}

fn judge(r: &CellRecord, flushed: bool) -> Judgement {
    let s: Stats = super::stats::of(r.samples_ns.clone()).unwrap();
    let readings = Readings {
        reading_ns: Some(s.median),
        steady: Some(&s),
        steady_sorted: None,
        flushed,
        stage_allowance_ns: Some(if flushed { 0.0 } else { 26e3 }),
        host_in_reading: false,
        per_region: 1,
        clock_moved_to: None,
    };
    judged(&[r], &readings).unwrap()
}

/// CUPTI's records of the timed launches around the pauses read again: the padded ones at
/// 145 µs, whose spread then holds the pauses by their median.
fn padded_records() -> Vec<f64> {
    speeds(84, 37, (105.8e3, 145.0e3))
}

/// Twelve pauses after a long gap, read by CUPTI: 137.0-140.3 µs.
fn twelve() -> Vec<f64> {
    (0..12).map(|i| 137.0e3 + f64::from(i) * 300.0).collect()
}

#[test]
fn a_kernel_that_pads_some_timed_launches_up_to_its_pauses_is_caught_by_twelve_read_again() {
    // Its three pauses alone lie with the slower behavior by chance one time in twenty.
    let alone = judge(&padded([vec![], vec![], vec![]]), false);
    assert!(alone.suspect.is_none(), "{:?}", alone.suspect);
    let records = [speeds(84, 37, (105.8e3, 136.8e3)), twelve(), vec![143e3; 4]];
    let j = judge(&padded(records), false);
    let why = j.suspect.expect("twelve pauses among the slowest records");
    assert!(
        why.contains("by CUPTI, ") && why.contains("of 12 pauses"),
        "{why}"
    );
}

#[test]
fn records_too_few_of_whose_timed_launches_were_padded_to_split_judge_by_their_own_spread() {
    // A cache that padded 3 of 8 of its samples, and 17 of its 84 records (178-184 µs; the
    // rest 143 µs), its pauses read again 175-180 µs: the records do not split, and their
    // spread is the faster behavior's.
    let timed = speeds(84, 20, (142.5e3, 178.0e3));
    let pauses: Vec<f64> = (0..12).map(|i| 175.5e3 + f64::from(i) * 400.0).collect();
    let j = judge(&padded([timed, pauses, vec![184e3; 4]]), false);
    let pause = j.test(Tell::Pause).unwrap();
    assert!(pause.by_cupti, "{pause:?}");
    let why = j
        .suspect
        .expect("pauses 33 µs over records of one behavior");
    assert!(why.contains("by CUPTI, 12 of 12 pauses"), "{why}");
}

#[test]
fn pauses_read_again_whose_stages_drew_stand_for_the_staged_regions() {
    // A cold cell's pause draws the held data again: no stages that draw follow them.
    let records = || [padded_records(), twelve(), vec![]];
    let j = judge(&padded_staged(records(), true), true);
    assert!(j.suspect.is_some_and(|w| w.contains("of 12 pauses")));
    // Where the pauses' stage drew nothing and no stage read again says the GPU was busy
    // (its read failed), they may be a GPU gone idle, flushed or not.
    assert!(judge(&padded(records()), true).suspect.is_none());
    assert!(judge(&padded(records()), false).suspect.is_none());
}

#[test]
fn an_honest_kernel_of_two_speeds_whose_pauses_meet_either_is_trusted() {
    let mut r = padded([vec![], vec![], vec![]]);
    r.samples_ns = speeds(200, 37, (120.0e3, 136.8e3));
    let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
    (among.pauses_ns, among.readings_ns, among.decoys_ns) = (
        vec![120.3e3, 137.0e3, 120.5e3],
        vec![121.0e3, 137.5e3],
        vec![120.8e3],
    );
    let pauses: Vec<f64> = (0..12)
        .map(|i| {
            if i % 3 == 0 {
                137.2e3
            } else {
                120.2e3 + f64::from(i) * 50.0
            }
        })
        .collect();
    among.by_cupti = Some(KernelRecords {
        timed_ns: speeds(84, 37, (120.0e3, 136.8e3)),
        pauses_ns: pauses,
        ..Default::default()
    });
    let j = judge(&r, false);
    assert!(j.suspect.is_none(), "{:?}", j.suspect);
}
