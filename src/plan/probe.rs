//! `runner plan --probe`: a short calibration before a first run. Each kernel build the
//! plan times, at each of its points and in each cache state, is launched on the device a
//! few times, unchecked and unaudited, and its time per launch replaces the model's (its
//! declared work at the device's peaks) in the estimate. A kernel far below its peaks (a
//! naive matmul at a tenth of them, atomics at a hundredth) is what the model misses most.

use super::cell::{Cell, Role};
use super::Plan;
use crate::experiment::knobs::cache::Cache;
use crate::experiment::knobs::samples::Samples;
use crate::experiment::knobs::timer::TimerKind;
use crate::experiment::knobs::warmup::Warmup;
use crate::experiment::Knobs;
use std::collections::HashMap;

/// What `plan --probe` measured, for the estimate: each of the plan's cells' kernel's time
/// per launch (by cell index, where the probe timed it). Its compiles are not counted: on a
/// fresh host it pays NVRTC's first reads from disk, which the run after it does not (the
/// incore experiment's 24 builds: 1.8 s in the probe, 0.5 s in the run after it).
#[derive(Debug, Default)]
pub struct Probe {
    pub per_launch: HashMap<usize, f64>,
}

/// Timed launches of each probe cell, after one warm-up: the median is its time.
pub const PROBE_SAMPLES: u64 = 3;

/// The probe's cells, one per kernel build, point and cache state the plan times, and for
/// each of the plan's cells the probe cell that times its kernel (None for the floor).
pub struct ProbePlan {
    pub plan: Plan,
    pub of_cell: Vec<Option<usize>>,
}

impl ProbePlan {
    pub fn new(plan: &Plan) -> ProbePlan {
        let mut cells: Vec<Cell> = Vec::new();
        let mut by_key: HashMap<String, usize> = HashMap::new();
        let mut of_cell = Vec::with_capacity(plan.cells.len());
        for c in &plan.cells {
            if c.role != Role::Measure {
                of_cell.push(None);
                continue;
            }
            let flushed = matches!(c.knobs.cache, Cache::Flush { .. });
            let launch = serde_json::to_string(&c.launch).unwrap_or_default();
            let key = format!("{:?}/{:?}/{flushed}/{launch}", c.kernel, c.knobs.compile);
            let index = *by_key.entry(key).or_insert_with(|| {
                cells.push(probe_cell(c, cells.len()));
                cells.len() - 1
            });
            of_cell.push(Some(index));
        }
        ProbePlan {
            plan: Plan { cells },
            of_cell,
        }
    }

    /// What the probe measured: each of the plan's cells' kernel's seconds per launch,
    /// from the probe cells' readings (ns per launch; None where a probe cell failed).
    pub fn measured(&self, readings_ns: &[Option<f64>]) -> Probe {
        let per_launch = (self.of_cell.iter().enumerate())
            .filter_map(|(cell, probe)| Some((cell, readings_ns.get((*probe)?)?.as_ref()? * 1e-9)))
            .collect();
        Probe { per_launch }
    }
}

/// `c`'s kernel at its point, launched alone under events after one warm-up, hot or
/// flushed as `c` is, in the run's process.
fn probe_cell(c: &Cell, index: usize) -> Cell {
    let knobs = Knobs {
        timer: TimerKind::Events,
        warmup: Warmup {
            launches: 1,
            ..Default::default()
        },
        samples: Samples {
            count: PROBE_SAMPLES,
            stop: None,
        },
        cache: c.knobs.cache,
        compile: c.knobs.compile,
        timeout: c.knobs.timeout,
        ..Default::default()
    };
    Cell {
        index,
        id: format!("probe/{}", c.id),
        knobs,
        ..c.clone()
    }
}
