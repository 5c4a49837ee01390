//! What the regions read as: the timer's final readings (CUPTI's come after the samples),
//! the timed regions' first launches, and each region's first launch for the record.

use super::Among;
use crate::method::audit::Region;
use crate::method::confirm::Asked;
use crate::method::timer::Readings;
use crate::protocol::FirstLaunches;
use crate::worker::arm::Armed;
use std::time::Instant;

impl Among {
    /// The regions' readings as the timer finally read them (CUPTI's, from its records),
    /// with the gaps before them and the timed launches' where CUPTI gave them.
    pub(in crate::worker) fn read(&mut self, readings: Readings) {
        for (i, r) in self.ran.iter_mut().enumerate() {
            r.reading = readings.audits_ns.get(i).copied().unwrap_or(r.reading);
            r.gap = readings.audit_gaps_ns.get(i).copied().unwrap_or(f64::NAN);
            r.first = readings.audit_firsts_ns.get(i).copied().unwrap_or(r.first);
        }
        self.timed_gap = readings.timed_gap_ns;
        // CUPTI's first is the first timed region's: the steady ones follow it.
        if let Some(steady) = readings.firsts_ns.get(1..) {
            self.timed_firsts = steady.to_vec();
        }
    }

    /// The first launch of the steady timed region just read, where the timer read it.
    pub(in crate::worker) fn timed_first(&mut self, first_ns: f64) {
        if first_ns.is_finite() {
            self.timed_firsts.push(first_ns);
        }
    }

    /// Each region's place among the run's regions, with its reading.
    pub(in crate::worker) fn readings(&self) -> Vec<(usize, f64)> {
        self.ran.iter().map(|r| (r.place, r.reading)).collect()
    }

    /// Each region's first launch and the timed regions', where they were read.
    pub(super) fn firsts(&self) -> Option<FirstLaunches> {
        let of = |kind: Region| -> Vec<f64> {
            (self.ran.iter())
                .filter(|r| r.kind == kind && !r.probe && r.first.is_finite())
                .map(|r| r.first)
                .collect()
        };
        let timed = &self.timed_firsts;
        let median = crate::statistics::median(timed.clone())?;
        Some(FirstLaunches {
            audited: of(Region::Audit),
            decoys: of(Region::Decoy),
            pauses: of(Region::Pause),
            timed_count: timed.len() as u64,
            timed_median: median,
            timed_iqr: crate::statistics::iqr(timed),
            timed_max: timed.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// The regions after the samples that confirm what the run's regions read against the
    /// timed `samples` (see [`crate::method::confirm::confirming`]), as the timer read them:
    /// each as it ran, or where CUPTI reads them later, from its records of the run's
    /// `regions` so far (the GPU idle after the samples; none where they are not whole), the
    /// `first` confirmation or a later one. By CUPTI nothing confirmed them before: an honest
    /// argmax of two speeds cold on an H200 (16.4 µs, and 17.3 µs in a fifth of its launches)
    /// had two of its three staged regions slow and its three pauses fast, and was suspect.
    /// The look is the audit's time. A run that ran no region has none to confirm, and reads
    /// no records for them (the read took 0.7 ms of such an interleaved run of 40 samples of
    /// `trust`'s persistent matmul on an H200 at a0d9e90).
    pub(in crate::worker) fn confirmation(
        &mut self,
        armed: &Armed,
        samples: &[f64],
        (regions, first): (usize, bool),
    ) -> Vec<Region> {
        if !self.judged || self.ran.is_empty() {
            return Vec::new();
        }
        let start = Instant::now();
        let places = (&self.readings()[..], &self.untimed[..]);
        let by_records = (armed.timer).so_far(&armed.entries, regions, places);
        let (samples, readings, as_they_ran) = match by_records {
            Ok(Some((timed, audits))) if audits.len() == self.ran.len() => (timed, audits, false),
            _ => (
                samples.to_vec(),
                self.ran.iter().map(|r| r.reading).collect(),
                true,
            ),
        };
        let timed = crate::statistics::median(samples);
        let read =
            [Region::Audit, Region::Decoy, Region::Pause].map(|k| self.of_kind(k, &readings));
        let staged_alike = self.pause_draws || self.inputs.draws.is_empty();
        self.spend(start.elapsed());
        let asked = Asked { first, as_they_ran };
        crate::method::confirm::confirming(read, timed, staged_alike, asked)
    }
}
