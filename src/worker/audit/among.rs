//! Audited regions and decoys among the timed ones. Before the steady samples: the audit's
//! inputs drawn, both data sets (timed and audit) kept on the device, and the positions drawn
//! from a seed. At each position the region runs as a timed one does (resets, flush, the
//! timer), after a copy into the buffers' inputs:
//! - an audited region gets the other data set than the buffers hold (new to the kernel),
//!   is checked on it afterwards (outside any timed region), its inputs read back; the
//!   timed regions after it keep that data, so no copy follows it;
//! - a decoy gets the data set the buffers already hold: the same copy, the same cache and
//!   pause, but nothing new to the kernel. An honest kernel reads the same in both; one that
//!   does all its work only on inputs it has not seen is slower in the audited ones.

use super::{check_on, inputs_unchanged, record, spent, unjudged, Draw, Snapshot, Staged};
use crate::cuda::DeviceBuffer;
use crate::experiment::knobs::timer::TimerKind;
use crate::method::audit;
use crate::plan::Cell;
use crate::protocol::{AuditRecord, AuditsAmong, CellRecord};
use crate::worker::arm::{Armed, Starts};
use crate::worker::buffers::Buffers;
use crate::worker::failure::Failure;
use crate::worker::inputs::{fnv1a, HostInputs};
use crate::worker::prepare::{Data, ReadyCell};
use crate::worker::Session;
use rand::{rngs::SmallRng, seq::index::sample, SeedableRng};
use std::time::{Duration, Instant};

/// What a region among the timed ones is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Audit,
    Decoy,
}

/// A run's audited regions and decoys: where they go, what they read, what they read as.
pub(in crate::worker) struct Among {
    staged: Staged,
    seed: u64,
    /// The steady samples (0-based) a region runs just before, ascending, and its kind.
    plan: Vec<(usize, Kind)>,
    /// Whether the buffers hold the audit's data now (else the timed data).
    holds_audit_data: bool,
    /// Each region run: its place among all the run's regions (the first timed one is 0),
    /// the steady sample it ran before, its kind and its reading (NaN until CUPTI's records
    /// give it).
    regions: Vec<(usize, usize, Kind, f64)>,
    /// Per data set (timed, audit): its output once checked, for later audited regions on it.
    checked: [Option<Snapshot>; 2],
    /// The last full check's account.
    check: String,
    cost: Duration,
    /// Of `cost`: the regions run, and the checks after the audited ones.
    regions_time: Duration,
    checks_time: Duration,
}

impl Among {
    /// Draws the audit's inputs and the positions for run `process` of `cell`; `checked`:
    /// the checked launch's output, kept.
    pub(super) fn stage(
        s: &mut Session,
        ready: ReadyCell,
        process: u32,
        checked: Option<Snapshot>,
    ) -> Result<Among, Failure> {
        let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
        let start = Instant::now();
        let staged = Staged::draw(s, cell, def, data)?;
        let mut audited = None;
        if let Some(stash) = s.audit_stash.as_mut() {
            stash.timed(&data.sets[0], &data.timed)?;
            audited = stash.audited.take();
        }
        let seed = fnv1a(format!("{}#{process}", cell.id).as_bytes());
        let samples = cell.knobs.samples_per_run() as usize;
        let counts = audit::regions(samples, cell.runs() as usize, process as usize);
        let plan = plan(seed, samples, counts);
        s.timeline.mark("audit inputs");
        let mut cost = Duration::ZERO;
        spent(&mut cost, start);
        Ok(Among {
            staged,
            seed,
            plan,
            holds_audit_data: false,
            regions: Vec::new(),
            checked: [checked, audited],
            check: String::new(),
            cost,
            regions_time: Duration::ZERO,
            checks_time: Duration::ZERO,
        })
    }

    /// Whether a region runs before steady sample `index`.
    pub(in crate::worker) fn due(&self, index: usize) -> bool {
        self.plan.iter().any(|(i, _)| *i == index)
    }

    /// The regions not run yet: a loop that stopped early runs them after.
    pub(in crate::worker) fn pending(&self) -> usize {
        self.plan.len() - self.regions.len()
    }

    /// Runs the next region (audited or decoy) as region `place` of the run, before steady
    /// sample `before`; an audited one is then checked.
    pub(in crate::worker) fn region<'b>(
        &mut self,
        s: &mut Session,
        ready: ReadyCell<'b>,
        armed: &mut Armed<'b>,
        rec: &mut CellRecord,
        (place, before): (usize, usize),
    ) -> Result<(), Failure> {
        let ReadyCell { cell, data, .. } = ready;
        let start = Instant::now();
        let kind = self.plan[self.regions.len()].1;
        // An audited region gets the other data set, a decoy the one the buffers hold.
        let audit_data = self.holds_audit_data != (kind == Kind::Audit);
        let mut stash = s.audit_stash.take();
        let copies: &[Option<DeviceBuffer>] = match (stash.as_mut(), audit_data) {
            (Some(st), true) => &st.copies,
            (Some(st), false) => st.timed(&data.sets[0], &data.timed)?,
            (None, _) => &[],
        };
        let host = self.host(data, audit_data);
        let stage = |b: &Buffers| self.staged.copy_in(b, copies, host);
        let mut starts = Starts::new(start, 1);
        let what = "audited launch";
        let timed = armed.time_next(data, &mut starts, None, what, Some(&stage));
        s.audit_stash = stash;
        let reading = timed?;
        spent(&mut self.regions_time, start);
        rec.kernel_launches += armed.body.kernel_launches();
        self.regions.push((place, before, kind, reading));
        self.holds_audit_data = audit_data;
        if kind == Kind::Audit {
            // The check runs among CUPTI's records of the timed launches, where it records.
            let recorded = (cell.knobs.timer == TimerKind::Cupti).then(|| armed.entries.clone());
            let checking = Instant::now();
            let checked = self.check(s, ready, recorded.as_deref());
            spent(&mut self.checks_time, checking);
            spent(&mut self.cost, start);
            if let Some(account) = checked? {
                self.check = account;
            }
        } else {
            spent(&mut self.cost, start);
        }
        Ok(())
    }

    /// The host data of the audit's draw, or of the timed one.
    fn host<'d>(&'d self, data: &'d Data, audit_data: bool) -> &'d HostInputs {
        match audit_data {
            true => &self.staged.new,
            false => &data.timed,
        }
    }

    /// The audited region's output checked on the data set it was given (against the
    /// output of an earlier check on it, where that one is kept, else in full: then the
    /// account), and its inputs read back.
    fn check(
        &mut self,
        s: &mut Session,
        ready: ReadyCell,
        recorded: Option<&[String]>,
    ) -> Result<Option<String>, Failure> {
        let (cell, data, def) = (ready.cell, ready.data, ready.kernel()?);
        let (audit, timed) = (self.staged.as_draw(), Draw::timed(data));
        let draws = match self.holds_audit_data {
            true => (audit, timed),
            false => (timed, audit),
        };
        let kept = &self.checked[usize::from(self.holds_audit_data)];
        let check = match kept {
            Some(snapshot) if snapshot.matches(s, &data.sets[0])? => None,
            _ => {
                let changed = &self.staged.changed;
                let account = check_on(s, ready, draws, changed, recorded)?;
                if kept.is_none() {
                    let taken = Snapshot::take(def, &data.sets[0])?;
                    self.checked[usize::from(self.holds_audit_data)] = taken;
                }
                Some(account)
            }
        };
        let stash = s.audit_stash.take();
        let held = stash.as_ref().map(|st| match self.holds_audit_data {
            true => &st.copies[..],
            false => st.timed.as_deref().unwrap_or_default(),
        });
        let unwritten = &self.staged.unwritten;
        let copies: Vec<Option<&DeviceBuffer>> = (unwritten.iter())
            .map(|&i| held.and_then(|h| h.get(i)?.as_ref()))
            .collect();
        let args = &cell.launch.args;
        let host = (&unwritten[..], draws.0.host);
        let unchanged = inputs_unchanged(s, def, args, &data.sets[0], host, &copies);
        s.audit_stash = stash;
        unchanged.map(|()| check)
    }

    /// The regions' readings as the timer finally read them (CUPTI's, from its records).
    pub(in crate::worker) fn read(&mut self, readings: &[f64]) {
        for (region, &t) in self.regions.iter_mut().zip(readings) {
            region.3 = t;
        }
    }

    /// Each region's place among the run's regions, with its reading.
    pub(in crate::worker) fn readings(&self) -> Vec<(usize, f64)> {
        self.regions
            .iter()
            .map(|&(place, .., t)| (place, t))
            .collect()
    }

    /// The record: the audited regions' and the decoys' places and readings. The audit
    /// data's checked output goes back to the point's stash, for the point's next cell.
    pub(super) fn finish(mut self, s: &mut Session, cell: &Cell) -> AuditRecord {
        s.timeline.mark("audit check");
        if let Some(stash) = s.audit_stash.as_mut() {
            stash.audited = self.checked[1].take();
        }
        let of = |kind: Kind| -> (Vec<u64>, Vec<f64>) {
            (self.regions.iter())
                .filter(|r| r.2 == kind)
                .map(|r| (r.1 as u64, r.3))
                .unzip()
        };
        let (positions, readings_ns) = of(Kind::Audit);
        let (decoy_positions, decoys_ns) = of(Kind::Decoy);
        // Every audited output matched one checked in full earlier at this point.
        let check = match self.check.is_empty() && !positions.is_empty() {
            true => "equal byte for byte to the output of the point's first full check on its data"
                .to_string(),
            false => self.check.clone(),
        };
        let mut audit = record(check, &self.staged, self.cost);
        audit.regions_s = self.regions_time.as_secs_f64();
        audit.checks_s = self.checks_time.as_secs_f64();
        audit.launch_ns = crate::median::median(readings_ns.clone());
        audit.unjudged = unjudged(cell);
        audit.among = Some(AuditsAmong {
            seed: self.seed,
            positions,
            readings_ns,
            decoy_positions,
            decoys_ns,
        });
        audit
    }
}

/// `audits` audited regions and `decoys` decoys among `samples` steady samples
/// ([`audit::regions`]), drawn from `seed` uniformly among the arrangements that keep them apart: never before the
/// first (a timed region precedes each), never two side by side (each follows a timed
/// region, as a timed one does). Which are audited is drawn too.
fn plan(seed: u64, samples: usize, (audits, decoys): (usize, usize)) -> Vec<(usize, Kind)> {
    let count = audits + decoys;
    let mut rng = SmallRng::seed_from_u64(seed);
    // `count` of `samples - count` places, each then moved on by the regions before it.
    let mut drawn = sample(&mut rng, samples - count, count).into_vec();
    drawn.sort_unstable();
    let audited = sample(&mut rng, count, audits).into_vec();
    (drawn.iter().enumerate())
        .map(|(i, y)| {
            let kind = match audited.contains(&i) {
                true => Kind::Audit,
                false => Kind::Decoy,
            };
            (1 + y + i, kind)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_apart_after_the_first_sample_and_follow_the_seed() {
        for samples in [3, 4, 9, 10, 17, 20, 100, 200, 10_000] {
            let (audits, decoys) = audit::regions(samples, 1, 0);
            let p = plan(7, samples, (audits, decoys));
            assert_eq!(p.len(), audits + decoys);
            assert_eq!(p.iter().filter(|(_, k)| *k == Kind::Audit).count(), audits);
            assert!(p.iter().all(|&(i, _)| i >= 1 && i < samples), "{p:?}");
            assert!(p.windows(2).all(|w| w[1].0 >= w[0].0 + 2), "{p:?}");
            assert_eq!(p, plan(7, samples, (audits, decoys)));
        }
        let counts = audit::regions(10_000, 1, 0);
        assert_ne!(plan(7, 10_000, counts), plan(8, 10_000, counts));
        assert!(plan(7, 2, audit::regions(2, 1, 0)).is_empty());
    }
}
