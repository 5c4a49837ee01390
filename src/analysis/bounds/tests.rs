//! The bounds on simulated and measured readings.

use super::*;

#[test]
fn a_lone_region_the_band_would_judge_is_confirmed_first_and_one_slow_reading_passes() {
    // A host held up once (H200, events, 7.55 µs kernel): passes on the second.
    let once = band(&[30_080.0, 7_700.0], 7_552.0, None).unwrap();
    assert!(once.suspect.is_none(), "{:?}", once.suspect);
    // Slow both times: suspect.
    let both = band(&[30_080.0, 29_000.0], 7_552.0, None).unwrap();
    assert!(both.suspect.unwrap().contains("2 launches (lower median)"));
}

#[test]
fn regions_beyond_the_bound_count_only_against_decoys_staged_alike() {
    let spread = Spread {
        sigma: 300.0,
        tail: 0.02,
        single: true,
        allowance_ns: 0.0,
    };
    let decoys = [365e3; 5];
    // An honest kernel whose stage now and then leaves a region 10% slower: two of five
    // audited regions, their lower median with the decoys'.
    let honest = [365e3, 403e3, 364e3, 402e3, 365e3];
    let t = against(Tell::Data, &honest, &decoys, spread).unwrap();
    assert_eq!(t.beyond, 2);
    assert_eq!(t.suspect, None);
    // A kernel slow on every new draw is caught by its median.
    let t = against(Tell::Data, &[403e3; 5], &decoys, spread).unwrap();
    assert!(t.suspect.unwrap().contains("lower median"));
    // Half of twenty regions beyond, none of twenty decoys: the split is evidence.
    let mut half = vec![365e3; 10];
    half.extend([420e3; 10]);
    let t = against(Tell::Data, &half, &[365e3; 20], spread).unwrap();
    assert!(
        t.suspect.as_ref().unwrap().contains("of 20 decoys"),
        "{t:?}"
    );
}

#[test]
fn a_lone_region_within_the_timed_samples_tail_is_no_group_beyond_it() {
    // A hot stencil by CUPTI on an H200: timed median 25.73 µs, quartiles 32 ns apart, the
    // launches after a draw up to 35.07 µs; its one pause, the second launch after the
    // first draw, 30.98 µs.
    let spread = Spread {
        sigma: iqr_sigma(32.0),
        tail: 35.07 / 25.73 - 1.0,
        single: true,
        allowance_ns: 0.0,
    };
    let base = Baseline {
        median_ns: 25_730.0,
        count: 50,
    };
    let t = against_baseline(Tell::Pause, &[30_980.0], base, (spread, None)).unwrap();
    assert_eq!(t.suspect, None, "{t:?}");
    assert!(t.bound_ns > 9_000.0 && t.limit > 0.25, "{t:?}");
    // Beyond the farthest timed sample: suspect.
    let t = against_baseline(Tell::Pause, &[36_500.0], base, (spread, None)).unwrap();
    assert!(t.suspect.is_some(), "{t:?}");
    // Two pauses there: the group's bound is its quartiles' again.
    let t = against_baseline(Tell::Pause, &[30_980.0; 2], base, (spread, None)).unwrap();
    assert!(t.suspect.is_some(), "{t:?}");
    // Where one region alone is no evidence (a reading that holds the host's launch), the
    // group of one keeps its own bound: a slow one gets more after the samples.
    let host = Spread {
        single: false,
        ..spread
    };
    let t = against_baseline(Tell::Pause, &[30_980.0], base, (host, None)).unwrap();
    assert!(t.suspect.is_some(), "{t:?}");
}

/// A kernel that skips as much as a limit says, its regions and baseline as spread as
/// the bound assumes (normal), in many simulated cells: at least 19 of 20 caught by the
/// medians alone (98-99%: each median takes half the chance), for groups of two (the
/// smaller of two) to twenty; one that only meets the bound passes half the time or more
/// (of two, three times in four).
#[test]
fn a_kernel_at_the_detection_limit_is_caught_nineteen_times_in_twenty() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let mut rng = SmallRng::seed_from_u64(47);
    let mut normal = move || {
        let (u1, u2): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    };
    let (timed, sigma, m) = (100e3, 1e3, 200);
    let spread = Spread {
        sigma,
        tail: 0.0,
        single: false,
        allowance_ns: 0.0,
    };
    let base = |median_ns| Baseline {
        median_ns,
        count: m,
    };
    for k in [2, 3, 20] {
        let honest = against_baseline(Tell::Pause, &vec![timed; k], base(timed), (spread, None));
        let honest = honest.unwrap();
        let shift = |limit: f64| limit / (1.0 - limit) * timed;
        let mut caught_at = |shift_ns: f64| {
            let trials = 2000;
            let caught = (0..trials)
                .filter(|_| {
                    let mut baseline: Vec<f64> = (0..m).map(|_| timed + sigma * normal()).collect();
                    let median_ns = median(std::mem::take(&mut baseline)).unwrap();
                    let regions: Vec<f64> = (0..k)
                        .map(|_| timed + shift_ns + sigma * normal())
                        .collect();
                    let t =
                        against_baseline(Tell::Pause, &regions, base(median_ns), (spread, None));
                    t.unwrap().suspect.is_some()
                })
                .count();
            caught as f64 / trials as f64
        };
        let at_limit = caught_at(shift(honest.limit));
        assert!((0.94..0.995).contains(&at_limit), "k = {k}: {at_limit}");
        let at_bound = caught_at(honest.bound_ns);
        assert!((0.2..0.6).contains(&at_bound), "k = {k}: {at_bound}");
    }
}

#[test]
fn audited_regions_and_decoys_are_judged_by_what_a_stage_adds_to_both() {
    // An honest histogram, interleaved, by CUPTI on an H200 (`trust` at ea42a5b): timed
    // samples of 8.19 µs an interquartile range of 32 ns apart, pauses as the timed ones, its
    // two audited regions 0.83 µs over its two decoys, both about 1 µs over the pauses.
    let timed = Spread {
        sigma: 32.0 / 1.349,
        tail: 0.0,
        single: false,
        allowance_ns: 0.0,
    };
    let (audited, decoys) = ([9.82e3, 9.70e3], [8.96e3, 8.77e3]);
    let pauses = [8.19e3, 8.16e3, 8.19e3, 8.19e3, 8.19e3, 8.22e3];
    let by_timed = against(Tell::Data, &audited, &decoys, timed.with_decoys(&decoys)).unwrap();
    assert!(
        by_timed.suspect.is_some(),
        "the bound was {}",
        by_timed.bound_ns
    );
    let spread = timed
        .with_decoys(&decoys)
        .with_stage_noise(&decoys, &pauses, 1);
    let test = against(Tell::Data, &audited, &decoys, spread).unwrap();
    assert!(test.suspect.is_none(), "{:?}", test.suspect);
    assert!(
        (spread.sigma - (100.0f64 * 0.58e3).sqrt()).abs() < 1.0,
        "{}",
        spread.sigma
    );
    // A result cache: its decoys hit as its pauses do, and nothing widens the bound.
    let (cache, hits) = ([54.0e3, 54.4e3], [11.6e3, 11.8e3]);
    let spread = timed
        .with_decoys(&hits)
        .with_stage_noise(&hits, &[11.5e3; 6], 1);
    assert!(against(Tell::Data, &cache, &hits, spread)
        .unwrap()
        .suspect
        .is_some());
    // One that skips a tenth on data it has seen, its stages as the histogram's.
    let tenth = [10.9e3, 11.0e3];
    let spread = timed
        .with_decoys(&decoys)
        .with_stage_noise(&decoys, &pauses, 1);
    assert!(against(Tell::Data, &tenth, &decoys, spread)
        .unwrap()
        .suspect
        .is_some());
}

/// A 4-slot cache whose hits a stage slowed (decoys 14.34 µs, pauses 11.49 µs, timed
/// launches 11.07 µs; H200, `trust-adversary-3` at 9a8039d) passed 33.2% faster than the
/// honest kernel: its data test's limit is a share of the work where it is timed, with what
/// the stage added to its decoys, so it states no less.
#[test]
fn a_data_tests_limit_is_a_share_of_the_work_where_the_kernel_is_timed() {
    let spread = Spread {
        sigma: 400.0,
        tail: 0.05,
        single: true,
        allowance_ns: 0.0,
    };
    let test = against(Tell::Data, &[17_240.0], &[14_340.0], spread).unwrap();
    let by_decoys = test.limit;
    let caught_from = 14_340.0 / (1.0 - by_decoys);
    let as_timed = share_where_timed(test.clone(), (11_490.0, 11_070.0));
    let skipped = caught_from - 11_490.0;
    assert!((as_timed.limit - skipped / (11_070.0 + skipped)).abs() < 1e-12);
    assert!(
        as_timed.limit > 0.332 && as_timed.limit > by_decoys + 0.1,
        "{as_timed:?}"
    );
    // Decoys as slow as the pauses (a kernel that works after any pause): the shift over the
    // timed median, a little over the test's own where the timed launches read faster.
    let pause_tell = share_where_timed(test.clone(), (14_340.0, 11_070.0));
    let shift = caught_from - 14_340.0;
    assert!((pause_tell.limit - shift / (11_070.0 + shift)).abs() < 1e-12);
    assert!(pause_tell.limit < by_decoys + 0.1);
    // Decoys faster than the pauses and the timed launches: the test's own limit stands.
    assert_eq!(
        share_where_timed(test.clone(), (15_000.0, 15_000.0)).limit,
        by_decoys
    );
    assert_eq!(
        share_where_timed(test, (f64::NAN, f64::NAN)).limit,
        by_decoys
    );
}
