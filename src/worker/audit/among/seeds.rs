//! The seeds a run's regions and draws come from: recorded, drawn anew each run.

use crate::worker::inputs::fnv1a;

/// The seed of run `process` of cell `id`'s regions, from the run's own seed (drawn anew each
/// run): places drawn from the cell alone were the same every run, so a kernel given the
/// places an earlier run recorded could do all its work at its audited regions and decoys
/// alone and skip at its pauses and timed launches, which no test of a hot cell sets apart.
pub(super) fn schedule_seed(id: &str, process: u32, run_seed: u64) -> u64 {
    fnv1a(format!("{id}#{process}#{run_seed}").as_bytes())
}

/// The draws' seeds follow from the schedule's through this one, apart from its places.
pub(super) const DRAW_SEEDS: u64 = u64::MAX;

/// The seed of draw `k` from `seed` (draw 0: the timed launches' first data).
pub(super) fn seed_of(seed: u64, k: u64) -> u64 {
    fnv1a(&[seed.to_le_bytes(), k.to_le_bytes()].concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::audit::Schedule;
    use std::collections::HashSet;

    /// The places (before sample, kind) a run's schedule of 200 samples draws from `seed`.
    fn places(seed: u64) -> String {
        let mut schedule = Schedule::new(seed, 200, 1, 0);
        let due = (0..200).filter_map(|i| schedule.due(i).map(|(kind, _)| (i, kind)));
        format!("{:?}", due.collect::<Vec<_>>())
    }

    #[test]
    fn a_cells_regions_lie_elsewhere_in_every_run() {
        let id = "replays-schedule/n=512 skip=10/hot";
        let again = |run| places(schedule_seed(id, 0, run));
        assert_eq!(again(7), again(7), "a recorded seed replays its run");
        let runs: HashSet<String> = (0..20).map(again).collect();
        assert_eq!(runs.len(), 20, "twenty runs, twenty schedules");
    }
}
