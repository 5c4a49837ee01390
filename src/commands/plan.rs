//! `runner plan`: the cells of an experiment, their launches, checks and estimated cost,
//! without a GPU; with `--probe` each kernel timed on the device first, with `--compile`
//! each built.

use crate::cli::say;
use crate::experiment::{DeviceFacts, Experiment, Sources};
use crate::{execute, plan, store};
use std::path::Path;

/// `plan --probe`: each kernel build timed on the device at its points (`plan::probe`),
/// the probe's account said.
fn probed(
    exp: &Experiment,
    plan: &plan::Plan,
    verbose: bool,
) -> anyhow::Result<plan::probe::Probe> {
    let probe = plan::probe::ProbePlan::new(plan);
    let probed = execute::probe::probe(exp, &probe.plan)?;
    let timed = probed.readings_ns.iter().flatten().count();
    let mut account = format!(
        "probe: {timed} of {} kernel builds, points and cache states timed on the device in {}\n",
        probe.plan.cells.len(),
        plan::cost::seconds(probed.wall_s)
    );
    if verbose {
        for (c, ns) in probe.plan.cells.iter().zip(&probed.readings_ns) {
            if let Some(ns) = ns {
                account += &format!("  {}: {:.1} µs a launch\n", c.id, ns / 1e3);
            }
        }
    }
    for f in &probed.failures {
        account += &format!("  failed, modelled instead: {f}\n");
    }
    say(&account)?;
    Ok(probe.measured(&probed.readings_ns))
}

pub(super) fn plan(
    path: &Path,
    only: &[String],
    set: &[String],
    shown: plan::Shown,
    probe: bool,
) -> anyhow::Result<()> {
    let facts = match probe {
        true => execute::probe::device_facts()?,
        false => DeviceFacts::nominal(),
    };
    let exp = Experiment::load_set(path, &facts, Sources::Read, set)?;
    let all = plan::Plan::new(&exp)?;
    let total = all.cells.len();
    let plan = all.select(only)?;
    if !only.is_empty() {
        say(&format!(
            "only {} of {total} cells (--only {})\n",
            plan.cells.len(),
            only.join(" --only ")
        ))?;
    }
    let previous = store::previous_wall_times(&Path::new("reports").join(&exp.name));
    let probed = match probe {
        true => probed(&exp, &plan, shown.verbose)?,
        false => Default::default(),
    };
    say(&plan::describe(&exp, &plan, &previous, &probed, shown))?;
    let peers = execute::peer_runs::describe(&exp, &plan.cells);
    if !peers.is_empty() {
        say(&format!(
            "peers (other programs measuring the same, beside a variant):\n{peers}"
        ))?;
    }
    if !shown.compiled {
        return Ok(());
    }
    let found = super::preflight::compile_plan(&exp, &plan)?;
    say(&found.account)?;
    if !found.failures.is_empty() {
        anyhow::bail!(
            "{} build(s) failed `plan --compile`:\n{}",
            found.failures.len(),
            found.failures.join("\n")
        );
    }
    Ok(())
}
