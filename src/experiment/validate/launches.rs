//! A kernel's launch at each of its sweep points: the launch expressions evaluated against
//! the device's limits, and what else a point decides (a templated entry, NVRTC options,
//! the work per launch, the shapes of the kernel's steps).

use super::validator::Validator;
use crate::experiment::arg::Arg;
use crate::experiment::error::ConfigError;
use crate::experiment::expr::{self, NumExpr, Scope};
use crate::experiment::kernel::{self, Check, LaunchExprs, Part, Step};
use crate::experiment::schema::RawKernel;
use crate::experiment::{point_label, LaunchSpec, Point};
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

impl Validator<'_> {
    /// The kernel's launch at each of `points`; `dir` is the experiment's folder, which
    /// NVRTC options' paths are relative to.
    pub(super) fn launches(
        &self,
        rk: &RawKernel,
        args: &[Arg],
        check: Option<&Check>,
        steps: &[Step],
        points: &[Point],
        dir: &Path,
    ) -> Result<Vec<LaunchSpec>, ConfigError> {
        let inner = |v: &Spanned<Vec<Spanned<NumExpr>>>| -> Vec<NumExpr> {
            v.get_ref().iter().map(|e| e.get_ref().clone()).collect()
        };
        let (grid, block) = (inner(&rk.grid), inner(&rk.block));
        let shared = rk
            .shared_bytes
            .as_ref()
            .map_or(NumExpr::Int(0), |s| s.get_ref().clone());
        let check_dims: Vec<NumExpr> = check.map_or(vec![], |c| c.dims.clone());
        let exprs = LaunchExprs {
            grid: &grid,
            block: &block,
            shared_bytes: &shared,
            args,
            check_dims: &check_dims,
        };
        points
            .iter()
            .map(|p| {
                let spec = self.launch_at(rk, &exprs, steps, p, dir)?;
                self.matmul_fits(rk, args, check, p, &spec)?;
                Ok(spec)
            })
            .collect()
    }

    /// A `matmul` check's dims within its buffers at point `p`: A holds m x k elements, B
    /// k x n and C m x n. Otherwise the reference would read past a buffer's end.
    fn matmul_fits(
        &self,
        rk: &RawKernel,
        args: &[Arg],
        check: Option<&Check>,
        p: &Point,
        spec: &LaunchSpec,
    ) -> Result<(), ConfigError> {
        let (Some(c), &[m, k, n]) = (
            check.filter(|c| c.reference == "matmul"),
            &spec.check_dims[..],
        ) else {
            return Ok(());
        };
        let needs = [
            (c.inputs.first(), m * k, "m x k"),
            (c.inputs.get(1), k * n, "k x n"),
            (Some(&c.output), m * n, "m x n"),
        ];
        for (arg, need, what) in needs {
            let Some(&i) = arg else { continue };
            let Some(crate::experiment::ArgValue::Buffer { len, .. }) = spec.args.get(i) else {
                continue;
            };
            if (*len as i64) < need {
                return Err(ConfigError::at(
                    self.path,
                    self.text,
                    Some(part_span(rk, Part::CheckDim(0))),
                    format!(
                        "the check's dims [m, k, n] = [{m}, {k}, {n}] need {what} = {need} elements of `{}`, which holds {len} {}",
                        args[i].name,
                        self.at_point(p)
                    ),
                )
                .with_hint("dims name the matrices' sizes as the kernel reads them: [m, k, n] for A (m x k) times B (k x n) into C (m x n)"));
            }
        }
        Ok(())
    }

    fn launch_at(
        &self,
        rk: &RawKernel,
        exprs: &LaunchExprs,
        steps: &[Step],
        p: &Point,
        dir: &Path,
    ) -> Result<LaunchSpec, ConfigError> {
        let scope = crate::experiment::scope(p, self.facts);
        let mut spec = kernel::evaluate(exprs, p, self.facts).map_err(|u| {
            let error = ConfigError::at(
                self.path,
                self.text,
                Some(part_span(rk, u.part)),
                format!("{} {}", u.why, self.at_point(p)),
            );
            // A value the device or a type cannot take says its limit; the names expressions
            // may use help only an expression that failed.
            match (u.expression, u.part) {
                (true, _) => error.with_hint(format!(
                    "expressions may use the sweep parameters and device facts: {}",
                    expr::names(&scope)
                )),
                (false, Part::Init(_)) => error.with_hint(
                    "an init's values must fit its buffer's type: narrow the range, or give the buffer a wider type",
                ),
                (false, _) => error.with_hint(
                    "the value is checked at every sweep point: keep it within the limit there (e.g. \"1024 if n > 1024 else n\"), or leave those points out (`skip`)",
                ),
            }
        })?;
        if is_template(rk.entry.get_ref()) {
            spec.entry = self.rendered(&rk.entry, "entry", p, &scope)?;
        }
        let step_entries: Vec<&Spanned<String>> =
            rk.then.iter().filter_map(|s| s.entry.as_ref()).collect();
        if step_entries.iter().any(|e| is_template(e.get_ref())) {
            spec.step_entries = (step_entries.iter())
                .map(|e| self.rendered(e, "a step's entry", p, &scope))
                .collect::<Result<_, _>>()?;
        }
        if let Some(opts) = &rk.options {
            spec.options =
                crate::experiment::knobs::nvrtc_options::render_all(opts.get_ref(), &scope, dir)
                    .map_err(|m| self.err(opts, format!("options at {}: {m}", point_label(p))))?;
        }
        self.declared_work(rk, p, &scope, &mut spec)?;
        spec.steps = rk
            .then
            .iter()
            .zip(steps)
            .map(|(raw, step)| self.step_shape(raw, step, &spec.args, p))
            .collect::<Result<_, _>>()?;
        Ok(spec)
    }

    /// `text` rendered from the sweep at point `p`, refused where it still holds a template's
    /// braces (a brace the rendering wrote itself would reach NVRTC as it is).
    fn rendered(
        &self,
        text: &Spanned<String>,
        what: &str,
        p: &Point,
        scope: &Scope,
    ) -> Result<String, ConfigError> {
        let at = point_label(p);
        let out = (expr::render(text.get_ref(), scope))
            .map_err(|m| self.err(text, format!("{what} at {at}: {m}")))?;
        match is_template(&out) {
            true => Err(self.err(
                text,
                format!("{what} at {at} renders to `{out}`, which still holds `{{{{` or `{{%`: a name NVRTC cannot look up"),
            )),
            false => Ok(out),
        }
    }
}

/// Whether a string is a template the sweep renders.
fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%")
}

/// Where in the kernel's table the part of its launch that failed is written.
fn part_span(rk: &RawKernel, part: Part) -> Range<usize> {
    match part {
        Part::Grid(i) => rk.grid.get_ref()[i].span(),
        Part::Block(i) => rk.block.get_ref()[i].span(),
        Part::Shared => rk
            .shared_bytes
            .as_ref()
            .map_or(rk.name.span(), |s| s.span()),
        Part::Arg(i) => {
            let ra = &rk.args[i];
            ra.len
                .as_ref()
                .or(ra.value.as_ref())
                .map_or(ra.name.span(), |e| e.span())
        }
        Part::Init(i) => {
            let ra = &rk.args[i];
            (ra.init.as_ref().map(|e| e.span()))
                .or(ra.reset.as_ref().map(|e| e.span()))
                .unwrap_or(ra.name.span())
        }
        Part::CheckDim(i) => rk
            .check
            .as_ref()
            .and_then(|c| c.get_ref().dims.get(i))
            .map_or(rk.name.span(), |d| d.span()),
        Part::Whole => rk.name.span(),
    }
}
