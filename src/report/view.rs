//! What a template sees: the stored run's estimates turned into tables of formatted values.

use super::cells::{self, CellRow};
use super::figures::{self, PlotFile, Plots};
use super::format;
use super::medians::{self, Table};
use crate::analysis::{Analysis, Phase};
use crate::experiment::knobs::cache::bytes_text;
use crate::experiment::{Aspect, Unit};
use crate::plan::{Cell, Role};
use crate::protocol::Status;
use serde::Serialize;

#[derive(Serialize)]
pub struct View {
    experiment: ExperimentView,
    /// The run's raw files as this folder names them: (samples, records).
    raw_files: (String, String),
    /// Whether the run's readings can be trusted, in a sentence: the report's first line.
    trust: String,
    /// Each cell not trusted, or (a kernel written to be caught) not caught, and why.
    untrusted: Vec<UntrustedRow>,
    run: Vec<Pair>,
    system: Vec<Pair>,
    methodology: super::methodology::Methodology,
    tables: Vec<Table>,
    kernels: Vec<super::kernels::KernelsTable>,
    /// Derived metrics, a table per metric and kernel.
    metrics: Vec<super::metrics::MetricTable>,
    /// `time = a + bytes / b` per kernel and variant, where asked.
    fit: Vec<super::fit::FitRow>,
    floor: Vec<FloorRow>,
    overhead: Option<OverheadView>,
    stats: Vec<StatRow>,
    cells: Vec<CellRow>,
    /// Each cell's audits, for a run audited among its timed launches.
    audits: Option<super::audits::AuditsView>,
    failures: Vec<FailureRow>,
    /// Whether the failed runs' records say what failed (folders from before do not): the
    /// table of failures then has a column for it.
    failure_kinds: bool,
    notes: Option<String>,
    /// The findings a person wrote (`findings.md`), and those the runner drew.
    findings: Option<String>,
    pub generated: Vec<String>,
    warnings: Vec<String>,
    clock_tolerance_pct: f64,
    clock_policy: String,
    complete: bool,
    plots: Plots,
    phases: Vec<super::phases::PhaseTable>,
    bias: Vec<super::bias::BiasTable>,
    throughput: Vec<super::throughput::ThroughputTable>,
    /// Hardware counters of the cells that read them, and their declared bytes checked.
    counters: Option<super::counters::CountersView>,
    cycles: Vec<super::cycles::CyclesTable>,
    /// Where the peaks the throughput tables compare with come from.
    peaks: String,
    comparison: Option<super::compare::Comparison>,
    /// Plot files to write beside the report: (path relative to it, SVG text).
    #[serde(skip)]
    pub plot_files: Vec<PlotFile>,
}

#[derive(Serialize)]
struct ExperimentView {
    name: String,
    title: String,
    description: String,
    path: String,
    text: String,
}

#[derive(Serialize)]
struct Pair {
    key: String,
    value: String,
}

fn pair(key: &str, value: impl Into<String>) -> Pair {
    Pair {
        key: key.into(),
        value: value.into(),
    }
}

#[derive(Serialize)]
struct FloorRow {
    timer: String,
    description: String,
    median: String,
    p95: String,
    samples: u64,
}

#[derive(Serialize)]
struct OverheadView {
    harness: String,
    bare: String,
    difference: String,
    bare_events: String,
}

#[derive(Serialize)]
struct StatRow {
    cell: String,
    phase: String,
    count: u64,
    min: String,
    median: String,
    mean: String,
    std: String,
    p95: String,
    p99: String,
    max: String,
    cv: String,
    iqr: String,
    median_ci: String,
}

#[derive(Serialize)]
struct FailureRow {
    cell: String,
    process: u32,
    /// What failed (`compile`, `check`, `worker lost`, ...), `skipped`, `peer`, or `–` where
    /// the record does not say.
    kind: String,
    error: String,
}

#[derive(Serialize)]
struct UntrustedRow {
    cell: String,
    verdict: String,
    /// Whether the kernel was written to be caught (then this row is as expected).
    expected: bool,
    reason: String,
}

const PASSED: &str = "passed: the kernel was written to be caught";

/// The longest line a report holds, so that it reads in a terminal and a diff: a row's
/// reason is cut to fit (a long cell name beside a test's reason; `cells.md`'s Audits table
/// has the test's numbers).
const LINE_CHARS: usize = 300;

/// The cells whose reading is not trusted, and those of kernels written to be caught that
/// passed, in plan order.
fn untrusted(a: &Analysis) -> Vec<UntrustedRow> {
    let exp = &a.run.experiment;
    (a.run.plan.cells.iter())
        .filter_map(|c| {
            let caught = c.kernel.is_some_and(|k| exp.kernels[k].expect_caught);
            let v = a.verdict(c);
            let listed = v.reason().is_some() || (caught && v.as_expected(true) == Some(false));
            listed.then(|| {
                let expected = v.as_expected(caught) == Some(true);
                // The verdict has its column: a reason that opens with it says it once.
                let reason = v.reason_after_word().unwrap_or(PASSED);
                // `| cell | verdict | yes | reason |` (or `**no**`): 13 characters of bars.
                let said = if expected { "yes" } else { "**no**" }.len();
                let fixed = c.id.chars().count() + v.word().chars().count() + said + 13;
                UntrustedRow {
                    cell: c.id.clone(),
                    verdict: v.word().into(),
                    expected,
                    reason: format::fitted(reason, LINE_CHARS.saturating_sub(fixed)),
                }
            })
        })
        .collect()
}

impl View {
    pub fn build(a: &Analysis) -> anyhow::Result<View> {
        let s = a.run;
        let exp = &s.experiment;
        let tables = exp
            .kernels
            .iter()
            .enumerate()
            .map(|(k, kernel)| medians::table(a, k, &kernel.name))
            .collect();

        let (plots, bias, mut plot_files) = figures::build(a)?;
        let throughput = (a.peaks.as_ref()).map_or(vec![], |p| super::throughput::build(a, p));
        let (phases, phase_plots) = super::phases::build(s, |cell| {
            a.reduced.stats.get(cell, Phase::Steady).map(|st| st.median)
        })?;
        plot_files.extend(phase_plots);
        let (metrics, metric_plots) = super::metrics::build(a)?;
        plot_files.extend(metric_plots);
        let m = &s.meta;
        Ok(View {
            trust: trust_line(a.trust.line()),
            untrusted: untrusted(a),
            plots,
            plot_files,
            phases,
            bias,
            throughput,
            counters: super::counters::build(&a.counters),
            cycles: super::cycles::build(a),
            peaks: peaks_source(a),
            comparison: None,
            experiment: ExperimentView {
                name: exp.name.clone(),
                title: exp.title.clone(),
                // Written by a person, as findings are: a line past the report's limit wraps.
                description: format::wrap_long_lines(exp.description.trim())
                    .trim_end()
                    .to_string(),
                path: m.experiment_path.display().to_string(),
                text: format::fold_long_toml_lines(exp.text.trim_end()),
            },
            run: run_pairs(s),
            system: system_pairs(s),
            methodology: super::methodology::build(a),
            tables,
            kernels: super::kernels::build(exp, |k, p, v| a.sound_median_at(k, p, v)),
            metrics,
            fit: super::fit::build(a),
            floor: floor(a),
            overhead: overhead(s),
            stats: stats(a),
            cells: cells::rows(a),
            audits: super::audits::build(a),
            failures: failures(s),
            failure_kinds: s.records.iter().any(|r| r.failure.is_some()),
            notes: s.notes.as_deref().map(format::wrap_long_lines),
            findings: s.findings.as_deref().map(format::wrap_long_lines),
            generated: super::findings::sentences(&a.findings),
            warnings: s.warnings.clone(),
            raw_files: (
                s.stored_name(crate::store::SAMPLES_FILE),
                s.stored_name(crate::store::CELLS_FILE),
            ),
            clock_tolerance_pct: exp.telemetry.clock_tolerance_pct,
            clock_policy: crate::clock_lock::describe(exp.clocks),
            complete: m.complete,
        })
    }

    pub fn set_comparison(&mut self, c: super::compare::Comparison) {
        self.comparison = Some(c);
    }

    /// A rendering of this view without the notes and findings a person wrote in it: what
    /// the run itself shows.
    pub fn less_notes(&self, rendered: &str) -> String {
        let mut text = rendered.to_string();
        for words in self.notes.iter().chain(&self.findings) {
            text = text.replacen(words.as_str(), "", 1);
        }
        text
    }

    pub fn warn(&mut self, warning: String) {
        self.warnings.push(warning);
    }
}

/// The floor table: each timer's reading of the built-in empty kernel, in one unit, so a
/// reader sees what the timing method itself costs beside the kernels' times.
fn floor(a: &Analysis) -> Vec<FloorRow> {
    let floors: Vec<(&Cell, crate::analysis::stats::Stats)> = (a.run.plan.cells.iter())
        .filter(|c| c.role == Role::Floor)
        .filter_map(|c| Some((c, a.reduced.stats.get(c.index, Phase::Steady)?)))
        .collect();
    let unit = format::unit_for(floors.iter().map(|(_, st)| st.median), Unit::Auto);
    (floors.iter())
        .map(|(c, st)| FloorRow {
            timer: c.knobs.timer.key().into(),
            description: c.knobs.describe(Aspect::Timer).join("; "),
            median: format::time(st.median, unit),
            p95: format::time(st.p95, unit),
            samples: st.count,
        })
        .collect()
}

/// The host's overhead per sample, where a floor cell ran the bare cudarc loop beside the
/// runner's: what the harness adds over the least a loop can do.
fn overhead(s: &crate::store::Stored) -> Option<OverheadView> {
    let o = s.records.iter().find_map(|r| r.overhead.as_ref())?;
    Some(OverheadView {
        harness: format::time(o.harness_wall_ns, Unit::Auto),
        bare: format::time(o.bare_wall_ns, Unit::Auto),
        difference: format::time(o.harness_wall_ns - o.bare_wall_ns, Unit::Auto),
        bare_events: format::time(o.bare_events_median_ns, Unit::Auto),
    })
}

/// The statistics table: a row per cell and phase, every time in one unit chosen over
/// all of their medians, so the rows compare at a glance.
fn stats(a: &Analysis) -> Vec<StatRow> {
    let table = &a.reduced.stats;
    let unit = format::unit_for(table.iter().map(|(_, _, st)| st.median), Unit::Auto);
    let t = |v: f64| format::time(v, unit);
    (table.iter())
        .map(|(cell, phase, st)| StatRow {
            cell: a.run.plan.cells[cell].id.clone(),
            phase: phase.key().into(),
            count: st.count,
            min: t(st.min),
            median: t(st.median),
            mean: t(st.mean),
            std: t(st.std),
            p95: t(st.p95),
            p99: t(st.p99),
            max: t(st.max),
            cv: format!("{:.2}%", st.cv * 100.0),
            iqr: t(st.iqr),
            median_ci: match st.median_ci_pct.is_finite() {
                true => format!("±{:.2}%", st.median_ci_pct),
                false => "–".into(),
            },
        })
        .collect()
}

/// The failed and skipped runs, then the peers that gave no reading: each with what failed
/// and why, so a reader sees what is missing from the tables above and what to look at (a
/// wrong output, a launch that faulted, a worker that died) without reading the words.
fn failures(s: &crate::store::Stored) -> Vec<FailureRow> {
    let peer_failures = s.peers.iter().filter(|r| r.time_ns.is_none());
    (s.records.iter())
        .filter(|r| r.status != Status::Ok)
        .map(|r| {
            let kind: String = match (r.status, r.failure) {
                (Status::Skipped, _) => "skipped".into(),
                (_, Some(kind)) => kind.word().into(),
                (_, None) => "–".into(),
            };
            // `| cell | process | kind | error |`: 13 characters of bars; `cells.jsonl`
            // holds the whole error.
            let fixed = r.id.chars().count() + r.process.to_string().len() + kind.len() + 13;
            let error = r.error.as_deref().unwrap_or_default();
            FailureRow {
                cell: r.id.clone(),
                process: r.process,
                error: format::fitted(error, LINE_CHARS.saturating_sub(fixed)),
                kind,
            }
        })
        .chain(peer_failures.map(|r| FailureRow {
            cell: format!("peer {} at {}", r.peer, r.point),
            process: r.process,
            kind: "peer".into(),
            error: r.note.clone(),
        }))
        .collect()
}

/// Where the peaks the throughput tables compare with come from, or why there are none.
fn peaks_source(a: &Analysis) -> String {
    match a.peaks.as_ref().map(|p| p.source.as_str()) {
        Some("") | None => {
            "none known (the run's device reported no clocks or bus width, so no share is given)"
                .to_string()
        }
        Some(source) => source.to_string(),
    }
}

fn run_pairs(s: &crate::store::Stored) -> Vec<Pair> {
    let m = &s.meta;
    let git = |g: &Option<crate::system::Git>, none: &str| {
        g.as_ref().map_or(none.to_string(), |g| {
            format!(
                "{}{}",
                g.commit,
                if g.dirty {
                    " (with uncommitted changes)"
                } else {
                    ""
                }
            )
        })
    };
    let mut run = vec![
        pair("experiment file", m.experiment_path.display().to_string()),
        pair("experiment sha256", m.experiment_sha256.clone()),
        pair("git commit", git(&m.git, "not a git checkout")),
    ];
    if !m.only.is_empty() {
        run.push(pair(
            "cells (part)",
            format!("--only {}", m.only.join(" --only ")),
        ));
    }
    if !m.devices.is_empty() {
        let gpus: Vec<String> = m
            .devices
            .iter()
            .map(|d| format!("{} ({})", d.name, d.uuid))
            .collect();
        run.push(pair("GPUs (merged parts)", gpus.join(", ")));
    }
    if !m.set.is_empty() {
        run.push(pair(
            "sweep replaced",
            format!("--set {}", m.set.join(" --set ")),
        ));
    }
    run.extend([
        pair("runner", m.runner_version.clone()),
        pair("started (UTC)", m.started_utc.clone()),
        pair(
            "finished (UTC)",
            m.finished_utc
                .clone()
                .unwrap_or_else(|| "did not finish".into()),
        ),
    ]);
    let when = |t: &str| humantime::parse_rfc3339(t).ok();
    if let (Some(a), Some(b)) = (
        when(&m.started_utc),
        m.finished_utc.as_deref().and_then(when),
    ) {
        if let Ok(d) = b.duration_since(a) {
            let mut parts: Vec<String> = m
                .peers_s
                .map(|s| format!("of which the peer programs {s:.0} s"))
                .into_iter()
                .collect();
            parts.extend(m.workers.filter(|w| w.processes > 1).map(|w| {
                format!(
                    "{} worker processes, {:.1} s of them from a worker's last cell to its exit",
                    w.processes, w.exit_s
                )
            }));
            let peers = match parts.is_empty() {
                true => String::new(),
                false => format!(" ({})", parts.join("; ")),
            };
            run.push(pair(
                "wall time",
                format!("{}{peers}", humantime::format_duration(d)),
            ));
        }
    }
    if let Some(st) = &m.startup {
        run.push(pair(
            "first worker's CUDA start-up",
            format!(
                "cuInit {:.1} ms, primary context {:.1} ms",
                st.driver_init_ms, st.context_ms
            ),
        ));
    }
    run
}

fn system_pairs(s: &crate::store::Stored) -> Vec<Pair> {
    let m = &s.meta;
    let mut system = Vec::new();
    if let Some(d) = &m.device {
        system.extend([
            pair("GPU", d.name.clone()),
            pair("compute capability", d.compute_capability.clone()),
            pair("SMs", d.sm_count.to_string()),
            pair("L2 cache", bytes_text(d.l2_bytes as u64)),
            pair("memory", bytes_text(d.mem_bytes as u64)),
            pair(
                "max SM / memory clock",
                format!("{} / {} MHz", d.sm_clock_max_mhz, d.mem_clock_max_mhz),
            ),
            pair(
                "driver",
                d.driver_version
                    .clone()
                    .unwrap_or_else(|| "unknown (no NVML)".into()),
            ),
            pair("CUDA driver API", d.cuda_driver_version.clone()),
            pair("NVRTC", d.nvrtc_version.clone()),
        ]);
    }
    system.extend([
        pair(
            "host CPU",
            format!("{} ({} cores)", m.host.cpu, m.host.cores),
        ),
        pair("OS", format!("{} (kernel {})", m.host.os, m.host.kernel)),
    ]);
    system
}

/// The trust line, wrapped where it would pass the report's longest line after its
/// `**Trust:** ` label (many verdicts of several kinds make a long sentence).
fn trust_line(line: String) -> String {
    match "**Trust:** ".len() + line.chars().count() > format::MAX_LINE {
        true => format::wrap(&line),
        false => line,
    }
}
