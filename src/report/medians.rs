//! The per-kernel median tables: each variant's headline median per point, the differences
//! asked for, the published numbers and the peers' readings, all in one unit, with the
//! tuned parameter's best value marked where the experiment names one.

use super::best;
use super::format;
use super::layout::{self, Part};
use crate::analysis::trust::Verdict;
use crate::analysis::Analysis;
use crate::experiment::knobs::cache::bytes_text;
use crate::experiment::{point_label, Experiment, Point, Unit};
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
    let exp = &a.run.experiment;
    let unit = unit_of(a, k);
    let marks = best::Marks::of(exp, k, |k, p, v| a.sound_median_at(k, p, v));
    let sized = exp.kernels.len() > 1;
    let keys: Vec<String> = std::iter::once(exp.parameter_names(k))
        .chain(sized.then(|| "buffers".to_string()))
        .collect();
    let rows = (exp.kernels[k].points.iter().enumerate())
        .map(|(i, p)| row(a, (k, i, p), unit, &marks).cells(sized))
        .collect();
    Table {
        kernel: kernel.to_string(),
        unit: unit.symbol().into(),
        unchecked: exp.kernels[k].unchecked,
        placement: placement(&exp.kernels[k]),
        parts: layout::split(header(exp, &keys), rows, keys.len()),
        differences: !exp.report.differences.is_empty(),
        peers: !exp.peers.is_empty(),
        best: best::note(exp),
    }
}

/// The one unit a kernel's table shows every time in: chosen over every variant's median
/// at every point and the peers' readings, so that a column never switches units.
fn unit_of(a: &Analysis, k: usize) -> Unit {
    let exp = &a.run.experiment;
    let mut all: Vec<f64> = (exp.kernels[k].points.iter())
        .flat_map(|p| {
            (exp.variants.iter())
                .filter_map(|v| a.median_at(k, p, &v.name))
                .collect::<Vec<_>>()
        })
        .collect();
    all.extend(a.peer_medians.values().copied());
    format::unit_for(all, exp.report.unit)
}

/// The planned cell of kernel `k` at point `p` under `variant`, where there is one.
fn cell_at<'a>(a: &Analysis<'a>, k: usize, p: &Point, variant: &str) -> Option<&'a Cell> {
    (a.run.plan.cells.iter()).find(|c| c.kernel == Some(k) && c.point == *p && c.variant == variant)
}

/// A cell's reading as the table shows it: its headline median, with the verdict's word
/// where the audit or the device's peaks call it into question; where there is none, why
/// (failed, skipped, not run), so an empty place is never read as a missing number. A cell
/// that failed shows no time, though rounds of it before the failure took samples (an
/// interleaved cell's): a failed cell is reported, never timed.
fn shown(a: &Analysis, c: &Cell, unit: Unit) -> String {
    let has = |status: Status| {
        (a.records.get(&c.index)).is_some_and(|rs| rs.iter().any(|r| r.status == status))
    };
    match (a.headline(c), a.verdict(c)) {
        (_, Verdict::Failed(_)) => "failed".into(),
        // A reading the audit or the device's peaks call into question says so.
        (Some(st), v @ (Verdict::Suspect(_) | Verdict::Impossible(_))) => {
            format!("{} {}", format::time(st.median, unit), v.word())
        }
        (Some(st), _) => format::time(st.median, unit),
        (None, _) if has(Status::Skipped) => "skipped".into(),
        (None, _) => "not run".into(),
    }
}

/// One point's row (the `i`th point `p` of kernel `k`): its variants' readings with the
/// best marked, the differences asked for, the published numbers and the peers' readings.
fn row(
    a: &Analysis,
    (k, i, p): (usize, usize, &Point),
    unit: Unit,
    marks: &best::Marks,
) -> TableRow {
    let exp = &a.run.experiment;
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
            .map(|(vi, v)| {
                let reading = cell_at(a, k, p, &v.name).map_or("–".into(), |c| shown(a, c, unit));
                marks.show(vi, i, reading)
            })
            .collect(),
        diffs: exp
            .report
            .differences
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
                let theirs = a
                    .peer_medians
                    .get(&(peer.name.clone(), base.clone()))
                    .copied();
                let first = cell_at(a, k, p, &peer.variant)
                    .is_some_and(|c| c.headline() == Headline::First);
                super::peer_agreement::shown(theirs, median(&peer.variant), first, unit)
            })
            .collect(),
        point: label,
    }
}

impl TableRow {
    /// The row's places in the header's order: the point (and the kernel's buffers, where
    /// kernels of different sizes share the sweep), then the variants, differences,
    /// published numbers and peers.
    fn cells(self, sized: bool) -> Vec<String> {
        (std::iter::once(self.point))
            .chain(sized.then_some(self.size))
            .chain(self.values)
            .chain(self.diffs)
            .chain(self.published)
            .chain(self.peers)
            .collect()
    }
}

/// The header over [`TableRow::cells`]: `keys` (the point's, and `buffers`), then each
/// variant, difference, published source and peer by name.
fn header(exp: &Experiment, keys: &[String]) -> Vec<String> {
    (keys.iter().cloned())
        .chain(exp.variants.iter().map(|v| v.name.clone()))
        .chain((exp.report.differences.iter()).map(|(v, b)| format!("Δ {v} vs {b}")))
        .chain((exp.report.published.iter()).map(|p| format!("{}: {}", p.source, p.variant)))
        .chain((exp.peers.iter()).map(|p| format!("{} (beside {})", p.label, p.variant)))
        .collect()
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
