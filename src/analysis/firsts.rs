//! The audit's tests on regions of several launches (a batch, a graph), by their first
//! launches: a kernel that does all its work on a region's first launch only (after new
//! data, a pause or a stage) and skips on the rest changes the region's mean by a share N
//! times smaller, but its first launch by all of it.

use super::bounds::{
    against, against_baseline, idle_or_kernel, limit, margin_ns, share_where_timed, shortfall_ns,
    why, Baseline, Spread, Tell, Test, MIN_SAMPLES, Z_FALSE_ALARM,
};
use super::drift::{self, Drift};
use super::stats::Stats;
use crate::protocol::{rest_of_region, AuditsAmong, FirstLaunches, HOST_LAUNCH_NS};
use crate::statistics::{iqr, iqr_sigma, median};

/// The tests on the first launches of regions of several, pooled over the runs that read
/// them; `stage_allowance_ns`: what the L2 a stage leaves may cost an honest first launch
/// (None: no stage test).
pub(super) fn first_launches(
    among: &[&AuditsAmong],
    (single, drift): (bool, Option<Drift>),
    stage_allowance_ns: Option<f64>,
) -> Vec<Test> {
    let runs: Vec<_> = (among.iter())
        .filter_map(|m| m.firsts.as_ref().map(|f| (f, *m)))
        .collect();
    let firsts: Vec<_> = runs.iter().map(|(f, _)| *f).collect();
    // A first launch moves with the clock as its region does (`analysis::drift`); only
    // where each region kept its first launch (those not read are left out, and the rest
    // would no longer stand beside their own places).
    let pooled = |of: fn(&FirstLaunches) -> &Vec<f64>, kind: drift::Kind| -> Vec<f64> {
        (runs.iter())
            .flat_map(|(f, m)| match drift {
                Some(d) if kind.0(m).len() == of(f).len() => d.scaled(of(f), m, kind),
                _ => of(f).clone(),
            })
            .filter(|t| t.is_finite())
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
        sigma: iqr_sigma(widest(|f| f.timed_iqr)),
        tail: (widest(|f| f.timed_max) / median - 1.0).max(0.0),
        single,
        allowance_ns: 0.0,
    };
    let (audited, decoys, pauses) = (
        pooled(|f| &f.audited, drift::AUDITED),
        pooled(|f| &f.decoys, drift::DECOYS),
        pooled(|f| &f.pauses, drift::PAUSES),
    );
    let mut tests = Vec::new();
    if !audited.is_empty() && !decoys.is_empty() {
        let spread = timed
            .with_decoys(&decoys)
            .with_stage_noise(&decoys, &pauses, 1);
        let test = against(Tell::FirstData, &audited, &decoys, spread);
        let pauses_ns = crate::statistics::median(pauses.clone()).unwrap_or(median);
        tests.extend(test.map(|t| share_where_timed(t, (pauses_ns, median))));
    }
    let staged = [&audited[..], &decoys[..]].concat();
    if !pauses.is_empty() {
        let baseline = Baseline {
            median_ns: median,
            count: count as usize,
        };
        let after_a_wait = Spread {
            allowance_ns: AFTER_A_WAIT_NS.min(AFTER_A_WAIT_SHARE * median),
            ..timed
        };
        let test = against_baseline(Tell::FirstPause, &pauses, baseline, (after_a_wait, None));
        tests.extend(test.map(|t| idle_or_kernel(t, &staged)));
    }
    if let (Some(allowance_ns), false, false) =
        (stage_allowance_ns, decoys.is_empty(), pauses.is_empty())
    {
        // Where the reading holds the host's launch, a staged region's first launch may start
        // late by as much as a timed region's.
        let start = if single { 0.0 } else { HOST_LAUNCH_NS };
        let spread = Spread {
            allowance_ns: allowance_ns + start,
            ..timed.with_decoys(&decoys)
        };
        tests.extend(against(Tell::FirstStage, &staged, &pauses, spread));
    }
    tests
}

/// What a region's first launch after a pause (the GPU all but idle for its wait, about
/// 0.2 ms) may take beyond a timed region's, which follows the one before it, besides the
/// margin. On an H200 an honest 20 µs sum in a graph behind a wait kernel read two of its
/// three pauses' first launches 1.3 µs and 1.5 µs over its timed regions' (in two other runs
/// 0.1 µs and 0.2 µs), as its staged regions' first launches read 1.4 µs to 1.5 µs over in
/// all three; an honest layernorm's of 149 µs, 2.1 µs...
pub const AFTER_A_WAIT_NS: f64 = 2_000.0;
/// ...and at most this share of a timed region's first launch (the sum's 1.3 µs was 6.7% of
/// its 20.2 µs): a kernel of a few µs that does all its work only on a first launch after a
/// wait is seen by this test alone, and a fixed 2 µs would pass it skipping a third.
pub const AFTER_A_WAIT_SHARE: f64 = 0.075;

/// What a timed region's first launch may take beyond each launch after it, besides the
/// margin: the region's start, counted in its first launch. Measured on an H200, 2.1 to
/// 3.3 µs in a graph behind a wait kernel (the graph's launch and the event node after its
/// first launch); on an idle queue, the host's launch of the first
/// ([`crate::protocol::HOST_LAUNCH_NS`]).
pub const FIRST_START_NS: f64 = 5_000.0;

/// The timed regions' first launch against the launches after it: in a region of N whose
/// reading is R per launch and whose first launch took F, the rest took (N R - F) / (N - 1)
/// each. Suspect where F exceeds it by more than the region's start may take, the margin
/// and the noise of F's median.
pub(super) fn first_against_rest(
    among: &[&AuditsAmong],
    steady: &Stats,
    (per_region, host_in_reading): (u64, bool),
) -> Option<Test> {
    let firsts: Vec<_> = among.iter().filter_map(|m| m.firsts.as_ref()).collect();
    let count: u64 = firsts.iter().map(|f| f.timed_count).sum();
    let first = median(firsts.iter().map(|f| f.timed_median).collect())?;
    if (count as usize) < MIN_SAMPLES {
        return None;
    }
    if let Some(test) = by_kernel_records(among) {
        return Some(test);
    }
    let rest = rest_of_region(first, steady.median, per_region);
    let sigma = iqr_sigma(firsts.iter().map(|f| f.timed_iqr).fold(0.0, f64::max));
    let start = match host_in_reading {
        true => HOST_LAUNCH_NS,
        false => FIRST_START_NS,
    };
    Some(first_rest_test(
        (first, rest),
        (sigma, count as usize),
        start,
        steady.count as usize,
    ))
}

/// Where CUPTI read timed regions again for their first launches (`protocol::CUPTI_FIRSTS`):
/// each one's first launch's own span against its rest's, which leave out the host's
/// submission that a reading by events on an idle queue holds. What a region's start may
/// take is then the first launch's own (`FIRST_START_NS`).
fn by_kernel_records(among: &[&AuditsAmong]) -> Option<Test> {
    let read: Vec<_> = (among.iter())
        .filter_map(|m| m.by_cupti.as_ref())
        .filter(|k| !k.firsts_ns.is_empty())
        .collect();
    let firsts: Vec<f64> = read.iter().flat_map(|k| k.firsts_ns.clone()).collect();
    let rests: Vec<f64> = read.iter().flat_map(|k| k.rests_ns.clone()).collect();
    let (first, rest) = (median(firsts.clone())?, median(rests.clone())?);
    let sigma = iqr_sigma(iqr(&firsts).max(iqr(&rests)));
    let mut test = first_rest_test(
        (first, rest),
        (sigma, firsts.len()),
        FIRST_START_NS,
        rests.len(),
    );
    test.by_cupti = true;
    test.suspect = (test.suspect).map(|s| s.replacen("suspect: ", "suspect: by CUPTI, ", 1));
    Some(test)
}

/// The first launches (median `first`, spread `sigma`, `count` of them) against the rest
/// (`rest`, over `rest_count` regions): suspect beyond `start`, the margin and the noise.
fn first_rest_test(
    (first, rest): (f64, f64),
    (sigma, count): (f64, usize),
    start: f64,
    rest_count: usize,
) -> Test {
    let margin = margin_ns(rest);
    let noise = Z_FALSE_ALARM * sigma * (std::f64::consts::FRAC_PI_2 / count.max(1) as f64).sqrt();
    let bound_ns = start + margin + noise;
    let suspect = (first - rest > bound_ns).then(|| {
        format!(
            "suspect: the timed regions' first launches read {:.3} µs (median), the rest {:.3} µs each ({:.2}x), beyond the {:.3} µs a region's start, noise and margin allow: {}",
            first / 1e3,
            rest / 1e3,
            first / rest,
            bound_ns / 1e3,
            why(Tell::FirstRest),
        )
    });
    Test {
        tell: Tell::FirstRest,
        median_ns: first,
        baseline_ns: rest,
        bound_ns,
        single_bound_ns: bound_ns,
        regions: count,
        beyond: 0,
        limit: limit(bound_ns + shortfall_ns(sigma, count, rest_count), rest),
        suspect,
        idle: false,
        by_cupti: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph's record as an honest 20 µs sum's on an H200: 200 timed regions whose first
    /// launches read 20.16 µs, spread by 0.35 µs; its staged regions' first launches
    /// (2 audited, 3 decoys) and its pauses' as given.
    fn graph(staged: [f64; 5], pauses: &[f64]) -> AuditsAmong {
        AuditsAmong {
            firsts: Some(FirstLaunches {
                audited: staged[..2].to_vec(),
                decoys: staged[2..].to_vec(),
                pauses: pauses.to_vec(),
                timed_count: 200,
                timed_median: 20.16e3,
                timed_iqr: 0.35e3,
                timed_max: 22.02e3,
            }),
            ..AuditsAmong::default()
        }
    }

    fn first_pause(staged: [f64; 5], pauses: &[f64]) -> Test {
        let record = graph(staged, pauses);
        let tests = first_launches(&[&record], (true, None), None);
        (tests.into_iter().find(|t| t.tell == Tell::FirstPause)).expect("a pause test")
    }

    #[test]
    fn a_first_launch_after_a_wait_may_read_slower_but_not_by_skipped_work() {
        // Two of three pauses' first launches 1.3-1.5 µs over the timed regions', as its
        // staged regions' read: the GPU all but idle through the wait, not the kernel.
        let staged = [21.76e3, 22.40e3, 21.70e3, 21.60e3, 21.57e3];
        let honest = first_pause(staged, &[21.50e3, 20.19e3, 21.66e3]);
        assert_eq!(honest.suspect, None);
        // A kernel that skips a quarter of its work but on a first launch after a wait.
        let cheat = first_pause(staged.map(|t| t + 4e3), &[25.2e3, 25.4e3, 25.1e3]);
        let why = cheat.suspect.expect("caught");
        assert!(why.contains("a first launch after a wait allow"), "{why}");
        // Skipping a seventh but after a wait: 2.9 µs over, beyond a bound of 2.6 µs of which
        // 1.5 µs (7.5%) is the wait's; a fixed 2 µs would have made it 3.1 µs.
        let cheat = first_pause(staged.map(|t| t + 2.9e3), &[23.1e3, 23.0e3, 23.2e3]);
        assert!(cheat.suspect.is_some(), "{cheat:?}");
    }
}
