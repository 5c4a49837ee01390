//! Sweep values: a list (integers, floats, powers of two `"2^20"`, or names such as types),
//! an inclusive range with a step (`256..2048 step 32`), powers of two (`2^8..2^12`), or a
//! zipped group of equal-length lists (`shape = { m = [..], n = [..] }`, one point per
//! position). Axes combine as a cartesian product in file order.

use super::error::BadValue;
use super::expr::{DeviceFacts, Scope};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One parameter's values as written in the file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum SweepSpec {
    List(Vec<ListItem>),
    One(i64),
    Text(String),
    Zip(IndexMap<String, Vec<ListItem>>),
}

/// A value of a list as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ListItem {
    Int(i64),
    Float(f64),
    Text(String),
}

/// A sweep parameter's value at a point: expressions see an integer, a float or a string
/// (`"f16"`, `"__half"`: a type or a variant of an algorithm).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SweepValue {
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for SweepValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepValue::Int(v) => write!(f, "{v}"),
            SweepValue::Float(v) => write!(f, "{v}"),
            SweepValue::Text(v) => f.write_str(v),
        }
    }
}

impl SweepValue {
    pub fn to_value(&self) -> minijinja::Value {
        match self {
            SweepValue::Int(v) => (*v).into(),
            SweepValue::Float(v) => (*v).into(),
            SweepValue::Text(v) => v.as_str().into(),
        }
    }

    /// Where a plot puts it; None for a name.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            SweepValue::Int(v) => Some(*v as f64),
            SweepValue::Float(v) => Some(*v),
            SweepValue::Text(_) => None,
        }
    }
}

impl From<i64> for SweepValue {
    fn from(v: i64) -> Self {
        SweepValue::Int(v)
    }
}

impl ListItem {
    fn value(&self) -> Result<SweepValue, BadValue> {
        let text = match self {
            ListItem::Int(v) => return Ok(SweepValue::Int(*v)),
            ListItem::Float(v) if v.is_finite() => return Ok(SweepValue::Float(*v)),
            ListItem::Float(v) => {
                return Err(BadValue(format!("the sweep value {v} is not a number")))
            }
            ListItem::Text(t) => t.trim(),
        };
        let bad = || {
            BadValue(format!("cannot read sweep value `{text}`; write a number, a power of two such as \"2^20\", or a name of letters, digits, `_`, `-` and `.`"))
        };
        if let Some(e) = text.strip_prefix("2^") {
            return match e.trim().parse::<u32>() {
                Ok(e) if e <= 62 => Ok(SweepValue::Int(1i64 << e)),
                _ => Err(bad()),
            };
        }
        let numeric = text.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c));
        if numeric {
            return text.parse().map(SweepValue::Int).map_err(|_| bad());
        }
        let name = !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_alphanumeric() || "_-.".contains(c));
        match name {
            true => Ok(SweepValue::Text(text.to_string())),
            false => Err(bad()),
        }
    }
}

/// One axis of the product: a parameter, or a zipped group of parameters whose values
/// advance together.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub names: Vec<String>,
    /// One row per position, a value per name.
    pub rows: Vec<Vec<SweepValue>>,
}

impl Axis {
    /// The distinct values of parameter `name`, in order.
    pub fn values_of(&self, name: &str) -> Option<Vec<SweepValue>> {
        let i = self.names.iter().position(|n| n == name)?;
        let mut seen = std::collections::HashSet::new();
        Some(
            self.rows
                .iter()
                .filter(|r| seen.insert(r[i].to_string()))
                .map(|r| r[i].clone())
                .collect(),
        )
    }
}

/// A parameter's values as `--set` gives them: `512,1024`, `2^8..2^12` or
/// `256..2048 step 32`, read as the same forms in the file are.
pub fn from_command_line(values: &str) -> SweepSpec {
    if values.contains("..") {
        return SweepSpec::Text(values.trim().to_string());
    }
    SweepSpec::List(
        values
            .split(',')
            .map(str::trim)
            .map(|v| match (v.parse::<i64>(), v.parse::<f64>()) {
                (Ok(i), _) => ListItem::Int(i),
                (_, Ok(f)) => ListItem::Float(f),
                _ => ListItem::Text(v.to_string()),
            })
            .collect(),
    )
}

/// The axis `name = spec` makes; a value (or a zipped group's row) given twice is refused,
/// as it would make two cells of one id.
pub fn axis(name: &str, spec: &SweepSpec) -> Result<Axis, BadValue> {
    let axis = rows_of(name, spec)?;
    let mut seen = std::collections::HashSet::new();
    for row in &axis.rows {
        let label: Vec<String> = row.iter().map(SweepValue::to_string).collect();
        if !seen.insert(label.clone()) {
            return Err(BadValue(format!(
                "`{name}` gives {} twice: each value makes its own cells, so name each once",
                label.join(", ")
            )));
        }
    }
    Ok(axis)
}

fn rows_of(name: &str, spec: &SweepSpec) -> Result<Axis, BadValue> {
    let SweepSpec::Zip(columns) = spec else {
        return Ok(Axis {
            names: vec![name.to_string()],
            rows: expand(spec)?.into_iter().map(|v| vec![v]).collect(),
        });
    };
    let lens: Vec<usize> = columns.values().map(Vec::len).collect();
    if lens.is_empty() || lens[0] == 0 || lens.iter().any(|l| *l != lens[0]) {
        return Err(BadValue(format!(
            "`{name}` zips {} into points: each must list the same number of values, at least one ({})",
            columns.keys().cloned().collect::<Vec<_>>().join(", "),
            lens.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    let values: Vec<Vec<SweepValue>> = columns
        .values()
        .map(|c| c.iter().map(ListItem::value).collect::<Result<_, _>>())
        .collect::<Result<_, _>>()?;
    Ok(Axis {
        names: columns.keys().cloned().collect(),
        rows: (0..lens[0])
            .map(|i| values.iter().map(|c| c[i].clone()).collect())
            .collect(),
    })
}

/// The most values one parameter may take: a sweep is a plan for hours of GPU time, and a
/// range written by mistake must not exhaust the host's memory before it is refused.
pub const MAX_VALUES: u64 = 100_000;

const FORMS: &str =
    "a list `[512, 1024]`, a range `256..2048 step 32` (inclusive), or powers of two `2^8..2^12`";

/// Expands one parameter's spec into its values, in order.
pub fn expand(spec: &SweepSpec) -> Result<Vec<SweepValue>, BadValue> {
    let values: Vec<SweepValue> = match spec {
        SweepSpec::List(v) => v.iter().map(ListItem::value).collect::<Result<_, _>>()?,
        SweepSpec::One(v) => vec![SweepValue::Int(*v)],
        SweepSpec::Text(text) => parse_text(text)?.into_iter().map(SweepValue::Int).collect(),
        SweepSpec::Zip(_) => return Err(BadValue("a zipped group is not one parameter".into())),
    };
    if values.is_empty() {
        return Err(BadValue(format!("the sweep is empty; write {FORMS}")));
    }
    Ok(values)
}

fn parse_text(text: &str) -> Result<Vec<i64>, BadValue> {
    let bad = || BadValue(format!("cannot read sweep `{text}`; write {FORMS}"));
    let (range, step) = match text.split_once("step") {
        Some((r, s)) => (r.trim(), Some(s.trim().parse::<i64>().map_err(|_| bad())?)),
        None => (text.trim(), None),
    };
    let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
    if let (Some(lo_exp), Some(hi_exp)) =
        (lo.trim().strip_prefix("2^"), hi.trim().strip_prefix("2^"))
    {
        if step.is_some() {
            return Err(BadValue(format!("`{text}`: powers of two take no step")));
        }
        let lo: u32 = lo_exp.trim().parse().map_err(|_| bad())?;
        let hi: u32 = hi_exp.trim().parse().map_err(|_| bad())?;
        if hi > 62 {
            return Err(BadValue(format!(
                "`{text}`: exponent {hi} is too large (at most 62)"
            )));
        }
        return Ok((lo..=hi).map(|e| 1i64 << e).collect());
    }
    let lo: i64 = lo.trim().parse().map_err(|_| bad())?;
    let hi: i64 = hi.trim().parse().map_err(|_| bad())?;
    let step = step.unwrap_or(1);
    if step <= 0 {
        return Err(BadValue(format!("`{text}`: the step must be positive")));
    }
    if hi >= lo {
        let count = (hi as i128 - lo as i128) / step as i128 + 1;
        if count > MAX_VALUES as i128 {
            return Err(BadValue(format!(
                "`{text}` has {count} values, more than the {MAX_VALUES} a parameter may take; use a larger step or powers of two"
            )));
        }
    }
    Ok((lo..=hi).step_by(step as usize).collect())
}

/// The cartesian product of the axes, the first varying slowest.
pub fn product(axes: &[Axis]) -> Vec<Point> {
    let mut points: Vec<Point> = vec![vec![]];
    for axis in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                axis.rows.iter().map(move |row| {
                    let mut q = p.clone();
                    q.extend(axis.names.iter().cloned().zip(row.iter().cloned()));
                    q
                })
            })
            .collect();
    }
    points
}

/// One sweep point: parameter name -> value, in file order.
pub type Point = Vec<(String, SweepValue)>;

/// Scope for expressions at a sweep point: its parameters and the device's facts.
pub fn scope(point: &Point, facts: &DeviceFacts) -> Scope {
    let mut s = Scope::new();
    facts.add_to(&mut s);
    for (k, v) in point {
        s.insert(k.clone(), v.to_value());
    }
    s
}

/// How a point is named in tables and in `published` keys: `512`, or `m=1, n=2`.
pub fn point_label(point: &Point) -> String {
    match point.as_slice() {
        [(_, v)] => v.to_string(),
        _ => point
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Vec<SweepValue> {
        v.iter().map(|x| SweepValue::Int(*x)).collect()
    }

    fn text(t: &str) -> ListItem {
        ListItem::Text(t.into())
    }

    #[test]
    fn range_with_step_is_inclusive() {
        let v = expand(&SweepSpec::Text("256..2048 step 32".into())).unwrap();
        assert_eq!(v.first(), Some(&SweepValue::Int(256)));
        assert_eq!(v.last(), Some(&SweepValue::Int(2048)));
        assert_eq!(v.len(), 57);
    }

    #[test]
    fn a_list_takes_numbers_powers_of_two_and_names() {
        let list = SweepSpec::List(vec![
            ListItem::Int(3),
            text("2^20"),
            text(" 4096 "),
            ListItem::Float(0.5),
            text("bf16"),
            text("__nv_bfloat16"),
        ]);
        let mut want = ints(&[3, 1 << 20, 4096]);
        want.push(SweepValue::Float(0.5));
        want.push(SweepValue::Text("bf16".into()));
        want.push(SweepValue::Text("__nv_bfloat16".into()));
        assert_eq!(expand(&list).unwrap(), want);
        assert_eq!(want[4].to_string(), "bf16");
        assert_eq!(want[3].to_string(), "0.5");
    }

    #[test]
    fn powers_of_two() {
        assert_eq!(
            expand(&SweepSpec::Text("2^8..2^10".into())).unwrap(),
            ints(&[256, 512, 1024])
        );
    }

    #[test]
    fn empty_and_malformed_sweeps_are_errors() {
        for bad in ["2^x", "2^63", "12abc", "two words", "-x"] {
            let e = expand(&SweepSpec::List(vec![text(bad)])).unwrap_err();
            assert!(e.0.contains("cannot read sweep value"), "{bad}: {e}");
        }
        assert!(expand(&SweepSpec::List(vec![]))
            .unwrap_err()
            .0
            .contains("empty"));
        assert!(expand(&SweepSpec::Text("10..5".into()))
            .unwrap_err()
            .0
            .contains("empty"));
        assert!(expand(&SweepSpec::Text("1..x".into())).is_err());
        assert!(expand(&SweepSpec::Text("1..9 step 0".into())).is_err());
    }

    #[test]
    fn a_value_given_twice_is_refused() {
        for spec in [
            SweepSpec::List(vec![ListItem::Int(64), ListItem::Int(64)]),
            SweepSpec::List(vec![text("2^6"), ListItem::Int(64)]),
            SweepSpec::List(vec![ListItem::Int(64), ListItem::Float(64.0)]),
        ] {
            let e = axis("n", &spec).unwrap_err();
            assert!(e.0.contains("64 twice"), "{e}");
        }
        let zip = SweepSpec::Zip(IndexMap::from([
            ("m".to_string(), vec![ListItem::Int(1), ListItem::Int(1)]),
            ("n".to_string(), vec![ListItem::Int(2), ListItem::Int(2)]),
        ]));
        assert!(axis("shape", &zip).unwrap_err().0.contains("1, 2 twice"));
        let zip = SweepSpec::Zip(IndexMap::from([
            ("m".to_string(), vec![ListItem::Int(1), ListItem::Int(1)]),
            ("n".to_string(), vec![ListItem::Int(2), ListItem::Int(3)]),
        ]));
        assert!(axis("shape", &zip).is_ok(), "a zipped column may repeat");
    }

    #[test]
    fn a_huge_range_is_refused_before_it_is_expanded() {
        let err = expand(&SweepSpec::Text("1..1000000000".into())).unwrap_err();
        assert!(err.0.contains("1000000000 values"), "{err}");
    }

    #[test]
    fn product_varies_last_parameter_fastest() {
        let a = axis(
            "a",
            &SweepSpec::List(vec![ListItem::Int(1), ListItem::Int(2)]),
        )
        .unwrap();
        let b = axis(
            "b",
            &SweepSpec::List(vec![ListItem::Int(10), ListItem::Int(20)]),
        )
        .unwrap();
        let p = product(&[a, b]);
        let flat: Vec<String> = p.iter().map(|q| format!("{}{}", q[0].1, q[1].1)).collect();
        assert_eq!(flat, ["110", "120", "210", "220"]);
    }

    #[test]
    fn a_zipped_group_advances_together() {
        let mut columns = IndexMap::new();
        columns.insert("m".to_string(), vec![ListItem::Int(1), ListItem::Int(2)]);
        columns.insert("n".to_string(), vec![ListItem::Int(10), ListItem::Int(20)]);
        let shape = axis("shape", &SweepSpec::Zip(columns.clone())).unwrap();
        assert_eq!(shape.names, ["m", "n"]);
        let t = axis("t", &SweepSpec::List(vec![text("f16"), text("bf16")])).unwrap();
        let p = product(&[shape.clone(), t]);
        let flat: Vec<String> = p
            .iter()
            .map(|q| q.iter().map(|(k, v)| format!("{k}{v}")).collect::<String>())
            .collect();
        assert_eq!(flat, ["m1n10tf16", "m1n10tbf16", "m2n20tf16", "m2n20tbf16"]);
        assert_eq!(shape.values_of("n"), Some(ints(&[10, 20])));
        columns.insert("k".to_string(), vec![ListItem::Int(1)]);
        let e = axis("shape", &SweepSpec::Zip(columns)).unwrap_err();
        assert!(e.0.contains("same number of values"), "{e}");
    }
}
