//! A kernel's table: its source, entry, arguments and check, and its launch evaluated at
//! every sweep point against the device's limits.

use super::Validator;
use crate::experiment::error::ConfigError;
use crate::experiment::expr::{self, NumExpr};
use crate::experiment::kernel::{
    self, Arg, ArgKind, ArgValue, Check, Kernel, LaunchExprs, Part, REFERENCES,
};
use crate::experiment::schema::{self, RawArg, RawKernel};
use crate::experiment::{point_label, Point, Sources};
use std::path::Path;
use toml::Spanned;

impl Validator<'_> {
    pub(super) fn kernel(
        &self,
        rk: RawKernel,
        points: &[Point],
        has_kernel_check: bool,
    ) -> Result<Kernel, ConfigError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let source_path = dir.join(rk.source.get_ref());
        let module_kind = kernel::ModuleKind::of_path(rk.source.get_ref());
        let entry = rk.entry.get_ref();
        let base = entry.split('<').next().unwrap_or(entry).trim();
        let templated = entry.contains("{{");
        let (source_text, module) = match (self.sources, module_kind) {
            (Sources::Skip, kind) => (
                String::new(),
                kind.map(|kind| kernel::Prebuilt {
                    kind,
                    image: vec![],
                }),
            ),
            (Sources::Read, None) => {
                let t = std::fs::read_to_string(&source_path).map_err(|e| {
                    self.err(&rk.source, format!("cannot read kernel source {}: {e}", source_path.display()))
                        .with_hint("kernel sources are relative to the experiment file, e.g. \"../kernels/matmul.cu\"; a prebuilt module ends in .cubin, .ptx or .fatbin")
                })?;
                if !t
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w == base)
                {
                    return Err(self
                        .err(
                            &rk.entry,
                            format!(
                                "kernel source {} has no function `{base}`",
                                source_path.display()
                            ),
                        )
                        .with_hint(
                            "entry is the __global__ function's name as written in the source",
                        ));
                }
                (t, None)
            }
            (Sources::Read, Some(kind)) => {
                let image = std::fs::read(&source_path).map_err(|e| {
                    self.err(&rk.source, format!("cannot read module {}: {e}", source_path.display()))
                        .with_hint("modules are relative to the experiment file; build one with e.g. `nvcc -cubin -arch=sm_90 -o k.cubin k.cu`")
                })?;
                let found = image
                    .windows(entry.len().max(1))
                    .any(|w| w == entry.as_bytes());
                if templated || !found {
                    return Err(self
                        .err(&rk.entry, format!("module {} has no kernel named `{entry}`", source_path.display()))
                        .with_hint("a module's entry is its symbol as the module names it: the mangled name of a C++ kernel (`cuobjdump -symbols`), or the plain name of an extern \"C\" one"));
                }
                (String::new(), Some(kernel::Prebuilt { kind, image }))
            }
        };
        if let (Some(o), Some(_)) = (&rk.options, &module) {
            return Err(self
                .err(o, "a prebuilt module takes no NVRTC options")
                .with_hint(
                    "options apply to CUDA C sources; build the module with the options instead",
                ));
        }
        for (what, dims) in [("grid", &rk.grid), ("block", &rk.block)] {
            if dims.get_ref().is_empty() || dims.get_ref().len() > 3 {
                return Err(self.err(
                    dims,
                    format!(
                        "{what} needs 1 to 3 dimensions, got {}",
                        dims.get_ref().len()
                    ),
                ));
            }
        }
        let mut args: Vec<Arg> = Vec::new();
        for ra in &rk.args {
            let arg = self.arg(ra)?;
            if args.iter().any(|a| a.name == arg.name) {
                return Err(self.err(&ra.name, format!("argument `{}` appears twice", arg.name)));
            }
            args.push(arg);
        }
        let unchecked = rk.unchecked.as_ref().is_some_and(|u| *u.get_ref());
        if let (Some(u), true) = (
            &rk.unchecked,
            unchecked && (rk.check.is_some() || has_kernel_check),
        ) {
            return Err(self
                .err(u, "a kernel with a check cannot be unchecked")
                .with_hint("keep either a check or unchecked = true"));
        }
        if let (Some(c), true) = (&rk.check, has_kernel_check) {
            return Err(self
                .err(
                    c,
                    "a kernel is checked by a reference or by a kernel, not both",
                )
                .with_hint("keep check = { reference = ... } or check_kernel = { kernel = ... }"));
        }
        let check = match &rk.check {
            None if unchecked || has_kernel_check => None,
            None => {
                let output = args.iter().find(|a| {
                    matches!(
                        a.kind,
                        ArgKind::Buffer {
                            init: schema::Init::Output,
                            ..
                        }
                    )
                });
                if let Some(out) = output {
                    return Err(self
                        .err(&rk.name, format!("kernel `{}` writes `{}` but has no check", rk.name.get_ref(), out.name))
                        .with_hint("add check = { reference = \"matmul\", inputs = [...], output = \"...\", dims = [...] }, or unchecked = true to time it unchecked (every table says so)"));
                }
                None
            }
            Some(rc) => Some(self.check(rc, rc.get_ref(), &args)?),
        };
        let inner = |v: &Spanned<Vec<Spanned<NumExpr>>>| -> Vec<NumExpr> {
            v.get_ref().iter().map(|e| e.get_ref().clone()).collect()
        };
        let (grid, block) = (inner(&rk.grid), inner(&rk.block));
        let shared = rk
            .shared_bytes
            .as_ref()
            .map_or(NumExpr::Int(0), |s| s.get_ref().clone());
        let check_dims: Vec<NumExpr> = check.as_ref().map_or(vec![], |c| c.dims.clone());
        let exprs = LaunchExprs {
            grid: &grid,
            block: &block,
            shared_bytes: &shared,
            args: &args,
            check_dims: &check_dims,
        };
        let mut launches = Vec::with_capacity(points.len());
        for p in points {
            let spec = kernel::evaluate(&exprs, p, self.facts).map_err(|(part, msg)| {
                let at = match part {
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
                    Part::CheckDim(i) => rk
                        .check
                        .as_ref()
                        .and_then(|c| c.get_ref().dims.get(i))
                        .map_or(rk.name.span(), |d| d.span()),
                    Part::Whole => rk.name.span(),
                };
                let scope = crate::experiment::scope(p, self.facts);
                ConfigError::at(
                    self.path,
                    self.text,
                    Some(at),
                    format!(
                        "{msg} (at {}, on {})",
                        point_label(p),
                        self.facts.describe()
                    ),
                )
                .with_hint(format!(
                    "expressions may use the sweep parameters and device facts: {}",
                    expr::names(&scope)
                ))
            })?;
            let mut spec = spec;
            let work = |e: &Option<Spanned<NumExpr>>,
                        what: &str|
             -> Result<Option<f64>, ConfigError> {
                let Some(e) = e else { return Ok(None) };
                let scope = crate::experiment::scope(p, self.facts);
                let v = match expr::eval_exact(e.get_ref(), &scope).map_err(|m| self.err(e, m))? {
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
            };
            let scope = crate::experiment::scope(p, self.facts);
            if rk.entry.get_ref().contains("{{") {
                spec.entry = expr::render(rk.entry.get_ref(), &scope).map_err(|m| {
                    self.err(&rk.entry, format!("entry at {}: {m}", point_label(p)))
                })?;
            }
            if let Some(opts) = &rk.options {
                spec.options = opts
                    .get_ref()
                    .iter()
                    .map(|o| {
                        expr::render(o, &scope).map_err(|m| {
                            self.err(opts, format!("option at {}: {m}", point_label(p)))
                        })
                    })
                    .collect::<Result<_, _>>()?;
            }
            spec.bytes = work(&rk.bytes, "bytes")?;
            spec.flops = work(&rk.flops, "flops")?;
            launches.push(spec);
        }
        Ok(Kernel {
            name: rk.name.into_inner(),
            source: rk.source.into_inner(),
            source_text,
            entry: rk.entry.into_inner(),
            args,
            check,
            check_kernel: None,
            unchecked,
            module,
            launches,
        })
    }

    fn arg(&self, ra: &RawArg) -> Result<Arg, ConfigError> {
        let name = ra.name.get_ref().clone();
        let type_of =
            |t: &Spanned<String>| kernel::TypeSpec::parse(t.get_ref()).map_err(|m| self.err(t, m));
        let kind = match (&ra.buffer, &ra.scalar) {
            (Some(dtype), None) => {
                let dtype = type_of(dtype)?;
                let len = ra.len.clone().ok_or_else(|| {
                    self.err(&ra.name, format!("buffer `{name}` needs a len"))
                        .with_hint("e.g. len = \"n * n\"")
                })?;
                let init = ra.init.as_ref().ok_or_else(|| {
                    self.err(&ra.name, format!("buffer `{name}` needs an init"))
                        .with_hint("init = \"uniform(0, 100)\" for inputs, \"output\" for what the kernel writes")
                })?;
                let init = schema::parse_init(init.get_ref()).map_err(|m| self.err(init, m))?;
                if ra.value.is_some() {
                    return Err(self
                        .err(&ra.name, format!("buffer `{name}` cannot have a value"))
                        .with_hint("use init"));
                }
                ArgKind::Buffer {
                    dtype,
                    len: len.into_inner(),
                    init,
                }
            }
            (None, Some(dtype)) => {
                let dtype = type_of(dtype)?;
                let value = ra.value.clone().ok_or_else(|| {
                    self.err(&ra.name, format!("scalar `{name}` needs a value"))
                        .with_hint("e.g. value = \"n\"")
                })?;
                if ra.len.is_some() || ra.init.is_some() {
                    return Err(self.err(&ra.name, format!("scalar `{name}` takes only a value")));
                }
                ArgKind::Scalar {
                    dtype,
                    value: value.into_inner(),
                }
            }
            _ => return Err(self
                .err(
                    &ra.name,
                    format!("argument `{name}` must be exactly one of a buffer or a scalar"),
                )
                .with_hint(
                    "write buffer = \"f32\" (with len and init) or scalar = \"i32\" (with value)",
                )),
        };
        Ok(Arg { name, kind })
    }

    fn check(
        &self,
        rc: &Spanned<schema::RawCheck>,
        c: &schema::RawCheck,
        args: &[Arg],
    ) -> Result<Check, ConfigError> {
        let known: Vec<&str> = REFERENCES.iter().map(|r| r.0).collect();
        let (_, n_inputs, dims) = REFERENCES
            .iter()
            .find(|r| r.0 == c.reference.get_ref())
            .ok_or_else(|| {
                self.err(
                    &c.reference,
                    format!("unknown reference `{}`", c.reference.get_ref()),
                )
                .with_hint(format!("known references: {}", known.join(", ")))
            })?;
        let is_buffer = |a: &Arg| matches!(a.kind, ArgKind::Buffer { .. });
        let buffer = |name: &Spanned<String>| {
            args.iter()
                .position(|a| a.name == *name.get_ref() && is_buffer(a))
                .ok_or_else(|| {
                    let buffers: Vec<&str> = args
                        .iter()
                        .filter(|a| is_buffer(a))
                        .map(|a| a.name.as_str())
                        .collect();
                    self.err(
                        name,
                        format!("no buffer argument named `{}`", name.get_ref()),
                    )
                    .with_hint(format!("buffers of this kernel: {}", buffers.join(", ")))
                })
        };
        if c.inputs.len() != *n_inputs {
            return Err(self.err(
                rc,
                format!(
                    "reference `{}` takes {n_inputs} input(s), got {}",
                    c.reference.get_ref(),
                    c.inputs.len()
                ),
            ));
        }
        if c.dims.len() != dims.len() {
            return Err(self.err(
                rc,
                format!(
                    "reference `{}` takes dims [{}], got {} value(s)",
                    c.reference.get_ref(),
                    dims.join(", "),
                    c.dims.len()
                ),
            ));
        }
        let inputs = c.inputs.iter().map(buffer).collect::<Result<Vec<_>, _>>()?;
        let output = buffer(&c.output)?;
        if !matches!(
            args[output].kind,
            ArgKind::Buffer {
                init: schema::Init::Output,
                ..
            }
        ) {
            return Err(self.err(
                &c.output,
                format!(
                    "`{}` is checked as an output, so it needs init = \"output\"",
                    c.output.get_ref()
                ),
            ));
        }
        Ok(Check {
            reference: c.reference.get_ref().clone(),
            inputs,
            output,
            dims: c.dims.iter().map(|d| d.get_ref().clone()).collect(),
            tolerance: c.tolerance.unwrap_or(1e-4),
        })
    }

    /// `check_kernel`: the reference kernel exists, takes the same arguments (names, kinds,
    /// dtypes and, at every point, lengths), and the outputs are buffers of them.
    pub(super) fn kernel_check(
        &self,
        kernels: &[Kernel],
        k: usize,
        ck: &Spanned<schema::RawKernelCheck>,
    ) -> Result<crate::experiment::kernel::KernelCheck, ConfigError> {
        let c = ck.get_ref();
        let this = &kernels[k];
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        let r = kernels
            .iter()
            .position(|x| x.name == *c.kernel.get_ref())
            .ok_or_else(|| {
                self.err(
                    &c.kernel,
                    format!("no kernel named `{}`", c.kernel.get_ref()),
                )
                .with_hint(format!("kernels of this experiment: {}", names.join(", ")))
            })?;
        if r == k {
            return Err(self.err(&c.kernel, "a kernel cannot be its own reference"));
        }
        let reference = &kernels[r];
        // The same names and kinds, and at every point the same types and lengths.
        let same = this.args.len() == reference.args.len()
            && this.args.iter().zip(&reference.args).all(|(a, b)| {
                a.name == b.name
                    && matches!(
                        (&a.kind, &b.kind),
                        (ArgKind::Buffer { .. }, ArgKind::Buffer { .. })
                            | (ArgKind::Scalar { .. }, ArgKind::Scalar { .. })
                    )
            })
            && this.launches.iter().zip(&reference.launches).all(|(a, b)| {
                a.args.iter().zip(&b.args).all(|(x, y)| match (x, y) {
                    (
                        ArgValue::Buffer {
                            len: p, dtype: s, ..
                        },
                        ArgValue::Buffer {
                            len: q, dtype: t, ..
                        },
                    ) => p == q && s == t,
                    (ArgValue::Scalar { dtype: s, .. }, ArgValue::Scalar { dtype: t, .. }) => {
                        s == t
                    }
                    _ => false,
                })
            });
        if !same {
            return Err(self
                .err(&c.kernel, format!("kernel `{}` does not take the same arguments as `{}`", reference.name, this.name))
                .with_hint("a reference kernel runs on the same inputs: the same argument names, kinds, dtypes and lengths, in order"));
        }
        let outputs = c
            .outputs
            .iter()
            .map(|o| {
                this.args
                    .iter()
                    .position(|a| {
                        a.name == *o.get_ref() && matches!(a.kind, ArgKind::Buffer { .. })
                    })
                    .ok_or_else(|| {
                        self.err(o, format!("no buffer argument named `{}`", o.get_ref()))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if outputs.is_empty() {
            return Err(self.err(ck, "check_kernel names no outputs"));
        }
        Ok(crate::experiment::kernel::KernelCheck {
            kernel: r,
            outputs,
            rtol: c.rtol,
            atol: c.atol,
        })
    }
}
