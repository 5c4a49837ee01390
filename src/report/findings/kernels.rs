//! Kernels in words: a kernel against its baseline, its best share of the peak, the best
//! value of a tuned parameter.

use super::words::{against, place, share, speed, time};
use crate::analysis::findings::{Best, EnergyRatio, Peak, PeakOf, Speedup, ALIKE_FRACTION};
use crate::experiment::rates::FlopsType;
use crate::report::format;

/// A kernel against its baseline kernel.
pub(super) fn speedup(s: &Speedup) -> String {
    let (lo, hi) = (s.lowest.1, s.highest.1);
    let (k, b, n) = (&s.kernel, &s.baseline, s.cells);
    let alike = format!("within {}%", ALIKE_FRACTION * 100.0);
    let head = if s.cells == 1 {
        format!("`{k}` is {} than `{b}`", speed(hi))
    } else if s.alike() == n {
        format!("`{k}` runs as fast as `{b}`, {alike}: {lo:.2}x to {hi:.2}x over {n} cells")
    } else if s.faster == n {
        format!(
            "`{k}` is {lo:.2}x to {} than `{b}` over {n} cells",
            speed(hi)
        )
    } else if s.slower == n {
        format!(
            "`{k}` is {:.2}x to {} than `{b}` over {n} cells",
            1.0 / hi,
            speed(lo)
        )
    } else {
        let mut parts = Vec::new();
        if s.faster > 0 {
            parts.push(format!(
                "faster at {} of {n} cells (up to {hi:.2}x)",
                s.faster
            ));
        }
        if s.slower > 0 {
            parts.push(format!("slower at {} (up to {:.2}x)", s.slower, 1.0 / lo));
        }
        if s.alike() > 0 {
            parts.push(format!("{alike} at {}", s.alike()));
        }
        format!("`{k}` against `{b}`: {}", parts.join(", "))
    };
    let (r, ratio) = &s.strongest;
    let interval = s.interval.map_or(String::new(), |(l, h)| {
        let (l, h) = if *ratio >= 1.0 {
            (l, h)
        } else {
            (1.0 / h, 1.0 / l)
        };
        let spans_one = if l <= 1.0 && 1.0 <= h {
            ": it holds 1x"
        } else {
            ""
        };
        format!(" (95% interval {l:.2}x to {h:.2}x{spans_one})")
    });
    format!(
        "{head}; {}: {}, {}{interval}.",
        place(&r.at, false),
        against(r.ns, r.against_ns.unwrap_or(f64::NAN)),
        speed(*ratio)
    )
}

/// A kernel's energy a launch against its baseline's.
pub(super) fn energy(e: &EnergyRatio) -> String {
    let (k, b) = (&e.kernel, &e.baseline);
    let ratio = e.ratio();
    let how = |r: f64| match r >= 1.0 {
        true => format!("{r:.2}x less"),
        false => format!("{:.2}x more", 1.0 / r),
    };
    let range = match e.cells {
        1 => String::new(),
        n => format!(
            " over {n} cells ({:.2}x to {:.2}x its baseline's)",
            e.lowest, e.highest
        ),
    };
    let joules = |en: &crate::protocol::Energy| {
        format!("{} mJ", format::number(en.joules_per_launch() * 1e3))
    };
    format!(
        "`{k}` takes {} energy a launch than `{b}`{range}; {}: {} against {}, at {} W against {} W (the board's, by NVML's counter, ±{:.0}%).",
        how(ratio),
        place(&e.at, false),
        joules(&e.mine),
        joules(&e.theirs),
        format::number(e.mine.watts()),
        format::number(e.theirs.watts()),
        100.0 * e.mine.uncertainty().max(e.theirs.uncertainty())
    )
}

/// A kernel's best share of the peak.
pub(super) fn peak(p: &Peak) -> String {
    let (rate, peak, name, amount) = match &p.work {
        PeakOf::Bytes { host_link } => (
            format!("{} GB/s", format::number(p.rate / 1e9)),
            format!("{} GB/s", format::number(p.peak / 1e9)),
            if *host_link { "host link" } else { "DRAM" },
            si(p.amount, "B"),
        ),
        PeakOf::Flops(dtype) => (
            format!("{} TFLOP/s", format::number(p.rate / 1e12)),
            format!("{} TFLOP/s", format::number(p.peak / 1e12)),
            dtype.name(),
            si(p.amount, "FLOP"),
        ),
    };
    let l2 = match &p.work {
        PeakOf::Bytes { host_link: false } if !p.dram_bound => {
            "; at no trusted point must all its bytes cross DRAM (buffers within twice the L2, or bytes read more than once), so caches serve part of them"
        }
        // Above a peak the kernel states: the rate it states is too low, or its work overstated.
        PeakOf::Flops(FlopsType::Declared(_)) if p.share() > 1.0 => {
            "; above that peak, so the kernel's `peak` states less than its unit does (check its per_sm_clock: docs/peaks.md) or it declares more operations than it does"
        }
        // Above a unit's peak: the work ran on another unit, or is overstated.
        PeakOf::Flops(_) if p.share() > 1.0 => {
            "; above that peak, so the kernel runs on other units than its `flops_type` says (tensor cores? declare their type: docs/peaks.md) or declares more FLOPs than it does"
        }
        _ => "",
    };
    format!(
        "`{}` reaches {rate}, {} of the {peak} {name} peak, {}: {amount} in {}{l2}.",
        p.at.at.kernel,
        share(p.share()),
        place(&p.at.at, false),
        time(p.at.ns)
    )
}

/// The best value of a tuned parameter.
pub(super) fn best(b: &Best) -> String {
    let slowest = b.by_most.against_ns.unwrap_or(b.by_most.ns);
    let groups = if b.alone && b.groups == 1 {
        "under its one variant".to_string()
    } else if b.alone {
        format!("under {} of {} variants", b.wins, b.groups)
    } else {
        format!(
            "in {} of {} groups (a variant at a value of the other parameters)",
            b.wins, b.groups
        )
    };
    if b.spread <= 1.0 + ALIKE_FRACTION {
        return format!(
            "`{}` barely matters to `{}`: its fastest and slowest value are within {} of each other {}, at most {:.2}x apart.",
            b.param,
            b.kernel,
            share(b.spread - 1.0),
            if b.alone { "under every variant" } else { "in every group" },
            b.spread
        );
    }
    format!(
        "The fastest `{}` for `{}` is {}, {groups}; it wins by most {}: {} with `{}` = {} ({:.2}x).",
        b.param,
        b.kernel,
        b.value,
        place(&b.by_most.at, false),
        against(b.by_most.ns, slowest),
        b.param,
        b.slowest,
        slowest / b.by_most.ns
    )
}

/// A number with an SI prefix and four significant digits: `402.7 MB`, `137.4 GFLOP`.
fn si(v: f64, unit: &str) -> String {
    let (scale, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(s, _)| v >= *s)
        .unwrap_or((1.0, ""));
    format!("{} {prefix}{unit}", format::number(v / scale))
}

#[cfg(test)]
mod tests {
    use super::super::tests::reading;
    use super::*;

    fn pair(id: &str, ns: f64, baseline: f64) -> (crate::analysis::findings::Reading, f64) {
        (reading(id, ns, Some(baseline)), baseline / ns)
    }

    #[test]
    fn a_speedup_reads_as_a_range_or_as_faster_and_slower_cells() {
        let mut s = Speedup {
            kernel: "tiled".into(),
            baseline: "naive".into(),
            cells: 3,
            faster: 3,
            slower: 0,
            lowest: pair("tiled/n=4096/hot", 15.22e6, 21.52e6),
            highest: pair("tiled/n=2048/hot", 1.853e6, 2.727e6),
            strongest: pair("tiled/n=2048/hot", 1.853e6, 2.727e6),
            interval: Some((1.46, 1.48)),
        };
        assert_eq!(
            speedup(&s),
            "`tiled` is 1.41x to 1.47x faster than `naive` over 3 cells; at n=2048 (hot): 1.853 ms against 2.727 ms, 1.47x faster (95% interval 1.46x to 1.48x)."
        );
        (s.faster, s.slower) = (1, 1);
        s.lowest = pair("tiled/n=1/cold", 106.0, 100.0);
        s.strongest = s.lowest.clone();
        s.interval = Some((0.93, 1.01));
        assert_eq!(
            speedup(&s),
            "`tiled` against `naive`: faster at 1 of 3 cells (up to 1.47x), slower at 1 (up to 1.06x), within 2% at 1; at n=1 (cold): 106.0 ns against 100.0 ns, 1.06x slower (95% interval 0.99x to 1.08x: it holds 1x)."
        );
    }

    #[test]
    fn a_peak_and_a_tuned_parameter_in_words() {
        let p = Peak {
            at: reading("saxpy/n=4096/hot", 67_330.0, None),
            work: PeakOf::Bytes { host_link: false },
            amount: 201.3e6,
            rate: 201.3e6 / 67.33e-6,
            peak: 3352e9,
            dram_bound: false,
        };
        assert_eq!(
            peak(&p),
            "`saxpy` reaches 2990 GB/s, 89% of the 3352 GB/s DRAM peak, at n=4096 (hot): 201.3 MB in 67.33 µs; at no trusted point must all its bytes cross DRAM (buffers within twice the L2, or bytes read more than once), so caches serve part of them."
        );
        // A WMMA GEMM left at the default FP32 type reads above the CUDA cores' peak.
        let wmma = Peak {
            at: reading("wmma/n=4096/hot", 1_000_000.0, None),
            work: PeakOf::Flops(FlopsType::default()),
            amount: 137.4e9,
            rate: 137.4e9 / 1e-3,
            peak: 66.91e12,
            dram_bound: false,
        };
        assert!(peak(&wmma).contains("205% of the 66.91 TFLOP/s FP32 peak"));
        assert!(peak(&wmma).contains("declare their type: docs/peaks.md"));
        // Above a peak the kernel states: named as stated, and its `peak` the key to check.
        let dp4a = Peak {
            work: PeakOf::Flops(FlopsType::Declared(
                crate::experiment::rates::DeclaredPeak {
                    per_sm_clock: 512.0,
                    name: "INT8 dp4a (operations)".into(),
                },
            )),
            peak: 133.8e12,
            rate: 150e12,
            ..wmma.clone()
        };
        assert!(peak(&dp4a).contains("112% of the 133.8 TFLOP/s INT8 dp4a (operations) peak"));
        assert!(peak(&dp4a).contains("the kernel's `peak` states less than its unit does"));
        assert!(!peak(&dp4a).contains("flops_type"));
        let mut b = Best {
            kernel: "copy".into(),
            param: "block".into(),
            value: "256".into(),
            wins: 5,
            groups: 6,
            by_most: reading("copy/block=256/hot", 85_200.0, Some(112_300.0)),
            slowest: "64".into(),
            spread: 1.32,
            alone: true,
        };
        assert_eq!(
            best(&b),
            "The fastest `block` for `copy` is 256, under 5 of 6 variants; it wins by most at block=256 (hot): 85.20 µs against 112.3 µs with `block` = 64 (1.32x)."
        );
        b.spread = 1.007;
        assert!(best(&b).starts_with("`block` barely matters to `copy`: its fastest and slowest value are within 0.7% of each other under every variant"), "{}", best(&b));
    }
}
