//! The seed each audited region draws: a draw of its own, or a probe over the held data.

use super::super::draw::PROBE;
use super::seeds::next_audited;
use super::Among;

impl Among {
    /// The seed an audited region draws: a draw no launch has seen, or, once the cell has run
    /// two such regions for each probe (its runs of lower rank first), a probe over the data
    /// the run's buffers hold (`PROBE` in `draw.rs`): the timed launches' data with a few of
    /// its elements drawn anew. A kernel that samples a few inputs to tell data it has seen,
    /// and keeps a result or skips work there, is checked on data it did not see, and fails.
    /// At most a third of the cell's audited regions ([`super::seeds::probe_next`]): each
    /// takes the place of one on a draw of its own, which the timing tests take and probes
    /// are left out of (a kept result that a probe's changed elements moved
    /// by less than the tolerance, a sum's say, passes its check and reads as a decoy).
    pub(super) fn audited_draw(&mut self) -> u64 {
        let probes = self.ran.iter().filter(|r| r.probe).count() as u64;
        let so_far = (self.before.0 + self.drawn - 1, self.before.1 + probes);
        let probing = !self.inputs.draws.is_empty();
        let seed = next_audited(self.held, (self.draw_seed, self.drawn), so_far, probing);
        self.drawn += u64::from(seed & PROBE == 0);
        seed
    }
}
