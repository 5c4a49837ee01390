//! A checked output kept on the device. An audited region on the same data whose output
//! equals it byte for byte passes the same check, compared on the GPU in microseconds:
//! only the first audited region on each data set pays a full check (a GiB read back and
//! compared on the host takes seconds). A kernel whose output differs from run to run
//! (atomics in another order) gets the full check each time.

use super::{copy_of, first_difference};
use crate::cuda::DeviceBuffer;
use crate::experiment::Kernel;
use crate::worker::buffers::Buffers;
use crate::worker::failure::Failure;
use crate::worker::Session;

pub(in crate::worker) struct Snapshot {
    /// Each checked output's index and its copy.
    copies: Vec<(usize, DeviceBuffer)>,
}

impl Snapshot {
    /// Copies the outputs `def`'s check reads, where all live in device memory and fit.
    pub(super) fn take(def: &Kernel, buffers: &Buffers) -> Result<Option<Snapshot>, Failure> {
        let mut copies = Vec::new();
        for i in checked_outputs(def) {
            match copy_of(buffers, i, None, "audit: keeping a checked output")? {
                Some(copy) => copies.push((i, copy)),
                None => return Ok(None),
            }
        }
        Ok((!copies.is_empty()).then_some(Snapshot { copies }))
    }

    /// Whether `buffers`' checked outputs equal the snapshot byte for byte.
    pub(super) fn matches(&self, s: &mut Session, buffers: &Buffers) -> Result<bool, Failure> {
        for (i, copy) in &self.copies {
            if first_difference(s, buffers, *i, copy)?.is_some() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The arguments `def`'s check compares: its reference's output, or those of its
/// reference kernel.
fn checked_outputs(def: &Kernel) -> Vec<usize> {
    match (&def.check, &def.check_kernel) {
        (Some(check), _) => vec![check.output],
        (None, Some(kc)) => kc.outputs.clone(),
        (None, None) => vec![],
    }
}
