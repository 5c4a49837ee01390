//! A run's pauses read again by CUPTI's kernel records: by events on an idle queue a
//! reading holds the host's launch, which a pause slows whatever the kernel does, so where
//! the pauses (the confirming ones included) and the staged regions read slow, launches as
//! the samples were, a pause among every eight at places the cell's seed draws, are read
//! by CUPTI, which leaves the launch out and adds about a µs to it (the gaps stay the
//! samples'); where those read slow too, stages that draw are read alike. The analysis
//! judges those records (`analysis::bounds::by_kernel_records`, `idle_or_kernel`).

use super::input_draws::InputDraws;
use crate::experiment::knobs::{cache::Cache, timer::TimerKind};
use crate::method::confirm;
use crate::method::spans::busy_per_launch;
use crate::protocol::{
    CellRecord, KernelRecords, CUPTI_FIRSTS, CUPTI_PAUSES, CUPTI_STAGED, CUPTI_TIMED_PER_PAUSE,
    CUPTI_WARM_UP, MIN_SAMPLES, RANKS_AGAIN_PAUSES, SPLIT_PAUSES,
};
use crate::worker::arm::{Armed, Starts};
use crate::worker::buffers::Buffers;
use crate::worker::failure::{during, Failure};
use crate::worker::prepare::ReadyCell;
use crate::worker::timeline::Timeline;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::time::{Duration, Instant};

/// What the run read and holds: its pauses' and staged regions' readings, its seed, the
/// pause every stage waits out, the inputs' draws that stage it, the seed of the data the buffers
/// hold and whether a pause's stage draws it again (`Among::pause_draws`).
pub(super) struct Run<'a> {
    pub(super) pauses: Vec<f64>,
    pub(super) staged: Vec<f64>,
    pub(super) seed: u64,
    pub(super) wait: Duration,
    /// What a stage's work took, in ns: a pause's hold lasts as long.
    pub(super) stage_ns: u64,
    pub(super) inputs: &'a InputDraws,
    pub(super) held: u64,
    pub(super) pause_draws: bool,
    /// Launches in each of the run's regions (fewer than a timed one's where the audit's
    /// are shorter: a pause read again is one of them).
    pub(super) launches: u64,
}

/// What a region among the launches CUPTI reads waits out: a pause's stage, or one that
/// draws the held data again (a decoy's: the same bytes, the GPU busy through it).
#[derive(Clone, Copy)]
enum Stage {
    Pause,
    Drawn,
}

/// Where the run's pauses and its staged regions still read slow by events on an idle
/// queue (`samples`: the timed ones), [`CUPTI_PAUSES`] pauses among [`CUPTI_TIMED_PER_PAUSE`]
/// times as many timed launches, each pause at a place the cell's seed draws, with CUPTI
/// collecting: their kernel records (each kernel's own span). Where those read the pauses
/// slow too, [`CUPTI_STAGED`] stages that draw the held data again, read alike, so that the
/// analysis tells a GPU gone idle from a kernel that works after a long gap. None where
/// they are not needed, CUPTI cannot collect, or a record is missing: the run is then
/// judged by its pauses as they read. (Pauses slow with the staged regions not are the GPU
/// gone idle, which the analysis clears without them; pauses slower than the host's launch
/// can make them did more work, whatever the launch cost.)
pub(super) fn read_again<'b>(
    (ready, timeline): (ReadyCell<'b>, &mut Timeline),
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    samples: &[f64],
    run: Run,
) -> Result<Option<KernelRecords>, Failure> {
    let timed = crate::statistics::median(samples.to_vec());
    let slow = |readings: &[f64]| confirm::pauses_need_confirming(readings, timed);
    let knobs = &ready.cell.knobs;
    let beyond = confirm::beyond_the_hosts_launch(&run.pauses, timed);
    // A run whose samples split in two reads more of them once its timer's readings are in
    // (`split_again`).
    let split = confirm::split_with_the_slow(samples, &run.pauses, &run.staged);
    let needed = slow(&run.pauses) && slow(&run.staged) && !beyond && !split;
    if !confirm::confirms_by_cupti(knobs) || !needed {
        return Ok(None);
    }
    let read = pauses_and_stages((ready, timeline), armed, rec, &run, CUPTI_PAUSES)?;
    Ok(read.map(|r| r.beside(samples)))
}

/// Where the run's timed samples split in two behaviors and its pauses and staged regions
/// read with the slower ([`confirm::split_with_the_slow`]), [`SPLIT_PAUSES`] pauses read by
/// CUPTI as [`read_again`] reads its own, whatever the cell's timer, and stages that draw
/// where those read slow: the run's few pauses cannot tell (see [`SPLIT_PAUSES`]). Run once
/// the timer's readings are in (`samples`: the timed ones), so that a collector of the
/// timer's own is done; not under a profiler, which CUPTI's collector would meet.
pub(super) fn split_again<'b>(
    (ready, timeline): (ReadyCell<'b>, &mut Timeline),
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    samples: &[f64],
    run: Run,
) -> Result<Option<KernelRecords>, Failure> {
    let profiled = ready.cell.knobs.timer == TimerKind::Profiler;
    if profiled || !confirm::split_with_the_slow(samples, &run.pauses, &run.staged) {
        return Ok(None);
    }
    let read = pauses_and_stages((ready, timeline), armed, rec, &run, SPLIT_PAUSES)?;
    Ok(read.map(|r| r.beside(samples)))
}

/// Where the run's pauses lie high among its timed samples with a chance between a thousandth
/// and [`crate::protocol::RANKS_SCREEN`] (`Among::ranks_again` screens it), [`RANKS_AGAIN_PAUSES`]
/// pauses among launches read by CUPTI, each kernel's own span: fresh readings the analysis
/// ranks the pauses among the launches beside them by. None where CUPTI cannot collect or a
/// record is missing.
pub(super) fn ranks_again<'b>(
    (ready, timeline): (ReadyCell<'b>, &mut Timeline),
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    run: Run,
) -> Result<Option<KernelRecords>, Failure> {
    let read = collect(
        (ready, timeline),
        armed,
        rec,
        &run,
        (Stage::Pause, RANKS_AGAIN_PAUSES),
    )?;
    Ok(read.map(|r| KernelRecords {
        timed_ns: r.timed_ns,
        pauses_ns: r.regions_ns,
        ..KernelRecords::default()
    }))
}

/// `pauses` pauses among launches read by CUPTI, and [`CUPTI_STAGED`] stages that draw
/// where those read slow: their kernel records; None where CUPTI cannot collect or a record
/// is missing.
fn pauses_and_stages<'b>(
    (ready, timeline): (ReadyCell<'b>, &mut Timeline),
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    run: &Run,
    pauses: usize,
) -> Result<Option<KernelRecords>, Failure> {
    let read = collect((ready, timeline), armed, rec, run, (Stage::Pause, pauses))?;
    let Some(Read {
        timed_ns,
        regions_ns: pauses_ns,
        by_timer: (timer_timed_ns, timer_pauses_ns),
    }) = read
    else {
        return Ok(None);
    };
    let median = crate::statistics::median(timed_ns.clone());
    // Where nothing is drawn a pause's stage poisons the outputs as every stage does: no
    // stage keeps the GPU busier than a pause.
    // A pause that draws already holds the GPU busy through its stage, as a drawn one would.
    let pauses_staged = run.inputs.draws.is_empty() || run.pause_draws;
    let draws = !pauses_staged;
    let staged_ns = match draws && confirm::pauses_need_confirming(&pauses_ns, median) {
        // Their timed launches are left out: the pauses are judged against those around them.
        true => {
            let drawn = (Stage::Drawn, CUPTI_STAGED);
            (collect((ready, timeline), armed, rec, run, drawn)?).map_or(vec![], |r| r.regions_ns)
        }
        false => vec![],
    };
    Ok(Some(KernelRecords {
        timed_ns,
        pauses_ns,
        staged_ns,
        pauses_staged,
        timer_timed_ns,
        timer_pauses_ns,
        ..KernelRecords::default()
    }))
}

/// Where the run's timed regions of several launches, read by events on an idle queue,
/// have first launches over the launches after them by more than the host's launch
/// (`timed_firsts`: each steady region's first launch), [`CUPTI_FIRSTS`] regions of the
/// audit's `launches` with CUPTI collecting, each after the gap a timed one follows: each
/// one's first launch's own span, and the mean of the rest's. None where they are not
/// needed, CUPTI cannot collect, or a record is missing.
pub(super) fn firsts_again<'b>(
    ready: ReadyCell<'b>,
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    (samples, timed_firsts): (&[f64], &[f64]),
    launches: u64,
) -> Result<Option<Firsts>, Failure> {
    let knobs = &ready.cell.knobs;
    let flushed = matches!(knobs.cache, Cache::Flush { .. });
    let first = crate::statistics::median(timed_firsts.to_vec());
    let reading = crate::statistics::median(samples.to_vec());
    let needed = timed_firsts.len() >= MIN_SAMPLES
        && confirm::first_needs_confirming(first, reading, armed.body.launches());
    if !confirm::confirms_by_cupti(knobs) || flushed || !needed || launches < 2 {
        return Ok(None);
    }
    let copies = !armed.launch.copy_records().is_empty();
    let Ok(collector) = cuda::cupti::Collector::start(copies) else {
        return Ok(None);
    };
    let mut starts = Starts::new(Instant::now(), 1);
    let what = ("timed launch read by CUPTI", None);
    for _ in 0..CUPTI_WARM_UP + CUPTI_FIRSTS {
        armed.time_audit_region(ready.data, &mut starts, what, launches)?;
    }
    let per_region = armed.kernel_launches_of(launches);
    rec.kernel_launches += (CUPTI_WARM_UP + CUPTI_FIRSTS) as u64 * per_region;
    let count = CUPTI_FIRSTS * per_region as usize;
    let Ok(spans) = collector.finish(&armed.entries, count) else {
        return Ok(None);
    };
    // Each region: its first launch, then the rest.
    let lengths: Vec<u64> = (0..CUPTI_FIRSTS)
        .flat_map(|_| [1, per_region - 1])
        .collect();
    let busy = busy_per_launch(&spans, &lengths);
    let (firsts, rests) = (busy.iter().step_by(2), busy.iter().skip(1).step_by(2));
    Ok(Some((firsts.copied().collect(), rests.copied().collect())))
}

/// Kernel records, ns per launch: the timed launches' and the regions', and both as the
/// cell's own timer read them beside CUPTI.
struct Read {
    timed_ns: Vec<f64>,
    regions_ns: Vec<f64>,
    by_timer: (Vec<f64>, Vec<f64>),
}

/// Kernel records of timed regions, ns: (each one's first launch, its rest's mean).
type Firsts = (Vec<f64>, Vec<f64>);

/// Launches as the samples were with CUPTI collecting, a region after a `stage` among every
/// [`CUPTI_TIMED_PER_PAUSE`] + 1 at a place the cell's seed draws: the timed launches' and
/// the regions' kernel records, None where CUPTI cannot collect or a record is missing. Each
/// step a phase of the `timeline`: CUPTI's start, the launches, its records.
fn collect<'b>(
    (ready, timeline): (ReadyCell<'b>, &mut Timeline),
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    run: &Run,
    (stage, runs): (Stage, usize),
) -> Result<Option<Read>, Failure> {
    let copies = !armed.launch.copy_records().is_empty();
    let Ok(collector) = cuda::cupti::Collector::start(copies) else {
        return Ok(None);
    };
    let kind = match stage {
        Stage::Pause => "pauses",
        Stage::Drawn => "stages that draw",
    };
    timeline.mark(&format!("audit: CUPTI started ({kind})"));
    let (wait, draws, held) = (run.wait, &run.inputs.draws, run.held);
    // A region's stage, as among the samples (a pause's hold, the held data drawn again, or the
    // outputs poisoned where nothing is drawn; a cold cell's pause draws as a decoy does) but
    // for the empty kernels launched through it: CUPTI's records leave the host's launch out,
    // which those keep from cooling.
    let region = |buffers: &Buffers| -> Result<(), Failure> {
        let staged = match (draws.is_empty(), stage) {
            (true, _) => draws.stage(|_| buffers.poison_outputs(), wait, None),
            (false, Stage::Pause) if !run.pause_draws => {
                draws.stage(|_| run.inputs.hold(run.stage_ns), wait, None)
            }
            (false, _) => draws.stage(|_| run.inputs.verify_then_draw(held, held), wait, None),
        };
        staged.map_err(during("audit: the region's stage"))
    };
    let mut starts = Starts::new(Instant::now(), 1);
    let data = ready.data;
    let what = "timed launch read by CUPTI";
    for _ in 0..CUPTI_WARM_UP {
        armed.time_next(data, &mut starts, None, what, None)?;
    }
    // One region in each run of CUPTI_TIMED_PER_PAUSE + 1 launches, never its first.
    let salt = match stage {
        Stage::Pause => 0xC0FF_EE00,
        Stage::Drawn => 0xD2A1_5EED,
    };
    let every = CUPTI_TIMED_PER_PAUSE + 1;
    let mut rng = SmallRng::seed_from_u64(run.seed ^ salt);
    let placed: Vec<usize> = (0..runs)
        .map(|k| k * every + rng.random_range(1..every))
        .collect();
    // Each region's kernel launches, in order: a timed one's, or the audit's region's.
    let mut lengths = Vec::with_capacity(runs * every);
    let mut by_timer = Vec::with_capacity(runs * every);
    for i in 0..runs * every {
        let (launches, read) = match placed.contains(&i) {
            true => {
                let after = (
                    "launch after a region's stage read by CUPTI",
                    Some(&region as _),
                );
                let read = armed.time_audit_region(data, &mut starts, after, run.launches)?;
                (run.launches, read)
            }
            false => {
                let read = armed.time_next(data, &mut starts, None, what, None)?;
                (armed.body.launches(), read)
            }
        };
        lengths.push(armed.kernel_launches_of(launches));
        by_timer.push(read);
    }
    let warm_up = CUPTI_WARM_UP as u64 * armed.body.kernel_launches();
    rec.kernel_launches += warm_up + lengths.iter().sum::<u64>();
    timeline.mark(&format!("audit: {kind} among launches read by CUPTI"));
    let spans = collector.finish(&armed.entries, lengths.iter().sum::<u64>() as usize);
    timeline.mark(&format!("audit: CUPTI's records ({kind})"));
    let Ok(spans) = spans else {
        return Ok(None);
    };
    let busy = busy_per_launch(&spans, &lengths);
    let split = |of: &[f64]| -> (Vec<f64>, Vec<f64>) {
        let (after, timed): (Vec<_>, Vec<_>) =
            (of.iter().enumerate()).partition(|(i, _)| placed.contains(i));
        let values = |v: Vec<(usize, &f64)>| v.into_iter().map(|(_, t)| *t).collect();
        (values(timed), values(after))
    };
    let (timed_ns, regions_ns) = split(&busy);
    Ok(Some(Read {
        timed_ns,
        regions_ns,
        by_timer: split(&by_timer),
    }))
}
