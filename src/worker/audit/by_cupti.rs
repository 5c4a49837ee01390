//! A run's pauses read again by CUPTI's kernel records: by events on an idle queue a
//! reading holds the host's launch, which a pause slows whatever the kernel does, so where
//! the pauses (the confirming ones included) and the staged regions read slow, launches as
//! the samples were, a pause among every eight at places the cell's seed draws, are read
//! by CUPTI, which leaves the launch out and adds about a µs to it (the gaps stay the
//! samples'); where those read slow too, stages that draw are read alike. The analysis
//! judges those records (`analysis::bounds::by_kernel_records`, `idle_or_kernel`).

use super::draw::Draws;
use crate::method::confirm;
use crate::method::timer::busy_per_launch;
use crate::protocol::{
    CellRecord, KernelRecords, CUPTI_PAUSES, CUPTI_STAGED, CUPTI_TIMED_PER_PAUSE, CUPTI_WARM_UP,
};
use crate::worker::arm::{Armed, Starts};
use crate::worker::buffers::Buffers;
use crate::worker::failure::{during, Failure};
use crate::worker::prepare::ReadyCell;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::time::{Duration, Instant};

/// What the run read and holds: its pauses' and staged regions' readings, its seed, the
/// pause every stage waits out, the draws that stage it, the seed of the data the buffers
/// hold and whether a pause's stage draws it again (`Among::pause_draws`).
pub(super) struct Run<'a> {
    pub(super) pauses: Vec<f64>,
    pub(super) staged: Vec<f64>,
    pub(super) seed: u64,
    pub(super) wait: Duration,
    pub(super) draws: &'a Draws,
    pub(super) held: u64,
    pub(super) pause_draws: bool,
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
    ready: ReadyCell<'b>,
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    samples: &[f64],
    run: Run,
) -> Result<Option<KernelRecords>, Failure> {
    let timed = crate::statistics::median(samples.to_vec());
    let slow = |readings: &[f64]| confirm::pauses_need_confirming(readings, timed);
    let knobs = &ready.cell.knobs;
    let beyond = confirm::beyond_the_hosts_launch(&run.pauses, timed);
    if !confirm::confirms_by_cupti(knobs) || !slow(&run.pauses) || !slow(&run.staged) || beyond {
        return Ok(None);
    }
    let Some((timed_ns, pauses_ns)) = collect(ready, armed, rec, &run, Stage::Pause)? else {
        return Ok(None);
    };
    let median = crate::statistics::median(timed_ns.clone());
    // Where nothing is drawn a pause's stage poisons the outputs as every stage does: no
    // stage keeps the GPU busier than a pause.
    // A pause that draws already holds the GPU busy through its stage, as a drawn one would.
    let draws = !run.draws.is_empty() && !run.pause_draws;
    let staged_ns = match draws && confirm::pauses_need_confirming(&pauses_ns, median) {
        // Their timed launches are left out: the pauses are judged against those around them.
        true => (collect(ready, armed, rec, &run, Stage::Drawn)?).map_or(vec![], |(_, s)| s),
        false => vec![],
    };
    Ok(Some(KernelRecords {
        timed_ns,
        pauses_ns,
        staged_ns,
    }))
}

/// Kernel records, ns per launch: (the timed launches', the regions').
type Read = (Vec<f64>, Vec<f64>);

/// Launches as the samples were with CUPTI collecting, a region after a `stage` among every
/// [`CUPTI_TIMED_PER_PAUSE`] + 1 at a place the cell's seed draws: the timed launches' and
/// the regions' kernel records, None where CUPTI cannot collect or a record is missing.
fn collect<'b>(
    ready: ReadyCell<'b>,
    armed: &mut Armed<'b>,
    rec: &mut CellRecord,
    run: &Run,
    stage: Stage,
) -> Result<Option<Read>, Failure> {
    let copies = !armed.launch.copy_records().is_empty();
    let Ok(collector) = cuda::cupti::Collector::start(copies) else {
        return Ok(None);
    };
    let (wait, draws, held) = (run.wait, run.draws, run.held);
    // A region's stage, as among the samples (nothing, the held data drawn again, or the
    // outputs poisoned where nothing is drawn; a cold cell's pause draws as a decoy does) but
    // for the empty kernels launched through it: CUPTI's records leave the host's launch out,
    // which those keep from cooling.
    let region = |buffers: &Buffers| -> Result<(), Failure> {
        let staged = match (draws.is_empty(), stage) {
            (true, _) => draws.stage(|_| buffers.poison_outputs(), wait, None),
            (false, Stage::Pause) if !run.pause_draws => draws.stage(|_| Ok(()), wait, None),
            (false, _) => draws.stage(|d| d.write(held), wait, None),
        };
        staged.map_err(during("audit: the region's stage"))
    };
    let mut starts = Starts::new(Instant::now(), 1);
    let (data, per_region) = (ready.data, armed.body.kernel_launches());
    let what = "timed launch read by CUPTI";
    for _ in 0..CUPTI_WARM_UP {
        armed.time_next(data, &mut starts, None, what, None)?;
    }
    // One region in each run of CUPTI_TIMED_PER_PAUSE + 1 launches, never its first.
    let (runs, salt) = match stage {
        Stage::Pause => (CUPTI_PAUSES, 0xC0FF_EE00),
        Stage::Drawn => (CUPTI_STAGED, 0xD2A1_5EED),
    };
    let every = CUPTI_TIMED_PER_PAUSE + 1;
    let mut rng = SmallRng::seed_from_u64(run.seed ^ salt);
    let placed: Vec<usize> = (0..runs)
        .map(|k| k * every + rng.random_range(1..every))
        .collect();
    for i in 0..runs * every {
        match placed.contains(&i) {
            true => {
                let after = "launch after a region's stage read by CUPTI";
                armed.time_next(data, &mut starts, None, after, Some(&region))?
            }
            false => armed.time_next(data, &mut starts, None, what, None)?,
        };
    }
    let launches = runs * every;
    rec.kernel_launches += (CUPTI_WARM_UP + launches) as u64 * per_region;
    let Ok(spans) = collector.finish(&armed.entries, launches * per_region as usize) else {
        return Ok(None);
    };
    let busy = busy_per_launch(&spans, per_region);
    let (after, timed): (Vec<_>, Vec<_>) =
        (busy.iter().enumerate()).partition(|(i, _)| placed.contains(i));
    let values = |of: Vec<(usize, &f64)>| of.into_iter().map(|(_, t)| *t).collect();
    Ok(Some((values(timed), values(after))))
}
