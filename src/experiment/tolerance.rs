//! A check's tolerances (`tolerance`, `rtol`, `atol`): a number, or text the sweep renders to
//! one at each point, so that a tolerance can follow a type axis
//! (`rtol = "{{ {'f16': 1e-3, 'f32': 1e-5}[dtype] }}"`).

use super::error::BadValue;
use super::expr::{self, Scope};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A tolerance as written.
#[derive(Debug, PartialEq)]
pub enum ToleranceSpec {
    Number(f64),
    /// Rendered from the sweep at each point, then read as a number.
    Template(String),
}

impl ToleranceSpec {
    /// The tolerance at one point: a finite number, 0 or more.
    pub fn at(&self, scope: &Scope) -> Result<f64, BadValue> {
        let v = match self {
            ToleranceSpec::Number(v) => *v,
            ToleranceSpec::Template(text) => {
                let rendered = expr::render(text, scope)?;
                rendered.trim().parse::<f64>().map_err(|_| {
                    BadValue(format!(
                        "`{text}` renders to `{rendered}` here, which is not a number"
                    ))
                })?
            }
        };
        match v.is_finite() && v >= 0.0 {
            true => Ok(v),
            false => Err(BadValue(format!(
                "{v} is not a tolerance: give a finite number, 0 or more (rtol and tolerance are fractions, 1e-3 for 0.1%; atol is in the output's units)"
            ))),
        }
    }
}

/// A number, or the text of a template (read as written: a template of the sweep is
/// rendered at each point).
impl<'de> Deserialize<'de> for ToleranceSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ToleranceSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tolerance: a number such as 1e-5, or text the sweep renders to one")
            }
            fn visit_f64<E>(self, v: f64) -> Result<ToleranceSpec, E> {
                Ok(ToleranceSpec::Number(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<ToleranceSpec, E> {
                Ok(ToleranceSpec::Number(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<ToleranceSpec, E> {
                Ok(ToleranceSpec::Number(v as f64))
            }
            fn visit_str<E>(self, v: &str) -> Result<ToleranceSpec, E> {
                Ok(ToleranceSpec::Template(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A kernel's check tolerances at one point, where the experiment gives them (None: the
/// defaults, by the output's type).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Tolerances {
    /// `check`'s relative error allowed.
    pub tolerance: Option<f64>,
    /// `check_kernel`'s relative and absolute tolerances.
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
}

impl Tolerances {
    /// `check_kernel`'s and `check_python`'s (rtol, atol) for an output of `dtype`: those the
    /// experiment gives, else the type's.
    pub fn for_output(&self, dtype: super::Dtype) -> (f64, f64) {
        let (rtol, atol) = dtype.default_tolerances();
        (self.rtol.unwrap_or(rtol), self.atol.unwrap_or(atol))
    }

    /// Each tolerance with its key in the experiment file.
    pub fn by_key(&self) -> [(&'static str, Option<f64>); 3] {
        [
            ("tolerance", self.tolerance),
            ("rtol", self.rtol),
            ("atol", self.atol),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::SweepValue;

    fn at(spec: &ToleranceSpec, dtype: &str) -> Result<f64, BadValue> {
        let mut scope = Scope::new();
        scope.insert(
            "dtype".into(),
            SweepValue::Text(dtype.to_string()).to_value(),
        );
        spec.at(&scope)
    }

    #[test]
    fn a_template_renders_a_number_per_point_and_anything_else_is_refused() {
        let by_type = ToleranceSpec::Template("{{ {'f16': 1e-3, 'f32': 1e-5}[dtype] }}".into());
        assert_eq!(at(&by_type, "f16"), Ok(1e-3));
        assert_eq!(at(&by_type, "f32"), Ok(1e-5));
        assert_eq!(at(&ToleranceSpec::Template("0.5".into()), "f16"), Ok(0.5));
        let word = ToleranceSpec::Template("{{ dtype }}".into());
        let e = at(&word, "f16").unwrap_err();
        assert_eq!(
            e.0,
            "`{{ dtype }}` renders to `f16` here, which is not a number"
        );
        assert!(at(&ToleranceSpec::Number(-1.0), "f16").is_err());
        assert!(at(&ToleranceSpec::Template("inf".into()), "f16").is_err());
        assert!(at(&by_type, "bf16").is_err(), "a key the map lacks");
    }

    #[test]
    fn a_tolerance_reads_numbers_and_strings() {
        #[derive(Deserialize)]
        struct T {
            rtol: ToleranceSpec,
        }
        let read = |text: &str| toml::from_str::<T>(text).map(|t| t.rtol);
        assert_eq!(read("rtol = 0").unwrap(), ToleranceSpec::Number(0.0));
        assert_eq!(read("rtol = 1e-5").unwrap(), ToleranceSpec::Number(1e-5));
        assert_eq!(
            read("rtol = \"{{ x }}\"").unwrap(),
            ToleranceSpec::Template("{{ x }}".into())
        );
        let e = read("rtol = true").unwrap_err().to_string();
        assert!(e.contains("a number such as 1e-5"), "{e}");
    }
}
