//! The pause test's ranks (`tells::ranked_high`): pauses high among timed launches that a
//! kernel spread wide on purpose, and honest ones.

use super::bounds::*;
use super::stats::Stats;
use super::tells::*;
use super::tells_tests::run;

#[test]
fn pauses_high_among_timed_launches_spread_wide_on_purpose_are_suspect_by_their_ranks() {
    // As `quantile-smear` on an H200: 1000 timed launches spread flat from 5 to 17 µs (it
    // skips a share drawn anew each launch), 24 pauses at all its work, 15.5-17.4 µs, but
    // half of them lower (the tell missed there). The medians' bound, from the timed
    // spread, holds the pauses; their ranks do not.
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
    let pauses: Vec<f64> = (0..24)
        .map(|i| match i % 2 {
            0 => 12.5e3 + 100.0 * f64::from(i),
            _ => 15.5e3 + 80.0 * f64::from(i),
        })
        .collect();
    let staged = vec![16.9e3, 17.1e3, 17.0e3, 16.8e3];
    let rec = run(staged.clone(), staged.clone(), pauses.clone());
    let readings = |host_in_reading, ranked: bool| Readings {
        reading_ns: Some(s.median),
        steady: Some(&s),
        steady_sorted: ranked.then_some(&sorted[..]),
        flushed: false,
        stage_allowance_ns: Some(30e3),
        host_in_reading,
        per_region: 1,
        clock_moved_to: None,
    };
    let without = judged(&[&rec], &readings(false, false)).unwrap();
    let medians = without.test(Tell::Pause).unwrap();
    assert!(medians.suspect.is_none(), "{medians:?}");
    let with = judged(&[&rec], &readings(false, true)).unwrap();
    let why = with.test(Tell::Pause).unwrap().suspect.clone().unwrap();
    assert!(
        why.contains("24 pauses") && why.contains("lie high"),
        "{why}"
    );
    // Where the reading holds the host's launch, the ranks say nothing.
    let host = judged(&[&rec], &readings(true, true)).unwrap();
    assert!(host.test(Tell::Pause).unwrap().suspect.is_none());
    // Pauses spread as the timed launches are, a little above them: nothing.
    let honest: Vec<f64> = (0..24).map(|i| 5.5e3 + 500.0 * f64::from(i)).collect();
    let rec = run(staged.clone(), staged, honest);
    let j = judged(&[&rec], &readings(false, true)).unwrap();
    assert!(j.test(Tell::Pause).unwrap().suspect.is_none());
}
