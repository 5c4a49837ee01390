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
//! In a flushed cell a third, **stage**, sets the decoys against the pauses: both meet a
//! flushed L2 after the same pause, and differ only by the stage's writes. In a region of
//! several launches (a batch, a graph), the regions' first launches are tested too.
//!
//! Each test sets the medians apart against a spread the kernel cannot widen (the timed
//! samples' and the decoys', never the audited regions' own), at a stated false-alarm rate
//! and beyond a margin, and tests each region on its own against the same spread,
//! corrected for their number, and beyond the farthest of the timed samples (their tail
//! is heavier than a normal's: a host's hiccup under events, a launch after a stage): one
//! audited region beyond the decoys is evidence. Where a cell has no decoys and no pauses
//! (too few samples to spare them, or the weaker audit of one launch after its timed ones),
//! a fixed band against its reading is all there is.

use super::median;
use super::stats::Stats;
use crate::experiment::knobs::{cache::Cache, queue::Queue, timer::TimerKind};
use crate::plan::Cell;
use crate::protocol::{AuditsAmong, CellRecord, FirstLaunches};

pub const FALSE_ALARM: f64 = 1e-3;
pub const Z_FALSE_ALARM: f64 = 3.090;
/// Beyond the noise, a median (or a region) must exceed its baseline by this share of it...
pub const MARGIN_SHARE: f64 = 0.02;
/// ...and by this much: the spread of two event readings of one kernel.
pub const MARGIN_NS: f64 = 500.0;
/// Timed samples fewer than this give no spread to judge by.
const MIN_SAMPLES: usize = 10;
/// Without decoys, an audited launch is suspect where it took more than this many times the
/// reading...
pub const BAND_RATIO: f64 = 2.0;
/// ...plus this much. A launch on its own meets a colder instruction cache, TLB and queue
/// than timed launches that follow one another, and the events' floor moves by about a
/// microsecond: a few-µs kernel may read twice as long alone without cheating.
pub const BAND_SLACK_NS: f64 = 5_000.0;

/// What a test set against what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tell {
    /// Audited regions against decoys: new data.
    Data,
    /// Pauses against the timed launches: the pause before a region.
    Pause,
    /// Decoys against pauses in a flushed cell: the stage's writes.
    Stage,
    /// Audited launches against the cell's reading, by the fixed band.
    Band,
    /// In a region of several launches, the first launches of audited regions against
    /// decoys', and of pauses against the timed regions': a kernel that does its work only
    /// on a region's first launch on new data, or after a pause, shows there.
    FirstData,
    FirstPause,
    /// The timed regions' first launches against the launches after them in the same
    /// regions: a kernel that does all its work only after a pause does it on every
    /// region's first launch, timed or not, and less on the rest.
    FirstRest,
}

impl Tell {
    /// What the test's two sides are, in words.
    pub fn sides(self) -> (&'static str, &'static str) {
        match self {
            Tell::Data => ("audited regions", "decoys"),
            Tell::Pause => ("pauses", "timed launches"),
            Tell::Stage => ("decoys", "pauses"),
            Tell::Band => ("audited launches", "the reading"),
            Tell::FirstData => ("audited regions' first launches", "decoys'"),
            Tell::FirstPause => ("pauses' first launches", "timed regions'"),
            Tell::FirstRest => ("timed regions' first launches", "the launches after them"),
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
}

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
            .filter(|t| t.tell != Tell::Stage)
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
    /// Whether an L2 flush came before each region (decoys and pauses then meet the same
    /// cache).
    pub flushed: bool,
    /// Whether a reading holds the host's launch time (events or a host timer on an idle
    /// queue): one region alone is then no evidence.
    pub host_in_reading: bool,
    /// Launches in one timed region (a batch's or a graph's).
    pub per_region: u64,
}

impl<'a> Readings<'a> {
    /// The readings of `cell`, with what its method says of them.
    pub fn of(cell: &Cell, reading_ns: Option<f64>, steady: Option<&'a Stats>) -> Readings<'a> {
        let knobs = &cell.knobs;
        let host_timer = matches!(knobs.timer, TimerKind::Host | TimerKind::HostSync);
        let idle_events = knobs.timer == TimerKind::Events && knobs.queue == Queue::Idle;
        Readings {
            reading_ns,
            steady,
            flushed: matches!(knobs.cache, Cache::Flush { .. }),
            host_in_reading: host_timer || idle_events,
            per_region: knobs.launches.count(),
        }
    }
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
    let pooled = |of: fn(&AuditsAmong) -> &Vec<f64>| -> Vec<f64> {
        (among.iter())
            .flat_map(|m| of(m).iter().copied().filter(|t| t.is_finite()))
            .collect()
    };
    let audited = pooled(|m| &m.readings_ns);
    let decoys = pooled(|m| &m.decoys_ns);
    let pauses = pooled(|m| &m.pauses_ns);
    let after: Vec<f64> = (audits.iter().filter(|a| a.weaker.is_some()))
        .filter_map(|a| a.launch_ns)
        .collect();
    let steady = r.steady.filter(|s| s.count as usize >= MIN_SAMPLES);
    let Some(timed) = steady.map(|s| Spread::of(s, !r.host_in_reading)) else {
        return Judgement::of(
            band(&[audited, after].concat(), r.reading_ns?)
                .into_iter()
                .collect(),
        );
    };
    let with_decoys = timed.with_decoys(&decoys);
    let mut tests = Vec::new();
    if !audited.is_empty() && !decoys.is_empty() {
        tests.extend(against(Tell::Data, &audited, &decoys, with_decoys));
    }
    if let (Some(s), false) = (steady, pauses.is_empty()) {
        let baseline = Baseline {
            median_ns: s.median,
            count: s.count as usize,
        };
        let staged = [&audited[..], &decoys[..]].concat();
        let test = against_baseline(Tell::Pause, &pauses, baseline, timed);
        tests.extend(test.map(|t| idle_or_kernel(t, &staged)));
    }
    if r.flushed && !decoys.is_empty() && !pauses.is_empty() {
        tests.extend(against(Tell::Stage, &decoys, &pauses, with_decoys));
    }
    tests.extend(first_launches(&among, timed.single));
    // In a flushed region each launch's flush comes before it, and the first launch's time
    // holds the first flush: only hot regions set it against the rest.
    if let (true, false, Some(s)) = (r.per_region > 1, r.flushed, steady) {
        tests.extend(first_against_rest(&among, s, r));
    }
    if !tests.iter().any(|t| t.tell == Tell::Data) {
        tests.extend(
            r.reading_ns
                .and_then(|ns| band(&[audited, after].concat(), ns)),
        );
    }
    Judgement::of(tests)
}

/// The tests on the first launches of regions of several, pooled over the runs that read
/// them.
fn first_launches(among: &[&AuditsAmong], single: bool) -> Vec<Test> {
    let firsts: Vec<_> = among.iter().filter_map(|m| m.firsts.as_ref()).collect();
    let pooled = |of: fn(&FirstLaunches) -> &Vec<f64>| -> Vec<f64> {
        (firsts.iter())
            .flat_map(|f| of(f).iter().copied().filter(|t| t.is_finite()))
            .collect()
    };
    let count: u64 = firsts.iter().map(|f| f.timed_count).sum();
    let (Some(median), true) = (
        median(firsts.iter().map(|f| f.timed_median).collect()),
        count as usize >= MIN_SAMPLES,
    ) else {
        return Vec::new();
    };
    let widest = |of: fn(&FirstLaunches) -> f64| firsts.iter().map(|f| of(f)).fold(0.0, f64::max);
    let timed = Spread {
        sigma: widest(|f| f.timed_iqr) / 1.349,
        tail: (widest(|f| f.timed_max) / median - 1.0).max(0.0),
        single,
    };
    let (audited, decoys, pauses) = (
        pooled(|f| &f.audited),
        pooled(|f| &f.decoys),
        pooled(|f| &f.pauses),
    );
    let mut tests = Vec::new();
    if !audited.is_empty() && !decoys.is_empty() {
        tests.extend(against(
            Tell::FirstData,
            &audited,
            &decoys,
            timed.with_decoys(&decoys),
        ));
    }
    if !pauses.is_empty() {
        let baseline = Baseline {
            median_ns: median,
            count: count as usize,
        };
        let staged = [&audited[..], &decoys[..]].concat();
        let test = against_baseline(Tell::FirstPause, &pauses, baseline, timed);
        tests.extend(test.map(|t| idle_or_kernel(t, &staged)));
    }
    tests
}

/// What a timed region's first launch may take beyond each launch after it, besides the
/// margin: the region's start, counted in its first launch. Measured on an H200, 2.1 to
/// 3.3 µs in a graph behind a wait kernel (the graph's launch and the event node after its
/// first launch), 4 to 15 µs in a batch on an idle queue (the host's launch of the first).
pub const FIRST_START_NS: f64 = 5_000.0;
pub const FIRST_START_IDLE_NS: f64 = 25_000.0;

/// The timed regions' first launch against the launches after it: in a region of N whose
/// reading is R per launch and whose first launch took F, the rest took (N R - F) / (N - 1)
/// each. Suspect where F exceeds it by more than the region's start may take, the margin
/// and the noise of F's median.
fn first_against_rest(among: &[&AuditsAmong], steady: &Stats, r: &Readings) -> Option<Test> {
    let firsts: Vec<_> = among.iter().filter_map(|m| m.firsts.as_ref()).collect();
    let count: u64 = firsts.iter().map(|f| f.timed_count).sum();
    let first = median(firsts.iter().map(|f| f.timed_median).collect())?;
    if (count as usize) < MIN_SAMPLES {
        return None;
    }
    let n = r.per_region as f64;
    let rest = (n * steady.median - first) / (n - 1.0);
    let sigma = firsts.iter().map(|f| f.timed_iqr).fold(0.0, f64::max) / 1.349;
    let start = match r.host_in_reading {
        true => FIRST_START_IDLE_NS,
        false => FIRST_START_NS,
    };
    let margin = (MARGIN_SHARE * rest).max(MARGIN_NS);
    let noise = Z_FALSE_ALARM * sigma * (std::f64::consts::FRAC_PI_2 / count as f64).sqrt();
    let bound_ns = start + margin + noise;
    let suspect = (first - rest > bound_ns).then(|| {
        format!(
            "suspect: the timed regions' first launches read {:.3} µs (median), the launches after them {:.3} µs each ({:.2}x), beyond the {:.3} µs a region's start, the noise and the margin allow: {}",
            first / 1e3,
            rest / 1e3,
            first / rest,
            bound_ns / 1e3,
            why(Tell::FirstRest),
        )
    });
    Some(Test {
        tell: Tell::FirstRest,
        median_ns: first,
        baseline_ns: rest,
        bound_ns,
        single_bound_ns: bound_ns,
        regions: count as usize,
        beyond: 0,
        limit: bound_ns / (rest + bound_ns),
        suspect,
        idle: false,
    })
}

/// A spread the kernel cannot widen in its favour, as a normal's sigma: the median absolute
/// deviation of `group` from its median times 1.4826; 0 for fewer than two.
fn spread(group: &[f64]) -> f64 {
    if group.len() < 2 {
        return 0.0;
    }
    let centre = median(group.to_vec()).unwrap_or_default();
    let deviations = group.iter().map(|x| (x - centre).abs()).collect();
    median(deviations).map_or(0.0, |mad| 1.4826 * mad)
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
}

/// Decoys fewer than this say nothing of their spread: of two, one slow reading (a stage
/// can leave a hot launch 10% slower) sets their deviation alone.
const LEAST_SPREAD: usize = 3;

impl Spread {
    /// The spread widened by the decoys' own, where there are enough of them to say: their
    /// deviation's sigma, and how far the farthest lies above their median (staged regions
    /// meet what a stage left, which no timed sample does). One staged region alone is
    /// evidence only then.
    fn with_decoys(self, decoys: &[f64]) -> Spread {
        let centre = median(decoys.to_vec()).unwrap_or_default();
        let farthest = decoys.iter().copied().fold(f64::MIN, f64::max);
        match decoys.len() >= LEAST_SPREAD && centre > 0.0 {
            true => Spread {
                sigma: self.sigma.max(spread(decoys)),
                tail: self.tail.max(farthest / centre - 1.0),
                single: self.single,
            },
            false => Spread {
                single: false,
                ..self
            },
        }
    }

    fn of(timed: &Stats, single: bool) -> Spread {
        Spread {
            sigma: timed.iqr / 1.349,
            tail: match timed.median > 0.0 {
                true => (timed.max / timed.median - 1.0).max(0.0),
                false => 0.0,
            },
            single,
        }
    }
}

/// The median of a baseline, and how many readings it is of.
#[derive(Debug, Clone, Copy)]
pub(super) struct Baseline {
    pub(super) median_ns: f64,
    pub(super) count: usize,
}

/// `regions` against the median of `baseline` readings.
fn against(tell: Tell, regions: &[f64], baseline: &[f64], spread: Spread) -> Option<Test> {
    let base = Baseline {
        median_ns: median(baseline.to_vec())?,
        count: baseline.len(),
    };
    against_baseline(tell, regions, base, spread)
}

/// `regions` against a baseline: suspect where their median exceeds it by more than
/// [`Z_FALSE_ALARM`] standard errors of the difference plus the margin (a median of k
/// readings of spread sigma varies as sqrt(pi / 2k) of it), or where one region exceeds it
/// by more than the normal quantile of the false-alarm rate shared among the regions, in
/// sigmas, and than the farthest timed sample lay above theirs, each plus the margin (for
/// readings that follow the timed samples' distribution, a chance of at most 1 in N + 1
/// per region, whatever its tail).
pub(super) fn against_baseline(
    tell: Tell,
    regions: &[f64],
    base: Baseline,
    spread: Spread,
) -> Option<Test> {
    let sigma = spread.sigma;
    let k = regions.len();
    let median_ns = lower_median(regions)?;
    let (m, baseline_ns) = (base.count.max(1) as f64, base.median_ns);
    let half_pi = std::f64::consts::FRAC_PI_2;
    let margin = (MARGIN_SHARE * baseline_ns).max(MARGIN_NS);
    let bound_ns = Z_FALSE_ALARM * sigma * (half_pi * (1.0 / k as f64 + 1.0 / m)).sqrt() + margin;
    let z_one = upper_quantile(FALSE_ALARM / k as f64);
    let single_bound_ns =
        (z_one * sigma * (1.0 + half_pi / m).sqrt()).max(spread.tail * baseline_ns) + margin;
    let beyond = (regions.iter())
        .filter(|&&t| spread.single && t - baseline_ns > single_bound_ns)
        .count();
    let (what, against) = tell.sides();
    let suspect = if median_ns - baseline_ns > bound_ns {
        Some(format!(
            "suspect: {k} {what} read {:.3} µs (lower median), {against} {:.3} µs ({:.2}x), beyond the {:.3} µs noise and margin allow: {}",
            median_ns / 1e3,
            baseline_ns / 1e3,
            median_ns / baseline_ns,
            bound_ns / 1e3,
            why(tell),
        ))
    } else if beyond > 0 {
        let worst = regions.iter().copied().fold(f64::MIN, f64::max);
        Some(format!(
            "suspect: {beyond} of {k} {what} read beyond {:.3} µs over the {against}' {:.3} µs (the worst {:.3} µs, {:.2}x), which one region in {:.0} passes by chance: {}",
            single_bound_ns / 1e3,
            baseline_ns / 1e3,
            worst / 1e3,
            worst / baseline_ns,
            1.0 / FALSE_ALARM,
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
        limit: bound_ns / (baseline_ns + bound_ns),
        suspect,
        idle: false,
    })
}

/// A pause test's finding set against the regions whose stage drew (`staged`), which follow
/// the same pause with the GPU busy drawing: a kernel that does all its work after a pause
/// does it there too, while an honest one that meets a GPU gone idle does not (a 148 µs
/// hot transpose read 7% slower after an idle 290 µs, not after a draw as long). Suspect
/// only where the staged regions lie beyond the same bound.
fn idle_or_kernel(mut test: Test, staged: &[f64]) -> Test {
    let staged_too = lower_median(staged).is_none_or(|s| s - test.baseline_ns > test.bound_ns);
    if test.suspect.is_some() && !staged_too {
        test.suspect = None;
        test.idle = true;
    }
    test
}

/// What a test's suspect finding says the timed launches did.
fn why(tell: Tell) -> &'static str {
    match tell {
        Tell::Data => "the timed launches skipped work the audited ones did on data they had not seen",
        Tell::Pause => "the launches after a pause did work the timed launches skipped",
        Tell::Stage => "the kernel did more work after a stage that wrote its inputs than after a pause alone",
        Tell::Band => "the timed launches did not do the work the audited ones did",
        Tell::FirstData => "the kernel did all its work on a region's first launch on new data, and less on the launches after it",
        Tell::FirstPause => "the kernel did more work on a region's first launch after a pause than on a timed region's",
        Tell::FirstRest => "the kernel did more work on each region's first launch, which follows a pause, than on the launches after it",
    }
}

/// The lower median: the middle value, the lower of the middle two of an even count (of
/// two, the smaller). A few regions' median is robust so to one slow reading.
fn lower_median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len().checked_sub(1)? / 2).copied()
}

/// The standard normal's quantile with `p` above it, by bisection on its tail.
pub(super) fn upper_quantile(p: f64) -> f64 {
    let tail = |z: f64| 0.5 * libm::erfc(z / std::f64::consts::SQRT_2);
    let (mut lo, mut hi) = (0.0, 40.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        match tail(mid) > p {
            true => lo = mid,
            false => hi = mid,
        }
    }
    0.5 * (lo + hi)
}

/// The audited median against the cell's reading, by the fixed band: it lets through any
/// kernel that skips less than half its work, which is why decoys and pauses are set
/// against regions wherever the samples allow.
fn band(audited: &[f64], reading_ns: f64) -> Option<Test> {
    let median_ns = median(audited.to_vec())?;
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
                n => format!("{n} launches (median)"),
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
        limit: bound_ns / (reading_ns + bound_ns),
        suspect,
        idle: false,
    })
}
