//! The audits table of `cells.md`: each cell's audited regions and decoys among its timed
//! ones, the test's bound and detection limit, and what the audits cost.

use super::format;
use crate::analysis::audits::{
    self, Against, CellAudits, BAND_RATIO, BAND_SLACK_NS, FALSE_ALARM, MARGIN_NS, MARGIN_SHARE,
};
use crate::analysis::Analysis;
use crate::experiment::Unit;
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
    regions: String,
    audited: String,
    baseline: String,
    bound: String,
    detection_limit: String,
    cost_ms: String,
}

/// The table, where the run's cells were audited this way (None for a run from before).
pub fn build(a: &Analysis) -> Option<AuditsView> {
    let cells = &a.audits;
    if cells.is_empty() {
        return None;
    }
    let cost = a.audit_cost_share.map_or("–".into(), share);
    let spent: f64 = cells.iter().map(|c| c.cost_s).sum();
    let wall: f64 = cells.iter().map(|c| c.wall_s).sum();
    let intro = format!(
        "Where it can, the audit sits among a run's timed samples: audited regions and decoys, a few of the samples together (at least one audited; counted below), at places drawn from a seed recorded in cells.jsonl, each the cell's own region after the same resets and flush, timed by the same timer, after a copy into its inputs. An audited region gets data the buffers did not hold (the timed inputs and the audit's new draw take turns), and is checked and its inputs read back; a decoy gets the data they held: the same copy and pause, nothing new. Against its decoys, a cell is suspect when its audited median exceeds theirs by more than {:.2} standard errors of that difference (the larger of its timed samples' spread and the regions' own about their medians; false alarms {FALSE_ALARM} for that spread) plus {:.0}% or {:.1} µs: the bound. Without decoys (too few samples to spare them, or the weaker audit of one launch after the timed ones) the bound is the band: {BAND_RATIO}x the reading + {:.0} µs. The detection limit is the smallest share of its work a kernel could skip where it is timed, doing it all where it is audited, and still be caught: the bound over the baseline plus the bound, times the launches of a region (in a batch or graph of N launches on one data set, such a kernel does all its work on the region's first launch only). The audits took {spent:.2} s of these cells' {wall:.2} s ({cost}).",
        audits::Z_FALSE_ALARM,
        MARGIN_SHARE * 100.0,
        MARGIN_NS / 1e3,
        BAND_SLACK_NS / 1e3,
    );
    let rows = (cells.iter())
        .map(|c| row(&a.run.plan.cells[c.cell].id, c))
        .collect();
    Some(AuditsView { intro, rows })
}

fn row(id: &str, c: &CellAudits) -> AuditRow {
    let j = c.judgement.as_ref();
    let verdict = match j {
        Some(j) if j.suspect.is_some() => "⚠ suspect",
        Some(j) if j.against == Against::Decoys => "against its decoys",
        Some(_) => "against the reading (band)",
        None => "checked, not timed",
    };
    let audit = match (&c.weaker, &c.unjudged) {
        (Some(why), _) => format!("one launch after the timed ones ({why}): {verdict}"),
        (None, Some(why)) => format!("among the timed: {verdict} ({why})"),
        (None, None) => format!("among the timed: {verdict}"),
    };
    let time = |ns: f64| format::time(ns, Unit::Auto);
    AuditRow {
        cell: id.to_string(),
        audit,
        regions: format!("{} + {}", c.regions, c.decoys),
        audited: j.map_or("–".into(), |j| time(j.audited_ns)),
        baseline: j.map_or("–".into(), |j| time(j.baseline_ns)),
        bound: j.map_or("–".into(), |j| time(j.bound_ns)),
        detection_limit: j.map_or("–".into(), |j| share(j.detection_limit)),
        cost_ms: format!("{:.1}", c.cost_s * 1e3),
    }
}

/// A share as a percentage with one decimal.
fn share(s: f64) -> String {
    format!("{:.1}%", s * 100.0)
}
