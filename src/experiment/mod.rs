//! The experiment file: its TOML schema, and validation that evaluates every knob and launch
//! at every sweep point against a device (the assumed one for `runner plan`, the real one
//! for a run), turning every mistake into a [`ConfigError`] naming the file, line and column.

mod arg;
mod dtype;
pub mod error;
pub mod expr;
mod kernel;
pub mod knobs;
mod launch;
mod methodology;
mod names;
pub mod npy;
pub mod peer;
pub mod rates;
mod scalar;
pub mod schema;
pub mod sweep;
mod tolerance;
mod validate;
mod validated;

use std::path::Path;

pub use arg::{managed_bytes, ArgKind, ArgValue, InitSpec, Memory};
pub use dtype::Dtype;
pub use error::{BadValue, ConfigError};
pub use expr::DeviceFacts;
pub use kernel::{reset_memset, CopyOp, Kernel, LaunchSpec, ModuleKind, PythonCheck};
pub use knobs::{Aspect, Knobs};
pub use schema::{Init, Unit};
pub use sweep::{point_label, scope, Point, SweepValue};
pub use tolerance::Tolerances;
pub use validated::{
    metric_value, name_of, ClockPolicy, Experiment, Metric, Published, ReportSpec, Sources,
    TelemetrySpec, Variant, MAX_CELLS,
};

/// The largest experiment file, in bytes (the largest shipped one holds 7 KB).
pub const MAX_EXPERIMENT_BYTES: u64 = 1 << 20;

/// Loading stays in the front: it calls validation (`validate/`), which builds the
/// experiment of `validated.rs`.
impl Experiment {
    /// Reads and validates an experiment file against `facts` (as written: tests).
    #[cfg(test)]
    pub fn load(path: &Path, facts: &DeviceFacts, sources: Sources) -> Result<Self, ConfigError> {
        Self::load_set(path, facts, sources, &[])
    }

    /// Reads and validates an experiment file against `facts`, with sweep parameters'
    /// values replaced (`--set n=512,1024`).
    pub fn load_set(
        path: &Path,
        facts: &DeviceFacts,
        sources: Sources,
        set: &[String],
    ) -> Result<Self, ConfigError> {
        let text = crate::files::read_text(path, MAX_EXPERIMENT_BYTES).map_err(|e| {
            ConfigError::at(
                path,
                "",
                None,
                format!("cannot read the experiment file: {e}"),
            )
            .with_hint("pass the path of an experiment, e.g. experiments/cold-start.toml")
        })?;
        validate::experiment(path, &text, facts, sources, set)
    }

    /// Validates experiment text; `path` locates errors and relative kernel sources.
    #[cfg(test)]
    pub fn parse(
        path: &Path,
        text: &str,
        facts: &DeviceFacts,
        sources: Sources,
    ) -> Result<Self, ConfigError> {
        Self::parse_set(path, text, facts, sources, &[])
    }

    /// Experiment text as a test writes it: `e.toml`, checked against the assumed H100,
    /// its kernel sources not read.
    #[cfg(test)]
    pub fn from_text(text: &str) -> Result<Self, ConfigError> {
        Self::parse(
            Path::new("e.toml"),
            text,
            &DeviceFacts::nominal(),
            Sources::Skip,
        )
    }

    /// Validates experiment text (`path` locates errors and relative kernel sources), with
    /// sweep parameters' values replaced.
    pub fn parse_set(
        path: &Path,
        text: &str,
        facts: &DeviceFacts,
        sources: Sources,
        set: &[String],
    ) -> Result<Self, ConfigError> {
        validate::experiment(path, text, facts, sources, set)
    }
}
