//! Each cell's audits over its runs: how many audited regions sat among its timed ones,
//! what they read, the rank test's strongest finding and weakest limit, and what they cost.

use super::{median, Analysis};
use crate::protocol::CellRecord;

/// A cell's audits, over its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CellAudits {
    pub cell: usize,
    /// Audited regions among the timed ones, over the runs.
    pub regions: usize,
    /// Their median reading, ns per launch.
    pub audited_ns: Option<f64>,
    /// The smallest p-value of the runs' rank tests.
    pub p_value: Option<f64>,
    /// The largest of the runs' detection limits (share of the work), or None where a run
    /// had too few samples for the test.
    pub detection_limit: Option<f64>,
    /// Runs whose samples were too few for the rank test.
    pub untested_runs: usize,
    /// Why the cell got only the weaker audit, where it did.
    pub weaker: Option<String>,
    /// Why the times were not set against each other, where they were not.
    pub unjudged: Option<String>,
    /// Host time the audits took, and the cell's runs' wall time, in s.
    pub cost_s: f64,
    pub wall_s: f64,
}

/// The audits of every cell that ran one of the current kind (audited regions among the
/// timed ones, or the weaker audit with its reason); empty for a run from before them.
pub fn of(a: &Analysis) -> Vec<CellAudits> {
    (a.run.plan.cells.iter())
        .filter_map(|c| cell(c.index, a.records.get(&c.index)?))
        .collect()
}

fn cell(index: usize, records: &[&CellRecord]) -> Option<CellAudits> {
    let audits: Vec<_> = records.iter().filter_map(|r| r.audit.as_ref()).collect();
    if !audits
        .iter()
        .any(|a| a.among.is_some() || a.weaker.is_some())
    {
        return None;
    }
    let among: Vec<_> = audits.iter().filter_map(|a| a.among.as_ref()).collect();
    let readings: Vec<f64> = among.iter().flat_map(|m| m.readings_ns.clone()).collect();
    let tested = || among.iter().filter(|m| m.p_value.is_some());
    let limits: Vec<Option<f64>> = tested().map(|m| m.detection_limit).collect();
    let untested_runs = limits.iter().filter(|l| l.is_none()).count();
    Some(CellAudits {
        cell: index,
        regions: readings.len(),
        audited_ns: median(readings.into_iter().filter(|t| t.is_finite()).collect()),
        p_value: tested().filter_map(|m| m.p_value).min_by(f64::total_cmp),
        detection_limit: match untested_runs {
            0 => limits.into_iter().flatten().max_by(f64::total_cmp),
            _ => None,
        },
        untested_runs,
        weaker: audits.iter().find_map(|a| a.weaker.clone()),
        unjudged: audits.iter().find_map(|a| a.unjudged.clone()),
        cost_s: audits.iter().map(|a| a.cost_s).sum(),
        wall_s: records.iter().map(|r| r.wall_s).sum(),
    })
}

/// The audits' share of the audited cells' wall time: their summed cost over the summed
/// wall time of the runs.
pub fn cost_share(audits: &[CellAudits]) -> Option<f64> {
    let wall: f64 = audits.iter().map(|a| a.wall_s).sum();
    (wall > 0.0).then(|| audits.iter().map(|a| a.cost_s).sum::<f64>() / wall)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AuditRecord, AuditsAmong, Status};

    fn run(readings: Vec<f64>, p: f64, limit: Option<f64>) -> CellRecord {
        let mut r = CellRecord::failed(0, "c", 0, String::new());
        r.status = Status::Ok;
        r.wall_s = 1.0;
        r.audit = Some(AuditRecord {
            cost_s: 0.02,
            among: Some(AuditsAmong {
                readings_ns: readings,
                p_value: Some(p),
                detection_limit: limit,
                ..Default::default()
            }),
            ..Default::default()
        });
        r
    }

    #[test]
    fn a_cell_takes_its_strongest_finding_and_its_weakest_limit() {
        let (a, b) = (
            run(vec![1.0, 2.0], 0.5, Some(0.02)),
            run(vec![3.0], 0.01, Some(0.05)),
        );
        let c = cell(3, &[&a, &b]).unwrap();
        assert_eq!(c.regions, 3);
        assert_eq!(c.audited_ns, Some(2.0));
        assert_eq!(c.p_value, Some(0.01));
        assert_eq!(c.detection_limit, Some(0.05));
        assert!((cost_share(&[c]).unwrap() - 0.02).abs() < 1e-12);
        // A run too short for the test leaves the cell without a limit.
        let short = run(vec![1.0], 0.3, None);
        let c = cell(3, &[&a, &short]).unwrap();
        assert_eq!((c.detection_limit, c.untested_runs), (None, 1));
        // A run from before these audits has none.
        let mut old = run(vec![], 1.0, None);
        old.audit.as_mut().unwrap().among = None;
        assert_eq!(cell(3, &[&old]), None);
    }
}
