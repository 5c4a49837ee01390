//! The audit's tests (`tells`) on records made to show each way a kernel could be trusted
//! for work it skipped, and honest ones.

use super::bounds::*;
use super::stats::Stats;
use super::tells::*;
use crate::protocol::{AuditRecord, Status};
use crate::protocol::{AuditsAmong, CellRecord};

pub(in crate::analysis) fn run(
    audited: Vec<f64>,
    decoys: Vec<f64>,
    pauses: Vec<f64>,
) -> CellRecord {
    let mut r = CellRecord::new(0, "c", 0);
    r.status = Status::Ok;
    r.wall_s = 1.0;
    r.audit = Some(AuditRecord {
        cost_s: 0.02,
        among: Some(AuditsAmong {
            readings_ns: audited,
            decoys_ns: decoys,
            pauses_ns: pauses,
            ..Default::default()
        }),
        ..Default::default()
    });
    r
}

pub(in crate::analysis) fn steady(count: u64, iqr: f64, median: f64) -> Stats {
    Stats {
        count,
        iqr,
        median,
        max: median + iqr,
        ..Default::default()
    }
}

fn judge(rs: &[&CellRecord], s: &Stats, flushed: bool) -> Option<Judgement> {
    let r = Readings {
        reading_ns: Some(s.median),
        steady: Some(s),
        steady_sorted: None,
        flushed,
        stage_allowance_ns: flushed.then_some(0.0),
        host_in_reading: false,
        per_region: 1,
        clock_moved_to: None,
    };
    judged(rs, &r)
}

#[test]
fn audits_slower_than_their_decoys_beyond_the_noise_are_suspect() {
    // A kernel that skips a tenth of its work where it is timed: 315 µs, 350 audited;
    // its timed samples spread by an IQR of 1 µs, its decoys by as much.
    let r = run(
        vec![350e3, 351e3, 349e3, 352e3],
        vec![315e3, 316e3, 314e3, 315e3],
        vec![],
    );
    let j = judge(&[&r], &steady(200, 1e3, 315e3), false).unwrap();
    let data = j.test(Tell::Data).unwrap();
    let why = j.suspect.clone().unwrap();
    assert!(
        why.contains("1.11x") && why.contains("4 audited regions"),
        "{why}"
    );
    // The bound: 3.09 standard errors and the 2% margin (6.3 µs); sigma is the larger
    // of the timed samples' (0.74 µs) and the decoys' (MAD 0.5 µs: 0.74 µs).
    let sigma = 1e3 / 1.349;
    let want = 3.09 * sigma * (std::f64::consts::FRAC_PI_2 * 0.5).sqrt() + 6.3e3;
    assert!((data.bound_ns - want).abs() < 50.0, "{}", data.bound_ns);
    // The limit, where 19 of 20 such kernels are caught: the bound and what the medians may
    // fall short by one time in 40 each, the second smallest of four regions 1.494 sigma
    // and the median of four decoys 1.96 sqrt(pi / 8) sigma (2.0 µs in all), over 315 µs
    // plus both. Where the difference only met the bound, it was 2.58%.
    assert!(
        (j.detection_limit - 0.0318).abs() < 0.0002,
        "{}",
        j.detection_limit
    );
}

#[test]
fn audited_regions_on_a_slow_stretch_are_outvoted_by_the_pairs_that_confirm_them() {
    // An honest softmax in graphs on two H200s: a power cap held its samples 129-170 of 200
    // at up to 366 µs against 276 µs, and both audited regions (at 147 and 153) fell there,
    // its decoys (92 and 115) before it.
    let timed = steady(200, 17_888.0, 283_008.0);
    let (audited, decoys) = (vec![352_078.0, 350_922.0], vec![276_125.0, 275_666.0]);
    let alone = run(audited.clone(), decoys.clone(), vec![]);
    assert!(judge(&[&alone], &timed, false).unwrap().suspect.is_some());
    // Three more audited regions after the samples, off the slow stretch, outvote it.
    let confirmed = run(
        [audited.clone(), vec![279_001.0, 280_113.0, 278_442.0]].concat(),
        decoys.clone(),
        vec![],
    );
    let j = judge(&[&confirmed], &timed, false).unwrap();
    assert!(j.suspect.is_none(), "{:?}", j.suspect);
    // A kernel that skips work on data it has seen is slow in every audited region.
    let cheat = run(
        [audited, vec![351_500.0, 352_300.0, 350_800.0]].concat(),
        decoys,
        vec![],
    );
    assert!(judge(&[&cheat], &timed, false).unwrap().suspect.is_some());
}

#[test]
fn audited_regions_cannot_widen_their_own_bound() {
    // One audited region slow, one fast: their own spread is 17 µs, but the bound comes
    // from the timed samples (sigma 0.3 µs): 1.65 µs with the 0.5 µs margin. Of two, one
    // slow reading is no evidence alone (a fresh draw that a kernel skips work on fails its
    // check; one it does all its work on is slow): the lower median is the fast one.
    let r = run(vec![35e3, 12e3], vec![12e3, 12.1e3], vec![]);
    let j = judge(&[&r], &steady(200, 400.0, 12e3), false).unwrap();
    let data = j.test(Tell::Data).unwrap();
    assert!(data.bound_ns < 2e3, "{}", data.bound_ns);
    assert!(j.suspect.is_none());
    // Both slow: suspect.
    let r = run(vec![35e3, 34e3], vec![12e3, 12.1e3], vec![]);
    assert!(judge(&[&r], &steady(200, 400.0, 12e3), false)
        .unwrap()
        .suspect
        .is_some());
    // One region beyond four decoys staged alike is no evidence by itself: readings alike
    // split so half the time (a stage can leave an honest region slow now and then).
    let decoys = vec![12e3, 12.1e3, 11.9e3, 12e3];
    let r = run(vec![12e3, 12e3, 12e3, 30e3], decoys, vec![]);
    let j = judge(&[&r], &steady(200, 400.0, 12e3), false).unwrap();
    assert_eq!(j.test(Tell::Data).unwrap().beyond, 1);
    assert!(j.suspect.is_none());
    // Half of twenty beyond, none of twenty decoys: evidence, though their median is not.
    let mut audited = vec![12e3; 10];
    audited.extend([30e3; 10]);
    let r = run(audited, vec![12e3; 20], vec![]);
    let j = judge(&[&r], &steady(200, 400.0, 12e3), false).unwrap();
    let why = j.suspect.unwrap();
    assert!(why.contains("10 of 20 audited regions"), "{why}");
}

#[test]
fn one_slow_decoy_of_a_few_widens_what_one_region_may_read() {
    // A stage can leave a hot launch 10% slower (a persistent matmul after a draw): one of
    // eight decoys read so, and two of eight audited regions; the timed samples never.
    let mut s = steady(1000, 2e3, 358e3);
    s.max = 358e3 * 1.018;
    let audited = [vec![365e3; 6], vec![402e3, 404e3]].concat();
    let decoys = [vec![365e3; 7], vec![403e3]].concat();
    let r = run(audited, decoys, vec![359e3; 8]);
    let j = judge(&[&r], &s, false).unwrap();
    assert!(j.suspect.is_none(), "{:?}", j.suspect);
}

#[test]
fn regions_that_spread_more_than_the_timed_samples_widen_the_bound_by_the_decoys() {
    // Quiet timed samples (IQR 0.1 µs), four decoys after the stage spread over 1 µs: four
    // audited 0.9 µs above them are within.
    let decoys = vec![30.7e3, 31.7e3, 30.9e3, 31.5e3];
    let r = run(vec![32.0e3, 32.6e3, 31.9e3, 32.4e3], decoys, vec![]);
    let j = judge(&[&r], &steady(50, 100.0, 31e3), false).unwrap();
    assert!(j.suspect.is_none(), "{:?}", j.suspect);
    assert!(j.test(Tell::Data).unwrap().bound_ns > 1.2e3);
    // Decoys as quiet as the samples, audited 1.1 µs above: suspect (bound 0.9 µs).
    let r = run(vec![32.3e3; 4], vec![31.2e3; 4], vec![]);
    assert!(judge(&[&r], &steady(50, 100.0, 31e3), false)
        .unwrap()
        .suspect
        .is_some());
}

#[test]
fn pauses_slower_than_the_timed_launches_are_suspect() {
    // A kernel that does all its work after a pause: 345 µs there, 190 µs timed. Its
    // audited regions and decoys come after a pause too: equal.
    let r = run(vec![345e3; 2], vec![345e3; 2], vec![345e3, 344e3]);
    let j = judge(&[&r], &steady(200, 1e3, 190e3), false).unwrap();
    assert!(j.test(Tell::Data).unwrap().suspect.is_none());
    let pause = j.test(Tell::Pause).unwrap();
    let why = pause.suspect.clone().unwrap();
    assert!(why.contains("2 pauses") && why.contains("1.81x"), "{why}");
    assert_eq!(j.suspect, Some(why));
    // The limit is the larger of the two tests'.
    let data = j.test(Tell::Data).unwrap().limit;
    assert!(j.detection_limit >= data && j.detection_limit >= pause.limit);
    // An honest kernel's pauses read as its timed launches.
    let r = run(vec![190e3; 2], vec![190e3; 2], vec![190.4e3, 189.8e3]);
    assert!(judge(&[&r], &steady(200, 1e3, 190e3), false)
        .unwrap()
        .suspect
        .is_none());
}

#[test]
fn in_a_flushed_cell_decoys_are_set_against_pauses() {
    let r = run(vec![400e3; 2], vec![400e3; 2], vec![300e3; 2]);
    let s = steady(200, 1e3, 300e3);
    assert!(judge(&[&r], &s, false).unwrap().test(Tell::Stage).is_none());
    let j = judge(&[&r], &s, true).unwrap();
    assert!(j.test(Tell::Stage).unwrap().suspect.is_some());
    assert!(j.suspect.unwrap().contains("a stage that wrote its inputs"));
}

#[test]
fn honest_regions_within_the_noise_or_the_margin_are_not_suspect() {
    let s = steady(200, 1e3, 112e3);
    let r = run(
        vec![112e3, 113e3, 111e3, 112e3],
        vec![112e3, 111e3, 113e3, 112e3],
        vec![112.5e3, 111.5e3],
    );
    assert!(judge(&[&r], &s, true).unwrap().suspect.is_none());
    // 1.5% apart, within the margin.
    let r = run(vec![101.5e3; 4], vec![100e3; 4], vec![101e3; 2]);
    assert!(judge(&[&r], &steady(200, 100.0, 100e3), false)
        .unwrap()
        .suspect
        .is_none());
    // A noisy cell needs more: 10% apart with an IQR of 20%.
    let r = run(vec![110e3; 4], vec![100e3; 4], vec![]);
    assert!(judge(&[&r], &steady(200, 20e3, 100e3), false)
        .unwrap()
        .suspect
        .is_none());
    // A 1 µs kernel: 0.3 µs is within the events' spread.
    let r = run(vec![1.3e3; 4], vec![1e3; 4], vec![1.3e3; 2]);
    assert!(judge(&[&r], &steady(200, 10.0, 1e3), false)
        .unwrap()
        .suspect
        .is_none());
}

#[test]
fn one_region_must_lie_beyond_the_farthest_timed_sample_too() {
    // Quiet timed samples whose farthest lies 15% above their median (a launch after a
    // stage): an audited region 12% above its decoys is within their tail, one 40% above
    // is not.
    let mut s = steady(300, 100.0, 25e3);
    s.max = 25e3 * 1.15;
    let half = |slow: f64| {
        let mut audited = vec![25e3; 10];
        audited.extend([slow; 10]);
        run(audited, vec![25e3; 20], vec![25e3; 2])
    };
    assert!(judge(&[&half(28e3)], &s, false).unwrap().suspect.is_none());
    let why = judge(&[&half(35e3)], &s, false).unwrap().suspect.unwrap();
    assert!(why.contains("10 of 20 audited regions"), "{why}");
    // Where the reading holds the host's launch time, one region alone is no evidence.
    let readings = Readings {
        reading_ns: Some(25e3),
        steady: Some(&s),
        steady_sorted: None,
        flushed: false,
        stage_allowance_ns: None,
        host_in_reading: true,
        per_region: 1,
        clock_moved_to: None,
    };
    assert!(judged(&[&half(35e3)], &readings).unwrap().suspect.is_none());
}

#[test]
fn pauses_slower_with_staged_regions_as_the_timed_ones_are_the_gpus_idle() {
    // An honest hot transpose: 7% slower after an idle pause, as fast after a staged one.
    let s = steady(200, 1.5e3, 148e3);
    let r = run(vec![148e3; 2], vec![148.5e3; 2], vec![159e3, 160e3]);
    let j = judge(&[&r], &s, false).unwrap();
    let pause = j.test(Tell::Pause).unwrap();
    assert!(pause.suspect.is_none() && pause.idle, "{pause:?}");
    assert!(j.suspect.is_none());
    // A kernel that does all its work after any pause is slower after both.
    let r = run(vec![159e3; 2], vec![159e3; 2], vec![159e3, 160e3]);
    assert!(judge(&[&r], &s, false).unwrap().suspect.is_some());
}

#[test]
fn one_region_is_tested_against_the_false_alarm_rate_shared_among_them() {
    let base = Baseline {
        median_ns: 100e3,
        count: 200,
    };
    let spread = Spread {
        sigma: 1e3,
        tail: 0.0,
        single: true,
        allowance_ns: 0.0,
    };
    let t = |k| against_baseline(Tell::Pause, &vec![100e3; k], base, (spread, None)).unwrap();
    assert!(t(20).single_bound_ns > t(2).single_bound_ns);
}

#[test]
fn pauses_beyond_the_farthest_timed_sample_count_against_how_many_were_tested() {
    // 200 timed samples, the farthest 5% over their median: six pauses read as they do
    // but one, far out. Were it one of their kind, one of six would lie beyond the farthest
    // of 200 with a chance of 6 in 206: not evidence alone; two of six, 15 in 21115, are.
    let base = Baseline {
        median_ns: 100e3,
        count: 200,
    };
    let spread = Spread {
        sigma: 0.5e3,
        tail: 0.05,
        single: true,
        allowance_ns: 0.0,
    };
    let pauses = |slow: usize| -> Vec<f64> {
        (0..6)
            .map(|i| if i < slow { 120e3 } else { 100e3 })
            .collect()
    };
    let test = |slow| against_baseline(Tell::Pause, &pauses(slow), base, (spread, None)).unwrap();
    let one = test(1);
    assert_eq!((one.beyond, one.suspect), (1, None));
    let two = test(2);
    assert_eq!(two.beyond, 2);
    assert!(two.suspect.unwrap().contains("against 0 of 200"));
}

#[test]
fn runs_pool_and_without_decoys_the_band_judges() {
    let (a, b) = (
        run(vec![200e3; 2], vec![100e3; 2], vec![]),
        run(vec![200e3; 2], vec![100e3; 2], vec![]),
    );
    let s = steady(100, 1e3, 315e3);
    assert!(judge(&[&a, &b], &s, false).unwrap().suspect.is_some());
    // Too few samples for the noise, or no decoys: the band against the 315 µs reading.
    let j = judge(&[&a], &steady(5, 1e3, 315e3), false).unwrap();
    assert_eq!(j.tests.len(), 1);
    assert_eq!((j.tests[0].tell, j.suspect), (Tell::Band, None));
    let lone = run(vec![700e3], vec![], vec![]);
    let j = judge(&[&lone], &s, false).unwrap();
    assert!(j
        .suspect
        .unwrap()
        .contains("one launch on new inputs took 700.000 µs"));
    // The band's 320 µs over the reading, and what one launch and the median of 100 timed
    // samples of sigma 0.74 µs may fall short by, one time in 40 each (1.63 µs).
    assert!(
        (j.detection_limit - 0.5052).abs() < 0.0002,
        "{}",
        j.detection_limit
    );
    // The weaker audit's one launch after the timed ones.
    let mut after = run(vec![], vec![], vec![]);
    let audit = after.audit.as_mut().unwrap();
    (audit.among, audit.weaker, audit.launch_ns) = (None, Some("why".into()), Some(1e6));
    assert!(judge(&[&after], &s, false).unwrap().suspect.is_some());
    // Unjudged, or a record from before these audits: nothing here.
    after.audit.as_mut().unwrap().unjudged = Some("a host timer".into());
    assert_eq!(judge(&[&after], &s, false), None);
    let mut old = run(vec![], vec![], vec![]);
    old.audit.as_mut().unwrap().among = None;
    assert_eq!(judge(&[&old], &s, false), None);
}

/// `r` judged as a cell of single launches timed by events on an idle queue, its steady
/// samples `s`, in a hot cell on a device not known (no stage test).
pub(in crate::analysis) fn by_events_with(r: &CellRecord, s: &Stats) -> Option<Judgement> {
    let readings = Readings {
        reading_ns: Some(s.median),
        steady: Some(s),
        steady_sorted: None,
        flushed: false,
        stage_allowance_ns: None,
        host_in_reading: true,
        per_region: 1,
        clock_moved_to: None,
    };
    judged(&[r], &readings)
}

/// `r` judged as a cell timed by events on an idle queue: 300 samples about 129.1 µs.
fn by_events_on_an_idle_queue(r: &CellRecord) -> Option<Judgement> {
    by_events_with(r, &steady(300, 1.2e3, 129.1e3))
}

/// A run read by events on an idle queue whose pauses and staged regions read 6 µs slow,
/// with CUPTI's kernel records of timed launches and pauses after its samples (`records`:
/// timed, pauses), where there are such records.
fn slow_after_pauses_by_events(records: Option<(Vec<f64>, Vec<f64>)>) -> Option<Judgement> {
    let mut r = run(
        vec![138.1e3, 138.3e3],
        vec![138.2e3, 138.4e3],
        vec![135.2e3, 135.0e3, 135.6e3, 134.9e3, 135.3e3, 135.1e3],
    );
    if let Some((timed_ns, pauses_ns)) = records {
        let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
        among.by_cupti = Some(crate::protocol::KernelRecords {
            timed_ns,
            pauses_ns,
            ..Default::default()
        });
    }
    by_events_on_an_idle_queue(&r)
}

#[test]
fn pauses_slow_only_through_the_hosts_launch_are_cleared_by_cuptis_kernel_records() {
    // The reduction of the unseen corpus on an H200: 135.2 µs after its pauses by events on
    // an idle queue against 129.1 µs timed, its staged regions as slow; by CUPTI 122.1 µs
    // after its pauses against 122.3 µs timed.
    let before = slow_after_pauses_by_events(None).unwrap();
    assert!(before.suspect.is_some());
    let timed = vec![
        122.3e3, 122.1e3, 122.4e3, 122.2e3, 122.3e3, 122.5e3, 122.2e3, 122.3e3,
    ];
    let after = vec![
        122.4e3, 122.2e3, 122.6e3, 122.3e3, 122.2e3, 122.4e3, 122.5e3, 122.3e3,
    ];
    let j = slow_after_pauses_by_events(Some((timed, after))).unwrap();
    assert!(j.suspect.is_none(), "{:?}", j.suspect);
    let pause = j.test(Tell::Pause).unwrap();
    assert!(pause.by_cupti);
    assert!(
        (pause.baseline_ns - 122.3e3).abs() < 1.0,
        "{}",
        pause.baseline_ns
    );
}

#[test]
fn a_kernel_that_skips_back_to_back_is_suspect_by_cuptis_kernel_records_too() {
    // Skipping a fifth of its work back to back: 100 µs timed, 125 µs after a pause.
    let timed = vec![
        100.1e3, 100.0e3, 100.2e3, 99.9e3, 100.1e3, 100.0e3, 100.3e3, 100.1e3,
    ];
    let after = vec![
        125.2e3, 125.0e3, 125.3e3, 124.9e3, 125.1e3, 125.4e3, 125.0e3, 125.2e3,
    ];
    let j = slow_after_pauses_by_events(Some((timed, after))).unwrap();
    let why = j.suspect.clone().unwrap();
    assert!(why.contains("by CUPTI, "), "{why}");
    assert!(j.test(Tell::Pause).unwrap().by_cupti);
}

#[test]
fn records_slower_than_the_samples_leave_the_pause_test_as_it_was() {
    // A kernel that skipped after its samples' pauses and did all its work once they were
    // over: its records read as slow timed as after a pause, both above its samples.
    let timed = vec![
        135.1e3, 135.3e3, 135.0e3, 135.2e3, 135.4e3, 135.1e3, 135.2e3, 135.3e3,
    ];
    let after = vec![
        135.2e3, 135.4e3, 135.1e3, 135.3e3, 135.2e3, 135.5e3, 135.1e3, 135.2e3,
    ];
    let j = slow_after_pauses_by_events(Some((timed, after))).unwrap();
    assert!(j.suspect.is_some());
    assert!(!j.test(Tell::Pause).unwrap().by_cupti);
}

#[test]
fn pauses_slow_by_events_not_read_again_by_cupti_say_how_to_tell() {
    let j = slow_after_pauses_by_events(None).unwrap();
    let why = j.suspect.unwrap();
    assert!(
        why.contains("not read again by CUPTI") && why.contains("timer = \"cupti\""),
        "{why}"
    );
}

/// Slow after its pauses by events on an idle queue, its staged regions within their bound,
/// which alone reads as the GPU gone idle; by CUPTI 5% slower after its pauses; and, where
/// `staged_ns` holds any, CUPTI's records of launches after stages that drew.
fn slow_after_pauses_by_cuptis_records(staged_ns: Vec<f64>) -> Judgement {
    let mut r = run(
        vec![129.2e3, 129.4e3],
        vec![129.3e3, 129.1e3],
        vec![135.2e3, 135.0e3, 135.6e3, 134.9e3, 135.3e3, 135.1e3],
    );
    let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
    among.by_cupti = Some(crate::protocol::KernelRecords {
        timed_ns: vec![
            122.3e3, 122.1e3, 122.4e3, 122.2e3, 122.3e3, 122.5e3, 122.2e3, 122.3e3,
        ],
        pauses_ns: vec![
            128.4e3, 128.6e3, 128.3e3, 128.5e3, 128.4e3, 128.7e3, 128.5e3, 128.4e3,
        ],
        staged_ns,
        ..Default::default()
    });
    by_events_on_an_idle_queue(&r).unwrap()
}

#[test]
fn pauses_slow_by_cuptis_records_are_suspect_whatever_the_staged_regions_read() {
    // The records leave out the host's launch: they judge, and the staged regions' event
    // readings, which hold it, cannot clear them (`trust-small`'s `tells-period` at s=1
    // skipping half read 32% slower after its pauses by CUPTI on an H200: 14.433 µs
    // against 10.912 µs). Stages that drew, read by CUPTI as slow as the pauses, leave it so.
    for staged_ns in [vec![], vec![128.5e3, 128.3e3, 128.6e3, 128.4e3]] {
        let j = slow_after_pauses_by_cuptis_records(staged_ns);
        let pause = j.test(Tell::Pause).unwrap();
        assert!(pause.by_cupti && !pause.idle, "{pause:?}");
        assert!(j
            .suspect
            .as_deref()
            .is_some_and(|w| w.contains("by CUPTI, ")));
    }
}

#[test]
fn pauses_slow_by_cuptis_records_after_an_idle_gpu_only_are_cleared_by_stages_it_read() {
    // An honest kernel slower on a GPU gone idle: after CUPTI's stages that drew, with the
    // GPU busy through the same pause, it reads as its timed launches.
    let j = slow_after_pauses_by_cuptis_records(vec![122.4e3, 122.2e3, 122.3e3, 122.5e3]);
    let pause = j.test(Tell::Pause).unwrap();
    assert!(
        pause.by_cupti && pause.idle && pause.suspect.is_none(),
        "{pause:?}"
    );
    assert!(j.suspect.is_none(), "{:?}", j.suspect);
}
