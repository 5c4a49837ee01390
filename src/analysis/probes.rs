//! What each cell's own probes read: the SM clock before and after each run (held against
//! the run's spread of them), and the GPU timer's rate against the host clock.

use super::clocks::range;
use crate::protocol::CellRecord;
use crate::statistics::nearest_rank;

/// How far the GPU's timer may stray from the host clock over a cell before it is flagged:
/// well above what the host's late notice of a probe's end can fake over 0.1 s.
const TIMER_RATE_TOLERANCE_PCT: f64 = 0.1;

/// A cell's probes, as its row in `cells.md` reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Probes {
    /// The lowest and highest SM clock probed before or after a run, MHz.
    pub sm_mhz: Option<(f64, f64)>,
    /// The lowest and highest rate of the GPU's timer against the host clock.
    pub timer_rate: Option<(f64, f64)>,
    /// The run's probed clock (mean of before and after) farthest outside the run's spread
    /// by more than its tolerance.
    pub strayed: Option<Strayed>,
    /// How far the GPU's timer strayed from the host clock, in percent, where that is more
    /// than [`TIMER_RATE_TOLERANCE_PCT`]: every GPU-timed reading of the cell is off by as
    /// much.
    pub timer_off_pct: Option<f64>,
}

/// A cell's probed clock outside the run's own spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Strayed {
    pub mhz: f64,
    /// (p5, p95) of the run's probed clocks.
    pub spread: (f64, f64),
    pub tolerance_pct: f64,
}

/// The run's own spread of probed clocks (its 5th to 95th percentile) and the tolerance
/// beyond it: a clock that moves between levels for whole stretches of a run (this H100's
/// 1980 and ~1994 MHz) is the run's normal, not a cell's anomaly.
pub struct ProbeScale {
    /// (p5, p95) of the run's probed clocks.
    spread: Option<(f64, f64)>,
    tolerance_pct: f64,
}

impl ProbeScale {
    pub fn of(mut probes: Vec<f64>, tolerance_pct: f64) -> ProbeScale {
        probes.sort_by(f64::total_cmp);
        ProbeScale {
            spread: (!probes.is_empty())
                .then(|| (nearest_rank(&probes, 0.05), nearest_rank(&probes, 0.95))),
            tolerance_pct,
        }
    }

    /// The probed clock (mean of before and after) of a cell's runs that lies farthest
    /// outside the run's spread by more than the tolerance.
    fn strayed(&self, rs: &[&CellRecord]) -> Option<Strayed> {
        let (lo, hi) = self.spread?;
        let tol = self.tolerance_pct / 100.0;
        let outside = |mhz: f64| mhz < lo * (1.0 - tol) || mhz > hi * (1.0 + tol);
        let worst = (rs.iter().filter_map(|r| r.probed_mhz()))
            .filter(|m| outside(*m))
            .max_by(|x, y| {
                let off = |m: f64| (m - lo).abs().min((m - hi).abs());
                off(*x).total_cmp(&off(*y))
            })?;
        Some(Strayed {
            mhz: worst,
            spread: (lo, hi),
            tolerance_pct: self.tolerance_pct,
        })
    }

    /// What cell records `rs` probed.
    pub fn probes(&self, rs: &[&CellRecord]) -> Probes {
        let timer_rate = range(rs.iter().filter_map(|r| r.probe_timer_rate));
        let worst = timer_rate.map(|(lo, hi)| {
            if (lo - 1.0).abs() >= (hi - 1.0).abs() {
                lo
            } else {
                hi
            }
        });
        let off = worst.map(|w| (w - 1.0) * 100.0);
        Probes {
            sm_mhz: range(
                rs.iter()
                    .filter_map(|r| r.probe_mhz)
                    .flat_map(|(b, a)| [b, a]),
            ),
            timer_rate,
            strayed: self.strayed(rs),
            timer_off_pct: off.filter(|o| o.abs() > TIMER_RATE_TOLERANCE_PCT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Status;

    fn record(probe: (f64, f64)) -> CellRecord {
        let mut r = CellRecord::new(0, "c", 0);
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
        assert_eq!(scale.probes(&[&low]).strayed, None);
        assert_eq!(scale.probes(&[&high]).strayed, None);
        let strayed = scale.probes(&[&low, &far]).strayed.unwrap();
        assert_eq!((strayed.mhz, strayed.spread), (1961.0, (1980.0, 1994.0)));
        let near = record((1975.0, 1979.0));
        assert_eq!(scale.probes(&[&near]).sm_mhz, Some((1975.0, 1979.0)));
    }

    #[test]
    fn a_gpu_timer_that_strays_from_the_host_clock_is_flagged() {
        let scale = ProbeScale::of(vec![1980.0], 0.5);
        let (mut kept, mut slow) = (record((1980.0, 1980.0)), record((1995.0, 1995.0)));
        kept.probe_timer_rate = Some(1.0002);
        slow.probe_timer_rate = Some(0.9925);
        assert_eq!(scale.probes(&[&kept]).timer_off_pct, None);
        let both = scale.probes(&[&kept, &slow]);
        assert!((both.timer_off_pct.unwrap() + 0.75).abs() < 1e-9);
        assert_eq!(both.timer_rate, Some((0.9925, 1.0002)));
    }
}
