//! What the work a kernel declares counts against: its `flops` in a `flops_type` the runner
//! knows the peak of, or against a `peak` the kernel states.

use super::validator::Validator;
use crate::experiment::error::ConfigError;
use crate::experiment::rates::{DeclaredPeak, FlopsType};
use crate::experiment::schema::RawKernel;

impl Validator<'_> {
    /// What its FLOPs count against, where it says: `flops_type`, a type on the CUDA cores
    /// or an input type of the tensor cores; or `peak`, a rate it states. Not both.
    pub(super) fn counted_as(&self, rk: &RawKernel) -> Result<Option<FlopsType>, ConfigError> {
        match (&rk.flops_type, &rk.peak) {
            (Some(_), Some(peak)) => Err(self
                .err(peak, format!("kernel `{}` gives both flops_type and peak", rk.name.get_ref()))
                .with_hint("keep one: flops_type for a type whose peak the runner knows (docs/peaks.md), peak for a unit it does not")),
            (Some(t), None) => {
                let flops = FlopsType::parse(t.get_ref()).ok_or_else(|| {
                    self.err(
                        t,
                        format!(
                            "flops_type `{}` is not a type FLOPs are counted in",
                            t.get_ref()
                        ),
                    )
                    .with_hint(format!("one of {}", FlopsType::KEYS))
                })?;
                Ok(Some(flops))
            }
            (None, Some(peak)) => {
                let declared = DeclaredPeak::parse(peak.get_ref()).map_err(|m| {
                    self.err(peak, m).with_hint(format!(
                        "write {}: operations per SM per clock (the runner multiplies by the SM count and the maximum SM clock) and how the reports name it",
                        DeclaredPeak::EXAMPLE
                    ))
                })?;
                Ok(Some(FlopsType::Declared(declared)))
            }
            (None, None) => Ok(None),
        }
    }
}
