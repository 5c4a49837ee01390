//! Whether CUPTI's second reading of a run (where its samples split in two,
//! `protocol::SPLIT_PAUSES`, or its pauses read slow by events, `protocol::CUPTI_PAUSES`) ran
//! as the samples did. That reading always follows the samples, so a kernel that counts its
//! launches can tell it apart: it could do all its work there (its pauses then no slower than
//! the timed launches around them) or skip work in every launch there (its pauses then fast
//! too), and the pauses' ranks would find nothing. Either way its timed launches there lose
//! one of the samples' two behaviors. Each set is read from its own 10th percentile, so that
//! what the timers add (the host's launch in an idle queue's events, CUPTI's µs) cancels: the
//! samples' share over their slower behavior's edge must recur in the records' timed
//! launches. Not what varies: where the samples hold the host's launch, a launch late by some
//! µs now and then can split them, which CUPTI's records leave out (they read as the samples'
//! faster behavior, a few µs under it), so there only records whose median lies over the
//! samples' faster behavior's by more than the margin are evidence: a kernel honest once its
//! samples are over, which may lie between a cheat's two behaviors (one that pads some
//! launches and skips in the rest); one that skips there too is left to the pauses. Samples
//! that did not split are judged only where they hold two behaviors apart by more than the
//! margin, the telemetry saw the clock hold over them, and the records' median lies no higher
//! than their slower behavior and the margin (a clock slower at the second reading, which
//! the samples' telemetry does not see, would lift the records over both). And only shares a fifth apart ([`SHARES_APART`]): the test takes
//! launches as exchangeable, which readings in stretches are not quite.

use super::bounds::{Tell, Test, FALSE_ALARM};
use crate::protocol::{margin_ns, samples_split, AuditsAmong, MIN_SAMPLES};
use crate::statistics::{
    lower_median, nearest_rank, nearest_rank_index, rank_above_chance, split_chance, Ranked,
};

/// The least the records' share over the edge and the samples' must lie apart: a kernel
/// that turned honest or skipped everywhere there moves it by the whole of its slower
/// behavior's share, which splitting the samples puts at a quarter or more.
const SHARES_APART: f64 = 0.2;

/// Where the samples' two behaviors part, as an offset from their 10th percentile (below
/// the faster behavior's share, whatever it is, where they split: `protocol::splits_in_two`
/// asks both to hold a quarter): halfway across the widest step between two sorted samples
/// from that percentile to the 90th. Where the samples did not split (`gap`: a run read again
/// for its slow pauses), None unless that step is over the margin: samples of one behavior,
/// which no share tells apart. Samples that split need no such step: a kernel can spread its
/// slower behavior evenly up to the faster one.
fn edge_over_p10(sorted: &[f64], gap: bool) -> Option<f64> {
    let (lo, hi) = (
        nearest_rank_index(sorted.len(), 0.10),
        nearest_rank_index(sorted.len(), 0.90),
    );
    let step = |i: &usize| sorted[i + 1] - sorted[*i];
    let widest = (lo..hi).max_by(|a, b| step(a).total_cmp(&step(b)))?;
    (!gap || step(&widest) > margin_ns(sorted[lo]))
        .then(|| (sorted[widest] + sorted[widest + 1]) / 2.0 - sorted[lo])
}

/// The finite readings, sorted.
fn sorted(readings: &[f64]) -> Vec<f64> {
    let mut read: Vec<f64> = readings.iter().copied().filter(|t| t.is_finite()).collect();
    read.sort_by(f64::total_cmp);
    read
}

/// How one run's records met its samples: of `samples` samples `slow` lay over the edge, of
/// `records` timed launches read again `records_slow`, which readings alike would part so
/// with `chance` (both tails).
struct Shares {
    edge_ns: f64,
    samples: usize,
    slow: usize,
    records: usize,
    records_slow: usize,
    chance: f64,
}

/// The shares over the samples' edge in the samples and in the records' timed launches,
/// each counted from its own 10th percentile; None where either holds too few to say. The
/// chance is both tails'; 1 where the shares lie within [`SHARES_APART`], and where the
/// samples hold the host's launch (`host_in_reading`) unless the records' median lies over
/// the median of the samples under the edge by more than the margin. Samples that did not
/// split are not judged where the telemetry saw the clock move over them (`clock_steady`
/// false), nor where the records' median lies over the samples' slower behavior by the margin.
fn shares(
    samples: &[f64],
    records: &[f64],
    (host_in_reading, clock_steady): (bool, bool),
) -> Option<Shares> {
    let split = samples_split(samples);
    let (samples, records) = (sorted(samples), sorted(records));
    if samples.len() < MIN_SAMPLES || records.len() < MIN_SAMPLES || !(split || clock_steady) {
        return None;
    }
    let edge_ns = edge_over_p10(&samples, !split)?;
    let over = |read: &[f64]| {
        let from = read[nearest_rank_index(read.len(), 0.10)] + edge_ns;
        read.iter().filter(|t| **t > from).count()
    };
    let (slow, records_slow) = (over(&samples), over(&records));
    let (n, m) = (samples.len(), records.len());
    let more = split_chance((m, records_slow), (n, slow));
    let fewer = split_chance((m, m - records_slow), (n, n - slow));
    let apart = records_slow as f64 / m as f64 - slow as f64 / n as f64;
    // Each side holds a tenth of the samples or more where the edge is a step up (it lies from
    // the 10th percentile to the 90th); samples all alike have none.
    if slow == 0 {
        return None;
    }
    let (under_edge, over_edge) = samples.split_at(n - slow);
    let (faster, slower) = (nearest_rank(under_edge, 0.5), nearest_rank(over_edge, 0.5));
    let records_median = nearest_rank(&records, 0.5);
    let over_the_faster = records_median > faster + margin_ns(faster);
    // Samples that did not split: records over their slower behavior by the margin read a
    // clock or a state that moved after them (no kernel's way of running otherwise lies there).
    let moved = !split && records_median > slower + margin_ns(slower);
    let chance = match apart.abs() < SHARES_APART || (host_in_reading && !over_the_faster) || moved
    {
        true => 1.0,
        false => (2.0 * more.min(fewer)).min(1.0),
    };
    Some(Shares {
        edge_ns,
        samples: n,
        slow,
        records: m,
        records_slow,
        chance,
    })
}

/// A run CUPTI read again after its samples: its samples, its records' timed launches.
pub(super) type RunReadAgain<'a> = (&'a [f64], &'a [f64]);

/// A pause test that found nothing, judged again where CUPTI read a run again and its samples
/// hold two behaviors (`runs`: each such run's samples and records' timed launches): suspect where
/// the records' share over the samples' edge differs from the samples' so far that readings
/// alike would with a chance of at most [`FALSE_ALARM`], over the runs tested, and by at
/// least [`SHARES_APART`] (where the samples hold the host's launch, `host_in_reading`, only
/// records whose median lies over the samples' faster behavior).
pub(super) fn as_the_samples(test: Test, runs: &[RunReadAgain], read_as: (bool, bool)) -> Test {
    if test.tell != Tell::Pause || test.suspect.is_some() {
        return test;
    }
    let read = |(s, r): &RunReadAgain| shares(s, r, read_as);
    let tried: Vec<Shares> = runs.iter().filter_map(read).collect();
    let count = tried.len() as f64;
    let worst = (tried.into_iter()).min_by(|a, b| a.chance.total_cmp(&b.chance));
    let Some(s) = worst.filter(|s| s.chance * count <= FALSE_ALARM) else {
        return test;
    };
    Test {
        suspect: Some(format!(
            "suspect: by CUPTI, the timed launches read again after the samples did not run as the samples did: {} of {} read over {:.3} µs above their 10th percentile, where {} of the {} samples did (which hold two behaviors), which readings alike would part so with a chance of {:.1e}: the kernel ran otherwise once its samples were over",
            s.records_slow,
            s.records,
            s.edge_ns / 1e3,
            s.slow,
            s.samples,
            (s.chance * count).min(1.0),
        )),
        idle: false,
        by_cupti: true,
        ..test
    }
}

/// Where CUPTI's second reading ran otherwise than the samples by their own timer: its
/// pauses lie under the samples' ones, each moved by what the timed launches moved between
/// the two readings (CUPTI's collection adds to a launch).
pub(super) struct RanOtherwise {
    /// The chance readings alike lie so far apart, and the two sets' lower medians, ns.
    pub(super) chance: f64,
    pub(super) samples_ns: f64,
    pub(super) again_ns: f64,
}

/// What a pause read again may read over one among the samples by the cell's timer beyond the
/// timed launches' own shift between the readings: among the samples each stage launches an
/// empty kernel every 10 µs through its wait, keeping the host's launch path warm, and read
/// again by CUPTI it launches none (CUPTI would record them). On an H200 events around a copy
/// read it 0.6 µs slow after 175 µs of the host spinning and 2.0 µs after 600 µs, and within
/// 0.3 µs with the empty kernels (`worker::audit::draw::KICK_EVERY`).
const UNKICKED_NS: f64 = 2_000.0;

/// Whether a run's pauses read again ran as its samples' pauses did, by the cell's own timer
/// (`KernelRecords::timer_timed_ns` and `timer_pauses_ns`, read beside CUPTI), each run's set
/// against its own: a kernel that tells the second reading apart (it follows the samples; a
/// kernel can count its launches) and skips in every launch there, its pauses included, reads
/// its pauses there as fast as its timed launches, and CUPTI's records would clear the slow
/// pauses of its samples (a fourth adversary's n-body, `reread-skip`, did so by events on an
/// H200 while the launches before the regions after the samples ran back to back, its samples'
/// pauses 12 µs over its timed launches). Each pause read again is moved by what the run's
/// timed launches moved between the two readings (its samples as read, `samples_ns`, against
/// those read again). Ran otherwise where the samples' pauses lie so high over those read again
/// that readings alike would with a chance of at most [`FALSE_ALARM`] (the one-sided
/// Mann-Whitney test, stratified over the runs) and their lower medians lie apart by more than
/// the margin and [`UNKICKED_NS`]; None where they ran alike, or there is nothing to set
/// (records from before these readings).
pub(super) fn pauses_ran_otherwise(among: &[&AuditsAmong]) -> Option<RanOtherwise> {
    // Each run read again: its samples' pauses, its pauses read again (moved), its timed median.
    let runs: Vec<(Vec<f64>, Vec<f64>, f64)> = (among.iter())
        .filter_map(|m| {
            let k = m.by_cupti.as_ref()?;
            let timed = crate::statistics::median(sorted(&k.samples_ns))?;
            let moved = timed - crate::statistics::median(sorted(&k.timer_timed_ns))?;
            let again: Vec<f64> = sorted(&k.timer_pauses_ns)
                .iter()
                .map(|t| t + moved)
                .collect();
            Some((sorted(&m.pauses_ns), again, timed))
        })
        .filter(|(samples, again, _)| !samples.is_empty() && !again.is_empty())
        .collect();
    let groups: Vec<Ranked> = (runs.iter())
        .map(|(samples, again, _)| Ranked {
            above: samples,
            sorted: again,
            count: again.len(),
        })
        .collect();
    let samples: Vec<f64> = runs.iter().flat_map(|r| r.0.iter().copied()).collect();
    let again: Vec<f64> = runs.iter().flat_map(|r| r.1.iter().copied()).collect();
    let (samples_ns, again_ns) = (
        lower_median(&sorted(&samples))?,
        lower_median(&sorted(&again))?,
    );
    let timed_ns = crate::statistics::median(runs.iter().map(|r| r.2).collect())?;
    let chance = rank_above_chance(&groups);
    let apart = samples_ns - again_ns > margin_ns(timed_ns) + UNKICKED_NS;
    (chance <= FALSE_ALARM && apart).then_some(RanOtherwise {
        chance,
        samples_ns,
        again_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::two_speeds::speeds;

    fn quiet() -> Test {
        Test {
            tell: Tell::Pause,
            median_ns: 120e3,
            baseline_ns: 100e3,
            bound_ns: 30e3,
            single_bound_ns: 40e3,
            regions: 16,
            beyond: 0,
            limit: 0.5,
            suspect: None,
            idle: false,
            by_cupti: true,
        }
    }

    /// Samples as a padding cheat's: 3 of 8 at its full work (130 µs), the rest at 100 µs,
    /// read by events with 4 µs of the host's launch.
    fn samples() -> Vec<f64> {
        speeds(300, 37, (104e3, 134e3))
    }

    #[test]
    fn records_that_hold_both_behaviors_in_their_shares_pass() {
        // CUPTI reads without the host's launch: both behaviors 4 µs lower.
        let records = speeds(112, 37, (100e3, 130e3));
        let test = as_the_samples(quiet(), &[(&samples(), &records)], (false, true));
        assert_eq!(test.suspect, None);
    }

    #[test]
    fn records_of_a_kernel_that_did_all_its_work_once_the_samples_were_over_are_suspect() {
        let records = speeds(112, 0, (130e3, 130e3));
        let test = as_the_samples(quiet(), &[(&samples(), &records)], (false, true));
        let why = test.suspect.expect("an honest re-read of a split run");
        assert!(why.contains("0 of 112"), "{why}");
    }

    #[test]
    fn records_of_a_kernel_that_skipped_everywhere_once_the_samples_were_over_are_suspect() {
        let records = speeds(112, 0, (100e3, 100e3));
        let test = as_the_samples(quiet(), &[(&samples(), &records)], (false, true));
        assert!(test.suspect.is_some());
    }

    #[test]
    fn shares_that_differ_by_chance_alone_pass_and_a_found_test_is_kept() {
        // 37% of the samples slow, 28% of the records: a binomial draw of 112 does so.
        let records = speeds(112, 28, (100e3, 130e3));
        assert_eq!(
            as_the_samples(quiet(), &[(&samples(), &records)], (false, true)).suspect,
            None
        );
        let found = Test {
            suspect: Some("suspect: already".into()),
            ..quiet()
        };
        let records = speeds(112, 0, (130e3, 130e3));
        let kept = as_the_samples(found.clone(), &[(&samples(), &records)], (false, true));
        assert_eq!(kept, found);
    }

    #[test]
    fn each_set_is_read_from_its_own_10th_percentile() {
        // Records 20 µs under the samples, more than half the 30 µs between the behaviors:
        // a fixed edge would find none of them slow.
        let records = speeds(112, 37, (84e3, 114e3));
        let test = as_the_samples(quiet(), &[(&samples(), &records)], (false, true));
        assert_eq!(test.suspect, None);
        let honest = speeds(112, 0, (110e3, 110e3));
        assert!(
            as_the_samples(quiet(), &[(&samples(), &honest)], (false, true))
                .suspect
                .is_some()
        );
    }

    #[test]
    fn where_the_samples_hold_the_hosts_launch_only_records_over_their_faster_behavior_count() {
        // Samples split by a launch late now and then, records of one speed without it.
        let records = speeds(112, 0, (101e3, 101e3));
        let split_by_the_launch = (&samples()[..], &records[..]);
        let test = as_the_samples(quiet(), &[split_by_the_launch], (true, true));
        assert_eq!(test.suspect, None);
        let honest_after = speeds(112, 0, (130e3, 130e3));
        let test = as_the_samples(quiet(), &[(&samples(), &honest_after)], (true, true));
        assert!(test.suspect.is_some());
        // A padded GEMV skipping a tenth, by events on an H200: 59% of its samples at
        // 130 µs (skipping), the rest at 143 µs (padded); honest after them, CUPTI read
        // 137 µs, between the two and under the edge between them (136.9 µs against 137.3 µs).
        let padded = speeds(200, 41, (129.6e3, 142.4e3));
        let between = speeds(112, 0, (135.5e3, 135.5e3));
        let test = as_the_samples(quiet(), &[(&padded, &between)], (true, true));
        assert!(test.suspect.is_some());
        // Within the margin over the faster behavior: as CUPTI reads an honest kernel.
        let honest = speeds(112, 0, (131e3, 131e3));
        let test = as_the_samples(quiet(), &[(&padded, &honest)], (true, true));
        assert_eq!(test.suspect, None);
    }

    #[test]
    fn samples_of_one_behavior_are_not_judged() {
        // An honest kernel by events on an idle queue, read again for its slow pauses: one
        // behavior spread by the host's launch, and CUPTI's records of one, without it.
        let one: Vec<f64> = (0..200).map(|i| 130e3 + f64::from(i % 23) * 90.0).collect();
        let records = speeds(56, 0, (128e3, 128e3));
        assert_eq!(
            as_the_samples(quiet(), &[(&one, &records)], (true, true)).suspect,
            None
        );
        let later = speeds(56, 0, (135e3, 135e3));
        assert_eq!(
            as_the_samples(quiet(), &[(&one, &later)], (true, true)).suspect,
            None
        );
    }

    #[test]
    fn an_even_split_is_judged_and_one_that_did_not_split_only_on_a_steady_clock() {
        // 60% of the launches skip (130 µs), the rest padded evenly up to 143 µs, in an order
        // drawn apart: no step between sorted samples is over the margin, yet they split.
        let spread: Vec<f64> = (0..200u32)
            .map(|i| match (i.wrapping_mul(2_654_435_761) >> 16) % 100 {
                h if h < 60 => 130e3 + f64::from(i % 5) * 100.0,
                h => 130e3 + f64::from(h - 60) * 13e3 / 40.0,
            })
            .collect();
        assert!(samples_split(&spread));
        let honest_after = speeds(112, 0, (136.5e3, 136.5e3));
        let test = as_the_samples(quiet(), &[(&spread, &honest_after)], (false, true));
        assert!(test.suspect.is_some());
        // Samples of two behaviors that did not split (the padded GEMV at skip=10 by events,
        // its padded launches in runs, on an H200: 27% at 143 µs), honest after them: judged
        // only where the clock held.
        let padded = speeds(200, 27, (129.6e3, 142.4e3));
        let in_runs: Vec<f64> = sorted(&padded);
        assert!(!samples_split(&in_runs));
        let honest_after = speeds(56, 0, (136.5e3, 136.5e3));
        let run = [(&in_runs[..], &honest_after[..])];
        assert!(as_the_samples(quiet(), &run, (true, true))
            .suspect
            .is_some());
        assert_eq!(as_the_samples(quiet(), &run, (true, false)).suspect, None);
        // Records over both behaviors: a clock that slowed after the samples, not the kernel.
        let slowed = speeds(56, 0, (146e3, 146e3));
        let run = [(&in_runs[..], &slowed[..])];
        assert_eq!(as_the_samples(quiet(), &run, (true, true)).suspect, None);
    }

    #[test]
    fn a_found_test_clears_the_gpu_gone_idle() {
        let idle = Test {
            idle: true,
            ..quiet()
        };
        let records = speeds(112, 0, (130e3, 130e3));
        let test = as_the_samples(idle, &[(&samples(), &records)], (false, true));
        assert!(test.suspect.is_some() && !test.idle);
    }

    #[test]
    fn the_edge_lies_between_the_two_behaviors() {
        let edge = edge_over_p10(&sorted(&samples()), true).unwrap();
        assert!((10e3..30e3).contains(&edge), "{edge}");
    }
}
