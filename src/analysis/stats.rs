//! Per-cell statistics from the stored samples, computed with polars' (eager) reductions.
//! Percentiles interpolate linearly and the standard deviation divides by n, as the post does.

use polars::prelude::*;
use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Stats {
    pub count: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
    /// Population standard deviation (over n).
    pub std: f64,
    pub p25: f64,
    pub p75: f64,
    pub p95: f64,
    pub p99: f64,
    /// Coefficient of variation: std / mean.
    pub cv: f64,
    /// Interquartile range: p75 - p25.
    pub iqr: f64,
}

/// Polars' reductions over one group's samples: the sums in the samples' order, the
/// quantiles over one sorted copy (flagged sorted, so that no quantile sorts again).
pub fn of(times: Vec<f64>) -> PolarsResult<Stats> {
    let f = |s: PolarsResult<Scalar>| -> PolarsResult<f64> {
        Ok(s?.value().extract::<f64>().unwrap_or(f64::NAN))
    };
    let mut ascending = times.clone();
    ascending.sort_unstable_by(f64::total_cmp);
    let c = Column::new("t".into(), times);
    let mut sorted = Series::new("t".into(), ascending);
    sorted.set_sorted_flag(polars::series::IsSorted::Ascending);
    let q = |p| f(sorted.quantile_reduce(p, QuantileMethod::Linear));
    let (mean, std, p25, p75) = (f(c.mean_reduce())?, f(c.std_reduce(0))?, q(0.25)?, q(0.75)?);
    Ok(Stats {
        count: c.len() as u64,
        min: f(c.min_reduce())?,
        max: f(c.max_reduce())?,
        mean,
        median: q(0.5)?,
        std,
        p25,
        p75,
        p95: q(0.95)?,
        p99: q(0.99)?,
        cv: std / mean,
        iqr: p75 - p25,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn statistics_match_hand_computed_values() {
        let a = of((1..=10).map(|x| x as f64).collect()).unwrap();
        assert_eq!(a.count, 10);
        close(a.min, 1.0);
        close(a.max, 10.0);
        close(a.mean, 5.5);
        close(a.median, 5.5);
        // population variance of 1..10 = (n^2 - 1) / 12 = 8.25
        close(a.std, 8.25f64.sqrt());
        // linear interpolation at (n - 1) * p: p25 -> 1 + 2.25 = 3.25, p75 -> 7.75
        close(a.p25, 3.25);
        close(a.p75, 7.75);
        close(a.p95, 9.55);
        close(a.p99, 9.91);
        close(a.iqr, 4.5);
        close(a.cv, 8.25f64.sqrt() / 5.5);
        let b = of(vec![42.0]).unwrap();
        assert_eq!(b.count, 1);
        close(b.median, 42.0);
        close(b.std, 0.0);
    }
}
