//! The audit's bounds: how far a group of regions, or one region, may read above its
//! baseline for an honest kernel, against a spread the kernel cannot widen (the timed
//! samples' and the decoys', never the audited regions' own), at a stated false-alarm rate
//! and beyond a margin; and what a finding beyond it says.

use super::stats::Stats;
use crate::protocol::DeviceInfo;
use crate::statistics::{
    iqr_sigma, lower_median, lower_median_shortfall, mad_sigma, median, split_chance,
    upper_quantile,
};

/// A kernel that skips as much as a detection limit says is missed at most this often: the
/// limit is where a test's medians, as spread as its bound assumes, clear the bound 19 times
/// in 20, not where their difference meets it (which a kernel there passes half the time).
pub const MISSED: f64 = 0.05;
pub use crate::protocol::{
    margin_ns, FALSE_ALARM, MARGIN_NS, MARGIN_SHARE, MIN_SAMPLES, Z_FALSE_ALARM,
};
/// Without decoys, an audited launch is suspect where it took more than this many times the
/// reading...
pub const BAND_RATIO: f64 = 2.0;
/// ...plus this much. A launch on its own meets a colder instruction cache, TLB and queue
/// than timed launches that follow one another, and the events' floor moves by about a
/// microsecond: a few-µs kernel may read twice as long alone without cheating.
pub const BAND_SLACK_NS: f64 = 5_000.0;
// The worker runs a second audited region where a lone one read over CONFIRM_RATIO times
// the timed median: below the band, so the band judges no lone reading unconfirmed.
const _: () = assert!(crate::protocol::CONFIRM_RATIO < BAND_RATIO);

/// What a test set against what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tell {
    /// Audited regions against decoys: new data.
    Data,
    /// Pauses against the timed launches: the pause before a region.
    Pause,
    /// Staged regions (audited and decoys) against pauses: the stage's writes (beyond what
    /// the L2 it leaves costs, in a hot cell).
    Stage,
    /// Audited launches against the cell's reading, by the fixed band.
    Band,
    /// In a region of several launches, the first launches of audited regions against
    /// decoys', and of pauses against the timed regions': a kernel that does its work only
    /// on a region's first launch on new data, or after a pause, shows there.
    FirstData,
    FirstPause,
    /// The staged regions' first launches against the pauses': a kernel that does its work
    /// on a region's first launch only after a stage.
    FirstStage,
    /// The timed regions' first launches against the launches after them in the same
    /// regions: a kernel that does all its work only after a pause does it on every
    /// region's first launch, timed or not, and less on the rest.
    FirstRest,
    /// The launches alone after audited regions of several against a timed region's launches:
    /// a kernel that shares a region's work out among its launches does it all alone.
    Alone,
}

impl Tell {
    /// What the test's two sides are, in words.
    pub fn sides(self) -> (&'static str, &'static str) {
        match self {
            Tell::Data => ("audited regions", "decoys"),
            Tell::Pause => ("pauses", "timed launches"),
            Tell::Stage => ("staged regions", "pauses"),
            Tell::Band => ("audited launches", "the reading"),
            Tell::FirstData => ("audited regions' first launches", "decoys'"),
            Tell::FirstPause => ("pauses' first launches", "timed regions'"),
            Tell::FirstStage => ("staged regions' first launches", "pauses'"),
            Tell::FirstRest => ("timed regions' first launches", "the launches after them"),
            Tell::Alone => ("launches alone", "a timed region's launches"),
        }
    }
}

/// One test's finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    pub tell: Tell,
    /// The median of the regions tested, and of their baseline, ns per launch.
    pub median_ns: f64,
    pub baseline_ns: f64,
    /// How far above the baseline their median may lie for an honest kernel.
    pub bound_ns: f64,
    /// How far above it one region may lie, corrected for their number.
    pub single_bound_ns: f64,
    /// The regions tested, and how many lay beyond the single bound.
    pub regions: usize,
    pub beyond: usize,
    /// The smallest share of its work a kernel could skip where it is timed (doing it all
    /// in these regions) and still be caught.
    pub limit: f64,
    pub suspect: Option<String>,
    /// A pause test beyond its bound whose staged regions were not: the GPU gone idle
    /// during the pause, not the kernel.
    pub idle: bool,
    /// A pause test read from CUPTI's kernel records (see [`by_kernel_records`]).
    pub by_cupti: bool,
}

/// The spread a test judges by: a normal's sigma, and the farthest of the timed samples
/// above their median as a share of it (the tail a normal misses).
#[derive(Debug, Clone, Copy)]
pub(super) struct Spread {
    pub(super) sigma: f64,
    pub(super) tail: f64,
    /// Whether one region alone is evidence: not where the reading holds the host's launch
    /// time (events or a host timer on an idle queue), whose tail has no bound.
    pub(super) single: bool,
    /// What the regions' state may add to an honest kernel's time beyond the noise, ns per
    /// launch: 0 but where a stage leaves the L2 unlike the baseline's ([`l2_turnover_ns`]).
    pub(super) allowance_ns: f64,
}

/// The most a hot region's L2 state can cost an honest kernel against a launch after its
/// own: a whole L2 of dirty lines written back and its lines fetched again, at the DRAM
/// peak (on an H200, 2 x 60 MiB at 4.8 TB/s: 26 µs). A stage's writes leave the inputs'
/// lines dirty where the kernel's own launch left them clean: a 512 MiB sum on an H200 read
/// 8.7 µs slower after a draw than after a wait as long (`benches/stage-state`). None where
/// the device's memory bus is not known.
pub fn l2_turnover_ns(device: &DeviceInfo) -> Option<f64> {
    let dram = crate::experiment::rates::dram(device.mem_clock_max_mhz, device.mem_bus_width_bits?);
    (dram > 0.0).then(|| 2.0 * device.l2_bytes.max(0) as f64 / dram * 1e9)
}

/// Decoys fewer than this say nothing of their spread: of two, one slow reading (a stage
/// can leave a hot launch 10% slower) sets their deviation alone.
const LEAST_SPREAD: usize = 3;

/// How a stage's added time varies from region to region, which no timed sample meets: its
/// variance over its mean (ns), as a sum of many small delays (the lines a draw left dirty,
/// written back) varies. The data tests' sigma is at least the square root of this times
/// what a stage adds, their audited regions and decoys both following a stage. On three
/// H200s (the trust suites at 68cdb9b, dd7b66e and ea42a5b), the staged regions of 90
/// honest cells whose stage added 0.3 µs or more, pooled: 0.097 µs (a `sum` of 512 MiB, 7-9
/// µs added, deviations of 0.1-0.8 µs; a shared-memory histogram of 16 MiB, 1.2 µs added,
/// 0.1-0.7 µs). One interleaved histogram cell's two audited regions read 0.83 µs over its
/// two decoys, past the 0.59 µs bound its timed samples (an interquartile range of 32 ns)
/// gave. A kernel that tells a stage apart could pad every staged region to raise it, by no
/// more than the stage test lets a stage's L2 state cost (the blind spot that test has).
const STAGE_VARIANCE_NS: f64 = 100.0;

impl Spread {
    /// The spread at least what a stage's added time varies by ([`STAGE_VARIANCE_NS`]): the
    /// decoys' lower median over the pauses' median (0 where either is missing or the
    /// decoys are the faster; of two decoys the faster, so that one the host's launch held
    /// up does not widen it), readings a launch of regions of `launches` (the stage's time
    /// falls on the first, so its variance on their mean is `launches` times smaller). For the tests of audited regions against decoys only: the
    /// stage test sets the staged regions against the pauses, and a kernel that works after
    /// a stage is what it looks for.
    pub(super) fn with_stage_noise(self, decoys: &[f64], pauses: &[f64], launches: u64) -> Spread {
        let added = match (lower_median(decoys), median(pauses.to_vec())) {
            (Some(d), Some(p)) => (d - p).max(0.0),
            _ => 0.0,
        };
        Spread {
            sigma: self
                .sigma
                .max((STAGE_VARIANCE_NS * added / launches.max(1) as f64).sqrt()),
            ..self
        }
    }

    /// The spread widened by the decoys' own, where there are enough of them to say: their
    /// deviation's sigma, and how far the farthest lies above their median (staged regions
    /// meet what a stage left, which no timed sample does). One staged region alone is
    /// evidence only then.
    pub(super) fn with_decoys(self, decoys: &[f64]) -> Spread {
        let centre = median(decoys.to_vec()).unwrap_or_default();
        let farthest = decoys.iter().copied().fold(f64::MIN, f64::max);
        match decoys.len() >= LEAST_SPREAD && centre > 0.0 {
            true => Spread {
                sigma: self.sigma.max(mad_sigma(decoys)),
                tail: self.tail.max(farthest / centre - 1.0),
                ..self
            },
            false => Spread {
                single: false,
                ..self
            },
        }
    }

    /// The timed samples' spread: their interquartile range. A kernel that does all its work
    /// in some timed launches only, at random, widens it, as an honest kernel of two
    /// behaviors does (93 launches at 129.7 µs and 107 at 108.5 µs gave a reduction cheat a
    /// range of 21.57 µs and a limit of 49.9% on an H200; `incore`'s divides alternate between
    /// two times 8 µs apart): with a few regions no test tells the two apart at a false
    /// alarm in a thousand, and the limit says how much either could hide. The report names
    /// such a split (`analysis::findings::split`).
    pub(super) fn of(timed: &Stats, single: bool) -> Spread {
        Spread {
            sigma: iqr_sigma(timed.iqr),
            tail: match timed.median > 0.0 {
                true => (timed.max / timed.median - 1.0).max(0.0),
                false => 0.0,
            },
            single,
            allowance_ns: 0.0,
        }
    }
}

/// The median of a baseline, and how many readings it is of.
#[derive(Debug, Clone, Copy)]
pub(super) struct Baseline {
    pub(super) median_ns: f64,
    pub(super) count: usize,
}

/// `regions` against the median of `baseline` readings, regions staged as they were (so,
/// for an honest kernel, alike): regions beyond the single bound are evidence only where
/// the baseline's lie beyond it so much less often that, were the two alike, the chance of
/// it is at most [`FALSE_ALARM`]. A stage can leave a region 10% slower now and then (3 of
/// 16 staged regions of an honest persistent matmul on an H200), which no timed sample meets.
pub(super) fn against(
    tell: Tell,
    regions: &[f64],
    baseline: &[f64],
    spread: Spread,
) -> Option<Test> {
    let base = Baseline {
        median_ns: median(baseline.to_vec())?,
        count: baseline.len(),
    };
    against_baseline(tell, regions, base, (spread, Some(baseline)))
}

/// `regions` against a baseline: suspect where their median exceeds it by more than
/// [`Z_FALSE_ALARM`] standard errors of the difference plus the margin (a median of k
/// readings of spread sigma varies as sqrt(pi / 2k) of it), or where one region exceeds it
/// by more than the normal quantile of the false-alarm rate shared among the regions, in
/// sigmas, and than the farthest timed sample lay above theirs, each plus the margin, where
/// so many regions lie beyond that readings alike would, against N timed samples none of
/// which does, with a chance of at most [`FALSE_ALARM`] (whatever their tail).
pub(super) fn against_baseline(
    tell: Tell,
    regions: &[f64],
    base: Baseline,
    (spread, peers): (Spread, Option<&[f64]>),
) -> Option<Test> {
    let sigma = spread.sigma;
    let k = regions.len();
    let median_ns = lower_median(regions)?;
    let (m, baseline_ns) = (base.count.max(1) as f64, base.median_ns);
    let half_pi = std::f64::consts::FRAC_PI_2;
    let margin = margin_ns(baseline_ns) + spread.allowance_ns;
    let bound_ns = Z_FALSE_ALARM * sigma * (half_pi * (1.0 / k as f64 + 1.0 / m)).sqrt() + margin;
    let z_one = upper_quantile(FALSE_ALARM / k as f64);
    let single_bound_ns =
        (z_one * sigma * (1.0 + half_pi / m).sqrt()).max(spread.tail * baseline_ns) + margin;
    // A group of one is one region: where one alone is evidence, the farthest timed sample
    // bounds it too. On an H200 a hot stencil's lone pause, the second launch after the
    // first draw, read 30.98 µs against a timed median of 25.73 µs (the launches after a
    // draw read up to 35.07 µs), 5.25 µs over a bound of 0.61 µs from its quartiles.
    let bound_ns = match (k, spread.single) {
        (1, true) => bound_ns.max(single_bound_ns),
        _ => bound_ns,
    };
    let count_beyond = |of: &[f64]| {
        (of.iter())
            .filter(|&&t| spread.single && t - baseline_ns > single_bound_ns)
            .count()
    };
    let beyond = count_beyond(regions);
    // Against readings staged alike: how often they would split so (1 where none is beyond).
    let chance = match peers {
        Some(peers) if beyond > 0 => {
            let peers_beyond = count_beyond(peers);
            let chance = split_chance((k, beyond), (peers.len(), peers_beyond));
            Some((chance, peers_beyond, peers.len()))
        }
        // None of the baseline's readings lies beyond the single bound, which lies above
        // the farthest of them: so many of k regions beyond it split so with this chance
        // (one of five pauses against 200 timed launches, 2.4%; two, 0.05%).
        None if beyond > 0 => {
            let chance = split_chance((k, beyond), (base.count, 0));
            Some((chance, 0, base.count))
        }
        _ => None,
    };
    let evidence = beyond > 0 && chance.is_none_or(|(p, ..)| p <= FALSE_ALARM);
    let (what, against) = tell.sides();
    let allowed = match (spread.allowance_ns > 0.0, tell) {
        (true, Tell::FirstPause) => "noise, margin and a first launch after a wait allow",
        (true, Tell::Alone) => "noise, margin and a launch's own start allow",
        (true, _) => "noise, margin and a stage's L2 state allow",
        (false, _) => "noise and margin allow",
    };
    let suspect = if median_ns - baseline_ns > bound_ns {
        Some(format!(
            "suspect: {k} {what} read {:.3} µs (lower median), {against} {:.3} µs ({:.2}x), beyond the {:.3} µs {allowed}: {}",
            median_ns / 1e3,
            baseline_ns / 1e3,
            median_ns / baseline_ns,
            bound_ns / 1e3,
            why(tell),
        ))
    } else if evidence {
        let worst = regions.iter().copied().fold(f64::MIN, f64::max);
        let odds = match chance {
            Some((p, peers_beyond, peers)) => format!(
                "against {peers_beyond} of {peers} {against}, a split readings alike make with a chance of {p:.1e}"
            ),
            None => format!("which one region in {:.0} passes by chance", 1.0 / FALSE_ALARM),
        };
        Some(format!(
            "suspect: {beyond} of {k} {what} read beyond {:.3} µs over the {against}' {:.3} µs (the worst {:.3} µs, {:.2}x), {odds}: {}",
            single_bound_ns / 1e3,
            baseline_ns / 1e3,
            worst / 1e3,
            worst / baseline_ns,
            why(tell),
        ))
    } else {
        None
    };
    Some(Test {
        tell,
        median_ns,
        baseline_ns,
        bound_ns,
        single_bound_ns,
        regions: k,
        beyond,
        limit: limit(bound_ns + shortfall_ns(sigma, k, base.count), baseline_ns),
        suspect,
        idle: false,
        by_cupti: false,
    })
}

/// How far `k` regions' lower median, less the median of a baseline of `m`, may fall short of
/// the shift a skipping kernel gives them, at most [`MISSED`] of the time, for readings of
/// spread `sigma`: each median takes half the chance, the regions' as the order statistic it
/// is (of two, the smaller: 2.24 sigma), the baseline's by its standard error.
pub(super) fn shortfall_ns(sigma: f64, k: usize, m: usize) -> f64 {
    let half = MISSED / 2.0;
    let baseline = upper_quantile(half) * (std::f64::consts::FRAC_PI_2 / m.max(1) as f64).sqrt();
    sigma * (lower_median_shortfall(k, half) + baseline)
}

/// The detection limit of a test whose regions must read `shift_ns` over a baseline of
/// `baseline_ns` to be caught: the share of its work a kernel skips where it is timed, doing
/// it all in the regions, that gives them that shift.
pub(super) fn limit(shift_ns: f64, baseline_ns: f64) -> f64 {
    shift_ns / (baseline_ns + shift_ns)
}

/// A data test's limit as a share of the work where the kernel is timed: a test's limit
/// takes its baseline, the decoys, as the work a kernel skips down to, but a stage can slow a
/// cache's hits in the decoys more than its misses in the audited regions (lines it pushed out
/// of L2): a third adversary's 4-slot cache read its decoys 14.34 µs after their stage on an
/// H200, its pauses 11.49 µs and its timed launches 11.07 µs, its audited regions 0.6 µs over
/// the honest kernel's 16.6 µs, and passed 33.2% faster than it, against a limit of 27.9% by
/// the decoys. The test is sure to catch a kernel whose work, after a stage, exceeds the
/// decoys' median and the shift it needs; of that, what the decoys read over the pauses'
/// median (`pauses_ns`: the same pause, no stage) is the stage's, which the audited regions may
/// not pay. So the kernel is caught where the work it skips exceeds that and the stage's part,
/// and the limit is that as a share of its work where timed (`timed_ns`, the timed median, plus
/// it); never below the test's own. Where the decoys read as the pauses (a kernel that works
/// after any pause reads both at all its work) it is the shift over the timed median and it.
pub(super) fn share_where_timed(mut test: Test, (pauses_ns, timed_ns): (f64, f64)) -> Test {
    let caught_from_ns = test.baseline_ns / (1.0 - test.limit);
    let skipped_ns = caught_from_ns - pauses_ns;
    if skipped_ns.is_finite() && timed_ns.is_finite() && timed_ns + skipped_ns > 0.0 {
        test.limit = test.limit.max(skipped_ns / (timed_ns + skipped_ns));
    }
    test
}

/// A pause test's finding set against the regions whose stage drew (`staged`), which follow
/// the same pause with the GPU busy drawing: a kernel that does all its work after a pause
/// does it there too, while an honest one that meets a GPU gone idle does not (a 148 µs
/// hot transpose read 7% slower after an idle 290 µs, not after a draw as long). Suspect
/// only where the staged regions lie beyond the same bound.
pub(super) fn idle_or_kernel(mut test: Test, staged: &[f64]) -> Test {
    let staged_too = lower_median(staged).is_none_or(|s| s - test.baseline_ns > test.bound_ns);
    if test.suspect.is_some() && !staged_too {
        test.suspect = None;
        test.idle = true;
    }
    test
}

/// A pause test that found the pauses slow by events on an idle queue, judged again on the
/// kernel records CUPTI gave of the timed launches and pauses the run launched after its
/// samples (`records`: timed, pauses), where it read them: those leave out the host's
/// launch, which a pause slows whatever the kernel does; a kernel that skips work back to
/// back skips it there too. Against the timed samples' spread (wider than the records').
/// Only where the records' timed launches read no slower than the samples, within the
/// bound: they leave out the launch the samples hold, so a kernel slower there did more
/// work than in its samples (one that turned honest after them, or told them apart), and
/// the first test stands.
pub(super) fn by_kernel_records(
    test: Test,
    (timed, pauses): (&[f64], &[f64]),
    spread: Spread,
) -> Test {
    let baseline = median(timed.to_vec()).map(|median_ns| Baseline {
        median_ns,
        count: timed.len(),
    });
    let (true, Some(baseline)) = (test.suspect.is_some(), baseline) else {
        return test;
    };
    if baseline.median_ns > test.baseline_ns + test.bound_ns {
        return test;
    }
    match against_baseline(Tell::Pause, pauses, baseline, (spread, Some(timed))) {
        Some(mut again) => {
            again.by_cupti = true;
            again.suspect =
                (again.suspect).map(|s| s.replacen("suspect: ", "suspect: by CUPTI, ", 1));
            again
        }
        None => test,
    }
}

/// What a test's suspect finding says the timed launches did.
pub(super) fn why(tell: Tell) -> &'static str {
    match tell {
        Tell::Data => {
            "the timed launches skipped work the audited ones did on data they had not seen"
        }
        Tell::Pause => "the launches after a pause did work the timed launches skipped",
        Tell::Stage | Tell::FirstStage => {
            "the kernel did more work after a stage that wrote its inputs than after a pause alone"
        }
        Tell::Band => "the timed launches did not do the work the audited ones did",
        Tell::FirstData => "the first launch on new data did work the launches after it skipped",
        Tell::FirstPause => "a first launch after a pause did work a timed region's skipped",
        Tell::FirstRest => "the first launch, after a pause, did work the rest skipped",
        Tell::Alone => "a launch alone did work a timed region's launches shared out or skipped",
    }
}

/// The audited launches' lower median against the cell's reading, by the fixed band: it lets
/// through any kernel that skips less than half its work, which is why decoys and pauses are
/// set against regions wherever the samples allow. The lower median: of a lone region read
/// far above the samples and the second the worker ran to confirm it, the smaller, so that a
/// host held up once is not a cheat.
/// `timed`: the timed samples' sigma and count, where there are enough to say (the limit
/// then allows what the medians may fall short by; else it is where the band lies).
pub(super) fn band(audited: &[f64], reading_ns: f64, timed: Option<(f64, usize)>) -> Option<Test> {
    let median_ns = lower_median(audited)?;
    if !reading_ns.is_finite() {
        return None;
    }
    let bound_ns = (BAND_RATIO - 1.0) * reading_ns + BAND_SLACK_NS;
    let suspect = (median_ns > reading_ns + bound_ns).then(|| {
        format!(
            "suspect: the timed launches read {:.3} µs, but {} on new inputs took {:.3} µs ({:.1}x, more than {BAND_RATIO}x + {} µs): the timed launches did not do the work the audited ones did (a result kept from earlier inputs, or work skipped once done)",
            reading_ns / 1e3,
            match audited.len() {
                1 => "one launch".to_string(),
                n => format!("{n} launches (lower median)"),
            },
            median_ns / 1e3,
            median_ns / reading_ns,
            BAND_SLACK_NS / 1e3
        )
    });
    Some(Test {
        tell: Tell::Band,
        median_ns,
        baseline_ns: reading_ns,
        bound_ns,
        single_bound_ns: bound_ns,
        regions: audited.len(),
        beyond: 0,
        limit: limit(
            bound_ns + timed.map_or(0.0, |(sigma, m)| shortfall_ns(sigma, audited.len(), m)),
            reading_ns,
        ),
        suspect,
        idle: false,
        by_cupti: false,
    })
}

#[cfg(test)]
mod tests;
