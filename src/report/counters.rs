//! The hardware counters table: each counted cell's declared bytes beside what DRAM and L2
//! moved (`analysis::counters` judges them), its declared reads and writes beside DRAM's
//! where it declares them apart, and every counter it read.

use super::format;
use crate::analysis::counters::{BytesVerdict, CellCounters};
use crate::experiment::Unit;
use serde::Serialize;

#[derive(Serialize)]
pub struct CountersView {
    /// Declared against counted bytes, for the cells that declare bytes.
    pub bytes: Vec<BytesRow>,
    /// How many of them are marked.
    pub marked: usize,
    /// Declared reads and writes against DRAM's, for the cells that declare them apart.
    pub reads_writes: Vec<ReadsWritesRow>,
    /// Every counter: one column per counter any cell read.
    pub columns: Vec<String>,
    pub rows: Vec<CounterRow>,
}

#[derive(Serialize)]
pub struct BytesRow {
    pub cell: String,
    pub cache: String,
    pub declared: String,
    pub dram: String,
    pub l2: String,
    pub l1: String,
    pub dram_ratio: String,
    pub caches_ratio: String,
    pub verdict: String,
}

/// A cell's declared reads and writes beside the bytes DRAM read and wrote (MB per launch).
#[derive(Serialize)]
pub struct ReadsWritesRow {
    pub cell: String,
    pub cache: String,
    pub reads: String,
    pub dram_read: String,
    pub read_ratio: String,
    pub writes: String,
    pub dram_write: String,
    pub write_ratio: String,
}

#[derive(Serialize)]
pub struct CounterRow {
    pub cell: String,
    /// The counted launches' median time, then the cell's reading, in µs.
    pub counted: String,
    pub reading: String,
    pub values: Vec<String>,
}

/// The words for a verdict; a marked one starts with ⚠.
pub fn verdict_words(v: BytesVerdict) -> &'static str {
    match v {
        BytesVerdict::Agrees => "agrees with DRAM",
        BytesVerdict::ServedByCaches => "served by the caches: DRAM moved fewer",
        BytesVerdict::Overstated => "⚠ declared more than any level moved",
        BytesVerdict::MovedMore => "⚠ DRAM moved more than declared",
    }
}

/// The view of the counted cells; None where no cell read counters.
pub fn build(counted: &[CellCounters]) -> Option<CountersView> {
    if counted.is_empty() {
        return None;
    }
    let mb = |b: f64| format::number(b / 1e6);
    let ratio = |r: f64| format!("{r:.2}x");
    let bytes: Vec<BytesRow> = (counted.iter())
        .filter_map(|c| {
            let b = c.bytes?;
            Some(BytesRow {
                cell: c.cell.id.clone(),
                cache: cache_words(&c.record.cache),
                declared: mb(b.declared),
                dram: mb(b.dram),
                l2: mb(b.l2),
                l1: mb(b.l1),
                dram_ratio: ratio(b.dram_ratio()),
                caches_ratio: ratio(b.caches_ratio()),
                verdict: verdict_words(b.verdict).into(),
            })
        })
        .collect();
    let of_declared = |r: Option<f64>| r.map_or("–".into(), ratio);
    let reads_writes = (counted.iter())
        .filter_map(|c| {
            let rw = c.reads_writes?;
            Some(ReadsWritesRow {
                cell: c.cell.id.clone(),
                cache: cache_words(&c.record.cache),
                reads: mb(rw.reads),
                dram_read: mb(rw.dram_read),
                read_ratio: of_declared(rw.read_ratio()),
                writes: mb(rw.writes),
                dram_write: mb(rw.dram_write),
                write_ratio: of_declared(rw.write_ratio()),
            })
        })
        .collect();
    let marked = (counted.iter())
        .filter(|c| c.bytes.is_some_and(|b| b.verdict.marked()))
        .count();
    let mut names: Vec<(String, String)> = Vec::new();
    for c in counted {
        for v in &c.record.values {
            if !names.iter().any(|(n, _)| *n == v.name) {
                names.push((v.name.clone(), v.unit.clone()));
            }
        }
    }
    let us = |ns: Option<f64>| ns.map_or("–".into(), |ns| format::time(ns, Unit::Us));
    let rows = (counted.iter())
        .map(|c| CounterRow {
            cell: c.cell.id.clone(),
            counted: us(c.record.launch_ns),
            reading: us(c.reading_ns),
            values: match &c.record.error {
                // Why there are none, in the first column; the rest left empty.
                Some(why) => (std::iter::once(why.clone()))
                    .chain(std::iter::repeat_n(
                        String::new(),
                        names.len().saturating_sub(1),
                    ))
                    .collect(),
                None => (names.iter())
                    .map(|(n, _)| c.record.value(n).map_or("–".into(), format::number))
                    .collect(),
            },
        })
        .collect();
    let mut columns: Vec<String> = (names.into_iter())
        .map(|(n, unit)| format!("`{n}` ({unit})"))
        .collect();
    if columns.is_empty() {
        columns.push("counters".into());
    }
    Some(CountersView {
        bytes,
        marked,
        reads_writes,
        columns,
        rows,
    })
}

/// The cache state the counted launches met.
fn cache_words(control: &str) -> String {
    match control {
        "all" => "cold (flushed)".into(),
        "none" => "hot".into(),
        other => other.into(),
    }
}
