//! `--shard i/N`: the i-th of N disjoint parts of a plan, balanced by the cells' times in a
//! previous run where there is one (else by the plan's model), so that N machines or GPUs
//! finish together. A run records its part's cell ids, so a resume, a re-render and `merge` see
//! exactly the cells it was given.

use super::cost::Estimate;
use super::Plan;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Part `index` (from 0) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// A `--shard` that is not `i/N` with `i < N`, as written: clap prints it as the
/// argument's error.
#[derive(Debug, thiserror::Error)]
#[error("--shard {0}: write i/N with 0 <= i < N, e.g. --shard 0/4 (Slurm: --shard $SLURM_ARRAY_TASK_ID/4)")]
pub struct BadShard(String);

impl std::str::FromStr for Shard {
    type Err = BadShard;

    fn from_str(text: &str) -> Result<Shard, BadShard> {
        let bad = || BadShard(text.to_string());
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Plan {
    /// The ids of part `shard`'s cells: the longest cells first (as the plan's `estimate`
    /// counts them, from a previous run's times where it has them), each to the part with
    /// the least time so far, ties to the lower part. Every cell lands in exactly one part.
    pub fn shard_ids(&self, shard: Shard, estimate: &Estimate) -> Vec<String> {
        let cost: Vec<f64> = (self.cells.iter())
            .map(|c| estimate.cell_seconds(c))
            .collect();
        let mut order: Vec<usize> = (0..self.cells.len()).collect();
        order.sort_by(|&a, &b| cost[b].total_cmp(&cost[a]).then(a.cmp(&b)));
        let mut load = vec![0.0f64; shard.count];
        let mut part = vec![0usize; self.cells.len()];
        for i in order {
            let least = (0..shard.count)
                .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
                .expect("at least one part");
            load[least] += cost[i];
            part[i] = least;
        }
        self.cells
            .iter()
            .zip(part)
            .filter(|(_, p)| *p == shard.index)
            .map(|(c, _)| c.id.clone())
            .collect()
    }

    /// Keeps the cells of `ids`, numbered anew.
    pub fn keep(mut self, ids: &[String]) -> Result<Plan> {
        let ids: std::collections::HashSet<&String> = ids.iter().collect();
        self.cells.retain(|c| ids.contains(&c.id));
        if self.cells.len() != ids.len() {
            bail!("the part's cells are not all in the experiment's plan: the experiment changed since the part was made");
        }
        Ok(self.renumbered())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_read_as_index_over_count() {
        assert_eq!(
            "1/4".parse::<Shard>().unwrap(),
            Shard { index: 1, count: 4 }
        );
        for bad in ["4/4", "1", "a/2", "0/0", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(
            "4/4".parse::<Shard>().unwrap_err().to_string(),
            "--shard 4/4: write i/N with 0 <= i < N, e.g. --shard 0/4 (Slurm: --shard $SLURM_ARRAY_TASK_ID/4)"
        );
    }
}
