//! Fixtures the unit tests of the stages after the experiment share, so that each test says
//! only what it is about: an experiment file a test writes beside its kernel sources, read
//! as `runner plan` reads one. Compiled for tests only.

use crate::experiment::{DeviceFacts, Experiment, Sources};
use std::path::Path;

/// A kernel `k` that takes nothing and does nothing, as a source file holds it.
pub const EMPTY_KERNEL: &str = "extern \"C\" __global__ void k() {}";

/// `text` written as `e.toml` in `dir`, beside `sources` (each a file's name and text),
/// and loaded as `runner plan` loads it: against the assumed H100, its kernel sources read.
pub fn experiment_in(dir: &Path, sources: &[(&str, &str)], text: &str) -> Experiment {
    for (name, source) in sources {
        std::fs::write(dir.join(name), source).unwrap();
    }
    let path = dir.join("e.toml");
    std::fs::write(&path, text).unwrap();
    Experiment::load(&path, &DeviceFacts::nominal(), Sources::Read).unwrap()
}
