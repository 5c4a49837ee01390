//! The worker reads a run's pauses again by CUPTI only where its records could change the
//! pause test's verdict (`method::confirm::pauses_read_again`): on cells of one run read by
//! events on an idle queue, the rule and the test agree on every cell.

use super::stats;
use super::tells::{judged, Readings};
use super::tells_tests::run;
use crate::analysis::bounds::Tell;
use crate::method::confirm::pauses_read_again;
use crate::protocol::samples_split;
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// `n` readings about `median_ns`, spread as a normal of `sigma_ns` (a sum of uniforms),
/// a few held up by the host's launch as events on an idle queue read it.
fn readings(rng: &mut SmallRng, n: usize, (median_ns, sigma_ns): (f64, f64)) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let normal: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
            let held_up = if rng.random::<f64>() < 0.02 {
                20e3
            } else {
                0.0
            };
            median_ns + sigma_ns * normal + held_up
        })
        .collect()
}

#[test]
fn pauses_are_read_again_exactly_where_the_pause_test_by_events_finds_them_slow() {
    let mut rng = SmallRng::seed_from_u64(0x5EED);
    let (mut read_again, mut cells) = (0, 0);
    for _ in 0..2_000 {
        let median_ns = rng.random_range(5e3..400e3);
        let sigma_ns = median_ns * rng.random_range(0.002..0.08);
        let n = rng.random_range(10..400);
        let samples = readings(&mut rng, n, (median_ns, sigma_ns));
        if samples_split(&samples) {
            continue;
        }
        // Pauses and staged regions over the timed median by up to eight of its sigmas.
        let shift = |rng: &mut SmallRng| median_ns + sigma_ns * rng.random_range(-1.0..8.0);
        let (pause_at, staged_at) = (shift(&mut rng), shift(&mut rng));
        let (k, staged_k) = (rng.random_range(3..12), rng.random_range(2..6));
        let pauses = readings(&mut rng, k, (pause_at, sigma_ns));
        let staged = readings(&mut rng, staged_k, (staged_at, sigma_ns));
        let (audited, decoys) = staged.split_at(staged.len() / 2);
        let record = run(audited.to_vec(), decoys.to_vec(), pauses.clone());
        let steady = stats::of(samples.clone()).unwrap();
        let r = Readings {
            reading_ns: Some(steady.median),
            steady: Some(&steady),
            flushed: false,
            stage_allowance_ns: None,
            host_in_reading: true,
            per_region: 1,
            clock_moved_to: None,
        };
        let judgement = judged(&[&record], &r).unwrap();
        let suspect = judgement
            .test(Tell::Pause)
            .is_some_and(|t| t.suspect.is_some());
        let again = pauses_read_again((&pauses, &staged), &samples, true);
        assert_eq!(again, suspect, "{samples:?} {pauses:?} {staged:?}");
        (read_again, cells) = (read_again + usize::from(again), cells + 1);
    }
    // Both ways: neither rule holds everywhere.
    assert!(
        read_again > cells / 10 && read_again < cells * 9 / 10,
        "{read_again} of {cells}"
    );
}
