//! One pass over a run's samples, reducing each cell the moment the stream says it has
//! ended: its statistics per phase, its runs' windows and medians, its independent units,
//! and its first run's trace for the plot over time. Memory holds the cells still open, not
//! the run; everything after this pass reads these results, never a sample.

use super::clocks::{time_clock_correlation, Window};
use super::phase::{Phase, Series};
use super::stats::{self, Row, Table};
use crate::plan::{Headline, Plan};
use crate::protocol::TelemetryPoint;
use crate::statistics::{median, unit_values};
use crate::store::{RunSamples, SampleSink, TelemetryRow};
use std::collections::{BTreeMap, HashMap, HashSet};

/// A first run of at least this many launches is drawn over time; a shorter one says
/// little that its statistics do not.
pub const TRACE_MIN_LAUNCHES: usize = 2000;
/// At most this many of its launches are drawn (every k-th), to stay readable and small.
pub const TRACE_POINTS: usize = 10_000;
/// A run's steady samples are kept sorted, all of them up to this many, else as many evenly
/// spaced order statistics: what ranks a few readings among them (the pause test's,
/// `analysis::tells`) to a share of 1/1024 or finer.
pub const SORTED_KEPT: usize = 1025;

/// A cell's headline values (steady samples, or first launches where it takes none) as
/// independent units, for intervals and comparisons.
#[derive(Debug, Clone, PartialEq)]
pub struct Units {
    /// What one unit is: a round, a process, or a block of samples.
    pub what: String,
    pub values: Vec<f64>,
    /// The median of every headline value, all runs pooled.
    pub median: f64,
}

/// A cell's first run (process or round 0) over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// One launch drawn in `step`.
    pub step: usize,
    /// (start µs, time ns) of the drawn launches that have a start; none for a run shorter
    /// than [`TRACE_MIN_LAUNCHES`].
    pub points: Option<Vec<(f64, f64)>>,
    /// Pearson correlation of the launches' times with the SM clock each started under.
    pub clock_correlation: Option<f64>,
}

/// What the pass leaves: everything the analysis and the report take from samples.
#[derive(Default)]
pub struct Reduced {
    /// Each cell's statistics per phase.
    pub stats: Table,
    /// Telemetry by (cell, process), in time order.
    pub series: Series,
    /// The span of each run's timed launches, by (cell, process).
    pub windows: HashMap<(u32, u32), Window>,
    /// The median of each run's headline values, by (cell, process).
    pub run_medians: HashMap<(usize, u32), f64>,
    pub units: HashMap<usize, Units>,
    pub traces: HashMap<usize, Trace>,
    /// Each cell's steady samples, run by run, sorted (see [`SortedRun`]).
    pub steady_sorted: HashMap<usize, Vec<SortedRun>>,
}

/// A run's steady samples sorted, all of them up to [`SORTED_KEPT`], else as many evenly
/// spaced order statistics: what ranks a run's pauses among its own samples.
#[derive(Debug, Clone, PartialEq)]
pub struct SortedRun {
    pub process: u32,
    /// The run's steady samples, all of them.
    pub count: usize,
    pub sorted: Vec<f64>,
}

/// What the pass needs of a planned cell.
struct Facts {
    id: String,
    /// Launches a sample spans (a batch or graph read per launch).
    launches: u64,
    headline_first: bool,
    /// What a run is to it: a fresh process, or a round of a shared one.
    run_unit: &'static str,
}

/// A stretch as taken, until its cell ends.
struct HeldRun {
    process: u32,
    first: bool,
    time_ns: Vec<f64>,
    start_us: Vec<f64>,
}

/// The [`SampleSink`] that reduces cells as they end; [`Reducer::finish`] gives the results.
#[derive(Default)]
pub struct Reducer {
    facts: Vec<Facts>,
    open: HashMap<u32, Vec<HeldRun>>,
    /// The statistics of the cells that have ended, until the stream does.
    rows: Vec<Row>,
    reduced: Reduced,
    failure: Option<polars::error::PolarsError>,
}

impl Reducer {
    /// The results, once the stream has ended (every cell done).
    pub fn finish(mut self) -> anyhow::Result<Reduced> {
        debug_assert!(
            self.open.is_empty(),
            "every cell is done when the stream ends"
        );
        if let Some(e) = self.failure {
            return Err(e.into());
        }
        self.reduced.stats = Table::of(self.rows)?;
        Ok(self.reduced)
    }

    /// Reduces cell `cell` from its stretches in stored order, a step at a time, so that
    /// no step's copies outlive it.
    fn reduce(&mut self, cell: u32, taken: Vec<HeldRun>) -> polars::error::PolarsResult<()> {
        let index = cell as usize;
        let facts = &self.facts[index];
        let r = &mut self.reduced;
        for t in &taken {
            let launches = t.start_us.iter().copied().zip(t.time_ns.iter().copied());
            if let Some(w) = Window::of(launches, facts.launches) {
                (r.windows.entry((cell, t.process)))
                    .and_modify(|earlier| *earlier = earlier.union(w))
                    .or_insert(w);
            }
        }
        let series = r.series.get(&(cell, 0)).map_or(&[][..], Vec::as_slice);
        if let Some(t) = first_run_trace(&taken, series) {
            r.traces.insert(index, t);
        }
        let headline = headline_runs(&taken, facts.headline_first);
        for (&process, values) in &headline {
            if let Some(m) = median(values.clone()) {
                r.run_medians.insert((index, process), m);
            }
        }
        if !headline.is_empty() {
            // One run's median is the pooled one.
            let pooled = match headline.len() {
                1 => {
                    (headline.keys().next()).and_then(|&p| r.run_medians.get(&(index, p)).copied())
                }
                _ => median(headline.values().flatten().copied().collect()),
            };
            let (what, values) = unit_values(facts.run_unit, headline);
            let median = pooled.unwrap_or(f64::NAN);
            r.units.insert(
                index,
                Units {
                    what,
                    values,
                    median,
                },
            );
        }
        for (phase, first) in [(Phase::First, true), (Phase::Steady, false)] {
            let times: Vec<f64> = (taken.iter().filter(|t| t.first == first))
                .flat_map(|t| t.time_ns.iter().copied())
                .collect();
            if !first && !times.is_empty() {
                self.reduced
                    .steady_sorted
                    .insert(index, sorted_runs(&taken));
            }
            if !times.is_empty() {
                self.rows.push(Row {
                    cell,
                    id: facts.id.clone(),
                    phase,
                    stats: stats::of(times)?,
                });
            }
        }
        Ok(())
    }
}

/// Each run's steady samples sorted ([`sorted_kept`]), in the order of the runs.
fn sorted_runs(taken: &[HeldRun]) -> Vec<SortedRun> {
    let mut runs: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for t in taken.iter().filter(|t| !t.first) {
        runs.entry(t.process).or_default().extend(&t.time_ns);
    }
    (runs.into_iter())
        .map(|(process, times)| SortedRun {
            process,
            count: times.len(),
            sorted: sorted_kept(&times),
        })
        .collect()
}

/// `times` sorted: all of them, or [`SORTED_KEPT`] evenly spaced order statistics (the
/// first and the last among them).
fn sorted_kept(times: &[f64]) -> Vec<f64> {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n > SORTED_KEPT {
        true => (0..SORTED_KEPT)
            .map(|i| sorted[i * (n - 1) / (SORTED_KEPT - 1)])
            .collect(),
        false => sorted,
    }
}

/// A cell's headline values (steady samples, or first launches where it takes none) by run.
fn headline_runs(taken: &[HeldRun], headline_first: bool) -> BTreeMap<u32, Vec<f64>> {
    let mut runs: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for t in taken.iter().filter(|t| t.first == headline_first) {
        (runs.entry(t.process).or_default()).extend_from_slice(&t.time_ns);
    }
    runs
}

/// The trace of a cell's first run (process or round 0), where it has one.
fn first_run_trace(taken: &[HeldRun], series: &[TelemetryPoint]) -> Option<Trace> {
    let launches: Vec<(f64, f64)> = (taken.iter().filter(|t| t.process == 0))
        .flat_map(|t| t.start_us.iter().copied().zip(t.time_ns.iter().copied()))
        .collect();
    (!launches.is_empty()).then(|| trace(&launches, series))
}

/// A run's launches over time, thinned to at most [`TRACE_POINTS`], and how its times
/// follow the SM clock.
fn trace(launches: &[(f64, f64)], series: &[TelemetryPoint]) -> Trace {
    let step = launches.len().div_ceil(TRACE_POINTS).max(1);
    Trace {
        step,
        points: (launches.len() >= TRACE_MIN_LAUNCHES).then(|| {
            (launches.iter().step_by(step))
                .filter(|(t, _)| t.is_finite())
                .copied()
                .collect()
        }),
        clock_correlation: time_clock_correlation(launches, series),
    }
}

impl SampleSink for Reducer {
    fn begin(&mut self, plan: &Plan, telemetry: &[TelemetryRow]) {
        let facts = (plan.cells.iter())
            .map(|c| Facts {
                id: c.id.clone(),
                launches: c.knobs.launches.count(),
                headline_first: c.headline() == Headline::First,
                run_unit: if c.knobs.process.fresh.is_some() {
                    "process"
                } else {
                    "round"
                },
            })
            .collect();
        let mut series: Series = HashMap::new();
        for t in telemetry {
            (series.entry((t.cell, t.process)).or_default()).push(t.point.clone());
        }
        *self = Reducer {
            facts,
            reduced: Reduced {
                series,
                ..Reduced::default()
            },
            ..Reducer::default()
        };
    }

    fn stretch(&mut self, mut s: RunSamples) {
        // Kept until the cell ends: without the spare room its reading grew into.
        s.time_ns.shrink_to_fit();
        s.start_us.shrink_to_fit();
        (self.open.entry(s.cell).or_default()).push(HeldRun {
            process: s.process,
            first: s.first,
            time_ns: s.time_ns,
            start_us: s.start_us,
        });
    }

    fn done(&mut self, cell: u32) {
        let Some(taken) = self.open.remove(&cell) else {
            return;
        };
        if let Err(e) = self.reduce(cell, taken) {
            self.failure.get_or_insert(e);
        }
    }

    fn leave_out(&mut self, cells: &HashSet<u32>) {
        let kept = |c: u32| !cells.contains(&c);
        self.rows.retain(|r| kept(r.cell));
        let r = &mut self.reduced;
        r.series.retain(|(c, _), _| kept(*c));
        r.windows.retain(|(c, _), _| kept(*c));
        r.run_medians.retain(|(c, _), _| kept(*c as u32));
        r.units.retain(|c, _| kept(*c as u32));
        r.traces.retain(|c, _| kept(*c as u32));
        r.steady_sorted.retain(|c, _| kept(*c as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{read::MultiGzDecoder, write::GzEncoder, Compression};
    use std::io::{Read, Write};
    use std::path::Path;

    /// reports/statistics with its samples' stretches stored in reverse: each cell's
    /// samples after the later cells'.
    fn reversed_statistics_run() -> tempfile::TempDir {
        let from = Path::new("reports/statistics");
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "run.json",
            "experiment.toml",
            "cells.jsonl",
            "telemetry.csv.gz",
        ] {
            std::fs::copy(from.join(f), dir.path().join(f)).unwrap();
        }
        let mut text = String::new();
        (MultiGzDecoder::new(std::fs::File::open(from.join("samples.csv.gz")).unwrap()))
            .read_to_string(&mut text)
            .unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        let at = |name: &str| header.split(',').position(|c| c == name).unwrap();
        let key_of = |line: &str| {
            let f: Vec<&str> = line.split(',').collect();
            [at("cell"), at("process"), at("phase")].map(|i| f[i].to_string())
        };
        let mut stretches: Vec<([String; 3], Vec<&str>)> = Vec::new();
        for line in lines {
            let key = key_of(line);
            match stretches.last_mut() {
                Some((k, rows)) if *k == key => rows.push(line),
                _ => stretches.push((key, vec![line])),
            }
        }
        stretches.reverse();
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        writeln!(gz, "{header}").unwrap();
        for (_, rows) in &stretches {
            for r in rows {
                writeln!(gz, "{r}").unwrap();
            }
        }
        std::fs::write(dir.path().join("samples.csv.gz"), gz.finish().unwrap()).unwrap();
        dir
    }

    #[test]
    fn a_folder_stored_out_of_its_records_order_reads_the_same() {
        let (_, stored) = crate::analysis::load(Path::new("reports/statistics")).unwrap();
        let dir = reversed_statistics_run();
        let (_, reversed) = crate::analysis::load(dir.path()).unwrap();
        assert_eq!(stored.stats.iter().count(), 10, "5 cells, first and steady");
        let keys = |t: &Table| t.iter().map(|(c, p, _)| (c, p)).collect::<Vec<_>>();
        assert_eq!(
            keys(&stored.stats),
            keys(&reversed.stats),
            "both in the plan's order"
        );
        for (c, p, a) in stored.stats.iter() {
            let b = reversed.stats.get(c, p).unwrap();
            // The order of a cell's phases changed, not the samples of each.
            assert_eq!(
                (a.count, a.median, a.p99, a.max),
                (b.count, b.median, b.p99, b.max)
            );
        }
        assert_eq!(stored.units, reversed.units);
        assert_eq!(stored.run_medians, reversed.run_medians);
        assert_eq!(stored.windows, reversed.windows);
    }

    #[test]
    fn steady_samples_are_kept_sorted_whole_or_as_evenly_spaced_order_statistics() {
        let few = [3.0, 1.0, 2.0];
        assert_eq!(sorted_kept(&few), vec![1.0, 2.0, 3.0]);
        // 10,001 samples 0..=10000, shuffled by a stride: 1025 kept, the ends among them.
        let many: Vec<f64> = (0..10_001u32)
            .map(|i| f64::from(i * 7919 % 10_001))
            .collect();
        let kept = sorted_kept(&many);
        assert_eq!(kept.len(), SORTED_KEPT);
        assert_eq!((kept[0], kept[SORTED_KEPT - 1]), (0.0, 10_000.0));
        assert!(kept.windows(2).all(|w| (w[1] - w[0] - 9.77).abs() < 1.0));
    }
}
