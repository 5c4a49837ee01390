//! The cells table: each cell's check, start-up costs, the telemetry its timed launches ran
//! under, what its timer noted, and its flags.

use super::format;
use crate::analysis::clocks::{self, probe_of, ClockSummary};
use crate::analysis::{median, Analysis};
use crate::experiment::Unit;
use crate::plan::Cell;
use crate::protocol::{CellRecord, Status};
use serde::Serialize;

#[derive(Serialize)]
pub struct CellRow {
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

/// One row per cell that ran.
pub fn rows(a: &Analysis) -> Vec<CellRow> {
    let s = a.run;
    let exp = &s.experiment;
    let probe = ProbeScale::of(
        s.records.iter().filter_map(probe_of).collect(),
        exp.telemetry.probe_tolerance_pct,
    );
    s.plan
        .cells
        .iter()
        .filter_map(|c| {
            let rs = a.records.get(&c.index)?;
            let clocks = a.clocks(c);
            let r = (a.reduced.traces.get(&c.index)).and_then(|t| t.clock_correlation);
            Some(cell_row(c, rs, &clocks, r, &probe))
        })
        .collect()
}

/// The run's own spread of probed clocks (its 5th to 95th percentile) and the tolerance
/// beyond it: a clock that moves between levels for whole stretches of a run (this H100's
/// 1980 and ~1994 MHz) is the run's normal, not a cell's anomaly.
pub(super) struct ProbeScale {
    /// (p5, p95) of the run's probed clocks.
    spread: Option<(f64, f64)>,
    tolerance_pct: f64,
}

impl ProbeScale {
    pub(super) fn of(mut probes: Vec<f64>, tolerance_pct: f64) -> ProbeScale {
        probes.sort_by(f64::total_cmp);
        let at = |q: f64| probes[((probes.len() - 1) as f64 * q).round() as usize];
        ProbeScale {
            spread: (!probes.is_empty()).then(|| (at(0.05), at(0.95))),
            tolerance_pct,
        }
    }

    /// The flag of a cell whose probed clock (mean of before and after) lies outside the
    /// run's spread by more than the tolerance.
    fn flag(&self, rs: &[&CellRecord]) -> Option<String> {
        let (lo, hi) = self.spread?;
        let tol = self.tolerance_pct / 100.0;
        let outside = |mhz: f64| mhz < lo * (1.0 - tol) || mhz > hi * (1.0 + tol);
        let worst = rs
            .iter()
            .filter_map(|r| probe_of(r))
            .filter(|m| outside(*m))
            .max_by(|x, y| {
                let off = |m: f64| (m - lo).abs().min((m - hi).abs());
                off(*x).total_cmp(&off(*y))
            })?;
        Some(format!(
            "probed SM clock {worst:.0} MHz, outside the run's spread {lo:.0}–{hi:.0} MHz (p5–p95) by more than {}%",
            self.tolerance_pct
        ))
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
    if let Some(ns) = median(rs.iter().filter_map(|r| r.sample_wall_ns).collect()) {
        notes.push(format!(
            "{} of host time per sample",
            format::time(ns, Unit::Auto)
        ));
    }
    if let Some(w) = rs.iter().find_map(|r| r.l2_window.as_ref()) {
        notes.push(w.clone());
    }
    if let Some(q) = rs.iter().find_map(|r| r.queue.as_ref()) {
        notes.push(format!(
            "wait kernel {}",
            format::time(q.wait_ns as f64, Unit::Auto)
        ));
    }
    let latency = median(
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
    if let Some(c) = rs
        .iter()
        .find_map(|r| r.cupti.as_ref().filter(|c| !c.kernels.is_empty()))
    {
        let each: Vec<String> = c
            .kernels
            .iter()
            .map(|(name, ns)| format!("{name} {}", format::time(*ns, Unit::Auto)))
            .collect();
        notes.push(format!("each kernel (CUPTI median): {}", each.join(", ")));
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
        // A run at two clock levels: neither is flagged; a cell far below both is.
        let mut probes = vec![1980.0; 50];
        probes.extend([1994.0; 50]);
        let scale = ProbeScale::of(probes, 0.5);
        let (low, high) = (record((1979.0, 1981.0)), record((1993.0, 1995.0)));
        let far = record((1960.0, 1962.0));
        assert_eq!(scale.flag(&[&low]), None);
        assert_eq!(scale.flag(&[&high]), None);
        let flag = scale.flag(&[&low, &far]).unwrap();
        assert!(
            flag.contains("1961 MHz") && flag.contains("1980–1994"),
            "{flag}"
        );
        let near = record((1975.0, 1979.0));
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
