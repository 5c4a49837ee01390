//! Integer expressions over sweep parameters and device facts, evaluated by minijinja
//! (`n * n`, `(n + 31) // 32`, `l2_bytes // 2 // 4`, `1000 if n <= 1024 else 20`), and
//! template strings of the sweep. Both are bounded: their length, minijinja's steps (fuel)
//! and what a template renders, so no file can make `plan` loop or recurse without end.

use super::error::BadValue;
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

/// Facts about the device: those experiments may use in expressions, and the limits a
/// kernel's launch and buffers are checked against.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceFacts {
    pub l2_bytes: i64,
    pub sm_count: i64,
    pub cc_major: i64,
    pub cc_minor: i64,
    pub mem_bytes: i64,
    pub max_threads_per_block: i64,
    pub max_block: [i64; 3],
    pub max_grid: [i64; 3],
    /// Dynamic shared memory a block may opt in to.
    pub max_shared_bytes: i64,
    pub sm_clock_max_mhz: i64,
    /// The memory clock and bus, for the DRAM's peak (plan's estimate of a kernel's time).
    #[serde(default)]
    pub mem_clock_max_mhz: i64,
    #[serde(default)]
    pub mem_bus_width_bits: Option<i64>,
    /// Whether these are the real device's facts or the assumed ones.
    pub assumed: bool,
}

/// Names reserved for device facts in expressions.
pub const FACT_NAMES: &[&str] = &[
    "l2_bytes",
    "sm_count",
    "cc_major",
    "cc_minor",
    "mem_bytes",
    "sm_clock_mhz",
];

impl DeviceFacts {
    /// What `runner plan` assumes without a GPU: an H100 SXM (the run uses the real device's).
    pub fn nominal() -> Self {
        DeviceFacts {
            l2_bytes: 50 * 1024 * 1024,
            sm_count: 132,
            cc_major: 9,
            cc_minor: 0,
            mem_bytes: 80 * 1024 * 1024 * 1024,
            max_threads_per_block: 1024,
            max_block: [1024, 1024, 64],
            max_grid: [(1 << 31) - 1, 65535, 65535],
            max_shared_bytes: 227 * 1024,
            sm_clock_max_mhz: 1980,
            mem_clock_max_mhz: 2619,
            mem_bus_width_bits: Some(5120),
            assumed: true,
        }
    }

    /// How `runner plan` and the report name the device the plan was checked against.
    pub fn describe(&self) -> String {
        format!(
            "{} (L2 {} MiB, {} SMs, compute capability {}.{}, {} GiB)",
            if self.assumed {
                "an assumed H100"
            } else {
                "the run's device"
            },
            self.l2_bytes >> 20,
            self.sm_count,
            self.cc_major,
            self.cc_minor,
            self.mem_bytes >> 30
        )
    }

    pub fn add_to(&self, scope: &mut Scope) {
        scope.insert("l2_bytes".into(), Value::from(self.l2_bytes));
        scope.insert("sm_count".into(), Value::from(self.sm_count));
        scope.insert("cc_major".into(), Value::from(self.cc_major));
        scope.insert("cc_minor".into(), Value::from(self.cc_minor));
        scope.insert("mem_bytes".into(), Value::from(self.mem_bytes));
        // The driver's maximum SM clock, which a loaded H100 runs at (cycles from times).
        scope.insert("sm_clock_mhz".into(), Value::from(self.sm_clock_max_mhz));
    }
}

/// The longest expression or template string of an experiment, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 1024;
/// Steps (minijinja's fuel) an expression or a template string of the sweep may take.
pub const FUEL: u64 = 100_000;
/// The longest text a template string of the sweep renders to, in bytes.
pub const MAX_RENDERED_BYTES: usize = 4096;

/// A minijinja environment for text from a file: undefined names are errors, and a
/// template or expression runs out of fuel after `fuel` steps instead of looping on.
pub fn environment(fuel: u64) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_fuel(Some(fuel));
    env
}

/// Refuses an expression or template string too long to be one a person wrote; its
/// length also bounds its depth, which minijinja evaluates by recursion.
fn bounded(text: &str) -> Result<(), BadValue> {
    if text.len() <= MAX_EXPRESSION_BYTES {
        return Ok(());
    }
    let start: String = text.chars().take(30).collect();
    Err(BadValue(format!(
        "`{start}…` is {} bytes long, more than the {MAX_EXPRESSION_BYTES} an expression or template may be: shorten it",
        text.len()
    )))
}

/// A writer that refuses text beyond its cap: what a template renders is bounded too.
pub struct Capped {
    pub bytes: Vec<u8>,
    cap: usize,
}

impl Capped {
    pub fn new(cap: usize) -> Self {
        Capped {
            bytes: Vec::new(),
            cap,
        }
    }
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > self.cap {
            return Err(std::io::Error::other(format!(
                "it renders to more than {}",
                crate::files::size_text(self.cap as u64)
            )));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Renders a template of the sweep (`"-DBLOCK={{ block }}"`, `"softmax<{{ dtype | ctype }}>"`):
/// an undefined name is an error, and the `ctype` filter turns a type name (`"bf16"`) into
/// the CUDA C type it is stored as (`__nv_bfloat16`).
pub fn render(template: &str, scope: &Scope) -> Result<String, BadValue> {
    bounded(template)?;
    let mut env = environment(FUEL);
    env.add_filter("ctype", |name: String| {
        super::Dtype::parse(&name)
            .map(|d| d.c_type())
            .ok_or_else(|| {
                minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!("ctype: `{name}` is not a type"),
                )
            })
    });
    let mut out = Capped::new(MAX_RENDERED_BYTES);
    env.template_from_str(template)
        .and_then(|t| t.render_captured_to(scope, &mut out).map(|_| ()))
        .map_err(|e| BadValue(format!("cannot render `{template}`: {}", detail(&e))))?;
    String::from_utf8(out.bytes)
        .map_err(|_| BadValue(format!("`{template}` renders to bytes that are not text")))
}

fn eval_value(text: &str, scope: &Scope) -> Result<Value, BadValue> {
    bounded(text)?;
    let env = environment(FUEL);
    let text_with_powers = powers(text);
    let compiled = env
        .compile_expression(&text_with_powers)
        .map_err(|e| BadValue(format!("cannot parse expression `{text}`: {}", detail(&e))))?;
    let value = compiled
        .eval(scope)
        .map_err(|e| BadValue(format!("cannot evaluate `{text}`: {}", detail(&e))))?;
    if value.is_undefined() {
        return Err(BadValue(format!(
            "`{text}` is undefined; known names: {}",
            names(scope)
        )));
    }
    Ok(value)
}

/// `text` with each `^` outside a string as `**`: a power, as sweep values write it
/// (`2^20`), where minijinja knows only `**`.
fn powers(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('^') {
        return text.into();
    }
    let mut quote = None;
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if q == c => quote = None,
            (None, '^') => {
                out.push_str("**");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out.into()
}

/// Evaluates to an integer, exactly (no detour through f64); a fraction is an error.
pub fn eval_int(expr: &NumExpr, scope: &Scope) -> Result<i64, BadValue> {
    match eval_exact(expr, scope)? {
        Number::Int(i) => i64::try_from(i).map_err(|_| {
            BadValue(format!(
                "{} gives {i}, which does not fit 64 bits",
                show(expr)
            ))
        }),
        Number::Float(v) => Err(BadValue(format!(
            "{} gives {v}, which is not a whole number (use // for integer division)",
            show(expr)
        ))),
    }
}

/// A value as an expression gives it: a whole number kept exact, or a fraction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Int(i128),
    Float(f64),
}

/// `v` to `digits` significant digits, as short as that allows: a template's arithmetic
/// (`3 * 0.0043724`) reads 0.0131172, not 0.013117199999999999; a tick 20, not 2.00e1.
pub fn significant(v: f64, digits: usize) -> String {
    format!("{v:.0$e}", digits.saturating_sub(1))
        .parse::<f64>()
        .map_or_else(|_| v.to_string(), |r| r.to_string())
}

/// Evaluates to a number without losing integer precision; `4.0` counts as whole.
pub fn eval_exact(expr: &NumExpr, scope: &Scope) -> Result<Number, BadValue> {
    let value = match expr {
        NumExpr::Int(i) => return Ok(Number::Int(*i as i128)),
        NumExpr::Float(f) => *f,
        NumExpr::Expr(text) => {
            let v = eval_value(text, scope)?;
            if v.is_integer() {
                return i128::try_from(v.clone())
                    .map(Number::Int)
                    .map_err(|_| BadValue(format!("`{text}` gives {v}, which is too large")));
            }
            f64::try_from(v.clone())
                .map_err(|_| BadValue(format!("`{text}` gives {v}, which is not a number")))?
        }
    };
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 2f64.powi(63) {
        Ok(Number::Int(value as i128))
    } else if value.is_finite() {
        Ok(Number::Float(value))
    } else {
        Err(BadValue(format!(
            "{} gives {value}, which is not finite",
            show(expr)
        )))
    }
}

/// Evaluates a condition (a peer's `when = "n <= 1024"`).
pub fn eval_bool(text: &str, scope: &Scope) -> Result<bool, BadValue> {
    eval_value(text, scope).map(|v| v.is_true())
}

/// Evaluates to a float (a derived metric: `time_ns / steps`); NaN stays NaN.
pub fn eval_float(text: &str, scope: &Scope) -> Result<f64, BadValue> {
    let v = eval_value(text, scope)?;
    f64::try_from(v.clone())
        .map_err(|_| BadValue(format!("`{text}` gives {v}, which is not a number")))
}

/// An expression as a person wrote it: `n * n` in backquotes, a number as it is.
pub fn show(expr: &NumExpr) -> String {
    match expr {
        NumExpr::Int(i) => i.to_string(),
        NumExpr::Float(f) => f.to_string(),
        NumExpr::Expr(e) => format!("`{e}`"),
    }
}

/// What went wrong, with the limit and the fix where a bound was met.
pub fn detail(e: &minijinja::Error) -> String {
    if e.kind() == minijinja::ErrorKind::OutOfFuel {
        return "it takes more steps than the runner allows (minijinja's fuel): nested loops or a long range? write it more simply".into();
    }
    if let Some(cause) = std::error::Error::source(e) {
        return format!("{} ({cause})", e.kind());
    }
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
    fn large_integers_stay_exact() {
        let e = NumExpr::Expr("2 ** 53 + 1".into());
        assert_eq!(eval_int(&e, &scope(1)).unwrap(), (1i64 << 53) + 1);
        assert_eq!(
            eval_exact(&NumExpr::Expr("2 ** 32".into()), &scope(1)).unwrap(),
            Number::Int(1 << 32)
        );
        assert_eq!(
            eval_exact(&NumExpr::Float(1.5), &scope(1)).unwrap(),
            Number::Float(1.5)
        );
    }

    #[test]
    fn a_caret_is_a_power_as_in_sweeps() {
        let e = |t: &str| eval_int(&NumExpr::Expr(t.into()), &scope(10));
        assert_eq!(e("2^30").unwrap(), 1 << 30);
        assert_eq!(e("2^n * 3").unwrap(), 3 << 10);
        assert_eq!(e("2 ** 4").unwrap(), 16);
        // Inside a string it stays a caret.
        assert_eq!(e("{'a^b': 7}['a^b']").unwrap(), 7);
    }

    #[test]
    fn unknown_name_is_an_error() {
        let err = eval_int(&NumExpr::Expr("m * 2".into()), &scope(1)).unwrap_err();
        assert!(err.0.contains("m * 2"), "{err}");
    }

    #[test]
    fn long_deep_or_endless_expressions_and_templates_are_refused() {
        let terms = vec!["1"; 30_000].join("+");
        let e = eval_int(&NumExpr::Expr(terms), &scope(1)).unwrap_err();
        assert!(e.0.contains("more than the 1024"), "{e}");
        // As long as allowed, and as deep as that allows, it evaluates.
        let terms = vec!["1"; 500].join("+");
        assert_eq!(eval_int(&NumExpr::Expr(terms), &scope(1)).unwrap(), 500);
        let nested = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(eval_int(&NumExpr::Expr(nested), &scope(1)).is_err());
        let loops =
            "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}";
        let e = render(loops, &scope(1)).unwrap_err();
        assert!(
            e.0.contains("renders to more than 4096") || e.0.contains("fuel"),
            "{e}"
        );
        let e = render("{% for a in range(100000) %}{% endfor %}", &scope(1)).unwrap_err();
        assert!(e.0.contains("fuel"), "{e}");
        let e = render("{{ \"x\" * 100000 }}", &scope(1)).unwrap_err();
        assert!(e.0.contains("4096"), "{e}");
        let e = render(
            "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
            &scope(1),
        )
        .unwrap_err();
        assert!(!e.0.is_empty());
    }

    #[test]
    fn syntax_error_and_fraction_are_errors() {
        assert!(eval_int(&NumExpr::Expr("n +* 2".into()), &scope(1)).is_err());
        assert!(eval_int(&NumExpr::Expr("n / 3".into()), &scope(4))
            .unwrap_err()
            .0
            .contains("//"));
    }
}
