//! Seed 004's small-kernels model, `time = a + bytes / b` (`throughput = V / (a + V / b)`): a
//! is the time a launch costs however little it moves, b the bandwidth it reaches when large.
//! `[report] fit = true` fits each kernel that declares bytes, per variant.

use super::facts::Facts;

/// The points a fit is made over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scope {
    Every,
    /// Those whose bytes fit in the device's L2 (bytes): the model holds within one memory
    /// level, and the seed fits it to kernels whose data stay in cache.
    WithinL2(u64),
}

/// One kernel's fit under one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub kernel: usize,
    pub variant: usize,
    pub scope: Scope,
    pub points: usize,
    /// a, ns.
    pub overhead_ns: f64,
    /// b, bytes per ns (GB/s).
    pub bandwidth: f64,
    /// The largest relative residual over the points, in percent.
    pub worst_pct: f64,
}

/// Every kernel that declares bytes, under every variant, where the fit exists: over every
/// point, and over the points within L2 where that is a different set of at least two.
pub fn fits(a: &Facts) -> Vec<Fit> {
    let exp = &a.run.experiment;
    if !exp.report.fit {
        return vec![];
    }
    let l2_bytes = a.run.meta.device.as_ref().map(|d| d.l2_bytes.max(0) as u64);
    let mut found = Vec::new();
    for (k, kernel) in exp.kernels.iter().enumerate() {
        for (vi, v) in exp.variants.iter().enumerate() {
            let points: Vec<(f64, f64)> = (kernel.points.iter().zip(&kernel.launches))
                .filter_map(|(p, l)| Some((l.bytes?, a.median_at(k, p, &v.name)?)))
                .collect();
            for (scope, points) in scopes(points, l2_bytes) {
                let Some((overhead_ns, bandwidth)) = fit(&points) else {
                    continue;
                };
                let worst_pct = (points.iter())
                    .map(|(b, t)| ((overhead_ns + b / bandwidth) - t).abs() / t * 100.0)
                    .fold(0.0, f64::max);
                found.push(Fit {
                    kernel: k,
                    variant: vi,
                    scope,
                    points: points.len(),
                    overhead_ns,
                    bandwidth,
                    worst_pct,
                });
            }
        }
    }
    found
}

/// The point sets a kernel is fitted over: all of them, and those within L2 where that is
/// a different set of at least two.
fn scopes(points: Vec<(f64, f64)>, l2_bytes: Option<u64>) -> Vec<(Scope, Vec<(f64, f64)>)> {
    let in_l2: Vec<(f64, f64)> = match l2_bytes {
        Some(l2) => points
            .iter()
            .copied()
            .filter(|(b, _)| *b <= l2 as f64)
            .collect(),
        None => vec![],
    };
    let within = (in_l2.len() >= 2 && in_l2.len() < points.len())
        .then(|| (Scope::WithinL2(l2_bytes.unwrap_or_default()), in_l2));
    std::iter::once((Scope::Every, points))
        .chain(within)
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_fit_takes_the_points_within_l2_only_where_they_differ() {
        let points = vec![(1e3, 1.0), (1e6, 2.0), (1e9, 3.0)];
        let sets = scopes(points.clone(), Some(50_000_000));
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[1], (Scope::WithinL2(50_000_000), points[..2].to_vec()));
        assert_eq!(
            scopes(points.clone(), Some(2_000_000_000)).len(),
            1,
            "all within L2"
        );
        assert_eq!(
            scopes(points.clone(), Some(10_000)).len(),
            1,
            "one point within"
        );
        assert_eq!(scopes(points, None).len(), 1, "no L2 known");
    }

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
