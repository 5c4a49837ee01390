//! The report: a view of the stored run's statistics, rendered by a minijinja template into
//! Markdown. It reads only what the run stored, so re-rendering gives the same bytes.

mod best;
mod bias;
mod cells;
mod compare;
mod cycles;
pub use compare::run_compare;
mod figures;
mod fit;
pub mod format;
mod kernels;
mod medians;
mod metrics;
mod peers;
mod phases;
pub mod plots;
mod throughput;
mod view;

use crate::analysis::Analysis;
use crate::store::{Stored, COMPARE_FILE, REPORT_FILE, SUMMARY_FILE, TEMPLATE_FILE};
use anyhow::{Context, Result};
use minijinja::Environment;
use std::path::{Path, PathBuf};

/// The default template, built into the binary so a run renders the same anywhere.
const BUILTIN_TEMPLATE: &str = include_str!("../../templates/report.md.j2");

/// Records in `dir` that its report compares against the run in `earlier`.
pub fn set_comparison(dir: &Path, earlier: &Path) -> Result<()> {
    Stored::load(earlier).with_context(|| format!("{} is not a stored run", earlier.display()))?;
    let rel = compare::relative_path(dir, earlier)
        .with_context(|| format!("cannot relate {} to {}", earlier.display(), dir.display()))?;
    std::fs::write(dir.join(COMPARE_FILE), format!("{}\n", rel.display()))
        .with_context(|| format!("cannot write {}", dir.join(COMPARE_FILE).display()))
}

/// Renders `dir`'s stored run into `report.md` (and `summary.csv`); returns the report's path
/// and the run's trust.
pub fn render_dir(dir: &Path, template: Option<&Path>) -> Result<Rendered> {
    let stored = Stored::load(dir)?;
    for w in &stored.warnings {
        eprintln!("warning: {w}");
    }
    let analysis = Analysis::of(&stored)?;
    let trust = analysis.trust();
    let mut view = view::View::build(&analysis)?;
    if let Ok(rel) = std::fs::read_to_string(dir.join(COMPARE_FILE)) {
        let rel = rel.trim();
        let earlier = Stored::load(&dir.join(rel))
            .with_context(|| format!("the run {rel} named in {COMPARE_FILE} cannot be read"))?;
        view.set_comparison(compare::build(&stored, &earlier, rel));
    }
    std::fs::write(dir.join(SUMMARY_FILE), analysis.summary_csv()?)
        .with_context(|| format!("cannot write {}", dir.join(SUMMARY_FILE).display()))?;
    let plot_dir = dir.join("plots");
    if plot_dir.exists() {
        std::fs::remove_dir_all(&plot_dir)
            .with_context(|| format!("cannot clear {}", plot_dir.display()))?;
    }
    for (path, svg) in &view.plot_files {
        let path = dir.join(path);
        std::fs::create_dir_all(&plot_dir)
            .with_context(|| format!("cannot create {}", plot_dir.display()))?;
        std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let (name, text) = template_text(&stored, template)?;
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_keep_trailing_newline(true);
    env.add_template_owned(name.clone(), text)
        .with_context(|| format!("template {name} does not parse"))?;
    let out = env
        .get_template(&name)
        .expect("just added")
        .render(&view)
        .map_err(|e| anyhow::anyhow!("template {name} failed to render: {e:#}"))?;
    let path = dir.join(REPORT_FILE);
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Rendered { path, trust })
}

/// A rendered report, and how far its run's readings can be trusted.
pub struct Rendered {
    pub path: PathBuf,
    pub trust: crate::analysis::trust::Summary,
}

/// The template to use: the one asked for, else the experiment's own (copied into the run
/// folder when it ran), else the built-in one.
fn template_text(stored: &Stored, asked: Option<&Path>) -> Result<(String, String)> {
    let own = stored.dir.join(TEMPLATE_FILE);
    match asked
        .map(Path::to_path_buf)
        .or(own.is_file().then_some(own))
    {
        Some(p) => Ok((
            p.display().to_string(),
            std::fs::read_to_string(&p)
                .with_context(|| format!("cannot read template {}", p.display()))?,
        )),
        None => Ok(("built-in report.md.j2".into(), BUILTIN_TEMPLATE.into())),
    }
}
