//! `runner merge`: the parts of a run over several GPUs or machines made one run.

use crate::cli::say;
use crate::{report, store};
use std::path::{Path, PathBuf};

/// `runner merge`: the merged run and its report, even where damage cost a part cells;
/// then an error (exit 1) naming what the merged run lacks for it.
pub(super) fn merge(parts: &[PathBuf], out: &Path, force: bool) -> anyhow::Result<()> {
    let parts: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    let read = store::read_parts(&parts, out)?;
    let folder = store::new_run_folder(out, force)?;
    let merged = read.write(&folder, force)?;
    for w in &merged.warnings {
        crate::terminal::tell(&format!("warning: {w}"));
    }
    let report = report::render_dir(&folder, None)?;
    let incomplete = match merged.meta.complete {
        true => "",
        false => " (not every cell of the plan ran)",
    };
    say(&format!(
        "merged {} part(s) on {} GPU(s) into {}{incomplete}\n",
        parts.len(),
        merged.meta.devices.len(),
        report.path.display(),
    ))?;
    if !merged.lost.is_empty() {
        anyhow::bail!(
            "damage cost the parts {} cell(s) or record(s), which the merged run lacks (the warnings above say why): {}\n  hint: restore the damaged part from a copy, or run what it lost again with `runner run --resume PART`, then merge again",
            merged.lost.len(),
            merged.lost.join(", ")
        );
    }
    Ok(())
}
