//! A worker's time, cut into named contiguous phases on the host clock from the moment the
//! parent started the process: every microsecond until the last mark belongs to a phase,
//! but for a wait on another process, which is left out.

use crate::protocol::Span;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub struct Timeline {
    origin: Instant,
    last: Instant,
    phases: Vec<Span>,
}

impl Timeline {
    /// Starts at the process's spawn (`spawned_unix_ns`, from the parent) with the phase
    /// `process start` up to `entry`, the moment `main` began.
    pub fn from_spawn(spawned_unix_ns: u64, entry: Instant, entry_wall: SystemTime) -> Timeline {
        let spawned = UNIX_EPOCH + Duration::from_nanos(spawned_unix_ns);
        // A spawn time from another clock domain or in the future counts as zero.
        let before_entry = entry_wall.duration_since(spawned).unwrap_or_default();
        let origin = entry.checked_sub(before_entry).unwrap_or(entry);
        let mut t = Timeline {
            origin,
            last: origin,
            phases: vec![],
        };
        t.mark_at("process start", entry);
        t
    }

    /// Ends the current phase now, naming it.
    pub fn mark(&mut self, name: &str) {
        self.mark_at(name, Instant::now());
    }

    /// Ends the current phase at `at` (now, where `at` lies before its start), naming it:
    /// for a step whose end was taken while it ran.
    pub(in crate::worker) fn mark_at(&mut self, name: &str, at: Instant) {
        let at = at.max(self.last);
        let ms = |i: Instant| i.duration_since(self.origin).as_secs_f64() * 1e3;
        self.phases.push(Span {
            name: name.to_string(),
            start_ms: ms(self.last),
            ms: at.duration_since(self.last).as_secs_f64() * 1e3,
        });
        self.last = at;
    }

    /// Leaves the time since the last mark out (between one cell and the next).
    pub fn skip(&mut self) {
        self.last = Instant::now();
    }

    /// Leaves the time since the last mark out of this process's timeline altogether:
    /// later phases start where they would have without it (a wait for another process).
    pub fn exclude(&mut self) {
        let now = Instant::now();
        self.origin += now.duration_since(self.last);
        self.last = now;
    }

    /// The phases marked since the last take.
    pub fn take(&mut self) -> Vec<Span> {
        std::mem::take(&mut self.phases)
    }

    /// A phase's duration, the last time it was marked.
    pub fn ms_of(&self, name: &str) -> Option<f64> {
        self.phases
            .iter()
            .rev()
            .find(|p| p.name == name)
            .map(|p| p.ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_contiguous_in_order_and_start_at_the_spawn() {
        let wall = SystemTime::now();
        let entry = Instant::now();
        let spawned = wall.duration_since(UNIX_EPOCH).unwrap() - Duration::from_millis(5);
        let mut t = Timeline::from_spawn(spawned.as_nanos() as u64, entry, wall);
        t.mark("driver init");
        std::thread::sleep(Duration::from_millis(2));
        t.mark("context");
        let p = t.take();
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["process start", "driver init", "context"]);
        assert_eq!(p[0].start_ms, 0.0);
        assert!((p[0].ms - 5.0).abs() < 0.5, "{}", p[0].ms);
        for w in p.windows(2) {
            assert!(
                (w[0].start_ms + w[0].ms - w[1].start_ms).abs() < 1e-9,
                "gap in {p:?}"
            );
        }
        assert!(p[2].ms >= 2.0);
        assert!(t.take().is_empty());
    }

    #[test]
    fn excluded_time_shifts_the_later_phases() {
        let mut t = Timeline::from_spawn(0, Instant::now(), UNIX_EPOCH);
        t.mark("job received");
        std::thread::sleep(Duration::from_millis(5));
        t.exclude();
        t.mark("driver init");
        let p = t.take();
        let (job, init) = (&p[1], &p[2]);
        assert!(init.ms < 5.0, "{p:?}");
        assert!(
            (job.start_ms + job.ms - init.start_ms).abs() < 1e-9,
            "the wait left a gap: {p:?}"
        );
    }

    #[test]
    fn skipped_time_belongs_to_no_phase() {
        let mut t = Timeline::from_spawn(0, Instant::now(), UNIX_EPOCH);
        t.take();
        std::thread::sleep(Duration::from_millis(3));
        t.skip();
        t.mark("cell");
        let p = t.take();
        assert!(p[0].ms < 3.0, "{p:?}");
    }
}
