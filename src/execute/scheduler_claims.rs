//! The scheduler's side of a queue of cells its run's parts share (`--claims`): which runs
//! are this part's to store, which another part took, and the claims a stopping part lets go.

use super::Scheduler;
use crate::plan::Run;
use anyhow::{Context, Result};
use std::collections::{HashSet, VecDeque};

impl Scheduler<'_> {
    /// Whether a record of `run` is this part's to store: always, but where the parts share
    /// a queue, only one of a cell this part holds (its worker claimed it before it ran it);
    /// the key of one stored is kept.
    pub(super) fn holds_to_store(&mut self, run: Run) -> Result<bool> {
        let Some(c) = &mut self.claiming else {
            return Ok(true);
        };
        let holds = (c.holds(run.cell)).context("cannot read the run's queue of cells")?;
        if let (true, Some(key)) = (holds, c.key(run.cell)) {
            self.stored_keys.insert(key.to_string());
        }
        Ok(holds)
    }

    /// A run another part claimed (or that this part leaves unclaimed): not this part's to
    /// store.
    pub(super) fn count_taken(&mut self, run: Run) {
        self.taken.insert(run.cell);
        self.count_done(run);
    }

    /// Whether this part runs `run` (always, but where the parts share a queue: then once
    /// it, or nobody yet, claimed the run's cell).
    pub(super) fn mine(&mut self, run: Run) -> Result<bool> {
        match &mut self.claiming {
            None => Ok(true),
            Some(c) => c.may_run(run.cell).with_context(|| {
                let dir = c.claims.dir.display();
                format!("cannot claim a cell in {dir}")
            }),
        }
    }

    /// Counts the runs of `remaining` another part holds as taken, and leaves them out: no
    /// worker starts for a fresh process that another part ran.
    pub(super) fn drop_taken(&mut self, remaining: &mut VecDeque<Run>) -> Result<()> {
        if self.claiming.is_none() {
            return Ok(());
        }
        let mut kept = VecDeque::with_capacity(remaining.len());
        for run in remaining.drain(..) {
            let claiming = self.claiming.as_mut().expect("checked above");
            match claiming
                .elsewhere(run.cell)
                .context("cannot read the run's queue of cells")?
            {
                true => self.count_taken(run),
                false => kept.push_back(run),
            }
        }
        *remaining = kept;
        Ok(())
    }

    /// Lets go of the claims of this stopping part whose cells it has no record of (`done`:
    /// the runs stored before a resume), so that a part still running takes them.
    pub(super) fn release_unfinished(&self, done: &HashSet<Run>) -> Result<()> {
        let Some(c) = &self.claiming else {
            return Ok(());
        };
        let keys = |run: &Run| c.key(run.cell).map(String::from);
        let done: HashSet<String> = done.iter().filter_map(keys).collect();
        let held = |key: &str| done.contains(key) || self.stored_keys.contains(key);
        let released = (c.claims.release_unfinished(held))
            .context("cannot let go of the part's unfinished claims")?;
        crate::terminal::tell(&format!(
            "stopped: {released} cell(s) this part had claimed and not finished are left to the run's other parts"
        ));
        Ok(())
    }
}
