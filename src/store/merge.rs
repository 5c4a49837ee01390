//! `runner merge PARTS... --out DIR`: the run folders of one experiment's shards (or of the
//! GPUs of one machine) joined into one run folder, each cell renumbered into the whole
//! plan and marked with the GPU that ran it.

use super::{RunMeta, Stored, Writer, EXPERIMENT_FILE, PEERS_FILE, SOURCES_DIR, TEMPLATE_FILE};
use crate::plan::Plan;
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::fs;
use std::path::Path;

/// Joins the runs in `parts` into `out`; the merged run's metadata.
pub fn merge(parts: &[&Path], out: &Path) -> Result<RunMeta> {
    let runs: Vec<Stored> = parts
        .iter()
        .map(|p| Stored::load(p).with_context(|| format!("cannot merge {}", p.display())))
        .collect::<Result<_>>()?;
    let Some(first) = runs.first() else {
        bail!("nothing to merge: name the run folders of the parts");
    };
    for r in &runs[1..] {
        let same = r.meta.experiment_sha256 == first.meta.experiment_sha256
            && r.meta.set == first.meta.set
            && r.meta.only == first.meta.only;
        if !same {
            bail!(
                "{} and {} are runs of different experiments (or of different --set/--only): only parts of one run merge",
                first.dir.display(),
                r.dir.display()
            );
        }
    }
    let plan = Plan::new(&first.experiment)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .select(&first.meta.only)?;
    let index: HashMap<&str, usize> = plan
        .cells
        .iter()
        .map(|c| (c.id.as_str(), c.index))
        .collect();
    let mut owner: HashMap<&str, &Path> = HashMap::new();
    for r in &runs {
        for rec in &r.records {
            if let Some(other) = owner.insert(&rec.id, &r.dir) {
                if other != r.dir {
                    bail!(
                        "cell {} ran in both {} and {}: the parts overlap",
                        rec.id,
                        other.display(),
                        r.dir.display()
                    );
                }
            }
        }
    }
    let same = |a: &Path, b: &Path| a.canonicalize().ok() == b.canonicalize().ok();
    if parts.iter().any(|p| same(p, out)) {
        bail!(
            "--out {}: merge into a new folder, not into one of its parts",
            out.display()
        );
    }
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    // A folder merged into before keeps nothing of that merge that this one would not write.
    let stale = [SOURCES_DIR, TEMPLATE_FILE, PEERS_FILE].map(|f| out.join(f));
    for path in stale.iter().filter(|p| p.exists()) {
        let removed = match path.is_dir() {
            true => fs::remove_dir_all(path),
            false => fs::remove_file(path),
        };
        removed.with_context(|| format!("cannot remove {}", path.display()))?;
    }
    copy_tree(&first.dir.join(SOURCES_DIR), &out.join(SOURCES_DIR))?;
    for file in [EXPERIMENT_FILE, TEMPLATE_FILE] {
        if first.dir.join(file).exists() {
            fs::copy(first.dir.join(file), out.join(file))
                .with_context(|| format!("cannot write {}", out.join(file).display()))?;
        }
    }
    let mut meta = first.meta.clone();
    meta.shard = None;
    meta.complete = runs.iter().all(|r| r.meta.complete) && owner.len() == plan.cells.len();
    meta.started_utc = runs
        .iter()
        .map(|r| r.meta.started_utc.clone())
        .min()
        .unwrap_or_default();
    meta.finished_utc = runs
        .iter()
        .map(|r| r.meta.finished_utc.clone())
        .collect::<Option<Vec<_>>>()
        .and_then(|f| f.into_iter().max());
    meta.devices = Vec::new();
    for device in runs.iter().filter_map(|r| r.meta.device.as_ref()) {
        if !meta.devices.iter().any(|d| d.uuid == device.uuid) {
            meta.devices.push(device.clone());
        }
    }
    let mut writer = Writer::merged(out, &first.experiment, &meta)?;
    for r in &runs {
        let gpu = r.meta.device.as_ref().map(|d| d.uuid.clone());
        for rec in &r.records {
            let Some(&i) = index.get(rec.id.as_str()) else {
                bail!(
                    "{}: cell {} is not in the experiment's plan",
                    r.dir.display(),
                    rec.id
                );
            };
            let mut rec = r.with_samples(rec);
            rec.cell = i;
            rec.gpu = rec.gpu.or_else(|| gpu.clone());
            writer.append(&plan.cells[i], &rec)?;
        }
    }
    let peers: Vec<_> = runs.iter().flat_map(|r| r.peers.iter().cloned()).collect();
    if !peers.is_empty() {
        writer.write_peers(&peers)?;
    }
    Ok(meta)
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if !from.is_dir() {
        return Ok(());
    }
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot write {}", target.display()))?;
        }
    }
    Ok(())
}
