//! Seed 004's small-kernels model, `time = a + bytes / b` (`throughput = V / (a + V / b)`): a
//! is the time a launch costs however little it moves, b the bandwidth it reaches when large.

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
