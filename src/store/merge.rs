//! `runner merge PARTS... --out DIR`: the run folders of one experiment's shards (or of the
//! GPUs of one machine) joined into one run folder, each cell renumbered into the whole
//! plan and marked with the GPU that ran it. The parts are read and checked first, and the
//! merged run written under the folder's lock after. A part named twice (by another path,
//! or as a copy) is refused, and so is an `--out` that holds another run, unless `force`. What
//! reading a part dropped is handed back, to be said: a part that lost cells to damage
//! merges without them.

use super::names::{CELLS_FILE, EXPERIMENT_FILE, RUN_FILE, SOURCES_DIR, TEMPLATE_FILE};
use super::{FolderLock, RunMeta, Samples, Stored, Writer};
use crate::files;
use crate::plan::Plan;
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::path::Path;

/// A merged run: its metadata, and what reading its parts dropped.
pub struct Merged {
    pub meta: RunMeta,
    /// The parts' warnings, each opening with its part's folder.
    pub warnings: Vec<String>,
    /// What damage cost the parts (see [`Stored::lost`]), each opening with its part's
    /// folder: the merged run lacks it.
    pub lost: Vec<String>,
}

/// The parts of a run, read and found to merge.
pub struct Parts {
    loaded: Vec<(Stored, Samples)>,
    plan: Plan,
    /// Of each part, each record's cell in `plan`.
    cells: Vec<Vec<usize>>,
    /// The merged run's metadata.
    meta: RunMeta,
}

/// Reads the runs in `parts` and checks that they merge into `out`: all that refuses a merge
/// is found before anything is written.
pub fn read_parts(parts: &[&Path], out: &Path) -> Result<Parts> {
    let loaded = load_parts(parts)?;
    let runs: Vec<&Stored> = loaded.iter().map(|(s, _)| s).collect();
    let Some(first) = runs.first() else {
        bail!("nothing to merge: name the run folders of the parts");
    };
    let mut seen: HashMap<String, &Path> = HashMap::new();
    for r in &runs {
        if let Some(other) = seen.insert(fingerprint(&r.dir)?, &r.dir) {
            bail!(
                "{} and {} are the same part (their {RUN_FILE} and {CELLS_FILE} are identical): name each part once",
                other.display(),
                r.dir.display()
            );
        }
    }
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
    let plan = Plan::new(&first.experiment)?.select(&first.meta.only)?;
    let index: HashMap<&str, usize> = plan
        .cells
        .iter()
        .map(|c| (c.id.as_str(), c.index))
        .collect();
    // Which part ran each cell, and where it is in the plan.
    let mut owner: HashMap<&str, usize> = HashMap::new();
    let mut cells = vec![Vec::new(); runs.len()];
    for (i, r) in runs.iter().enumerate() {
        for rec in &r.records {
            let Some(&at) = index.get(rec.id.as_str()) else {
                bail!(
                    "{}: cell {} is not in the experiment's plan",
                    r.dir.display(),
                    rec.id
                );
            };
            cells[i].push(at);
            if let Some(other) = owner.insert(&rec.id, i).filter(|o| *o != i) {
                bail!(
                    "cell {} ran in both {} and {}: the parts overlap",
                    rec.id,
                    runs[other].dir.display(),
                    r.dir.display()
                );
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
    Ok(Parts {
        loaded,
        plan,
        cells,
        meta,
    })
}

impl Parts {
    /// Joins the parts into the locked folder `out`, which may hold another run only if
    /// `force`.
    pub fn write(self, out: &FolderLock, force: bool) -> Result<Merged> {
        let meta = self.meta.clone();
        claim(&self, out, force)?;
        let first = &self.loaded[0].0;
        let mut writer = Writer::merged(out, &first.experiment, &meta)?;
        for ((r, samples), cells) in self.loaded.iter().zip(&self.cells) {
            let gpu = r.meta.device.as_ref().map(|d| d.uuid.clone());
            for (rec, &i) in r.records.iter().zip(cells) {
                let mut rec = r.with_samples(rec, samples);
                rec.cell = i;
                rec.gpu = rec.gpu.or_else(|| gpu.clone());
                writer.append(&self.plan.cells[i], &rec)?;
            }
        }
        let runs = || self.loaded.iter().map(|(s, _)| s);
        let peers: Vec<_> = runs().flat_map(|r| r.peers.iter().cloned()).collect();
        if !peers.is_empty() {
            writer.write_peers(&peers)?;
        }
        // Last: until here run.json says the merge is unfinished.
        writer.finish(&meta)?;
        let of_each = |what: fn(&Stored) -> &Vec<String>| -> Vec<String> {
            runs()
                .flat_map(|r| what(r).iter().map(|w| format!("{}: {w}", r.dir.display())))
                .collect()
        };
        Ok(Merged {
            warnings: of_each(|r| &r.warnings),
            lost: of_each(|r| &r.lost),
            meta,
        })
    }
}

/// Makes room in `out` for the merged run (see [`super::claim`]) and copies the first
/// part's experiment, sources and template there.
fn claim(parts: &Parts, out: &FolderLock, force: bool) -> Result<()> {
    let (meta, first) = (&parts.meta, &parts.loaded[0].0);
    // A merge of the same run (its parts merged again, more of them done) replaces itself.
    let same_run = |m: &RunMeta| {
        (&m.experiment_sha256, &m.set, &m.only, &m.started_utc)
            == (
                &meta.experiment_sha256,
                &meta.set,
                &meta.only,
                &meta.started_utc,
            )
    };
    super::claim(out, force, same_run)?;
    let out_dir = out.dir();
    copy_tree(&first.dir.join(SOURCES_DIR), &out_dir.join(SOURCES_DIR))?;
    for file in [EXPERIMENT_FILE, TEMPLATE_FILE] {
        let from = first.dir.join(file);
        if std::fs::symlink_metadata(&from).is_ok() {
            let bytes = files::read(&from, files::MAX_TEXT_BYTES)
                .with_context(|| format!("cannot read {}", from.display()))?;
            files::write(&out_dir.join(file), bytes)
                .with_context(|| format!("cannot write {}", out_dir.join(file).display()))?;
        }
    }
    Ok(())
}

/// Each part with its samples, which the merged run copies.
fn load_parts(parts: &[&Path]) -> Result<Vec<(Stored, Samples)>> {
    (parts.iter())
        .map(|p| {
            let mut samples = Samples::default();
            let stored = Stored::load(p, &mut samples)
                .with_context(|| format!("cannot merge {}", p.display()))?;
            Ok((stored, samples))
        })
        .collect()
}

/// A part by its content: its metadata and cell records, so that a part named twice, by
/// another path or as a copy, is told from two parts.
fn fingerprint(dir: &Path) -> Result<String> {
    let mut all = Vec::new();
    let records = super::format::find(dir, CELLS_FILE)?.map(|(path, _)| path);
    for path in [dir.join(RUN_FILE), records.unwrap_or(dir.join(CELLS_FILE))] {
        all.extend(
            files::read(&path, files::MAX_RUN_FILE_BYTES)
                .with_context(|| format!("cannot read {}", path.display()))?,
        );
        all.push(0);
    }
    Ok(crate::system::sha256_hex(&all))
}

/// Copies a part's `sources/` (no link in it is followed: it is refused).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    // The folder itself too: a `sources` that links elsewhere would copy what it reaches.
    files::not_a_link(from).with_context(|| format!("cannot copy {}", from.display()))?;
    if !from.is_dir() {
        return Ok(());
    }
    files::create_dir(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            let bytes = files::read(&entry.path(), files::MAX_MODULE_BYTES)
                .with_context(|| format!("cannot read {}", entry.path().display()))?;
            files::write(&target, bytes)
                .with_context(|| format!("cannot write {}", target.display()))?;
        }
    }
    Ok(())
}
