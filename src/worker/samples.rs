//! The samples an audit's check compares of a large output: its kernel was checked in full
//! before anything was timed, and a sample drawn from the audit's seed, which no kernel can
//! know, catches one that skips a share of its output in the audited launches.

use crate::experiment::Dtype;

/// An audit compares an output of more elements than this at a sample (its kernel was
/// checked in full before anything was timed)...
const SAMPLED_ABOVE: usize = 1 << 16;
/// ...of this many stretches of this many elements, drawn from the audit's seed, which no
/// kernel can know (each stretch is one read back of each output).
const SAMPLE_STRETCHES: usize = 16;
const STRETCH: usize = 1024;

/// The element ranges of an output of `len` elements an audit compares: a sample drawn
/// from `seed`, ascending and apart, where the output is large; None: all of it.
pub(super) fn read_back(len: usize, seed: u64) -> Option<Vec<std::ops::Range<usize>>> {
    use rand::{rngs::SmallRng, SeedableRng};
    if len <= SAMPLED_ABOVE {
        return None;
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let slots = len / STRETCH;
    let mut picked = rand::seq::index::sample(&mut rng, slots, SAMPLE_STRETCHES).into_vec();
    picked.sort_unstable();
    Some(
        picked
            .into_iter()
            .map(|s| s * STRETCH..(s + 1) * STRETCH)
            .collect(),
    )
}

/// An audit compares an output of more elements than this on the GPU at a sample (its
/// kernel was checked in full before anything was timed): in full, the compare of a 256 MiB
/// softmax's output took 0.35 ms an audited check on an H200, a third of its check...
const GPU_SAMPLED_ABOVE: usize = 1 << 24;
/// ...of this many groups of 16 bytes, each drawn at random from the audit's seed, which no
/// kernel can know: a kernel that skips a share q of its output's elements passes with a
/// chance of about (1 - q)^(4 * GPU_SAMPLE_GROUPS) for f32, nothing for a q of 1e-4.
const GPU_SAMPLE_GROUPS: u64 = 1 << 18;

/// The compare's sample of an output of `len` elements of `dtype` (`equal::out_of_tolerance`:
/// its key and its number of groups), drawn from `seed`, where the output is large.
pub(super) fn on_gpu(len: usize, dtype: Dtype, seed: u64) -> Option<(u64, u64)> {
    let groups = len.div_ceil(16 / dtype.size()) as u64;
    (len > GPU_SAMPLED_ABOVE && groups > GPU_SAMPLE_GROUPS).then_some((seed, GPU_SAMPLE_GROUPS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audit_samples_only_a_large_output_and_draws_each_sample_from_its_seed() {
        // `trust-schedule`'s softmax: 67M f32 elements; a matmul's 1M are compared whole.
        assert_eq!(on_gpu(1 << 26, Dtype::F32, 7), Some((7, GPU_SAMPLE_GROUPS)));
        assert_eq!(on_gpu(1 << 20, Dtype::F32, 7), None);
        assert_eq!(on_gpu(GPU_SAMPLED_ABOVE, Dtype::F32, 7), None);
        let (a, b) = (read_back(1 << 20, 1), read_back(1 << 20, 2));
        assert!(a.is_some() && a != b);
        assert_eq!(read_back(SAMPLED_ABOVE, 1), None);
    }
}
