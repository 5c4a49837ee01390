//! When the worker runs regions after a run's samples to confirm what its regions read, and
//! what share of a cell's time its regions may take: the worker acts on these, the analysis
//! and the report say them.

pub use crate::plan::audit_rounds::AUDIT_SHARE_CAP;
use serde::{Deserialize, Serialize};

/// Without decoys, a lone audited region is judged by a band about the timed launches
/// (the analysis's: twice the reading and 5 µs), and an event or host reading on an
/// idle queue holds the host's launch: a host thread held up between an event and the
/// launch reads 20-30 µs for a 7 µs kernel (0.8% of small kernels' event samples on an
/// H200). So a lone audited region read over this many times the timed median (below the
/// band, so every reading the band would judge) gets a second one after the samples, and
/// the band judges the lower of the two: a kernel that skips work on timed data is slow in
/// both, a held-up host in one.
pub const CONFIRM_RATIO: f64 = 1.5;

/// Beyond the noise, a median (or a region) the audit tests must exceed its baseline by
/// this share of it...
pub const MARGIN_SHARE: f64 = 0.02;
/// ...and by this much: the spread of two event readings of one kernel.
pub const MARGIN_NS: f64 = 500.0;

/// The margin over a baseline of `baseline_ns`: the larger of the two. No test's bound is
/// smaller, so no reading within it above its baseline is suspect.
pub fn margin_ns(baseline_ns: f64) -> f64 {
    (MARGIN_SHARE * baseline_ns).max(MARGIN_NS)
}

/// Of an honest cell, how often each of the audit's tests may find it suspect by chance...
pub const FALSE_ALARM: f64 = 1e-3;
/// ...and the normal's upper quantile of it: a test's bound in standard errors, and what a
/// decoy's first launch may read over the timed ones' (`method::confirm::first_spoiled`).
pub const Z_FALSE_ALARM: f64 = 3.090;

/// A half of the samples this much tighter than their interquartile range is one behavior
/// of two: a normal's shortest half is its interquartile range.
const TIGHTER: f64 = 4.0;

/// Whether samples (their `median`, interquartile range, shortest half and the upper
/// quartile of the steps between successive ones) split in two: a quarter or more of the
/// successive samples change by half the range (two behaviors interleaved, not a stretch of
/// one, as a power cap makes), the shortest half [`TIGHTER`] times tighter than the range,
/// and the range over the margin the audit's tests allow (two speeds apart by more than
/// noise). A kernel that does all its work in some launches only, at random, reads so; so
/// does an honest one of two speeds.
pub fn splits_in_two(median: f64, iqr: f64, shortest_half: f64, step_p75: f64) -> bool {
    let interleaved = step_p75 >= iqr / 2.0;
    let tight = TIGHTER * shortest_half < iqr;
    interleaved && tight && iqr > margin_ns(median)
}

/// Whether timed samples, `in_order` as they were taken, split in two ([`splits_in_two`]).
pub fn samples_split(in_order: &[f64]) -> bool {
    let mut sorted: Vec<f64> = in_order.iter().copied().filter(|t| t.is_finite()).collect();
    if sorted.len() < 8 {
        return false;
    }
    sorted.sort_unstable_by(f64::total_cmp);
    let q = |p: f64| crate::statistics::nearest_rank(&sorted, p);
    let steps = crate::statistics::step_quartile(in_order);
    splits_in_two(
        q(0.5),
        crate::statistics::iqr(&sorted),
        crate::statistics::shortest_half(&sorted),
        steps,
    )
}

/// Where a run's timed samples split in two ([`samples_split`]), this many single launches
/// follow its samples, each on the last audited region's draw and on poisoned outputs, each
/// checked (`worker::audit::among`): a kernel that skips work in a share q of its launches,
/// each drawn apart, reads alike in every region and splits its samples, and passes S checks
/// of single launches with a chance of (1 - q)^S. A hot cell had three (the check before the
/// samples and two audited regions'; four since its floor holds three): 42% at q = 25%, and
/// one of six such cells at 50% passed 26% faster on an H200 (`reports/trust-random`). With
/// these, S = 11 (12 now): 4.2% and 0.05%. A
/// batch's or a graph's sample is its launches' mean, one behavior however they differ, so
/// there the first launches of its timed regions are tested too: a graph of 20 launches
/// that skip in a quarter of them passed its S = 7 checks and read 2.5% faster (S = 15:
/// 1.3%; S = 10 and 18 since the floor holds three audited regions).
pub const ALONE_IF_SPLIT: u64 = 8;

/// A run's pauses may catch the GPU at slow moments. So where their lower median reads over
/// the timed median by more than the margin (by events or a host timer, which read each as
/// it runs; within it no test could call them suspect), this many more come after the
/// samples and the test takes the lower median of all: a slow moment is outvoted, a kernel
/// that does its work only after a pause does it after every one. A kernel slower after
/// every gap of tens of µs stays slow after these too (docs/methodology.md).
pub const CONFIRM_PAUSES: usize = 4;
/// A run's audited regions may land on a slow stretch of the GPU and its decoys outside it:
/// on two H200s a row softmax's graphs of 134M elements read 276 µs, then up to 366 µs for
/// 40 samples of 200 while a power cap held the SM clock down, and both audited regions of
/// an honest run fell in those 40. So where their lower median reads over the decoys' median
/// by more than the margin (by events or a host timer, which read each as it runs), this
/// many more audited regions follow the samples and the test takes the lower median of all
/// against the same decoys: a slow stretch is outvoted, and a kernel that skips work on
/// data it has seen before is slow in every audited region, whose output is checked. No
/// decoy is added after the samples: regions back to back there can be told apart, and a
/// kernel that ran its work on a later decoy could raise the decoys it is judged against.
pub const CONFIRM_AUDITS: usize = 3;
/// Where a run's staged regions still read slow against its pauses staged alike after
/// their confirmation (`method::confirm::staged_need_confirming`), it is asked again, up to
/// this many confirmations in all. Simulated as that argmax (three staged regions and three
/// pauses, each 0.9 µs slower a fifth of the time), an honest run read its staged regions
/// slow by more than the margin, which the stage test's bound exceeds, 9.4% of the time at
/// first and 0.04% after five (`method::confirm`'s tests); a kernel that works after a stage
/// is slow in every one.
pub const STAGE_CONFIRMATIONS: usize = 5;
/// A decoy read over [`CONFIRM_RATIO`] times the timed median so far by events or a host
/// timer gets another later among the samples (`worker::audit::among`), at most this many
/// in a run: one held-up host launch had hidden a result cache (`benches/decoy-hiccup`),
/// and a kernel that slowed every decoy on purpose would only buy itself more regions.
pub const DECOYS_AGAIN: usize = 3;
/// Where a run's timed samples, at [`FIRST_LOOK`] of them or any doubling of it (until one
/// is wide), spread wider than [`WIDE_SPREAD`] of their median and [`SPREAD_FLOOR_NS`],
/// [`SPREAD_AGAIN`] more audited regions and as many decoys follow later in the round, as
/// many as it has room for (`method::audit::Schedule::widen`), and none of the round's
/// regions is left out for its cost since: the added ones would otherwise crowd out its
/// pauses. Only in single launches timed by events, which read each sample as it runs, or by
/// CUPTI, whose records of the samples so far it delivers between two samples at these counts
/// (regions added after the loop could be told apart). Looked at again as the samples double:
/// a kernel narrow in its first samples and spread after them would pass a single look.
pub fn spread_look(taken: usize) -> bool {
    taken.is_multiple_of(FIRST_LOOK) && (taken / FIRST_LOOK).is_power_of_two()
}
/// ...the first look, then at 60, 120, 240 and on: a run of fewer samples gets no added
/// regions.
pub const FIRST_LOOK: usize = 30;
/// The timed samples' interquartile range over their median past which two audited regions
/// and two decoys could not tell a quarter of a kernel's work skipped: the data test takes
/// its spread from the timed samples (and the decoys), which a kernel can widen on purpose.
/// A result cache on an H200 whose hits skipped a share of its rows drawn anew each launch
/// (15-35%) did all its work in its audited regions and was trusted 10.9% faster than the
/// honest GEMV, its limit 37% (`reports/trust-counted`). At two of each the data test's
/// limit passes a quarter where the samples' sigma is about 3.9% of their median (an
/// interquartile range of 5.2%).
pub const WIDE_SPREAD: f64 = 0.05;
/// ...and past this, which the host's launch spreads an honest kernel's readings by: by
/// events on an idle queue on an H200, interquartile ranges of up to 1.9 µs in the trust
/// suites' honest cells (a 24 µs scan; 0.8-1.4 µs for 6-24 µs kernels)...
pub const SPREAD_FLOOR_NS: f64 = 3_000.0;
/// ...or this, where the readings leave the host's launch out (CUPTI's, or events behind a
/// saturated queue): the honest single launches under 60 µs of the committed runs and the
/// trust suites at dcfce06 on H200s spread by at most 1.55 µs (a two-kernel sum of 8.8 µs,
/// 18% of it, which pays for the regions), the rest by 1.1 µs at most where that was over a
/// twentieth of their median; the second adversary's caches on an 18.5 µs scan at skip=10
/// spread by 1.1-3.0 µs, under the events' floor.
pub const SPREAD_FLOOR_KERNEL_NS: f64 = 1_000.0;

/// Whether timed samples of interquartile range `iqr` about `median` spread wider than
/// [`WIDE_SPREAD`] of it and the floor of readings that hold the host's launch
/// (`host_in_reading`: [`SPREAD_FLOOR_NS`]) or leave it out ([`SPREAD_FLOOR_KERNEL_NS`]): the
/// worker's more regions and the analysis's wide-limits finding ask the same.
pub fn spreads_wide(iqr: f64, median: f64, host_in_reading: bool) -> bool {
    let floor = match host_in_reading {
        true => SPREAD_FLOOR_NS,
        false => SPREAD_FLOOR_KERNEL_NS,
    };
    iqr > WIDE_SPREAD * median && iqr > floor
}
/// Under CUPTI, whose records of the samples so far the worker reads only by flushing them
/// (about 0.3-0.5 ms a look on an H200), a look reads them only where the host's time around
/// each sample (its launch, the kernel, the synchronize) spreads wider than this: a kernel's
/// spread shows there too. Calibrated on the time between consecutive samples' starts,
/// which holds that time and the loop's own: in CUPTI's single-launch cells of the trust
/// suites and both adversaries on an H200, the 36 cheats' cells whose first 30 records spread
/// over [`WIDE_SPREAD`] and [`SPREAD_FLOOR_NS`] spread it by 3.4 µs or more; 69 of 122
/// honest cells by less than 2 µs.
pub const HOST_SPREAD_NS: f64 = 2_000.0;
/// ...this many of each: six audited regions and six decoys cut the noise terms of the data
/// test's bound by about 40% against two of each (on an H200 the spread cache's limit by
/// events went from 37.5% to 26.9%). A kernel whose own spread is that wide pays for them; an
/// honest kernel read that noisily pays for its noise.
pub const SPREAD_AGAIN: usize = 4;
/// ...and this many more pauses: the pause test's bound is the timed samples' spread over
/// the pauses' count, and a kernel that spreads its timed launches wide on purpose and does
/// all its work after a pause keeps it wide. `quantile-smear` of the third adversary
/// (`experiments/trust-adversary-3.toml`), which skips 0-58% of a row argmax a launch, passed
/// 35.1% faster than the honest argmax on an H200 within a pause test's 51.9% limit, its
/// pauses at all their work 5.25 µs over a timed median of 10.59 µs, against a bound of
/// 6.58 µs from six pauses. Twenty-four cut the pauses' share of that bound's noise term from
/// sqrt(1/6) to sqrt(1/24), which puts the bound at 3.6 µs (23 now: a round holds five). A
/// pause costs a sample and its stage's wait, and no honest cell of the committed experiments
/// spread wide.
pub const SPREAD_PAUSES: usize = 18;
/// ...and this many more decoys: the data test's ranks set each audited region against its
/// run's decoys (`analysis::tells::audited_ranked_high`), which a kernel that skips a share
/// drawn anew each launch but none on new data spreads as wide as its timed launches. Six
/// audited regions over all of six decoys reach a chance of 2.5e-3 at most; over eighteen,
/// 1.8e-4. A decoy costs a sample and its stage's wait, and no check.
pub const SPREAD_DECOYS: usize = 12;
/// Where a run's pauses, those added included, and its staged regions still read slow by
/// events on an idle queue, this many pauses follow with CUPTI collecting, each among
/// [`CUPTI_TIMED_PER_PAUSE`] timed launches (`protocol::KernelRecords`), and the pause test
/// judges their kernel records: those leave out the host's launch, which a pause slows
/// whatever the kernel does. Pauses as sparse as among the samples: a kernel that learns
/// its gaps from the last few (`tells-period` of `experiments/trust-shapes.toml`, over the
/// last eight) took pauses every other launch for its usual gap and skipped work after them
/// too.
pub const CUPTI_PAUSES: usize = 8;
pub const CUPTI_TIMED_PER_PAUSE: usize = 7;
/// Where those records still read the pauses slow, this many stages that draw the held
/// data again (a decoy's, the GPU busy through it) follow, each among as many timed
/// launches, read by CUPTI too: an honest kernel that runs slower on a GPU gone idle (a
/// 148 µs hot transpose read 7% slower after an idle 290 µs on an H200, not after a draw as
/// long) is slow after a pause only, a kernel that does its work after a long gap after
/// both. Only then: with the timed launches around them they cost half as much again as
/// the pauses did, and a draw each.
pub const CUPTI_STAGED: usize = 4;
/// Where a run's timed samples split in two behaviors (`samples_split`) and its pauses and
/// staged regions both read over their median by more than the margin, with the slower
/// behavior, this many pauses follow, each among [`CUPTI_TIMED_PER_PAUSE`] timed launches with
/// CUPTI collecting, whatever the cell's timer (in place of [`CUPTI_PAUSES`]), and
/// [`CUPTI_STAGED`] stages that draw where those read slow. A kernel that pads some of its
/// timed launches up to where its pauses read and skips work in the rest splits its samples,
/// and their spread then holds its pauses (on an H200 a GEMV that did so read 11.7% faster
/// than the honest one by its median, trusted with a limit of 60.6%): a run's three pauses
/// lie all with the slower behavior by chance too often to tell. Sixteen among 112 timed
/// launches, 48% of them slow (as a cache's padded launches were), do so with a chance of
/// 2.7e-5, 2.1e-4 over the test's eight thresholds (`analysis::two_speeds`); twelve among 84
/// with 3.3e-4, 2.0e-3 over six.
pub const SPLIT_PAUSES: usize = 16;
/// Launches CUPTI's start-up is left to, before those.
pub const CUPTI_WARM_UP: usize = 2;
/// Timed samples fewer than this give no spread to judge by (the analysis's tests), nor so
/// a reason to read a run's first launches again.
pub const MIN_SAMPLES: usize = 10;
/// Where a run's timed regions of several launches, read by events on an idle queue, have
/// first launches over the launches after them by more than [`HOST_LAUNCH_NS`], this many
/// more regions follow with CUPTI collecting (as long as the audit's, after the same gap as
/// a timed one), and each one's first launch is set against its rest by their own spans: by
/// events a first launch holds the host's submission, which grew with the region (on an
/// H200 an honest matmul's first of 500 read 32 µs over the rest, of 10 about 5 µs),
/// whatever the kernel did.
pub const CUPTI_FIRSTS: usize = 8;
/// The most a pause adds to a reading that holds the host's launch (events or a host timer
/// on an idle queue): the launch after a pause, like a batch's first on an idle queue, may
/// start this late (on an H200 a batch's first started 4 to 15 µs late; a 122 µs reduction
/// read 6 µs slower after its pauses by events and no slower by CUPTI). Pauses that read
/// over the timed launches by more than this and the margin did more work than they did
/// whatever the launch cost, so CUPTI does not read them again.
pub const HOST_LAUNCH_NS: f64 = 25_000.0;

/// What each launch after the first of a region of `launches` took, where the region read
/// `reading_ns` a launch and its first launch `first_ns`: (N R - F) / (N - 1).
pub fn rest_of_region(first_ns: f64, reading_ns: f64, launches: u64) -> f64 {
    let n = launches as f64;
    (n * reading_ns - first_ns) / (n - 1.0)
}

/// Whether pauses whose lower median is `lower_ns` read over the timed median by more than
/// the margin and [`HOST_LAUNCH_NS`]: the worker does not read such pauses again by CUPTI,
/// and the analysis says they did more work whatever the launch cost.
pub fn past_the_hosts_launch(lower_ns: f64, timed_median_ns: f64) -> bool {
    lower_ns - timed_median_ns > margin_ns(timed_median_ns) + HOST_LAUNCH_NS
}
/// A region after a run's samples follows the check of the one before it, not timed launches
/// as a region among them does: on an H200, by events on an idle queue, the confirming
/// audited regions after the loop of a 10-20 µs LayerNorm checked by a Python function read
/// 4-8 µs over those among its samples (after the ms the function took on the host), and its
/// honest cells were called suspect in 2 of 8 runs at 2aec8fe (in none of 6 with this). So
/// before each region after the loop the cell's kernel runs, untimed, each launch waited on
/// as a sample's is (back to back, they told a kernel its samples were over), for about this
/// long at its timed median...
pub const LEAD_NS: f64 = 200_000.0;
/// ...this many launches at most, one at least.
pub const LEAD_MOST: u64 = 10;

/// Under CUPTI, whose records hold every launch and whose span no host's launch, the regions
/// run as timed ones, untimed, before each region after the loop instead (their places no
/// reading takes): the gap on the GPU before that region is then a stage's. Two: after one, on
/// an H200 (one at eb79272), the first region after the read of CUPTI's records still
/// followed a gap of 2-67 times its cell's other regions' in 30 of 542 regions after the
/// samples in `trust-adversary-2`, `-3`, `-4` and `trust-small` (the read flushes CUPTI's
/// buffers; why the first launch after it does not shorten that gap is not found); after two,
/// in 1 of 598, and their gaps' median 0.99-1.00 of the other regions'.
pub const CUPTI_LEADS: usize = 2;

/// The untimed launches before a region after the loop (see [`LEAD_NS`]), for a kernel whose
/// timed median is `median_ns` (None where no sample was read).
pub fn lead_launches(median_ns: Option<f64>) -> u64 {
    match median_ns.filter(|m| *m > 0.0) {
        Some(m) => ((LEAD_NS / m).ceil() as u64).clamp(1, LEAD_MOST),
        None => LEAD_MOST,
    }
}

/// Timed launches and pauses after a run's samples, a pause among every eight at a place
/// the cell's seed draws, launched as the samples were and read from CUPTI's kernel
/// records, ns per launch (each kernel's own span): the host's launch, which an idle
/// queue's events hold and which a pause slows (a 122 µs reduction on an H200 read 135 µs
/// after its pauses by such events, against 129 µs timed, and 122 µs both ways by CUPTI),
/// is left out, and the gaps before the launches stay as the samples' (CUPTI adds about a
/// µs to a launch): a kernel that skips work back to back still skips it in the timed ones.
/// See [`crate::protocol::CUPTI_PAUSES`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelRecords {
    #[serde(deserialize_with = "super::nan::null_as_nan")]
    pub timed_ns: Vec<f64>,
    #[serde(deserialize_with = "super::nan::null_as_nan")]
    pub pauses_ns: Vec<f64>,
    /// Launches after a stage that drew the held data again, read where the pauses' records
    /// read slow ([`crate::protocol::CUPTI_STAGED`]); none in records from before them.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "super::nan::null_as_nan"
    )]
    pub staged_ns: Vec<f64>,
    /// Whether the pauses' stages were a stage that draws themselves (a flushed cell's pause
    /// draws the held data again; where nothing is drawn every stage poisons the outputs), so
    /// that no stage that draws is read after them: the pauses stand for the staged regions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pauses_staged: bool,
    /// The run's timed samples as its timer read them, in order, where they were read again
    /// (they split in two, [`crate::protocol::SPLIT_PAUSES`], or their pauses read slow,
    /// [`CUPTI_PAUSES`]): where they hold two behaviors, the records' timed launches must
    /// hold them in their shares, or the kernel ran otherwise once its samples were over
    /// (`analysis::reproduced`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "super::nan::null_as_nan"
    )]
    pub samples_ns: Vec<f64>,
    /// Timed regions of several launches read again ([`CUPTI_FIRSTS`]): each one's first
    /// launch, and the mean of the launches after it.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "super::nan::null_as_nan"
    )]
    pub firsts_ns: Vec<f64>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "super::nan::null_as_nan"
    )]
    pub rests_ns: Vec<f64>,
    /// The timed launches and pauses read again, as the cell's own timer read them beside
    /// CUPTI (the first two fields' launches, in their order): a kernel that told the second
    /// reading apart (it follows the samples) and skipped in its pauses there reads them fast
    /// by its timer too, where its samples' pauses read slow (`analysis::reproduced`); none in
    /// records from before them.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "super::nan::null_as_nan"
    )]
    pub timer_timed_ns: Vec<f64>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "super::nan::null_as_nan"
    )]
    pub timer_pauses_ns: Vec<f64>,
}

impl KernelRecords {
    /// The records with the run's timed `samples` beside them, as its timer read them.
    pub fn beside(self, samples: &[f64]) -> KernelRecords {
        KernelRecords {
            samples_ns: samples.to_vec(),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_is_looked_at_as_the_samples_double() {
        let looks: Vec<usize> = (0..=2000).filter(|&n| spread_look(n)).collect();
        assert_eq!(looks, [30, 60, 120, 240, 480, 960, 1920]);
    }

    #[test]
    fn past_the_hosts_launch_is_the_margin_and_what_a_pause_adds_to_a_launch() {
        // `tells-period` at scale=1 skipping a quarter by events on an H200 at af78143: its
        // pauses at 254.4 µs over 223.9 µs timed, past the margin and 25 µs (29.5 µs); the
        // analysis had judged by its noise bound of 6.289 µs and 25 µs, and said CUPTI
        // would tell where the worker, by this rule, had not read it again.
        assert!(past_the_hosts_launch(254.4e3, 223.9e3));
        assert!(!past_the_hosts_launch(252.0e3, 223.9e3));
        // An honest reduction by events, 135.2 µs after its pauses against 129.1 µs.
        assert!(!past_the_hosts_launch(135.2e3, 129.1e3));
    }

    #[test]
    fn launches_that_skip_at_random_split_the_samples_a_stretch_or_noise_does_not() {
        // `skips-at-random` hot on an H200: launches that skipped near 90 µs, the rest 128 µs,
        // drawn apart launch to launch.
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as f64 / (1u64 << 31) as f64
        };
        let mixed: Vec<f64> = (0..200)
            .map(|_| match next() < 0.5 {
                true => 90_000.0 + 1_000.0 * next(),
                false => 128_000.0 + 1_000.0 * next(),
            })
            .collect();
        assert!(samples_split(&mixed));
        // The same two speeds as a stretch of each (a power cap's): successive samples barely change.
        let mut stretch = mixed.clone();
        stretch.sort_unstable_by(f64::total_cmp);
        assert!(!samples_split(&stretch));
        // One speed with noise of 2%.
        let noisy: Vec<f64> = (0..200).map(|_| 128_000.0 + 2_560.0 * next()).collect();
        assert!(!samples_split(&noisy));
        assert!(!samples_split(&mixed[..6]), "too few to tell");
    }

    #[test]
    fn records_from_before_cuptis_stages_read_with_none_and_none_is_not_written() {
        let old: KernelRecords =
            serde_json::from_str(r#"{"timed_ns":[17600.0],"pauses_ns":[17632.0]}"#).unwrap();
        assert!(old.staged_ns.is_empty());
        assert_eq!(
            serde_json::to_string(&old).unwrap(),
            r#"{"timed_ns":[17600.0],"pauses_ns":[17632.0]}"#
        );
    }

    #[test]
    fn a_region_after_the_loop_follows_about_200_us_of_its_kernel_at_most_ten_launches() {
        assert_eq!(lead_launches(Some(10_000.0)), 10, "capped");
        assert_eq!(lead_launches(Some(50_000.0)), 4);
        assert_eq!(lead_launches(Some(22_000_000.0)), 1, "one at least");
        assert_eq!(lead_launches(None), LEAD_MOST);
        assert_eq!(lead_launches(Some(f64::NAN)), LEAD_MOST);
    }
}
