//! The audit's tests: what a cell's regions among its timed launches say of it. Regions sat
//! among the timed ones (`worker::audit`), each after a stage and the same pause: audited
//! regions on a draw of their own, decoys on the data the buffers held, pauses drawing
//! nothing. Two tests, each closing a way a kernel could be trusted for work it skipped:
//! - **data**: the audited regions against the decoys. A kernel that does all its work only
//!   on data it has not seen (a result cache, a fingerprint of its inputs) is slower in the
//!   audited regions.
//! - **pause**: the pauses against the timed launches, whose cache state they share. A
//!   kernel that does all its work only after a pause is slower in them.
//!
//! A third, **stage**, sets the staged regions (audited and decoys) against the pauses: both
//! follow the same pause, and differ only by the stage's writes. A kernel that does all its
//! work only after a stage (one that finds a line it touched last evicted) is slower in the
//! staged regions; all of them, so that one slow decoy is not the group. In a flushed
//! cell both meet a flushed L2; in a hot one the stage leaves the inputs' lines dirty where
//! the timed launches find them clean, so the bound allows what that can cost
//! ([`l2_turnover_ns`]). In a region of several launches (a batch, a graph), the regions'
//! first launches are tested too.
//!
//! Each test sets the medians apart against a spread the kernel cannot widen (the timed
//! samples' and the decoys', never the audited regions' own), at a stated false-alarm rate
//! and beyond a margin, and tests each region on its own against the same spread,
//! corrected for their number, and beyond the farthest of the timed samples (their tail
//! is heavier than a normal's: a host's hiccup under events, a launch after a stage): one
//! audited region beyond the decoys is evidence. Where a cell has no decoys and no pauses
//! (too few samples to spare them, or the weaker audit of one launch after its timed ones),
//! a fixed band against its reading is all there is.

use super::bounds::{
    against, against_baseline, band, by_kernel_records, idle_or_kernel, l2_turnover_ns, margin_ns,
    share_where_timed, why, Baseline, Spread, Tell, Test, FALSE_ALARM, MIN_SAMPLES,
};
use super::drift::{self, Drift};
use super::reduce::SortedRun;
use super::reproduced::{self, RanOtherwise, RunReadAgain};
use super::stats::Stats;
use super::two_speeds::{pauses_with_the_slow_launches, Read};
use super::{alone, firsts, flushed};
use crate::experiment::knobs::cache::Cache;
use crate::plan::Cell;
use crate::protocol::{
    past_the_hosts_launch, pauses_ranked, ranked_again, AuditsAmong, CellRecord, DeviceInfo,
    KernelRecords, RunRanks, HOST_LAUNCH_NS, RANKS_AGAIN_ALARM, RANKS_SCREEN,
};
use crate::statistics::{each_above_chance, median};

/// What the tests found for a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub tests: Vec<Test>,
    /// The smallest share of its work a kernel could skip where it is timed, by either
    /// tell it used, and still be caught: the larger of the data and pause tests' limits
    /// (the band's where it judged).
    pub detection_limit: f64,
    /// Why the cell's reading is suspect, where it is: the first test that says so.
    pub suspect: Option<String>,
}

impl Judgement {
    /// The test of `tell`, where it ran.
    pub fn test(&self, tell: Tell) -> Option<&Test> {
        self.tests.iter().find(|t| t.tell == tell)
    }

    fn of(tests: Vec<Test>) -> Option<Judgement> {
        let first =
            |t: &&Test| matches!(t.tell, Tell::FirstData | Tell::FirstPause | Tell::FirstRest);
        let firsts = tests.iter().filter(first).count() > 0;
        // Where first launches were read, they set the limit of a region of several.
        let guarding = (tests.iter())
            // The launches alone bound another kernel: one that shares a region's work out.
            .filter(|t| !matches!(t.tell, Tell::Stage | Tell::FirstStage | Tell::Alone))
            .filter(|t| !firsts || first(t));
        let detection_limit = guarding.map(|t| t.limit).fold(f64::NAN, f64::max);
        (!tests.is_empty()).then(|| Judgement {
            detection_limit,
            suspect: tests.iter().find_map(|t| t.suspect.clone()),
            tests,
        })
    }
}

/// A cell's readings the tests read.
pub struct Readings<'a> {
    /// The cell's headline reading, and its timed steady samples' statistics.
    pub reading_ns: Option<f64>,
    pub steady: Option<&'a Stats>,
    /// The steady samples run by run, sorted, as `analysis::reduce` kept them (each run's
    /// pauses are ranked among its own).
    pub steady_sorted: Option<&'a [SortedRun]>,
    /// Whether an L2 flush came before each region (decoys and pauses then meet the same
    /// cache).
    pub flushed: bool,
    /// What the L2 a stage leaves may cost an honest kernel's first launch after it against
    /// one after a pause: 0 in a flushed cell; None where the device is not known (no stage
    /// test).
    pub stage_allowance_ns: Option<f64>,
    /// Whether a reading holds the host's launch time (events or a host timer on an idle
    /// queue): one region alone is then no evidence.
    pub host_in_reading: bool,
    /// Launches in one timed region (a batch's or a graph's).
    pub per_region: u64,
    /// The cell's lowest SM clock over its highest, where the telemetry saw it move beyond
    /// the tolerance: only then are regions set against the samples before them, and by no
    /// more than the clock moved (`analysis::drift`).
    pub clock_moved_to: Option<f64>,
}

impl<'a> Readings<'a> {
    /// The readings of `cell` on `device`, with what its method says of them.
    pub fn of(
        cell: &Cell,
        (reading_ns, steady, steady_sorted): (
            Option<f64>,
            Option<&'a Stats>,
            Option<&'a [SortedRun]>,
        ),
        (device, clock_moved_to): (Option<&DeviceInfo>, Option<f64>),
    ) -> Readings<'a> {
        let knobs = &cell.knobs;
        let flushed = matches!(knobs.cache, Cache::Flush { .. });
        let per_region = knobs.launches.count();
        let hot = device.and_then(l2_turnover_ns);
        Readings {
            reading_ns,
            steady,
            steady_sorted,
            flushed,
            stage_allowance_ns: if flushed { Some(0.0) } else { hot },
            host_in_reading: knobs.queue.reading_holds_launch_time(knobs.timer),
            per_region,
            clock_moved_to,
        }
    }
}

/// A pause test still suspect by a reading that holds the host's launch, which CUPTI did
/// not read again (no CUPTI here, a record missing, a run from before), says what would
/// tell a kernel that skips work from a launch a pause slows; unless the pauses read over
/// the timed median by more than the margin and what a pause can add to the host's launch
/// (`HOST_LAUNCH_NS`): the worker's own rule, by which it does not read them again. Where
/// CUPTI read them again but its pauses ran otherwise by this timer (`otherwise`), it says so.
fn unread_by_cupti(
    mut test: Test,
    host_in_reading: bool,
    otherwise: Option<&RanOtherwise>,
) -> Test {
    let beyond_launch = past_the_hosts_launch(test.median_ns, test.baseline_ns);
    if host_in_reading && !test.by_cupti {
        test.suspect = (test.suspect).map(|s| match (beyond_launch, otherwise) {
            (true, _) => format!("{s} (past the {:.0} µs a pause adds to a launch)", HOST_LAUNCH_NS / 1e3),
            (false, Some(o)) => format!("{s} (CUPTI read its pauses again after the samples, but by this timer they read {:.3} µs there, against {:.3} µs among the samples, a chance of {:.1e}: the kernel ran otherwise once its samples were over, and its records clear nothing)", o.again_ns / 1e3, o.samples_ns / 1e3, o.chance),
            (false, None) => format!("{s} (read with the host's launch, which a pause slows too, and not read again by CUPTI: time it with timer = \"cupti\", or queue = \"saturate\", to tell)"),
        });
    }
    test
}

/// The tests' findings on a cell, unless its records say why its times are not set against
/// each other, or there is nothing to set. Records from before these audits (no audit among
/// the timed launches, no weaker audit's reason) carry their verdict themselves.
pub fn judged(records: &[&CellRecord], r: &Readings) -> Option<Judgement> {
    let audits: Vec<_> = records.iter().filter_map(|r| r.audit.as_ref()).collect();
    let current = audits
        .iter()
        .any(|a| a.among.is_some() || a.weaker.is_some());
    if !current || audits.iter().any(|a| a.unjudged.is_some()) {
        return None;
    }
    let among: Vec<&AuditsAmong> = audits.iter().filter_map(|a| a.among.as_ref()).collect();
    let steady = r.steady.filter(|s| s.count as usize >= MIN_SAMPLES);
    let drift = steady.zip(r.clock_moved_to).map(|(s, to)| Drift::of(s, to));
    let [audited, decoys, pauses] = drift::regions(&among, drift);
    let as_read = drift::regions(&among, None);
    let scaled = (as_read.iter().zip([&audited, &decoys, &pauses])).any(|(a, b)| a != b);
    let after: Vec<f64> = (audits.iter().filter(|a| a.weaker.is_some()))
        .filter_map(|a| a.launch_ns)
        .collect();
    let Some(timed) = steady.map(|s| Spread::of(s, !r.host_in_reading)) else {
        return Judgement::of(
            band(&[audited, after].concat(), r.reading_ns?, None)
                .into_iter()
                .collect(),
        );
    };
    let with_decoys = timed.with_decoys(&decoys);
    let mut tests = Vec::new();
    if !audited.is_empty() && !decoys.is_empty() {
        let launches = audit_launches(&among, r.per_region);
        let spread = with_decoys.with_stage_noise(&decoys, &pauses, launches);
        let timed_ns = steady.map_or(f64::NAN, |s| s.median);
        let as_timed = (median(pauses.clone()).unwrap_or(timed_ns), timed_ns);
        tests.extend(data_test(
            (&audited, &decoys),
            spread,
            as_timed,
            (records, r),
        ));
    }
    // Every region whose stage drew: audited regions and decoys alike meet what it left.
    let staged = [&audited[..], &decoys[..]].concat();
    if let (Some(s), false) = (steady, pauses.is_empty()) {
        let test = pause_test((&pauses, &staged), (s, timed), &among, r);
        tests.extend(test.map(|t| ranked_high(t, (records, &staged), s, r)));
    }
    if let (Some(allowance_ns), false, false) =
        (r.stage_allowance_ns, decoys.is_empty(), pauses.is_empty())
    {
        // Only a region's first launch follows the stage; the rest follow their own kernel.
        // Where a decoy ran, all the staged regions, not the decoys alone: of the floor's one
        // decoy, one slow reading (an honest 13.7 µs convolution's read 14.56 µs, beyond its
        // farthest timed sample of 200) would be the group. Without one (a cell that stopped
        // early), one audited region would be the group.
        let spread = Spread {
            allowance_ns: allowance_ns / audit_launches(&among, r.per_region) as f64,
            ..with_decoys
        };
        tests.extend(against(Tell::Stage, &staged, &pauses, spread));
    }
    tests.extend(firsts::first_launches(
        &among,
        (timed.single, drift),
        r.stage_allowance_ns,
    ));
    // In a flushed region each launch's flush comes before it, and the first launch's time
    // holds the first flush: only hot regions set it against the rest.
    if let (true, false, Some(s)) = (r.per_region > 1, r.flushed, steady) {
        tests.extend(firsts::first_against_rest(
            &among,
            s,
            (r.per_region, r.host_in_reading),
        ));
    }
    if let (true, Some(s)) = (r.per_region > 1, steady) {
        tests.extend(alone::launches_alone(&among, (s, r.per_region), timed));
    }
    if !tests.iter().any(|t| t.tell == Tell::Data) {
        tests.extend(r.reading_ns.and_then(|ns| {
            let spread = steady.map(|s| (timed.sigma, s.count as usize));
            band(&[audited, after].concat(), ns, spread)
        }));
    }
    if scaled {
        // A verdict's numbers are then not the readings stored: say so.
        for why in tests.iter_mut().filter_map(|t| t.suspect.as_mut()) {
            why.push_str(" (regions set against the timed samples before them: the clock moved)");
        }
    }
    Judgement::of(tests)
}

/// The data test: the audited regions against the decoys (`spread`), its limit a share of
/// the work as timed (`as_timed`: the pauses' median, the timed median), and where its
/// medians found nothing, the audited regions' ranks among the decoys on their own data.
fn data_test(
    (audited, decoys): (&[f64], &[f64]),
    spread: Spread,
    as_timed: (f64, f64),
    (records, r): (&[&CellRecord], &Readings),
) -> Option<Test> {
    let test = against(Tell::Data, audited, decoys, spread)?;
    let test = audited_ranked_high(share_where_timed(test, as_timed), records, r);
    // Against the timed launches themselves only where the states match: a flush before
    // each, single launches, no host's launch in the reading (which a wait slows whatever
    // the kernel does), the clock held (the readings are then as read).
    let alike = r.flushed && r.per_region == 1 && !r.host_in_reading;
    let runs = (r.steady_sorted.zip(r.steady)).filter(|_| alike && r.clock_moved_to.is_none());
    Some(match runs {
        Some(runs) => flushed::audited_over_timed(test, records, runs),
        None => test,
    })
}

/// Launches in each of the audit's regions: `per_region`, a timed region's, unless the
/// records say they held fewer (`plan::audit_rounds::region_launches`).
pub(super) fn audit_launches(among: &[&AuditsAmong], per_region: u64) -> u64 {
    fewest_audit_launches(among).unwrap_or(per_region)
}

/// The fewest launches any run's audit regions held, where a run's held fewer than a timed
/// region.
pub(super) fn fewest_audit_launches(among: &[&AuditsAmong]) -> Option<u64> {
    among.iter().filter_map(|m| m.region_launches).min()
}

/// The pause test: the pauses against the timed samples (`steady`, their spread `timed`),
/// judged again on CUPTI's records where it read them again (the runs' `by_cupti`: timed,
/// pauses, staged), unless those ran otherwise by the cell's own timer, against the staged
/// regions where the GPU may have gone idle, and as the samples ran where they hold two
/// behaviors (each run's samples and records).
fn pause_test(
    (pauses, staged): (&[f64], &[f64]),
    (s, timed): (&Stats, Spread),
    among: &[&AuditsAmong],
    r: &Readings,
) -> Option<Test> {
    let read_again: Vec<&KernelRecords> =
        among.iter().filter_map(|m| m.by_cupti.as_ref()).collect();
    let by_cupti = |of: fn(&KernelRecords) -> &Vec<f64>| -> Vec<f64> {
        (read_again.iter())
            .flat_map(|k| of(k).iter().copied().filter(|t| t.is_finite()))
            .collect()
    };
    let kinds: [fn(&KernelRecords) -> &Vec<f64>; 3] =
        [|k| &k.timed_ns, |k| &k.pauses_ns, |k| &k.staged_ns];
    let records = kinds.map(by_cupti);
    let pauses_staged = read_again.iter().any(|k| k.pauses_staged);
    let runs_read_again: Vec<RunReadAgain> = (read_again.iter())
        .filter(|k| !k.samples_ns.is_empty())
        .map(|k| (&k.samples_ns[..], &k.timed_ns[..]))
        .collect();
    // Only where the samples hold the host's launch, which is why CUPTI reads them again.
    let otherwise = (r.host_in_reading && r.clock_moved_to.is_none())
        .then(|| reproduced::pauses_ran_otherwise(among))
        .flatten();
    let otherwise = otherwise.as_ref();
    let baseline = Baseline {
        median_ns: s.median,
        count: s.count as usize,
    };
    let test = against_baseline(Tell::Pause, pauses, baseline, (timed, None));
    // Where CUPTI read the pauses again, its records judge: they leave out the host's
    // launch, which events read after a pause. The staged regions' readings hold it too,
    // so only stages CUPTI read can clear the records' verdict as the GPU gone idle (a
    // kernel that worked after its pauses passed so by events, by CUPTI 32% slower).
    let [timed_ns, pauses_ns, staged_ns] = &records;
    // Only where the samples hold the host's launch: elsewhere the records were read because
    // the samples split, and clear nothing a kernel alone's reading found. Nor where the
    // pauses read again ran otherwise by the cell's own timer than the samples' did.
    let test = test.map(|t| match (r.host_in_reading, otherwise) {
        (true, None) => by_kernel_records(t, (timed_ns, pauses_ns), timed),
        _ => t,
    });
    let test = test.map(|t| match t.by_cupti {
        true => idle_or_kernel(t, staged_ns),
        false => idle_or_kernel(t, staged),
    });
    // Where the timed launches split in two, a kernel's slow ones widen the band (see
    // `two_speeds`): the pauses set against them as read, or as CUPTI read them again.
    let read = Read::Samples {
        steady: s,
        host_in_reading: r.host_in_reading,
    };
    let test = test.map(|t| pauses_with_the_slow_launches(t, (pauses, staged), read));
    let again = Read::KernelRecords {
        timed_ns,
        steady: s,
    };
    // Where the pauses' stages drew (a flushed cell's) or poisoned the outputs (nothing to
    // draw), no stage that draws follows the pauses read again: they are staged themselves.
    let staged_again = match pauses_staged {
        true => pauses_ns,
        false => staged_ns,
    };
    let test = test.map(|t| match pauses_ns.is_empty() {
        true => t,
        false => pauses_with_the_slow_launches(t, (pauses_ns, staged_again), again),
    });
    // Records that found nothing count only where they read the kernel as the samples did.
    let read_as = (r.host_in_reading, r.clock_moved_to.is_none());
    let test = test.map(|t| reproduced::as_the_samples(t, &runs_read_again, read_as));
    test.map(|t| unread_by_cupti(t, r.host_in_reading, otherwise))
}

/// A pause test that found nothing, its pauses and staged regions both over the timed median
/// by more than the margin (as a kernel's that does all its work after any long gap are; an
/// honest one slowed by a GPU gone idle is slow after a pause only), judged again by the
/// pauses' ranks, each less the margin, among its own run's timed samples (`records`, runs
/// of the cell; the samples as `analysis::reduce` kept them): suspect where readings alike
/// lie so high with a chance of at most [`FALSE_ALARM`] (`protocol::pauses_ranked`,
/// stratified over the runs: a run slower than the others holds its own pauses), or of at
/// most [`RANKS_SCREEN`] where the pauses read again by CUPTI among launches of their own
/// (those a run read once its own ranks lay so) lie high among those with a chance of at
/// most [`RANKS_AGAIN_ALARM`]. A kernel that spreads its timed launches wide on purpose
/// widens the medians' bound but not the ranks (`quantile-smear`, docs/methodology.md). Not
/// where the reading holds the host's launch (events on an idle queue), which a pause slows
/// whatever the kernel does (by events an honest LayerNorm's pauses lay so high with a
/// chance of 2e-6), nor where the clock moved.
fn ranked_high(
    mut test: Test,
    (records, staged): (&[&CellRecord], &[f64]),
    steady: &Stats,
    r: &Readings,
) -> Test {
    let quiet = test.suspect.is_none() && !test.idle && r.clock_moved_to.is_none();
    let Some(runs) = r.steady_sorted.filter(|_| quiet && !r.host_in_reading) else {
        return test;
    };
    let ranked: Vec<RunRanks> = (records.iter().filter_map(|c| among_of(c)))
        .filter_map(|(process, m)| {
            let run = runs.iter().find(|s| s.process == process)?;
            Some(RunRanks {
                regions: &m.pauses_ns,
                sorted: &run.sorted,
                count: run.count,
            })
        })
        .collect();
    let Some(first) = pauses_ranked(&ranked, staged, steady.median) else {
        return test;
    };
    let head = format!(
        "suspect: {} pauses, each less the {:.3} µs margin, lie high among their runs' {} timed launches (a mean share {:.2} of them below, where readings alike lie about 0.50)",
        first.ranked,
        first.margin_ns / 1e3,
        steady.count,
        first.mean_share,
    );
    let why = why(Tell::Pause);
    if first.chance <= FALSE_ALARM {
        test.suspect = Some(format!(
            "{head}: readings alike lie so high with a chance of {:.1e}: {why}",
            first.chance
        ));
    } else if first.chance <= RANKS_SCREEN {
        let again: Vec<&KernelRecords> = (records.iter().filter_map(|c| among_of(c)))
            .filter_map(|(_, m)| m.ranks_again.as_ref())
            .collect();
        let second = ranked_again(&again, first.margin_ns);
        if second.ranked > 0 && second.chance <= RANKS_AGAIN_ALARM {
            test.suspect = Some(format!(
                "{head}, with a chance of {:.1e}; {} read again by CUPTI lie high among launches of their own (a mean share {:.2}), with a chance of {:.1e}: {why}",
                first.chance, second.ranked, second.mean_share, second.chance,
            ));
        }
    }
    test
}

/// A run's process and its regions among the timed launches, where it has them.
fn among_of(c: &CellRecord) -> Option<(u32, &AuditsAmong)> {
    Some((c.process, c.audit.as_ref()?.among.as_ref()?))
}

/// A data test that found nothing, its audited regions' lower median over the decoys' median
/// by more than the margin, judged again by each audited region's rank, less the margin, among
/// the decoys that ran on its own data: after an audited region the buffers hold its draw,
/// which the decoys after it draw again until the next audited region, so for an honest kernel
/// that region and those decoys are readings alike (the same data, each after a stage that
/// draws and the same pause, whatever the timer), where decoys of other draws are not for a
/// kernel whose time follows its data. Suspect where readings alike lie so high with a chance of
/// at most [`FALSE_ALARM`] (`each_above_chance`, exact over the groups). A kernel that skips a
/// share drawn anew each launch, but none on new data, spreads its timed launches and decoys
/// wide, which widens the medians' bound, not the ranks: a fourth adversary's n-body
/// (`region-smear`, skipping 0-50% of its bodies) read its 6 audited regions at 60.6 µs, its
/// decoys at 49.7 µs, on an H200, within a bound of 21.0 µs. Where the samples spread wide the
/// round runs [`crate::protocol::SPREAD_DECOYS`] more decoys, so that the groups hold a few
/// each. Regions after the samples, which no decoy follows, rank among none. Not where the
/// clock moved (the readings are then scaled).
fn audited_ranked_high(mut test: Test, records: &[&CellRecord], r: &Readings) -> Test {
    let margin = margin_ns(test.baseline_ns);
    let quiet = test.suspect.is_none() && r.clock_moved_to.is_none();
    if !quiet || test.median_ns - margin <= test.baseline_ns {
        return test;
    }
    let among = records
        .iter()
        .filter_map(|c| c.audit.as_ref()?.among.as_ref());
    let strata: Vec<(f64, usize)> = among.flat_map(|m| on_its_own_data(m, margin)).collect();
    let chance = each_above_chance(&strata);
    if chance <= FALSE_ALARM {
        let ranked: Vec<&(f64, usize)> = strata.iter().filter(|s| s.1 > 0).collect();
        let decoys: usize = ranked.iter().map(|s| s.1).sum();
        let shares = ranked.iter().map(|s| s.0 / s.1 as f64);
        let mean_share = shares.sum::<f64>() / ranked.len().max(1) as f64;
        test.suspect = Some(format!(
            "suspect: {} audited regions, each less the {:.3} µs margin, lie high among the {decoys} decoys on their own data (a mean share {mean_share:.2} of them below, where readings alike lie about 0.50): readings alike lie so high with a chance of {chance:.1e}: {}",
            ranked.len(),
            margin / 1e3,
            why(Tell::Data),
        ));
    }
    test
}

/// Each audited region of a run, less `margin`, ranked among the decoys that ran on its draw
/// (those after it, before the next audited region or probe): how many lie below it (ties
/// counting half), and how many there are. None where the positions do not match the
/// readings.
fn on_its_own_data(m: &AuditsAmong, margin: f64) -> Vec<(f64, usize)> {
    let placed = |at: &[u64], ns: &[f64]| -> Option<Vec<(u64, f64)>> {
        (at.len() == ns.len()).then(|| {
            let mut v: Vec<(u64, f64)> = at.iter().copied().zip(ns.iter().copied()).collect();
            v.sort_by_key(|p| p.0);
            v
        })
    };
    let (Some(audited), Some(decoys)) = (
        placed(&m.positions, &m.readings_ns),
        placed(&m.decoy_positions, &m.decoys_ns),
    ) else {
        return Vec::new();
    };
    // A probe draws over the held data too: the decoys after it draw its data.
    let next_draw = |at: u64| {
        let after = |p: &u64| *p > at;
        let probe = m.probe_positions.iter().copied().filter(after).min();
        let audit = audited.iter().map(|a| a.0).filter(after).min();
        probe.into_iter().chain(audit).min().unwrap_or(u64::MAX)
    };
    (audited.iter())
        .filter(|a| a.1.is_finite())
        .map(|&(at, ns)| {
            let next = next_draw(at);
            let own: Vec<f64> = (decoys.iter())
                .filter(|d| d.0 > at && d.0 < next && d.1.is_finite())
                .map(|d| d.1)
                .collect();
            let x = ns - margin;
            let below = own.iter().filter(|&&d| d < x).count() as f64;
            let equal = own.iter().filter(|&&d| d == x).count() as f64;
            (below + equal / 2.0, own.len())
        })
        .collect()
}
