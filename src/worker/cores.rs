//! Host work shared out over every core: the inputs' draw, the float64 matmul reference and
//! the comparison of an output with a reference kernel's, each of which took seconds on one
//! core for a GiB. One pool of threads serves every call (rayon's): starting 16 threads per
//! call took about a millisecond on the H100's host, as long as a small check's own work.

use rayon::prelude::*;

/// `work` on each of `items` over every core; the results in the items' order.
pub(super) fn each<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    items.into_par_iter().map(work).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_come_in_the_items_order() {
        for n in [0, 1, 7, 1000] {
            let squares = super::each((0..n).collect(), |i: u64| i * i);
            assert_eq!(squares, (0..n).map(|i| i * i).collect::<Vec<_>>());
        }
    }
}
