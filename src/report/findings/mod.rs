//! The run's findings (`analysis::findings`) in words: one sentence each, every number as
//! the tables below show it (times with four significant digits, ratios with two decimals).

mod kernels;
mod methods;
mod words;

use super::format;
use crate::analysis::counters::{BytesCheck, BytesVerdict};
use crate::analysis::findings::{
    clipped, AuditCost, CheckedBy, CostPart, Finding, Range, Split, WideLimits,
};
use words::{count, listed, place, spot, time, MAX_SENTENCE};

/// Each finding as a sentence.
pub fn sentences(findings: &[Finding]) -> Vec<String> {
    findings.iter().map(sentence).collect()
}

fn sentence(f: &Finding) -> String {
    match f {
        Finding::Untrusted {
            kernel,
            word,
            cells,
            of,
            reason,
        } => {
            let what = match *word {
                "passed" => format!("`{kernel}`, written to be caught, passed"),
                w => format!("`{kernel}` {w}"),
            };
            let at = match cells.len() {
                1 if *of == 1 => "its one cell".to_string(),
                n if n == *of => format!("all {}", count(n, "cell")),
                n => format!("{n} of its {}", count(*of, "cell")),
            };
            // A failed cell's reason is its worker's error, as the run folder holds it.
            let reason = match *word {
                "failed" => crate::report::format::inert(reason),
                _ => reason.to_string(),
            };
            let head = format!("{what} at {at} ({}): ", listed(cells));
            // Long cell names leave the reason less room (the trust table has it whole).
            let room = MAX_SENTENCE.saturating_sub(head.chars().count() + 1);
            format!("{head}{}.", clipped(&reason, room))
        }
        Finding::Caught {
            kernels,
            cells,
            caught,
        } => {
            let n: usize = caught.iter().map(|c| c.1).sum();
            let all = if n == *cells {
                format!("All {cells}")
            } else {
                format!("{n} of the {cells}")
            };
            let by: Vec<String> = caught.iter().map(|(w, n)| format!("{n} {w}")).collect();
            format!(
                "{all} cells of the {} written to be caught (`expect = \"caught\"`) were caught: {}.",
                count(*kernels, "kernel"),
                by.join(", ")
            )
        }
        Finding::Bytes {
            checked,
            agree,
            cached,
            marked,
        } => bytes(*checked, *agree, *cached, marked),
        Finding::Speedup(s) => kernels::speedup(s),
        Finding::Energy(e) => kernels::energy(e),
        Finding::Peak(p) => kernels::peak(p),
        Finding::Best(b) => kernels::best(b),
        Finding::Difference(d) => methods::difference(d),
        Finding::Bias(b) => methods::bias(b),
        Finding::BiasWithin { methods: m, of } => methods::bias_within(m, *of),
        Finding::Peer(p) => methods::peer(p),
        Finding::Flagged { cells, of, example } => format!(
            "{} of {of} trusted cells are flagged ({}); `{}`: {}.",
            cells.len(),
            listed(cells),
            example.0,
            example.1.join("; ")
        ),
        Finding::Stopped { cells, of } => {
            let ids: Vec<String> = cells.iter().map(|(id, _)| id.clone()).collect();
            format!(
                "{} of {of} trusted cells stopped at the per-cell budget before their sample count ({}); `{}`: {} (`budget = \"none\"` takes every sample).",
                cells.len(),
                listed(&ids),
                cells[0].0,
                cells[0].1
            )
        }
        Finding::AuditCost(c) => audit_cost(c),
        Finding::WideLimits(w) => wide_limits(w),
        Finding::Split(x) => split(x),
        Finding::Range(r) => range(r),
        Finding::Nothing { trusted, cells } => {
            format!("{trusted} of {cells} cells trusted: no finding to draw.")
        }
    }
}

/// The cells whose audits took more than their share of the cell's time, the costliest
/// with what took it, and what a user can do about it.
fn audit_cost(c: &AuditCost) -> String {
    let goal = format!("{:.0}%", crate::protocol::AUDIT_SHARE_CAP * 100.0);
    let said = audit_cost_part(c, &goal);
    match c.samples {
        Some((taken, needed)) => format!(
            "{said} The first round's floor costs the same at any count of samples: at this cell's pace, at most {} samples (it took {taken}) would bring it within {goal}.",
            words::rounded_up(needed)
        ),
        None => said,
    }
}

/// The audit-cost sentence's head and what took most of the time.
fn audit_cost_part(c: &AuditCost, goal: &str) -> String {
    let head = format!(
        "The audits took more than {goal} of the time of {} of {} audited cells, the most {} of {}: {} of {}",
        c.over,
        c.of,
        words::share(c.cost_s / c.wall_s),
        place(&c.cell, true),
        time(c.cost_s * 1e9),
        time(c.wall_s * 1e9),
    );
    let s = |seconds: f64| time(seconds * 1e9);
    match c.most {
        CostPart::Checks(seconds, by) => {
            let by = match by {
                CheckedBy::PythonByFiles => "its Python reference on the host (`gpu = true` runs it on the GPU's buffers)",
                CheckedBy::PythonOnGpu => "its Python reference (a `check_kernel` costs less; more samples spread it)",
                CheckedBy::Kernel => "its reference kernel (the first round's floor of audited regions is always checked; more samples spread it)",
                CheckedBy::Builtin => "the reference (the first round's floor of audited regions is always checked; more samples spread it)",
            };
            format!("{head}, {} of it checking audited regions against {by}.", s(seconds))
        }
        CostPart::Regions(seconds) => format!(
            "{head}, {} of it the first round's regions, whose floor is never left out (more samples spread them).",
            s(seconds)
        ),
        CostPart::Staging(seconds) => format!(
            "{head}, {} of it staging the audit's draws.",
            s(seconds)
        ),
        CostPart::Weaker => {
            format!("{head}: the weaker audit's one launch after the samples, and its check.")
        }
        CostPart::Unknown => format!("{head}."),
    }
}

/// The cells whose detection limit is wide, the widest, and what narrows it: a batch on an
/// idle queue waits for the host's launch of its first launch, which its tests must allow.
fn wide_limits(w: &WideLimits) -> String {
    let head = format!(
        "In {} of {} audited cells a kernel could skip over a quarter of its work where timed and pass, up to {} at {}",
        w.over,
        w.of,
        words::share(w.limit),
        place(&w.widest, true),
    );
    let said = match w.idle_batches {
        0 => format!("{head}: more samples, or CUPTI, narrow the bound."),
        n => format!(
            "{head}. {n} {} on an idle queue: `queue = \"saturate\"` narrows theirs; elsewhere, more samples or CUPTI.",
            match n {
                1 => "is a batch",
                _ => "are batches",
            },
        ),
    };
    let said = match w.spread {
        0 => said,
        // A kernel can spread its own samples to widen the bound it is judged by; by events
        // or CUPTI such a spread gets more regions (`protocol::spreads_wide`).
        1 => format!("{said} 1 widened it by its own spread."),
        n => format!("{said} {n} widened it by their own spread."),
    };
    match w.band_only {
        0 => said,
        n => format!(
            "{said} {n} had too few samples for a decoy ({} afford one).",
            w.samples_for_a_decoy
        ),
    }
}

/// The cells whose timed launches split in two: what their median and spread then read, and
/// why the audit's limit holds both behaviors.
fn split(x: &Split) -> String {
    let limit = x.limit.map_or(String::new(), |l| {
        format!("; the audit's limit there is {}", words::share(l))
    });
    format!(
        "In {} of {} trusted cells the timed launches split into two behaviors: {} spans an interquartile range of {} about its median of {}, its tightest half {}{limit}. Its median reads one of them.",
        x.cells,
        x.of,
        place(&x.widest, true),
        time(x.iqr_ns),
        time(x.median_ns),
        time(x.half_ns),
    )
}

/// The counters' word on the declared bytes: how many they contradict, with the first
/// one's numbers, else how the declarations held.
fn bytes(checked: usize, agree: usize, cached: usize, marked: &[(String, BytesCheck)]) -> String {
    let Some((id, c)) = marked.first() else {
        return format!(
            "Hardware counters confirm the declared `bytes` of all {}: {agree} agree with the bytes DRAM moved (within 10%) and the caches served {cached}.",
            count(checked, "checked cell")
        );
    };
    let how = match c.verdict {
        BytesVerdict::MovedMore => "DRAM moved more than declared",
        _ => "no cache level was asked for them",
    };
    format!(
        "Hardware counters contradict the declared `bytes` of {} of {} (⚠ in the counters table); at `{id}` {how}: {} MB declared, L1 or L2 at most {} MB ({:.2}x), DRAM {} MB ({:.2}x).",
        marked.len(),
        count(checked, "checked cell"),
        format::number(c.declared / 1e6),
        format::number(c.l1.max(c.l2) / 1e6),
        c.caches_ratio(),
        format::number(c.dram / 1e6),
        c.dram_ratio(),
    )
}

/// A kernel's fastest and slowest trusted cell.
fn range(r: &Range) -> String {
    if let (1, Some((lo, hi))) = (r.cells, &r.variants) {
        return format!(
            "{} reads {} under `{}` to {} under `{}`.",
            spot(&lo.at),
            time(lo.ns),
            lo.at.variant,
            time(hi.ns),
            hi.at.variant
        );
    }
    let under = if r.cells == 1 {
        format!(
            "`{}` reads {} {}",
            r.fastest.at.kernel,
            time(r.fastest.ns),
            place(&r.fastest.at, false)
        )
    } else {
        format!(
            "`{}` reads {} at {} to {} at {} under `{}` over {}",
            r.fastest.at.kernel,
            time(r.fastest.ns),
            r.fastest.at.point,
            time(r.slowest.ns),
            r.slowest.at.point,
            r.fastest.at.variant,
            count(r.cells, "cell")
        )
    };
    let variants = r.variants.as_ref().map_or(String::new(), |(lo, hi)| {
        let at = match lo.at.point.as_str() {
            "" => String::new(),
            p => format!(" at {p}"),
        };
        format!(
            "; its variants read{at} {} (`{}`) to {} (`{}`)",
            time(lo.ns),
            lo.at.variant,
            time(hi.ns),
            hi.at.variant
        )
    });
    format!("{under}{variants}.")
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::analysis::findings::{NamedCell, Reading};

    /// A reading of `ns` at `kernel/point/variant`, set against `against`.
    pub fn reading(id: &str, ns: f64, against: Option<f64>) -> Reading {
        let parts: Vec<&str> = id.split('/').collect();
        Reading {
            at: NamedCell {
                kernel: parts[0].into(),
                point: parts[1].into(),
                variant: parts[2].into(),
            },
            ns,
            against_ns: against,
        }
    }

    #[test]
    fn energy_reads_per_launch_with_its_power_and_the_counters_share() {
        use crate::analysis::findings::EnergyRatio;
        use crate::protocol::Energy;
        let e = EnergyRatio {
            kernel: "layernorm".into(),
            baseline: "layernorm-ref".into(),
            cells: 2,
            lowest: 4.97,
            highest: 6.39,
            at: reading("layernorm/rows=8192/events", 1.0, None).at,
            mine: Energy {
                joules: 1.226,
                seconds: 2.212,
                launches: 10,
            },
            theirs: Energy {
                joules: 7.840,
                seconds: 2.0,
                launches: 10,
            },
        };
        let text = sentences(&[Finding::Energy(e)]).join("");
        assert_eq!(
            text,
            "`layernorm` takes 6.39x less energy a launch than `layernorm-ref` over 2 cells (4.97x to 6.39x its baseline's); at rows=8192 (events): 122.6 mJ against 784.0 mJ, at 0.5542 W against 3.920 W (the board's, by NVML's counter, ±5%)."
        );
    }

    #[test]
    fn wide_limits_name_the_widest_cell_what_narrows_an_idle_batchs_and_the_bands() {
        let wide = |idle_batches: usize| {
            sentences(&[Finding::WideLimits(WideLimits {
                over: 3,
                of: 40,
                widest: reading("matmul/n=512/batch", 1.0, None).at,
                limit: 0.358,
                idle_batches,
                band_only: 0,
                samples_for_a_decoy: 60,
                spread: 0,
            })])
            .join("")
        };
        assert_eq!(
            wide(2),
            "In 3 of 40 audited cells a kernel could skip over a quarter of its work where timed and pass, up to 36% at `matmul` at n=512 (batch). 2 are batches on an idle queue: `queue = \"saturate\"` narrows theirs; elsewhere, more samples or CUPTI."
        );
        assert!(wide(0).ends_with("(batch): more samples, or CUPTI, narrow the bound."));
        let band = sentences(&[Finding::WideLimits(WideLimits {
            over: 4,
            of: 20,
            widest: reading("matmul/n=4096/median-hot", 1.0, None).at,
            limit: 0.5,
            idle_batches: 0,
            band_only: 4,
            samples_for_a_decoy: 60,
            spread: 1,
        })])
        .join("");
        assert!(
            band.ends_with("(median-hot): more samples, or CUPTI, narrow the bound. 1 widened it by its own spread. 4 had too few samples for a decoy (60 afford one)."),
            "{band}"
        );
    }

    #[test]
    fn a_split_names_the_widest_cell_its_tightest_half_and_its_limit() {
        let split = |limit| {
            sentences(&[Finding::Split(Split {
                cells: 1,
                of: 8,
                widest: reading("tells-stage/scale=1/interleaved", 1.0, None).at,
                median_ns: 110_463.5,
                iqr_ns: 21_568.25,
                half_ns: 412.0,
                limit,
            })])
            .join("")
        };
        assert_eq!(
            split(Some(0.499)),
            "In 1 of 8 trusted cells the timed launches split into two behaviors: `tells-stage` at scale=1 (interleaved) spans an interquartile range of 21.57 µs about its median of 110.5 µs, its tightest half 412.0 ns; the audit's limit there is 50%. Its median reads one of them."
        );
        assert!(!split(None).contains("limit"));
    }

    #[test]
    fn audits_over_their_share_name_the_costliest_cell_and_what_took_it() {
        let costed = |most: CostPart, samples| {
            sentences(&[Finding::AuditCost(AuditCost {
                over: 2,
                of: 6,
                cell: reading("saxpy/n=16777216/cold", 1.0, None).at,
                cost_s: 0.794,
                wall_s: 1.09,
                most,
                samples,
            })])
            .join("")
        };
        let cost = |most: CostPart| costed(most, None);
        let python = cost(CostPart::Checks(0.792, CheckedBy::PythonByFiles));
        assert_eq!(
            python,
            "The audits took more than 5% of the time of 2 of 6 audited cells, the most 73% of `saxpy` at n=16777216 (cold): 794.0 ms of 1.090 s, 792.0 ms of it checking audited regions against its Python reference on the host (`gpu = true` runs it on the GPU's buffers)."
        );
        let on_gpu = cost(CostPart::Checks(0.2, CheckedBy::PythonOnGpu));
        assert!(!on_gpu.contains("gpu = true"), "{on_gpu}");
        let kernel = cost(CostPart::Checks(0.6, CheckedBy::Kernel));
        assert!(
            kernel.contains("against its reference kernel (the first round's floor of audited regions is always checked")
                && !kernel.contains("`check_kernel`"),
            "{kernel}"
        );
        let regions = cost(CostPart::Regions(0.5));
        assert!(
            regions.ends_with("1.090 s, 500.0 ms of it the first round's regions, whose floor is never left out (more samples spread them)."),
            "{regions}"
        );
        // Where more samples would spread the floor, how many at most.
        let spread = costed(CostPart::Regions(0.5), Some((200, 1_098)));
        assert!(
            spread.ends_with("(more samples spread them). The first round's floor costs the same at any count of samples: at this cell's pace, at most 1,100 samples (it took 200) would bring it within 5%."),
            "{spread}"
        );
        let staging = cost(CostPart::Staging(0.4));
        assert!(
            staging.ends_with("400.0 ms of it staging the audit's draws."),
            "{staging}"
        );
        let weaker = cost(CostPart::Weaker);
        assert!(
            weaker.ends_with(
                "1.090 s: the weaker audit's one launch after the samples, and its check."
            ),
            "{weaker}"
        );
        assert!(cost(CostPart::Unknown).ends_with("794.0 ms of 1.090 s."));
    }

    #[test]
    fn cells_not_trusted_caught_and_flagged_in_words() {
        let untrusted = Finding::Untrusted {
            kernel: "off-by-one".into(),
            word: "failed",
            cells: vec!["n=1/hot".into(), "n=2/hot".into()],
            of: 2,
            reason: "C: max abs error 1.5e1".into(),
        };
        let caught = Finding::Caught {
            kernels: 7,
            cells: 56,
            caught: vec![("failed", 48), ("suspect", 8)],
        };
        let flagged = Finding::Flagged {
            cells: vec!["k/n=1/hot".into()],
            of: 10,
            example: (
                "k/n=1/hot".into(),
                vec!["SM clock moved 1350-1980 MHz (31.8%)".into()],
            ),
        };
        assert_eq!(
            sentences(&[untrusted, caught, flagged]),
            [
                "`off-by-one` failed at all 2 cells (n=1/hot, n=2/hot): C: max abs error 1.5e1.",
                "All 56 cells of the 7 kernels written to be caught (`expect = \"caught\"`) were caught: 48 failed, 8 suspect.",
                "1 of 10 trusted cells are flagged (k/n=1/hot); `k/n=1/hot`: SM clock moved 1350-1980 MHz (31.8%)."
            ]
        );
    }

    #[test]
    fn a_range_names_its_ends_and_the_variants_at_the_last_point() {
        let r = Range {
            cells: 3,
            fastest: reading("k/n=2/hot", 3_000.0, None),
            slowest: reading("k/n=3/hot", 9_000.0, None),
            variants: Some((
                reading("k/n=3/hot", 9_000.0, None),
                reading("k/n=3/cold", 12_000.0, None),
            )),
        };
        assert_eq!(
            range(&r),
            "`k` reads 3.000 µs at n=2 to 9.000 µs at n=3 under `hot` over 3 cells; its variants read at n=3 9.000 µs (`hot`) to 12.00 µs (`cold`)."
        );
    }
}
