//! One cell in one process, in the steps NVBench's `measure_cold` takes: prepare (the
//! kernel's code, the inputs and buffers: [`super::prepare`]), arm (the launch, the L2
//! flush, graphs, the timer: [`super::arm`]), sample (the checked launch, warm-up, the first
//! and the steady timed launches), collect (the timer's readings, telemetry) and audit
//! ([`super::audit`]: one more launch on new inputs, checked and timed against the reading).

use super::arm::{Armed, Starts, TimingSetup};
use super::assemble::Checker;
use super::audit::Auditor;
use super::buffers::{Buffers, Poison};
use super::compiler::Build;
use super::failure::{during, of_kind, Failure};
use super::kernels::{KernelKey, Kernels};
use super::prepare::{Code, Data, ReadyCell};
use super::reference;
use super::session::Session;
use super::stash::Stash;
use super::timeline::Timeline;
use crate::experiment::knobs::{first_launch::FirstLaunch, queue::Queue, timer::TimerKind};
use crate::method::{self, budget::Meter, spans::Places, stop::Stopper, timer::Readings};
use crate::plan::{Cell, Role};
use crate::protocol::{
    CellRecord, Energy, FailureKind as Kind, Overhead, QueueRecord, Status, FIRST_TIMED_LAUNCH,
    OUTPUT_CHECK, STAGE_CONFIRMATIONS,
};
use crate::telemetry::Sampler;
use std::time::{Duration, Instant};

/// Runs one cell; the flag says whether the CUDA context is lost.
pub fn run(s: &mut Session, cell: &Cell, process: u32) -> (CellRecord, bool) {
    let t0 = Instant::now();
    Stash::forget_unless_at(s, cell);
    let mut rec = CellRecord::new(cell.index, &cell.id, process);
    rec.cuda_env = std::env::vars()
        .filter(|(k, _)| k.starts_with("CUDA_"))
        .collect();
    // A lazy first launch follows nothing on the GPU: no probe around it.
    let probed = cell.knobs.first_launch == FirstLaunch::Prepared;
    let probe = |s: &mut Session| match probed {
        true => s.probe().map_err(of_kind(Kind::Timing)),
        false => Ok(None),
    };
    let outcome = probe(s).and_then(|before| {
        measure(s, cell, (process, t0), &mut rec)?;
        if let (Some(b), Some(a)) = (before, probe(s)?) {
            rec.probe_mhz = Some((b.mhz, a.mhz));
            // Under the profiler the probes themselves are profiled: host time means nothing.
            if cell.knobs.timer != TimerKind::Profiler {
                rec.probe_timer_rate = a.timer_rate_since(&b);
            }
        }
        Ok(())
    });
    // The L2 set aside for `l2_persist` goes back, its lines with it, whatever the outcome.
    let outcome = match cell.knobs.l2_persist.0 {
        Some(_) => {
            let released = cuda::release_l2().map_err(Failure::from);
            outcome.and(released.map_err(of_kind(Kind::SetUp)))
        }
        None => outcome,
    };
    // A write past the buffers into the kept inputs explains any other failure of the
    // cell (its check's reference reads them too), so it is told first.
    let alive = !outcome.as_ref().is_err_and(|f| f.context_lost);
    let kept = kept_inputs_unchanged(s, alive).map_err(of_kind(Kind::Audit));
    let outcome = kept.and(outcome);
    // The reference's buffers go with their cell (their free is its cost).
    s.reference_buffers.take();
    rec.wall_s = t0.elapsed().as_secs_f64();
    rec.phases = s.timeline.take();
    let lost = match outcome {
        Ok(()) => {
            rec.status = Status::Ok;
            false
        }
        Err(f) => {
            // Every step marks its kind (`of_kind`); one that does not is set-up work.
            rec.fail(f.kind.unwrap_or(Kind::SetUp), f.message);
            // A fault may surface only now; a context that cannot synchronize is lost.
            f.context_lost || cuda::synchronize().is_err()
        }
    };
    // Every cell loads its own module (once the GPU is done with this one's): no device
    // global of this cell reaches the next.
    s.kernels.end_cell();
    (rec, lost)
}

fn measure(
    s: &mut Session,
    cell: &Cell,
    run: (u32, Instant),
    rec: &mut CellRecord,
) -> Result<(), Failure> {
    let code = Code::prepare(s, cell, rec).map_err(of_kind(Kind::Compile))?;
    let data = Data::prepare(s, cell, &code).map_err(of_kind(Kind::SetUp))?;
    rec.telemetry_start = data.start_reading.1.clone();
    let ready = ReadyCell {
        cell,
        code: &code,
        data: &data,
    };
    let mut auditor = Auditor::plan(ready, run, s.sample_seed);
    let setup = TimingSetup::make(s, cell, auditor.among()).map_err(of_kind(Kind::SetUp))?;
    let mut armed = Armed::arm(s, ready, &setup).map_err(of_kind(Kind::SetUp))?;
    rec.l2_window = armed.window.clone();
    let sampled = sample(s, ready, &mut armed, &mut auditor, rec).map_err(of_kind(Kind::Launch))?;
    let (audits, untimed) = match &auditor {
        Auditor::Among(among) => (among.readings(), among.untimed().to_vec()),
        _ => (Vec::new(), Vec::new()),
    };
    let places = (&audits[..], &untimed[..]);
    let collected = collect(s, &mut armed, sampled, places, rec).map_err(of_kind(Kind::Timing))?;
    if let Auditor::Among(among) = &mut auditor {
        among.read(collected);
    }
    (auditor.finish(s, ready, &mut armed, rec)).map_err(of_kind(Kind::Audit))?;
    floor(s, cell, rec).map_err(of_kind(Kind::Timing))
}

/// What the sample step leaves for the collect step: the raw readings of the timed
/// launches, when each began, and the telemetry sampler that ran beside them.
struct Sampled {
    first: f64,
    samples: Vec<f64>,
    starts: Vec<f64>,
    sampler: Option<Sampler>,
}

/// The checked launch, the warm-up and the timed launches. Outputs start poisoned, so only
/// this cell's kernel can make the check pass. Nothing lies between the warm-up and the
/// first timed launch, as in the post's programs (but an L2 flush or a buffer reset, where
/// the cell asks for one).
fn sample<'b>(
    s: &mut Session,
    ready: ReadyCell<'b>,
    armed: &mut Armed<'b>,
    auditor: &mut Auditor,
    rec: &mut CellRecord,
) -> Result<Sampled, Failure> {
    let ReadyCell { cell, code, data } = ready;
    let knobs = &cell.knobs;
    let buffers = &data.sets[0];
    let origin = Instant::now();
    let (start_read, start) = &data.start_reading;
    let sampler = s.sensor.sample_every(
        Duration::from_millis(s.telemetry.interval_ms),
        origin,
        start.clone().map(|reading| (*start_read, reading)),
    );
    if data.poison == Poison::ByMemset {
        let poisoned = buffers.poison_outputs().map_err(Failure::from);
        poisoned.map_err(of_kind(Kind::SetUp))?;
    }
    s.timeline.mark("set-up");
    // The check's reference, shared with the run's other processes.
    let reference = reference::Cache::new(
        s.run_cache.as_deref(),
        format!("{}#{}", data.point, data.seed),
        s.sample_seed,
    );
    let checker = Checker {
        cell,
        def: code.def.as_ref(),
        host: &data.timed,
        reference: &reference,
        sample: None,
        kept: &s.reference_buffers,
        stash: s.timed_stash.as_ref(),
    };
    if code.loads_at_first_launch() {
        // The next launch loads the library: with a heap as fresh as a new program's.
        cuda::release_free_heap();
        s.timeline.mark("heap released");
    }
    let mut warmup = knobs.warmup.launches;
    // Launches of the measured kernel are counted as they happen (also in a cell that
    // fails later), so that a profiler's per-launch report can be cut into cells.
    if armed.warm.is_none() && warmup > 0 {
        // The first warm-up launch is the checked one: verified before anything is timed.
        checked_launch(
            &mut s.kernels,
            &mut s.timeline,
            armed,
            buffers,
            &checker,
            rec,
        )?;
        warmup -= 1;
    }
    rec.queue = wait_record(knobs.queue, armed);
    if knobs.cupti_collect.on {
        let copies = armed.entries.len() > code.entries.len();
        let collecting = armed.timer.collect(copies).map_err(Failure::from);
        collecting.map_err(of_kind(Kind::Timing))?;
    }
    if warmup > 0 {
        warm_up(&mut s.timeline, cell, armed, buffers, warmup, rec)?;
    }

    let n = knobs.samples_per_run() as usize;
    let mut starts = Starts::new(origin, n + 1);
    let first = armed.time_next(
        data,
        &mut starts,
        Some(&mut s.timeline),
        "first launch",
        None,
    )?;
    rec.kernel_launches += armed.body.kernel_launches();
    s.timeline.mark(FIRST_TIMED_LAUNCH);
    if rec.check.is_none() {
        // No same-kernel warm-up: the first timed launch alone wrote the output.
        let recorded = (knobs.timer == TimerKind::Cupti).then_some(armed.entries.as_slice());
        let checked = checker.check(&mut s.kernels, &mut s.timeline, buffers, recorded);
        rec.check = Some(checked.map_err(of_kind(Kind::Check))?);
        s.timeline.mark(OUTPUT_CHECK);
    }
    rec.first_ns = Some(first);
    auditor
        .stage(s, ready, first)
        .map_err(of_kind(Kind::Audit))?;
    let samples = steady(s, ready, armed, (&mut starts, auditor), rec)?;
    if n > 0 {
        s.timeline.mark("steady samples");
    }
    Ok(Sampled {
        first,
        samples,
        starts: starts.at,
        sampler,
    })
}

/// The checked launch: one launch on reset buffers, its output checked before anything
/// is timed.
fn checked_launch(
    kernels: &mut Kernels,
    timeline: &mut Timeline,
    armed: &mut Armed,
    buffers: &Buffers,
    checker: &Checker,
    rec: &mut CellRecord,
) -> Result<(), Failure> {
    buffers.reset().map_err(during("buffer reset"))?;
    armed.launch.enqueue().map_err(during("checked launch"))?;
    cuda::synchronize().map_err(during("checked launch"))?;
    timeline.mark("checked launch");
    rec.kernel_launches += 1;
    let checked = checker.check(kernels, timeline, buffers, None);
    rec.check = Some(checked.map_err(of_kind(Kind::Check))?);
    timeline.mark(OUTPUT_CHECK);
    Ok(())
}

/// `queue = "saturate"`: the record of the wait kernel before each timed region, one the host
/// releases or one of `wait_us`.
fn wait_record(queue: Queue, armed: &Armed) -> Option<QueueRecord> {
    let (Queue::Saturate { wait_us }, Some(sat)) = (queue, armed.timer.saturate.as_ref()) else {
        return None;
    };
    Some(QueueRecord {
        wait_ns: wait_us.unwrap_or_default() * 1000,
        too_short: 0,
        released: sat.released(),
    })
}

/// The warm-up's `count` launches: the cell's kernel on reset buffers, or the other kernel
/// the cell warms up with.
fn warm_up(
    timeline: &mut Timeline,
    cell: &Cell,
    armed: &mut Armed,
    buffers: &Buffers,
    count: u64,
    rec: &mut CellRecord,
) -> Result<(), Failure> {
    let timer = cell.knobs.timer;
    match armed.warm.as_mut() {
        Some(other) => method::warm_up(other, count, timer, || Ok(())),
        None => {
            let reset = || buffers.reset();
            let warm = method::warm_up(&mut armed.launch, count, timer, reset);
            rec.kernel_launches += count;
            warm
        }
    }
    .map_err(during("warm-up"))?;
    timeline.mark("warm-up");
    Ok(())
}

/// The steady samples after the first: until the cell's count, an adaptive stop or the
/// budget, with the host's wall time per sample. Audited regions run among them where the
/// auditor places them (those a loop that stopped early did not reach, after it).
fn steady<'b>(
    s: &mut Session,
    ready: ReadyCell<'b>,
    armed: &mut Armed<'b>,
    (starts, auditor): (&mut Starts, &mut Auditor),
    rec: &mut CellRecord,
) -> Result<Vec<f64>, Failure> {
    let ReadyCell { cell, data, .. } = ready;
    let knobs = &cell.knobs;
    let n = knobs.samples_per_run() as usize;
    let mut samples = Vec::with_capacity(n);
    let (energy_start, launches_start) = (s.sensor.energy_mj_behind(), rec.kernel_launches);
    let loop_start = Instant::now();
    let mut stopper = (knobs.samples.stop).map(|rule| Stopper::new(rule, cell.runs()));
    let mut budget = Meter::new(knobs.budget, knobs.timer, cell.runs(), n as u64);
    // Regions so far (the first timed one is 0), and the host time audits took among them.
    let (mut place, mut audited) = (1, Duration::ZERO);
    let mut among = match auditor {
        Auditor::Among(among) => Some(among),
        _ => None,
    };
    for i in 0..n {
        if let Some(a) = among.as_mut() {
            if let Some(kind) = a.due(i) {
                let t0 = Instant::now();
                let at = (place, i, kind);
                (a.region(s, ready, (armed, rec), at, &samples)).map_err(of_kind(Kind::Audit))?;
                a.spoiled_decoy(i, &samples);
                (place, audited) = (place + 1, audited + t0.elapsed());
            }
        }
        let t = armed.time_next(data, starts, None, "timed launch", None)?;
        if let Some(a) = among.as_mut() {
            a.timed_first(armed.timer.first_ns);
        }
        place += 1;
        rec.kernel_launches += armed.body.kernel_launches();
        samples.push(t);
        if let Some(a) = among.as_mut().filter(|a| a.spread_due(samples.len())) {
            audited += a.look_at_spread(s, armed, (&starts.host_ns, &samples, place), knobs);
        }
        // Between samples, from what the loop already read: the timed region is untouched.
        let launches = knobs.launches.count();
        // The loop's time less its audits', which the rule's timeout does not pay for.
        let elapsed = loop_start.elapsed().saturating_sub(audited);
        let precise = (stopper.as_mut()).and_then(|s| s.push(&samples, launches, elapsed));
        let spent = || budget.as_mut()?.push(t, launches, elapsed);
        if let Some(why) = precise.or_else(spent) {
            rec.stopped = Some(why);
            break;
        }
    }
    // Read only where the loop was long enough; what the reading takes is not a sample's.
    let (seconds, read_at) = (loop_start.elapsed().as_secs_f64(), Instant::now());
    let read = (energy_start.filter(|_| seconds >= Energy::MIN_SECONDS))
        .and_then(|t| t.join().ok().flatten())
        .and_then(|start| Some((start, s.sensor.energy_mj()?)));
    if let Some((start, end)) = read {
        rec.energy = Some(Energy {
            joules: end.saturating_sub(start) as f64 / 1e3,
            seconds,
            launches: rec.kernel_launches - launches_start,
        });
    }
    let energy_read = read_at.elapsed();
    // What a second reading of the pauses by CUPTI takes is no sample's either.
    let mut read_again = Duration::ZERO;
    // A loop that stopped early runs what its samples afford of the first round's regions;
    // then the regions that confirm what the run's regions read (`method::confirm`), the
    // stage's again while its staged regions read slow.
    if let Some(a) = among {
        s.timeline.mark("steady samples");
        // Each confirmation reads the regions before it too: drawn once those ran.
        for confirmation in 0..=STAGE_CONFIRMATIONS {
            let kinds = match confirmation {
                0 => a.after(samples.len()),
                n => a.confirmation(armed, &samples, (place, n == 1)),
            };
            if confirmation > 0 && kinds.is_empty() {
                break;
            }
            for kind in kinds {
                place += a.lead_in(ready, (armed, rec), (place, &samples))?;
                let at = (place, samples.len(), kind);
                (a.region(s, ready, (armed, rec), at, &samples)).map_err(of_kind(Kind::Audit))?;
                place += 1;
            }
        }
        read_again = (a.by_cupti(s, ready, armed, rec, &samples)).map_err(of_kind(Kind::Audit))?;
    }
    if let (Some(s), None) = (stopper.as_mut(), &rec.stopped) {
        rec.stopped = Some(s.exhausted(&samples));
    }
    if !samples.is_empty() {
        let wall = (loop_start.elapsed())
            .saturating_sub(energy_read)
            .saturating_sub(read_again);
        let wall_ns = wall.as_nanos() as f64 / samples.len() as f64;
        rec.sample_wall_ns = Some(wall_ns);
    }
    Ok(samples)
}

/// The timer's readings (CUPTI's come from its records now), the telemetry sampled beside
/// them and the cell's end reading. Returns what the timer read of the audit's regions.
fn collect(
    s: &mut Session,
    armed: &mut Armed,
    sampled: Sampled,
    places: Places,
    rec: &mut CellRecord,
) -> Result<Readings, Failure> {
    if let (Some(q), Some(sat)) = (rec.queue.as_mut(), armed.timer.saturate.as_ref()) {
        q.too_short = sat
            .missed()
            .map_err(during("reading the wait kernel's count"))?;
    }
    let mut readings =
        (armed.timer).finish(&armed.entries, sampled.first, sampled.samples, places)?;
    if readings.cupti.is_some() {
        s.timeline.mark("CUPTI records");
    }
    rec.first_ns = Some(readings.first_ns);
    rec.cupti = readings.cupti.take();
    rec.telemetry = sampled.sampler.map(|s| s.finish()).unwrap_or_default();
    rec.telemetry_end = s.sensor.read();
    rec.samples_ns = std::mem::take(&mut readings.samples_ns);
    rec.starts_us = sampled.starts;
    s.timeline.mark("telemetry end");
    Ok(readings)
}

/// A floor cell read by events: the runner's host cost per sample against a bare cudarc
/// loop doing the same.
fn floor(s: &mut Session, cell: &Cell, rec: &mut CellRecord) -> Result<(), Failure> {
    let n = rec.samples_ns.len();
    if cell.role != Role::Floor || cell.knobs.timer != TimerKind::Events || n == 0 {
        return Ok(());
    }
    let empty = s
        .kernels
        .get(KernelKey::Empty, Build::default(), &mut s.timeline)?
        .0;
    let (image, entry) = (empty.image.clone(), empty.entry.clone());
    let (bare_wall_ns, bare_events_median_ns) = cuda::bare_events_loop(&image, &entry, n)?;
    rec.overhead = Some(Overhead {
        harness_wall_ns: rec.sample_wall_ns.unwrap_or_default(),
        bare_wall_ns,
        bare_events_median_ns,
    });
    s.timeline.mark("bare cudarc loop");
    Ok(())
}

/// After a cell: the inputs the session keeps on the device for the cells after it must
/// hold what they held (`Stash::seal`). A copy that changed was written by a kernel of this
/// cell past its own buffers (no argument of the cell is a copy): the cell fails, and the
/// copies are let go so that the next cell uploads its inputs. Where the context is lost
/// (`alive` false) they cannot be read, and go too.
fn kept_inputs_unchanged(s: &mut Session, alive: bool) -> Result<(), Failure> {
    let mut changed = None;
    for timed in [false, true] {
        let stash = match timed {
            false => &mut s.audit_stash,
            true => &mut s.timed_stash,
        };
        let Some(st) = stash.as_ref().filter(|_| alive) else {
            *stash = None;
            continue;
        };
        if let Some(arg) = st.changed(&mut s.kernels, &mut s.timeline, s.sample_seed)? {
            changed.get_or_insert(arg);
            *stash = None;
        }
    }
    s.timeline.mark("kept inputs checked");
    match changed {
        None => Ok(()),
        Some(arg) => Err(Failure::from(format!(
            "a kernel of this cell wrote outside its buffers: the copy of argument {arg} that the runner keeps on the device for the cells after it (no argument of this cell, but read by its check's reference) changed while the cell ran"
        ))),
    }
}
