//! `[report] fit = true`: each kernel's median time against the bytes it declares, fitted as
//! `time = a + bytes / b` (seed 004's small-kernels model, `throughput = V / (a + V / b)`): a is
//! the time a launch costs however little it moves, b the bandwidth it reaches when large.

use super::format;
use crate::analysis::{fit::fit, Analysis};
use crate::experiment::knobs::cache::bytes_text;
use crate::experiment::Unit;
use serde::Serialize;

#[derive(Serialize)]
pub struct FitRow {
    pub kernel: String,
    pub variant: String,
    pub scope: String,
    pub points: usize,
    pub overhead: String,
    pub bandwidth: String,
    pub worst: String,
}

/// Rows per kernel that declares bytes and variant, where the fit exists: over every point,
/// and over the points whose bytes fit in L2 (the model holds within one memory level; the
/// seed fits it to kernels whose data stay in cache). Overheads in one unit.
pub fn build(a: &Analysis) -> Vec<FitRow> {
    let exp = &a.run.experiment;
    if !exp.report.fit {
        return vec![];
    }
    let l2_bytes = a.run.meta.device.as_ref().map(|d| d.l2_bytes as f64);
    let mut found = Vec::new();
    for (k, kernel) in exp.kernels.iter().enumerate() {
        for v in &exp.variants {
            let points: Vec<(f64, f64)> = kernel
                .points
                .iter()
                .zip(&kernel.launches)
                .filter_map(|(p, l)| Some((l.bytes?, a.median_at(k, p, &v.name)?)))
                .collect();
            for (scope, points) in scopes(points, l2_bytes) {
                let Some((overhead, bandwidth)) = fit(&points) else {
                    continue;
                };
                let worst = points
                    .iter()
                    .map(|(b, t)| ((overhead + b / bandwidth) - t).abs() / t * 100.0)
                    .fold(0.0, f64::max);
                found.push((kernel, v, scope, points.len(), overhead, bandwidth, worst));
            }
        }
    }
    let unit = format::unit_for(found.iter().map(|f| f.4), Unit::Auto);
    found
        .into_iter()
        .map(
            |(kernel, v, scope, points, overhead, bandwidth, worst)| FitRow {
                kernel: kernel.name.clone(),
                variant: v.name.clone(),
                scope,
                points,
                overhead: format::time(overhead, unit),
                bandwidth: format!("{} GB/s", format::number(bandwidth)),
                worst: format!("{worst:.1}%"),
            },
        )
        .collect()
}

/// The point sets a kernel is fitted over: all of them, and those within L2 where that is
/// a different set of at least two.
fn scopes(points: Vec<(f64, f64)>, l2_bytes: Option<f64>) -> Vec<(String, Vec<(f64, f64)>)> {
    let in_l2: Vec<(f64, f64)> = match l2_bytes {
        Some(l2) => points.iter().copied().filter(|(b, _)| *b <= l2).collect(),
        None => vec![],
    };
    let within = (in_l2.len() >= 2 && in_l2.len() < points.len()).then(|| {
        let l2 = bytes_text(l2_bytes.unwrap_or_default() as u64);
        (format!("bytes within L2 ({l2})"), in_l2)
    });
    std::iter::once(("every point".to_string(), points))
        .chain(within)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_fit_takes_the_points_within_l2_only_where_they_differ() {
        let points = vec![(1e3, 1.0), (1e6, 2.0), (1e9, 3.0)];
        let sets = scopes(points.clone(), Some(50e6));
        assert_eq!(sets.len(), 2);
        assert_eq!(sets[1].1, points[..2].to_vec());
        assert!(sets[1].0.contains("within L2"), "{}", sets[1].0);
        assert_eq!(scopes(points.clone(), Some(2e9)).len(), 1, "all within L2");
        assert_eq!(
            scopes(points.clone(), Some(1e4)).len(),
            1,
            "one point within"
        );
        assert_eq!(scopes(points, None).len(), 1, "no device facts");
    }
}
