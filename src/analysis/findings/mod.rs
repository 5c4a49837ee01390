//! Findings: the few facts of a run a CUDA developer acts on, each with its numbers, chosen
//! by fixed rules from the trusted cells (README, "Findings written by the runner") and
//! ranked so that the headline comes first. The report words them (`report::findings`).

mod cells;
mod cost;
mod energy;
mod finding;
mod kernels;
mod limits;
mod split;
mod variants;

pub use cells::clipped;
pub use finding::{
    AuditCost, Best, Bias, CheckedBy, CostPart, Difference, EnergyRatio, Finding, NamedCell, Peak,
    PeakOf, PeerAgreement, Range, Reading, Speedup, Split, Trusted, WideLimits, ALIKE_FRACTION,
};

use super::audits::CellAudits;
use super::counters::CellCounters;
use super::counters::{BytesCheck, BytesVerdict};
use super::facts::Facts;
use super::trust::Verdict;
use crate::experiment::Point;
use crate::plan::Role;
use crate::protocol::Energy;

/// At most this many findings: a reader takes them in at a glance.
pub const MAX_FINDINGS: usize = 10;

/// At most this many findings of one rule, so that one kind cannot crowd out the others.
const MAX_PER_RULE: usize = 3;

/// The run's findings, headline first, at most [`MAX_FINDINGS`].
pub fn of(a: &Facts, counters: &[CellCounters], audits: &[CellAudits]) -> Vec<Finding> {
    let s = a.run;
    let exp = &s.experiment;
    let median = |k: usize, p: &Point, v: &str| a.sound_median_at(k, p, v);
    let units = |k: usize, p: &Point, v: &str| {
        (a.run.plan.cell_at(k, p, v))
            .and_then(|c| a.reduced.units.get(&c.index))
            .map_or(vec![], |u| u.values.clone())
    };
    let energy = |k: usize, p: &Point, v: &str| {
        let records = a.records.get(&a.run.plan.cell_at(k, p, v)?.index)?;
        let each: Vec<&Energy> = records.iter().filter_map(|r| r.energy.as_ref()).collect();
        (each.len() == records.len() && !each.is_empty()).then(|| Energy {
            joules: each.iter().map(|e| e.joules).sum(),
            seconds: each.iter().map(|e| e.seconds).sum(),
            launches: each.iter().map(|e| e.launches).sum(),
        })
    };
    let t = Trusted {
        exp,
        median: &median,
        units: &units,
        energy: &energy,
    };
    let measured = || (s.plan.cells.iter()).filter(|c| c.role == Role::Measure);
    let verdicts: Vec<_> = measured().map(|c| (c, a.verdict(c))).collect();
    let rule = |found: Vec<Finding>| found.into_iter().take(MAX_PER_RULE);
    let mut out: Vec<Finding> = rule(cells::untrusted(exp, &verdicts)).collect();
    out.extend(cells::caught(exp, &verdicts));
    out.extend(bytes(counters));
    let mut spoken: Vec<Finding> = rule(kernels::speedups(&t)).collect();
    if let Some(p) = &a.peaks {
        let l2 = (s.meta.device.as_ref()).map_or(0, |d| d.l2_bytes.max(0) as u64);
        spoken.extend(rule(kernels::peaks(&t, p, l2)));
    }
    spoken.extend(rule(kernels::best(&t)));
    spoken.extend(rule(variants::bias(&t)));
    spoken.extend(rule(variants::differences(&t)));
    spoken.extend(rule(variants::peers(&t, &a.peer_medians)));
    if spoken.is_empty() {
        spoken.extend(rule(cells::ranges(&t)));
    }
    out.extend(spoken);
    // A kernel written to be caught whose cell passed is a cheat that got through.
    let caught = |c: &crate::plan::Cell| c.kernel.is_some_and(|k| exp.kernels[k].expect_caught);
    let trusted: Vec<_> = verdicts
        .iter()
        .filter(|(c, v)| **v == Verdict::Ok && !caught(c))
        .map(|(c, _)| *c)
        .collect();
    let flags: Vec<_> = (trusted.iter())
        .map(|c| {
            let (flags, lowest_mhz) = cells::flags(a, c);
            (c.id.clone(), flags, lowest_mhz)
        })
        .collect();
    out.extend(cells::flagged(&flags));
    out.extend(cells::stopped(a, &trusted));
    out.extend(cost::audit_cost(exp, audits, &trusted));
    let spread = |c: &crate::plan::Cell| limits::spread_wide(a, c);
    out.extend(limits::wide_limits(audits, &trusted, &spread));
    out.extend(split::split(a, audits, &trusted));
    // Energy last: the first finding the cap leaves out.
    out.extend(rule(energy::ratios(&t)));
    if out.is_empty() {
        out.push(Finding::Nothing {
            trusted: trusted.len(),
            cells: verdicts.len(),
        });
    }
    out.truncate(MAX_FINDINGS);
    out
}

/// What the counters say of the declared bytes, where any cell had them checked.
fn bytes(counters: &[CellCounters]) -> Option<Finding> {
    let checks: Vec<(String, BytesCheck)> = (counters.iter())
        .filter_map(|c| Some((c.cell.id.clone(), c.bytes?)))
        .collect();
    let count = |v: BytesVerdict| checks.iter().filter(|(_, c)| c.verdict == v).count();
    (!checks.is_empty()).then(|| Finding::Bytes {
        checked: checks.len(),
        agree: count(BytesVerdict::Agrees),
        cached: count(BytesVerdict::ServedByCaches),
        marked: (checks.iter())
            .filter(|(_, c)| c.verdict.marked())
            .cloned()
            .collect(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiment::Experiment;
    use crate::plan::point_id;
    use std::collections::HashMap;

    /// An experiment of `kernels` (name, extra TOML lines) over `sweep`, under `variants`
    /// (name, extra lines), with `report` lines.
    pub fn experiment(
        sweep: &str,
        kernels: &[(&str, &str)],
        variants: &[(&str, &str)],
        report: &str,
    ) -> Experiment {
        let mut text = format!("[experiment]\ntitle = \"t\"\n[sweep]\n{sweep}\n");
        for (name, extra) in kernels {
            text += &format!(
                "[[kernel]]\nname = \"{name}\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\n{extra}\n"
            );
        }
        for (name, extra) in variants {
            text += &format!("[[variant]]\nname = \"{name}\"\n{extra}\n");
        }
        text += &format!("[report]\nfloor = false\n{report}\n");
        Experiment::from_text(&text).unwrap()
    }

    /// Medians by cell id (`kernel/point/variant`), as a [`Trusted`] reads them; units: the
    /// median repeated, spread by 1%.
    pub struct Fake(pub HashMap<String, f64>);

    impl Fake {
        pub fn median(&self, exp: &Experiment, k: usize, p: &Point, v: &str) -> Option<f64> {
            let at = NamedCell::new(&exp.kernels[k].name, p, v);
            self.0
                .get(&format!("{}/{}/{}", at.kernel, at.point, at.variant))
                .copied()
        }

        /// 400 W over each launch's median, a second of them.
        pub fn energy(&self, exp: &Experiment, k: usize, p: &Point, v: &str) -> Option<Energy> {
            let ns = self.median(exp, k, p, v)?;
            Some(Energy {
                joules: 400.0,
                seconds: 1.0,
                launches: (1e9 / ns) as u64,
            })
        }

        pub fn units(&self, exp: &Experiment, k: usize, p: &Point, v: &str) -> Vec<f64> {
            self.median(exp, k, p, v).map_or(vec![], |m| {
                (0..10).map(|i| m * (0.995 + 0.001 * i as f64)).collect()
            })
        }
    }

    /// Runs `rule` over `exp` with the medians of `fake`.
    pub fn with<T>(exp: &Experiment, fake: &Fake, rule: impl Fn(&Trusted) -> T) -> T {
        let median = |k: usize, p: &Point, v: &str| fake.median(exp, k, p, v);
        let units = |k: usize, p: &Point, v: &str| fake.units(exp, k, p, v);
        let energy = |k: usize, p: &Point, v: &str| fake.energy(exp, k, p, v);
        rule(&Trusted {
            exp,
            median: &median,
            units: &units,
            energy: &energy,
        })
    }

    pub fn fake(cells: &[(&str, f64)]) -> Fake {
        Fake(cells.iter().map(|(id, ns)| (id.to_string(), *ns)).collect())
    }

    #[test]
    fn a_trusted_kernels_cells_come_in_sweep_and_variant_order() {
        let exp = experiment(
            "n = [1, 2]",
            &[("k", "")],
            &[("hot", ""), ("cold", "cache = \"flush\"")],
            "",
        );
        let f = fake(&[("k/n=2/hot", 2.0), ("k/n=1/cold", 3.0), ("k/n=2/cold", 4.0)]);
        let cells = with(&exp, &f, |t| {
            (t.cells(0).into_iter())
                .map(|(p, v, ns)| (point_id(p), v.to_string(), ns))
                .collect::<Vec<_>>()
        });
        assert_eq!(
            cells,
            [
                ("n=1".into(), "cold".into(), 3.0),
                ("n=2".into(), "hot".into(), 2.0),
                ("n=2".into(), "cold".into(), 4.0)
            ]
        );
    }
}
