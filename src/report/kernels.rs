//! Kernels compared (`[report] kernels = [[kernel, baseline], ...]`): per pair, sweep point
//! and variant, both kernels' medians and how much faster or slower the kernel is than its
//! baseline, so a rewrite is judged under every methodology the experiment runs.

use super::format;
use super::layout::{self, Part};
use crate::experiment::{point_label, Experiment, Point};
use serde::Serialize;

#[derive(Serialize)]
pub struct KernelsTable {
    pub kernel: String,
    pub baseline: String,
    /// The one unit all its times are shown in.
    pub unit: String,
    /// Either kernel timed unchecked, by the user's choice.
    pub unchecked: bool,
    /// The sweep point, then per variant the kernel's median, the baseline's and the
    /// speed-up; split to fit a line where the variants are many.
    pub parts: Vec<Part>,
}

/// `1.52x faster` where the kernel's median is below its baseline's (baseline / kernel),
/// `1.10x slower` where above (kernel / baseline): a ratio above 1 either way reads at a
/// glance, where 0.91x would not.
pub fn speedup(kernel_ns: f64, baseline_ns: f64) -> String {
    let ratio = baseline_ns / kernel_ns;
    if !(ratio.is_finite() && ratio > 0.0) {
        return "–".into();
    }
    if ratio >= 1.0 {
        format!("{ratio:.2}x faster")
    } else {
        format!("{:.2}x slower", 1.0 / ratio)
    }
}

/// One table per pair; `median(kernel, point, variant)` is a cell's headline median in ns,
/// `None` where the cell failed or did not run.
pub fn build(
    exp: &Experiment,
    median: impl Fn(usize, &Point, &str) -> Option<f64>,
) -> Vec<KernelsTable> {
    let index = |name: &str| exp.kernels.iter().position(|k| k.name == name);
    exp.report
        .kernels
        .iter()
        .filter_map(|(kernel, baseline)| Some((kernel, baseline, index(kernel)?, index(baseline)?)))
        .map(|(kernel, baseline, k, b)| {
            // The baseline's point at each of the kernel's (a baseline without the kernel's
            // own axes serves all their values).
            let base = |p: &Point| {
                let kb = &exp.kernels[b];
                kb.point_for(p).map(|i| kb.points[i].clone())
            };
            let median_b = |p: &Point, v: &str| base(p).and_then(|q| median(b, &q, v));
            let unit = format::unit_for(
                exp.kernels[k].points.iter().flat_map(|p| {
                    exp.variants
                        .iter()
                        .flat_map(|v| [median(k, p, &v.name), median_b(p, &v.name)])
                        .flatten()
                        .collect::<Vec<_>>()
                }),
                exp.report.unit,
            );
            let time = |ns: Option<f64>| ns.map_or("–".into(), |ns| format::time(ns, unit));
            let prefix = |v: &str| match exp.variants.len() {
                1 => String::new(),
                _ => format!("{v}: "),
            };
            let header = std::iter::once(exp.parameter_names(k)).chain(
                (exp.variants.iter()).flat_map(|v| {
                    let p = prefix(&v.name);
                    [
                        format!("{p}{kernel}"),
                        format!("{p}{baseline}"),
                        format!("{p}speed-up"),
                    ]
                }),
            );
            let rows = (exp.kernels[k].points.iter()).map(|p| {
                let values = (exp.variants.iter()).flat_map(|v| {
                    let (km, bm) = (median(k, p, &v.name), median_b(p, &v.name));
                    let ratio = match (km, bm) {
                        (Some(km), Some(bm)) => speedup(km, bm),
                        _ => "–".into(),
                    };
                    [time(km), time(bm), ratio]
                });
                std::iter::once(point_label(p)).chain(values).collect()
            });
            KernelsTable {
                kernel: kernel.clone(),
                baseline: baseline.clone(),
                unit: unit.symbol().into(),
                unchecked: exp.kernels[k].unchecked || exp.kernels[b].unchecked,
                parts: layout::split(header.collect(), rows.collect(), 1),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_speedup_reads_as_faster_or_slower() {
        assert_eq!(speedup(100.0, 152.0), "1.52x faster");
        assert_eq!(speedup(110.0, 100.0), "1.10x slower");
        assert_eq!(speedup(100.0, 100.0), "1.00x faster");
        assert_eq!(speedup(0.0, 100.0), "–");
    }

    fn experiment(variants: &str, report: &str) -> Experiment {
        let kernel = |name: &str| {
            format!(
                "[[kernel]]\nname = \"{name}\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\n"
            )
        };
        let text = format!(
            "[experiment]\ntitle = \"t\"\n[sweep]\nn = [1, 2]\n{}{}{variants}[report]\nfloor = false\n{report}\n",
            kernel("tiled"),
            kernel("naive"),
        );
        Experiment::from_text(&text).unwrap()
    }

    #[test]
    fn a_table_per_pair_with_each_variants_medians_and_speedup() {
        let exp = experiment(
            "[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"cold\"\n",
            "kernels = [[\"tiled\", \"naive\"]]",
        );
        // tiled is kernel 0, naive 1; the cold tiled cell at n = 2 failed.
        let median = |k: usize, p: &Point, v: &str| match (k, p[0].1.as_f64().unwrap() as i64, v) {
            (0, 2, "cold") => None,
            (0, n, "hot") => Some(1_000.0 * n as f64),
            (0, n, _) => Some(2_000.0 * n as f64),
            (_, n, _) => Some(1_520.0 * n as f64),
        };
        let tables = build(&exp, median);
        assert_eq!(tables.len(), 1);
        let t = &tables[0];
        assert_eq!(t.unit, "µs");
        let (header, rows) = (&t.parts[0].header, &t.parts[0].rows);
        assert_eq!(
            header[1..],
            [
                "hot: tiled",
                "hot: naive",
                "hot: speed-up",
                "cold: tiled",
                "cold: naive",
                "cold: speed-up"
            ]
        );
        assert_eq!(
            rows[0][1..],
            [
                "1.000 µs",
                "1.520 µs",
                "1.52x faster",
                "2.000 µs",
                "1.520 µs",
                "1.32x slower"
            ]
        );
        assert_eq!(rows[1][4..], ["–", "3.040 µs", "–"]);
    }

    #[test]
    fn one_variant_titles_its_columns_by_kernel_alone() {
        let exp = experiment(
            "[[variant]]\nname = \"hot\"\n",
            "kernels = [[\"tiled\", \"naive\"]]",
        );
        let tables = build(&exp, |k, _, _| Some(if k == 0 { 1e6 } else { 2e6 }));
        let part = &tables[0].parts[0];
        assert_eq!(part.header[1..], ["tiled", "naive", "speed-up"]);
        assert_eq!(part.rows[0][1..], ["1.000 ms", "2.000 ms", "2.00x faster"]);
        assert!(build(
            &experiment("[[variant]]\nname = \"hot\"\n", ""),
            |_, _, _| None
        )
        .is_empty());
    }
}
