//! A kernel's check tolerances at each sweep point: each one the experiment gives, rendered
//! from the sweep where it is a template, read as a number and checked.

use super::validator::Validator;
use crate::experiment::error::ConfigError;
use crate::experiment::expr::Scope;
use crate::experiment::schema::RawKernel;
use crate::experiment::tolerance::ToleranceSpec;
use crate::experiment::{point_label, LaunchSpec, Point, Tolerances};
use toml::Spanned;

impl Validator<'_> {
    /// Sets the tolerances of `rk`'s check in its launch at each of `points`: `check`'s, or
    /// the `(rtol, atol)` given to `check_kernel` or `check_python`.
    pub(super) fn tolerances(
        &self,
        rk: &RawKernel,
        (rtol, atol): (
            Option<&Spanned<ToleranceSpec>>,
            Option<&Spanned<ToleranceSpec>>,
        ),
        points: &[Point],
        launches: &mut [LaunchSpec],
    ) -> Result<(), ConfigError> {
        let check = rk.check.as_ref().map(|c| c.get_ref());
        for (p, launch) in points.iter().zip(launches) {
            let scope = crate::experiment::scope(p, self.facts);
            let at = |spec, key| self.tolerance(spec, key, p, &scope);
            launch.tolerances = Tolerances {
                tolerance: at(check.and_then(|c| c.tolerance.as_ref()), "tolerance")?,
                rtol: at(rtol, "rtol")?,
                atol: at(atol, "atol")?,
            };
        }
        Ok(())
    }

    fn tolerance(
        &self,
        spec: Option<&Spanned<ToleranceSpec>>,
        key: &str,
        p: &Point,
        scope: &Scope,
    ) -> Result<Option<f64>, ConfigError> {
        let Some(spec) = spec else { return Ok(None) };
        let at = match spec.get_ref() {
            ToleranceSpec::Number(_) => String::new(),
            ToleranceSpec::Template(_) => format!(" at {}", point_label(p)),
        };
        spec.get_ref().at(scope).map(Some).map_err(|m| {
            self.err(spec, format!("{key}{at}: {m}")).with_hint(format!(
                "give {key} as a finite number, 0 or more (1e-5), or as text the sweep renders to one (\"{{{{ {{'f16': 1e-3, 'f32': 1e-5}}[dtype] }}}}\")"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::{ConfigError, Experiment, Tolerances};

    /// A kernel checked against a reference kernel over a type axis, with `given` in its
    /// `check_kernel` (line 26).
    fn parse(given: &str) -> Result<Experiment, ConfigError> {
        let kernel = |name: &str, check: &str| {
            format!("[[kernel]]\nname = \"{name}\"\nsource = \"k.cu\"\nentry = \"k<{{{{ dtype | ctype }}}}>\"\ngrid = [1]\nblock = [32]\nargs = [\n  {{ name = \"x\", buffer = \"{{{{ dtype }}}}\", len = 32, init = \"uniform(0, 1)\" }},\n  {{ name = \"y\", buffer = \"{{{{ dtype }}}}\", len = 32, init = \"output\" }},\n]\n{check}\n")
        };
        let text = format!(
            "[experiment]\ntitle = \"t\"\n[sweep]\ndtype = [\"f16\", \"f32\"]\n{}{}[[variant]]\nname = \"hot\"\n",
            kernel("ref", "timed = false"),
            kernel("k", &format!("check_kernel = {{ kernel = \"ref\", outputs = [\"y\"]{given} }}")),
        );
        Experiment::from_text(&text)
    }

    #[test]
    fn a_reference_kernels_tolerances_follow_the_sweep() {
        let e = parse(", rtol = \"{{ {'f16': 1e-3, 'f32': 1e-5}[dtype] }}\", atol = 0").unwrap();
        let at = |p: usize| e.kernels[1].launches[p].tolerances;
        let given = |rtol| Tolerances {
            tolerance: None,
            rtol: Some(rtol),
            atol: Some(0.0),
        };
        assert_eq!((at(0), at(1)), (given(1e-3), given(1e-5)));
        assert_eq!(e.kernels[0].launches[0].tolerances, Tolerances::default());
        let err = parse(", atol = \"{{ 'loose' }}\"").unwrap_err().to_string();
        assert!(
            err.starts_with("e.toml:26:")
                && err.contains(
                    "atol at f16: `{{ 'loose' }}` renders to `loose` here, which is not a number"
                ),
            "{err}"
        );
    }
}
