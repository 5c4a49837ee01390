//! Joins each cell's timed launches to the NVML series sampled beside them, and flags cells
//! whose clocks moved or whose GPU was throttled while they were being timed.

use super::phase::Series;
use crate::experiment::{ClockPolicy, Experiment};
use crate::plan::Cell;
use crate::protocol::{CellRecord, TelemetryPoint};
use std::collections::HashMap;

/// Throttle reasons that say nothing about the timed work: an idle GPU between launches, or
/// clocks set by the administrator.
pub const BENIGN_THROTTLE: &[&str] = &[
    "gpu_idle",
    "applications_clocks_setting",
    "display_clock_setting",
    "none",
];

/// The host-time span of a run's timed launches, µs from its cell's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start_us: f64,
    pub end_us: f64,
}

impl Window {
    /// From each sample's (start µs, reading ns), a sample of `launches` launches (a batch
    /// or a graph, read per launch) lasting as long as all of them; `None` if no start was
    /// recorded.
    pub fn of(samples: impl IntoIterator<Item = (f64, f64)>, launches: u64) -> Option<Window> {
        let mut w: Option<Window> = None;
        for (start, ns) in samples.into_iter().filter(|(s, _)| s.is_finite()) {
            let this = Window {
                start_us: start,
                end_us: start + ns * launches as f64 / 1e3,
            };
            w = Some(w.map_or(this, |w| w.union(this)));
        }
        w
    }

    /// The span of both windows.
    pub fn union(self, other: Window) -> Window {
        Window {
            start_us: self.start_us.min(other.start_us),
            end_us: self.end_us.max(other.end_us),
        }
    }
}

/// The readings that describe a window: the last one at or before its start (the state it
/// began in) and every one inside it. `series` is in time order.
pub fn during(series: &[TelemetryPoint], w: Window) -> Vec<&TelemetryPoint> {
    let before = series.iter().rposition(|p| p.t_us <= w.start_us);
    let inside = series
        .iter()
        .enumerate()
        .filter(|(_, p)| p.t_us > w.start_us && p.t_us <= w.end_us)
        .map(|(i, _)| i);
    before
        .into_iter()
        .chain(inside)
        .map(|i| &series[i])
        .collect()
}

/// The SM clock a launch that started at `t_us` ran under: the last reading at or before it
/// (a series is in time order, as it was sampled: a search, not a scan per launch).
pub fn sm_clock_at(series: &[TelemetryPoint], t_us: f64) -> Option<u32> {
    let after = series.partition_point(|p| p.t_us <= t_us);
    series[..after].last().and_then(|p| p.reading.sm_mhz)
}

/// Pearson correlation between each launch's time and the SM clock it started under, over
/// (start µs, time) pairs; `None` when the clock never changed (nothing to follow).
pub fn time_clock_correlation(launches: &[(f64, f64)], series: &[TelemetryPoint]) -> Option<f64> {
    let pairs: Vec<(f64, f64)> = launches
        .iter()
        .filter_map(|&(t, v)| Some((v, sm_clock_at(series, t)? as f64)))
        .collect();
    let n = pairs.len() as f64;
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in &pairs {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx).powi(2);
        syy += (y - my).powi(2);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// What the readings of a cell's timed launches say, and the flags they raise.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClockSummary {
    pub sm_mhz: Option<(u32, u32)>,
    pub mem_mhz: Option<(u32, u32)>,
    pub mean_power_w: Option<f64>,
    pub max_temp_c: Option<u32>,
    pub flags: Vec<String>,
    /// The lowest SM clock over the highest, where it moved by more than the tolerance: how
    /// far the audit may set a region against the samples before it (`analysis::drift`).
    pub moved_to: Option<f64>,
}

/// The lowest and highest of `values`, none when there are none.
pub fn range<T: PartialOrd + Copy>(values: impl Iterator<Item = T>) -> Option<(T, T)> {
    values.fold(None, |r, v| {
        Some(r.map_or((v, v), |(lo, hi): (T, T)| {
            (if v < lo { v } else { lo }, if v > hi { v } else { hi })
        }))
    })
}

/// Summarizes readings; flags an SM clock that moved by more than `tolerance_pct` of its
/// highest value or strayed that far from `expect_mhz`, and any throttle reason but the
/// benign ones.
pub fn summarize(
    points: &[&TelemetryPoint],
    tolerance_pct: f64,
    expect_mhz: Option<u32>,
) -> ClockSummary {
    let sm = range(points.iter().filter_map(|p| p.reading.sm_mhz));
    let power: Vec<f64> = points.iter().filter_map(|p| p.reading.power_w).collect();
    let mut flags = Vec::new();
    let mut moved_to = None;
    if let Some((lo, hi)) = sm {
        let moved = (hi - lo) as f64 / hi.max(1) as f64 * 100.0;
        if moved > tolerance_pct {
            moved_to = Some(lo as f64 / hi.max(1) as f64);
            flags.push(format!("SM clock moved {lo}-{hi} MHz ({moved:.1}%)"));
        }
        if let Some(want) = expect_mhz {
            let off = |v: u32| {
                (v as f64 - want as f64).abs() / want.max(1) as f64 * 100.0 > tolerance_pct
            };
            if off(lo) || off(hi) {
                flags.push(format!("SM clock {lo}-{hi} MHz, expected {want} MHz"));
            }
        }
    }
    let mut reasons: Vec<&str> = points
        .iter()
        .flat_map(|p| p.reading.throttle.iter().map(String::as_str))
        .filter(|r| !BENIGN_THROTTLE.contains(r))
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    if !reasons.is_empty() {
        flags.push(format!("throttled: {}", reasons.join(", ")));
    }
    ClockSummary {
        sm_mhz: sm,
        mem_mhz: range(points.iter().filter_map(|p| p.reading.mem_mhz)),
        mean_power_w: (!power.is_empty()).then(|| power.iter().sum::<f64>() / power.len() as f64),
        max_temp_c: points.iter().filter_map(|p| p.reading.temp_c).max(),
        flags,
        moved_to,
    }
}

/// The readings of cell `c`'s timed launches and their flags: the sampled series joined
/// on time, or, where no reading of a series lies at or before a launch (runs recorded
/// without a sampler, or before a series began with the start reading), the readings at
/// each run's start and end. `rs`: the cell's records; `series` and `windows`: the run's
/// telemetry and each run's timed stretch, as the reduction left them.
pub(super) fn of_cell(
    exp: &Experiment,
    (rs, c): (&[&CellRecord], &Cell),
    series: &Series,
    windows: &HashMap<(u32, u32), Window>,
) -> ClockSummary {
    let expect = match exp.clocks {
        ClockPolicy::Expect(mhz) | ClockPolicy::Lock(mhz) => Some(mhz),
        ClockPolicy::Observe => None,
    };
    let tolerance_pct = exp.telemetry.clock_tolerance_pct;
    let mut points: Vec<&TelemetryPoint> = Vec::new();
    for r in rs {
        let key = (c.index as u32, r.process);
        if let (Some(s), Some(w)) = (series.get(&key), windows.get(&key)) {
            points.extend(during(s, *w));
        }
    }
    if !points.is_empty() {
        return summarize(&points, tolerance_pct, expect);
    }
    let snapshots: Vec<TelemetryPoint> = rs
        .iter()
        .flat_map(|r| [r.telemetry_start.clone(), r.telemetry_end.clone()])
        .flatten()
        .map(|reading| TelemetryPoint { t_us: 0.0, reading })
        .collect();
    summarize(&snapshots.iter().collect::<Vec<_>>(), tolerance_pct, expect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Telemetry;

    fn point(t_us: f64, sm: u32, throttle: &[&str]) -> TelemetryPoint {
        TelemetryPoint {
            t_us,
            reading: Telemetry {
                sm_mhz: Some(sm),
                mem_mhz: Some(2619),
                power_w: Some(100.0 + t_us / 1000.0),
                temp_c: Some(40 + (t_us / 10_000.0) as u32),
                pstate: None,
                throttle: throttle.iter().map(|s| s.to_string()).collect(),
            },
        }
    }

    #[test]
    fn window_spans_first_start_to_last_end() {
        let samples = [(100.0, 5_000.0), (f64::NAN, 1.0), (300.0, 20_000.0)];
        let w = Window::of(samples, 1).unwrap();
        assert_eq!(
            w,
            Window {
                start_us: 100.0,
                end_us: 320.0
            }
        );
        assert_eq!(Window::of([(f64::NAN, 1.0)], 1), None);
        // A sample of 200 launches of 20 µs each lasts 4 ms, not the 20 µs it reads
        // (roofline: the clock fell to 1350 MHz inside the last such sample).
        assert_eq!(Window::of(samples, 200).unwrap().end_us, 300.0 + 4_000.0);
    }

    #[test]
    fn join_takes_the_reading_before_and_those_inside() {
        let series = [
            point(0.0, 1980, &[]),
            point(10_000.0, 1980, &[]),
            point(20_000.0, 1755, &[]),
            point(30_000.0, 1980, &[]),
        ];
        let w = Window {
            start_us: 12_000.0,
            end_us: 25_000.0,
        };
        let ts: Vec<f64> = during(&series, w).iter().map(|p| p.t_us).collect();
        assert_eq!(ts, [10_000.0, 20_000.0]);
        assert_eq!(sm_clock_at(&series, 19_999.0), Some(1980));
        assert_eq!(sm_clock_at(&series, 20_000.0), Some(1755));
        assert_eq!(sm_clock_at(&series, -1.0), None);
    }

    #[test]
    fn time_that_follows_the_clock_correlates_negatively() {
        let series = [point(0.0, 1980, &[]), point(100.0, 1500, &[])];
        // Launches at 1980 MHz take 10 µs, at 1500 MHz 13 µs.
        let launches = [
            (10.0, 10_000.0),
            (50.0, 10_100.0),
            (110.0, 13_000.0),
            (150.0, 13_100.0),
        ];
        let r = time_clock_correlation(&launches, &series).unwrap();
        assert!(r < -0.99, "{r}");
        assert_eq!(
            time_clock_correlation(&launches, &series[..1]),
            None,
            "a constant clock"
        );
    }

    #[test]
    fn steady_clock_and_idle_raise_no_flag() {
        let a = point(0.0, 1980, &["gpu_idle"]);
        let b = point(10_000.0, 1975, &[]);
        let s = summarize(&[&a, &b], 1.0, Some(1980));
        assert!(s.flags.is_empty(), "{:?}", s.flags);
        assert_eq!(s.moved_to, None);
        assert_eq!(s.sm_mhz, Some((1975, 1980)));
        assert_eq!(s.mean_power_w, Some(105.0));
        assert_eq!(s.max_temp_c, Some(41));
    }

    #[test]
    fn a_moving_clock_and_a_power_cap_are_flagged() {
        let a = point(0.0, 1980, &[]);
        let b = point(10_000.0, 1755, &["sw_power_cap", "gpu_idle"]);
        let s = summarize(&[&a, &b], 1.0, None);
        assert_eq!(
            s.flags,
            [
                "SM clock moved 1755-1980 MHz (11.4%)",
                "throttled: sw_power_cap"
            ]
        );
        assert_eq!(s.moved_to, Some(1755.0 / 1980.0));
    }

    #[test]
    fn a_clock_other_than_the_expected_one_is_flagged() {
        let a = point(0.0, 1755, &[]);
        let s = summarize(&[&a], 1.0, Some(1980));
        assert_eq!(s.flags, ["SM clock 1755-1755 MHz, expected 1980 MHz"]);
        assert_eq!(
            s.moved_to, None,
            "a clock that sat still, elsewhere than expected"
        );
    }
}
