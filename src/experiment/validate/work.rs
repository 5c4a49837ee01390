//! The work a kernel declares per launch and what it counts against: `bytes`, or `reads`
//! and `writes` apart; `flops`, in a `flops_type` the runner knows the peak of, or against a
//! `peak` the kernel states.

use super::validator::Validator;
use crate::experiment::error::ConfigError;
use crate::experiment::expr::{self, NumExpr, Scope};
use crate::experiment::rates::{DeclaredPeak, FlopsType};
use crate::experiment::schema::RawKernel;
use crate::experiment::{point_label, LaunchSpec, Point};
use toml::Spanned;

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

    /// `bytes`, or `reads` and `writes`: a kernel declares its bytes one way.
    pub(super) fn bytes_declared_once(&self, rk: &RawKernel) -> Result<(), ConfigError> {
        let (Some(bytes), true) = (&rk.bytes, rk.reads.is_some() || rk.writes.is_some()) else {
            return Ok(());
        };
        Err(self
            .err(bytes, format!("kernel `{}` gives bytes and also reads or writes", rk.name.get_ref()))
            .with_hint("bytes is reads + writes: keep bytes alone, or give reads and writes (one left out counts 0) without bytes"))
    }

    /// The kernel's bytes and FLOPs per launch at point `p` into `spec`: `bytes`, or the sum of
    /// `reads` and `writes`, kept apart too.
    pub(super) fn declared_work(
        &self,
        rk: &RawKernel,
        p: &Point,
        scope: &Scope,
        spec: &mut LaunchSpec,
    ) -> Result<(), ConfigError> {
        let reads = self.work(rk.reads.as_ref(), "reads", p, scope)?;
        let writes = self.work(rk.writes.as_ref(), "writes", p, scope)?;
        spec.reads_writes = (reads.is_some() || writes.is_some())
            .then(|| (reads.unwrap_or(0.0), writes.unwrap_or(0.0)));
        spec.bytes = match spec.reads_writes {
            Some((r, w)) => Some(r + w),
            None => self.work(rk.bytes.as_ref(), "bytes", p, scope)?,
        };
        spec.flops = self.work(rk.flops.as_ref(), "flops", p, scope)?;
        Ok(())
    }

    /// Work per launch at point `p`, where the kernel declares it: not negative.
    fn work(
        &self,
        e: Option<&Spanned<NumExpr>>,
        what: &str,
        p: &Point,
        scope: &Scope,
    ) -> Result<Option<f64>, ConfigError> {
        let Some(e) = e else { return Ok(None) };
        let v = match expr::eval_exact(e.get_ref(), scope).map_err(|m| self.err(e, m))? {
            expr::Number::Int(i) => i as f64,
            expr::Number::Float(f) => f,
        };
        if v < 0.0 {
            return Err(self.err(
                e,
                format!("{what} is {v} at {}, not positive", point_label(p)),
            ));
        }
        Ok(Some(v))
    }
}
