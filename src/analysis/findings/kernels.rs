//! Findings about kernels: a kernel against its baseline kernel, its best share of the
//! device's peak, and the best value of a tuned parameter.

use super::finding::{
    Best, Finding, NamedCell, Peak, PeakOf, Reading, Speedup, Trusted, ALIKE_FRACTION,
};
use crate::analysis::peaks::Peaks;
use crate::analysis::units::seed_of;
use crate::experiment::Point;
use crate::statistics::ratio_interval;

impl Speedup {
    /// Cells within [`ALIKE_FRACTION`] either way.
    pub fn alike(&self) -> usize {
        self.cells - self.faster - self.slower
    }
}

/// One finding per `[report] kernels` pair with a trusted cell on both sides, in the
/// experiment's order.
pub fn speedups(t: &Trusted) -> Vec<Finding> {
    let exp = t.exp;
    let index = |name: &str| exp.kernels.iter().position(|k| k.name == name);
    let mut out: Vec<Speedup> = Vec::new();
    for (kernel, baseline) in &exp.report.kernels {
        let (Some(k), Some(b)) = (index(kernel), index(baseline)) else {
            continue;
        };
        let kb = &exp.kernels[b];
        // The baseline's point at each of the kernel's (a baseline without the kernel's
        // own axes serves all their values).
        let base = |p: &Point| kb.point_for(p).map(|i| &kb.points[i]);
        let cells: Vec<(Reading, f64, &Point, &Point)> = (t.cells(k).into_iter())
            .filter_map(|(p, v, ns)| {
                let q = base(p)?;
                let against = (t.median)(b, q, v)?;
                let reading = Reading {
                    at: NamedCell::new(kernel, p, v),
                    ns,
                    against_ns: Some(against),
                };
                Some((reading, against / ns, p, q))
            })
            .collect();
        let pick = |f: &dyn Fn(f64) -> f64| cells.iter().max_by(|x, y| f(x.1).total_cmp(&f(y.1)));
        let (Some(lowest), Some(highest), Some(strongest)) =
            (pick(&|r| -r), pick(&|r| r), pick(&|r| r.ln().abs()))
        else {
            continue;
        };
        let (reading, _, p, q) = strongest;
        let variant = &reading.at.variant;
        let (ku, bu) = ((t.units)(k, p, variant), (t.units)(b, q, variant));
        let seed = seed_of(&format!(
            "{kernel}/{}/{variant} {baseline}",
            reading.at.point
        ));
        let interval = (!ku.is_empty() && !bu.is_empty()).then(|| ratio_interval(&ku, &bu, seed));
        let pair = |c: &(Reading, f64, &Point, &Point)| (c.0.clone(), c.1);
        out.push(Speedup {
            kernel: kernel.clone(),
            baseline: baseline.clone(),
            cells: cells.len(),
            faster: cells.iter().filter(|c| c.1 > 1.0 + ALIKE_FRACTION).count(),
            slower: cells.iter().filter(|c| c.1 < 1.0 - ALIKE_FRACTION).count(),
            lowest: pair(lowest),
            highest: pair(highest),
            strongest: pair(strongest),
            interval,
        });
    }
    out.into_iter().map(Finding::Speedup).collect()
}

impl Peak {
    /// The rate as a fraction of the peak.
    pub fn share(&self) -> f64 {
        self.rate / self.peak
    }
}

/// Per kernel that declares `bytes` or `flops` (or is a copy): its highest trusted rate as
/// a share of the peak it is measured against; bytes at the best point where all must
/// cross DRAM ([`Peak::dram_bound`]), where it has one. Highest share first, those caches
/// serve at every point after the rest.
pub fn peaks(t: &Trusted, peaks: &Peaks, l2_bytes: u64) -> Vec<Finding> {
    let exp = t.exp;
    let mut out = Vec::new();
    for (k, kernel) in exp.kernels.iter().enumerate() {
        let host_link = kernel.copy.is_some() && (kernel.on_host(0) || kernel.on_host(1));
        let counted_as = kernel.counted_as();
        let flops_peak = peaks.flops(&counted_as);
        let works = [
            (
                PeakOf::Bytes { host_link },
                if host_link {
                    peaks.host_link
                } else {
                    peaks.dram
                },
            ),
            (PeakOf::Flops(counted_as), flops_peak),
        ];
        for (work, peak) in works {
            let Some(peak) = peak else { continue };
            let candidates: Vec<Peak> = (t.cells(k).into_iter())
                .filter_map(|(p, v, ns)| {
                    let i = kernel.points.iter().position(|x| x == p)?;
                    let launch = kernel.launches.get(i)?;
                    let amount = match &work {
                        PeakOf::Bytes { .. } => launch.bytes?,
                        PeakOf::Flops(_) => launch.flops?,
                    };
                    Some(Peak {
                        at: Reading {
                            at: NamedCell::new(&kernel.name, p, v),
                            ns,
                            against_ns: None,
                        },
                        work: work.clone(),
                        amount,
                        rate: amount / (ns * 1e-9),
                        peak,
                        dram_bound: matches!(work, PeakOf::Bytes { host_link: false })
                            && launch.device_bytes() > 2 * l2_bytes
                            && amount <= 2.0 * launch.device_bytes() as f64,
                    })
                })
                .collect();
            let bound = candidates.iter().any(|c| c.dram_bound);
            let best = (candidates.into_iter())
                .filter(|c| c.dram_bound || !bound)
                .max_by(|x, y| x.rate.total_cmp(&y.rate));
            out.extend(best);
        }
    }
    let cache_served =
        |p: &Peak| matches!(p.work, PeakOf::Bytes { host_link: false }) && !p.dram_bound;
    out.sort_by(|x, y| {
        (cache_served(x), y.share())
            .partial_cmp(&(cache_served(y), x.share()))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out.into_iter().map(Finding::Peak).collect()
}

/// A trusted cell of a tuned kernel: the tuned parameter's value, its point and median.
struct Tuned<'a> {
    value: String,
    point: &'a Point,
    ns: f64,
}

/// Per kernel, where the experiment tunes a parameter (`[report] best`): the value fastest
/// in most groups (ties to the value that won first). The kernel whose best wins by
/// the most first.
pub fn best(t: &Trusted) -> Vec<Finding> {
    let exp = t.exp;
    let Some(param) = &exp.report.best else {
        return vec![];
    };
    let mut out = Vec::new();
    for (k, kernel) in exp.kernels.iter().enumerate() {
        // (variant, the other parameters) -> its cells, in sweep order.
        let mut groups: Vec<((&str, String), Vec<Tuned>)> = Vec::new();
        for (point, variant, ns) in t.cells(k) {
            let Some((_, value)) = point.iter().find(|(n, _)| n == param) else {
                continue;
            };
            let others: Point = point.iter().filter(|(n, _)| n != param).cloned().collect();
            let key = (variant, crate::plan::point_id(&others));
            let cell = Tuned {
                value: value.to_string(),
                point,
                ns,
            };
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => g.1.push(cell),
                None => groups.push((key, vec![cell])),
            }
        }
        // Per group of two cells or more: (variant, fastest, slowest); ties to the first.
        let contests: Vec<(&str, &Tuned, &Tuned)> = (groups.iter())
            .filter(|g| g.1.len() > 1)
            .map(|((v, _), cells)| {
                let first = &cells[0];
                let fastest = (cells.iter()).fold(first, |a, c| if c.ns < a.ns { c } else { a });
                let slowest = (cells.iter()).fold(first, |a, c| if c.ns > a.ns { c } else { a });
                (*v, fastest, slowest)
            })
            .collect();
        // Wins per value, in sweep order of first win.
        let mut wins: Vec<(&str, usize)> = Vec::new();
        for (_, fastest, _) in &contests {
            match wins.iter_mut().find(|w| w.0 == fastest.value) {
                Some(w) => w.1 += 1,
                None => wins.push((&fastest.value, 1)),
            }
        }
        let Some(&(value, n)) = (wins.iter()).fold(None, |a: Option<&(&str, usize)>, w| match a {
            Some(a) if a.1 >= w.1 => Some(a),
            _ => Some(w),
        }) else {
            continue;
        };
        let margin = |c: &&(&str, &Tuned, &Tuned)| c.2.ns / c.1.ns;
        let (v, fastest, slowest) = (contests.iter())
            .filter(|c| c.1.value == value)
            .max_by(|x, y| margin(x).total_cmp(&margin(y)))
            .expect("the value won somewhere");
        out.push(Best {
            kernel: kernel.name.clone(),
            param: param.clone(),
            value: value.to_string(),
            wins: n,
            groups: contests.len(),
            by_most: Reading {
                at: NamedCell::new(&kernel.name, fastest.point, v),
                ns: fastest.ns,
                against_ns: Some(slowest.ns),
            },
            slowest: slowest.value.clone(),
            spread: (contests.iter())
                .map(|c| c.2.ns / c.1.ns)
                .fold(1.0, f64::max),
            alone: kernel.points.first().is_some_and(|p| p.len() == 1),
        });
    }
    let margin = |b: &Best| b.by_most.against_ns.unwrap_or(b.by_most.ns) / b.by_most.ns;
    out.sort_by(|x, y| margin(y).total_cmp(&margin(x)));
    out.into_iter().map(Finding::Best).collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{experiment, fake, with};
    use super::*;
    use crate::experiment::rates::FlopsType;

    fn speedup(f: Finding) -> Speedup {
        match f {
            Finding::Speedup(s) => s,
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn a_speedup_spans_the_trusted_cells_and_bounds_its_strongest_cell() {
        let exp = experiment(
            "n = [1, 2]",
            &[("tiled", ""), ("naive", ""), ("odd", "")],
            &[("hot", ""), ("cold", "cache = \"flush\"")],
            "kernels = [[\"odd\", \"naive\"], [\"tiled\", \"naive\"]]",
        );
        // tiled: 2x faster at n=1 hot, 1.25x at n=2 hot, 1.01x cold at n=1; its n=2 cold
        // cell is not trusted. odd: no trusted cell.
        let f = fake(&[
            ("tiled/n=1/hot", 50.0),
            ("naive/n=1/hot", 100.0),
            ("tiled/n=2/hot", 160.0),
            ("naive/n=2/hot", 200.0),
            ("tiled/n=1/cold", 99.0),
            ("naive/n=1/cold", 100.0),
            ("naive/n=2/cold", 300.0),
        ]);
        let found = with(&exp, &f, speedups);
        assert_eq!(found.len(), 1, "odd has no trusted cell: {found:?}");
        let s = speedup(found[0].clone());
        assert_eq!((s.cells, s.faster, s.slower, s.alike()), (3, 2, 0, 1));
        assert_eq!(s.highest.1, 2.0);
        assert_eq!(
            s.lowest.0.at,
            NamedCell::new("tiled", &exp.points[0], "cold")
        );
        assert_eq!(s.strongest.0.ns, 50.0);
        assert_eq!(s.strongest.0.against_ns, Some(100.0));
        let (lo, hi) = s.interval.unwrap();
        assert!(lo <= 2.0 && 2.0 <= hi && lo > 1.9, "[{lo}, {hi}]");
    }

    fn bytes_kernel(name: &str) -> (String, String) {
        (
            name.to_string(),
            "args = [{ name = \"x\", buffer = \"f32\", len = \"n\", init = \"uniform(0, 1)\" }]\nbytes = \"8 * n\"\nflops = \"2 * n\"".to_string(),
        )
    }

    fn device() -> Peaks {
        Peaks {
            dram: Some(1e12),
            host_link: None,
            fp32: Some(1e13),
            fp64: None,
            fp16: None,
            bf16: None,
            int32: None,
            per_sm_clock: vec![],
            ceiling: None,
            source: String::new(),
        }
    }

    #[test]
    fn the_peak_share_is_taken_where_dram_is_what_it_measures() {
        let (name, extra) = bytes_kernel("copy");
        let exp = experiment(
            "n = [1000, 1000000]",
            &[(&name, &extra)],
            &[("hot", "")],
            "",
        );
        // n = 1000: 8 kB at 4 ns, 2000 GB/s (200%, L2); n = 10^6: 8 MB at 10 µs, 800 GB/s.
        let f = fake(&[("copy/n=1000/hot", 4.0), ("copy/n=1000000/hot", 10_000.0)]);
        let found = with(&exp, &f, |t| peaks(t, &device(), 1_000_000));
        let shares: Vec<(PeakOf, f64, bool)> = (found.iter())
            .map(|f| match f {
                Finding::Peak(p) => (
                    p.work.clone(),
                    (p.share() * 1e6).round() / 1e6,
                    p.dram_bound,
                ),
                f => panic!("{f:?}"),
            })
            .collect();
        assert_eq!(
            shares,
            [
                (PeakOf::Bytes { host_link: false }, 0.8, true),
                (PeakOf::Flops(FlopsType::default()), 0.05, false)
            ]
        );
        // An L2 as large as every buffer: the best over all points, said to be L2's.
        let found = with(&exp, &f, |t| peaks(t, &device(), 1 << 30));
        let Finding::Peak(p) = &found[1] else {
            panic!("{found:?}")
        };
        assert_eq!(
            (p.share().round(), p.dram_bound),
            (2.0, false),
            "L2-served last"
        );
    }

    #[test]
    fn the_best_value_wins_most_groups_and_says_where_it_wins_by_most() {
        let exp = experiment(
            "n = [1, 2]\nblock = [64, 128, 256]",
            &[("k", "")],
            &[("hot", ""), ("cold", "cache = \"flush\"")],
            "best = \"block\"",
        );
        let mut cells = Vec::new();
        for (v, n, b, ns) in [
            ("hot", 1, 64, 30.0),
            ("hot", 1, 128, 10.0),
            ("hot", 1, 256, 11.0),
            ("hot", 2, 64, 90.0),
            ("hot", 2, 128, 20.0),
            ("hot", 2, 256, 25.0),
            ("cold", 1, 64, 5.0),
            ("cold", 1, 128, 6.0),
            ("cold", 2, 128, 7.0),
        ] {
            cells.push((format!("k/n={n} block={b}/{v}"), ns));
        }
        let cells: Vec<(&str, f64)> = cells.iter().map(|(id, ns)| (id.as_str(), *ns)).collect();
        let found = with(&exp, &fake(&cells), best);
        let Finding::Best(b) = &found[0] else {
            panic!("{found:?}")
        };
        // 128 wins hot at n = 1 and 2; 64 wins cold at n = 1; cold n = 2 has one cell.
        assert_eq!((b.value.as_str(), b.wins, b.groups), ("128", 2, 3));
        assert_eq!(b.by_most.at.point, "n=2 block=128");
        assert_eq!((b.by_most.ns, b.by_most.against_ns), (20.0, Some(90.0)));
        assert_eq!((b.slowest.as_str(), b.spread, b.alone), ("64", 4.5, false));
    }
}
