//! A kernel's steps (launches after its own in the same timed region) and the arguments
//! lists (`takes`, a step's `args`) name.

use super::Validator;
use crate::experiment::arg::Arg;
use crate::experiment::error::ConfigError;
use crate::experiment::expr::{self, NumExpr};
use crate::experiment::kernel;
use crate::experiment::schema;
use crate::experiment::{point_label, Point, Sources};
use toml::Spanned;

impl Validator<'_> {
    /// A step's entry (found in the source or module) and arguments (the kernel's, by name).
    pub(super) fn step(
        &self,
        step: &schema::RawStep,
        args: &[Arg],
        source_text: &str,
        module: Option<&kernel::Prebuilt>,
    ) -> Result<kernel::Step, ConfigError> {
        let entry = step.entry.get_ref();
        let base = entry.split('<').next().unwrap_or(entry).trim();
        let found = self.sources == Sources::Skip
            || kernel::holds_entry(source_text, module.map(|m| m.image.as_slice()), entry);
        if !found {
            return Err(self
                .err(
                    &step.entry,
                    format!("the kernel's source has no function `{base}`"),
                )
                .with_hint("a step is another kernel of the same source or module"));
        }
        Ok(kernel::Step {
            entry: entry.clone(),
            args: self.arg_indices(&step.args, args)?,
        })
    }

    /// Arguments named in a list (`takes`, a step's `args`), as indices into `args`.
    pub(super) fn arg_indices(
        &self,
        names: &Spanned<Vec<Spanned<String>>>,
        args: &[Arg],
    ) -> Result<Vec<usize>, ConfigError> {
        names
            .get_ref()
            .iter()
            .map(|name| {
                args.iter()
                    .position(|a| a.name == *name.get_ref())
                    .ok_or_else(|| {
                        self.err(
                            name,
                            format!("the kernel has no argument `{}`", name.get_ref()),
                        )
                        .with_hint(format!(
                            "these lists take the kernel's arguments by name: {}",
                            args.iter()
                                .map(|a| a.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
            })
            .collect()
    }

    /// A step's launch shape at a point, checked against the device.
    pub(super) fn step_shape(
        &self,
        step: &schema::RawStep,
        p: &Point,
    ) -> Result<kernel::Shape, ConfigError> {
        let scope = crate::experiment::scope(p, self.facts);
        let ints = |v: &Spanned<Vec<Spanned<NumExpr>>>| -> Result<Vec<i64>, ConfigError> {
            if v.get_ref().is_empty() || v.get_ref().len() > 3 {
                return Err(self.err(v, "a step's grid and block need 1 to 3 dimensions"));
            }
            v.get_ref()
                .iter()
                .map(|e| expr::eval_int(e.get_ref(), &scope).map_err(|m| self.err(e, m)))
                .collect()
        };
        let shared = match &step.shared_bytes {
            Some(s) => expr::eval_int(s.get_ref(), &scope).map_err(|m| self.err(s, m))?,
            None => 0,
        };
        kernel::launch_shape(&ints(&step.grid)?, &ints(&step.block)?, shared, self.facts)
            .map_err(|(_, m)| self.err(&step.entry, format!("step at {}: {m}", point_label(p))))
    }
}
