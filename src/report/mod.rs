//! The report: a view of the stored run's statistics, rendered by a minijinja template into
//! Markdown. It reads only what the run stored, so re-rendering gives the same bytes.

mod audits;
mod best;
mod bias;
mod cells;
mod compare;
mod counters;
mod cycles;
pub use compare::run_compare;
mod figures;
mod findings;
mod fit;
pub mod format;
mod kernels;
mod layout;
mod medians;
mod methodology;
mod metrics;
mod panels;
mod peer_agreement;
mod phases;
pub mod plots;
pub mod quotes;
mod roofline;
mod scan;
mod throughput;
mod view;

use crate::analysis::{self, Analysis, Reduced};
use crate::experiment::expr;
use crate::files;
use crate::store::{
    FolderLock, Stored, CELLS_REPORT_FILE, COMPARE_FILE, FINDINGS_FILE, NOTES_FILE, REPORT_FILE,
    SUMMARY_FILE, TEMPLATE_FILE,
};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The default template, built into the binary so a run renders the same anywhere.
const BUILTIN_TEMPLATE: &str = include_str!("../../templates/report.md.j2");
/// The template of `cells.md`, the report's per-cell tables, whatever template the report
/// takes.
const CELLS_TEMPLATE: &str = include_str!("../../templates/cells.md.j2");
const CELLS_TEMPLATE_NAME: &str = "built-in cells.md.j2";

/// Steps (minijinja's fuel) a report's template may take: over a hundred times what the
/// largest stored report takes (accuracy's, 76,000), so that only a template that loops
/// without end meets it.
const REPORT_FUEL: u64 = 10_000_000;
/// The longest report a template may render, in bytes.
const MAX_REPORT_BYTES: usize = 64 << 20;

/// Records in the locked run folder that its report compares against the run in `earlier`.
pub fn set_comparison(folder: &FolderLock, earlier: &Path) -> Result<()> {
    let dir = folder.dir();
    let (this, _) = analysis::load(dir)?;
    let (before, _) = analysis::load(earlier)
        .with_context(|| format!("{} is not a stored run", earlier.display()))?;
    compare::common_cells(&before, &this)?;
    let rel = compare::relative_path(dir, earlier)
        .with_context(|| format!("cannot relate {} to {}", earlier.display(), dir.display()))?;
    let path = dir.join(COMPARE_FILE);
    files::write(&path, format!("{}\n", rel.display()))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Renders the locked run folder's stored run into `report.md` and `cells.md` (and
/// `summary.csv` and `plots/`); returns the report's path and the run's trust. Everything
/// is rendered before anything is written, each file is written whole and renamed into
/// place (`plots/` too, as a folder), so a failure leaves the earlier report as it was and
/// a reader finds each file old or new, never half written.
pub fn render_dir(folder: &FolderLock, template: Option<&Path>) -> Result<Rendered> {
    let dir = folder.dir();
    let (mut stored, reduced) = analysis::load(dir)?;
    let earlier = earlier_run(&mut stored)?;
    for w in &stored.warnings {
        crate::terminal::tell(&format!("warning: {w}"));
    }
    let analysis = Analysis::of(&stored, reduced);
    let trust = analysis.trust.clone();
    let mut view = view::View::build(&analysis)?;
    if let Some((earlier, reduced, rel)) = earlier {
        let earlier = Analysis::of(&earlier, reduced);
        // As with an earlier run that cannot be read: the report stands without it.
        match compare::build(&analysis, &earlier, &rel) {
            Ok(comparison) => view.set_comparison(comparison),
            Err(e) => crate::terminal::tell(&format!(
                "warning: left out the comparison with {rel}: {e:#}"
            )),
        }
    }
    let (name, text) = template_text(&stored, template)?;
    let mut env = expr::environment(REPORT_FUEL);
    env.set_keep_trailing_newline(true);
    env.add_filter("wrap", |text: &str| format::wrap(text));
    env.add_filter("inert", |text: &str| format::inert(text));
    env.add_filter("code", |text: &str| format::code(text));
    env.add_template_owned(name.clone(), text)
        .with_context(|| format!("template {name} does not parse"))?;
    env.add_template(CELLS_TEMPLATE_NAME, CELLS_TEMPLATE)
        .expect("the built-in cells template parses");
    let render = |name: &str, view: &view::View| -> Result<Vec<u8>> {
        let mut out = expr::Capped::new(MAX_REPORT_BYTES);
        (env.get_template(name).expect("added above"))
            .render_captured_to(view, &mut out)
            .map_err(|e| {
                anyhow::anyhow!("template {name} failed to render: {}", expr::detail(&e))
            })?;
        Ok(out.bytes)
    };
    let mut report = render(&name, &view)?;
    let cells = render(CELLS_TEMPLATE_NAME, &view)?;
    let stale = stale_quotes(&stored, &analysis, &view, &report, &cells);
    if !stale.is_empty() {
        for q in &stale {
            crate::terminal::tell(&format!(
                "warning: {}: {} appears nowhere in this run's report, cells.md or summary.csv",
                dir.join(q.file).display(),
                q.quote
            ));
        }
        view.warn(quotes::warning(&stale));
        report = render(&name, &view)?;
    }
    let summary = analysis.reduced.stats.csv()?;
    let plot_dir = dir.join("plots");
    files::not_a_link(&plot_dir).with_context(|| format!("cannot write {}", plot_dir.display()))?;
    let new_plots = files::temporary_beside(&plot_dir);
    let written = write_plots(&new_plots, &view.plot_files);
    if written.is_err() {
        let _ = files::remove(&new_plots);
    }
    written?;
    let path = dir.join(SUMMARY_FILE);
    files::write(&path, summary).with_context(|| format!("cannot write {}", path.display()))?;
    files::replace_dir(&new_plots, &plot_dir)
        .with_context(|| format!("cannot replace {}", plot_dir.display()))?;
    let path = dir.join(CELLS_REPORT_FILE);
    files::write(&path, cells).with_context(|| format!("cannot write {}", path.display()))?;
    let path = dir.join(REPORT_FILE);
    files::write(&path, report).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Rendered {
        path,
        trust,
        findings: view.generated,
        stale,
    })
}

/// Writes the plots into the folder `to` (none where there are no plots).
fn write_plots(to: &Path, plots: &[figures::PlotFile]) -> Result<()> {
    files::remove(to).with_context(|| format!("cannot clear {}", to.display()))?;
    for (path, svg) in plots {
        let path = to.join(path.strip_prefix("plots/").unwrap_or(path));
        files::create_dir(to).with_context(|| format!("cannot create {}", to.display()))?;
        files::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The numbers the run's notes and findings quote that the run does not show.
fn stale_quotes(
    stored: &Stored,
    analysis: &Analysis,
    view: &view::View,
    report: &[u8],
    cells: &[u8],
) -> Vec<quotes::Stale> {
    let notes: Vec<(&'static str, &str)> = [
        (FINDINGS_FILE, stored.findings.as_deref()),
        (NOTES_FILE, stored.notes.as_deref()),
    ]
    .into_iter()
    .filter_map(|(file, text)| Some((file, text?)))
    .collect();
    if notes.is_empty() {
        return Vec::new();
    }
    let stats: Vec<f64> = (analysis.reduced.stats.iter())
        .flat_map(|(_, _, s)| {
            [
                s.min, s.max, s.mean, s.median, s.std, s.p25, s.p75, s.p95, s.p99, s.iqr,
            ]
        })
        .collect();
    let report = view.less_notes(&String::from_utf8_lossy(report));
    quotes::check(&notes, &report, &String::from_utf8_lossy(cells), &stats)
}

/// A rendered report, how far its run's readings can be trusted, and the numbers its notes
/// and findings quote that it does not show.
pub struct Rendered {
    pub path: PathBuf,
    pub trust: crate::analysis::trust::Summary,
    /// The findings the runner drew from the run, a sentence each.
    pub findings: Vec<String>,
    pub stale: Vec<quotes::Stale>,
}

/// The run `dir`'s `compare_to` names, with its path as written there; where it cannot be
/// read (a run folder copied alone), the report says so and compares with nothing.
fn earlier_run(stored: &mut Stored) -> Result<Option<(Stored, Reduced, String)>> {
    let path = stored.dir.join(COMPARE_FILE);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let rel = files::read_text(&path, files::MAX_TEXT_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?
        .trim()
        .to_string();
    match analysis::load(&stored.dir.join(&rel)) {
        Ok((earlier, reduced)) => Ok(Some((earlier, reduced, rel))),
        Err(e) => {
            crate::terminal::tell(&format!("warning: {COMPARE_FILE}: {e:#}"));
            stored.warnings.push(format!(
                "{COMPARE_FILE} names the run `{rel}`, which cannot be read here: this report leaves the comparison out"
            ));
            Ok(None)
        }
    }
}

/// The template to use: the one asked for, else the experiment's own (copied into the run
/// folder when it ran), else the built-in one.
fn template_text(stored: &Stored, asked: Option<&Path>) -> Result<(String, String)> {
    let own = stored.dir.join(TEMPLATE_FILE);
    let own = std::fs::symlink_metadata(&own).is_ok().then_some(own);
    match asked.map(Path::to_path_buf).or(own) {
        Some(p) => Ok((
            p.display().to_string(),
            files::read_text(&p, files::MAX_TEXT_BYTES)
                .with_context(|| format!("cannot read template {}", p.display()))?,
        )),
        None => Ok(("built-in report.md.j2".into(), BUILTIN_TEMPLATE.into())),
    }
}
