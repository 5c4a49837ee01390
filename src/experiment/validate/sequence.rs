//! A kernel's steps (launches and copies beside its own in the same timed region) and the
//! arguments lists (`takes`, a step's `args`) name.

use super::validator::Validator;
use crate::experiment::arg::{Arg, ArgKind, ArgValue};
use crate::experiment::error::ConfigError;
use crate::experiment::expr::{self, NumExpr};
use crate::experiment::kernel;
use crate::experiment::schema;
use crate::experiment::{point_label, Point, Sources};
use toml::Spanned;

impl Validator<'_> {
    /// A step's entry (found in the source or module) and arguments (the kernel's, by name),
    /// or its copy (two of the kernel's buffers, not both on the host).
    pub(super) fn step(
        &self,
        step: &schema::RawStep,
        at: &Spanned<String>,
        args: &[Arg],
        source_text: &str,
        module: Option<&kernel::Prebuilt>,
    ) -> Result<kernel::Step, ConfigError> {
        let before = step.before.unwrap_or(false);
        if let Some(copy) = &step.copy {
            if step.entry.is_some()
                || step.grid.is_some()
                || step.block.is_some()
                || step.args.is_some()
                || step.shared_bytes.is_some()
            {
                return Err(self
                    .err(copy, "a copy step takes only copy (and before)")
                    .with_hint("write a kernel step and a copy step as two steps"));
            }
            let c = copy.get_ref();
            let names = Spanned::new(copy.span(), vec![c.to.clone(), c.from.clone()]);
            let ends = self.arg_indices(&names, args)?;
            let memory = |i: usize, name: &Spanned<String>| match &args[i].kind {
                ArgKind::Buffer { memory, .. } => Ok(*memory),
                ArgKind::Scalar { .. } => Err(self.err(
                    name,
                    format!("`{}` is a scalar: a copy takes buffers", name.get_ref()),
                )),
            };
            let (to, from) = (memory(ends[0], &c.to)?, memory(ends[1], &c.from)?);
            if ends[0] == ends[1] {
                return Err(self.err(&c.to, "a copy needs two different buffers"));
            }
            if from.on_host() && to.on_host() {
                return Err(self
                    .err(copy, "both buffers of this copy live on the host")
                    .with_hint("a copy moves data to, from or within the device"));
            }
            return Ok(kernel::Step {
                entry: String::new(),
                args: ends,
                copy: Some(kernel::CopyOp {
                    sync: c.sync.unwrap_or(false),
                }),
                before,
            });
        }
        let missing = |what: &str| {
            self.err(at, format!("a step needs an entry, grid, block and args, or a copy; this one has no {what}"))
                .with_hint("e.g. then = [{ entry = \"pass2\", grid = [1], block = [256], args = [\"out\"] }] or then = [{ copy = { from = \"d_y\", to = \"y\" } }]")
        };
        let entry_at = step.entry.as_ref().ok_or_else(|| missing("entry"))?;
        let names = step.args.as_ref().ok_or_else(|| missing("args"))?;
        if step.grid.is_none() || step.block.is_none() {
            return Err(missing("grid or block"));
        }
        let entry = entry_at.get_ref();
        let base = entry.split('<').next().unwrap_or(entry).trim();
        let found = self.sources == Sources::Skip
            || kernel::holds_entry(source_text, module.map(|m| m.image.as_slice()), entry);
        if !found {
            return Err(self
                .err(
                    entry_at,
                    format!("the kernel's source has no function `{base}`"),
                )
                .with_hint("a step is another kernel of the same source or module"));
        }
        Ok(kernel::Step {
            entry: entry.clone(),
            args: self.arg_indices(names, args)?,
            copy: None,
            before,
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

    /// A step's launch shape at a point, checked against the device (one thread for a copy,
    /// whose two buffers must have one size there).
    pub(super) fn step_shape(
        &self,
        step: &schema::RawStep,
        done: &kernel::Step,
        values: &[ArgValue],
        p: &Point,
    ) -> Result<kernel::Shape, ConfigError> {
        if let Some(copy) = &step.copy {
            let bytes = |i: usize| match &values[i] {
                ArgValue::Buffer { dtype, len, .. } => len * dtype.size(),
                ArgValue::Scalar { .. } => 0,
            };
            let (to, from) = (bytes(done.args[0]), bytes(done.args[1]));
            if to != from {
                return Err(self
                    .err(
                        copy,
                        format!(
                            "at {} the copy's buffers differ in size: {to} bytes into {from}",
                            point_label(p)
                        ),
                    )
                    .with_hint(
                        "a copy step moves a whole buffer into another of the same type and length",
                    ));
            }
            return Ok(([1; 3], [1; 3], 0));
        }
        let (Some(grid), Some(block)) = (&step.grid, &step.block) else {
            unreachable!("a kernel step has a grid and a block (checked by `step`)");
        };
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
        kernel::launch_shape(&ints(grid)?, &ints(block)?, shared, self.facts)
            .map_err(|u| self.err(grid, format!("step at {}: {}", point_label(p), u.why)))
    }

    /// Refuses pageable host memory where a kernel would read it: only copies reach it.
    pub(super) fn no_kernel_reads_pageable(
        &self,
        rk: &schema::RawKernel,
        args: &[Arg],
        takes: Option<&[usize]>,
        steps: &[kernel::Step],
    ) -> Result<(), ConfigError> {
        for (i, a) in args.iter().enumerate() {
            let ArgKind::Buffer {
                memory: crate::experiment::Memory::Pageable,
                ..
            } = a.kind
            else {
                continue;
            };
            let by_kernel = takes.is_none_or(|t| t.contains(&i))
                || steps
                    .iter()
                    .any(|s| s.copy.is_none() && s.args.contains(&i));
            if by_kernel {
                let at = rk.args[i].memory.as_ref().unwrap_or(&rk.args[i].name);
                return Err(self
                    .err(at, format!("a kernel takes `{}`, but no kernel can address pageable host memory", a.name))
                    .with_hint("use memory = \"mapped\" for a kernel that reads host memory, or copy the buffer to the device in a copy step (and list the kernel's parameters in `takes`)"));
            }
        }
        Ok(())
    }
}
