//! The seed each audited region draws: a draw of its own, or a probe over the held data.

use super::seeds::{probe_next, probe_over, seed_of};
use super::Among;

impl Among {
    /// The seed an audited region draws: a draw no launch has seen, or, once a run has run
    /// two such regions for each probe, a probe over the data the buffers hold (`PROBE` in
    /// `draw.rs`): the timed launches' data with a few of its elements drawn anew. A kernel
    /// that samples a few inputs to tell data it has seen, and keeps a result or skips work
    /// there, is checked on data it did not see, and fails. At most a third of the audited
    /// regions: each takes the place of one on a draw of its own, which the timing tests
    /// take and probes are left out of (a kept result that a probe's changed elements moved
    /// by less than the tolerance, a sum's say, passes its check and reads as a decoy).
    pub(super) fn audited_draw(&mut self) -> u64 {
        let probe = probe_over(self.held).filter(|_| !self.inputs.draws.is_empty());
        let probes = self.ran.iter().filter(|r| r.probe).count() as u64;
        match probe {
            Some(probe) if probe_next(self.drawn - 1, probes) => probe,
            _ => {
                self.drawn += 1;
                seed_of(self.draw_seed, self.drawn - 1)
            }
        }
    }
}
