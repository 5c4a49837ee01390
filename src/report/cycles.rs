//! SM cycles: where the clock probe ran, each cell's median also as SM cycles (its time x
//! the probed effective SM clock; for Nsight Compute's cells, x the elapsed SM cycles per
//! second it read over their timed launches), and whether a kernel's time follows the clock
//! across its runs (a compute-bound kernel's does; a memory-bound one's does not): for those,
//! cycles are the number that repeats from run to run on a GPU whose clock wanders. For the
//! others the memory clock's view: what NVML read of it over the kernel's cells.

use crate::analysis::cycles::Response;
use crate::analysis::Analysis;
use crate::experiment::point_label;
use serde::Serialize;

/// How a kernel's response to the clock reads in a sentence.
fn describe(r: &Response) -> String {
    format!(
        "time ∝ clock^{:.2} ± {:.2} over {} runs of {} cells whose clock moved",
        r.slope, r.half_width, r.runs, r.cells
    )
}

#[derive(Serialize)]
pub struct CyclesTable {
    pub kernel: String,
    pub parameters: String,
    pub columns: Vec<String>,
    pub rows: Vec<CyclesRow>,
    /// How its time answers the SM clock, and which unit to compare runs in.
    pub verdict: String,
}

#[derive(Serialize)]
pub struct CyclesRow {
    pub point: String,
    pub values: Vec<String>,
}

/// NVML's memory clock over `cells`' readings: (lowest, highest, readings).
fn memory_clock(a: &Analysis, cells: &[usize]) -> Option<(u32, u32, usize)> {
    let mut mhz = Vec::new();
    for c in cells {
        for r in a.records.get(c).map_or(&[][..], Vec::as_slice) {
            let ends = [&r.telemetry_start, &r.telemetry_end];
            mhz.extend(ends.iter().filter_map(|t| t.as_ref()?.mem_mhz));
        }
    }
    let rows = a.run.telemetry.iter();
    mhz.extend(
        rows.filter(|t| cells.contains(&(t.cell as usize)))
            .filter_map(|t| t.point.reading.mem_mhz),
    );
    Some((*mhz.iter().min()?, *mhz.iter().max()?, mhz.len()))
}

/// One table per kernel whose cells were probed.
pub fn build(a: &Analysis) -> Vec<CyclesTable> {
    let exp = &a.run.experiment;
    let (responses, cell_mhz) = (&a.responses, &a.cell_mhz);
    let mut tables = Vec::new();
    for (k, kernel) in exp.timed_kernels() {
        let mut probed = Vec::new();
        let rows = kernel
            .points
            .iter()
            .map(|p| CyclesRow {
                point: point_label(p),
                values: exp
                    .variants
                    .iter()
                    .map(|v| {
                        let cell = a.run.plan.cell_at(k, p, &v.name);
                        let mhz = cell.and_then(|c| cell_mhz.get(&c.id));
                        match (a.median_at(k, p, &v.name), mhz, cell) {
                            (Some(ns), Some(mhz), Some(c)) => {
                                probed.push(c.index);
                                format!("{:.0}", ns * mhz / 1e3)
                            }
                            _ => "–".into(),
                        }
                    })
                    .collect(),
            })
            .collect();
        if probed.is_empty() {
            continue;
        }
        let response = responses.get(&kernel.name);
        let memory = match memory_clock(a, &probed) {
            Some((lo, hi, n)) if lo == hi => {
                format!("NVML read the memory clock at {lo} MHz in all {n} readings of its cells")
            }
            Some((lo, hi, n)) => {
                format!("NVML read the memory clock between {lo} and {hi} MHz over {n} readings of its cells")
            }
            None => "NVML did not read the memory clock".into(),
        };
        let verdict = match response {
            Some(r) if r.follows() => format!(
                "follows the SM clock ({}): compare its runs in SM cycles",
                describe(r)
            ),
            Some(r) => format!(
                "does not follow the SM clock ({}): compare its runs in time, the memory clock's view ({memory})",
                describe(r)
            ),
            None => format!(
                "too few cells whose clock moved to tell whether it follows the SM clock: compare in time ({memory})"
            ),
        };
        tables.push(CyclesTable {
            kernel: kernel.name.clone(),
            parameters: exp.parameter_names(k),
            columns: exp.variants.iter().map(|v| v.name.clone()).collect(),
            rows,
            verdict,
        });
    }
    tables
}
