//! Where reference results are kept between a run's processes: a leaf of the folder, so
//! that the references and the front that dispatches to them both import it.

use crate::worker::host_buffer::HostBuffer;
use crate::worker::shared;
use std::path::{Path, PathBuf};

/// Where reference results are kept between the processes of one run, so that a sweep
/// point's reference is computed once, not once per fresh process.
pub struct Cache<'a> {
    pub(super) dir: Option<&'a Path>,
    /// Names the inputs: their kernel, point and seed, from which they are drawn (hashing
    /// the inputs themselves would cost more than the reference at large sizes).
    pub(super) inputs: String,
    /// The run's seed of the sampled checks' elements.
    pub(in crate::worker) sample_seed: u64,
}

impl<'a> Cache<'a> {
    pub fn new(dir: Option<&'a Path>, inputs: String, sample_seed: u64) -> Self {
        Cache {
            dir,
            inputs,
            sample_seed,
        }
    }

    /// The file of the reference `name` for these inputs and dims.
    pub(in crate::worker) fn file(
        &self,
        name: &str,
        inputs: &[&HostBuffer],
        dims: &[i64],
    ) -> Option<PathBuf> {
        let dims: Vec<u8> = dims.iter().flat_map(|d| d.to_le_bytes()).collect();
        let seed = self.sample_seed.to_le_bytes().to_vec();
        let mut parts: Vec<Vec<u8>> = vec![name.into(), self.inputs.as_bytes().into(), dims, seed];
        for i in inputs {
            parts.push(i.name.as_bytes().into());
            parts.push((i.bytes.len() as u64).to_le_bytes().into());
        }
        let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        shared::file(self.dir, &parts, "f64")
    }

    /// The stored values, if another process stored them.
    pub(in crate::worker) fn read(&self, file: &Option<PathBuf>, count: usize) -> Option<Vec<f64>> {
        let bytes = shared::read(file.as_deref(), count * 8)?;
        Some(
            bytes
                .chunks(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        )
    }

    /// Stores values for later processes.
    pub(in crate::worker) fn write(&self, file: &Option<PathBuf>, values: &[f64]) {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        shared::write(file.as_deref(), &bytes);
    }
}
