//! Findings about methods: a variant against another, a method against its reference, and
//! a peer program against the variant it stands beside.

use super::finding::{
    Bias, Difference, Finding, NamedCell, PeerAgreement, Reading, Trusted, ALIKE_FRACTION,
};
use crate::analysis::agreement::{agrees_with_peer, bias as bias_of, within_tolerance};
use crate::experiment::knobs::cache::{Cache, FlushMethod};
use crate::experiment::knobs::{Aspect, Knobs};
use crate::experiment::{point_label, Experiment};
use std::collections::HashMap;

/// The variant pairs to compare: those the experiment names (`differences`, `baseline`),
/// then each flushed variant against a hot one it differs from only by its cache.
fn pairs(exp: &Experiment) -> Vec<(String, String)> {
    let mut pairs = exp.report.differences.clone();
    let named = |a: &str, b: &str, pairs: &[(String, String)]| {
        (pairs.iter()).any(|(x, y)| (x == a && y == b) || (x == b && y == a))
    };
    for cold in &exp.variants {
        for hot in &exp.variants {
            let only_cache = (cold.knobs.iter().zip(&hot.knobs)).all(|(c, h)| {
                matches!((c.cache, h.cache), (Cache::Flush { .. }, Cache::Hot))
                    && Knobs {
                        cache: Cache::Hot,
                        ..c.clone()
                    } == *h
            });
            if only_cache && !named(&cold.name, &hot.name, &pairs) {
                pairs.push((cold.name.clone(), hot.name.clone()));
            }
        }
    }
    pairs
}

/// The phrases of `knobs` (every aspect).
fn phrases(knobs: &Knobs) -> Vec<String> {
    Aspect::ALL
        .into_iter()
        .flat_map(|a| knobs.describe(a))
        .collect()
}

/// One finding per variant pair with a trusted cell on both sides, in [`pairs`]' order.
pub fn differences(t: &Trusted) -> Vec<Finding> {
    let exp = t.exp;
    let variant = |name: &str| exp.variants.iter().find(|v| v.name == name);
    let mut out: Vec<Difference> = Vec::new();
    for (a, b) in pairs(exp) {
        let (Some(va), Some(vb)) = (variant(&a), variant(&b)) else {
            continue;
        };
        // Per cell: (reading, difference, the experiment's point index).
        let mut cells: Vec<(Reading, f64, usize)> = Vec::new();
        for (k, kernel) in exp.kernels.iter().enumerate() {
            for (i, p) in kernel.points.iter().enumerate() {
                if let (Some(x), Some(y)) = ((t.median)(k, p, &a), (t.median)(k, p, &b)) {
                    let reading = Reading {
                        at: NamedCell::new(&kernel.name, p, &a),
                        ns: x,
                        against_ns: Some(y),
                    };
                    cells.push((
                        reading,
                        (x - y) / y,
                        kernel.base.get(i).copied().unwrap_or(0),
                    ));
                }
            }
        }
        let pick = |f: &dyn Fn(f64) -> f64| cells.iter().max_by(|x, y| f(x.1).total_cmp(&f(y.1)));
        let (Some(lowest), Some(highest), Some(largest)) =
            (pick(&|d| -d), pick(&|d| d), pick(&|d: f64| d.abs()))
        else {
            continue;
        };
        let (pa, pb) = (phrases(&va.knobs[largest.2]), phrases(&vb.knobs[largest.2]));
        let apart = |x: &[String], y: &[String]| {
            (x.iter())
                .filter(|p| !y.contains(p))
                .cloned()
                .collect::<Vec<_>>()
        };
        let flush = |v: &crate::experiment::Variant| match v.knobs[largest.2].cache {
            Cache::Flush { method, .. } => Some(method),
            Cache::Hot => None,
        };
        let cold_faster = match (flush(va), flush(vb)) {
            (Some(m), None) => Some((cells.iter().filter(|c| c.1 < -ALIKE_FRACTION).count(), m)),
            (None, Some(m)) => Some((
                cells
                    .iter()
                    .filter(|c| c.1 > 1.0 / (1.0 - ALIKE_FRACTION) - 1.0)
                    .count(),
                m,
            )),
            _ => None,
        };
        let pair = |c: &(Reading, f64, usize)| (c.0.clone(), c.1);
        out.push(Difference {
            a: a.clone(),
            b: b.clone(),
            cells: cells.len(),
            lowest: pair(lowest),
            highest: pair(highest),
            differs: (apart(&pa, &pb), apart(&pb, &pa)),
            cold_faster: cold_faster
                .filter(|(n, _)| *n > 0)
                .map(|(n, m)| (n, m == FlushMethod::Read)),
        });
    }
    out.into_iter().map(Finding::Difference).collect()
}

impl Bias {
    fn outside(&self) -> usize {
        self.cells - self.within
    }

    /// The largest bias in percent of the reference, either way.
    fn largest_fraction(&self) -> f64 {
        let f = |r: &Reading| r.against_ns.map_or(0.0, |x| ((r.ns - x) / x).abs());
        f(&self.lowest).max(f(&self.highest))
    }
}

/// The methods of `[report] bias`: where there are at most three, one finding each (those
/// within tolerance everywhere first, then by their share of cells outside it); where more,
/// one finding naming those within tolerance at every cell, and the method outside it at
/// the most cells (the largest bias breaking a tie), or, where none is within everywhere,
/// the method outside at the fewest.
pub fn bias(t: &Trusted) -> Vec<Finding> {
    let exp = t.exp;
    let mut all: Vec<Bias> = Vec::new();
    for (method, reference) in &exp.report.bias {
        let mut cells: Vec<Reading> = Vec::new();
        let mut within = 0;
        for (k, kernel) in exp.kernels.iter().enumerate() {
            for p in &kernel.points {
                if let (Some(m), Some(r)) = ((t.median)(k, p, method), (t.median)(k, p, reference))
                {
                    let (ns, f) = bias_of(m, r);
                    within += usize::from(within_tolerance(ns, f));
                    cells.push(Reading {
                        at: NamedCell::new(&kernel.name, p, method),
                        ns: m,
                        against_ns: Some(r),
                    });
                }
            }
        }
        let by = |r: &&Reading| r.ns - r.against_ns.unwrap_or(r.ns);
        let (Some(lowest), Some(highest)) = (
            cells.iter().min_by(|x, y| by(x).total_cmp(&by(y))),
            cells.iter().max_by(|x, y| by(x).total_cmp(&by(y))),
        ) else {
            continue;
        };
        all.push(Bias {
            method: method.clone(),
            reference: reference.clone(),
            cells: cells.len(),
            within,
            lowest: lowest.clone(),
            highest: highest.clone(),
        });
    }
    let share_outside = |b: &Bias| b.outside() as f64 / b.cells as f64;
    if all.len() <= 3 {
        all.sort_by(|x, y| share_outside(x).total_cmp(&share_outside(y)));
        return all.into_iter().map(Finding::Bias).collect();
    }
    let of = all.len();
    let (everywhere, outside): (Vec<Bias>, Vec<Bias>) =
        all.into_iter().partition(|b| b.outside() == 0);
    let mut out = Vec::new();
    let farthest = if everywhere.is_empty() {
        (outside.into_iter()).min_by(|x, y| share_outside(x).total_cmp(&share_outside(y)))
    } else {
        out.push(Finding::BiasWithin {
            methods: everywhere,
            of,
        });
        (outside.into_iter()).max_by(|x, y| {
            (x.outside(), x.largest_fraction())
                .partial_cmp(&(y.outside(), y.largest_fraction()))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    };
    out.extend(farthest.map(Finding::Bias));
    out
}

/// One finding per peer with a reading beside a trusted cell, those that disagree somewhere
/// first; `peer_medians`: each (peer, point label)'s median reading.
pub fn peers(t: &Trusted, peer_medians: &HashMap<(String, String), f64>) -> Vec<Finding> {
    let exp = t.exp;
    let mut out = Vec::new();
    for peer in &exp.peers {
        let Some(vi) = exp.variants.iter().position(|v| v.name == peer.variant) else {
            continue;
        };
        let mut cells: Vec<(Reading, bool)> = Vec::new();
        let mut first_launch = false;
        for (k, kernel) in exp.kernels.iter().enumerate() {
            for (i, p) in kernel.points.iter().enumerate() {
                // Peers are keyed by the experiment's points, which a kernel's own axes extend.
                let base = kernel.base.get(i).copied().unwrap_or(0);
                let Some(q) = exp.points.get(base) else {
                    continue;
                };
                let theirs = peer_medians.get(&(peer.name.clone(), point_label(q)));
                if let (Some(&theirs), Some(ours)) = (theirs, (t.median)(k, p, &peer.variant)) {
                    let first = exp.variants[vi].knobs[base].samples_per_run() == 0;
                    first_launch |= first;
                    cells.push((
                        Reading {
                            at: NamedCell::new(&kernel.name, p, &peer.variant),
                            ns: ours,
                            against_ns: Some(theirs),
                        },
                        agrees_with_peer(theirs, ours, first),
                    ));
                }
            }
        }
        let off = |r: &Reading| r.against_ns.map_or(0.0, |x| ((r.ns - x) / x).abs());
        let Some(largest) = cells.iter().max_by(|x, y| off(&x.0).total_cmp(&off(&y.0))) else {
            continue;
        };
        out.push(PeerAgreement {
            peer: peer.name.clone(),
            label: peer.label.clone(),
            variant: peer.variant.clone(),
            points: cells.len(),
            agree: cells.iter().filter(|c| c.1).count(),
            first_launch,
            largest: largest.0.clone(),
        });
    }
    out.sort_by_key(|p| p.agree == p.points);
    out.into_iter().map(Finding::Peer).collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{experiment, fake, with};
    use super::*;

    #[test]
    fn a_flushed_variant_is_set_against_the_hot_one_it_differs_from_only_by_its_cache() {
        let exp = experiment(
            "n = [1]",
            &[("k", "")],
            &[
                ("hot", ""),
                ("cold", "cache = \"flush\"\nflush_method = \"read\""),
                ("cold-events", "cache = \"flush\"\ntimer = \"host_sync\""),
                ("warm", "warmup = 10"),
            ],
            "differences = [[\"warm\", \"hot\"]]",
        );
        assert_eq!(
            pairs(&exp),
            [("warm".into(), "hot".into()), ("cold".into(), "hot".into())]
        );
        // The hot cell is 100 ns; cold reads 95 (a read flush: L2 left clean), warm 150.
        let f = fake(&[
            ("k/n=1/hot", 100.0),
            ("k/n=1/cold", 95.0),
            ("k/n=1/warm", 150.0),
        ]);
        let found = with(&exp, &f, differences);
        let [Finding::Difference(warm), Finding::Difference(cold)] = found.as_slice() else {
            panic!("{found:?}")
        };
        assert_eq!(
            (warm.cells, warm.highest.1, warm.cold_faster),
            (1, 0.5, None)
        );
        assert_eq!(
            warm.differs,
            (
                vec!["warm-up 10 launches".to_string()],
                vec!["no warm-up".to_string()]
            )
        );
        assert_eq!(cold.lowest.1, -0.05);
        assert_eq!(cold.cold_faster, Some((1, true)));
        assert!(
            cold.differs.0[0].contains("a read kernel"),
            "{:?}",
            cold.differs
        );
    }

    fn methods(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("m{i}"), "ref".to_string()))
            .collect()
    }

    /// Variant `ref` and `n` methods over two points, each method `m{i}` reading `bias(i)`
    /// (`offset`) ns above the reference's 10 µs.
    fn bias_run(n: usize, offset: impl Fn(usize, usize) -> f64) -> Vec<Finding> {
        let names: Vec<String> = methods(n).into_iter().map(|m| m.0).collect();
        let mut variants: Vec<(&str, &str)> = vec![("ref", "")];
        variants.extend(names.iter().map(|m| (m.as_str(), "")));
        let pairs: Vec<String> = (names.iter())
            .map(|m| format!("[\"{m}\", \"ref\"]"))
            .collect();
        let exp = experiment(
            "n = [1, 2]",
            &[("k", "")],
            &variants,
            &format!("bias = [{}]", pairs.join(", ")),
        );
        let mut cells = Vec::new();
        for p in 1..=2 {
            cells.push((format!("k/n={p}/ref"), 10_000.0));
            for (i, m) in names.iter().enumerate() {
                cells.push((format!("k/n={p}/{m}"), 10_000.0 + offset(i, p)));
            }
        }
        let cells: Vec<(&str, f64)> = cells.iter().map(|(id, ns)| (id.as_str(), *ns)).collect();
        with(&exp, &fake(&cells), bias)
    }

    #[test]
    fn a_few_methods_speak_each_and_many_name_those_within_and_the_farthest() {
        // m0 within at both points (+50 ns), m1 at one (+50, +900 ns).
        let few = bias_run(2, |i, p| if i == 1 && p == 2 { 900.0 } else { 50.0 });
        let [Finding::Bias(m0), Finding::Bias(m1)] = few.as_slice() else {
            panic!("{few:?}")
        };
        assert_eq!((m0.method.as_str(), m0.within, m0.cells), ("m0", 2, 2));
        assert_eq!((m1.within, m1.highest.ns), (1, 10_900.0));
        // Five methods: m0 and m1 within everywhere, m4 outside at both points.
        let many = bias_run(5, |i, p| match (i, p) {
            (0 | 1, _) => 20.0,
            (4, _) => 3_000.0,
            (_, 1) => 2_000.0,
            _ => 0.0,
        });
        let [Finding::BiasWithin { methods, of }, Finding::Bias(far)] = many.as_slice() else {
            panic!("{many:?}")
        };
        assert_eq!(*of, 5);
        let within: Vec<&str> = methods.iter().map(|b| b.method.as_str()).collect();
        assert_eq!(within, ["m0", "m1"]);
        assert_eq!((far.method.as_str(), far.within), ("m4", 0));
    }

    #[test]
    fn a_peer_agrees_within_its_tolerance_and_names_its_largest_difference() {
        let exp = experiment(
            "n = [1, 2]",
            &[("k", "")],
            &[("first", "samples = 0\nfresh_process = true\nprocesses = 3")],
            "",
        );
        let mut exp = exp;
        exp.peers.push(crate::experiment::peer::Peer {
            name: "post".into(),
            variant: "first".into(),
            label: "the post's program".into(),
            commands: vec![None, None],
            reads: crate::experiment::peer::Reads {
                before: String::new(),
                after: String::new(),
                unit_ns: 1.0,
                occurrence: 0,
            },
            processes: 3,
            env: vec![],
        });
        let theirs: HashMap<(String, String), f64> = [
            (("post".to_string(), "1".to_string()), 200_000.0),
            (("post".to_string(), "2".to_string()), 100_000.0),
        ]
        .into();
        // 215 µs against 200 (+7.5%, within 10%); 150 against 100 (+50%, 50 µs: outside).
        let f = fake(&[("k/n=1/first", 215_000.0), ("k/n=2/first", 150_000.0)]);
        let found = with(&exp, &f, |t| peers(t, &theirs));
        let [Finding::Peer(p)] = found.as_slice() else {
            panic!("{found:?}")
        };
        assert_eq!((p.points, p.agree, p.first_launch), (2, 1, true));
        assert_eq!(p.largest.at.point, "n=2");
    }
}
