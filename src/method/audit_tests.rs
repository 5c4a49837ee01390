//! The audit schedule's tests: the regions a run holds, where, and what a run that stops early
//! holds.

use super::*;
use crate::plan::audit_rounds::FLOOR;

/// Every region a run of `samples` holds, kinds counted.
fn run_all(seed: u64, samples: usize) -> (Vec<(usize, Region)>, [usize; 3]) {
    let mut s = Schedule::new(seed, (samples, samples), (1, 0), true);
    let mut all = Vec::new();
    for i in 0..samples {
        if let Some((k, _)) = s.due(i) {
            all.push((i, k));
        }
    }
    let mut c = [0; 3];
    for (_, k) in &all {
        c[*k as usize] += 1;
    }
    (all, c)
}

#[test]
fn a_cell_whose_times_are_not_judged_runs_its_audited_regions_alone_as_many_and_as_kept() {
    let due = |judged: bool| -> Vec<(usize, Region, Keep)> {
        let mut s = Schedule::new(11, (1000, 1000), (1, 0), judged);
        (0..1000)
            .filter_map(|i| s.due(i).map(|(k, keep)| (i, k, keep)))
            .collect()
    };
    let (all, audited) = (due(true), due(false));
    let of = |v: &[(usize, Region, Keep)], kind| v.iter().filter(|r| r.1 == kind).count();
    assert!(of(&all, Region::Decoy) > 0 && of(&all, Region::Pause) > 0);
    assert_eq!(of(&audited, Region::Audit), of(&all, Region::Audit));
    assert_eq!(audited.len(), of(&audited, Region::Audit));
    // The first round's floor of audited regions is kept either way.
    let always = |v: &[(usize, Region, Keep)]| v.iter().filter(|r| r.2 == Keep::Always).count();
    assert_eq!(always(&audited), FLOOR[0]);
}

#[test]
fn a_region_again_falls_later_in_the_round_a_sample_apart_from_the_others() {
    let mut s = Schedule::new(7, (300, 300), (1, 0), true);
    let planned: Vec<usize> = s.planned.iter().map(|p| p.0).collect();
    assert!(s.again(Region::Decoy, 19));
    let added: Vec<&(usize, Region, Keep)> = (s.planned.iter())
        .filter(|p| !planned.contains(&p.0))
        .collect();
    let &&(at, kind, keep) = added.first().unwrap();
    assert_eq!((added.len(), kind, keep), (1, Region::Decoy, Keep::Added));
    assert!(at > 20 && at < span(0).1, "{at}");
    assert!(
        planned.iter().all(|&p| p.abs_diff(at) >= 2),
        "{at} {planned:?}"
    );
    assert!(s.planned.windows(2).all(|w| w[0].0 < w[1].0));
    // Due in turn, as every planned region of the round is.
    let due: Vec<Region> = (0..span(0).1)
        .filter_map(|i| s.due(i).map(|d| d.0))
        .collect();
    assert_eq!(due.len(), planned.len() + 1);
    // No place left after the round's last sample.
    assert!(!Schedule::new(7, (300, 300), (1, 0), true).again(Region::Decoy, span(0).1));
}

#[test]
fn a_short_cell_affords_at_most_a_twentieth_of_its_samples_and_always_an_audit() {
    let one = |samples| first_round(samples, 1, 0);
    assert_eq!(one(0), [0, 0, 0]);
    assert_eq!(one(2), [0, 0, 0]);
    assert_eq!(one(3), [1, 0, 0]);
    assert_eq!(one(20), [1, 0, 0]);
    assert_eq!(one(40), [1, 0, 1]);
    assert_eq!(one(60), [1, 1, 1]);
    assert_eq!(one(59), [1, 0, 1]);
    assert_eq!(crate::plan::audit_rounds::samples_for_a_decoy(), 60);
    assert_eq!(one(100), [2, 2, 1]);
    assert_eq!(one(120), [2, 2, 2]);
    assert_eq!(one(140), [2, 2, 3]);
    // The third audited region (a probe) after the floor's three pauses.
    assert_eq!(one(160), [3, 2, 3]);
    assert_eq!(one(10_000), [3, 2, 5]);
    // Five rounds of 40 share the ten their 200 samples afford, in the three that hold an
    // audited region: a round without one is not audited among its launches, and its
    // pauses would be lost (an interleaved cell held three of its six so). A round that
    // holds a decoy holds the floor's three pauses, its own pause tests' median.
    let rounds: Vec<_> = (0..5).map(|r| first_round(40, 5, r)).collect();
    assert_eq!(
        rounds,
        [[1, 1, 3], [1, 1, 3], [1, 0, 1], [0, 0, 0], [0, 0, 0]]
    );
    // The third run's audited region follows the first two's (a probe, `among::seeds`).
    let before: Vec<_> = (0..5).map(|r| audited_before(40, 5, r)).collect();
    assert_eq!(before, [0, 1, 2, 3, 3]);
    // Their floor is their whole round: the cell's pauses are pooled, and three of them in
    // all let a LayerNorm that reads its launch period through.
    let floors: Vec<_> = (0..5).map(|r| run_floor(40, 5, r)).collect();
    assert_eq!(floors, [[1, 1, 3], [1, 1, 3], [1, 0, 1], [0; 3], [0; 3]]);
    assert_eq!(run_floor(200, 1, 0), [3, 2, 3]);
    // Five rounds of 60 afford a set each: an audited region in each.
    let rounds: Vec<_> = (0..5).map(|r| first_round(60, 5, r)).collect();
    assert_eq!(
        rounds,
        [[1, 1, 1], [1, 1, 1], [1, 0, 1], [1, 0, 1], [1, 0, 1]]
    );
    // Ten processes of 5 samples: the audited region and the pause the 50 samples
    // afford, in the run the seed draws.
    assert_eq!(first_round(5, 10, 0), [1, 0, 1]);
    // Twelve of 5: the audited region and a pause, not a decoy (a cell with no pause
    // has no pause test).
    assert_eq!(first_round(5, 12, 0), [1, 0, 1]);
    assert_eq!(first_round(5, 12, 1), [0, 0, 0]);
    assert_eq!(first_round(5, 10, 9), [0, 0, 0]);
    assert_eq!(first_round(4, 10, 0), [1, 0, 0]);
}

#[test]
fn regions_are_apart_after_the_first_sample_and_follow_the_seed() {
    for samples in [3, 4, 9, 10, 17, 20, 100, 200, 399, 401, 10_000] {
        let (all, _) = run_all(7, samples);
        assert!(!all.is_empty(), "{samples}");
        assert!(all.iter().all(|&(i, _)| i >= 1 && i < samples), "{all:?}");
        assert!(all.windows(2).all(|w| w[1].0 > w[0].0), "{all:?}");
        assert!(
            all.windows(2)
                .all(|w| w[1].0 >= w[0].0 + 2 || w[1].0 % ROUND < 2),
            "{all:?}"
        );
        assert_eq!(all, run_all(7, samples).0);
    }
    assert_ne!(run_all(7, 10_000).0, run_all(8, 10_000).0);
    assert!(run_all(7, 2).0.is_empty());
}

#[test]
fn no_pause_is_among_the_first_launches_after_the_first_draw() {
    let mut early_staged = 0;
    for seed in 0..400 {
        for samples in [10, 20, 200, 1000] {
            let (all, _) = run_all(seed, samples);
            let early: Vec<_> = all.iter().filter(|&&(i, _)| i < FIRST_PAUSE).collect();
            assert!(early.iter().all(|&&(_, k)| k != Region::Pause), "{all:?}");
            early_staged += early.len();
            for stop in [2, 5, 30] {
                let mut s = Schedule::new(seed, (samples, stop), (1, 0), true);
                let due = (0..samples).filter_map(|i| s.due(i).map(|(k, _)| (i, k)));
                assert!(due
                    .take_while(|&(i, _)| i < FIRST_PAUSE)
                    .all(|(_, k)| k != Region::Pause));
            }
        }
    }
    // Staged regions still take the early places.
    assert!(early_staged > 100, "{early_staged}");
}

#[test]
fn rounds_double_so_a_long_cell_pays_a_falling_share() {
    let (_, c) = run_all(3, 200);
    assert_eq!(c, [3, 2, 5]);
    let (_, c) = run_all(3, 400);
    assert_eq!(c, [6, 4, 10]);
    // 200, 200, 400, 800, ..., 51200 and what is left of 100,000: 10 rounds of ten.
    let (all, c) = run_all(3, 100_000);
    assert_eq!(all.len(), 100, "{c:?}");
    assert_eq!(c, [30, 20, 50]);
}

#[test]
fn regions_past_their_share_of_the_cells_time_are_left_out() {
    let ms = Duration::from_millis;
    let cap = |cell| (ms(cell), SHARE_CAP);
    assert!(affords(&[], &[Region::Audit], cap(0)));
    // Two audits of 4 ms in a cell of 100 ms so far: a decoy counted at the regions'
    // mean (4 ms) would make 12 of 104.
    let two = [(Region::Audit, ms(4)), (Region::Audit, ms(4))];
    assert!(!affords(&two, &[Region::Decoy], cap(100)));
    assert!(affords(&two, &[Region::Decoy], cap(300)));
    // A pause counted at the pauses' own cost, not the audits'.
    let three = [
        (Region::Audit, ms(4)),
        (Region::Audit, ms(4)),
        (Region::Pause, ms(1)),
    ];
    assert!(affords(&three, &[Region::Pause], cap(200)));
    assert!(!affords(&three, &[Region::Audit], cap(200)));
    assert!(affords(&three, &[Region::Audit], cap(300)));
    // The floor still to come is counted too: a pause now would make 10 ms of a
    // projected 301 (3.3%), with an audit later 14 of 305 (4.6%, over 4%).
    let plan = (ms(300), PLANNED_SHARE);
    assert!(affords(&three, &[Region::Pause], plan));
    assert!(!affords(&three, &[Region::Pause, Region::Audit], plan));
}

#[test]
fn the_first_rounds_floor_is_never_left_out_and_its_others_by_the_plan() {
    for seed in 0..20 {
        let mut s = Schedule::new(seed, (1000, 1000), (1, 0), true);
        let due: Vec<(usize, Region, Keep)> = (0..1000)
            .filter_map(|i| s.due(i).map(|(kind, keep)| (i, kind, keep)))
            .collect();
        let first = |keep| {
            let of = due.iter().filter(|d| d.0 < ROUND && d.2 == keep);
            let mut c = [0; 3];
            of.for_each(|d| c[d.1 as usize] += 1);
            c
        };
        // Three audited regions (the third a probe), two decoys and three pauses; two pauses
        // beyond.
        assert_eq!(first(Keep::Always), [3, 2, 3], "{due:?}");
        assert_eq!(first(Keep::WithinPlan), [0, 0, 2], "{due:?}");
        assert!(due
            .iter()
            .all(|d| (d.0 < ROUND) == (d.2 != Keep::WithinCap)));
        // The floor is the first of each kind.
        for kind in [Region::Audit, Region::Decoy, Region::Pause] {
            let of: Vec<Keep> = (due.iter().filter(|d| d.0 < ROUND && d.1 == kind))
                .map(|d| d.2)
                .collect();
            assert!(of
                .windows(2)
                .all(|w| w[0] == Keep::Always || w[1] != Keep::Always));
        }
    }
    // A short cell's floor is what its round holds of it.
    let mut s = Schedule::new(3, (60, 60), (1, 0), true);
    let keeps: Vec<Keep> = (0..60).filter_map(|i| s.due(i).map(|d| d.1)).collect();
    assert_eq!(keeps, [Keep::Always; 3]);
}

#[test]
fn a_loop_that_stops_early_pays_for_the_samples_it_took() {
    // Stopped after 23 of a 100,000 cap: what ran, and an audited region if none did.
    for seed in 0..20 {
        let mut s = Schedule::new(seed, (100_000, 100_000), (1, 0), true);
        let ran: Vec<Region> = (0..23).filter_map(|i| s.due(i).map(|d| d.0)).collect();
        let after = s.after(23, &ran);
        match ran.contains(&Region::Audit) {
            true => assert!(after.is_empty(), "{ran:?} {after:?}"),
            false => assert_eq!(after, [(Region::Audit, Keep::Always)], "{ran:?}"),
        }
    }
    // Stopped after 150: the 7 of the first round its samples afford.
    let mut s = Schedule::new(5, (100_000, 100_000), (1, 0), true);
    let ran: Vec<Region> = (0..150).filter_map(|i| s.due(i).map(|d| d.0)).collect();
    let after = s.after(150, &ran);
    assert_eq!(ran.len() + after.len(), 7, "{ran:?} {after:?}");
    // A run that takes 23 at least (a stop rule's least time at its first launch's
    // pace) holds among them what they afford, an audited region, and nothing after
    // where it stops there; where it goes on to 150, what those afford (7) at least,
    // among its samples or after them, and no more than the round's 10.
    for seed in 0..20 {
        let mut s = Schedule::new(seed, (100_000, 23), (1, 0), true);
        let ran: Vec<Region> = (0..23).filter_map(|i| s.due(i).map(|d| d.0)).collect();
        assert_eq!(ran, [Region::Audit], "{seed}");
        assert!(s.after(23, &ran).is_empty());
        let mut s = Schedule::new(seed, (100_000, 23), (1, 0), true);
        let ran: Vec<Region> = (0..150).filter_map(|i| s.due(i).map(|d| d.0)).collect();
        let after = s.after(150, &ran);
        let held = ran.len() + after.len();
        assert!((7..=10).contains(&held), "{ran:?} {after:?}");
        let mut all = Schedule::new(seed, (100_000, 23), (1, 0), true);
        let whole: Vec<Region> = (0..200).filter_map(|i| all.due(i).map(|d| d.0)).collect();
        let kinds = |k: Region| whole.iter().filter(|&&r| r == k).count();
        let kinds = [Region::Audit, Region::Decoy, Region::Pause].map(kinds);
        assert_eq!(kinds, first_round(200, 1, 0), "{seed}: the whole round");
    }
    // Stopped in the third round: nothing more.
    let mut s = Schedule::new(5, (100_000, 100_000), (1, 0), true);
    let ran: Vec<Region> = (0..500).filter_map(|i| s.due(i).map(|d| d.0)).collect();
    assert!(s.after(500, &ran).is_empty());
    assert!(ran.len() >= 12);
}

#[test]
fn a_cell_whose_times_are_not_judged_that_stops_early_holds_what_its_samples_afford() {
    // 60 samples afford an audited region, a decoy and a pause: of those, the audited one,
    // and none after the samples where one ran among them (the floor's second is not owed).
    for seed in 0..40 {
        let mut s = Schedule::new(seed, (100_000, 23), (1, 0), false);
        let ran: Vec<Region> = (0..60).filter_map(|i| s.due(i).map(|d| d.0)).collect();
        assert!(
            ran.iter().all(|&k| k == Region::Audit) && !ran.is_empty(),
            "{ran:?}"
        );
        let after = s.after(60, &ran);
        assert!(after.is_empty(), "{seed}: {ran:?} {after:?}");
    }
}

#[test]
fn a_run_that_stops_before_its_fewest_still_holds_an_audited_region() {
    // Its fewest afforded none (2 samples), and it stopped after 1: the audit is owed.
    let mut s = Schedule::new(3, (100_000, 2), (1, 0), true);
    let ran: Vec<Region> = (0..1).filter_map(|i| s.due(i).map(|d| d.0)).collect();
    assert!(ran.is_empty());
    assert_eq!(s.after(1, &ran), [(Region::Audit, Keep::Always)]);
}

#[test]
fn regions_added_again_and_the_rounds_rest_stay_apart() {
    for seed in 0..50 {
        let mut s = Schedule::new(seed, (100_000, 80), (1, 0), true);
        // A decoy again before the rest is placed falls among the fewest, a sample short of
        // where the rest begins.
        assert!(s.again(Region::Decoy, 5));
        assert!(s.planned.iter().all(|p| p.0 < 79), "{:?}", s.planned);
        let mut places = Vec::new();
        for i in 0..200 {
            if s.due(i).is_some() {
                places.push(i);
            }
        }
        assert!(
            places.windows(2).all(|w| w[1] >= w[0] + 2),
            "{seed}: {places:?}"
        );
    }
}

#[test]
fn a_widened_round_keeps_every_region_and_adds_audited_regions_decoys_and_pauses_once() {
    let mut s = Schedule::new(5, (200, 200), (1, 0), true);
    let before = s.planned.len();
    let pauses_before = s.planned.iter().filter(|p| p.1 == Region::Pause).count();
    s.widen(30, (4, 12, 18));
    let placed = s.planned.len() - before;
    assert!(placed >= 6, "{placed}");
    assert!(s.planned.iter().all(|p| p.2 != Keep::WithinPlan));
    let kinds = |k: Region| s.planned.iter().filter(|p| p.1 == k && p.0 > 31).count();
    assert!(kinds(Region::Audit) >= 3 && kinds(Region::Decoy) >= 3);
    let pauses = s.planned.iter().filter(|p| p.1 == Region::Pause).count();
    assert_eq!(pauses, pauses_before + 18, "{:?}", s.planned);
    assert!(kinds(Region::Decoy) >= 16, "{:?}", s.planned);
    assert_eq!(placed, 38);
    assert!(s.planned.windows(2).all(|w| w[1].0 >= w[0].0 + 2));
    // Once a run.
    s.widen(60, (4, 12, 18));
    assert_eq!(s.planned.len(), before + placed);
}

#[test]
fn a_loop_that_stops_early_runs_none_of_the_regions_added_among_its_samples_nor_counts_them() {
    // The same seed plans the same first round; widening only adds to it. Stopped at 80
    // samples, which afford four regions: of the plan, three ran, one is owed.
    let stop_at = |widen: bool| {
        let mut s = Schedule::new(5, (200, 200), (1, 0), true);
        if widen {
            s.widen(30, (4, 12, 18));
        }
        let ran: Vec<(Region, Keep)> = (0..80).filter_map(|i| s.due(i)).collect();
        let kinds: Vec<Region> = ran.iter().map(|r| r.0).collect();
        let added_past = s.planned.iter().any(|p| p.2 == Keep::Added);
        (ran, added_past, s.after(80, &kinds))
    };
    let (plain_ran, _, plain) = stop_at(false);
    let (ran, added_past, widened) = stop_at(true);
    assert!(ran.len() > plain_ran.len() && added_past, "{ran:?}");
    let kinds = |v: &[(Region, Keep)]| v.iter().map(|r| r.0).collect::<Vec<_>>();
    assert_eq!(plain.len(), 1);
    assert_eq!(kinds(&widened), kinds(&plain));
    // Where an added decoy would come first of those left, none runs after the loop.
    let mut s = Schedule::new(1, (200, 200), (1, 0), true);
    s.widen(30, (4, 12, 18));
    let ran: Vec<Region> = (0..120).filter_map(|i| s.due(i).map(|d| d.0)).collect();
    assert!(s.planned.iter().any(|p| p.2 == Keep::Added));
    assert!(s.after(120, &ran).iter().all(|p| p.1 != Keep::Added));
}

#[test]
fn a_region_due_right_after_a_wait_runs_a_sample_later_and_the_rest_where_they_were() {
    let (all, _) = run_all(9, 300);
    let (first, kind) = all[0];
    let mut s = Schedule::new(9, (300, 300), (1, 0), true);
    let mut due = Vec::new();
    for i in 0..300 {
        if i == first {
            s.wait_a_sample();
        }
        if let Some((k, _)) = s.due(i) {
            due.push((i, k));
        }
    }
    assert_eq!(due[0], (first + 1, kind), "{all:?}");
    assert_eq!(
        due[1..],
        all[1..],
        "regions apart by more than a sample stay where they were"
    );
}
