//! Per-cell statistics from the stored samples, computed with polars' (eager) reductions,
//! and the run's table of them: a polars frame that `summary.csv`, the report's statistics
//! and every lookup of a cell's statistics read. Percentiles interpolate linearly and the
//! standard deviation divides by n, as the post does.

use super::phase::Phase;
use crate::statistics::{interval_pct, median_interval, shortest_half, step_quartile};
use polars::prelude::*;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Stats {
    pub count: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
    /// Population standard deviation (over n).
    pub std: f64,
    pub p25: f64,
    pub p75: f64,
    pub p95: f64,
    pub p99: f64,
    /// Coefficient of variation: std / mean.
    pub cv: f64,
    /// Interquartile range: p75 - p25.
    pub iqr: f64,
    /// The shortest interval holding half the samples (`statistics::shortest_half`).
    pub shortest_half: f64,
    /// The upper quartile of the steps between successive samples (`statistics::step_quartile`).
    pub step_p75: f64,
    /// How precise the median is: its distribution-free 95% interval's wider side, as a
    /// percentage of it (NaN for fewer than 6 samples, where no such interval exists).
    pub median_ci_pct: f64,
}

/// Polars' reductions over one group's samples: the sums in the samples' order, the
/// quantiles over one sorted copy (flagged sorted, so that no quantile sorts again).
pub fn of(times: Vec<f64>) -> PolarsResult<Stats> {
    let f = |s: PolarsResult<Scalar>| -> PolarsResult<f64> {
        Ok(s?.value().extract::<f64>().unwrap_or(f64::NAN))
    };
    let mut ascending = times.clone();
    ascending.sort_unstable_by(f64::total_cmp);
    let median_ci_pct = match median_interval(&mut ascending.clone()) {
        Some(interval @ (_, mid, _)) if mid != 0.0 => interval_pct(interval),
        _ => f64::NAN,
    };
    let (shortest_half, step_p75) = (shortest_half(&ascending), step_quartile(&times));
    let c = Column::new("t".into(), times);
    let mut sorted = Series::new("t".into(), ascending);
    sorted.set_sorted_flag(polars::series::IsSorted::Ascending);
    let q = |p| f(sorted.quantile_reduce(p, QuantileMethod::Linear));
    let (mean, std, p25, p75) = (f(c.mean_reduce())?, f(c.std_reduce(0))?, q(0.25)?, q(0.75)?);
    Ok(Stats {
        count: c.len() as u64,
        min: f(c.min_reduce())?,
        max: f(c.max_reduce())?,
        mean,
        median: q(0.5)?,
        std,
        p25,
        p75,
        p95: q(0.95)?,
        p99: q(0.99)?,
        cv: std / mean,
        iqr: p75 - p25,
        shortest_half,
        step_p75,
        median_ci_pct,
    })
}

/// A column of the table, as `summary.csv` heads it, with the statistic it holds.
type Measure = (&'static str, fn(&Stats) -> f64);

/// The table's columns in `summary.csv`'s order (nanoseconds, except `cv` and the median's
/// interval, a percentage).
const MEASURES: [Measure; 14] = [
    ("min_ns", |s| s.min),
    ("median_ns", |s| s.median),
    ("mean_ns", |s| s.mean),
    ("std_ns", |s| s.std),
    ("p25_ns", |s| s.p25),
    ("p75_ns", |s| s.p75),
    ("p95_ns", |s| s.p95),
    ("p99_ns", |s| s.p99),
    ("max_ns", |s| s.max),
    ("cv", |s| s.cv),
    ("iqr_ns", |s| s.iqr),
    ("median_ci_pct", |s| s.median_ci_pct),
    ("shortest_half_ns", |s| s.shortest_half),
    ("step_p75_ns", |s| s.step_p75),
];

/// The cell's index in the plan: the table's order, and no column of `summary.csv`.
const INDEX: &str = "index";

/// One cell's statistics in one phase, as the stream of samples gives them (cells end in
/// the order they were stored, not the plan's).
pub struct Row {
    pub cell: u32,
    pub id: String,
    pub phase: Phase,
    pub stats: Stats,
}

/// The run's statistics: a row per cell and phase, in the plan's order (first launches
/// before steady samples), with `summary.csv`'s columns and the cell's index.
#[derive(Default)]
pub struct Table {
    frame: DataFrame,
    rows: HashMap<(usize, Phase), usize>,
}

impl Table {
    pub fn of(rows: Vec<Row>) -> PolarsResult<Table> {
        let text = |f: fn(&Row) -> &str| rows.iter().map(f).collect::<Vec<_>>();
        let mut columns = vec![
            Column::new(
                INDEX.into(),
                rows.iter().map(|r| r.cell).collect::<Vec<_>>(),
            ),
            Column::new("cell".into(), text(|r| &r.id)),
            Column::new("phase".into(), text(|r| r.phase.key())),
            Column::new(
                "count".into(),
                (rows.iter()).map(|r| r.stats.count).collect::<Vec<_>>(),
            ),
        ];
        columns.extend(MEASURES.map(|(name, of)| {
            Column::new(
                name.into(),
                rows.iter().map(|r| of(&r.stats)).collect::<Vec<_>>(),
            )
        }));
        // "first" sorts before "steady".
        let frame = DataFrame::new_infer_height(columns)?
            .sort([INDEX, "phase"], SortMultipleOptions::default())?;
        let mut table = Table {
            frame,
            rows: HashMap::new(),
        };
        table.rows = (0..table.frame.height())
            .filter_map(|row| Some((table.key(row)?, row)))
            .collect();
        Ok(table)
    }

    /// Cell `cell`'s statistics in `phase`, where it took samples in it.
    pub fn get(&self, cell: usize, phase: Phase) -> Option<Stats> {
        self.read(*self.rows.get(&(cell, phase))?)
    }

    /// Every row as (cell index, phase, statistics), in the table's order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, Phase, Stats)> + '_ {
        (0..self.frame.height()).filter_map(|row| {
            let (cell, phase) = self.key(row)?;
            Some((cell, phase, self.read(row)?))
        })
    }

    /// Row `row`'s cell index and phase.
    fn key(&self, row: usize) -> Option<(usize, Phase)> {
        let cell = self.frame.column(INDEX).ok()?.u32().ok()?.get(row)?;
        let phase = match self.frame.column("phase").ok()?.str().ok()?.get(row)? {
            p if p == Phase::First.key() => Phase::First,
            _ => Phase::Steady,
        };
        Some((cell as usize, phase))
    }

    /// Row `row`'s statistics.
    fn read(&self, row: usize) -> Option<Stats> {
        let f = |name: &str| self.frame.column(name).ok()?.f64().ok()?.get(row);
        Some(Stats {
            count: self.frame.column("count").ok()?.u64().ok()?.get(row)?,
            min: f("min_ns")?,
            median: f("median_ns")?,
            mean: f("mean_ns")?,
            std: f("std_ns")?,
            p25: f("p25_ns")?,
            p75: f("p75_ns")?,
            p95: f("p95_ns")?,
            p99: f("p99_ns")?,
            max: f("max_ns")?,
            cv: f("cv")?,
            iqr: f("iqr_ns")?,
            shortest_half: f("shortest_half_ns")?,
            step_p75: f("step_p75_ns")?,
            median_ci_pct: f("median_ci_pct")?,
        })
    }

    /// `summary.csv`: the table's columns but the index, each value as Rust prints it (the
    /// shortest text that reads back as the same number).
    pub fn csv(&self) -> anyhow::Result<Vec<u8>> {
        let columns: Vec<&Column> = (self.frame.columns().iter())
            .filter(|c| c.name().as_str() != INDEX)
            .collect();
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(columns.iter().map(|c| c.name().as_str()))?;
        for row in 0..self.frame.height() {
            let mut fields = Vec::with_capacity(columns.len());
            for c in &columns {
                fields.push(match c.get(row)? {
                    AnyValue::String(s) => s.to_string(),
                    AnyValue::UInt64(n) => n.to_string(),
                    AnyValue::Float64(v) => v.to_string(),
                    other => anyhow::bail!("summary.csv has no text for {other:?}"),
                });
            }
            w.write_record(&fields)?;
        }
        Ok(w.into_inner()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn the_table_keeps_the_plans_order_and_writes_summary_csv() {
        let row = |cell: u32, phase: Phase, x: f64| Row {
            cell,
            id: format!("k/n={cell}"),
            phase,
            stats: of(vec![x, 2.0 * x]).unwrap(),
        };
        // As the stream ends cells: out of the plan's order, steady before first.
        let table = Table::of(vec![
            row(1, Phase::Steady, 30.0),
            row(0, Phase::Steady, 10.0),
            row(1, Phase::First, 40.0),
        ])
        .unwrap();
        let keys: Vec<_> = table.iter().map(|(c, p, s)| (c, p, s.max)).collect();
        assert_eq!(
            keys,
            [
                (0, Phase::Steady, 20.0),
                (1, Phase::First, 80.0),
                (1, Phase::Steady, 60.0)
            ]
        );
        assert_eq!(table.get(1, Phase::First).unwrap().median, 60.0);
        assert!(table.get(0, Phase::First).is_none());
        let csv = String::from_utf8(table.csv().unwrap()).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "cell,phase,count,min_ns,median_ns,mean_ns,std_ns,p25_ns,p75_ns,p95_ns,p99_ns,max_ns,cv,iqr_ns,median_ci_pct,shortest_half_ns,step_p75_ns"
        );
        // Two samples give the median no 95% interval.
        assert_eq!(
            lines[1],
            "k/n=0,steady,2,10,15,15,5,12.5,17.5,19.5,19.9,20,0.3333333333333333,5,NaN,10,10"
        );
        // Of 1..=100, the interval runs from the 40th to the 61st: 10.5 over 50.5.
        let hundred = of((1..=100).map(f64::from).collect()).unwrap();
        assert!((hundred.median_ci_pct - 1050.0 / 50.5).abs() < 1e-9);
        // A run whose cells all failed has a table with no rows.
        let empty = Table::of(Vec::new()).unwrap();
        assert_eq!(empty.iter().count(), 0);
        assert_eq!(
            String::from_utf8(empty.csv().unwrap())
                .unwrap()
                .lines()
                .count(),
            1
        );
    }

    #[test]
    fn statistics_match_hand_computed_values() {
        let a = of((1..=10).map(|x| x as f64).collect()).unwrap();
        assert_eq!(a.count, 10);
        close(a.min, 1.0);
        close(a.max, 10.0);
        close(a.mean, 5.5);
        close(a.median, 5.5);
        // population variance of 1..10 = (n^2 - 1) / 12 = 8.25
        close(a.std, 8.25f64.sqrt());
        // linear interpolation at (n - 1) * p: p25 -> 1 + 2.25 = 3.25, p75 -> 7.75
        close(a.p25, 3.25);
        close(a.p75, 7.75);
        close(a.p95, 9.55);
        close(a.p99, 9.91);
        close(a.iqr, 4.5);
        close(a.cv, 8.25f64.sqrt() / 5.5);
        let b = of(vec![42.0]).unwrap();
        assert_eq!(b.count, 1);
        close(b.median, 42.0);
        close(b.std, 0.0);
    }
}
