//! `[report] fit = true`: each kernel's median time against the bytes it declares, fitted as
//! `time = a + bytes / b` (seed 004's small-kernels model, `throughput = V / (a + V / b)`): a is
//! the time a launch costs however little it moves, b the bandwidth it reaches when large.

use super::format;
use crate::analysis::Analysis;
use crate::experiment::Unit;
use serde::Serialize;

#[derive(Serialize)]
pub struct FitRow {
    pub kernel: String,
    pub variant: String,
    pub points: usize,
    pub overhead: String,
    pub bandwidth: String,
    pub worst: String,
}

/// A fit of `t = a + v / b` minimizing the relative residuals (each point weighs the same
/// whatever its size); None with fewer than two distinct volumes.
pub fn fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    // Weighted least squares on t = a + c v with weights 1 / t^2.
    let (mut sw, mut sv, mut st, mut svv, mut svt) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(v, t) in points.iter().filter(|(v, t)| v.is_finite() && *t > 0.0) {
        let w = 1.0 / (t * t);
        sw += w;
        sv += w * v;
        st += w * t;
        svv += w * v * v;
        svt += w * v * t;
    }
    let det = sw * svv - sv * sv;
    if points.len() < 2 || det.abs() <= f64::EPSILON * sw * svv {
        return None;
    }
    let c = (sw * svt - sv * st) / det;
    let a = (st - c * sv) / sw;
    (c > 0.0).then_some((a, 1.0 / c))
}

/// A row per kernel that declares bytes and variant, where the fit exists; the overheads in
/// one unit.
pub fn build(a: &Analysis) -> Vec<FitRow> {
    let exp = &a.run.experiment;
    if !exp.report.fit {
        return vec![];
    }
    let mut found = Vec::new();
    for (k, kernel) in exp.kernels.iter().enumerate() {
        for v in &exp.variants {
            let points: Vec<(f64, f64)> = kernel
                .points
                .iter()
                .zip(&kernel.launches)
                .filter_map(|(p, l)| Some((l.bytes?, a.median_at(k, p, &v.name)?)))
                .collect();
            let Some((overhead, bandwidth)) = fit(&points) else {
                continue;
            };
            let worst = points
                .iter()
                .map(|(b, t)| ((overhead + b / bandwidth) - t).abs() / t * 100.0)
                .fold(0.0, f64::max);
            found.push((kernel, v, points.len(), overhead, bandwidth, worst));
        }
    }
    let unit = format::unit_for(found.iter().map(|f| f.3), Unit::Auto);
    found
        .into_iter()
        .map(|(kernel, v, points, overhead, bandwidth, worst)| FitRow {
            kernel: kernel.name.clone(),
            variant: v.name.clone(),
            points,
            overhead: format::time(overhead, unit),
            bandwidth: format!("{bandwidth:.1} GB/s"),
            worst: format!("{worst:.1}%"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_overhead_and_a_bandwidth_are_recovered() {
        // 2 µs of overhead and 1000 bytes per ns (1000 GB/s), from 1 KB to 1 GB.
        let points: Vec<(f64, f64)> = (0..7)
            .map(|e| {
                let v = 1000f64 * 10f64.powi(e);
                (v, 2000.0 + v / 1000.0)
            })
            .collect();
        let (a, b) = fit(&points).unwrap();
        assert!(
            (a - 2000.0).abs() < 1e-6 && (b - 1000.0).abs() < 1e-6,
            "{a} {b}"
        );
        assert!(fit(&points[..1]).is_none());
        assert!(
            fit(&[(5.0, 1.0), (5.0, 2.0)]).is_none(),
            "one volume fits nothing"
        );
    }
}
