//! The audits table of `cells.md`: each cell's audited regions among its timed ones, the
//! rank test's finding and detection limit, and what the audits cost.

use super::format;
use crate::analysis::audits::{self, CellAudits};
use crate::analysis::Analysis;
use crate::experiment::Unit;
use crate::protocol::{AUDIT_FALSE_ALARM, AUDIT_MARGIN_NS, AUDIT_MARGIN_SHARE};
use serde::Serialize;

#[derive(Serialize)]
pub struct AuditsView {
    intro: String,
    rows: Vec<AuditRow>,
}

#[derive(Serialize)]
struct AuditRow {
    cell: String,
    audit: String,
    regions: usize,
    audited: String,
    p_value: String,
    detection_limit: String,
    cost_ms: String,
}

/// The table, where the run's cells were audited this way (None for a run from before).
pub fn build(a: &Analysis) -> Option<AuditsView> {
    let cells = audits::of(a);
    if cells.is_empty() {
        return None;
    }
    let cost = audits::cost_share(&cells).map_or("–".into(), share);
    let spent: f64 = cells.iter().map(|c| c.cost_s).sum();
    let wall: f64 = cells.iter().map(|c| c.wall_s).sum();
    let intro = format!(
        "Where it can, the audit sits among a run's timed samples: up to four regions, at places drawn from a seed recorded in cells.jsonl, each the cell's own region after the same resets and flush and timed by the same timer, on new inputs copied in just before it; each is checked, and its inputs read back. A cell is suspect when its audited readings rank above its timed ones with p < {AUDIT_FALSE_ALARM} (split between its runs) and their median exceeds the timed median by more than {:.0}% or {:.1} µs. The detection limit is the smallest share of its work a kernel could skip in its timed launches alone (doing it all when audited) and still be caught: the slowest timed readings the test must clear, or the margin. Elsewhere one launch after the timed ones is the weaker audit, called suspect only beyond 2x the reading + 5 µs. The audits took {spent:.2} s of these cells' {wall:.2} s ({cost}).",
        AUDIT_MARGIN_SHARE * 100.0,
        AUDIT_MARGIN_NS / 1e3,
    );
    let rows = (cells.iter())
        .map(|c| row(&a.run.plan.cells[c.cell].id, c))
        .collect();
    Some(AuditsView { intro, rows })
}

fn row(id: &str, c: &CellAudits) -> AuditRow {
    let audit = match (&c.weaker, &c.unjudged) {
        (Some(why), _) => format!("one launch after the timed ones ({why})"),
        (None, Some(why)) => format!("among the timed, checked, not timed ({why})"),
        (None, None) => "among the timed".to_string(),
    };
    AuditRow {
        cell: id.to_string(),
        audit,
        regions: c.regions,
        audited: c
            .audited_ns
            .map_or("–".into(), |ns| format::time(ns, Unit::Auto)),
        p_value: c.p_value.map_or("–".into(), |p| format!("{p:.1e}")),
        detection_limit: match (c.detection_limit, c.untested_runs) {
            (Some(l), _) => share(l),
            (None, n) if n > 0 => "– (too few samples)".into(),
            (None, _) => "–".into(),
        },
        cost_ms: format!("{:.1}", c.cost_s * 1e3),
    }
}

/// A share as a percentage with one decimal.
fn share(s: f64) -> String {
    format!("{:.1}%", s * 100.0)
}
