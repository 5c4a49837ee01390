//! Audited regions among the timed ones. Before the samples: the audit's inputs drawn and
//! kept on the device, a copy of the timed inputs, and the positions, drawn from a seed.
//! At each position the region runs as a timed one does (fresh data, resets, flush, the
//! timer), but with the audit's inputs copied into the buffers first; then, outside any
//! timed region, its output is checked, its inputs read back, and the timed inputs copied
//! back. What the next timed region meets differs (it follows a copy and a check), so it
//! is left out of the comparison.

use super::{check_on_new_inputs, inputs_unchanged, record, spent, unjudged, Staged};
use crate::cuda::DeviceBuffer;
use crate::experiment::knobs::timer::TimerKind;
use crate::experiment::Kernel;
use crate::method::audit::{judge, AUDITS_PER_RUN, FALSE_ALARM};
use crate::plan::Cell;
use crate::protocol::{AuditRecord, AuditsAmong, CellRecord};
use crate::worker::arm::{Armed, Starts};
use crate::worker::buffers::Buffers;
use crate::worker::failure::{during, Failure};
use crate::worker::inputs::fnv1a;
use crate::worker::prepare::Data;
use crate::worker::Session;
use rand::{rngs::SmallRng, seq::index::sample, SeedableRng};
use std::time::{Duration, Instant};

/// A run's audited regions: where they go, what they read, what they read as.
pub(in crate::worker) struct Among {
    def: Kernel,
    staged: Staged,
    seed: u64,
    /// The steady samples (0-based) an audited region runs just before, ascending.
    positions: Vec<usize>,
    /// Per argument: a copy of the timed inputs, to copy back after each audited region
    /// (None: uploaded from the host instead, or nothing to restore).
    timed: Vec<Option<DeviceBuffer>>,
    /// Each audited region's place among all the run's regions (the first timed one is 0),
    /// the steady sample it ran before, and its reading (NaN until CUPTI's records give it).
    regions: Vec<(usize, usize, f64)>,
    /// The last check's account.
    check: String,
    cost: Duration,
}

impl Among {
    /// Draws the audit's inputs and positions for run `process` of `cell`, and keeps a copy
    /// of the timed inputs to restore.
    pub(super) fn stage(
        s: &mut Session,
        cell: &Cell,
        def: &Kernel,
        data: &Data,
        process: u32,
    ) -> Result<Among, Failure> {
        let start = Instant::now();
        let staged = Staged::draw(s, cell, def, data)?;
        let buffers = &data.sets[0];
        let restore = data.fresh.is_empty() && !staged.changed.is_empty();
        let timed = (0..cell.launch.args.len())
            .map(|i| {
                let buf = buffers.buffer(i).filter(|b| b.in_device_memory());
                match (restore && staged.changed.contains(&i), buf) {
                    (true, Some(buf)) => match DeviceBuffer::alloc(buf.bytes()) {
                        Ok(copy) => {
                            copy.copy_from(buf)
                                .map_err(during("audit: keeping the timed inputs"))?;
                            Ok(Some(copy))
                        }
                        Err(_) => Ok(None),
                    },
                    _ => Ok(None),
                }
            })
            .collect::<Result<_, Failure>>()?;
        let seed = fnv1a(format!("{}#{process}", cell.id).as_bytes());
        let positions = positions(seed, cell.knobs.samples_per_run() as usize);
        s.timeline.mark("audit inputs");
        let mut cost = Duration::ZERO;
        spent(&mut cost, start);
        Ok(Among {
            def: def.clone(),
            staged,
            seed,
            positions,
            timed,
            regions: Vec::new(),
            check: String::new(),
            cost,
        })
    }

    /// Whether an audited region runs before steady sample `index`.
    pub(in crate::worker) fn due(&self, index: usize) -> bool {
        self.positions.contains(&index)
    }

    /// The positions no region has run at yet: a loop that stopped early runs them after.
    pub(in crate::worker) fn pending(&self) -> usize {
        self.positions.len() - self.regions.len()
    }

    /// Runs one audited region as region `place` of the run, before steady sample `before`,
    /// checks it and restores the timed inputs.
    pub(in crate::worker) fn region<'b>(
        &mut self,
        s: &mut Session,
        cell: &Cell,
        data: &'b Data,
        armed: &mut Armed<'b>,
        rec: &mut CellRecord,
        (place, before): (usize, usize),
    ) -> Result<(), Failure> {
        let start = Instant::now();
        let stash = s.audit_stash.take();
        let staged = &self.staged;
        let stage = |b: &Buffers| staged.stage(stash.as_ref(), b);
        let mut starts = Starts::new(start, 1);
        let timed = armed.time_next(data, &mut starts, None, "audited launch", Some(&stage));
        s.audit_stash = stash;
        let reading = timed?;
        rec.kernel_launches += armed.body.kernel_launches();
        self.regions.push((place, before, reading));
        // The check runs among CUPTI's records of the timed launches, where it records them.
        let recorded = (cell.knobs.timer == TimerKind::Cupti).then(|| armed.entries.clone());
        let checked = self.check_and_restore(s, cell, data, recorded.as_deref());
        spent(&mut self.cost, start);
        self.check = checked?;
        Ok(())
    }

    /// The region's output checked on the audit's inputs and its inputs read back, then
    /// the timed inputs copied back.
    fn check_and_restore(
        &self,
        s: &mut Session,
        cell: &Cell,
        data: &Data,
        recorded: Option<&[String]>,
    ) -> Result<String, Failure> {
        let buffers = &data.sets[0];
        let check = check_on_new_inputs(s, cell, &self.def, data, &self.staged, recorded)?;
        let stash = s.audit_stash.take();
        let copies: Vec<Option<&DeviceBuffer>> = (self.staged.unwritten.iter())
            .map(|&i| stash.as_ref().and_then(|st| st.copies.get(i)?.as_ref()))
            .collect();
        let args = &cell.launch.args;
        let unchanged = inputs_unchanged(s, &self.def, args, buffers, &self.staged, &copies);
        s.audit_stash = stash;
        unchanged?;
        if data.fresh.is_empty() {
            for &i in &self.staged.changed {
                let (Some(buf), Some(host)) = (buffers.buffer(i), data.timed[i].as_deref()) else {
                    continue;
                };
                match &self.timed[i] {
                    Some(copy) => buf.copy_from(copy),
                    None => buf.upload(host),
                }
                .map_err(during("audit: restoring the timed inputs"))?;
            }
        }
        Ok(check)
    }

    /// The regions' readings as the timer finally read them (CUPTI's, from its records).
    pub(in crate::worker) fn read(&mut self, readings: &[f64]) {
        for (region, &t) in self.regions.iter_mut().zip(readings) {
            region.2 = t;
        }
    }

    /// The record: the regions' readings set against the run's timed samples less those
    /// right after an audited region.
    pub(super) fn finish(self, s: &mut Session, cell: &Cell, rec: &CellRecord) -> AuditRecord {
        s.timeline.mark("audit check");
        let readings: Vec<f64> = self.regions.iter().map(|(.., t)| *t).collect();
        // The timed sample right after each audited region.
        let after: Vec<usize> = self.regions.iter().map(|(_, before, _)| *before).collect();
        let timed: Vec<f64> = (rec.samples_ns.iter().enumerate())
            .filter(|(i, _)| !after.contains(i))
            .map(|(_, t)| *t)
            .collect();
        // Each run of the cell has its share of the cell's false-alarm rate.
        let alpha = FALSE_ALARM / f64::from(cell.runs().max(1));
        let unjudged = unjudged(cell);
        let judged = match unjudged {
            None => judge(&timed, &readings, alpha),
            Some(_) => None,
        };
        let mut audit = record(self.check.clone(), &self.staged, self.cost);
        audit.launch_ns = crate::median::median(readings.clone());
        audit.suspect = judged.as_ref().and_then(|j| j.suspect.clone());
        audit.unjudged = unjudged;
        audit.among = Some(AuditsAmong {
            seed: self.seed,
            positions: self.regions.iter().map(|(_, p, _)| *p as u64).collect(),
            readings_ns: readings,
            alpha,
            p_value: judged.as_ref().map(|j| j.p_value),
            detection_limit: judged.and_then(|j| j.detection_limit),
        });
        audit
    }

    /// Each audited region's place among the run's regions, with its reading.
    pub(in crate::worker) fn readings(&self) -> Vec<(usize, f64)> {
        self.regions
            .iter()
            .map(|&(place, _, t)| (place, t))
            .collect()
    }
}

/// Up to [`AUDITS_PER_RUN`] steady samples an audited region runs before, drawn from `seed`
/// uniformly among the arrangements that keep them apart: never the first (a timed region
/// precedes each), never two side by side (the timed sample after each is left out of the
/// comparison, and must be a timed one).
fn positions(seed: u64, samples: usize) -> Vec<usize> {
    let count = AUDITS_PER_RUN.min(samples.saturating_sub(1) / 2);
    let mut rng = SmallRng::seed_from_u64(seed);
    // `count` of `samples - count` places, each then moved on by the audits before it.
    let mut drawn = sample(&mut rng, samples - count, count).into_vec();
    drawn.sort_unstable();
    drawn.iter().enumerate().map(|(i, y)| 1 + y + i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_apart_after_the_first_sample_and_follow_the_seed() {
        for samples in [3, 4, 9, 10, 20, 100, 10_000] {
            let p = positions(7, samples);
            assert_eq!(p.len(), AUDITS_PER_RUN.min((samples - 1) / 2), "{samples}");
            assert!(p.iter().all(|&i| i >= 1 && i < samples), "{p:?}");
            assert!(p.windows(2).all(|w| w[1] >= w[0] + 2), "{p:?}");
            assert_eq!(p, positions(7, samples));
        }
        assert_ne!(positions(7, 10_000), positions(8, 10_000));
        assert!(positions(7, 2).is_empty());
    }
}
