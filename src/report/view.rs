//! What a template sees: the stored run turned into tables of formatted values.

use super::clocks::{self, ClockSummary, Window};
use super::format;
use super::plots::{self, Line};
use crate::experiment::{point_label, ClockPolicy, NumExpr, Point, Unit, WarmupKernel};
use crate::plan::{Cell, Role};
use crate::protocol::{CellRecord, Status, TelemetryPoint};
use crate::results::Stored;
use crate::summary::{self, Stats};
use anyhow::Result;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write;

#[derive(Serialize)]
pub struct View {
    experiment: ExperimentView,
    run: Vec<Pair>,
    system: Vec<Pair>,
    variants: Vec<VariantView>,
    tables: Vec<Table>,
    floor: Vec<FloorRow>,
    overhead: Option<OverheadView>,
    stats: Vec<StatRow>,
    cells: Vec<CellRow>,
    failures: Vec<FailureRow>,
    notes: Option<String>,
    clock_tolerance_pct: f64,
    clock_policy: String,
    complete: bool,
    plots: Plots,
    phases: Vec<super::phases::PhaseTable>,
    bias: Vec<super::bias::BiasTable>,
    comparison: Option<super::compare::Comparison>,
    #[serde(skip)]
    summary: Vec<(String, &'static str, Stats)>,
    /// Plot files to write beside the report: (path relative to it, SVG text).
    #[serde(skip)]
    pub plot_files: Vec<(String, String)>,
}

/// Plots the template may show, by kind; each has a title and a path relative to the report.
#[derive(Serialize, Default)]
struct Plots {
    medians: Vec<PlotRef>,
    bias: Vec<PlotRef>,
    probe: Vec<PlotRef>,
    differences: Vec<PlotRef>,
    series: Vec<PlotRef>,
}

#[derive(Serialize)]
struct PlotRef {
    title: String,
    path: String,
}

/// Cells with at least this many timed launches get a time-series plot.
const SERIES_MIN_SAMPLES: usize = 2000;
/// A time-series plot shows at most this many samples (every k-th), to stay readable and small.
const SERIES_MAX_POINTS: usize = 10_000;

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
struct VariantView {
    name: String,
    description: String,
    timer: String,
    method: String,
    /// The worker processes' environment and how the kernel was compiled.
    process: String,
    headline: String,
}

#[derive(Serialize)]
struct Table {
    kernel: String,
    parameters: String,
    columns: Vec<String>,
    diff_columns: Vec<String>,
    published_columns: Vec<String>,
    rows: Vec<TableRow>,
}

#[derive(Serialize)]
struct TableRow {
    point: String,
    values: Vec<String>,
    diffs: Vec<String>,
    published: Vec<String>,
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
}

#[derive(Serialize)]
struct CellRow {
    cell: String,
    runs: String,
    check: String,
    compile_ms: String,
    module_load_ms: String,
    sm_mhz: String,
    mem_mhz: String,
    power_w: String,
    temp_c: String,
    /// Correlation of sample time with the SM clock it ran under (first run).
    clock_correlation: String,
    /// What the timer itself reported: a wait kernel's length, CUPTI's launch latency.
    timer_notes: String,
    flags: String,
}

#[derive(Serialize)]
struct FailureRow {
    cell: String,
    process: u32,
    error: String,
}

/// Statistics key of a cell's phase.
fn key(cell: usize, first: bool) -> u32 {
    (cell as u32) * 2 + u32::from(!first)
}

impl View {
    pub fn build(s: &Stored) -> Result<View> {
        let keys = s
            .samples
            .cell
            .iter()
            .zip(&s.samples.first)
            .map(|(c, f)| key(*c as usize, *f))
            .collect();
        let stats = summary::summarize(keys, s.samples.time_ns.clone())?;
        let exp = &s.experiment;
        let unit = exp.report.unit;
        let mut series: Series = HashMap::new();
        for t in &s.telemetry {
            series
                .entry((t.cell, t.process))
                .or_default()
                .push(t.point.clone());
        }
        let mut launches: HashMap<(u32, u32), Vec<(f64, f64)>> = HashMap::new();
        for i in 0..s.samples.cell.len() {
            let key = (s.samples.cell[i], s.samples.process[i]);
            launches
                .entry(key)
                .or_default()
                .push((s.samples.start_us[i], s.samples.time_ns[i]));
        }
        let expect = match exp.clocks {
            ClockPolicy::Expect(mhz) | ClockPolicy::Lock(mhz) => Some(mhz),
            ClockPolicy::Observe => None,
        };
        let windows: Windows = launches
            .iter()
            .filter_map(|(k, v)| Some((*k, Window::of(v.iter().copied())?)))
            .collect();
        let launch_lists = launches;
        let mut by_cell: HashMap<usize, Vec<&CellRecord>> = HashMap::new();
        for r in &s.records {
            by_cell.entry(r.cell).or_default().push(r);
        }
        let headline = |c: &Cell| stats.get(&key(c.index, c.headline_phase() == "first"));
        // The headline median of kernel k's cell at a point under a variant.
        let median_at = |k: usize, p: &Point, variant: &str| {
            s.plan
                .cells
                .iter()
                .find(|c| c.kernel == Some(k) && c.variant == variant && c.point == *p)
                .and_then(headline)
                .map(|st| st.median)
        };
        let has = |c: &Cell, status: Status| {
            by_cell
                .get(&c.index)
                .is_some_and(|rs| rs.iter().any(|r| r.status == status))
        };
        let shown = |c: &Cell| match headline(c) {
            Some(st) => format::time(st.median, unit),
            None if has(c, Status::Failed) => "failed".into(),
            None if has(c, Status::Skipped) => "skipped".into(),
            None => "not run".into(),
        };

        let variants = exp
            .variants
            .iter()
            .map(|v| {
                let m = &v.method;
                let warmup = match (&m.warmup, m.warmup_kernel) {
                    (NumExpr::Int(0), _) => "no warm-up".to_string(),
                    (w, WarmupKernel::Same) => {
                        format!("warm-up {} launches of the same kernel", expr_text(w))
                    }
                    (w, WarmupKernel::Empty) => {
                        format!("warm-up {} launches of an empty kernel", expr_text(w))
                    }
                };
                let process = if m.fresh_process {
                    format!("a fresh process per run, {} runs", expr_text(&m.processes))
                } else {
                    "one shared process".into()
                };
                let (samples, headline) = match &m.samples {
                    NumExpr::Int(0) => (
                        "first launch only".to_string(),
                        if m.fresh_process {
                            "median of the first launch of each process"
                        } else {
                            "the first launch"
                        },
                    ),
                    n => (
                        format!("first launch + {} samples", expr_text(n)),
                        "median of the samples after the first launch",
                    ),
                };
                let mut samples = samples;
                match (&m.launches, m.graph) {
                    (NumExpr::Int(1), false) => {}
                    (n, true) => samples += &format!(
                        "; each timed region replays a CUDA graph of {} launches (hot by nature), read per launch",
                        expr_text(n)
                    ),
                    (n, false) => samples += &format!(
                        "; each timed region holds {} launches back to back (hot by nature), read per launch",
                        expr_text(n)
                    ),
                }
                if m.rotate != NumExpr::Int(1) {
                    samples += &format!(
                        "; the timed samples use {} sets of the kernel's buffers in turn",
                        expr_text(&m.rotate)
                    );
                }
                if let Some(st) = &m.stop {
                    samples += &format!(
                        "; stops early once the RSD is under {}% with at least {} samples and {} of GPU time, or after {}",
                        st.rsd_pct,
                        st.min_samples,
                        format::time(st.min_gpu_ns, Unit::Auto),
                        humantime::format_duration(st.timeout)
                    );
                }
                if m.order != crate::experiment::Order::Sequential {
                    samples += &format!(
                        "; samples split over {} rounds, {} with the other such variants at its point",
                        expr_text(&m.rounds),
                        if m.order == crate::experiment::Order::Shuffled {
                            "shuffled"
                        } else {
                            "interleaved"
                        }
                    );
                }
                if m.cupti_collect && m.timer != crate::experiment::TimerKind::Cupti {
                    samples += "; CUPTI collects kernel records during the samples";
                }
                if let crate::experiment::Queue::Saturate { wait_us } = &m.queue {
                    samples += &match wait_us {
                        Some(w) => format!("; a {} µs wait kernel queued before each timed region", expr_text(w)),
                        None => "; a wait kernel (sized from the measured enqueue cost) queued before each timed region".into(),
                    };
                }
                VariantView {
                    name: v.name.clone(),
                    description: v.description.clone(),
                    timer: m.timer.describe().into(),
                    method: format!("{warmup}; {samples}; {process}"),
                    process: format!(
                        "environment: {}; {}",
                        m.env.describe(),
                        m.compile.describe()
                    ),
                    headline: headline.into(),
                }
            })
            .collect();

        let mut tables = Vec::new();
        for (k, kernel) in exp.kernels.iter().enumerate() {
            let cells: Vec<&Cell> = s
                .plan
                .cells
                .iter()
                .filter(|c| c.kernel == Some(k))
                .collect();
            let diffs = &exp.report.differences;
            let rows = exp
                .points()
                .iter()
                .map(|p| {
                    let at = |variant: &str| {
                        cells
                            .iter()
                            .find(|c| c.point == *p && c.variant == variant)
                            .copied()
                    };
                    let median = |variant: &str| at(variant).and_then(headline).map(|st| st.median);
                    let label = point_label(p);
                    TableRow {
                        values: exp
                            .variants
                            .iter()
                            .map(|v| at(&v.name).map_or("–".into(), shown))
                            .collect(),
                        diffs: diffs
                            .iter()
                            .map(|(v, b)| match (median(v), median(b)) {
                                (Some(v), Some(b)) => format::percent((v - b) / b * 100.0),
                                _ => "–".into(),
                            })
                            .collect(),
                        published: exp
                            .report
                            .published
                            .iter()
                            .map(|pb| {
                                pb.values
                                    .iter()
                                    .find(|(l, _)| *l == label)
                                    .map_or("–".into(), |(_, v)| format::published(*v, pb.unit))
                            })
                            .collect(),
                        point: label,
                    }
                })
                .collect();
            tables.push(Table {
                kernel: kernel.name.clone(),
                parameters: exp.parameter_names(),
                diff_columns: diffs.iter().map(|(v, b)| format!("{v} vs {b}")).collect(),
                columns: exp.variants.iter().map(|v| v.name.clone()).collect(),
                published_columns: exp
                    .report
                    .published
                    .iter()
                    .map(|p| format!("{}: {}", p.source, p.variant))
                    .collect(),
                rows,
            });
        }

        let floor = s
            .plan
            .cells
            .iter()
            .filter(|c| c.role == Role::Floor)
            .filter_map(|c| {
                let st = stats.get(&key(c.index, false))?;
                Some(FloorRow {
                    timer: c.knobs.timer.key().into(),
                    description: c.knobs.timer.describe().into(),
                    median: format::time(st.median, Unit::Auto),
                    p95: format::time(st.p95, Unit::Auto),
                    samples: st.count,
                })
            })
            .collect();
        let overhead = s
            .records
            .iter()
            .find_map(|r| r.overhead.as_ref())
            .map(|o| OverheadView {
                harness: format::time(o.harness_wall_ns, Unit::Auto),
                bare: format::time(o.bare_wall_ns, Unit::Auto),
                difference: format::time(o.harness_wall_ns - o.bare_wall_ns, Unit::Auto),
                bare_events: format::time(o.bare_events_median_ns, Unit::Auto),
            });

        let mut stat_rows = Vec::new();
        let mut summary = Vec::new();
        for c in &s.plan.cells {
            for (first, phase) in [(true, "first"), (false, "steady")] {
                let Some(st) = stats.get(&key(c.index, first)) else {
                    continue;
                };
                let t = |v: f64| format::time(v, Unit::Auto);
                stat_rows.push(StatRow {
                    cell: c.id.clone(),
                    phase: phase.into(),
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
                });
                summary.push((c.id.clone(), phase, *st));
            }
        }

        let probe_of = |r: &CellRecord| r.probe_mhz.map(|(b, a)| (b + a) / 2.0);
        let probe = ProbeScale {
            median_mhz: summary::median(s.records.iter().filter_map(probe_of).collect()),
            tolerance_pct: exp.telemetry.probe_tolerance_pct,
        };
        let cells = s
            .plan
            .cells
            .iter()
            .filter_map(|c| {
                let rs = by_cell.get(&c.index)?;
                let clocks = cell_clocks(
                    c,
                    rs,
                    &series,
                    &windows,
                    exp.telemetry.clock_tolerance_pct,
                    expect,
                );
                let key = (c.index as u32, 0);
                let r = launch_lists
                    .get(&key)
                    .zip(series.get(&key))
                    .and_then(|(l, s)| clocks::time_clock_correlation(l, s));
                Some(cell_row(c, rs, &clocks, r, &probe))
            })
            .collect();
        let failures = s
            .records
            .iter()
            .filter(|r| r.status != Status::Ok)
            .map(|r| FailureRow {
                cell: r.id.clone(),
                process: r.process,
                error: r.error.clone().unwrap_or_default(),
            })
            .collect();

        let m = &s.meta;
        let mut run = vec![
            pair("experiment file", m.experiment_path.display().to_string()),
            pair("experiment sha256", m.experiment_sha256.clone()),
            pair(
                "git commit",
                m.git.as_ref().map_or("not a git checkout".into(), |g| {
                    format!(
                        "{}{}",
                        g.commit,
                        if g.dirty {
                            " (with uncommitted changes)"
                        } else {
                            ""
                        }
                    )
                }),
            ),
            pair("runner", m.runner_version.clone()),
            pair("started (UTC)", m.started_utc.clone()),
            pair(
                "finished (UTC)",
                m.finished_utc
                    .clone()
                    .unwrap_or_else(|| "did not finish".into()),
            ),
        ];
        if let Some(st) = &m.startup {
            run.push(pair(
                "first worker's CUDA start-up",
                format!(
                    "cuInit {:.1} ms, primary context {:.1} ms",
                    st.driver_init_ms, st.context_ms
                ),
            ));
        }
        let mut system = Vec::new();
        if let Some(d) = &m.device {
            system.extend([
                pair("GPU", d.name.clone()),
                pair("compute capability", d.compute_capability.clone()),
                pair("SMs", d.sm_count.to_string()),
                pair("L2 cache", format::bytes(d.l2_bytes)),
                pair("memory", format::bytes(d.mem_bytes)),
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

        let mut plots = Plots::default();
        let mut plot_files = Vec::new();
        let mut add = |list: &mut Vec<PlotRef>, title: String, path: String, svg: String| {
            if !svg.is_empty() {
                list.push(PlotRef {
                    title,
                    path: path.clone(),
                });
                plot_files.push((path, svg));
            }
        };
        if let [(param, _)] = exp.params.as_slice() {
            for (k, kernel) in exp.kernels.iter().enumerate() {
                let at = |variant: &str, p: &Point| median_at(k, p, variant);
                let points = exp.points();
                let medians: Vec<Line> = exp
                    .variants
                    .iter()
                    .map(|v| Line {
                        name: v.name.clone(),
                        points: points
                            .iter()
                            .filter_map(|p| Some((p[0].1 as f64, at(&v.name, p)? / 1e3)))
                            .collect(),
                    })
                    .collect();
                let title = format!("{}: median per variant", kernel.name);
                let svg = plots::lines(&title, param, "median (µs)", &medians, false)
                    .map_err(anyhow::Error::msg)?;
                add(
                    &mut plots.medians,
                    title,
                    format!("plots/{}-median.svg", kernel.name),
                    svg,
                );
                let diffs: Vec<Line> = exp
                    .report
                    .differences
                    .iter()
                    .map(|(v, b)| Line {
                        name: format!("{v} vs {b}"),
                        points: points
                            .iter()
                            .filter_map(|p| {
                                Some((p[0].1 as f64, (at(v, p)? - at(b, p)?) / at(b, p)? * 100.0))
                            })
                            .collect(),
                    })
                    .collect();
                let title = format!("{}: relative difference of the medians", kernel.name);
                let svg = plots::lines(&title, param, "difference (%)", &diffs, false)
                    .map_err(anyhow::Error::msg)?;
                add(
                    &mut plots.differences,
                    title,
                    format!("plots/{}-difference.svg", kernel.name),
                    svg,
                );
            }
        }
        for c in &s.plan.cells {
            let key = (c.index as u32, 0);
            let Some(launches) = launch_lists
                .get(&key)
                .filter(|l| l.len() >= SERIES_MIN_SAMPLES)
            else {
                continue;
            };
            let step = launches.len().div_ceil(SERIES_MAX_POINTS);
            let samples: Vec<(f64, f64)> = launches
                .iter()
                .step_by(step)
                .filter(|(t, _)| t.is_finite())
                .map(|(t, ns)| (t / 1e6, ns / 1e3))
                .collect();
            let clock: Vec<(f64, f64)> = series
                .get(&key)
                .map(|pts| {
                    pts.iter()
                        .filter_map(|p| Some((p.t_us / 1e6, p.reading.sm_mhz? as f64)))
                        .collect()
                })
                .unwrap_or_default();
            let shown = if step > 1 {
                format!(" (1 in {step})")
            } else {
                String::new()
            };
            let title = format!("{}: samples{shown} and SM clock over time", c.id);
            let svg = plots::series(&title, &samples, &clock).map_err(anyhow::Error::msg)?;
            add(
                &mut plots.series,
                title,
                format!("plots/cell-{}.svg", c.index),
                svg,
            );
        }

        let probe_lines: Vec<Line> = exp
            .variants
            .iter()
            .map(|v| Line {
                name: v.name.clone(),
                points: s
                    .records
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| s.plan.cells[r.cell].variant == v.name)
                    .filter_map(|(i, r)| Some((i as f64, probe_of(r)?)))
                    .collect(),
            })
            .filter(|l| !l.points.is_empty())
            .collect();
        if !probe_lines.is_empty() {
            let title = "probed SM clock of each cell run, in run order".to_string();
            let svg = plots::lines(&title, "cell run", "SM clock (MHz)", &probe_lines, false)
                .map_err(anyhow::Error::msg)?;
            add(&mut plots.probe, title, "plots/clock-probe.svg".into(), svg);
        }
        let (bias, bias_plot) = super::bias::build(exp, median_at).map_err(anyhow::Error::msg)?;
        if let Some(svg) = bias_plot {
            add(
                &mut plots.bias,
                "bias of each method against its reference".into(),
                "plots/bias.svg".into(),
                svg,
            );
        }
        let (phases, phase_plots) =
            super::phases::build(s, |cell| stats.get(&key(cell, false)).map(|st| st.median))
                .map_err(anyhow::Error::msg)?;
        plot_files.extend(phase_plots);

        Ok(View {
            plots,
            plot_files,
            phases,
            bias,
            comparison: None,
            experiment: ExperimentView {
                name: exp.name.clone(),
                title: exp.title.clone(),
                description: exp.description.trim().to_string(),
                path: m.experiment_path.display().to_string(),
                text: exp.text.trim_end().to_string(),
            },
            run,
            system,
            variants,
            tables,
            floor,
            overhead,
            stats: stat_rows,
            cells,
            failures,
            notes: s.notes.clone(),
            clock_tolerance_pct: exp.telemetry.clock_tolerance_pct,
            clock_policy: crate::clock_lock::describe(exp.clocks),
            complete: m.complete,
            summary,
        })
    }

    /// `summary.csv`: the statistics table in nanoseconds, for other tools.
    pub fn set_comparison(&mut self, c: super::compare::Comparison) {
        self.comparison = Some(c);
    }

    pub fn summary_csv(&self) -> String {
        let mut out = String::from("cell,phase,count,min_ns,median_ns,mean_ns,std_ns,p25_ns,p75_ns,p95_ns,p99_ns,max_ns,cv,iqr_ns\n");
        for (cell, phase, s) in &self.summary {
            let _ = writeln!(
                out,
                "{cell},{phase},{},{},{},{},{},{},{},{},{},{},{},{}",
                s.count,
                s.min,
                s.median,
                s.mean,
                s.std,
                s.p25,
                s.p75,
                s.p95,
                s.p99,
                s.max,
                s.cv,
                s.iqr
            );
        }
        out
    }
}

fn expr_text(e: &NumExpr) -> String {
    match e {
        NumExpr::Int(i) => i.to_string(),
        NumExpr::Float(f) => f.to_string(),
        NumExpr::Expr(s) => format!("`{s}`"),
    }
}

/// One row per cell: its checks, start-up costs and the telemetry range over its runs.
/// The run's median probed clock, and how far from it a cell may be before it is flagged.
struct ProbeScale {
    median_mhz: Option<f64>,
    tolerance_pct: f64,
}

impl ProbeScale {
    /// The flag of a cell whose probed clock (mean of before and after) strays too far.
    fn flag(&self, rs: &[&CellRecord]) -> Option<String> {
        let median = self.median_mhz?;
        let worst = rs
            .iter()
            .filter_map(|r| r.probe_mhz.map(|(b, a)| (b + a) / 2.0))
            .max_by(|x, y| (x - median).abs().total_cmp(&(y - median).abs()))?;
        let off = (worst - median) / median * 100.0;
        (off.abs() > self.tolerance_pct).then(|| {
            format!(
                "probed SM clock {worst:.0} MHz, {} from the run's median {median:.0} MHz",
                format::percent(off)
            )
        })
    }
}

/// How far the GPU's timer may stray from the host clock over a cell before it is flagged:
/// well above what the host's late notice of a probe's end can fake over 0.1 s.
const TIMER_RATE_TOLERANCE_PCT: f64 = 0.1;

/// The flag of a cell over which the GPU's timer did not keep the host's time: every
/// GPU-timed reading of it (events, CUPTI, the profiler) is off by as much.
fn timer_rate_flag(rs: &[&CellRecord]) -> Option<String> {
    let worst = rs
        .iter()
        .filter_map(|r| r.probe_timer_rate)
        .max_by(|x, y| (x - 1.0).abs().total_cmp(&(y - 1.0).abs()))?;
    let off = (worst - 1.0) * 100.0;
    (off.abs() > TIMER_RATE_TOLERANCE_PCT).then(|| {
        format!(
            "GPU timer ran {} against the host clock",
            format::percent(off)
        )
    })
}

/// The wait kernel's length, CUPTI's launch latency and the probed clock, where a cell has them.
fn timer_notes(rs: &[&CellRecord]) -> String {
    let mut notes = Vec::new();
    let probes = rs
        .iter()
        .filter_map(|r| r.probe_mhz)
        .flat_map(|(b, a)| [b, a]);
    if let Some((lo, hi)) = clocks::range(probes) {
        notes.push(format!("probed SM clock {lo:.0}–{hi:.0} MHz"));
    }
    if let Some((lo, hi)) = clocks::range(rs.iter().filter_map(|r| r.probe_timer_rate)) {
        // Three decimals: a timer that keeps time reads within a few thousandths of a percent.
        notes.push(format!(
            "GPU timer {:+.3}% to {:+.3}% against the host clock",
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        ));
    }
    let stops: Vec<&str> = rs.iter().filter_map(|r| r.stopped.as_deref()).collect();
    match stops.as_slice() {
        [] => {}
        [one] => notes.push(format!("stopped: {one}")),
        many => notes.push(format!("stopped ({} runs), first: {}", many.len(), many[0])),
    }
    if let Some(ns) = summary::median(rs.iter().filter_map(|r| r.sample_wall_ns).collect()) {
        notes.push(format!(
            "{} of host time per sample",
            format::time(ns, Unit::Auto)
        ));
    }
    if let Some(q) = rs.iter().find_map(|r| r.queue.as_ref()) {
        notes.push(format!(
            "wait kernel {}",
            format::time(q.wait_ns as f64, Unit::Auto)
        ));
    }
    let latency = summary::median(
        rs.iter()
            .filter_map(|r| r.cupti.as_ref()?.submitted_to_start_median_ns)
            .collect(),
    );
    if let Some(ns) = latency {
        notes.push(format!(
            "CUPTI submitted→start {}",
            format::time(ns, Unit::Auto)
        ));
    }
    if notes.is_empty() {
        "–".into()
    } else {
        notes.join("; ")
    }
}

fn cell_row(
    c: &Cell,
    rs: &[&CellRecord],
    clocks: &ClockSummary,
    correlation: Option<f64>,
    probe: &ProbeScale,
) -> CellRow {
    let ok = rs.iter().filter(|r| r.status == Status::Ok).count();
    let runs = if ok == rs.len() {
        format!("{ok} ok")
    } else {
        format!("{ok} ok, {} failed", rs.len() - ok)
    };
    let check = rs
        .iter()
        .find_map(|r| r.check.clone())
        .unwrap_or_else(|| "–".into());
    let median_of = |f: &dyn Fn(&CellRecord) -> Option<f64>| {
        let mut v: Vec<f64> = rs.iter().filter_map(|r| f(r)).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).map_or("–".into(), |m| format!("{m:.1}"))
    };
    let range = |r: Option<(u32, u32)>| match r {
        None => "–".to_string(),
        Some((lo, hi)) if lo == hi => lo.to_string(),
        Some((lo, hi)) => format!("{lo}–{hi}"),
    };
    CellRow {
        cell: c.id.clone(),
        runs,
        check,
        compile_ms: median_of(&|r| r.compile_ms),
        module_load_ms: median_of(&|r| r.module_load_ms),
        sm_mhz: range(clocks.sm_mhz),
        mem_mhz: range(clocks.mem_mhz),
        power_w: clocks
            .mean_power_w
            .map_or("–".into(), |p| format!("{p:.0}")),
        temp_c: clocks.max_temp_c.map_or("–".into(), |t| t.to_string()),
        clock_correlation: correlation.map_or("–".into(), |r| format!("{r:+.2}")),
        timer_notes: timer_notes(rs),
        flags: {
            let mut flags = clocks.flags.clone();
            let short: u64 = rs
                .iter()
                .filter_map(|r| r.queue.as_ref())
                .map(|q| q.too_short)
                .sum();
            if short > 0 {
                flags.push(format!("wait kernel too short for {short} timed region(s)"));
            }
            flags.extend(probe.flag(rs));
            flags.extend(timer_rate_flag(rs));
            if flags.is_empty() {
                "–".into()
            } else {
                format!("⚠ {}", flags.join("; "))
            }
        },
    }
}

/// The readings of a cell's timed launches: the sampled series joined on time, or, for runs
/// recorded without a sampler, the readings at each run's start and end.
fn cell_clocks(
    c: &Cell,
    rs: &[&CellRecord],
    series: &Series,
    windows: &Windows,
    tolerance_pct: f64,
    expect: Option<u32>,
) -> ClockSummary {
    let mut points: Vec<&TelemetryPoint> = Vec::new();
    for r in rs {
        let key = (c.index as u32, r.process);
        if let (Some(s), Some(w)) = (series.get(&key), windows.get(&key)) {
            points.extend(clocks::during(s, *w));
        }
    }
    if !points.is_empty() {
        return clocks::summarize(&points, tolerance_pct, expect);
    }
    let snapshots: Vec<TelemetryPoint> = rs
        .iter()
        .flat_map(|r| [r.telemetry_start.clone(), r.telemetry_end.clone()])
        .flatten()
        .map(|reading| TelemetryPoint { t_us: 0.0, reading })
        .collect();
    clocks::summarize(&snapshots.iter().collect::<Vec<_>>(), tolerance_pct, expect)
}

/// Telemetry series and timed-launch windows, by (cell, process).
type Series = HashMap<(u32, u32), Vec<TelemetryPoint>>;
type Windows = HashMap<(u32, u32), Window>;

#[cfg(test)]
mod tests {
    use super::*;

    fn record(probe: (f64, f64)) -> CellRecord {
        let mut r = CellRecord::failed(0, "c", 0, String::new());
        r.status = Status::Ok;
        r.probe_mhz = Some(probe);
        r
    }

    #[test]
    fn a_cell_whose_probed_clock_strays_is_flagged() {
        let scale = ProbeScale {
            median_mhz: Some(1980.0),
            tolerance_pct: 0.5,
        };
        let (near, far) = (record((1975.0, 1979.0)), record((1960.0, 1962.0)));
        assert_eq!(scale.flag(&[&near]), None);
        let flag = scale.flag(&[&near, &far]).unwrap();
        assert!(
            flag.contains("1961 MHz") && flag.contains("-0.96%"),
            "{flag}"
        );
        assert_eq!(timer_notes(&[&near]), "probed SM clock 1975–1979 MHz");
    }

    #[test]
    fn a_gpu_timer_that_strays_from_the_host_clock_is_flagged() {
        let (mut kept, mut slow) = (record((1980.0, 1980.0)), record((1995.0, 1995.0)));
        kept.probe_timer_rate = Some(1.0002);
        slow.probe_timer_rate = Some(0.9925);
        assert_eq!(timer_rate_flag(&[&kept]), None);
        let flag = timer_rate_flag(&[&kept, &slow]).unwrap();
        assert!(flag.contains("-0.75%"), "{flag}");
        let notes = timer_notes(&[&kept, &slow]);
        assert!(notes.contains("GPU timer -0.750% to +0.020%"), "{notes}");
    }
}
