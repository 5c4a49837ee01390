//! An audited region's checks: its inputs read back, its output against the reference on its
//! draw, and, where the region is several launches (a batch, a graph), single launches on the
//! same draw, each on poisoned outputs, checked alike.
//!
//! A region's launches all read one draw, so its output after the last is what any launch
//! wrote: a kernel that skips work in some launches only (at random, or wrong at random, as
//! a race is) passes the region's check wherever one of its launches did all its work, and
//! times no differently in audited regions, decoys, pauses or timed ones. Only a launch on
//! outputs no launch has written shows what that launch did.

use super::super::behind_wait::BehindAWait;
use super::super::common::{spent, stale, writes_an_input, wrote_input};
use super::super::draw::PROBE;
use super::super::on_draw;
use super::Among;
use crate::experiment::knobs::timer::TimerKind;
use crate::experiment::Kernel;
use crate::plan::audit_rounds::SPOTS;
use crate::protocol::{samples_split, CellRecord, ALONE_IF_SPLIT};
use crate::worker::arm::Armed;
use crate::worker::assemble::{against_outputs, Checker};
use crate::worker::failure::{during, Failure};
use crate::worker::prepare::ReadyCell;
use crate::worker::reference;
use crate::worker::session::Session;
use std::ops::RangeInclusive;
use std::time::Instant;

/// Where a change to the timed launches' inputs was found: at a stage that drew over them, or
/// after the samples (each read them back).
const BETWEEN: &str = "between the timed launches";

impl Among {
    /// The audited region's inputs read back (a kernel that wrote one is named, before its
    /// output is checked against a reference that reads them), then its output checked on
    /// the draw of `seed` (`earlier`: the draw before it, which a stale output still holds
    /// the result of).
    pub(super) fn check_region(
        &mut self,
        s: &mut Session,
        ready: ReadyCell,
        (seed, earlier): (u64, u64),
        recorded: Option<&[String]>,
    ) -> Result<String, Failure> {
        let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
        let buffers = &data.sets[0];
        // What ran since the last mark: the steady loop, its regions among it.
        s.timeline.mark("steady samples");
        let args = &cell.launch.args;
        let on = match seed & PROBE {
            0 => "audit on new inputs",
            _ => {
                "audit on a probe (the timed launches' inputs, a few of their elements drawn anew)"
            }
        };
        let kept_too = !std::mem::replace(&mut self.kept_read, true);
        (self.inputs)
            .unchanged((def, args), buffers, (seed, &data.timed), kept_too)
            .map_err(|f| f.during(on))?;
        s.timeline.mark("audit inputs read back");
        let account = self.check_output(s, ready, (seed, earlier, 0), recorded);
        let account = account.map_err(|f| f.during(on))?;
        s.timeline.mark("audit check");
        Ok(account)
    }

    /// At the run's end, after the samples and the regions after them: the data the launches
    /// read since the last audited region, still as drawn, and so it was at every stage that
    /// drew before (each verified it first: `InputDraws::verify_then_draw`).
    /// A kernel that marks an input (a bit it flips, and reads back at its next launch)
    /// finds its mark gone after each stage that drew, and so tells staged regions from
    /// pauses and timed launches; an audited region's read-back sees only a launch on data
    /// it had not seen. On an H200 such a kernel passed hot 34-38% faster than the honest
    /// one, over limits of 19-35%. Read back after the samples only, one that counts its
    /// launches could take its mark away before they end.
    pub(in crate::worker) fn held_unchanged(
        &mut self,
        s: &mut Session,
        def: &Kernel,
    ) -> Result<(), Failure> {
        let start = Instant::now();
        let change = (self.inputs.held_change(self.held))
            .map_err(during("audit: the timed launches' inputs read back"))?;
        s.timeline
            .mark("audit: the timed launches' inputs read back");
        spent(&mut self.checks_time, start);
        spent(&mut self.cost, start);
        match change {
            Some((arg, element)) => Err(wrote_input(def, arg, element as usize).during(BETWEEN)),
            None => Ok(()),
        }
    }

    /// The output checked against the reference on the draw of `seed`, which the inputs
    /// hold (where nothing is drawn, the timed data, the outputs poisoned before), at a
    /// sample (where one is read back) of the run's seed, the draw's and `salt`.
    fn check_output(
        &mut self,
        s: &mut Session,
        ready: ReadyCell,
        (seed, earlier, salt): (u64, u64, u64),
        recorded: Option<&[String]>,
    ) -> Result<String, Failure> {
        // Its reference runs on this draw now, its buffers left for the launches alone.
        self.reference_on = Some(seed);
        let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
        let draws = &self.inputs.draws;
        if draws.is_empty() {
            // A launch alone samples elements of its own (`salt`), where the reference
            // reads a sample (the matmul's on the host draws it from the cache's seed).
            let cache = reference::Cache::new(
                s.run_cache.as_deref(),
                format!("{}#{}", data.point, data.seed),
                s.sample_seed ^ salt,
            );
            let checker = Checker {
                cell,
                def: Some(def),
                host: &data.timed,
                reference: &cache,
                sample: Some(seed ^ s.sample_seed ^ salt),
                kept: &s.reference_buffers,
                stash: s.timed_stash.as_ref(),
            };
            return checker.check(&mut s.kernels, &mut s.timeline, &data.sets[0], recorded);
        }
        let scratch = &mut self.scratch;
        on_draw::check(s, ready, (draws, scratch), (seed, salt), recorded).map_err(|f| {
            match on_draw::stale(s, ready, (draws, scratch), earlier).unwrap_or(false) {
                true => stale(def, &draws.args),
                false => f,
            }
        })
    }

    /// A launch alone's output checked on the draw of `seed`: against the reference kernel's
    /// outputs a check on that draw left, else as the region was (a run that held no
    /// audited region has its reference's outputs on the data the host uploaded, not on its
    /// draw); where a sample is read, one of its own (`salt`: a sample the same for every
    /// launch would miss the same skipped elements each time).
    fn check_alone(
        &mut self,
        s: &mut Session,
        ready: ReadyCell,
        (seed, earlier, salt): (u64, u64, u64),
    ) -> Result<String, Failure> {
        let (cell, def) = (ready.cell, ready.kernel()?);
        if def.check_kernel.is_some()
            && def.check_python.is_none()
            && self.reference_on == Some(seed)
        {
            let sample = Some(seed ^ s.sample_seed ^ salt);
            if let Some(theirs) = s.reference_buffers.borrow().as_ref() {
                let both = (&ready.data.sets[0], theirs);
                return against_outputs(&mut s.kernels, &mut s.timeline, (cell, def), both, sample);
            }
        }
        self.check_output(s, ready, (seed, earlier, salt), None)
    }

    /// After an audited region of several launches on the draw of `seed`, [`SPOTS`] single
    /// launches on it, each on poisoned outputs, each checked as the region was; returns how
    /// many ran (where the cell draws nothing, on the timed data, which the region's check
    /// read). None where the timer is CUPTI's (it would take a launch here for a timed one).
    /// A cell of several launches with an input it updates in place, resets or buffer sets
    /// that turn takes the weaker audit (`audit::weaker`), so its inputs are as drawn here:
    /// the region's read-back found them so.
    pub(super) fn spots(
        &mut self,
        s: &mut Session,
        ready: ReadyCell,
        armed: &mut Armed,
        (seed, earlier): (u64, u64),
    ) -> Result<u64, Failure> {
        let knobs = &ready.cell.knobs;
        let cupti = knobs.timer == TimerKind::Cupti || knobs.cupti_collect.on;
        if armed.body.launches() < 2 || cupti {
            return Ok(0);
        }
        let after = match seed & PROBE {
            0 => "audit on new inputs, a launch alone after the region",
            _ => "audit on a probe, a launch alone after the region",
        };
        self.alone(s, ready, armed, (seed, earlier), (1..=SPOTS, after))?;
        s.timeline.mark("audit launches alone");
        Ok(SPOTS)
    }

    /// Where the run's timed samples split in two behaviors ([`samples_split`]), or the
    /// first launches of its timed regions of several launches do (a sample of a batch or a
    /// graph is their mean, one behavior however its launches differ; a first launch is one
    /// launch), [`ALONE_IF_SPLIT`] single launches on the draw the buffers hold (the last
    /// audited region's), each on poisoned outputs, each checked as a launch alone after a
    /// region is; run once the timer's readings are in, so that no CUPTI record counts them.
    /// Not where the kernel writes an input: each launch would read the one before's result.
    pub(in crate::worker) fn alone_if_split(
        &mut self,
        s: &mut Session,
        ready: ReadyCell,
        armed: &mut Armed,
        rec: &mut CellRecord,
    ) -> Result<(), Failure> {
        let def = ready.kernel()?;
        let writes_input = writes_an_input(def, ready.data);
        // The test is the audit's too: two sorts of the samples (20,224 of them in a cell of
        // `audit-cost`, whose phase holding the test took 0.47 ms on an H200's host).
        let start = Instant::now();
        let split = samples_split(&rec.samples_ns) || samples_split(&self.timed_firsts);
        if writes_input || !split {
            spent(&mut self.checks_time, start);
            spent(&mut self.cost, start);
            return Ok(());
        }
        let what = "audit: the timed launches split in two, a launch alone on an audited draw";
        let (seed, earlier) = (self.held, self.earlier);
        // Salts of their own: the last region's launches alone read samples of this draw too.
        let salts = SPOTS + 1..=SPOTS + ALONE_IF_SPLIT;
        let checked = self.alone(s, ready, armed, (seed, earlier), (salts, what));
        spent(&mut self.checks_time, start);
        spent(&mut self.cost, start);
        rec.kernel_launches += checked?;
        s.timeline
            .mark("audit launches alone (the timed launches split)");
        Ok(())
    }

    /// Single launches on the draw of `seed` the buffers hold, one for each salt of `salts`
    /// (each check reads a sample of its own where it reads one), each on poisoned outputs
    /// after the resets and, in a cold cell, the flush every timed launch follows (a kernel
    /// that found L2 as no timed launch does could tell them apart), each checked (`what`
    /// says which); returns how many ran.
    fn alone(
        &mut self,
        s: &mut Session,
        ready: ReadyCell,
        armed: &mut Armed,
        (seed, earlier): (u64, u64),
        (salts, what): (RangeInclusive<u64>, &'static str),
    ) -> Result<u64, Failure> {
        let buffers = &ready.data.sets[0];
        let mut ran = 0;
        // Kept for the next region's (a failure fails the cell, and drops it).
        let mut timer = match self.alone.timer.take() {
            Some(timer) => timer,
            None => BehindAWait::new(s)?,
        };
        for k in salts {
            let launch = during("audit: a launch alone on an audited region's draw");
            let flush = &mut armed.flush;
            // Before each reading (a second, where the host outlasted the first wait, finds
            // its outputs poisoned again too).
            let before = || {
                buffers.poison_outputs().map_err(&launch)?;
                if buffers.resets() {
                    buffers.reset().map_err(&launch)?;
                }
                match flush.as_mut() {
                    Some(flush) => flush.run().map_err(&launch),
                    None => Ok(()),
                }
            };
            // Read behind a wait, as the GPU ran it: the work a region's launch shares
            // with the others, where a kernel shares it out.
            let (ns, dry) = timer.time(&mut armed.launch, before, what)?;
            let salt = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            self.check_alone(s, ready, (seed, earlier, salt))
                .map_err(|f| f.during(what))?;
            if !dry {
                self.alone.read_ns.push(ns);
            }
            (self.alone.ran, ran) = (self.alone.ran + 1, ran + 1);
        }
        self.alone.timer = Some(timer);
        Ok(ran)
    }
}
