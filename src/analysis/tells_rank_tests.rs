//! The tests' ranks: pauses high among timed launches that a kernel spread wide on purpose
//! (`tells::ranked_high`), audited regions high among a flushed cell's timed launches
//! (`flushed::audited_over_timed`), and honest ones.

use super::bounds::*;
use super::reduce::SortedRun;
use super::stats::Stats;
use super::tells::*;
use super::tells_tests::run;
use crate::protocol::{CellRecord, KernelRecords};

/// As `quantile-smear` on an H200: 1000 timed launches spread flat from 5 to 17 µs (it skips
/// a share drawn anew each launch), median 11 µs.
fn spread_wide() -> (Stats, Vec<SortedRun>) {
    spread_flat(1000, 7e3)
}

/// `n` timed launches of one run spread flat from 5 to 17 µs, median 11 µs, their
/// interquartile range stated as `iqr`.
fn spread_flat(n: u32, iqr: f64) -> (Stats, Vec<SortedRun>) {
    let s = Stats {
        count: u64::from(n),
        median: 11e3,
        iqr,
        max: 17e3,
        ..Default::default()
    };
    let runs = vec![SortedRun {
        process: 0,
        count: n as usize,
        sorted: flat(n),
    }];
    (s, runs)
}

/// `n` readings spread flat from 5 to 17 µs, in order.
fn flat(n: u32) -> Vec<f64> {
    (0..n)
        .map(|i| 5e3 + 12e3 * f64::from(i) / f64::from(n - 1))
        .collect()
}

/// 24 pauses at all its work, 15.5-17.4 µs, but half of them lower (the tell missed there).
fn high_pauses() -> Vec<f64> {
    (0..24)
        .map(|i| match i % 2 {
            0 => 12.5e3 + 100.0 * f64::from(i),
            _ => 15.5e3 + 80.0 * f64::from(i),
        })
        .collect()
}

fn judge(rec: &CellRecord, s: &Stats, runs: Option<&[SortedRun]>, host: bool) -> Judgement {
    judge_cell(rec, s, runs, (false, host))
}

/// As [`judge`], in a cell flushed before each launch (`flushed`) or not.
fn judge_cell(
    rec: &CellRecord,
    s: &Stats,
    runs: Option<&[SortedRun]>,
    (flushed, host): (bool, bool),
) -> Judgement {
    let readings = Readings {
        reading_ns: Some(s.median),
        steady: Some(s),
        steady_sorted: runs,
        flushed,
        stage_allowance_ns: Some(if flushed { 0.0 } else { 30e3 }),
        host_in_reading: host,
        per_region: 1,
        clock_moved_to: None,
    };
    judged(&[rec], &readings).unwrap()
}

#[test]
fn pauses_high_among_timed_launches_spread_wide_on_purpose_are_suspect_by_their_ranks() {
    // The medians' bound, from the timed spread, holds the pauses; their ranks do not.
    let (s, runs) = spread_wide();
    let staged = vec![16.9e3, 17.1e3, 17.0e3, 16.8e3];
    let rec = run(staged.clone(), staged, high_pauses());
    let medians = judge(&rec, &s, None, false);
    assert!(medians.test(Tell::Pause).unwrap().suspect.is_none());
    let ranked = judge(&rec, &s, Some(&runs), false);
    let why = ranked.test(Tell::Pause).unwrap().suspect.clone().unwrap();
    assert!(
        why.contains("24 pauses") && why.contains("lie high"),
        "{why}"
    );
    // Where the reading holds the host's launch, the ranks say nothing.
    let host = judge(&rec, &s, Some(&runs), true);
    assert!(host.test(Tell::Pause).unwrap().suspect.is_none());
}

#[test]
fn pauses_spread_as_the_timed_launches_or_high_after_an_idle_gpu_only_are_not() {
    let (s, runs) = spread_wide();
    let staged = vec![16.9e3, 17.1e3, 17.0e3, 16.8e3];
    // Spread as the timed launches are, a little above them.
    let honest: Vec<f64> = (0..24).map(|i| 5.5e3 + 500.0 * f64::from(i)).collect();
    let rec = run(staged.clone(), staged, honest);
    let j = judge(&rec, &s, Some(&runs), false);
    assert!(j.test(Tell::Pause).unwrap().suspect.is_none());
    // High, but the staged regions, after the same pause with the GPU busy drawing, read
    // as the timed launches do: a GPU gone idle, not the kernel.
    let at_median = vec![11.0e3, 10.9e3, 11.1e3, 11.0e3];
    let rec = run(at_median.clone(), at_median, high_pauses());
    let j = judge(&rec, &s, Some(&runs), false);
    assert!(j.test(Tell::Pause).unwrap().suspect.is_none());
}

#[test]
fn pauses_between_the_two_chances_are_judged_by_those_read_again() {
    // 200 timed launches flat from 5 to 17 µs; a third of 24 pauses at all the work (16.5
    // µs), the rest at 12 µs: their ranks lie between the thousandth and the screen.
    let (s, runs) = spread_flat(200, 6e3);
    let pauses: Vec<f64> = (0..24)
        .map(|i| if i % 3 == 0 { 16.5e3 } else { 12e3 })
        .collect();
    let staged = vec![16.9e3, 17.1e3, 17.0e3, 16.8e3];
    let mut rec = run(staged.clone(), staged, pauses);
    let pause = |rec: &CellRecord| {
        judge(rec, &s, Some(&runs), false)
            .test(Tell::Pause)
            .cloned()
    };
    assert!(
        pause(&rec).unwrap().suspect.is_none(),
        "the first round alone"
    );
    let mut again = |pauses: Vec<f64>| {
        let among = rec.audit.as_mut().unwrap().among.as_mut().unwrap();
        among.ranks_again = Some(KernelRecords {
            timed_ns: flat(168),
            pauses_ns: pauses,
            ..Default::default()
        });
        rec.clone()
    };
    // Read again at all their work among 168 launches spread as the samples: suspect.
    let high = pause(&again(vec![16.5e3; 24])).unwrap();
    let why = high.suspect.unwrap();
    assert!(why.contains("24 read again by CUPTI lie high"), "{why}");
    // Read again spread as the launches beside them: not.
    let alike: Vec<f64> = (0..24).map(|i| 5.5e3 + 500.0 * f64::from(i)).collect();
    assert!(pause(&again(alike)).unwrap().suspect.is_none());
}

#[test]
fn each_runs_pauses_are_ranked_among_its_own_samples() {
    // Two runs, the second a tenth slower: its pauses at its own median are no finding,
    // though pooled with the faster run's samples they would all lie high.
    let fast: Vec<f64> = (0..200).map(|i| 10e3 + f64::from(i) * 5.0).collect();
    let slow: Vec<f64> = fast.iter().map(|t| t * 1.1).collect();
    let runs = vec![
        SortedRun {
            process: 0,
            count: 200,
            sorted: fast,
        },
        SortedRun {
            process: 1,
            count: 200,
            sorted: slow.clone(),
        },
    ];
    let s = Stats {
        count: 400,
        median: 10.5e3,
        iqr: 1.2e3,
        max: 12.2e3,
        ..Default::default()
    };
    let pauses: Vec<f64> = (0..24).map(|i| slow[90 + i] + 600.0).collect();
    let mut rec = run(vec![11.6e3, 11.7e3], vec![11.6e3, 11.7e3], pauses);
    rec.process = 1;
    let j = judge(&rec, &s, Some(&runs), false);
    let pause = j.test(Tell::Pause).unwrap();
    assert!(pause.suspect.is_none(), "{pause:?}");
}

/// As `region-smear` of the fourth adversary on an H200: an n-body that skips a share drawn
/// anew each launch, 0-50% of its bodies, but none on new data: timed launches and decoys
/// spread flat from 35 to 59 µs, audited regions at all its work, 60.6 µs.
fn smeared_decoys(count: usize) -> Vec<f64> {
    (0..count)
        .map(|i| 35e3 + 24e3 * i as f64 / (count - 1) as f64)
        .collect()
}

fn smeared_timed() -> Stats {
    Stats {
        count: 200,
        median: 48e3,
        iqr: 12e3,
        max: 60e3,
        ..Default::default()
    }
}

/// A run whose audited regions each ran on a draw of their own, followed by the decoys that
/// ran on it (`decoys[i]` after `audited[i]`), in turn among 200 samples.
fn in_turn(audited: &[f64], decoys: &[Vec<f64>], pauses: Vec<f64>) -> CellRecord {
    let mut rec = run(audited.to_vec(), decoys.concat(), pauses);
    let among = rec.audit.as_mut().unwrap().among.as_mut().unwrap();
    among.positions = (0..audited.len() as u64).map(|i| 10 + 30 * i).collect();
    among.decoy_positions = (decoys.iter().enumerate())
        .flat_map(|(i, d)| (0..d.len() as u64).map(move |j| 12 + 30 * i as u64 + 2 * j))
        .collect();
    rec
}

/// `count` decoys a group, spread as the smeared timed launches, each group in a new order.
fn smeared_groups(groups: usize, count: usize) -> Vec<Vec<f64>> {
    let all = smeared_decoys(groups * count);
    (0..groups)
        .map(|g| (0..count).map(|j| all[j * groups + g]).collect())
        .collect()
}

#[test]
fn audited_regions_high_among_the_decoys_on_their_own_data_are_suspect_by_their_ranks() {
    let audited = [60.6e3, 60.4e3, 60.8e3, 60.5e3, 60.7e3, 60.6e3];
    let (pauses, s) = (smeared_decoys(24), smeared_timed());
    // One decoy on each draw cannot reach a chance of a thousandth ((1/2)^6); three can.
    let one = in_turn(&audited, &smeared_groups(6, 1), pauses.clone());
    let j = judge(&one, &s, None, false);
    assert!(j.test(Tell::Data).unwrap().suspect.is_none(), "{j:?}");
    let three = in_turn(&audited, &smeared_groups(6, 3), pauses.clone());
    let data = judge(&three, &s, None, false);
    let why = data.test(Tell::Data).unwrap().suspect.clone().unwrap();
    assert!(
        why.contains("6 audited regions") && why.contains("18 decoys") && why.contains("2.4e-4"),
        "{why}"
    );
    // Whatever the timer: both follow a stage and the same pause.
    let host = judge(&three, &s, None, true);
    assert!(host.test(Tell::Data).unwrap().suspect.is_some());
    // Audited regions after the samples, which no decoy follows, rank among none.
    let mut after = three.clone();
    let among = after.audit.as_mut().unwrap().among.as_mut().unwrap();
    among.readings_ns.extend([61e3, 61e3, 61e3]);
    among.positions.extend([200, 200, 200]);
    let j = judge(&after, &s, None, false);
    let why = j.test(Tell::Data).unwrap().suspect.clone().unwrap();
    assert!(why.contains("6 audited regions"), "{why}");
    // A probe draws over the held data: the decoys after it ran on its draw, not on the
    // audited region's before it, and rank with none.
    let mut probed = three.clone();
    let among = probed.audit.as_mut().unwrap().among.as_mut().unwrap();
    among.probe_positions = among.positions.iter().map(|p| p + 1).collect();
    among.probes_ns = vec![50e3; among.probe_positions.len()];
    let j = judge(&probed, &s, None, false);
    let data = j.test(Tell::Data).unwrap();
    assert!(
        data.suspect
            .as_ref()
            .is_none_or(|why| !why.contains("lie high")),
        "{j:?}"
    );
    // Where the clock moved, the readings are scaled and not ranked.
    let readings = Readings {
        reading_ns: Some(s.median),
        steady: Some(&s),
        steady_sorted: None,
        flushed: false,
        stage_allowance_ns: Some(30e3),
        host_in_reading: false,
        per_region: 1,
        clock_moved_to: Some(0.97),
    };
    let moved = judged(&[&three], &readings).unwrap();
    let data = moved.test(Tell::Data).unwrap();
    assert!(data.suspect.is_none() || !data.suspect.as_ref().unwrap().contains("lie high"));
}

#[test]
fn audited_regions_read_as_the_decoys_on_their_own_data_are_not_suspect_by_their_ranks() {
    let (pauses, s) = (smeared_decoys(24), smeared_timed());
    // An honest kernel whose time follows its data: each draw its own time, 50-60 µs, its
    // audited region and the decoys on it alike (over all decoys pooled, the audited regions
    // of the slower draws would lie high).
    let times = [60e3, 58e3, 56e3, 54e3, 52e3, 50e3];
    let audited: Vec<f64> = times.iter().map(|t| t + 20.0).collect();
    let decoys: Vec<Vec<f64>> = times.iter().map(|&t| vec![t - 40.0, t + 60.0, t]).collect();
    let rec = in_turn(&audited, &decoys, pauses.clone());
    let j = judge(&rec, &s, None, false);
    assert!(j.test(Tell::Data).unwrap().suspect.is_none(), "{j:?}");
    // An honest kernel of two behaviors: audited regions and decoys drawn from both alike.
    let groups = smeared_groups(6, 3);
    let audited: Vec<f64> = groups.iter().map(|g| g[1] + 300.0).collect();
    let rec = in_turn(&audited, &groups, pauses);
    let j = judge(&rec, &s, None, false);
    assert!(j.test(Tell::Data).unwrap().suspect.is_none(), "{j:?}");
}

#[test]
fn audited_regions_are_ranked_among_the_timed_launches_only_in_a_flushed_cell_of_the_kernel_alone()
{
    // All the work in its 15 audited regions, as much in its decoys as the bound allows.
    let (s, runs) = spread_wide();
    let audited: Vec<f64> = (0..15).map(|i| 16.2e3 + 50.0 * f64::from(i)).collect();
    let decoys: Vec<f64> = (0..12).map(|i| 14.5e3 + 200.0 * f64::from(i)).collect();
    let rec = run(audited, decoys, vec![11e3, 10.9e3, 11.1e3]);
    let data = |flushed: bool, host: bool| {
        let j = judge_cell(&rec, &s, Some(&runs), (flushed, host));
        j.test(Tell::Data).unwrap().suspect.clone()
    };
    let why = data(true, false).unwrap();
    assert!(
        why.contains("15 audited regions") && why.contains("the same flush"),
        "{why}"
    );
    // Hot, a stage's draw leaves L2 otherwise; by events on an idle queue, a wait slows the
    // host's launch: neither is set against the timed launches.
    assert!(data(false, false).is_none());
    assert!(data(true, true).is_none());
}

#[test]
fn audited_regions_spread_as_a_flushed_cells_timed_launches_are_not_ranked_high() {
    let (s, runs) = spread_wide();
    let decoys: Vec<f64> = (0..12).map(|i| 14.5e3 + 200.0 * f64::from(i)).collect();
    let data = |audited: Vec<f64>| {
        let rec = run(audited, decoys.clone(), vec![11e3, 10.9e3, 11.1e3]);
        let j = judge_cell(&rec, &s, Some(&runs), (true, false));
        j.test(Tell::Data).unwrap().suspect.clone()
    };
    // Spread as the timed launches are (5-17 µs).
    assert!(data((0..15).map(|i| 5.5e3 + 800.0 * f64::from(i)).collect()).is_none());
    // Three a little over the median, within what three readings alike reach.
    assert!(data(vec![12.5e3, 13.4e3, 14.1e3]).is_none());
}
