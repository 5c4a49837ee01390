//! A variant's methodology over the sweep, as the report's methodology table and `runner
//! plan` show it: each knob's phrase once, and a value that differs by point as a short list
//! ("warm-up 1000 (n <= 1024), 100 (n = 2048), 20 (n = 4096) launches").

use super::knobs::Aspect;
use super::{Point, SweepValue, Variant};

impl Variant {
    /// The phrases of the variant's knobs of `aspect` over the experiment's `points`.
    pub fn describe(&self, points: &[Point], aspect: Aspect) -> Vec<String> {
        let at: Vec<Vec<Option<String>>> = self.knobs.iter().map(|k| k.phrases(aspect)).collect();
        let knobs = at.first().map_or(0, Vec::len);
        (0..knobs)
            .filter_map(|i| over_points(points, at.iter().map(|p| p[i].clone()).collect()))
            .collect()
    }
}

/// One knob's phrase at each point, said once: the phrase where it is the same everywhere,
/// else each distinct phrase with the points it holds at. Phrases that differ in one word
/// only are written once, that word listed in place ("first launch + 200 (n <= 1024), 50
/// (n >= 2048) samples"); a point where the knob has nothing to say is left out.
fn over_points(points: &[Point], at: Vec<Option<String>>) -> Option<String> {
    let mut phrases: Vec<String> = Vec::new();
    let class: Vec<Option<usize>> = (at.into_iter())
        .map(|phrase| {
            let phrase = phrase?;
            Some(match phrases.iter().position(|p| *p == phrase) {
                Some(i) => i,
                None => {
                    phrases.push(phrase);
                    phrases.len() - 1
                }
            })
        })
        .collect();
    if phrases.len() == 1 && class.iter().all(Option::is_some) {
        return phrases.pop();
    }
    let places = where_each(points, &class, phrases.len());
    let words: Vec<Vec<&str>> = phrases.iter().map(|p| p.split(' ').collect()).collect();
    let (head, tail) = common_ends(&words);
    if words.len() > 1 && words.iter().all(|w| w.len() == head + tail + 1) {
        let listed: Vec<String> = (words.iter().zip(&places))
            .map(|(w, place)| format!("{} ({place})", w[head]))
            .collect();
        let w = &words[0];
        let text = (w[..head].iter().map(|s| s.to_string()))
            .chain([listed.join(", ")])
            .chain(w[head + 1..].iter().map(|s| s.to_string()))
            .collect::<Vec<_>>()
            .join(" ");
        return Some(text);
    }
    let parts: Vec<String> = (phrases.iter().zip(&places))
        .map(|(phrase, place)| format!("{phrase} ({place})"))
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// How many leading and trailing words every phrase shares, leaving each at least one word.
fn common_ends(words: &[Vec<&str>]) -> (usize, usize) {
    let shortest = words.iter().map(Vec::len).min().unwrap_or(0);
    let same = |at: &dyn Fn(&[&str]) -> String| words.iter().all(|w| at(w) == at(&words[0]));
    let head = (0..shortest.saturating_sub(1))
        .take_while(|&i| same(&|w| w[i].to_string()))
        .count();
    let tail = (0..shortest.saturating_sub(head + 1))
        .take_while(|&i| same(&|w| w[w.len() - 1 - i].to_string()))
        .count();
    (head, tail)
}

/// For each class of points (0..classes), where it holds: by one sweep parameter where the
/// class follows from that parameter alone (`n <= 1024`, `n = 2048`, `512 <= n <= 2048`,
/// `dtype = f16`), else the points' labels.
fn where_each(points: &[Point], class: &[Option<usize>], classes: usize) -> Vec<String> {
    let params = points.first().map_or(0, Vec::len);
    let deciding = (0..params).find(|&j| {
        let pairs = || points.iter().zip(class);
        pairs().all(|(p, c)| pairs().all(|(q, d)| p[j].1 != q[j].1 || c == d))
    });
    (0..classes)
        .map(|c| {
            let holds = (points.iter().zip(class)).filter(|(_, d)| **d == Some(c));
            match deciding {
                Some(j) => {
                    let name = &points[0][j].0;
                    let all: Vec<&SweepValue> = points.iter().map(|p| &p[j].1).collect();
                    let these: Vec<&SweepValue> = holds.map(|(p, _)| &p[j].1).collect();
                    values_text(name, &all, &these)
                }
                None => holds
                    .map(|(p, _)| super::point_label(p))
                    .collect::<Vec<_>>()
                    .join("; "),
            }
        })
        .collect()
}

/// `these` among `all` of one parameter's values: a range where they are consecutive
/// numbers, else a list.
fn values_text(name: &str, all: &[&SweepValue], these: &[&SweepValue]) -> String {
    let distinct = |v: &[&SweepValue]| {
        let mut d: Vec<SweepValue> = Vec::new();
        for x in v {
            if !d.contains(x) {
                d.push((*x).clone());
            }
        }
        d
    };
    let (mut all, mut these) = (distinct(all), distinct(these));
    let list = |v: &[SweepValue]| {
        let v: Vec<String> = v.iter().map(ToString::to_string).collect();
        format!("{name} = {}", v.join(", "))
    };
    if all.iter().any(|v| v.as_f64().is_none()) {
        return list(&these);
    }
    let by_value = |a: &SweepValue, b: &SweepValue| {
        let key = |v: &SweepValue| v.as_f64().unwrap_or(f64::NAN);
        key(a).total_cmp(&key(b))
    };
    all.sort_by(by_value);
    these.sort_by(by_value);
    let at = |v: &SweepValue| all.iter().position(|a| a == v).unwrap_or(0);
    let (first, last) = (at(&these[0]), at(&these[these.len() - 1]));
    if last - first + 1 != these.len() {
        return list(&these);
    }
    let (lo, hi) = (&all[first], &all[last]);
    match (first == 0, last == all.len() - 1) {
        _ if first == last => format!("{name} = {lo}"),
        (true, false) => format!("{name} <= {hi}"),
        (false, true) => format!("{name} >= {lo}"),
        _ => format!("{lo} <= {name} <= {hi}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(ns: &[i64]) -> Vec<Point> {
        ns.iter()
            .map(|n| vec![("n".to_string(), SweepValue::Int(*n))])
            .collect()
    }

    fn said(points: &[Point], at: &[Option<&str>]) -> Option<String> {
        over_points(points, at.iter().map(|a| a.map(str::to_string)).collect())
    }

    #[test]
    fn a_phrase_that_differs_in_one_word_is_written_once_with_a_list() {
        let points = sweep(&[512, 1024, 2048, 4096]);
        let warmup = |n: &str| Some(format!("warm-up {n} launches"));
        let at: Vec<Option<String>> = ["1000", "1000", "100", "20"].map(warmup).into();
        assert_eq!(
            over_points(&points, at).unwrap(),
            "warm-up 1000 (n <= 1024), 100 (n = 2048), 20 (n = 4096) launches"
        );
        let same = said(&points, &[Some("hot L2"); 4]);
        assert_eq!(same.unwrap(), "hot L2");
        assert_eq!(said(&points, &[None; 4]), None);
    }

    #[test]
    fn phrases_that_differ_more_are_listed_whole_and_a_missing_one_is_left_out() {
        let points = sweep(&[256, 384, 512, 768]);
        let at = [None, Some("graph of 100"), Some("graph of 100"), None];
        assert_eq!(
            said(&points, &at).unwrap(),
            "graph of 100 (384 <= n <= 512)"
        );
        let at = [Some("a b"), Some("c d"), Some("a b"), Some("a b")];
        assert_eq!(
            said(&points, &at).unwrap(),
            "a b (n = 256, 512, 768); c d (n = 384)"
        );
        let at = [Some("10m"), Some("10m"), Some("1m"), Some("1m")];
        assert_eq!(said(&points, &at).unwrap(), "10m (n <= 384), 1m (n >= 512)");
    }

    #[test]
    fn points_of_several_parameters_are_named_by_the_one_that_decides() {
        let points: Vec<Point> = [("f16", 1), ("f16", 2), ("bf16", 1), ("bf16", 2)]
            .iter()
            .map(|(t, n)| {
                vec![
                    ("dtype".to_string(), SweepValue::Text(t.to_string())),
                    ("n".to_string(), SweepValue::Int(*n)),
                ]
            })
            .collect();
        let at = [Some("x 1"), Some("x 2"), Some("x 1"), Some("x 2")];
        assert_eq!(said(&points, &at).unwrap(), "x 1 (n = 1), 2 (n = 2)");
        let at = [Some("x 1"), Some("x 1"), Some("x 2"), Some("x 2")];
        assert_eq!(
            said(&points, &at).unwrap(),
            "x 1 (dtype = f16), 2 (dtype = bf16)"
        );
        let at = [Some("x 1"), Some("x 2"), Some("x 2"), Some("x 2")];
        assert_eq!(
            said(&points, &at).unwrap(),
            "x 1 (dtype=f16, n=1), 2 (dtype=f16, n=2; dtype=bf16, n=1; dtype=bf16, n=2)"
        );
    }
}
