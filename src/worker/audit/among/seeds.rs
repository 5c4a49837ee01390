//! The seeds a run's regions and draws come from: recorded, drawn anew each run.

use crate::worker::inputs::fnv1a;

/// The seed of run `process` of cell `id`'s regions, from the run's own seed (drawn anew each
/// run): places drawn from the cell alone were the same every run, so a kernel given the
/// places an earlier run recorded could do all its work at its audited regions and decoys
/// alone and skip at its pauses and timed launches, which no test of a hot cell sets apart.
pub(super) fn schedule_seed(id: &str, process: u32, run_seed: u64) -> u64 {
    fnv1a(format!("{id}#{process}#{run_seed}").as_bytes())
}

/// The seed of a run's draws, from its schedule's ([`schedule_seed`]: the cell's, the run's
/// and the run's own seed): no other cell or run draws the same. Cells of one draw key once
/// shared a run's draws, so that a reference kernel's outputs on an audited draw served them
/// all; but a cell's kernel can keep what it saw beyond its module (the device heap that
/// `malloc` serves outlives it), and a result cache kept there hit on the audited draws of
/// every later cell of the key: on an H200 one passed 31% faster than the honest kernel, over
/// its 22.6% limit.
pub(super) fn draw_seed(schedule_seed: u64) -> u64 {
    seed_of(schedule_seed, DRAW_SEEDS)
}

/// The draws' seeds follow from their family's through this one.
const DRAW_SEEDS: u64 = u64::MAX;

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
        let mut schedule = Schedule::new(seed, (200, 200), (1, 0), true);
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

    #[test]
    fn no_two_cells_or_runs_draw_alike() {
        let draws = |id: &str, process, run| draw_seed(schedule_seed(id, process, run));
        let id = "argmax/skip=25/hot";
        assert_eq!(draws(id, 0, 7), draws(id, 0, 7), "a recorded seed replays");
        assert_ne!(draws(id, 0, 7), draws(id, 0, 8), "another run");
        assert_ne!(draws(id, 0, 7), draws(id, 1, 7), "another run of the cell");
        let same_inputs = "argmax/skip=25/hot-1000";
        assert_ne!(draws(id, 0, 7), draws(same_inputs, 0, 7), "another cell");
        assert_ne!(
            draws(id, 0, 7),
            schedule_seed(id, 0, 7),
            "apart from the schedule's"
        );
    }
}
