//! The per-kernel median tables: each variant's headline median per point, the differences
//! asked for, the published numbers and the peers' readings, all in one unit, with the
//! tuned parameter's best value marked where the experiment names one.

use super::best;
use super::format;
use super::layout::{self, Part};
use crate::analysis::trust::Verdict;
use crate::analysis::Analysis;
use crate::experiment::knobs::cache::bytes_text;
use crate::experiment::{point_label, Point};
use crate::plan::{Cell, Headline};
use crate::protocol::Status;
use serde::Serialize;

#[derive(Serialize)]
pub struct Table {
    kernel: String,
    /// The one unit all its times are shown in.
    unit: String,
    /// `unchecked = true`: timed unchecked, by the user's choice.
    unchecked: bool,
    /// Buffers outside device memory, e.g. "managed memory: `a`, `b`".
    placement: Option<String>,
    /// The point (and, where kernels of different sizes share one sweep, the kernel's
    /// buffer bytes), then each variant, difference, published number and peer.
    parts: Vec<Part>,
    /// Whether it shows differences asked for, and peers' readings (each is explained).
    differences: bool,
    peers: bool,
    /// The line saying what `best` marks, where the experiment tunes a parameter.
    best: Option<String>,
}

#[derive(Serialize)]
struct TableRow {
    point: String,
    /// The kernel's buffers at this point, e.g. `2.0 MiB`.
    size: String,
    values: Vec<String>,
    diffs: Vec<String>,
    published: Vec<String>,
    /// Per peer: its median, and how it compares with its variant's.
    peers: Vec<String>,
}

/// A kernel's table: each variant's headline median per point, the differences asked
/// for, the published numbers and the peers' readings, all in one unit.
pub fn table(a: &Analysis, k: usize, kernel: &str) -> Table {
    let s = a.run;
    let exp = &s.experiment;
    let cell = |p: &Point, variant: &str| {
        s.plan
            .cells
            .iter()
            .find(|c| c.kernel == Some(k) && c.point == *p && c.variant == variant)
    };
    let peers = &a.peer_medians;
    let points = &exp.kernels[k].points;
    let mut all: Vec<f64> = points
        .iter()
        .flat_map(|p| {
            exp.variants
                .iter()
                .filter_map(|v| a.median_at(k, p, &v.name))
                .collect::<Vec<_>>()
        })
        .collect();
    all.extend(peers.values().copied());
    let unit = format::unit_for(all, exp.report.unit);
    let has = |c: &Cell, status: Status| {
        a.records
            .get(&c.index)
            .is_some_and(|rs| rs.iter().any(|r| r.status == status))
    };
    let shown = |c: &Cell| match (a.headline(c), a.verdict(c)) {
        // A reading the audit or the device's peaks call into question says so.
        (Some(st), v @ (Verdict::Suspect(_) | Verdict::Impossible(_))) => {
            format!("{} {}", format::time(st.median, unit), v.word())
        }
        (Some(st), _) => format::time(st.median, unit),
        (None, _) if has(c, Status::Failed) => "failed".into(),
        (None, _) if has(c, Status::Skipped) => "skipped".into(),
        (None, _) => "not run".into(),
    };
    let diffs = &exp.report.differences;
    let marks = best::Marks::of(exp, k, |k, p, v| a.sound_median_at(k, p, v));
    let rows: Vec<TableRow> = points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let median = |v: &str| a.median_at(k, p, v);
            let label = point_label(p);
            // Published numbers and peers are keyed by the experiment's points, which a
            // kernel's own axes extend.
            let base = exp.kernels[k]
                .base
                .get(i)
                .and_then(|&b| exp.points.get(b))
                .map_or_else(|| label.clone(), point_label);
            TableRow {
                size: exp.kernels[k]
                    .launches
                    .get(i)
                    .map_or(String::new(), |l| bytes_text(l.buffer_bytes())),
                values: exp
                    .variants
                    .iter()
                    .enumerate()
                    .map(|(vi, v)| marks.show(vi, i, cell(p, &v.name).map_or("–".into(), shown)))
                    .collect(),
                diffs: diffs
                    .iter()
                    .map(|(v, b)| match (median(v), median(b)) {
                        (Some(v), Some(b)) => format::percent((v - b) / b * 100.0),
                        _ => "–".into(),
                    })
                    .collect(),
                published: exp
                    .report
                    .published
                    .iter()
                    .map(|pb| {
                        pb.values
                            .iter()
                            .find(|(l, _)| *l == base)
                            .map_or("–".into(), |(_, v)| {
                                format::time(v * pb.unit.ns_per_unit(), unit)
                            })
                    })
                    .collect(),
                peers: exp
                    .peers
                    .iter()
                    .map(|peer| {
                        let theirs = peers.get(&(peer.name.clone(), base.clone())).copied();
                        let first =
                            cell(p, &peer.variant).is_some_and(|c| c.headline() == Headline::First);
                        super::peer_agreement::shown(theirs, median(&peer.variant), first, unit)
                    })
                    .collect(),
                point: label,
            }
        })
        .collect();
    let sized = exp.kernels.len() > 1;
    let keys: Vec<String> = std::iter::once(exp.parameter_names(k))
        .chain(sized.then(|| "buffers".to_string()))
        .collect();
    let header = (keys.iter().cloned())
        .chain(exp.variants.iter().map(|v| v.name.clone()))
        .chain(diffs.iter().map(|(v, b)| format!("Δ {v} vs {b}")))
        .chain((exp.report.published.iter()).map(|p| format!("{}: {}", p.source, p.variant)))
        .chain((exp.peers.iter()).map(|p| format!("{} (beside {})", p.label, p.variant)))
        .collect();
    let rows = rows
        .into_iter()
        .map(|r| {
            (std::iter::once(r.point))
                .chain(sized.then_some(r.size))
                .chain(r.values)
                .chain(r.diffs)
                .chain(r.published)
                .chain(r.peers)
                .collect()
        })
        .collect();
    Table {
        kernel: kernel.to_string(),
        unit: unit.symbol().into(),
        unchecked: exp.kernels[k].unchecked,
        placement: placement(&exp.kernels[k]),
        parts: layout::split(header, rows, keys.len()),
        differences: !diffs.is_empty(),
        peers: !exp.peers.is_empty(),
        best: best::note(exp),
    }
}
/// Which of a kernel's buffers live outside device memory, by where they live.
fn placement(kernel: &crate::experiment::Kernel) -> Option<String> {
    use crate::experiment::{ArgKind, Memory};
    let named = |want: Memory| {
        let names: Vec<String> = kernel
            .args
            .iter()
            .filter(|a| matches!(a.kind, ArgKind::Buffer { memory, .. } if memory == want))
            .map(|a| format!("`{}`", a.name))
            .collect();
        (!names.is_empty()).then(|| names.join(", "))
    };
    let parts: Vec<String> = [
        (Memory::Managed, "managed (unified) memory"),
        (Memory::Mapped, "mapped host memory"),
    ]
    .into_iter()
    .filter_map(|(m, what)| named(m).map(|n| format!("{what}: {n}")))
    .collect();
    (!parts.is_empty()).then(|| format!("Buffers in {}.", parts.join("; ")))
}
