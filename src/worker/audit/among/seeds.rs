//! The seeds a run's regions and draws come from: recorded, drawn anew each run.

use super::super::draw::PROBE;
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

/// The seed of draw `k` from `seed` (draw 0: the timed launches' first data): never with
/// [`PROBE`]'s bit, which marks a probe over a draw ([`probe_over`]).
pub(super) fn seed_of(seed: u64, k: u64) -> u64 {
    fnv1a(&[seed.to_le_bytes(), k.to_le_bytes()].concat()) & !PROBE
}

/// The probe over the draw of `held` (a draw's seed, not a probe's): its data but for
/// 64-128 groups of 16 bytes of each argument, which the probe draws anew (`kernels/audit.cu`).
pub(super) fn probe_over(held: u64) -> Option<u64> {
    (held & PROBE == 0).then_some(held | PROBE)
}

/// Whether the next audited region may be a probe, where `drawn` audited regions on draws of
/// their own and `probes` probes came before it (a cell's runs counted in rank order): two of
/// the former for each probe, so that probes are at most a third of those regions and the
/// lower median of the cell's audited readings is a whole draw's.
pub(super) fn probe_next(drawn: u64, probes: u64) -> bool {
    probes < drawn / 2
}

/// Of `audited` audited regions in turn, those on draws of their own and the probes
/// ([`probe_next`]): what a cell's runs of lower rank hold before a run's own, which count
/// with them (a cell of runs of one audited region each holds a probe so).
pub(super) fn tally(audited: u64) -> (u64, u64) {
    (0..audited).fold((0, 0), |(drawn, probes), _| {
        match probe_next(drawn, probes) {
            true => (drawn, probes + 1),
            false => (drawn + 1, probes),
        }
    })
}

/// The seed of a run's next audited region, where the cell's audited regions so far (its
/// runs' of lower rank, then its own) drew `tally` (draws of their own, probes) and the run
/// made `drawn` draws from `draw_seed` (the held data's included): the probe over `held`
/// where [`probe_next`] allows one and the run has inputs to draw (`probing`), else the
/// run's next draw.
pub(super) fn next_audited(
    held: u64,
    (draw_seed, drawn): (u64, u64),
    (draws, probes): (u64, u64),
    probing: bool,
) -> u64 {
    match probe_over(held) {
        Some(probe) if probing && probe_next(draws, probes) => probe,
        _ => seed_of(draw_seed, drawn),
    }
}

/// The seeds of a run's first `audited` audited regions (see [`next_audited`]), which a
/// Python reference may compute ahead: each region's seed is what the buffers hold after it
/// (`held` before any), as the run's regions leave it (`Among::region`).
pub(super) fn first_seeds(held: u64, draw_seed: u64, before: (u64, u64), audited: u64) -> Vec<u64> {
    let (mut held, mut drawn, mut so_far) = (held, 1, before);
    let mut next = || {
        held = next_audited(held, (draw_seed, drawn), so_far, true);
        match held & PROBE {
            0 => (drawn, so_far.0) = (drawn + 1, so_far.0 + 1),
            _ => so_far.1 += 1,
        }
        held
    };
    (0..audited).map(|_| next()).collect()
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
    fn a_probe_is_over_a_draw_and_at_most_a_third_of_the_audited_regions() {
        for k in 0..1000 {
            let draw = seed_of(0x5eed, k);
            assert_eq!(draw & PROBE, 0, "a draw's seed never marks a probe");
            let probe = probe_over(draw).unwrap();
            assert_eq!(probe & !PROBE, draw, "a probe names the draw it is over");
            assert_eq!(probe_over(probe), None, "no probe over a probe");
        }
        let (mut drawn, mut probes) = (0u64, 0u64);
        let mut kinds = String::new();
        for n in 1..=30u64 {
            match probe_next(drawn, probes) {
                true => (probes, kinds) = (probes + 1, kinds + "p"),
                false => (drawn, kinds) = (drawn + 1, kinds + "d"),
            }
            // The lower median of n readings is the ((n - 1) / 2 + 1)th lowest: a draw's,
            // even where every probe read lowest.
            assert!(probes <= (n - 1) / 2, "{kinds}");
            assert!(3 * probes <= n, "{kinds}");
        }
        assert!(kinds.starts_with("ddpddp"), "{kinds}");
        assert_eq!(tally(30), (drawn, probes));
    }

    #[test]
    fn a_cell_of_runs_of_one_audited_region_each_holds_a_probe() {
        let (draw_seed, held) = (0xd5, seed_of(0xd5, 0));
        // One run of three: two draws, then the probe.
        let one = first_seeds(held, draw_seed, (0, 0), 3);
        assert_eq!(one[..2], [seed_of(draw_seed, 1), seed_of(draw_seed, 2)]);
        assert_eq!(one[2], seed_of(draw_seed, 2) | PROBE, "over the last draw");
        // Runs of one each: the third run's is the probe, the fourth's and fifth's draws.
        let run = |rank: u64| first_seeds(held, draw_seed, tally(rank), 1)[0];
        assert_eq!(run(0), seed_of(draw_seed, 1));
        assert_eq!(run(1), seed_of(draw_seed, 1), "its own run's first draw");
        assert_eq!(run(2), held | PROBE, "over the timed data");
        assert_eq!(run(3) & PROBE, 0);
        assert_eq!(run(4) & PROBE, 0);
        assert_eq!(run(5), held | PROBE);
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
