//! The median: the one statistic that the worker's methods (CUPTI's spans, a graph's nodes),
//! the parent (a profiler's readings) and the analysis all take. It imports nothing of the
//! runner, so each stage uses this one implementation without importing another stage.

/// The median of `values` (the mean of the middle two for an even count); `None` when
/// there are none.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    // The middle values found in place, not by sorting: the same values, in linear time.
    let n = values.len();
    let (below, &mut upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    Some(if n % 2 == 1 {
        upper
    } else {
        let lower = below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .expect("n >= 2");
        (lower + upper) / 2.0
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_even_odd_and_empty_lists() {
        assert_eq!(super::median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(super::median(vec![]), None);
        assert_eq!(super::median(vec![5.0, -1.0]), Some(2.0));
        assert_eq!(super::median(vec![7.0]), Some(7.0));
    }
}
