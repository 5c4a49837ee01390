//! The runner's statistics, in one place for the stages that take them: the worker's
//! methods (the median of CUPTI's spans, the stopping rules), the parent (a profiler's
//! readings), the analysis (the audit's bounds and tests, a cell's units) and `compare`.
//! It imports nothing of the runner, so that each stage uses this one implementation
//! without importing another stage. The per-cell summaries that `summary.csv` holds are
//! polars' reductions, in `analysis::stats`.

mod normal;
mod order;
mod stop;
mod two_samples;
mod units;

pub use normal::{iqr_sigma, lower_median_shortfall, mad_sigma, upper_quantile};
pub use order::{
    interval_pct, iqr, lower_median, median, median_interval, nearest_rank, nearest_rank_index,
    shortest_half, step_quartile,
};
pub use stop::{Least, MedianRule, NoiseRule, Reached, StoppingRule, Verdict};
pub use two_samples::{
    each_above_chance, mann_whitney_p, rank_above_chance, split_chance, two_sample_ks, Ranked,
};
pub use units::{median_of, ratio_interval, unit_values};
