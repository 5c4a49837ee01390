//! `check_python`: a kernel checked against a Python function of its inputs.

use super::validator::Validator;
use crate::experiment::arg::Arg;
use crate::experiment::error::ConfigError;
use crate::experiment::kernel::PythonCheck;
use crate::experiment::knobs::parse_duration;
use crate::experiment::schema::{RawKernel, RawPythonCheck};
use crate::experiment::Sources;
use std::path::Path;
use toml::Spanned;

/// How long one call may take unless the check says: a NumPy reference of a large output
/// takes seconds, an interpreter's start with torch a few more.
const DEFAULT_TIMEOUT_S: f64 = 120.0;

impl Validator<'_> {
    /// The kernel's `check_python`, where it has one: the file beside the experiment (read,
    /// and holding the function, where sources are read), outputs the kernel writes, and no
    /// other check.
    pub(super) fn python_check(
        &self,
        rk: &RawKernel,
        args: &[Arg],
        dir: &Path,
    ) -> Result<Option<PythonCheck>, ConfigError> {
        let Some(rc) = &rk.check_python else {
            return Ok(None);
        };
        let c: &RawPythonCheck = rc.get_ref();
        let others = [
            rk.check.as_ref().map(|_| "check"),
            rk.check_kernel.as_ref().map(|_| "check_kernel"),
            rk.unchecked
                .as_ref()
                .filter(|u| *u.get_ref())
                .map(|_| "unchecked = true"),
            rk.timed
                .as_ref()
                .filter(|t| !*t.get_ref())
                .map(|_| "timed = false"),
        ];
        if let Some(other) = others.into_iter().flatten().next() {
            return Err(self
                .err(
                    rc,
                    format!("a kernel with check_python cannot also have {other}"),
                )
                .with_hint("a kernel is checked one way: check, check_kernel or check_python"));
        }
        let (file, function) = c.function.get_ref().rsplit_once(':').unwrap_or(("", ""));
        let identifier = |f: &str| {
            f.chars()
                .next()
                .is_some_and(|ch| ch.is_alphabetic() || ch == '_')
                && f.chars().all(|ch| ch.is_alphanumeric() || ch == '_')
        };
        if file.is_empty() || !identifier(function) {
            return Err(self
                .err(&c.function, format!("`{}` names no file and function", c.function.get_ref()))
                .with_hint("write the file (relative to the experiment) and the function: function = \"ref.py:rms_norm\""));
        }
        let path = dir.join(file);
        let text = match self.sources {
            Sources::Skip => String::new(),
            Sources::Read => {
                let text = crate::files::read_text(&path, crate::files::MAX_TEXT_BYTES).map_err(|e| {
                    self.err(&c.function, format!("cannot read the Python reference {}: {e}", path.display()))
                        .with_hint("the file is relative to the experiment file, e.g. \"ref.py\" beside it")
                })?;
                let defined = text.lines().any(|l| {
                    l.strip_prefix("def ")
                        .and_then(|rest| rest.trim_start().strip_prefix(function))
                        .is_some_and(|rest| rest.trim_start().starts_with('('))
                });
                if !defined {
                    return Err(self
                        .err(&c.function, format!("{} defines no function `{function}`", path.display()))
                        .with_hint("the function is defined at the file's top level: def rms_norm(x, w, eps): ..."));
                }
                text
            }
        };
        let outputs = (c.outputs.iter())
            .map(|name| self.python_output(name, args))
            .collect::<Result<Vec<_>, _>>()?;
        if outputs.is_empty() {
            return Err(self.err(rc, "check_python names no outputs"));
        }
        let timeout_s = match &c.timeout {
            None => DEFAULT_TIMEOUT_S,
            Some(t) => parse_duration(t.get_ref())
                .map_err(|m| {
                    self.err(t, format!("check_python timeout: {}", m.0))
                        .with_hint("write a duration such as \"60s\"")
                })?
                .as_secs_f64(),
        };
        let python = match &c.python {
            None => "python3".to_string(),
            Some(p) if p.get_ref().trim().is_empty() => {
                return Err(self
                    .err(p, "check_python's python is empty")
                    .with_hint("name the interpreter: python = \"python3\", or a path to one"));
            }
            Some(p) => p.get_ref().clone(),
        };
        let absolute = std::path::absolute(&path).unwrap_or(path);
        Ok(Some(PythonCheck {
            source: file.to_string(),
            path: absolute.to_string_lossy().into_owned(),
            function: function.to_string(),
            outputs,
            torch: c.torch.unwrap_or(false),
            gpu: c.gpu.unwrap_or(false),
            timeout_s,
            python,
            text,
        }))
    }

    /// An output the function returns: a buffer the kernel writes (`init = "output"`), or
    /// one it updates in place, which the function is also given as it was before the launch.
    fn python_output(&self, name: &Spanned<String>, args: &[Arg]) -> Result<usize, ConfigError> {
        let i = self.buffer_named(name, args)?;
        self.not_scratch(&args[i], name)?;
        self.drawn_if_in_place(&args[i], name)?;
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::{ConfigError, DeviceFacts, Experiment, Sources};

    /// An experiment in `dir` (with `k.cu` and `ref.py` there) whose kernel has `check`.
    fn parse(dir: &std::path::Path, check: &str) -> Result<Experiment, ConfigError> {
        let text = format!("[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [32]\nargs = [\n  {{ name = \"x\", buffer = \"f32\", len = 4, init = \"uniform(0, 1)\" }},\n  {{ name = \"y\", buffer = \"f32\", len = 4, init = \"output\" }},\n]\n{check}\n[[variant]]\nname = \"a\"\n");
        let path = dir.join("e.toml");
        Experiment::parse(&path, &text, &DeviceFacts::nominal(), Sources::Read)
    }

    #[test]
    fn a_python_check_names_its_file_function_and_outputs_or_says_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("k.cu"),
            "extern \"C\" __global__ void k(float *x, float *y) {}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("ref.py"),
            "import numpy as np\n\ndef f(x):\n    return x\n",
        )
        .unwrap();
        let e = parse(
            dir.path(),
            "check_python = { function = \"ref.py:f\", outputs = [\"y\"], timeout = \"30s\" }",
        )
        .unwrap();
        let pc = e.kernels[0].check_python.as_ref().unwrap();
        assert_eq!(
            (pc.source.as_str(), pc.function.as_str(), &pc.outputs[..]),
            ("ref.py", "f", &[1][..])
        );
        assert_eq!(
            (pc.timeout_s, pc.python.as_str(), pc.torch),
            (30.0, "python3", false)
        );
        assert!(pc.text.contains("def f(x)") && e.kernels[0].is_checked() && !pc.gpu);
        let on_gpu = "check_python = { function = \"ref.py:f\", outputs = [\"y\"], gpu = true }";
        let e = parse(dir.path(), on_gpu).unwrap();
        assert!(e.kernels[0].check_python.as_ref().unwrap().gpu);
        // A buffer that holds data may be an output too: updated in place, the function is
        // given it as it was before the launch.
        let in_place = parse(
            dir.path(),
            "check_python = { function = \"ref.py:f\", outputs = [\"x\"] }",
        )
        .unwrap();
        let k = &in_place.kernels[0];
        assert!(k.updates_in_place(0) && !k.updates_in_place(1) && k.writes(0));
        // Updated in place from data the audit cannot draw again: refused, naming the way.
        let text = "[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [32]\nargs = [\n  { name = \"x\", buffer = \"f32\", len = 4, init = \"constant(1)\" },\n]\ncheck_python = { function = \"ref.py:f\", outputs = [\"x\"] }\n[[variant]]\nname = \"a\"\n";
        let err = Experiment::parse(
            &dir.path().join("e.toml"),
            text,
            &DeviceFacts::nominal(),
            Sources::Read,
        )
        .unwrap_err();
        assert!(
            err.message.contains("`x` is updated in place")
                && format!("{err:?}").contains("reset = \\\"zeros\\\""),
            "{err:?}"
        );
        for (check, says) in [
            (
                "check_python = { function = \"gone.py:f\", outputs = [\"y\"] }",
                "cannot read the Python reference",
            ),
            (
                "check_python = { function = \"ref.py:g\", outputs = [\"y\"] }",
                "defines no function `g`",
            ),
            (
                "check_python = { function = \"ref.py\", outputs = [\"y\"] }",
                "names no file and function",
            ),
            (
                "check_python = { function = \"ref.py:f\", outputs = [\"z\"] }",
                "no buffer argument named `z`",
            ),
            (
                "check_python = { function = \"ref.py:f\", outputs = [] }",
                "check_python names no outputs",
            ),
            (
                "check_python = { function = \"ref.py:f\", outputs = [\"y\"], timeout = \"soon\" }",
                "check_python timeout",
            ),
            (
                "check_python = { function = \"ref.py:f\", outputs = [\"y\"] }\nunchecked = true",
                "cannot also have unchecked = true",
            ),
            (
                "check_python = { function = \"ref.py:f\", outputs = [\"y\"], rtol = -1 }",
                "rtol",
            ),
        ] {
            let err = parse(dir.path(), check).unwrap_err().to_string();
            assert!(err.contains(says), "{check}: {err}");
        }
    }
}
