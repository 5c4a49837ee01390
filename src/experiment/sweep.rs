//! Sweep values: a list, an inclusive range with a step (`256..2048 step 32`), or powers of
//! two (`2^8..2^12`); several parameters combine as a cartesian product in file order.

use serde::Deserialize;

/// One parameter's values as written in the file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum SweepSpec {
    List(Vec<ListItem>),
    One(i64),
    Text(String),
}

/// A value of a list: an integer, or a power of two written `"2^20"`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ListItem {
    Int(i64),
    Text(String),
}

impl ListItem {
    fn value(&self) -> Result<i64, String> {
        let text = match self {
            ListItem::Int(v) => return Ok(*v),
            ListItem::Text(t) => t.trim(),
        };
        let bad = || {
            format!("cannot read sweep value `{text}`; write an integer or a power of two such as \"2^20\"")
        };
        match text.strip_prefix("2^") {
            Some(e) => match e.trim().parse::<u32>() {
                Ok(e) if e <= 62 => Ok(1i64 << e),
                _ => Err(bad()),
            },
            None => text.parse().map_err(|_| bad()),
        }
    }
}

/// The most values one parameter may take: a sweep is a plan for hours of GPU time, and a
/// range written by mistake must not exhaust the host's memory before it is refused.
pub const MAX_VALUES: u64 = 100_000;

const FORMS: &str =
    "a list `[512, 1024]`, a range `256..2048 step 32` (inclusive), or powers of two `2^8..2^12`";

/// Expands one parameter's spec into its values, in order.
pub fn expand(spec: &SweepSpec) -> Result<Vec<i64>, String> {
    let values = match spec {
        SweepSpec::List(v) => v.iter().map(ListItem::value).collect::<Result<_, _>>()?,
        SweepSpec::One(v) => vec![*v],
        SweepSpec::Text(text) => parse_text(text)?,
    };
    if values.is_empty() {
        return Err(format!("the sweep is empty; write {FORMS}"));
    }
    Ok(values)
}

fn parse_text(text: &str) -> Result<Vec<i64>, String> {
    let bad = || format!("cannot read sweep `{text}`; write {FORMS}");
    let (range, step) = match text.split_once("step") {
        Some((r, s)) => (r.trim(), Some(s.trim().parse::<i64>().map_err(|_| bad())?)),
        None => (text.trim(), None),
    };
    let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
    if let (Some(lo_exp), Some(hi_exp)) =
        (lo.trim().strip_prefix("2^"), hi.trim().strip_prefix("2^"))
    {
        if step.is_some() {
            return Err(format!("`{text}`: powers of two take no step"));
        }
        let lo: u32 = lo_exp.trim().parse().map_err(|_| bad())?;
        let hi: u32 = hi_exp.trim().parse().map_err(|_| bad())?;
        if hi > 62 {
            return Err(format!("`{text}`: exponent {hi} is too large (at most 62)"));
        }
        return Ok((lo..=hi).map(|e| 1i64 << e).collect());
    }
    let lo: i64 = lo.trim().parse().map_err(|_| bad())?;
    let hi: i64 = hi.trim().parse().map_err(|_| bad())?;
    let step = step.unwrap_or(1);
    if step <= 0 {
        return Err(format!("`{text}`: the step must be positive"));
    }
    if hi >= lo {
        let count = (hi as i128 - lo as i128) / step as i128 + 1;
        if count > MAX_VALUES as i128 {
            return Err(format!(
                "`{text}` has {count} values, more than the {MAX_VALUES} a parameter may take; use a larger step or powers of two"
            ));
        }
    }
    Ok((lo..=hi).step_by(step as usize).collect())
}

/// The cartesian product of named parameters, the first parameter varying slowest.
pub fn product(params: &[(String, Vec<i64>)]) -> Vec<Vec<(String, i64)>> {
    let mut points: Vec<Vec<(String, i64)>> = vec![vec![]];
    for (name, values) in params {
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((name.clone(), *v));
                    q
                })
            })
            .collect();
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_with_step_is_inclusive() {
        let v = expand(&SweepSpec::Text("256..2048 step 32".into())).unwrap();
        assert_eq!(v.first(), Some(&256));
        assert_eq!(v.last(), Some(&2048));
        assert_eq!(v.len(), 57);
    }

    #[test]
    fn a_list_takes_integers_and_powers_of_two() {
        let list = SweepSpec::List(vec![
            ListItem::Int(3),
            ListItem::Text("2^20".into()),
            ListItem::Text(" 4096 ".into()),
        ]);
        assert_eq!(expand(&list).unwrap(), vec![3, 1 << 20, 4096]);
    }

    #[test]
    fn powers_of_two() {
        assert_eq!(
            expand(&SweepSpec::Text("2^8..2^10".into())).unwrap(),
            vec![256, 512, 1024]
        );
    }

    #[test]
    fn empty_and_malformed_sweeps_are_errors() {
        assert!(expand(&SweepSpec::List(vec![ListItem::Text("2^x".into())])).is_err());
        assert!(expand(&SweepSpec::List(vec![ListItem::Text("2^63".into())])).is_err());
        assert!(expand(&SweepSpec::List(vec![]))
            .unwrap_err()
            .contains("empty"));
        assert!(expand(&SweepSpec::Text("10..5".into()))
            .unwrap_err()
            .contains("empty"));
        assert!(expand(&SweepSpec::Text("1..x".into())).is_err());
        assert!(expand(&SweepSpec::Text("1..9 step 0".into())).is_err());
    }

    #[test]
    fn a_huge_range_is_refused_before_it_is_expanded() {
        let err = expand(&SweepSpec::Text("1..1000000000".into())).unwrap_err();
        assert!(err.contains("1000000000 values"), "{err}");
    }

    #[test]
    fn product_varies_last_parameter_fastest() {
        let p = product(&[("a".into(), vec![1, 2]), ("b".into(), vec![10, 20])]);
        let flat: Vec<(i64, i64)> = p.iter().map(|q| (q[0].1, q[1].1)).collect();
        assert_eq!(flat, vec![(1, 10), (1, 20), (2, 10), (2, 20)]);
    }
}
