//! What the audits cost: the trusted cells whose audits took more than their share of the
//! cell's time, which the first round's floor of regions and checks may (it is never left
//! out).

use super::finding::{AuditCost, CheckedBy, CostPart, Finding, NamedCell};
use crate::analysis::audits::CellAudits;
use crate::experiment::Experiment;
use crate::plan::Cell;
use crate::protocol::AUDIT_SHARE_CAP;

/// Audits that took less than this, in s, are not what makes a run slow, whatever their
/// share of a short cell (a millisecond's region and check in a cell of ten).
const NOTICED_S: f64 = 0.1;

/// Of the `trusted` cells that were audited, those whose audits took more than
/// [`AUDIT_SHARE_CAP`] of their time and [`NOTICED_S`], with the costliest share; None
/// where none did.
pub fn audit_cost(exp: &Experiment, audits: &[CellAudits], trusted: &[&Cell]) -> Option<Finding> {
    let audited: Vec<(&Cell, &CellAudits)> = (trusted.iter())
        .filter_map(|c| Some((*c, audits.iter().find(|a| a.cell == c.index)?)))
        .collect();
    let share = |a: &CellAudits| match a.wall_s > 0.0 {
        true => a.cost_s / a.wall_s,
        false => 0.0,
    };
    let over: Vec<&(&Cell, &CellAudits)> = (audited.iter())
        .filter(|(_, a)| share(a) > AUDIT_SHARE_CAP && a.cost_s >= NOTICED_S)
        .collect();
    let (cell, worst) = over
        .iter()
        .max_by(|x, y| share(x.1).total_cmp(&share(y.1)))?;
    let def = cell.kernel.map(|k| &exp.kernels[k]);
    let reference = match def {
        Some(d) => match (&d.check_python, &d.check_kernel) {
            (Some(pc), _) if pc.gpu => CheckedBy::PythonOnGpu,
            (Some(_), _) => CheckedBy::PythonByFiles,
            (None, Some(_)) => CheckedBy::Kernel,
            (None, None) => CheckedBy::Builtin,
        },
        None => CheckedBy::Builtin,
    };
    Some(Finding::AuditCost(AuditCost {
        over: over.len(),
        of: audited.len(),
        cell: NamedCell::new(&cell.kernel_name, &cell.point, &cell.variant),
        cost_s: worst.cost_s,
        wall_s: worst.wall_s,
        most: most(worst, reference),
        samples: samples_for_share(worst),
    }))
}

/// The steady samples a cell took, and at most how many would keep its audits within
/// [`AUDIT_SHARE_CAP`] of its time, where that is more: the first round's floor costs the
/// same at any count, and each sample costs its loop's time less the regions and checks
/// among it. The cell's time besides its sample loop (its compile, warm-up, check) is left
/// out, so the count errs high.
fn samples_for_share(a: &CellAudits) -> Option<(u64, u64)> {
    let taken = a.samples;
    if taken == 0 {
        return None;
    }
    let among_s: f64 = a.split_s?.iter().sum();
    let pace_s = a.sample_wall_s? - among_s / taken as f64;
    if pace_s <= 0.0 {
        return None;
    }
    let needed = ((1.0 - AUDIT_SHARE_CAP) / AUDIT_SHARE_CAP * a.cost_s / pace_s).ceil() as u64;
    (needed > taken).then_some((taken, needed))
}

/// The part of a cell's audit time that took most of it.
fn most(a: &CellAudits, reference: CheckedBy) -> CostPart {
    if a.weaker.is_some() {
        return CostPart::Weaker;
    }
    if a.regions_s + a.checks_s <= 0.0 {
        return CostPart::Unknown;
    }
    let staging = (a.cost_s - a.regions_s - a.checks_s).max(0.0);
    if a.checks_s >= a.regions_s && a.checks_s >= staging {
        CostPart::Checks(a.checks_s, reference)
    } else if a.regions_s >= staging {
        CostPart::Regions(a.regions_s)
    } else {
        CostPart::Staging(staging)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::findings::tests::experiment;

    fn audits(cell: usize, cost_s: f64, wall_s: f64) -> CellAudits {
        CellAudits {
            cell,
            cost_s,
            wall_s,
            regions_s: cost_s * 0.05,
            checks_s: cost_s * 0.9,
            ..CellAudits::default()
        }
    }

    #[test]
    fn only_trusted_cells_over_the_share_count_and_the_costliest_is_named() {
        let exp = experiment("n = [1, 2, 3, 4]", &[("k", "")], &[("hot", "")], "");
        let plan = crate::plan::Plan::new(&exp).unwrap();
        let cells: Vec<&Cell> = plan.cells.iter().filter(|c| c.kernel == Some(0)).collect();
        let found = [
            audits(cells[0].index, 0.01, 1.0),
            audits(cells[1].index, 0.2, 1.0),
            audits(cells[2].index, 0.5, 1.0),
            // A tenth of its cell, but a millisecond: not noticed.
            audits(cells[3].index, 0.001, 0.01),
        ];
        let Some(Finding::AuditCost(c)) = audit_cost(&exp, &found, &cells) else {
            panic!("no finding");
        };
        assert_eq!((c.over, c.of, c.cell.point.as_str()), (2, 4, "n=3"));
        assert!(
            matches!(c.most, CostPart::Checks(s, CheckedBy::Builtin) if (s - 0.45).abs() < 1e-9)
        );
        // The costliest cell not trusted is not named; none over the share, no finding.
        let Some(Finding::AuditCost(c)) = audit_cost(&exp, &found, &cells[..2]) else {
            panic!("no finding");
        };
        assert_eq!((c.over, c.of, c.cell.point.as_str()), (1, 2, "n=2"));
        assert!(audit_cost(&exp, &found, &[cells[0], cells[3]]).is_none());
    }
}

#[cfg(test)]
mod spread {
    use super::*;

    #[test]
    fn more_samples_spread_the_floor_at_the_cells_pace() {
        // 200 samples whose loop took 150 µs each, 8 ms of it the regions and checks among
        // them: a sample of 110 µs besides, and 19 times the audit's 8.7 ms of them.
        let gemv = CellAudits {
            cost_s: 8.7e-3,
            wall_s: 39e-3,
            samples: 200,
            sample_wall_s: Some(150e-6),
            split_s: Some([4.6e-3, 1.1e-3, 2.3e-3]),
            ..CellAudits::default()
        };
        assert_eq!(samples_for_share(&gemv), Some((200, 1_503)));
        // Within the share already, or no pace or parts recorded: nothing to say.
        let long = CellAudits {
            samples: 2_000,
            ..gemv.clone()
        };
        assert_eq!(samples_for_share(&long), None);
        let older = CellAudits {
            sample_wall_s: None,
            ..gemv.clone()
        };
        assert_eq!(samples_for_share(&older), None);
        let unsplit = CellAudits {
            split_s: None,
            ..gemv.clone()
        };
        assert_eq!(samples_for_share(&unsplit), None);
        let none = CellAudits { samples: 0, ..gemv };
        assert_eq!(samples_for_share(&none), None);
    }
}

#[cfg(test)]
mod parts {
    use super::*;

    fn audits(cost_s: f64, regions_s: f64, checks_s: f64, weaker: bool) -> CellAudits {
        CellAudits {
            weaker: weaker.then(|| "its buffer sets rotate".into()),
            cost_s,
            wall_s: 1.0,
            regions_s,
            checks_s,
            ..CellAudits::default()
        }
    }

    #[test]
    fn the_part_named_is_the_one_that_took_most_and_none_where_unrecorded() {
        let kernel = CheckedBy::Kernel;
        assert_eq!(
            most(&audits(0.5, 0.1, 0.3, false), kernel),
            CostPart::Checks(0.3, kernel)
        );
        assert_eq!(
            most(&audits(0.5, 0.3, 0.1, false), kernel),
            CostPart::Regions(0.3)
        );
        let CostPart::Staging(s) = most(&audits(0.5, 0.1, 0.1, false), kernel) else {
            panic!("staging took most");
        };
        assert!((s - 0.3).abs() < 1e-9);
        assert_eq!(most(&audits(0.5, 0.0, 0.0, true), kernel), CostPart::Weaker);
        assert_eq!(
            most(&audits(0.5, 0.0, 0.0, false), kernel),
            CostPart::Unknown
        );
    }
}
