//! The audits table of `cells.md`: each cell's audited regions, decoys and pauses among its
//! timed ones, each test's medians and bound, the detection limit, and what the audits cost.

use super::format;
use crate::analysis::alone::{ALONE_SHARE, ALONE_START_NS};
use crate::analysis::audits::CellAudits;
use crate::analysis::bounds::{
    Tell, BAND_RATIO, BAND_SLACK_NS, FALSE_ALARM, MARGIN_NS, MARGIN_SHARE, MISSED, Z_FALSE_ALARM,
};
use crate::analysis::firsts::FIRST_START_NS;
use crate::analysis::gaps::GapTest;
use crate::analysis::tells::Judgement;
use crate::analysis::Analysis;
use crate::experiment::Unit;
use crate::plan::audit_rounds::{
    AUDIT_SHARE_CAP, FLOOR, PLANNED_SHARE, REGION_LAUNCHES_SHARE, SHORT_REGION_NS, SPOTS,
};
use crate::protocol::{ALONE_IF_SPLIT, HOST_LAUNCH_NS};
use crate::protocol::{
    CONFIRM_AUDITS, CONFIRM_PAUSES, CONFIRM_RATIO, CUPTI_FIRSTS, CUPTI_PAUSES, CUPTI_STAGED,
    CUPTI_TIMED_PER_PAUSE, SPLIT_PAUSES, STAGE_CONFIRMATIONS,
};
use serde::Serialize;

#[derive(Serialize)]
pub struct AuditsView {
    intro: String,
    rows: Vec<AuditRow>,
}

#[derive(Serialize)]
struct AuditRow {
    cell: String,
    audit: String,
    regions: String,
    data: String,
    pause: String,
    bound: String,
    detection_limit: String,
    cost_ms: String,
}

/// The table, where the run's cells were audited this way (None for a run from before).
pub fn build(a: &Analysis) -> Option<AuditsView> {
    let cells = &a.audits;
    if cells.is_empty() {
        return None;
    }
    let cost = a.audit_cost_share.map_or("–".into(), share);
    let spent: f64 = cells.iter().map(|c| c.cost_s).sum();
    let wall: f64 = cells.iter().map(|c| c.wall_s).sum();
    let (caught_pct, half_missed_pct) = ((1.0 - MISSED) * 100.0, MISSED * 50.0);
    let mut intro = format!(
        "Where it can, the audit sits among a run's timed samples: audited regions, decoys and pauses, a few of the samples together (at least one audited; counted below), at places drawn from a seed recorded in cells.jsonl, each the cell's own region after the same resets and flush, timed by the same timer. Before each, a stage on the GPU and a pause: the stage of an audited region draws data no launch has seen (its own seed), and the region is checked on it and its inputs read back; a decoy's stage draws the data the buffers held again; a pause's draws nothing, so it is a timed launch after the same pause, its cache as the timed launches'. Every stage waits on the GPU until the same time after it began. Audited regions are set against the decoys (a kernel that does all its work only on data it has not seen is slower in them), pauses against the timed launches (one that does all its work only after a pause is slower in them, and in the staged regions too, which follow the same pause: pauses beyond their bound with the staged regions within it are the GPU gone idle, not the kernel, but where CUPTI's kernel records read them again, where only stages that draw read by CUPTI too can say so), and the staged regions (audited and decoys) against the pauses (one that does all its work only after a stage is slower in them; in a hot cell beyond what the L2 a stage leaves dirty may cost). A group's lower median (of two, the smaller) is suspect when it exceeds its baseline by more than {:.2} standard errors of the difference (of the larger of the timed samples' spread and the decoys' own, never the audited regions'; false alarms {FALSE_ALARM} for that spread), and one region when it exceeds it by more than the normal quantile of {FALSE_ALARM} shared among the regions tested and than the farthest timed sample lay above theirs (only where so many lie beyond it that readings alike would, against N timed samples none of which does, with a chance of at most {FALSE_ALARM}, whatever their tail; not where a reading holds the host's launch time: events or a host timer on an idle queue; against decoys, which a stage leaves as it leaves the audited regions, only where the decoys lie beyond the same bound so much less often that readings alike would split so with a chance of at most {FALSE_ALARM}), each plus {:.0}% or {:.1} µs: the bounds (a group of one, where one region alone is evidence, by the larger). Without decoys (too few samples to spare them, or the weaker audit of one launch after the timed ones) the data bound is the band: {BAND_RATIO}x the reading + {:.0} µs, against the audited launches' lower median (a lone audited region read over {CONFIRM_RATIO}x the timed median by events or a host timer gets a second after the samples: a host held up between an event and the launch reads so once, a kernel that skips timed work both times; a decoy read so gets another later among the samples; pauses whose lower median reads over the timed median by more than the margin so get {CONFIRM_PAUSES} more; where the pauses are staged as the other regions are (flushed, or the outputs poisoned), staged regions whose lower median reads over the pauses' median by more than the margin get {CONFIRM_AUDITS} more audited regions and {CONFIRM_PAUSES} pauses, by CUPTI's records too, and again while they read so, {STAGE_CONFIRMATIONS} times at most; audited regions whose lower median reads over the decoys' median by more than the margin get {CONFIRM_AUDITS} more, by CUPTI's records too; where they still read so by events on an idle queue, {CUPTI_PAUSES} pauses follow with CUPTI collecting, each after {CUPTI_TIMED_PER_PAUSE} timed launches, and the pause test judges their kernel records where the cell's timer read those pauses as it read the samples' (within the margin and 2 µs) (a kernel that tells the launches after its samples apart could skip in all of them): a pause slows the host's launch, which such a reading holds, whatever the kernel does; where the records read the pauses slow too, {CUPTI_STAGED} stages that draw follow alike). Where a run's timed samples split in two behaviors, its slower launches widen their spread, and its pauses may lie with them by chance: where its pauses and staged regions both read over the timed median by more than the margin, {SPLIT_PAUSES} pauses follow so with CUPTI collecting, whatever the timer, and pauses that lie so high among the timed launches that readings alike would with a chance of at most {FALSE_ALARM} are suspect (by their ranks among the records, at each pause's reading, times the pauses, whether the records split or not; among the samples, all at or above a quantile). Where the reading leaves out the host's launch and the medians found the pauses within their bound, but the pauses' and the staged regions' lower medians both read over the timed median by more than the margin, each run's pauses, each less the margin, are ranked among that run's timed samples: suspect where readings alike lie so high with a chance of at most {FALSE_ALARM} (the one-sided Mann-Whitney test, stratified over the runs), which a kernel that spreads its timed launches wide cannot widen; where the medians found the audited regions within their bound but their lower median over the decoys' median by more than the margin, each audited region, less the margin, is ranked among the decoys on its own data (those after it, which draw its data again), the chance exact over those groups, whatever the timer (where the samples spread wide, the round runs more audited regions, decoys and pauses). The detection limit is the smallest share of its work a kernel could skip where it is timed, doing it all in audited regions or after pauses, and still be caught at least {caught_pct:.0}% of the time: the shift the larger test needs over its baseline (its bound plus what the two medians may fall short by, each {half_missed_pct:.1}% of the time for readings of the test's spread: a group's lower median as the order statistic it is, the baseline's by its standard error; the band's where too few timed samples give a spread), over the baseline plus that shift (for audited regions against decoys, what they must read over the pauses' median, over the timed median plus that, where that is more: a stage can slow a cache's hits in the decoys more than its misses in the audited regions). In a batch or graph of N launches on one data set, such a kernel may do all its work on a region's first launch only: where an event after it (or CUPTI) read the first launches, the tests and the limit are theirs; elsewhere the limit is N times a region's. A kernel that does all its work only after a pause does it on every batch's or graph's first launch, timed or not: there, in a hot region, the timed regions' first launch is set against the launches after it (in a flushed one it holds the first flush), which it may exceed by what a region's start costs ({:.0} µs in a graph or behind a wait kernel, {:.0} µs on an idle queue, where the host launches the first), the margin and its noise. The audits took {spent:.2} s of these cells' {wall:.2} s ({cost}).",
        Z_FALSE_ALARM,
        MARGIN_SHARE * 100.0,
        MARGIN_NS / 1e3,
        BAND_SLACK_NS / 1e3,
        FIRST_START_NS / 1e3,
        HOST_LAUNCH_NS / 1e3,
    );
    if cells
        .iter()
        .all(|c| c.wait_ns.is_none() && c.weaker.is_none())
    {
        intro = format!("This run's audits predate the draws on the GPU: its audited regions and decoys were staged by a copy, the timed data and one audit draw taking turns, with no pauses; its regions are judged as the method below judges them. {intro}");
    }
    let split = (cells.iter().filter_map(|c| c.split_s))
        .reduce(|a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2]]);
    if let Some([stages, regions, checks]) = split {
        let recorded: f64 = (cells.iter().filter(|c| c.split_s.is_some()))
            .map(|c| c.cost_s)
            .sum();
        let rest = (recorded - stages - regions - checks).max(0.0);
        // The weaker audit's cells, and runs from before, kept no region's host time.
        let of = match spent - recorded > 0.0005 {
            true => format!("Of the {recorded:.3} s of the audits among the timed launches"),
            false => "Of it".to_string(),
        };
        intro.push_str(&format!(
            " {of}, the regions' stages took {stages:.3} s (each its pause, and where it draws the held inputs read back and its draw), the regions themselves {regions:.3} s (each about a timed sample), the audited ones' checks {checks:.3} s, and the rest {rest:.3} s (the first draw, a shorter graph's capture, the launches before a region after the samples, a Python reference's answers asked ahead, launches alone where the timed ones split, CUPTI's readings again)."
        ));
    }
    if let Some(g) = &a.audit_gaps {
        intro.push(' ');
        intro.push_str(&gaps(g));
    }
    let late: u64 = cells.iter().map(|c| c.late).sum();
    if late > 0 {
        intro.push_str(&format!(
            " {late} stages outlasted their pause (their regions followed a longer gap)."
        ));
    }
    // The sentence below names the floor in words.
    const _: () = assert!(matches!(FLOOR, [3, 2, 3]));
    let capped: u64 = cells.iter().map(|c| c.capped).sum();
    if capped > 0 {
        let (cap, plan) = (AUDIT_SHARE_CAP * 100.0, PLANNED_SHARE * 100.0);
        intro.push_str(&format!(
            " {capped} regions of the schedule were left out, each where it would have taken the regions past the audit's share of their cell's time ({cap:.0}% of it so far; in the first round, {plan:.0}% of its projected time; never the first round's floor: three audited regions, two decoys and three pauses): counted beside the regions below."
        ));
    }
    let spots: u64 = cells.iter().map(|c| c.spots).sum();
    if spots > 0 {
        let timed = alone_timed(cells);
        intro.push_str(&format!(
            " A kernel that skips in some of its launches only, each drawn apart (or is wrong at random, as a race is), reads alike in every region, and only a check of a launch that skipped catches it; a batch's or graph's output is what any of its launches wrote. So where its regions are several launches and the timer is not CUPTI's (which would take one for a timed launch), {SPOTS} single launches follow each audited region on its draw, and where a run's timed samples split in two behaviors (as such a kernel's do), or the first launches of its timed regions of several launches do, {ALONE_IF_SPLIT} follow its samples on the last audited region's draw: each on poisoned outputs, checked as the region was, {spots} here. A kernel that skips in a share q of its launches passes a cell's S checks of single launches (these, the check before the samples and the audited regions') with a chance of (1 - q)^S: at most 5% where q is 26% or more with three audited regions of several launches (S = 10), or q is 22% or more where the timed launches split (S = 12 in a cell of single launches, 18 in one of several).{timed}"
        ));
    }
    let probes: u64 = cells.iter().map(|c| c.probes).sum();
    if probes > 0 {
        intro.push_str(&format!(
            " A kernel may tell data it has seen by a few of its inputs it samples, and keep a result or skip work there. So once a cell has run two audited regions on draws of their own for each (its runs in turn), an audited region is a probe (a third of them at most): its stage draws the data the buffers hold again, but for 64-128 groups of 16 bytes of each input, which it draws anew, and it is checked as any audited region: a kernel that kept or skipped fails wherever a changed input moves an output it did not compute again ({probes} probes here)."
        ));
    }
    let shorter = cells.iter().filter(|c| c.region_launches.is_some()).count();
    if shorter > 0 {
        let (share, least) = (REGION_LAUNCHES_SHARE * 100.0, SHORT_REGION_NS / 1e6);
        intro.push_str(&format!(
            " Where a timed region is many launches, the audit's regions hold fewer (in {shorter} cells here, counted below): as many as keep a run's first round within {share:.0}% of its timed launches and {least:.0} ms of the kernel each, a graph of them captured once. Each is set against the others and the timed regions per launch, as they are; a kernel that tells a short region apart by the launches before it in a streak (a timed region is longer) does its work in them and after pauses, and is slower there."
        ));
    }
    let again = cells.iter().filter(|c| c.firsts_read_again).count();
    if again > 0 {
        intro.push_str(&format!(
            " By events on an idle queue a region's first launch holds the host's submission, which grows with the region: where the first launches read over the rest by more than the host's launch, {CUPTI_FIRSTS} timed regions more are read with CUPTI collecting, and each one's first launch's own span is set against its rest's instead, with a region's start at {:.0} µs ({again} cells here).",
            FIRST_START_NS / 1e3
        ));
    }
    let rows = (cells.iter())
        .map(|c| row(&a.run.plan.cells[c.cell].id, c))
        .collect();
    Some(AuditsView { intro, rows })
}

/// The gap test, in words. D is the most the two distributions' shares below any one gap
/// differ by, so where the test tells them apart a kernel that works only above (or only
/// below) one gap sorts at most (1 + D) / 2 of these staged regions and pauses right, each
/// kind weighed alike: how much the shift gives a kernel that times its gaps.
fn gaps(g: &GapTest) -> String {
    let time = |ns: f64| format::time(ns, Unit::Auto);
    let usable = match g.p < GAPS_APART_P {
        true => format!(
            " Apart, but a kernel that works only above, or only below, one share of its cell's median gap tells a staged region from a pause at best {:.1}% of the time here (a coin: 50%).",
            50.0 * (1.0 + g.ks)
        ),
        false => String::new(),
    };
    format!(
        "On the GPU (CUPTI's records), {} regions whose stage drew followed a median gap of {} since the kernel's launch before, {} pauses {}: as distributions (each gap over its cell's median), Kolmogorov-Smirnov D = {:.3}, p = {:.2}.{usable} The timed launches followed {}.",
        g.staged,
        time(g.staged_median),
        g.pauses,
        time(g.pause_median),
        g.ks,
        g.p,
        time(g.timed_median)
    )
}

/// Below this p the gap test's two distributions are told apart.
const GAPS_APART_P: f64 = 0.05;

fn row(id: &str, c: &CellAudits) -> AuditRow {
    let j = c.judgement.as_ref();
    let verdict = match j {
        None => "checked, not timed".to_string(),
        Some(j) if j.suspect.is_some() => "⚠ suspect".to_string(),
        Some(j) => {
            let against: Vec<&str> = [
                (Tell::Data, "its decoys"),
                (Tell::Pause, "its pauses"),
                (Tell::Band, "the reading (band)"),
            ]
            .iter()
            .filter(|(t, _)| j.test(*t).is_some())
            .map(|(_, name)| *name)
            .collect();
            format!("against {}", against.join(" and "))
        }
    };
    let idle = j.is_some_and(|j| j.tests.iter().any(|t| t.idle));
    let by_cupti = j.is_some_and(|j| j.tests.iter().any(|t| t.by_cupti));
    let verdict = match (idle, by_cupti) {
        (true, true) => format!("{verdict} (pauses slow by CUPTI's kernel records, stages that drew not: the GPU gone idle, not the kernel)"),
        (true, false) => format!("{verdict} (pauses beyond their bound, staged regions not: the GPU gone idle, not the kernel)"),
        (false, true) => format!("{verdict} (pauses read again by CUPTI's kernel records)"),
        (false, false) => verdict,
    };
    let audit = match (&c.weaker, &c.unjudged) {
        (Some(why), None) => format!("one launch after the timed ones ({why}): {verdict}"),
        (Some(why), Some(not)) => {
            format!("one launch after the timed ones ({why}): {verdict} ({not})")
        }
        (None, Some(why)) => format!("among the timed: {verdict} ({why})"),
        (None, None) => format!("among the timed: {verdict}"),
    };
    let time = |ns: f64| format::time(ns, Unit::Auto);
    let pair = |tells: &[Tell]| -> String {
        let found = j.and_then(|j| tells.iter().find_map(|&t| j.test(t)));
        found.map_or("–".into(), |t| {
            let note = match t.tell {
                Tell::FirstData | Tell::FirstPause => " (first launches)",
                Tell::FirstRest if t.by_cupti => {
                    " (a region's first launch / the rest, CUPTI's kernel records)"
                }
                Tell::FirstRest => " (a region's first launch / the rest)",
                _ if t.by_cupti => " (CUPTI's kernel records)",
                _ => "",
            };
            format!("{} / {}{note}", time(t.median_ns), time(t.baseline_ns))
        })
    };
    AuditRow {
        cell: id.to_string(),
        audit,
        regions: {
            let counted = format!("{} + {} + {}", c.regions, c.decoys, c.pauses);
            let left_out = match c.capped {
                0 => String::new(),
                n => format!(" ({n} left out)"),
            };
            let each = match c.region_launches {
                Some(m) => format!(", {m} launches each"),
                None => String::new(),
            };
            format!("{counted}{left_out}{each}")
        },
        data: pair(&[Tell::FirstData, Tell::Data, Tell::Band]),
        pause: pair(&[Tell::FirstRest, Tell::FirstPause, Tell::Pause]),
        bound: j.map_or("–".into(), bounds),
        detection_limit: j.map_or("–".into(), |j| share(j.detection_limit)),
        cost_ms: format!("{:.1}", c.cost_s * 1e3),
    }
}

/// How the launches alone are timed and judged, where they were (not in runs from before),
/// and their limits over the cells they judged: the smallest share of a launch's work a
/// kernel could share out to a region's other launches and still be caught.
fn alone_timed(cells: &[CellAudits]) -> String {
    let read: u64 = cells.iter().map(|c| c.alone_read).sum();
    if read == 0 {
        return String::new();
    }
    let (start, share) = (ALONE_START_NS / 1e3, ALONE_SHARE * 100.0);
    format!(
        " Each is read by events behind a wait kernel, less their reading of an empty kernel ({read} read so here), and where regions are several launches their median is set against a timed region's launches after its first (its mean launch where its first launches were not read), beyond {start:.0} µs and {share:.0}% of it, the margin and the noise: a kernel that shares a region's work out among its launches (each an N-th of it, so that its output is whole after the last) must do it all alone, and reads up to N times slower there, as one that does all its work on a region's first launch only does.{}",
        alone_limits(cells)
    )
}

/// The launches alone's limits over the cells they judged, in words.
fn alone_limits(cells: &[CellAudits]) -> String {
    let mut limits: Vec<f64> = (cells.iter())
        .filter_map(|c| c.judgement.as_ref()?.test(Tell::Alone))
        .map(|t| t.limit)
        .filter(|l| l.is_finite())
        .collect();
    limits.sort_by(f64::total_cmp);
    match (limits.first(), limits.last(), crate::statistics::median(limits.clone())) {
        (Some(lo), Some(hi), Some(mid)) => format!(
            " The smallest share of its launch's work such a kernel could share out and still be caught: {} to {} in these {} cells (median {}).",
            share(*lo),
            share(*hi),
            limits.len(),
            share(mid)
        ),
        _ => String::new(),
    }
}

/// Each test's bound on the median, in the table's order.
fn bounds(j: &Judgement) -> String {
    let time = |ns: f64| format::time(ns, Unit::Auto);
    (j.tests.iter())
        .filter(|t| !matches!(t.tell, Tell::Stage | Tell::Data | Tell::Pause) || !firsts(j))
        .filter(|t| !matches!(t.tell, Tell::Stage | Tell::FirstStage))
        .map(|t| time(t.bound_ns))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether the cell's regions of several launches were judged by their first launches.
fn firsts(j: &Judgement) -> bool {
    j.test(Tell::FirstData)
        .or(j.test(Tell::FirstPause))
        .is_some()
}

/// A share as a percentage with one decimal.
fn share(s: f64) -> String {
    format!("{:.1}%", s * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(ks: f64, p: f64) -> GapTest {
        GapTest {
            staged: 40,
            pauses: 30,
            staged_median: 60_000.0,
            pause_median: 61_000.0,
            timed_median: 12_000.0,
            ks,
            p,
        }
    }

    #[test]
    fn the_gap_test_says_how_well_one_threshold_sorts_only_where_it_tells_the_kinds_apart() {
        let apart = gaps(&test(0.16, 0.004));
        assert!(apart.contains("at best 58.0% of the time"), "{apart}");
        let alike = gaps(&test(0.30, 0.2));
        assert!(alike.contains("D = 0.300, p = 0.20."), "{alike}");
        assert!(!alike.contains("at best"), "{alike}");
    }
}
