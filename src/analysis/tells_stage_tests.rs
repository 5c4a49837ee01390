//! The audit's tests (`tells`) that read a stage apart from a pause, and a pause beyond the
//! host's launch, on records made to show each.

use super::bounds::*;
use super::stats::Stats;
use super::tells::*;
use super::tells_tests::{run, steady};
use crate::protocol::{CellRecord, RegionsBefore};

/// A hot cell's readings, whose stages' L2 may cost a launch 26 µs (an H200): the
/// launches in a region, whether a reading holds the host's launch, and how far the clock
/// moved.
fn hot_cell<'a>(
    s: &'a Stats,
    (per_region, host_in_reading, clock_moved_to): (u64, bool, Option<f64>),
) -> Readings<'a> {
    Readings {
        reading_ns: Some(s.median),
        steady: Some(s),
        steady_sorted: None,
        flushed: false,
        stage_allowance_ns: Some(26e3),
        host_in_reading,
        per_region,
        clock_moved_to,
    }
}

/// Run `r`'s regions placed among its samples (audited, decoys, pauses), with the medians
/// of the samples before them.
fn placed(r: &mut CellRecord, positions: [Vec<u64>; 3], before: RegionsBefore) {
    let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
    [
        among.positions,
        among.decoy_positions,
        among.pause_positions,
    ] = positions;
    among.before = Some(before);
}

#[test]
fn in_a_hot_cell_decoys_are_set_against_pauses_beyond_what_a_stages_l2_costs() {
    let hot = |r: &CellRecord, s: &Stats, stage_allowance_ns| {
        let readings = Readings {
            reading_ns: Some(s.median),
            steady: Some(s),
            steady_sorted: None,
            flushed: false,
            stage_allowance_ns,
            host_in_reading: false,
            per_region: 1,
            clock_moved_to: None,
        };
        judged(&[r], &readings).unwrap()
    };
    // A kernel that does all its work only after a stage (it finds a line it touched last
    // evicted): 345 µs in its audited regions and decoys, 190 µs after pauses and timed.
    let cheat = run(vec![345e3; 2], vec![345e3; 2], vec![190e3; 6]);
    let s = steady(200, 1e3, 190e3);
    let j = hot(&cheat, &s, Some(26e3));
    assert!(j.test(Tell::Data).unwrap().suspect.is_none());
    assert!(j.test(Tell::Pause).unwrap().suspect.is_none());
    let why = j.suspect.unwrap();
    assert!(
        why.contains("a stage that wrote its inputs") && why.contains("L2 state"),
        "{why}"
    );
    // An honest 130 µs sum whose decoys read 9 µs over its pauses (the stage left its
    // inputs' lines dirty): within the allowance, suspect without it.
    let honest = run(vec![139e3; 2], vec![139e3; 2], vec![130e3; 6]);
    let s = steady(200, 1e3, 130e3);
    assert!(hot(&honest, &s, Some(26e3)).suspect.is_none());
    assert!(hot(&honest, &s, Some(0.0)).suspect.is_some());
    // A device whose memory bus is not known: no stage test.
    assert!(hot(&honest, &s, None).test(Tell::Stage).is_none());
}

#[test]
fn in_a_hot_graph_a_first_launch_that_works_only_after_a_stage_is_suspect() {
    // A graph of 20 behind a wait kernel: the kernel does all its work on a region's first
    // launch where a stage came before it (345 µs), and skips half everywhere else (190 µs).
    let judge = |decoy_first: f64| {
        let mean = 190e3 + (decoy_first - 190e3) / 20.0;
        let mut r = run(vec![mean; 2], vec![mean; 2], vec![190e3; 6]);
        let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
        among.firsts = Some(crate::protocol::FirstLaunches {
            audited: vec![decoy_first; 2],
            decoys: vec![decoy_first; 2],
            pauses: vec![190e3; 6],
            timed_count: 200,
            timed_median: 190e3,
            timed_iqr: 700.0,
            timed_max: 191e3,
        });
        let s = steady(200, 700.0, 190e3);
        let readings = hot_cell(&s, (20, false, None));
        judged(&[&r], &readings).unwrap()
    };
    let j = judge(345e3);
    let first = j.test(Tell::FirstStage).unwrap();
    assert!(first.suspect.as_ref().unwrap().contains("first launches"));
    // An honest first launch 9 µs slower after a stage (dirty lines written back) passes.
    assert!(judge(199e3).suspect.is_none());
}

#[test]
fn pauses_slower_than_the_hosts_launch_can_make_them_say_so() {
    // 50 µs over the timed launches by events: more than a pause adds to the host's launch.
    let r = run(vec![180e3; 2], vec![180e3; 2], vec![180e3, 179e3, 181e3]);
    let s = steady(300, 1.2e3, 130e3);
    let readings = Readings {
        reading_ns: Some(s.median),
        steady: Some(&s),
        steady_sorted: None,
        flushed: false,
        stage_allowance_ns: None,
        host_in_reading: true,
        per_region: 1,
        clock_moved_to: None,
    };
    let why = judged(&[&r], &readings).unwrap().suspect.unwrap();
    assert!(why.contains("a pause adds to a launch"), "{why}");
    assert!(!why.contains("not read again by CUPTI"), "{why}");
}

#[test]
fn one_slow_decoy_is_not_the_stage_tests_group() {
    let cold = |r: &CellRecord, s: &Stats| {
        let readings = Readings {
            reading_ns: Some(s.median),
            steady: Some(s),
            steady_sorted: None,
            flushed: true,
            stage_allowance_ns: Some(0.0),
            host_in_reading: false,
            per_region: 1,
            clock_moved_to: None,
        };
        judged(&[r], &readings).unwrap()
    };
    // An honest 13.7 µs convolution, cold (H200): its one decoy read 14.56 µs, beyond its
    // farthest timed sample; its audited regions and pauses read as its timed launches.
    let honest = run(vec![13_695.0, 13_760.0], vec![14_560.0], vec![13_664.0; 3]);
    let s = Stats {
        max: 14_464.0,
        ..steady(200, 64.0, 13_696.0)
    };
    let j = cold(&honest, &s);
    let stage = j.test(Tell::Stage).unwrap();
    assert_eq!((stage.regions, stage.suspect.clone()), (3, None));
    // A kernel that does all its work after any stage is slow in all three: suspect.
    let cheat = run(vec![14_560.0; 2], vec![14_560.0], vec![13_664.0; 3]);
    let why = cold(&cheat, &s).test(Tell::Stage).unwrap().suspect.clone();
    assert!(why.unwrap().contains("3 staged regions"));
}

#[test]
fn a_second_decoy_shows_a_cache_whose_one_decoy_the_hosts_launch_spoiled() {
    // The 2-output cache skipping half at n = 512 by events on an idle queue (H200, f2c0489,
    // `benches/decoy-hiccup`): its one decoy read as slow as its audited regions, most
    // likely the host's launch held up, and nothing was suspect. Its staged regions lie
    // within what a stage's L2 state may cost a hot launch (26 µs).
    let hot_events = |r: &CellRecord| {
        let s = steady(300, 1_248.0, 36_880.0);
        let readings = hot_cell(&s, (1, true, None));
        judged(&[r], &readings).unwrap()
    };
    let (audited, pauses) = (vec![56_448.0, 56_640.0], vec![36_960.0, 48_288.0, 37_152.0]);
    let spoiled = run(audited.clone(), vec![56_704.0], pauses.clone());
    assert!(hot_events(&spoiled).suspect.is_none());
    // A second decoy later in the round (`Among::spoiled_decoy`) reads as a hit does.
    let again = run(audited, vec![56_704.0, 38_912.0], pauses);
    let j = hot_events(&again);
    let data = j.test(Tell::Data).unwrap();
    assert!(data.suspect.is_some(), "{data:?}");
}

#[test]
fn regions_late_in_a_cell_whose_clock_fell_are_set_against_the_samples_before_them() {
    // An honest softmax graph on an H200 capped by power from sample 161 of 200: timed
    // samples of 180.7 µs, then 192-225 µs; its audited regions fell late, its decoys early.
    let mut r = run(
        vec![224.8e3, 207.8e3, 207.3e3, 196.3e3, 192.3e3],
        vec![180.8e3, 181.1e3],
        vec![180.7e3, 181.0e3, 180.8e3, 181.5e3],
    );
    let places = [
        vec![165, 182, 200, 200, 200],
        vec![7, 37],
        vec![16, 52, 58, 91],
    ];
    let before = RegionsBefore {
        audited: vec![187.5e3, 211.0e3, 198.6e3, 198.6e3, 198.6e3],
        decoys: vec![180.6e3, 180.6e3],
        pauses: vec![180.6e3, 180.6e3, 180.7e3, 180.6e3],
    };
    placed(&mut r, places, before);
    let s = Stats {
        count: 200,
        iqr: 1.82e3,
        median: 180.7e3,
        max: 226.7e3,
        ..Default::default()
    };
    let judge = |clock_moved_to: Option<f64>| {
        let readings = hot_cell(&s, (20, false, clock_moved_to));
        judged(&[&r], &readings).unwrap().suspect
    };
    assert_eq!(
        judge(Some(1515.0 / 1980.0)),
        None,
        "the clock moved: each region against its own samples"
    );
    // Where the telemetry saw no move, a kernel's own speed moved the samples before a
    // region (one that works after a stage), and its regions stand as read.
    assert!(
        judge(None).unwrap().contains("audited regions"),
        "{:?}",
        judge(None)
    );
}

#[test]
fn a_cheat_in_a_cell_whose_clock_moved_a_little_keeps_its_verdict_and_says_it_was_scaled() {
    // Skips half where timed; the launches before its regions did all the work (it tells a
    // stage), 30% slow: in a cell whose clock moved 5%, its regions come down 5% at most.
    let mut r = run(vec![345e3, 346e3], vec![190e3], vec![190e3, 191e3, 190e3]);
    let before = RegionsBefore {
        audited: vec![247e3, 247e3],
        decoys: vec![190e3],
        pauses: vec![190e3, 190e3, 190e3],
    };
    placed(&mut r, [vec![60, 120], vec![30], vec![20, 90, 150]], before);
    let s = steady(200, 1e3, 190e3);
    let readings = hot_cell(&s, (1, false, Some(0.95)));
    let why = judged(&[&r], &readings).unwrap().suspect.unwrap();
    assert!(
        why.contains("audited regions") && why.contains("the clock moved"),
        "{why}"
    );
}
