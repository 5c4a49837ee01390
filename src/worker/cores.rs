//! Host work shared out over every core: the inputs' draw, the float64 matmul reference and
//! the comparison of an output with a reference kernel's, each of which took seconds on one
//! core for a GiB.

/// `work` on each of `items`, in contiguous groups, one group per core; the results in the
/// items' order. A single group runs on this thread.
pub(super) fn each<T: Send, R: Send>(items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = items.len().div_ceil(cores).max(1);
    if items.len() <= per {
        return items.into_iter().map(work).collect();
    }
    let mut groups: Vec<Vec<T>> = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        groups.push(items.by_ref().take(per).collect());
    }
    let work = &work;
    std::thread::scope(|scope| {
        let running: Vec<_> = (groups.into_iter())
            .map(|group| scope.spawn(move || group.into_iter().map(work).collect::<Vec<R>>()))
            .collect();
        (running.into_iter())
            .flat_map(|r| r.join().expect("a thread of host work does not panic"))
            .collect()
    })
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
