//! When the audit runs regions after a run's samples to confirm what its regions read, and
//! when CUPTI reads its pauses again: the decisions the worker makes once the samples are
//! taken (`worker::audit::among`, `worker::audit::by_cupti`); the constants are
//! `protocol`'s.

use super::audit::Region;
use crate::experiment::knobs::{queue::Queue, timer::TimerKind, Knobs};
use crate::protocol::{
    margin_ns, past_the_hosts_launch, CONFIRM_RATIO, MIN_SAMPLES, Z_FALSE_ALARM,
};

/// Whether a cell's lone audited region, read `reading_ns` (NaN where the timer reads later,
/// as CUPTI's records do: those hold no host time), needs a second: see [`CONFIRM_RATIO`].
pub fn needs_confirming(reading_ns: f64, timed_median_ns: Option<f64>) -> bool {
    timed_median_ns.is_some_and(|m| reading_ns.is_finite() && reading_ns > CONFIRM_RATIO * m)
}

/// Which confirmation a run asks for: its first or a later one, of readings the timer took
/// as the regions ran (events, a host timer) or CUPTI's records read after the samples.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    pub first: bool,
    pub as_they_ran: bool,
}

/// The regions after a run's samples that confirm what its audited regions, decoys and
/// pauses read (`[audited, decoys, pauses]`, NaN where the timer reads later) against its
/// timed median: where the staged regions read slow against pauses `staged_alike` (see
/// [`staged_need_confirming`]), more audited regions and pauses, asked again after each; in
/// a run's first, more audited regions where they read slow against the decoys; and there,
/// of readings taken as they ran, a second audited region where its only one, with no decoy
/// to set it against, read far above it (a host held up), more pauses where the pauses read
/// slow. Audited regions are checked, and pauses are the stage test's baseline, which a
/// kernel that tells the regions after its samples apart can only pull down there; pauses
/// added to outvote slow pauses it could skip in, and CUPTI's records hold no host's time.
pub fn confirming(
    [audited, decoys, pauses]: [Vec<f64>; 3],
    timed_ns: Option<f64>,
    staged_alike: bool,
    asked: Asked,
) -> Vec<Region> {
    let staged = [&audited[..], &decoys[..]].concat();
    let stage_slow = staged_alike && staged_need_confirming(&staged, &pauses);
    let as_ran = asked.first && asked.as_they_ran;
    let lone = (audited.as_slice(), decoys.is_empty());
    let lone_slow = matches!(lone, (&[lone], true) if needs_confirming(lone, timed_ns));
    let mut regions: Vec<Region> = (as_ran && lone_slow)
        .then_some(Region::Audit)
        .into_iter()
        .collect();
    if stage_slow || (asked.first && audits_need_confirming(&audited, &decoys)) {
        regions.extend([Region::Audit; crate::protocol::CONFIRM_AUDITS]);
    }
    if stage_slow || (as_ran && pauses_need_confirming(&pauses, timed_ns)) {
        regions.extend([Region::Pause; crate::protocol::CONFIRM_PAUSES]);
    }
    regions
}

/// Whether a run whose pauses are staged as its other regions are (a cold cell's draw the
/// held data again, or the outputs poisoned where nothing is drawn), so that its stage test
/// allows nothing for what a stage leaves, needs more audited regions and pauses: its
/// staged regions' lower median (`staged_ns`, audited and decoys) over the pauses' median by
/// more than the margin. A kernel of two speeds makes three regions a small vote: an honest
/// argmax cold on an H200, at 16.4 µs and in a fifth of its launches 17.3 µs, had two of its
/// three staged regions slow and its three pauses fast, and was suspect. Audited regions, not
/// decoys: each is checked, so a kernel that tells regions after the samples apart cannot
/// skip there to pull the staged regions down. Asked again after each confirmation, up to
/// [`crate::protocol::STAGE_CONFIRMATIONS`] times.
pub fn staged_need_confirming(staged_ns: &[f64], pauses_ns: &[f64]) -> bool {
    let staged = crate::statistics::lower_median(&read(staged_ns));
    let pauses = crate::statistics::median(read(pauses_ns));
    matches!((staged, pauses), (Some(s), Some(p)) if s - p > margin_ns(p))
}

/// Whether a decoy's first launch (`first_ns`, in a region of several; NaN where not read)
/// read over the timed regions' first launches so far (`timed_firsts`) by more than one of
/// them may by noise ([`Z_FALSE_ALARM`] of their spread's sigma) and the margin, so that a
/// later decoy is judged beside it. By events on an idle queue a first launch holds the
/// host's submission: on an H200 a result cache's batch at n = 512 had one decoy, whose
/// first launch read 52.48 µs against the timed first launches' 36.38 µs (a host held up),
/// and the cache passed 50.2% faster than the honest matmul, over its stated 45.4% limit.
pub fn first_spoiled(first_ns: f64, timed_firsts: &[f64]) -> bool {
    let timed = read(timed_firsts);
    let Some(median) = crate::statistics::median(timed.clone()) else {
        return false;
    };
    let noise = Z_FALSE_ALARM * crate::statistics::iqr_sigma(crate::statistics::iqr(&timed));
    timed.len() >= MIN_SAMPLES && first_ns - median > noise + margin_ns(median)
}

/// Whether a run's timed regions of `launches` each, whose first launches read `first_ns`
/// (median) and the regions `reading_ns` a launch, need [`crate::protocol::CUPTI_FIRSTS`]
/// more read by CUPTI: the first over the launches after it by more than the host's launch
/// ([`crate::protocol::HOST_LAUNCH_NS`]), which a reading by events on an idle queue holds.
pub fn first_needs_confirming(
    first_ns: Option<f64>,
    reading_ns: Option<f64>,
    launches: u64,
) -> bool {
    let Some((first, reading)) = first_ns.zip(reading_ns) else {
        return false;
    };
    let rest = crate::protocol::rest_of_region(first, reading, launches);
    launches > 1 && first - rest > crate::protocol::HOST_LAUNCH_NS
}

/// Whether a run's audited regions, read `audited_ns` (NaN where the timer reads later),
/// need [`crate::protocol::CONFIRM_AUDITS`] more beside as many decoys: their lower median
/// over the median of the decoys, read `decoys_ns`, by more than the margin.
pub fn audits_need_confirming(audited_ns: &[f64], decoys_ns: &[f64]) -> bool {
    let audited = crate::statistics::lower_median(&read(audited_ns));
    let decoys = crate::statistics::median(read(decoys_ns));
    matches!((audited, decoys), (Some(a), Some(d)) if a - d > margin_ns(d))
}

/// Whether a run's pauses, read `pauses_ns` (NaN where the timer reads later), need
/// [`crate::protocol::CONFIRM_PAUSES`] more: their lower median over the timed one by more
/// than the margin.
pub fn pauses_need_confirming(pauses_ns: &[f64], timed_median_ns: Option<f64>) -> bool {
    pauses_over(pauses_ns, timed_median_ns)
}

/// Whether they read over it by more than a pause can add to the host's launch and the
/// margin ([`crate::protocol::past_the_hosts_launch`]): reading the kernel alone cannot
/// clear them.
pub fn beyond_the_hosts_launch(pauses_ns: &[f64], timed_median_ns: Option<f64>) -> bool {
    let lower = crate::statistics::lower_median(&read(pauses_ns));
    matches!((lower, timed_median_ns), (Some(p), Some(m)) if past_the_hosts_launch(p, m))
}

/// Whether a run whose timed samples (`samples_ns`, in order) split in two behaviors read
/// its pauses and its staged regions (`staged_ns`) both over their median by more than the
/// margin, with the slower behavior, as a kernel's that works after a long gap and pads some
/// timed launches up to them do: its pauses are then read again by CUPTI,
/// [`crate::protocol::SPLIT_PAUSES`] of them.
pub fn split_with_the_slow(samples_ns: &[f64], pauses_ns: &[f64], staged_ns: &[f64]) -> bool {
    let timed = crate::statistics::median(read(samples_ns));
    crate::protocol::samples_split(samples_ns)
        && pauses_over(pauses_ns, timed)
        && pauses_over(staged_ns, timed)
}

/// The pauses' lower median over the timed median by more than the margin.
fn pauses_over(pauses_ns: &[f64], timed_median_ns: Option<f64>) -> bool {
    let lower = crate::statistics::lower_median(&read(pauses_ns));
    matches!((lower, timed_median_ns), (Some(p), Some(m)) if p - m > margin_ns(m))
}

/// The readings a timer gave as the regions ran (NaN where it reads later).
fn read(readings: &[f64]) -> Vec<f64> {
    readings.iter().copied().filter(|r| r.is_finite()).collect()
}

/// Whether a run's timed samples so far (`samples_ns`: as the timer read them, CUPTI's from
/// its records delivered between two samples) spread wider than
/// [`crate::protocol::WIDE_SPREAD`] of their median and a floor (the host's launch's spread
/// where the reading holds it, [`crate::protocol::spreads_wide`]): its round then gets more
/// audited regions and decoys. Single launches by events or CUPTI
/// only: a batch's or a graph's reading by events holds its first launch's host time, which
/// spreads honest ones wider (on an H200 an honest softmax batch's 190 µs by 10 µs, which
/// cost it 13.6% of its cell in regions), and their first launches are tested apart; the
/// profiler's readings come after the cell.
pub fn spread_wide(samples_ns: &[f64], knobs: &Knobs) -> bool {
    let timed = read(samples_ns);
    let Some(median) = crate::statistics::median(timed.clone()) else {
        return false;
    };
    let host = knobs.queue.reading_holds_launch_time(knobs.timer);
    let wide = crate::protocol::spreads_wide(crate::statistics::iqr(&timed), median, host);
    let timer = matches!(knobs.timer, TimerKind::Events | TimerKind::Cupti);
    timed.len() >= MIN_SAMPLES && wide && timer && knobs.launches.count() == 1
}

/// Whether a run timed by CUPTI reads its records of the samples so far for a look at their
/// spread: where the host's time around each sample after the first (`host_ns`) spreads
/// wider than [`crate::protocol::HOST_SPREAD_NS`], as a kernel's own spread makes it.
pub fn host_spread_wide(host_ns: &[f64]) -> bool {
    host_spread(host_ns).is_some_and(|iqr| iqr > crate::protocol::HOST_SPREAD_NS)
}

/// The interquartile range of the host's time around each sample after the first, where
/// there are enough to judge ([`MIN_SAMPLES`]).
pub fn host_spread(host_ns: &[f64]) -> Option<f64> {
    spread(host_ns.get(1..).unwrap_or_default())
}

/// The interquartile range of the readings a timer gave, where there are enough to judge.
pub fn spread(readings_ns: &[f64]) -> Option<f64> {
    let read = read(readings_ns);
    (read.len() >= MIN_SAMPLES).then(|| crate::statistics::iqr(&read))
}

/// Whether a run whose pauses read slow reads them again from CUPTI's kernel records
/// (`protocol::CUPTI_PAUSES`): by events on an idle queue, whose reading holds the host's
/// launch, where CUPTI does not collect already (its collector is the samples').
pub fn confirms_by_cupti(knobs: &Knobs) -> bool {
    knobs.timer == TimerKind::Events && knobs.queue == Queue::Idle && !knobs.cupti_collect.on
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's first confirmation, of readings taken as the regions ran.
    const FIRST: Asked = Asked {
        first: true,
        as_they_ran: true,
    };
    use crate::experiment::knobs::launches::Launches;

    #[test]
    fn a_first_launch_over_the_rest_by_more_than_the_hosts_launch_is_read_again() {
        // An honest matmul's regions of 500 by events on an idle queue, on an H200: first
        // launches of 79.7 µs, 47.4 µs a launch in all (the rest 47.3 µs).
        assert!(first_needs_confirming(Some(79.7e3), Some(47.4e3), 500));
        // Of 10: 52.6 µs and 48.1 µs (the rest 47.6 µs).
        assert!(!first_needs_confirming(Some(52.6e3), Some(48.1e3), 10));
        assert!(!first_needs_confirming(Some(79.7e3), Some(47.4e3), 1));
        assert!(!first_needs_confirming(None, Some(47.4e3), 500));
    }

    #[test]
    fn a_lone_audited_reading_over_half_again_the_timed_median_is_confirmed() {
        assert!(needs_confirming(30_080.0, Some(7_552.0)));
        assert!(!needs_confirming(8_000.0, Some(7_552.0)));
        // CUPTI's readings come after the samples; no timed samples, nothing to set against.
        assert!(!needs_confirming(f64::NAN, Some(7_552.0)));
        assert!(!needs_confirming(30_080.0, None));
    }

    #[test]
    fn pauses_slower_than_the_hosts_launch_can_make_them_are_not_read_again() {
        // `tells-mean-gap` by events on an H200: 252.4 µs after its pauses, 206.0 µs timed;
        // an honest reduction 135.2 µs against 129.1 µs, which only CUPTI can clear.
        let (cheat, honest) = (Some(206.0e3), Some(129.1e3));
        assert!(beyond_the_hosts_launch(&[252.4e3, 252.7e3, 251.9e3], cheat));
        assert!(!beyond_the_hosts_launch(
            &[135.2e3, 135.0e3, 135.6e3],
            honest
        ));
        assert!(!beyond_the_hosts_launch(
            &[252.4e3, 210.0e3, 209.0e3],
            cheat
        ));
    }

    #[test]
    fn a_decoys_first_launch_held_up_by_the_host_is_judged_beside_a_later_one() {
        // The timed first launches of a result cache's batch by events on an idle queue on
        // an H200: a median of 36.38 µs, an interquartile range of 1.41 µs.
        let timed: Vec<f64> = (0..200)
            .map(|i| 35.68e3 + f64::from(i % 5) * 0.35e3)
            .collect();
        assert!(first_spoiled(52.48e3, &timed));
        // A cache's decoys read 41.09 µs and 39.62 µs against 36.99 and 36.69 µs: within.
        assert!(!first_spoiled(38.5e3, &timed));
        assert!(!first_spoiled(f64::NAN, &timed));
        assert!(!first_spoiled(52.48e3, &timed[..5]));
    }

    #[test]
    fn each_slow_reading_brings_its_own_confirmation() {
        let timed = Some(276_000.0);
        let slow = confirming(
            [vec![352_078.0, 350_922.0], vec![276_125.0], vec![]],
            timed,
            false,
            FIRST,
        );
        assert_eq!(slow, [Region::Audit; 3]);
        let lone = confirming(
            [vec![600_000.0], vec![], vec![276_000.0]],
            timed,
            false,
            FIRST,
        );
        assert_eq!(lone, [Region::Audit]);
        let pauses = confirming([vec![], vec![], vec![300_000.0; 2]], timed, false, FIRST);
        assert_eq!(pauses, [Region::Pause; 4]);
        let close = [vec![276_500.0], vec![276_000.0], vec![]];
        assert!(confirming(close, timed, false, FIRST).is_empty());
        // CUPTI's records read after the samples: audited regions, each checked, but no
        // pauses, which a kernel that tells the regions after its samples apart could skip
        // in, and no lone region (no host's time in the records).
        let records = Asked {
            first: true,
            as_they_ran: false,
        };
        let by_records = |read| confirming(read, timed, false, records);
        let slow = [vec![352_078.0, 350_922.0], vec![276_125.0], vec![]];
        assert_eq!(by_records(slow.clone()), [Region::Audit; 3]);
        assert!(by_records([vec![600_000.0], vec![], vec![276_000.0]]).is_empty());
        assert!(by_records([vec![], vec![], vec![300_000.0; 2]]).is_empty());
        // A later confirmation: none of these.
        let later = Asked {
            first: false,
            as_they_ran: true,
        };
        assert!(confirming(slow, timed, false, later).is_empty());
    }

    #[test]
    fn staged_regions_slow_against_pauses_staged_alike_get_audited_regions_and_pauses() {
        // An honest argmax cold on an H200, at 16.5 µs and now and then 17.5 µs: two of its
        // three staged regions slow, its three pauses fast.
        let read = || {
            [
                vec![16_416.0, 17_472.0],
                vec![17_504.0],
                vec![16_512.0, 16_417.0, 16_383.0],
            ]
        };
        let timed = Some(16_544.0);
        let mut expected = vec![Region::Audit; 3];
        expected.extend([Region::Pause; 4]);
        assert_eq!(confirming(read(), timed, true, FIRST), expected);
        // Read from CUPTI's records, or again after a confirmation: the same.
        for (first, as_they_ran) in [(true, false), (false, true), (false, false)] {
            let asked = Asked { first, as_they_ran };
            assert_eq!(confirming(read(), timed, true, asked), expected);
        }
        // A hot cell's stages leave L2 dirty before a staged region alone: its stage test
        // allows for that, and such a reading needs nothing more.
        assert!(confirming(read(), timed, false, FIRST).is_empty());
        // Staged regions within the margin of the pauses.
        let close = [
            vec![16_416.0, 16_500.0],
            vec![16_600.0],
            vec![16_512.0, 16_417.0],
        ];
        assert!(confirming(close, timed, true, FIRST).is_empty());
    }

    #[test]
    fn audited_regions_read_slow_against_the_decoys_are_confirmed() {
        // Both audited regions of an honest softmax on a power cap's slow stretch.
        let decoys = [276_125.0, 275_666.0];
        assert!(audits_need_confirming(&[352_078.0, 350_922.0], &decoys));
        // One slow of two: the lower reads as the decoys.
        assert!(!audits_need_confirming(&[276_500.0, 352_078.0], &decoys));
        // Within the 2% margin, where no test could call them suspect.
        assert!(!audits_need_confirming(&[280_000.0, 281_000.0], &decoys));
        // CUPTI's readings come after the samples; no decoys, nothing to set against.
        assert!(!audits_need_confirming(&[f64::NAN, f64::NAN], &decoys));
        assert!(!audits_need_confirming(&[352_078.0, 350_922.0], &[]));
    }

    #[test]
    fn a_split_run_whose_regions_read_with_the_slower_behavior_is_read_again() {
        // An adversary's GEMV on an H200: 5 launches of 8 skipping a quarter (106 µs), 3 padded
        // (137 µs), drawn apart; its pauses 137.0-140.3 µs, its staged regions 142-144 µs.
        let padded = |i: u32| matches!(i.wrapping_mul(2_654_435_761) >> 29, 0..=2);
        let samples: Vec<f64> = (0..200)
            .map(|i| match padded(i) {
                true => 137.0e3 + f64::from(i % 4) * 100.0,
                false => 106.0e3 + f64::from(i % 3) * 100.0,
            })
            .collect();
        let (pauses, staged) = ([140.2e3, 140.3e3, 137.0e3], [142.8e3, 142.3e3, 144.4e3]);
        assert!(split_with_the_slow(&samples, &pauses, &staged));
        // Pauses with the faster behavior, or staged regions there: nothing to read again.
        assert!(!split_with_the_slow(&samples, &[106.1e3; 3], &staged));
        assert!(!split_with_the_slow(&samples, &pauses, &[106.2e3; 3]));
        // Samples of one behavior: the pause test judges them as they are.
        let one: Vec<f64> = (0..200)
            .map(|i| 106.0e3 + f64::from(i % 3) * 100.0)
            .collect();
        assert!(!split_with_the_slow(&one, &pauses, &staged));
    }

    #[test]
    fn pauses_read_slow_by_their_lower_median_are_confirmed() {
        // Both of a LayerNorm's two pauses read 181 µs against 171 µs timed, once.
        assert!(pauses_need_confirming(
            &[180_864.0, 180_864.0],
            Some(171_184.0)
        ));
        // One slow pause of two: the lower reads as the timed launches.
        assert!(!pauses_need_confirming(
            &[171_000.0, 200_000.0],
            Some(171_184.0)
        ));
        assert!(!pauses_need_confirming(&[], Some(171_184.0)));
        assert!(!pauses_need_confirming(
            &[f64::NAN, f64::NAN],
            Some(171_184.0)
        ));
        assert!(!pauses_need_confirming(&[180_864.0], None));
        // A 3 µs kernel's pauses 0.2 µs (7%) over its timed launches: within the margin's
        // 0.5 µs, where no test could call them suspect; 0.6 µs over, confirmed.
        assert!(!pauses_need_confirming(&[3_200.0, 3_250.0], Some(3_000.0)));
        assert!(pauses_need_confirming(&[3_600.0, 3_650.0], Some(3_000.0)));
    }

    #[test]
    fn samples_spread_over_a_twentieth_of_their_median_and_the_hosts_noise_get_more_regions() {
        // A cache that skips 15-35% of its rows, drawn anew each launch: 120 µs of work.
        let smeared: Vec<f64> = (0..30)
            .map(|i| 120e3 * (0.65 + 0.2 * f64::from(i % 10) / 9.0))
            .collect();
        let steady: Vec<f64> = (0..30).map(|i| 120e3 + f64::from(i % 7) * 100.0).collect();
        // A 10 µs kernel whose readings the host's launch spreads by 1.5 µs.
        let host_noise: Vec<f64> = (0..30).map(|i| 10e3 + f64::from(i % 4) * 500.0).collect();
        let single = Knobs {
            timer: TimerKind::Events,
            ..Knobs::default()
        };
        let batch = Knobs {
            launches: Launches::Batch(10),
            ..single.clone()
        };
        assert!(spread_wide(&smeared, &single));
        assert!(!spread_wide(&smeared, &batch));
        assert!(!spread_wide(&steady, &single));
        assert!(!spread_wide(&host_noise, &single));
        assert!(!spread_wide(&smeared[..5], &single));
        assert!(!spread_wide(&[f64::NAN; 30], &single));
        // CUPTI's records read between two samples count as the events' do; the profiler
        // reads after the cell.
        let by = |timer| Knobs {
            timer,
            ..Knobs::default()
        };
        assert!(spread_wide(&smeared, &by(TimerKind::Cupti)));
        // A 20 µs kernel spread by 1.5 µs: within an idle queue's events' noise, not CUPTI's.
        let short: Vec<f64> = (0..30).map(|i| 20e3 + f64::from(i % 4) * 700.0).collect();
        assert!(spread_wide(&short, &by(TimerKind::Cupti)));
        assert!(!spread_wide(&short, &single));
        assert!(!spread_wide(&smeared, &by(TimerKind::Profiler)));
        assert!(!spread_wide(&smeared, &by(TimerKind::Host)));
        // Under CUPTI the host's time around each sample is the cue: the kernel's spread
        // and the launch's few µs.
        let host = |kernel: &[f64]| -> Vec<f64> {
            let launch = |i: usize| 12e3 + (i % 3) as f64 * 400.0;
            (kernel.iter().enumerate())
                .map(|(i, t)| t + launch(i))
                .collect()
        };
        assert!(host_spread_wide(&host(&smeared)));
        assert!(!host_spread_wide(&host(&steady)));
        assert!(!host_spread_wide(&host(&smeared[..10])));
    }

    #[test]
    fn confirmations_outvote_an_honest_kernel_slow_in_a_fifth_of_its_launches() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        // As the honest argmax cold on an H200: 16.4 µs, 17.3 µs a fifth of the time. Only a
        // run still read so after its confirmations can be suspect (the stage test's bound
        // is the margin and more): 9.4% of runs read so at first, 0.04% after five.
        let mut rng = SmallRng::seed_from_u64(47);
        let mut read = |n: usize| -> Vec<f64> {
            let mut one = || 16_400.0 + f64::from(u8::from(rng.random_bool(0.2))) * 900.0;
            (0..n).map(|_| one()).collect()
        };
        let runs = 40_000;
        let mut slow_after = [0usize; 2];
        for _ in 0..runs {
            let (mut staged, mut pauses) = (read(3), read(3));
            slow_after[0] += usize::from(staged_need_confirming(&staged, &pauses));
            for _ in 0..crate::protocol::STAGE_CONFIRMATIONS {
                if !staged_need_confirming(&staged, &pauses) {
                    break;
                }
                staged.extend(read(crate::protocol::CONFIRM_AUDITS));
                pauses.extend(read(crate::protocol::CONFIRM_PAUSES));
            }
            slow_after[1] += usize::from(staged_need_confirming(&staged, &pauses));
        }
        let [before, after] = slow_after.map(|n| n as f64 / runs as f64);
        assert!(before > 0.05, "{before}");
        assert!(after < 1e-3, "{after}");
    }
}
