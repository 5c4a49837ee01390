//! The experiment's kernel tables: each one's source, entry, arguments, roles and check,
//! and its sweep points (its launch at each point: [`super::launches`]).

use super::roles::Roles;
use super::validator::Validator;
use crate::experiment::arg::{self, Arg, ArgKind};
use crate::experiment::error::ConfigError;
use crate::experiment::expr;
use crate::experiment::kernel::{self, Check, Kernel};
use crate::experiment::schema::{self, RawArg, RawCopy, RawKernel, RawKernelCheck};
use crate::experiment::sweep::SweepSpec;
use crate::experiment::{point_label, sweep, Point, Sources, MAX_CELLS};
use indexmap::IndexMap;
use std::path::Path;
use toml::Spanned;

impl Validator<'_> {
    /// The experiment's kernels and copies, each name once, within the cells a run may hold
    /// (their own axes multiply the experiment's), with the checks of one kernel by another.
    pub(super) fn kernels(
        &self,
        raw_kernels: Vec<RawKernel>,
        raw_copies: Vec<RawCopy>,
        points: &[Point],
        variant_names: &[String],
    ) -> Result<Vec<Kernel>, ConfigError> {
        let variants = variant_names.len();
        let mut kernels: Vec<Kernel> = Vec::new();
        let mut kernel_checks = Vec::new();
        let references: Vec<String> = (raw_kernels.iter())
            .filter_map(|k| Some(k.check_kernel.as_ref()?.get_ref().kernel.get_ref().clone()))
            .collect();
        for mut rk in raw_kernels {
            if let Some(t) = rk.timed.as_ref().filter(|t| !*t.get_ref()) {
                if !references.contains(rk.name.get_ref()) {
                    return Err(self
                        .err(t, format!("kernel `{}` is not timed and no kernel's check_kernel names it: it would never run", rk.name.get_ref()))
                        .with_hint(format!("check a kernel against it with check_kernel = {{ kernel = \"{}\", outputs = [...] }}, or remove timed = false", rk.name.get_ref())));
                }
            }
            let kernel_check = rk.check_kernel.take();
            self.name("kernel", &rk.name, rk.name.get_ref())?;
            if kernels.iter().any(|k| k.name == *rk.name.get_ref()) {
                return Err(self.err(
                    &rk.name,
                    format!("kernel `{}` is defined twice", rk.name.get_ref()),
                ));
            }
            let kernel = self.kernel(rk, points, kernel_check.as_ref(), variant_names)?;
            if let Some(ck) = kernel_check {
                kernel_checks.push((kernels.len(), ck));
            }
            kernels.push(kernel);
        }
        for rc in raw_copies {
            self.name("copy", &rc.name, rc.name.get_ref())?;
            if kernels.iter().any(|k| k.name == *rc.name.get_ref()) {
                return Err(self.err(
                    &rc.name,
                    format!("`{}` names a kernel or copy already", rc.name.get_ref()),
                ));
            }
            kernels.push(self.copy(rc, points)?);
        }
        // The kernels' own axes multiply their cells beyond the cap checked before.
        let cells: usize = kernels.iter().map(|k| k.points.len()).sum::<usize>() * variants;
        if cells as u64 > MAX_CELLS {
            return Err(self
                .nowhere(format!("the experiment has {cells} cells with its kernels' own sweeps, more than the {MAX_CELLS} a run may hold"))
                .with_hint("sweep fewer values (a larger step, powers of two) or split the experiment"));
        }
        for (k, ck) in &kernel_checks {
            kernels[*k].check_kernel = Some(self.kernel_check(&kernels, *k, ck)?);
        }
        Ok(kernels)
    }

    pub(super) fn kernel(
        &self,
        rk: RawKernel,
        points: &[Point],
        kernel_check: Option<&Spanned<RawKernelCheck>>,
        variant_names: &[String],
    ) -> Result<Kernel, ConfigError> {
        let has_kernel_check = kernel_check.is_some();
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let source_path = dir.join(rk.source.get_ref());
        let (source_text, module) = self.kernel_code(&rk, &source_path)?;
        if let (Some(o), Some(_)) = (&rk.options, &module) {
            return Err(self
                .err(o, "a prebuilt module takes no NVRTC options")
                .with_hint(
                    "options apply to CUDA C sources; build the module with the options instead",
                ));
        }
        self.dims_counts(&rk)?;
        let args = self.kernel_args(&rk)?;
        let check_python = self.python_check(&rk, &args, dir)?;
        let roles = self.roles(&rk, has_kernel_check)?;
        let checked_elsewise = has_kernel_check || check_python.is_some();
        let check = self.reference_check(&rk, &args, &roles, checked_elsewise)?;
        let steps = rk
            .then
            .iter()
            .map(|step| self.step(step, &rk.name, &args, &source_text, module.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let takes = rk
            .takes
            .as_ref()
            .map(|names| self.arg_indices(names, &args))
            .transpose()?;
        self.no_kernel_reads_pageable(&rk, &args, takes.as_deref(), &steps)?;
        self.bytes_declared_once(&rk)?;
        let (points, base) = self.kernel_points(&rk.sweep, points)?;
        let mut launches = self.launches(&rk, &args, check.as_ref(), &steps, &points, dir)?;
        let given = match (kernel_check, &rk.check_python) {
            (Some(c), _) => (c.get_ref().rtol.as_ref(), c.get_ref().atol.as_ref()),
            (None, Some(c)) => (c.get_ref().rtol.as_ref(), c.get_ref().atol.as_ref()),
            (None, None) => (None, None),
        };
        self.tolerances(&rk, given, &points, &mut launches)?;
        self.npy_files(&rk, &points, &mut launches)?;
        let flops_type = self.counted_as(&rk)?;
        let only_variants = self.only_variants(&rk, variant_names)?;
        let skipped = self.skipped(&rk, &points)?;
        Ok(Kernel {
            name: rk.name.into_inner(),
            source: rk.source.into_inner(),
            source_text,
            entry: rk.entry.into_inner(),
            args,
            check,
            check_kernel: None,
            check_python,
            unchecked: roles.unchecked,
            expect_caught: roles.expect_caught,
            check_only: roles.check_only,
            takes,
            steps,
            copy: None,
            flops_type,
            source_dir: match &module {
                Some(_) => String::new(),
                None => source_path
                    .parent()
                    .map(|d| d.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            },
            module,
            points,
            only_variants,
            skipped,
            base,
            launches,
        })
    }

    /// `variants`: the variants the kernel runs under, each one of the experiment's.
    fn only_variants(
        &self,
        rk: &RawKernel,
        known: &[String],
    ) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(names) = &rk.variants else {
            return Ok(None);
        };
        for name in names.get_ref() {
            if !known.contains(name.get_ref()) {
                return Err(self
                    .err(
                        name,
                        format!(
                            "kernel `{}` names variant `{}`, which the experiment does not have",
                            rk.name.get_ref(),
                            name.get_ref()
                        ),
                    )
                    .with_hint(format!("the variants are {}", known.join(", "))));
            }
        }
        Ok(Some(
            names
                .get_ref()
                .iter()
                .map(|n| n.get_ref().clone())
                .collect(),
        ))
    }

    /// `skip`: at each of the kernel's points, whether its condition holds there.
    fn skipped(&self, rk: &RawKernel, points: &[Point]) -> Result<Vec<bool>, ConfigError> {
        let Some(cond) = &rk.skip else {
            return Ok(vec![false; points.len()]);
        };
        (points.iter())
            .map(|p| {
                let scope = crate::experiment::scope(p, self.facts);
                expr::eval_bool(cond.get_ref(), &scope).map_err(|m| {
                    self.err(cond, format!("skip at {}: {m}", point_label(p)))
                        .with_hint("a condition over the sweep, such as skip = \"n >= 4096\"")
                })
            })
            .collect()
    }

    /// The kernel's code: its CUDA C source's text, or its prebuilt module's image (neither
    /// is read under [`Sources::Skip`]), after checking that it holds the entry.
    fn kernel_code(
        &self,
        rk: &RawKernel,
        source_path: &Path,
    ) -> Result<(String, Option<kernel::Prebuilt>), ConfigError> {
        let module_kind = kernel::ModuleKind::of_path(rk.source.get_ref());
        let entry = rk.entry.get_ref();
        let base = entry.split('<').next().unwrap_or(entry).trim();
        let templated = entry.contains("{{");
        Ok(match (self.sources, module_kind) {
            (Sources::Skip, kind) => (
                String::new(),
                kind.map(|kind| kernel::Prebuilt {
                    kind,
                    image: vec![],
                }),
            ),
            (Sources::Read, None) => {
                let t = crate::files::read_text(source_path, crate::files::MAX_TEXT_BYTES).map_err(|e| {
                    self.err(&rk.source, format!("cannot read kernel source {}: {e}", source_path.display()))
                        .with_hint("kernel sources are relative to the experiment file, e.g. \"../kernels/matmul.cu\"; a prebuilt module ends in .cubin, .ptx or .fatbin")
                })?;
                if !kernel::holds_entry(&t, None, entry) {
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
                let image = crate::files::read(source_path, crate::files::MAX_MODULE_BYTES).map_err(|e| {
                    self.err(&rk.source, format!("cannot read module {}: {e}", source_path.display()))
                        .with_hint("modules are relative to the experiment file; build one with e.g. `nvcc -cubin -arch=sm_90 -o k.cubin k.cu`")
                })?;
                if templated || !kernel::holds_entry("", Some(&image), entry) {
                    return Err(self
                        .err(&rk.entry, format!("module {} has no kernel named `{entry}`", source_path.display()))
                        .with_hint("a module's entry is its symbol as the module names it: the mangled name of a C++ kernel (`cuobjdump -symbols`), or the plain name of an extern \"C\" one"));
                }
                (String::new(), Some(kernel::Prebuilt { kind, image }))
            }
        })
    }

    /// Grid and block each have 1 to 3 dimensions.
    fn dims_counts(&self, rk: &RawKernel) -> Result<(), ConfigError> {
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
        Ok(())
    }

    /// The kernel's arguments, each name once.
    fn kernel_args(&self, rk: &RawKernel) -> Result<Vec<Arg>, ConfigError> {
        let mut args: Vec<Arg> = Vec::new();
        for ra in &rk.args {
            let arg = self.arg(ra)?;
            if args.iter().any(|a| a.name == arg.name) {
                return Err(self.err(&ra.name, format!("argument `{}` appears twice", arg.name)));
            }
            args.push(arg);
        }
        Ok(args)
    }

    /// The kernel's check against a reference, if it has one; a kernel that writes an
    /// output must have some check, or say it runs unchecked.
    fn reference_check(
        &self,
        rk: &RawKernel,
        args: &[Arg],
        roles: &Roles,
        checked_elsewise: bool,
    ) -> Result<Option<Check>, ConfigError> {
        Ok(match &rk.check {
            None if roles.unchecked || checked_elsewise || roles.check_only => None,
            None => {
                // An output, or a buffer reset before every launch (a histogram's bins); a
                // scratch buffer holds nothing to check.
                let output = args.iter().find(|a| {
                    matches!(&a.kind, ArgKind::Buffer { init: arg::InitSpec::Fixed(init), .. }
                        if init.is_written() && *init != schema::Init::Scratch)
                });
                if let Some(out) = output {
                    return Err(self
                        .err(&rk.name, format!("kernel `{}` writes `{}` but has no check", rk.name.get_ref(), out.name))
                        .with_hint("add check = { reference = \"matmul\", ... }, check_kernel = { kernel = ... } or check_python = { function = \"ref.py:f\", outputs = [...] }, or unchecked = true to time it unchecked (every table says so)"));
                }
                None
            }
            Some(rc) => Some(self.check(rc, rc.get_ref(), args)?),
        })
    }

    /// The kernel's points: each of the experiment's, crossed with the kernel's own axes;
    /// with the experiment point each extends.
    pub(super) fn kernel_points(
        &self,
        sweep: &IndexMap<String, Spanned<SweepSpec>>,
        points: &[Point],
    ) -> Result<(Vec<Point>, Vec<usize>), ConfigError> {
        let mut axes = Vec::new();
        for (name, spec) in sweep {
            let axis = sweep::axis(name, spec.get_ref()).map_err(|m| self.err(spec, m))?;
            for n in &axis.names {
                self.name("sweep parameter", spec, n)?;
                let clash = points
                    .first()
                    .is_some_and(|p| p.iter().any(|(m, _)| m == n))
                    || expr::FACT_NAMES.contains(&n.as_str());
                if clash {
                    return Err(self
                        .err(spec, format!("the kernel's sweep parameter `{n}` is already a sweep parameter or device fact"))
                        .with_hint("a kernel's own axes add parameters to the experiment's; give it another name"));
                }
            }
            axes.push(axis);
        }
        let own = sweep::product(&axes);
        let mut kernel_points = Vec::with_capacity(points.len() * own.len());
        let mut base = Vec::with_capacity(kernel_points.capacity());
        for (i, p) in points.iter().enumerate() {
            for extra in &own {
                let mut q = p.clone();
                q.extend(extra.iter().cloned());
                kernel_points.push(q);
                base.push(i);
            }
        }
        Ok((kernel_points, base))
    }

    /// A buffer's `reset`: written by the kernel and set before every launch, so an init
    /// other than "output" would never be seen.
    fn reset(
        &self,
        name: &str,
        init: Option<&Spanned<String>>,
        reset: &Spanned<toml::Value>,
    ) -> Result<arg::InitSpec, ConfigError> {
        if let Some(init) = init.filter(|i| i.get_ref().trim() != "output") {
            return Err(self
                .err(init, format!("buffer `{name}` is reset before every launch, so its init `{}` would never be seen", init.get_ref()))
                .with_hint("leave init out (or write init = \"output\"): a reset buffer is written by the kernel"));
        }
        let value = schema::parse_reset(reset.get_ref()).map_err(|m| {
            self.err(reset, m)
                .with_hint("reset = \"zeros\", or a number the buffer's type holds (reset = -1)")
        })?;
        Ok(arg::InitSpec::Fixed(schema::Init::Reset(value)))
    }

    fn arg(&self, ra: &RawArg) -> Result<Arg, ConfigError> {
        let name = ra.name.get_ref().clone();
        let type_of =
            |t: &Spanned<String>| arg::TypeSpec::parse(t.get_ref()).map_err(|m| self.err(t, m));
        let kind = match (&ra.buffer, &ra.scalar) {
            (Some(dtype), None) => {
                let dtype = type_of(dtype)?;
                let len = ra.len.clone().ok_or_else(|| {
                    self.err(&ra.name, format!("buffer `{name}` needs a len"))
                        .with_hint("e.g. len = \"n * n\"")
                })?;
                let init = match (&ra.init, &ra.reset) {
                    (_, Some(reset)) => self.reset(&name, ra.init.as_ref(), reset)?,
                    (Some(init), None) => {
                        arg::InitSpec::parse(init.get_ref()).map_err(|m| self.err(init, m))?
                    }
                    (None, None) => return Err(self
                        .err(&ra.name, format!("buffer `{name}` needs an init"))
                        .with_hint("init = \"uniform(0, 100)\" for inputs, \"output\" for what the kernel writes, or reset = \"zeros\" for what it writes and must find cleared before every launch")),
                };
                if ra.value.is_some() {
                    return Err(self
                        .err(&ra.name, format!("buffer `{name}` cannot have a value"))
                        .with_hint("use init"));
                }
                let memory = match &ra.memory {
                    Some(m) => arg::Memory::parse(m.get_ref()).map_err(|e| self.err(m, e))?,
                    None => arg::Memory::Device,
                };
                if let (Some(reset), true) = (&ra.reset, memory.on_host()) {
                    return Err(self
                        .err(reset, format!("buffer `{name}` is reset before every launch, but lives in host memory"))
                        .with_hint("a reset is a memset on the GPU: keep the buffer in \"device\" or \"managed\" memory"));
                }
                ArgKind::Buffer {
                    dtype,
                    len: len.into_inner(),
                    init,
                    memory,
                }
            }
            (None, Some(dtype)) => {
                let dtype = type_of(dtype)?;
                let value = ra.value.clone().ok_or_else(|| {
                    self.err(&ra.name, format!("scalar `{name}` needs a value"))
                        .with_hint("e.g. value = \"n\"")
                })?;
                if ra.len.is_some()
                    || ra.init.is_some()
                    || ra.memory.is_some()
                    || ra.reset.is_some()
                {
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
}
