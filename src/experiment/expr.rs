//! Integer expressions over sweep parameters and device facts, evaluated by minijinja
//! (`n * n`, `(n + 31) // 32`, `l2_bytes // 2 // 4`, `1000 if n <= 1024 else 20`).

use minijinja::{Environment, Value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A number or an expression string, as written in the experiment file.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum NumExpr {
    Int(i64),
    Float(f64),
    Expr(String),
}

/// Names an expression may use, with their values.
pub type Scope = BTreeMap<String, Value>;

/// Facts about the device that experiments may use in expressions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceFacts {
    pub l2_bytes: i64,
    pub sm_count: i64,
    pub cc_major: i64,
    pub cc_minor: i64,
    pub mem_bytes: i64,
}

impl DeviceFacts {
    /// What `runner plan` assumes without a GPU: an H100 SXM (the run uses the real device's).
    pub fn nominal() -> Self {
        DeviceFacts {
            l2_bytes: 50 * 1024 * 1024,
            sm_count: 132,
            cc_major: 9,
            cc_minor: 0,
            mem_bytes: 80 * 1024 * 1024 * 1024,
        }
    }

    pub fn add_to(&self, scope: &mut Scope) {
        scope.insert("l2_bytes".into(), Value::from(self.l2_bytes));
        scope.insert("sm_count".into(), Value::from(self.sm_count));
        scope.insert("cc_major".into(), Value::from(self.cc_major));
        scope.insert("cc_minor".into(), Value::from(self.cc_minor));
        scope.insert("mem_bytes".into(), Value::from(self.mem_bytes));
    }
}

/// Evaluates to a number; names not in `scope` are errors, not silently undefined.
pub fn eval_number(expr: &NumExpr, scope: &Scope) -> Result<f64, String> {
    match expr {
        NumExpr::Int(i) => Ok(*i as f64),
        NumExpr::Float(f) => Ok(*f),
        NumExpr::Expr(text) => {
            let mut env = Environment::new();
            env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
            let compiled = env
                .compile_expression(text)
                .map_err(|e| format!("cannot parse expression `{text}`: {}", detail(&e)))?;
            let value = compiled
                .eval(scope)
                .map_err(|e| format!("cannot evaluate `{text}`: {}", detail(&e)))?;
            if value.is_undefined() {
                return Err(format!(
                    "`{text}` is undefined; known names: {}",
                    names(scope)
                ));
            }
            f64::try_from(value.clone())
                .map_err(|_| format!("`{text}` gives {value}, which is not a number"))
        }
    }
}

/// Evaluates to an integer; a fractional result is an error.
pub fn eval_int(expr: &NumExpr, scope: &Scope) -> Result<i64, String> {
    let v = eval_number(expr, scope)?;
    if v.fract() != 0.0 || !v.is_finite() {
        return Err(format!(
            "{} gives {v}, which is not a whole number (use // for integer division)",
            show(expr)
        ));
    }
    Ok(v as i64)
}

fn show(expr: &NumExpr) -> String {
    match expr {
        NumExpr::Int(i) => i.to_string(),
        NumExpr::Float(f) => f.to_string(),
        NumExpr::Expr(e) => format!("`{e}`"),
    }
}

fn detail(e: &minijinja::Error) -> String {
    match e.detail() {
        Some(d) => format!("{} ({d})", e.kind()),
        None => e.kind().to_string(),
    }
}

pub fn names(scope: &Scope) -> String {
    scope.keys().cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(n: i64) -> Scope {
        let mut s = Scope::new();
        s.insert("n".into(), Value::from(n));
        DeviceFacts::nominal().add_to(&mut s);
        s
    }

    #[test]
    fn integer_arithmetic_and_floor_division() {
        let e = NumExpr::Expr("(n + 31) // 32".into());
        assert_eq!(eval_int(&e, &scope(100)).unwrap(), 4);
        assert_eq!(
            eval_int(&NumExpr::Expr("n * n".into()), &scope(2048)).unwrap(),
            2048 * 2048
        );
    }

    #[test]
    fn device_facts_and_conditionals() {
        let e = NumExpr::Expr("l2_bytes // 2 // 4".into());
        assert_eq!(eval_int(&e, &scope(1)).unwrap(), 50 * 1024 * 1024 / 8);
        let e = NumExpr::Expr("1000 if n <= 1024 else 20".into());
        assert_eq!(eval_int(&e, &scope(512)).unwrap(), 1000);
        assert_eq!(eval_int(&e, &scope(4096)).unwrap(), 20);
    }

    #[test]
    fn unknown_name_is_an_error() {
        let err = eval_int(&NumExpr::Expr("m * 2".into()), &scope(1)).unwrap_err();
        assert!(err.contains("m * 2"), "{err}");
    }

    #[test]
    fn syntax_error_and_fraction_are_errors() {
        assert!(eval_int(&NumExpr::Expr("n +* 2".into()), &scope(1)).is_err());
        assert!(eval_int(&NumExpr::Expr("n / 3".into()), &scope(4))
            .unwrap_err()
            .contains("//"));
    }
}
