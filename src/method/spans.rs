//! CUPTI's spans turned into a timer's readings: each region's busy time, its first launch,
//! the gap before it, and which regions are the audit's.

use crate::protocol::CuptiRecord;
use crate::statistics::median;
use cuda::{cupti, cupti::Span};

/// Each kernel's median span, in the order the kernels first ran.
pub(super) fn kernel_medians(spans: &[Span]) -> Vec<(String, f64)> {
    let mut names: Vec<&str> = Vec::new();
    for s in spans {
        if !names.contains(&s.name.as_str()) {
            names.push(&s.name);
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let of: Vec<f64> = spans
                .iter()
                .filter(|s| s.name == name)
                .map(|s| (s.end - s.start) as f64)
                .collect();
            Some((name.to_string(), median(of)?))
        })
        .collect()
}

/// The steady samples so far, and the audit's regions among them in their order.
pub type SoFar = (Vec<f64>, Vec<f64>);

/// The audit's regions among the timed ones, by place: those read (with their readings as
/// they ran), and the untimed ones before the regions after the samples, which none reads.
pub type Places<'a> = (&'a [(usize, f64)], &'a [usize]);

/// Per-region values split into the audit's regions' (at the places `audits` names) and the
/// timed ones', each in order; those at the `untimed` places left out.
pub(super) fn apart(per: &[f64], (audits, untimed): Places) -> (Vec<f64>, Vec<f64>) {
    let is_audit = |i: &usize| audits.iter().any(|(at, _)| at == i);
    let read = per.iter().enumerate().filter(|(i, _)| !untimed.contains(i));
    let (audited, timed): (Vec<_>, Vec<_>) = read.partition(|(i, _)| is_audit(i));
    let values = |v: Vec<(usize, &f64)>| v.into_iter().map(|(_, t)| *t).collect();
    (values(audited), values(timed))
}

/// CUPTI's spans turned into samples: per sample (`launches` spans), the mean span, its
/// first span, and the gap before its first span since the last span of the sample before
/// (NaN for the first).
pub(super) struct CuptiReading {
    pub per_sample: Vec<f64>,
    pub firsts: Vec<f64>,
    pub gaps: Vec<f64>,
    pub record: CuptiRecord,
}

/// Each region's busy time per launch from CUPTI's spans, region `i` holding `regions[i]`
/// launches (the audit's may hold fewer than a timed one): a launch of several kernels (or
/// copies) counts each one's own span, not the GPU idle between them while the host
/// enqueues the next (right after CUPTI starts recording that takes milliseconds: a 6 µs
/// two-pass sum read 3.8 ms from its first start to its last end).
pub fn busy_per_launch(spans: &cupti::Spans, regions: &[u64]) -> Vec<f64> {
    let span = |s: &Span| (s.end - s.start) as f64;
    let each: Vec<f64> = match &spans.kernels {
        Some(kernels) => {
            let per = (kernels.len() / spans.launches.len().max(1)).max(1);
            (kernels.chunks(per))
                .map(|c| c.iter().map(span).sum())
                .collect()
        }
        None => spans.launches.iter().map(span).collect(),
    };
    let mut rest = &each[..];
    let mut busy = Vec::with_capacity(regions.len());
    for &launches in regions {
        let (region, after) = rest.split_at((launches.max(1) as usize).min(rest.len()));
        if region.is_empty() {
            break;
        }
        busy.push(region.iter().sum::<f64>() / region.len() as f64);
        rest = after;
    }
    busy
}

pub(super) fn cupti_reading(spans: &[Span], launches: u64) -> CuptiReading {
    let per_sample = spans
        .chunks(launches as usize)
        .map(|c| c.iter().map(|s| (s.end - s.start) as f64).sum::<f64>() / c.len() as f64)
        .collect();
    // The first launch of each sample: how long it waited after it was handed to the GPU.
    let firsts = || spans.chunks(launches as usize).map(|c| &c[0]);
    let latency: Vec<f64> = firsts()
        .filter(|s| s.submitted > 0 && s.start >= s.submitted)
        .map(|s| (s.start - s.submitted) as f64)
        .collect();
    let queued: Vec<f64> = firsts()
        .filter(|s| s.queued > 0 && s.submitted >= s.queued)
        .map(|s| (s.submitted - s.queued) as f64)
        .collect();
    let gaps = std::iter::once(f64::NAN)
        .chain(
            spans
                .chunks(launches as usize)
                .collect::<Vec<_>>()
                .windows(2)
                .map(|w| {
                    let (before, after) = (&w[0][w[0].len() - 1], &w[1][0]);
                    after.start as f64 - before.end as f64
                }),
        )
        .collect();
    let firsts = (spans.chunks(launches as usize))
        .map(|c| (c[0].end - c[0].start) as f64)
        .collect();
    CuptiReading {
        per_sample,
        firsts,
        gaps,
        record: CuptiRecord {
            records: spans.len() as u64,
            submitted_to_start_median_ns: median(latency),
            queued_to_submitted_median_ns: median(queued),
            kernels: vec![],
        },
    }
}
