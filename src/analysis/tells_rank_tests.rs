//! The pause test's ranks (`tells::ranked_high`): pauses high among timed launches that a
//! kernel spread wide on purpose, and honest ones.

use super::bounds::*;
use super::reduce::SortedRun;
use super::stats::Stats;
use super::tells::*;
use super::tells_tests::run;
use crate::protocol::CellRecord;

/// As `quantile-smear` on an H200: 1000 timed launches spread flat from 5 to 17 µs (it skips
/// a share drawn anew each launch), median 11 µs.
fn spread_wide() -> (Stats, Vec<SortedRun>) {
    let sorted: Vec<f64> = (0..1000)
        .map(|i| 5e3 + 12e3 * f64::from(i) / 999.0)
        .collect();
    let s = Stats {
        count: 1000,
        median: 11e3,
        iqr: 7e3,
        max: 17e3,
        ..Default::default()
    };
    let runs = vec![SortedRun {
        process: 0,
        count: 1000,
        sorted,
    }];
    (s, runs)
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
    let readings = Readings {
        reading_ns: Some(s.median),
        steady: Some(s),
        steady_sorted: runs,
        flushed: false,
        stage_allowance_ns: Some(30e3),
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
/// spread flat from 35 to 60 µs, audited regions at all its work, 60.6 µs.
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

#[test]
fn audited_regions_high_among_decoys_spread_wide_on_purpose_are_suspect_by_their_ranks() {
    let audited = vec![60.6e3, 60.4e3, 60.8e3, 60.5e3, 60.7e3, 60.6e3];
    let pauses = smeared_decoys(24);
    let s = smeared_timed();
    // Over six decoys the ranks cannot reach a chance of a thousandth; over eighteen they do.
    let six = run(audited.clone(), smeared_decoys(6), pauses.clone());
    let j = judge(&six, &s, None, false);
    assert!(j.test(Tell::Data).unwrap().suspect.is_none(), "{j:?}");
    let eighteen = run(audited.clone(), smeared_decoys(18), pauses.clone());
    let data = judge(&eighteen, &s, None, false);
    let why = data.test(Tell::Data).unwrap().suspect.clone().unwrap();
    assert!(
        why.contains("6 audited regions") && why.contains("18 decoys"),
        "{why}"
    );
    // Whatever the timer: both follow a stage and the same pause.
    let host = judge(&eighteen, &s, None, true);
    assert!(host.test(Tell::Data).unwrap().suspect.is_some());
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
    let moved = judged(&[&eighteen], &readings).unwrap();
    let data = moved.test(Tell::Data).unwrap();
    assert!(data.suspect.is_none() || !data.suspect.as_ref().unwrap().contains("lie high"));
}

#[test]
fn audited_regions_spread_as_the_decoys_are_not_suspect_by_their_ranks() {
    let s = smeared_timed();
    let pauses = smeared_decoys(24);
    // An honest kernel of two behaviors: audited regions and decoys drawn from both alike.
    let decoys = smeared_decoys(18);
    let audited: Vec<f64> = decoys.iter().step_by(3).map(|d| d + 300.0).collect();
    let rec = run(audited, decoys.clone(), pauses.clone());
    let j = judge(&rec, &s, None, false);
    assert!(j.test(Tell::Data).unwrap().suspect.is_none(), "{j:?}");
    // In the upper half of the decoys' spread, among them: no finding.
    let upper: Vec<f64> = decoys
        .iter()
        .skip(9)
        .step_by(2)
        .map(|d| d + 300.0)
        .collect();
    assert_eq!(upper.len(), 5);
    let rec = run(upper, decoys, pauses);
    let j = judge(&rec, &s, None, false);
    assert!(j.test(Tell::Data).unwrap().suspect.is_none(), "{j:?}");
}
