//! A kernel's check: against a CPU reference (`check`), or against another kernel of the
//! experiment run on the same inputs (`check_kernel`).

use super::Validator;
use crate::experiment::arg::{Arg, ArgKind, ArgValue};
use crate::experiment::error::ConfigError;
use crate::experiment::kernel::{Check, Kernel, REFERENCES};
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
        self.not_scratch(&args[output], &c.output)?;
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
        self.tolerance(rc, "tolerance", c.tolerance)?;
        Ok(Check {
            reference: c.reference.get_ref().clone(),
            inputs,
            output,
            dims: c.dims.iter().map(|d| d.get_ref().clone()).collect(),
            tolerance: c.tolerance,
        })
    }

    /// Refuses to check a scratch buffer: the kernel's working space holds whatever it
    /// left there.
    fn not_scratch(&self, arg: &Arg, at: &Spanned<String>) -> Result<(), ConfigError> {
        match &arg.kind {
            ArgKind::Buffer {
                init: schema::Init::Scratch,
                ..
            } => Err(self
                .err(at, format!("`{}` is a scratch buffer, which no check reads", arg.name))
                .with_hint("check the buffers that hold the kernel's result; a scratch buffer is its working space (init = \"scratch\"), left as the kernel leaves it")),
            _ => Ok(()),
        }
    }

    /// A check's tolerance, where given: a finite number, 0 or more.
    fn tolerance<T>(&self, at: &Spanned<T>, key: &str, v: Option<f64>) -> Result<(), ConfigError> {
        match v {
            Some(v) if !(v.is_finite() && v >= 0.0) => Err(self
                .err(at, format!("{key} = {v} is not a tolerance"))
                .with_hint(format!(
                    "give {key} as a finite number, 0 or more, e.g. 1e-5"
                ))),
            _ => Ok(()),
        }
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
            && this
                .launches
                .iter()
                .zip(matched.iter().map(|&i| &reference.launches[i]))
                .all(|(a, b)| {
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
                    .and_then(|i| self.not_scratch(&this.args[i], o).map(|_| i))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if outputs.is_empty() {
            return Err(self.err(ck, "check_kernel names no outputs"));
        }
        self.tolerance(ck, "rtol", c.rtol)?;
        self.tolerance(ck, "atol", c.atol)?;
        Ok(crate::experiment::kernel::KernelCheck {
            kernel: r,
            outputs,
            rtol: c.rtol,
            atol: c.atol,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::{ConfigError, DeviceFacts, Experiment, Sources};
    use std::path::Path;

    /// A kernel `k` of `args`, checked by `check`, beside a reference kernel `r` of
    /// `reference_args`; checked without reading sources.
    fn parse(args: &str, check: &str, reference_args: &str) -> Result<Experiment, ConfigError> {
        let text = format!(
            "[experiment]\ntitle = \"t\"\n[sweep]\nn = [256, 512]\n[[kernel]]\nname = \"r\"\nsource = \"k.cu\"\nentry = \"r\"\ngrid = [1]\nblock = [1]\nargs = [\n{reference_args}\n]\nunchecked = true\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\nargs = [\n{args}\n]\n{check}\n[[variant]]\nname = \"hot\"\n"
        );
        Experiment::parse(
            Path::new("e.toml"),
            &text,
            &DeviceFacts::nominal(),
            Sources::Skip,
        )
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
    }
}
