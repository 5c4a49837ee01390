//! The cells table: each cell's check, start-up costs, the telemetry its timed launches ran
//! under, what its timer noted, and its flags.

use super::format;
use crate::analysis::clocks::ClockSummary;
use crate::analysis::probes::Probes;
use crate::analysis::{median, Analysis};
use crate::experiment::{LaunchSpec, Unit};
use crate::plan::Cell;
use crate::protocol::{CellRecord, Energy, Status};
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
    (a.run.plan.cells.iter())
        .filter_map(|c| {
            let rs = a.records.get(&c.index)?;
            let clocks = a.clocks.get(&c.index).cloned().unwrap_or_default();
            let probes = a.probes.get(&c.index).cloned().unwrap_or_default();
            let r = (a.reduced.traces.get(&c.index)).and_then(|t| t.clock_correlation);
            Some(cell_row(c, rs, &clocks, r, &probes))
        })
        .collect()
}

/// The flags of a cell's probes: a clock outside the run's spread, a GPU timer that did not
/// keep the host's time (every GPU-timed reading of it, events, CUPTI, the profiler, is off
/// by as much).
fn probe_flags(p: &Probes) -> Vec<String> {
    let strayed = p.strayed.map(|s| {
        format!(
            "probed SM clock {:.0} MHz, outside the run's spread {:.0}–{:.0} MHz (p5–p95) by more than {}%",
            s.mhz, s.spread.0, s.spread.1, s.tolerance_pct
        )
    });
    let timer = (p.timer_off_pct).map(|off| {
        format!(
            "GPU timer ran {} against the host clock",
            format::percent(off)
        )
    });
    strayed.into_iter().chain(timer).collect()
}

/// The board's energy over the cell's steady samples (its runs together): per launch, the
/// mean power, and GFLOP/J or GB/J where the launch declares its work.
fn energy_note(rs: &[&CellRecord], launch: &LaunchSpec) -> Option<String> {
    let each: Vec<&Energy> = rs.iter().filter_map(|r| r.energy.as_ref()).collect();
    each.first()?;
    let all = Energy {
        joules: each.iter().map(|e| e.joules).sum(),
        seconds: each.iter().map(|e| e.seconds).sum(),
        launches: each.iter().map(|e| e.launches).sum(),
    };
    let per = all.joules_per_launch();
    let (scale, unit) = match per {
        p if p >= 1.0 => (1.0, "J"),
        p if p >= 1e-3 => (1e3, "mJ"),
        _ => (1e6, "µJ"),
    };
    let mut text = format!(
        "energy {} {unit} a launch (±{:.0}%) at {} W over {} s",
        format::number(per * scale),
        100.0 * all.uncertainty(),
        format::number(all.watts()),
        format::number(all.seconds)
    );
    if each.len() < rs.len() {
        text += &format!(" ({} of {} runs)", each.len(), rs.len());
    }
    match (launch.flops, launch.bytes) {
        (Some(flops), _) => text += &format!(", {} GFLOP/J", format::number(flops / per / 1e9)),
        (None, Some(bytes)) => text += &format!(", {} GB/J", format::number(bytes / per / 1e9)),
        _ => {}
    }
    Some(text)
}

/// The wait kernel's length, CUPTI's launch latency and the probed clock, where a cell has them.
fn timer_notes(rs: &[&CellRecord], probes: &Probes) -> String {
    let mut notes = Vec::new();
    if let Some((lo, hi)) = probes.sm_mhz {
        notes.push(format!("probed SM clock {lo:.0}–{hi:.0} MHz"));
    }
    if let Some((lo, hi)) = probes.timer_rate {
        // Three decimals: a timer that keeps time reads within a few thousandths of a percent.
        notes.push(format!(
            "GPU timer {:+.3}% to {:+.3}% against the host clock",
            (lo - 1.0) * 100.0,
            (hi - 1.0) * 100.0
        ));
    }
    let stops: Vec<String> = (rs.iter())
        .filter_map(|r| Some(r.stopped.as_ref()?.to_string()))
        .collect();
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
        notes.push(match q.released {
            true => "wait kernel released by the host".to_string(),
            false => format!("wait kernel {}", format::time(q.wait_ns as f64, Unit::Auto)),
        });
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
    probes: &Probes,
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
        timer_notes: match (timer_notes(rs, probes), energy_note(rs, &c.launch)) {
            (notes, None) => notes,
            (notes, Some(energy)) if notes == "–" => energy,
            (notes, Some(energy)) => format!("{notes}; {energy}"),
        },
        flags: {
            let mut flags = clocks.flags.clone();
            flags.extend(crate::protocol::QueueRecord::flag(
                rs.iter().filter_map(|r| r.queue.as_ref()),
            ));
            flags.extend(probe_flags(probes));
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
    use crate::analysis::probes::Strayed;

    #[test]
    fn energy_is_told_per_launch_with_its_power_and_work() {
        let e = crate::experiment::Experiment::from_text("[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [32]\nbytes = 1000000000\n[[variant]]\nname = \"a\"\n").unwrap();
        let launch = &e.kernels[0].launches[0];
        let energy = |joules, launches| CellRecord {
            energy: Some(Energy {
                joules,
                seconds: 0.5,
                launches,
            }),
            ..Default::default()
        };
        let (one, other) = (energy(3.0, 1000), energy(1.0, 1000));
        assert_eq!(
            energy_note(&[&one, &other], launch).unwrap(),
            "energy 2.000 mJ a launch (±10%) at 4.000 W over 1.000 s, 500.0 GB/J"
        );
        let none = CellRecord::default();
        let part = energy_note(&[&one, &none], launch).unwrap();
        assert!(
            part.contains("3.000 mJ a launch") && part.contains("(1 of 2 runs)"),
            "{part}"
        );
        assert!(energy_note(&[&none], launch).is_none());
    }

    #[test]
    fn probes_are_worded_with_their_flags() {
        let p = Probes {
            sm_mhz: Some((1975.0, 1979.0)),
            timer_rate: Some((0.9925, 1.0002)),
            strayed: Some(Strayed {
                mhz: 1961.0,
                spread: (1980.0, 1994.0),
                tolerance_pct: 0.5,
            }),
            timer_off_pct: Some(-0.75),
        };
        let notes = timer_notes(&[], &p);
        assert!(
            notes.starts_with("probed SM clock 1975–1979 MHz"),
            "{notes}"
        );
        assert!(notes.contains("GPU timer -0.750% to +0.020%"), "{notes}");
        let flags = probe_flags(&p).join("; ");
        assert!(
            flags.contains("1961 MHz") && flags.contains("1980–1994"),
            "{flags}"
        );
        assert!(flags.contains("-0.75%"), "{flags}");
        assert!(probe_flags(&Probes::default()).is_empty());
    }
}
