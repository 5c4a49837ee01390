//! A kernel's check: against a CPU reference (`check`), or against another kernel of the
//! experiment run on the same inputs (`check_kernel`).

use super::validator::Validator;
use crate::experiment::arg::{Arg, ArgKind, ArgValue, InitSpec};
use crate::experiment::error::ConfigError;
use crate::experiment::kernel::{Check, Kernel, KernelCheck, REFERENCES};
use crate::experiment::schema;
use toml::Spanned;

impl Validator<'_> {
    pub(super) fn check(
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
        let buffer = |name: &Spanned<String>| self.buffer_named(name, args);
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
        for (&i, name) in inputs.iter().zip(&c.inputs) {
            if matches!(&args[i].kind, ArgKind::Buffer { init, .. } if init.is_written()) {
                return Err(self
                    .err(name, format!("`{}` is written by the kernel, so the reference would read no data in it", name.get_ref()))
                    .with_hint("the check's inputs are buffers the kernel reads (an init such as \"uniform(0, 1)\")"));
            }
        }
        let output = buffer(&c.output)?;
        self.not_scratch(&args[output], &c.output)?;
        if !matches!(
            args[output].kind,
            ArgKind::Buffer {
                init: InitSpec::Fixed(schema::Init::Output),
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
        })
    }

    /// The buffer argument `name` names, or an error listing the kernel's buffers.
    pub(super) fn buffer_named(
        &self,
        name: &Spanned<String>,
        args: &[Arg],
    ) -> Result<usize, ConfigError> {
        let is_buffer = |a: &Arg| matches!(a.kind, ArgKind::Buffer { .. });
        (args.iter())
            .position(|a| a.name == *name.get_ref() && is_buffer(a))
            .ok_or_else(|| {
                let buffers: Vec<&str> = (args.iter())
                    .filter(|a| is_buffer(a))
                    .map(|a| a.name.as_str())
                    .collect();
                self.err(
                    name,
                    format!("no buffer argument named `{}`", name.get_ref()),
                )
                .with_hint(format!("buffers of this kernel: {}", buffers.join(", ")))
            })
    }

    /// Refuses to check a scratch buffer: the kernel's working space holds whatever it
    /// left there.
    pub(super) fn not_scratch(&self, arg: &Arg, at: &Spanned<String>) -> Result<(), ConfigError> {
        match &arg.kind {
            ArgKind::Buffer {
                init: InitSpec::Fixed(schema::Init::Scratch),
                ..
            } => Err(self
                .err(at, format!("`{}` is a scratch buffer, which no check reads", arg.name))
                .with_hint("check the buffers that hold the kernel's result; a scratch buffer is its working space (init = \"scratch\"), left as the kernel leaves it")),
            _ => Ok(()),
        }
    }

    /// Refuses an output updated in place (compared after the launch, holding data before
    /// it) whose data the GPU cannot draw: the audit gives each audited launch data no
    /// launch has seen and draws such an output again from the region's seed to know what
    /// the launch read, which a constant, a range, a file or a pointer chase it cannot.
    pub(super) fn drawn_if_in_place(
        &self,
        arg: &Arg,
        at: &Spanned<String>,
    ) -> Result<(), ConfigError> {
        use schema::Init::{Chase, Constant, Iota, Npy};
        match &arg.kind {
            ArgKind::Buffer {
                init: InitSpec::Fixed(Constant(_) | Iota(..) | Chase(_) | Npy { .. }),
                ..
            } => Err(self
                .err(at, format!("`{}` is updated in place (a checked output that holds data before the launch), from an init the audit cannot draw again", arg.name))
                .with_hint(format!("give `{}` a drawn init, such as init = \"uniform(-1, 1)\" or \"normal(0, 1)\", which each audited region draws anew; a kernel that only adds into it wants reset = \"zeros\" (set before every launch) instead", arg.name))),
            _ => Ok(()),
        }
    }

    /// `check_kernel`: the reference kernel exists and is given the checked kernel's
    /// arguments by name (any of them, in its own order): what both have is of the same kind
    /// and, at every point, type and length (a scalar: value); what the reference alone has
    /// is a buffer it writes or a scalar; the outputs are buffers of both.
    pub(super) fn kernel_check(
        &self,
        kernels: &[Kernel],
        k: usize,
        ck: &Spanned<schema::RawKernelCheck>,
    ) -> Result<KernelCheck, ConfigError> {
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
        // At each of the kernel's points, the reference's point that agrees with it.
        let matched: Vec<usize> = this
            .points
            .iter()
            .map(|p| reference.point_for(p))
            .collect::<Option<_>>()
            .ok_or_else(|| {
                self.err(&c.kernel, format!("kernel `{}` is not swept over the points of `{}`", reference.name, this.name))
                    .with_hint("a reference kernel's own axes must be among the kernel's; the experiment's sweep is shared")
            })?;
        let from = self.by_name(&c.kernel, this, reference)?;
        self.same_arguments(&c.kernel, this, reference, &matched, &from)?;
        let outputs = self.compared_outputs(&c.outputs, this, reference, &from)?;
        if outputs.is_empty() {
            return Err(self.err(ck, "check_kernel names no outputs"));
        }
        Ok(KernelCheck {
            kernel: r,
            from,
            outputs,
        })
    }

    /// What the kernel and its reference both take agrees at every point (`matched`: the
    /// reference's point for each of the kernel's): buffers in type and length, scalars in
    /// type and value.
    fn same_arguments(
        &self,
        at: &Spanned<String>,
        this: &Kernel,
        reference: &Kernel,
        matched: &[usize],
        from: &[Option<usize>],
    ) -> Result<(), ConfigError> {
        for (p, &q) in matched.iter().enumerate() {
            let (mine, theirs) = (&this.launches[p].args, &reference.launches[q].args);
            for (j, i) in from.iter().enumerate() {
                let Some(i) = *i else { continue };
                let differ = |what: String| {
                    self.err(at, format!("`{}` is {what} {}", this.args[i].name, self.at_point(&this.points[p])))
                        .with_hint("a reference kernel is given the checked kernel's arguments by name: the same types, lengths and scalar values")
                };
                match (&mine[i], &theirs[j]) {
                    (
                        ArgValue::Buffer { dtype, len, .. },
                        ArgValue::Buffer {
                            dtype: t, len: n, ..
                        },
                    ) if (dtype, len) != (t, n) => {
                        return Err(differ(format!(
                            "{len} elements of {} in `{}` but {n} of {} in `{}`",
                            dtype.key(),
                            this.name,
                            t.key(),
                            reference.name
                        )));
                    }
                    (
                        ArgValue::Scalar { dtype, bytes },
                        ArgValue::Scalar { dtype: t, bytes: b },
                    ) if (dtype, bytes) != (t, b) => {
                        return Err(differ(format!(
                            "{} {} in `{}` but {} {} in `{}`",
                            dtype.key(),
                            dtype.read(bytes),
                            this.name,
                            t.key(),
                            t.read(b),
                            reference.name
                        )));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// `check_kernel`'s outputs: buffers of both kernels, written (not scratch) by both.
    fn compared_outputs(
        &self,
        outputs: &[Spanned<String>],
        this: &Kernel,
        reference: &Kernel,
        from: &[Option<usize>],
    ) -> Result<Vec<usize>, ConfigError> {
        outputs
            .iter()
            .map(|o| {
                let is =
                    |a: &Arg| a.name == *o.get_ref() && matches!(a.kind, ArgKind::Buffer { .. });
                let i = this.args.iter().position(is).ok_or_else(|| {
                    self.err(o, format!("no buffer argument named `{}`", o.get_ref()))
                })?;
                self.not_scratch(&this.args[i], o)?;
                self.drawn_if_in_place(&this.args[i], o)?;
                let j = from.iter().position(|f| *f == Some(i)).ok_or_else(|| {
                    self.err(
                        o,
                        format!(
                            "kernel `{}` has no argument `{}` to compare with",
                            reference.name,
                            o.get_ref()
                        ),
                    )
                    .with_hint("an output is compared with the reference's buffer of the same name")
                })?;
                self.not_scratch(&reference.args[j], o)?;
                Ok(i)
            })
            .collect()
    }

    /// For each of the reference's arguments, the checked kernel's of the same name, of
    /// the same kind; None for one the reference alone has, which must be a scalar or a
    /// buffer it writes: it runs on the checked kernel's inputs, not data of its own.
    fn by_name(
        &self,
        at: &Spanned<String>,
        this: &Kernel,
        reference: &Kernel,
    ) -> Result<Vec<Option<usize>>, ConfigError> {
        let hint = format!("a reference kernel is given the checked kernel's inputs by name: give `{}` the argument (its entry need not take it: `takes`), or make it one the reference writes (init = \"output\" or \"scratch\")", this.name);
        let reads = |a: &Arg| matches!(&a.kind, ArgKind::Buffer { init, .. } if !init.is_written());
        let mut from = Vec::with_capacity(reference.args.len());
        for b in &reference.args {
            let Some(i) = this.args.iter().position(|a| a.name == b.name) else {
                if reads(b) {
                    return Err(self
                        .err(
                            at,
                            format!(
                                "kernel `{}` reads `{}`, which `{}` does not have",
                                reference.name, b.name, this.name
                            ),
                        )
                        .with_hint(hint));
                }
                from.push(None);
                continue;
            };
            let a = &this.args[i];
            let kind = |a: &Arg| match a.kind {
                ArgKind::Buffer { .. } => "a buffer",
                ArgKind::Scalar { .. } => "a scalar",
            };
            if kind(a) != kind(b) {
                return Err(self.err(
                    at,
                    format!(
                        "`{}` is {} of `{}` but {} of `{}`",
                        a.name,
                        kind(a),
                        this.name,
                        kind(b),
                        reference.name
                    ),
                ));
            }
            if reads(b) && !reads(a) {
                return Err(self
                    .err(
                        at,
                        format!(
                            "kernel `{}` reads `{}`, which `{}` writes: it would read no data",
                            reference.name, b.name, this.name
                        ),
                    )
                    .with_hint(hint));
            }
            from.push(Some(i));
        }
        Ok(from)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::{ConfigError, Experiment};

    /// A kernel `k` of `args`, checked by `check`, beside a reference kernel `r` of
    /// `reference_args`; checked without reading sources.
    fn parse(args: &str, check: &str, reference_args: &str) -> Result<Experiment, ConfigError> {
        let text = format!(
            "[experiment]\ntitle = \"t\"\n[sweep]\nn = [256, 512]\n[[kernel]]\nname = \"r\"\nsource = \"k.cu\"\nentry = \"r\"\ngrid = [1]\nblock = [1]\nargs = [\n{reference_args}\n]\nunchecked = true\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\nargs = [\n{args}\n]\n{check}\n[[variant]]\nname = \"hot\"\n"
        );
        Experiment::from_text(&text)
    }

    /// The error, asserted to be on the check's line.
    fn error(args: &str, check: &str, reference_args: &str) -> ConfigError {
        let e = parse(args, check, reference_args).unwrap_err();
        let line = 22 + args.lines().count() + reference_args.lines().count();
        assert_eq!(e.position.map(|p| p.0), Some(line), "{e}");
        e
    }

    const X: &str = r#"{ name = "x", buffer = "f32", len = "n", init = "uniform(0, 1)" },"#;
    const Y: &str = r#"{ name = "y", buffer = "f32", len = "n", init = "output" },"#;
    const TMP: &str = r#"{ name = "tmp", buffer = "f32", len = "n", init = "scratch" },"#;
    const N: &str = r#"{ name = "n", scalar = "i32", value = "n" },"#;

    #[test]
    fn a_scratch_buffer_is_written_but_never_checked() {
        let all = [X, Y, TMP, N].join("\n");
        let e = parse(
            &all,
            r#"check_kernel = { kernel = "r", outputs = ["y"] }"#,
            &all,
        )
        .unwrap();
        assert!(
            e.kernels[1].writes(2),
            "the kernel may write its scratch buffer"
        );
        let err = error(
            &all,
            r#"check_kernel = { kernel = "r", outputs = ["tmp"] }"#,
            &all,
        );
        assert_eq!(
            err.message,
            "`tmp` is a scratch buffer, which no check reads"
        );
        let check = r#"check = { reference = "copy", inputs = ["x"], output = "tmp" }"#;
        let err = error(&[X, TMP, N].join("\n"), check, &all);
        assert_eq!(
            err.message,
            "`tmp` is a scratch buffer, which no check reads"
        );
        let check = r#"check = { reference = "copy", inputs = ["tmp"], output = "y" }"#;
        let err = error(&[X, Y, TMP, N].join("\n"), check, &all);
        assert_eq!(
            err.message,
            "`tmp` is written by the kernel, so the reference would read no data in it"
        );
    }

    const CHECK: &str = r#"check_kernel = { kernel = "r", outputs = ["y"] }"#;

    #[test]
    fn a_reference_takes_the_kernels_arguments_by_name_in_its_own_order() {
        let own = r#"{ name = "sum", buffer = "f64", len = 1, init = "output" },"#;
        let reference = [N, own, Y, X].join("\n");
        let e = parse(&[X, Y, TMP, N].join("\n"), CHECK, &reference).unwrap();
        let kc = e.kernels[1].check_kernel.as_ref().unwrap();
        assert_eq!(kc.from, [Some(3), None, Some(1), Some(0)]);
        assert_eq!(
            (kc.outputs.clone(), kc.reference_arg(1)),
            (vec![1], Some(2))
        );
        // Same arguments in the same order, as before: each given as itself.
        let same = [X, Y, N].join("\n");
        let e = parse(&same, CHECK, &same).unwrap();
        let kc = e.kernels[1].check_kernel.as_ref().unwrap();
        assert_eq!(kc.from, [Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn what_a_reference_takes_by_name_must_agree_with_the_kernel() {
        let all = [X, Y, N].join("\n");
        let bias = r#"{ name = "bias", buffer = "f32", len = "n", init = "uniform(0, 1)" },"#;
        let e = error(&all, CHECK, &[X, Y, bias, N].join("\n"));
        assert_eq!(
            e.message,
            "kernel `r` reads `bias`, which `k` does not have"
        );
        assert!(e.hint.unwrap().contains("give `k` the argument"));
        let longer = X.replace("len = \"n\"", "len = \"2 * n\"");
        let e = error(&all, CHECK, &[&longer, Y, N].join("\n"));
        assert!(
            e.message
                .starts_with("`x` is 256 elements of f32 in `k` but 512 of f32 in `r` (at 256, on"),
            "{e}"
        );
        let e = error(
            &all,
            CHECK,
            &[X, Y, &N.replace("value = \"n\"", "value = \"n + 1\"")].join("\n"),
        );
        assert!(
            e.message
                .starts_with("`n` is i32 256 in `k` but i32 257 in `r`"),
            "{e}"
        );
        let e = error(
            &all,
            CHECK,
            &[r#"{ name = "x", scalar = "f32", value = 1 },"#, Y, N].join("\n"),
        );
        assert_eq!(e.message, "`x` is a buffer of `k` but a scalar of `r`");
        let e = error(
            &all,
            CHECK,
            &[X, &Y.replace("output", "uniform(0, 1)"), N].join("\n"),
        );
        assert_eq!(
            e.message,
            "kernel `r` reads `y`, which `k` writes: it would read no data"
        );
        let e = error(&all, CHECK, &[X, N].join("\n"));
        assert_eq!(e.message, "kernel `r` has no argument `y` to compare with");
    }
}
