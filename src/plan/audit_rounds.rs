//! How many regions of each kind the audit's first round holds (a cell's runs together, and
//! each run's), and what share of a cell's time its regions may take: the worker's schedule
//! (`method::audit`) draws its places from these, and the plan's model counts their cost. A
//! cell whose regions' times are not judged runs its audited regions alone ([`kinds_run`]).

use super::Cell;
use crate::experiment::knobs::timer::TimerKind;
use crate::experiment::{ArgValue, Memory};

/// A short cell holds no more regions than this share of its samples (their cost: a
/// region takes about a sample's time and its stage), and at least one audited region; nor
/// do its regions, checks included, take more than this share of its time, but for the
/// first round's floor ([`FLOOR`]), which is never left out (the findings name the cells
/// it took past the share).
pub const AUDIT_SHARE_CAP: f64 = 0.05;
use AUDIT_SHARE_CAP as SHARE_CAP;

/// The first round's regions beyond its floor run where the regions so far, this one and
/// the floor still to come, each counted at what those of its kind cost, stay within this
/// share of the cell's projected time (its time so far and its samples left at their pace;
/// a cell that may stop early, the fewest samples its stop rule or budget may still take):
/// below [`AUDIT_SHARE_CAP`], which leaves room for the projection's error and for
/// confirmations. A round of ten regions is 5% of a 200-sample cell's launches before its
/// stages, waits and checks: the cells of a few tens of ms spent 5-10% on them
/// (`reports/trust` at 4f24f4a).
pub const PLANNED_SHARE: f64 = 0.04;

/// Every region's stage lasts, once the GPU reaches it, this many times what a draw of all
/// the kernel's inputs took (and a read-back of the held data, which a stage that draws
/// verifies in the same pass), and [`STAGE_SLACK_NS`]: no region starts before its draw ends,
/// and every region waits alike, so that no kernel tells a staged region from a pause. Half
/// as much again as the draw left no stage late among the trust corpora's 4,479 regions at
/// 739f954, and was most of a region's cost where the draw is as long as the kernel; a
/// quarter more left 34 of the trust suites' 12,692 late at 8847ebc (the GPU's own time
/// from reaching a stage to its end over the pause), their gaps alike as distributions.
pub const STAGE_PER_DRAW: f64 = 1.25;
/// See [`STAGE_PER_DRAW`]: with 10 µs, when the pause counted from the host's enqueue, 3% of
/// a run's stages outlasted it.
pub const STAGE_SLACK_NS: u64 = 20_000;

/// Single launches checked on each audited region's draw where a region is several launches
/// (a batch, a graph), each on poisoned outputs: the region's output is what any of its
/// launches wrote. A kernel that skips in a share q of its launches, each drawn apart,
/// passes a cell's `S` checks of single launches (these, and the check before the samples)
/// with a chance of (1 - q)^S: with three audited regions (ten checks), at most 5% where q
/// is 26% or more. Each costs a launch and a compare with the outputs the reference kernel
/// of its region's check left (a check of another kind runs again).
pub const SPOTS: u64 = 3;

/// The first round's floor, of each kind (audited, decoys, pauses). Never left out:
/// without a decoy a kernel that tells new data apart is judged by the band alone (one
/// skipping half its rows passed so, 61% fast, on an H200); of two audited regions the lower
/// median stands against one a stage left slow (one of an honest matmul's, alone, read 14%
/// over its decoys, and CUPTI's readings come too late to confirm it); of three pauses the
/// median stands against a kernel that does its work after one of them only (a LayerNorm
/// that reads its launch period did so after one of an interleaved cell's two pauses and
/// passed, on an H200, at 22d4933 as before f645e4d); the third audited region is a probe
/// (see [`PRIORITY`]), which a batch's, a graph's or a short kernel's cell left out for its
/// cost at 22dfbac, and a kernel that tells data by a sample of its inputs passed there. Of
/// two decoys the median stands against one a stage left fast: an honest LayerNorm hot by
/// CUPTI on an H200 (3.97 µs timed; `python-reference` at 4fcce43) read its audited regions
/// 4.26-4.61 µs after their stages and its one decoy 3.90 µs, and was suspect by the data
/// test; its other runs' two decoys read 4.29 and 4.42 µs. A decoy costs a stage and a
/// region, no check.
pub const FLOOR: [usize; 3] = [3, 2, 3];

/// What a region among the timed ones is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    Audit,
    Decoy,
    Pause,
}

/// Why the audit's times are not set against the cell's reading, where they are not.
/// Managed pages go where the last writer was: the audit's draw on the GPU or refill from
/// the host leaves them where the timed launches (refilled by the host, or resident) may
/// not have found them; a host timer around an async launch reads only its enqueue.
pub fn unjudged(cell: &Cell) -> Option<String> {
    let migrates = (cell.launch.args.iter()).any(
        |a| matches!(a, ArgValue::Buffer { memory: Memory::Managed, init, .. } if !init.is_written()),
    );
    match (migrates, cell.knobs.timer) {
        (true, _) => Some("its managed inputs lie where the audit's draw left them, not where the timed launches found them".to_string()),
        (false, TimerKind::Host) => Some("a host timer reads only the enqueue".to_string()),
        _ => None,
    }
}

/// Of `[audited, decoys, pauses]` regions, those a cell runs: all where its regions' times
/// are set against each other, else its audited ones alone (see [`unjudged`]), which check
/// its launches on new data. Decoys and pauses serve only that comparison: on an H200 at
/// 6e66b8c they, and the regions that confirm them, took 24-38% of the runs that held them in
/// a host timer's `launch-gap` cells (16.61 ms and 8.39 ms; 0.88 ms and 0.64 ms at cf479d2).
pub fn kinds_run(judged: bool, [audited, decoys, pauses]: [usize; 3]) -> [usize; 3] {
    match judged {
        true => [audited, decoys, pauses],
        false => [audited, 0, 0],
    }
}

/// Samples of the first round (and of the second; later ones double).
pub const ROUND: usize = 200;
/// A round's regions, in the order a cell too short for all of them gets them: an audited
/// region checks its launches, a pause then judges them against the timed ones, a decoy
/// against the audited ones; two of each give each kind's median and spread, and three more
/// pauses a median a kernel cannot move by doing all its work after one of two (a LayerNorm
/// that reads its launch period did all its work after one of an interleaved cell's two
/// pauses, skipping after the other, and passed on an H200). The third audited region is a
/// probe (`worker::audit::among::seeds`), after the pauses of the floor: a run of two audited
/// regions held none, and a kernel that tells data it has seen by a sample of its inputs,
/// behind a smear too narrow to add regions, passed so in a graph (`trust-adversary-4`'s
/// `region-smear/skip=10/graph` at 03a35f5, on an H200).
const PRIORITY: [Region; 10] = [
    Region::Audit,
    Region::Pause,
    Region::Decoy,
    Region::Audit,
    Region::Decoy,
    Region::Pause,
    Region::Pause,
    Region::Audit,
    Region::Pause,
    Region::Pause,
];

/// Regions a run affords of its own before it holds an audited region whatever the other
/// runs hold: an audited region, a decoy and a pause.
const OWN_SET: usize = 3;

/// Whether a run of `samples` steady samples affords an audited region, a decoy and a pause
/// of its own, and so holds an audited region whatever the other runs hold.
fn each_its_own(samples: usize) -> bool {
    samples.min(ROUND) as f64 * SHARE_CAP >= OWN_SET as f64
}

/// Regions `samples` samples afford: [`SHARE_CAP`] of them, at least one, at most a round's.
pub fn affordable(samples: usize) -> usize {
    ((samples as f64 * SHARE_CAP).floor() as usize).clamp(1, PRIORITY.len())
}

/// The fewest steady samples whose first round holds a decoy beside its audited region: a
/// run of fewer is judged by the band alone.
pub fn samples_for_a_decoy() -> usize {
    (1..=ROUND)
        .find(|&n| first_round(n, 1, 0)[Region::Decoy as usize] > 0)
        .unwrap_or(ROUND)
}

/// Of the first round of the run ranked `rank` of a cell's `runs` (see [`first_round`]),
/// its floor: what it holds of [`FLOOR`]. A run of a cell of several holds no more than
/// [`FLOOR`] (half a round's regions, rounded up), so its floor is its whole first round: dealt
/// over the cell instead, an interleaved cell kept three pauses in all, and a LayerNorm that
/// reads its launch period did its work after none of them and passed (on an H200, 889d612).
pub fn run_floor(samples: usize, runs: usize, rank: usize) -> [usize; 3] {
    let round = first_round(samples, runs, rank);
    [0, 1, 2].map(|k| round[k].min(FLOOR[k]))
}

/// The audited regions of the first round that the runs ranked below `rank` of a cell's
/// `runs` hold (see [`first_round`]): a run's probes follow the cell's audited regions in
/// rank order, so that a cell whose runs hold one each holds a probe too.
pub fn audited_before(samples: usize, runs: usize, rank: usize) -> usize {
    (0..rank).map(|r| first_round(samples, runs, r)[0]).sum()
}

/// Counts of (audited, decoys, pauses) among the first `n` of [`PRIORITY`].
pub fn counts(n: usize) -> [usize; 3] {
    let mut c = [0; 3];
    for r in &PRIORITY[..n.min(PRIORITY.len())] {
        c[*r as usize] += 1;
    }
    c
}

/// The regions of each kind (audited, decoys, pauses) in the first round of the run ranked
/// `rank` of a cell's `runs` (rank 0: the run the cell's seed draws), each of `samples`
/// steady samples. Over the runs (which the analysis pools) they are what the first round's
/// samples afford, shared among the first ranks, each holding an audited region. A run
/// whose samples afford an audited region, a decoy and a pause of its own (60) holds an
/// audited region, which checks that run's launches; shorter runs (interleaved rounds, a few samples a process) share the
/// cell's, so that its audits stay within [`SHARE_CAP`] of its time: a kernel that skipped
/// work only in the runs without one would move the pooled median only by cheating in most
/// runs, and cannot tell which those are. Never two side by side, nor before the first
/// sample.
pub fn first_round(samples: usize, runs: usize, rank: usize) -> [usize; 3] {
    let span = samples.min(ROUND);
    let room = span.saturating_sub(1) / 2;
    if room == 0 {
        return [0; 3];
    }
    let runs = runs.max(1);
    let [audits, decoys, pauses] = counts(affordable(span * runs));
    let shared = runs > 1 && !each_its_own(samples);
    let audits = match shared {
        true => audits,
        false => audits.max(runs),
    };
    // The first ranks hold the audited regions, and the decoys and pauses go to those runs;
    // the others draw their own data and hold none (`worker::audit::audits`).
    let holders = audits.min(runs);
    if rank >= holders {
        return [0; 3];
    }
    let this_run = |total: usize| total / holders + usize::from(rank < total % holders);
    // Where the room is short, in PRIORITY's order: an audited region, a pause, then decoys.
    let audits = this_run(audits).min(room);
    let first_pause = this_run(pauses).min(1).min(room - audits);
    let decoys = this_run(decoys).min(room - audits - first_pause);
    // A run that shares the cell's round and holds a decoy holds the floor's pauses: its
    // pauses are judged against its own samples (CUPTI reads them again where they split), and
    // of two the lower median is the faster, which one pause a kernel skipped after decides
    // (`cache-dither` by interleaved rounds passed so at 22dfbac, on an H200).
    let own_floor = match shared && decoys > 0 {
        true => FLOOR[2],
        false => 0,
    };
    let pauses = this_run(pauses).max(own_floor).min(room - audits - decoys);
    [audits, decoys, pauses]
}

/// Where a timed region is many launches (a batch, a graph), the audit's regions hold fewer,
/// so that they cost a share of the samples that does not grow with the region: as many as
/// keep a run's first round within this share of its timed launches. A region of 10,000
/// launches among 5 samples was 14% of its cell on an H200 (`small-kernels` at 50ddd52).
pub const REGION_LAUNCHES_SHARE: f64 = 0.01;
/// A shorter region still holds this much of the kernel's time: its start (a host's launch
/// on an idle queue, up to `protocol::HOST_LAUNCH_NS`; 2-3 µs in `small-kernels`' batches
/// and graphs at 50ddd52) then adds at most about 1% to each launch's reading, within the
/// margin its tests allow (`protocol::MARGIN_SHARE`).
pub const SHORT_REGION_NS: f64 = 2e6;
/// What capturing a graph costs per launch it holds (`small-kernels`' graphs of 10,000 took
/// 27-54 ms to set up on an H200, their first-launch node included): a shorter region of a
/// graph is a graph of its own, captured at the first region.
pub const GRAPH_CAPTURE_NS_PER_LAUNCH: f64 = 3_000.0;

/// Launches in each of the audit's regions where a timed region holds `n` (each about
/// `launch_ns`, as the timer read the samples so far), for a run whose first round holds
/// `regions` among `samples` samples: the fewest of [`REGION_LAUNCHES_SHARE`] and
/// [`SHORT_REGION_NS`] allow (two at least), and `n` itself where that is over half of them, or where
/// capturing a graph of them (`graphs` graphs a region replays, 0 for a batch) would cost
/// more than half of what the shorter regions save.
pub fn region_launches(
    n: u64,
    (samples, regions): (usize, usize),
    launch_ns: f64,
    graphs: u64,
) -> u64 {
    if n < 2 || regions == 0 || launch_ns.is_nan() || launch_ns <= 0.0 {
        return n;
    }
    let by_share = REGION_LAUNCHES_SHARE * samples as f64 * n as f64 / regions as f64;
    let by_time = SHORT_REGION_NS / launch_ns;
    // Two at least: a region's first launch is read apart from the rest.
    let m = by_share.max(by_time).ceil().max(2.0);
    let saved = regions as f64 * (n as f64 - m) * launch_ns;
    let capture = m * graphs as f64 * GRAPH_CAPTURE_NS_PER_LAUNCH;
    match 2.0 * m <= n as f64 && saved > 2.0 * capture {
        true => m as u64,
        false => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_batch_among_few_samples_is_audited_in_shorter_regions() {
        // `small-kernels`: 10,000 launches of 3.2 µs, five samples, one region: 1% of the
        // samples' launches is 500, 2 ms of the kernel 625.
        assert_eq!(region_launches(10_000, (5, 1), 3_200.0, 0), 625);
        // Of 70 µs, the share's 500 hold 35 ms.
        assert_eq!(region_launches(10_000, (5, 1), 70_000.0, 0), 500);
        // A first round of ten regions in 200 samples: a fifth of the launches.
        assert_eq!(region_launches(10_000, (200, 10), 70_000.0, 0), 2_000);
    }

    #[test]
    fn a_region_keeps_its_launches_where_fewer_would_hold_too_little_or_save_too_little() {
        // Ten launches of 5 µs: 2 ms would be 400 of them.
        assert_eq!(region_launches(10, (200, 10), 5_000.0, 0), 10);
        // Over half of the region.
        assert_eq!(region_launches(1_000, (200, 10), 3_000.0, 0), 1_000);
        // A graph of 10,000 launches of 1.1 µs, one region: 1,819 launches would save 9 ms
        // and cost 5.5 ms to capture.
        assert_eq!(region_launches(10_000, (5, 1), 1_100.0, 1), 10_000);
        // A graph of 100 launches of 167 µs: 12 of them, captured in 36 µs.
        assert_eq!(region_launches(100, (20, 5), 167_000.0, 1), 12);
        // Ten launches of 10 ms among five samples: two, not one (a first launch and the
        // rest).
        assert_eq!(region_launches(10, (5, 1), 10e6, 0), 2);
        // No reading yet (CUPTI's come later), a single launch, no regions.
        assert_eq!(region_launches(10_000, (5, 1), f64::NAN, 0), 10_000);
        assert_eq!(region_launches(1, (200, 10), 1e6, 0), 1);
        assert_eq!(region_launches(10_000, (5, 0), 3_200.0, 0), 10_000);
    }
}
