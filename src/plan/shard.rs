//! `--shard i/N`: the i-th of N disjoint parts of a plan, balanced by the cells' times in a
//! previous run where there is one (else by the plan's model), so that N machines or GPUs
//! finish together. A run records its part's cell ids, so a resume, a re-render and `merge` see
//! exactly the cells it was given.

use super::cost::Estimate;
use super::{Cell, Plan, Role, Run, WorkerJob};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// A turn group's claim key and its runs, in turn.
type TurnGroup<'k> = (&'k str, Vec<Run>);

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
    /// The ids of part `shard`'s cells: a shared process's cells drawn alike
    /// (`Cell::draw_key`) in one environment as one block, so that one part draws and
    /// uploads their inputs once, unless the block would hold over half a part's share (then
    /// turn group by turn group); the longest blocks first (as the plan's `estimate` counts
    /// them, from a previous run's times where it has them), each to the part with the least
    /// time so far, ties to the lower part. Every cell lands in exactly one part.
    pub fn shard_ids(&self, shard: Shard, estimate: &Estimate) -> Vec<String> {
        let cost: Vec<f64> = (self.cells.iter())
            .map(|c| estimate.cell_seconds(c))
            .collect();
        let most = cost.iter().sum::<f64>() / (2.0 * shard.count as f64);
        // A shared process's cells drawn alike in one environment share an upload; any
        // other cell is a block of its turn group (cells that take turns stay together).
        let keys = self.claim_keys();
        let block_of = |c: &Cell| match c.knobs.process.fresh.is_none() && c.has_inputs() {
            true => format!("{:?}\0{}", c.knobs.process_env(), c.draw_key()),
            false => format!("group\0{}", keys[c.index]),
        };
        let mut by_block: HashMap<String, Vec<usize>> = HashMap::new();
        let mut order = Vec::new();
        for c in &self.cells {
            let key = block_of(c);
            if !by_block.contains_key(&key) {
                order.push(key.clone());
            }
            by_block.entry(key).or_default().push(c.index);
        }
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        for key in order {
            let block = by_block.remove(&key).unwrap_or_default();
            if block.iter().map(|&i| cost[i]).sum::<f64>() <= most {
                blocks.push(block);
                continue;
            }
            let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
            for i in block {
                match groups.iter_mut().find(|(k, _)| *k == keys[i]) {
                    Some((_, g)) => g.push(i),
                    None => groups.push((keys[i], vec![i])),
                }
            }
            blocks.extend(groups.into_iter().map(|(_, g)| g));
        }
        let seconds = |b: &[usize]| b.iter().map(|&i| cost[i]).sum::<f64>();
        blocks.sort_by(|a, b| seconds(b).total_cmp(&seconds(a)).then(a[0].cmp(&b[0])));
        let mut load = vec![0.0f64; shard.count];
        let mut part = vec![0usize; self.cells.len()];
        for block in &blocks {
            let least = (0..shard.count)
                .min_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)))
                .expect("at least one part");
            load[least] += seconds(block);
            for &i in block {
                part[i] = least;
            }
        }
        self.cells
            .iter()
            .zip(part)
            .filter(|(_, p)| *p == shard.index)
            .map(|(c, _)| c.id.clone())
            .collect()
    }

    /// The jobs of a part that takes its cells from a queue the parts share (`--claims`), in
    /// the order it claims them, environment by environment: its own share's turn groups
    /// first, in blocks of one draw (see [`Plan::longest_first`]) the costliest first, then
    /// the other shares' groups from their owners' ends (the cheapest draws first, each
    /// draw's groups in their order reversed), so that a part that ran short takes what its
    /// owner would run last, never the draw its owner is in, and every part ends on the
    /// cheapest cells left. Another share's group that reads counters is a job of its own,
    /// so that its counter pass claims it alone, just before it runs. The last own job and
    /// the first of others' run in one worker where both are a shared process's in the same
    /// environment; a fresh process's run stays a job of its own.
    pub fn claiming_jobs(&self, own: &[String], cost: &[f64]) -> Vec<WorkerJob> {
        let own: HashSet<&str> = own.iter().map(String::as_str).collect();
        let keys = self.claim_keys();
        let counts = |runs: &[Run]| {
            (runs.iter()).any(|r| {
                let c = &self.cells[r.cell];
                c.knobs.counters.wanted() && c.role == Role::Measure
            })
        };
        let (mut first, mut others) = (Vec::new(), Vec::new());
        for job in self.jobs() {
            // The job's turn groups, each a run of consecutive runs with one key.
            let mut groups: Vec<(&str, Vec<Run>)> = Vec::new();
            for run in job.runs {
                let key = keys[run.cell];
                match groups.last_mut() {
                    Some((k, runs)) if *k == key => runs.push(run),
                    _ => groups.push((key, vec![run])),
                }
            }
            let (mine, theirs): (Vec<_>, Vec<_>) =
                groups.into_iter().partition(|(k, _)| own.contains(k));
            let job_of = |groups: Vec<(&str, Vec<Run>)>| WorkerJob {
                env: job.env.clone(),
                runs: groups.into_iter().flat_map(|(_, runs)| runs).collect(),
            };
            if !mine.is_empty() {
                first.push(job_of(self.longest_first(mine, cost)));
            }
            let (counted, plain): (Vec<_>, Vec<_>) =
                theirs.into_iter().partition(|(_, runs)| counts(runs));
            if !plain.is_empty() {
                let mut plain = self.longest_first(plain, cost);
                plain.reverse();
                others.push(job_of(plain));
            }
            others.extend(counted.into_iter().map(|g| job_of(vec![g])));
        }
        let shared = |j: &WorkerJob| {
            (j.runs.iter()).all(|r| self.cells[r.cell].knobs.process.fresh.is_none())
        };
        let mut others = others.into_iter().peekable();
        if let (Some(last), Some(next)) = (first.last_mut(), others.peek()) {
            if last.env == next.env && shared(last) && shared(next) && !counts(&next.runs) {
                last.runs
                    .extend(others.next().into_iter().flat_map(|j| j.runs));
            }
        }
        first.extend(others);
        first
    }

    /// A job's turn groups in blocks of one draw (consecutive in [`Plan::jobs`], so that
    /// the draw is uploaded once), the costliest block first by `cost` (seconds by cell
    /// index; the plan's order among equals): a part that ends on short cells ends within
    /// one of the others.
    fn longest_first<'k>(&self, groups: Vec<TurnGroup<'k>>, cost: &[f64]) -> Vec<TurnGroup<'k>> {
        let mut blocks: Vec<(String, Vec<TurnGroup>)> = Vec::new();
        for group in groups {
            let draw = self.cells[group.1[0].cell].draw_key();
            match blocks.last_mut() {
                Some((d, block)) if *d == draw => block.push(group),
                _ => blocks.push((draw, vec![group])),
            }
        }
        let seconds = |block: &[TurnGroup]| -> f64 {
            let cells: HashSet<usize> = (block.iter())
                .flat_map(|(_, runs)| runs.iter().map(|r| r.cell))
                .collect();
            cells
                .iter()
                .map(|&c| cost.get(c).copied().unwrap_or(0.0))
                .sum()
        };
        blocks.sort_by(|(_, a), (_, b)| seconds(b).total_cmp(&seconds(a)));
        blocks.into_iter().flat_map(|(_, block)| block).collect()
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
