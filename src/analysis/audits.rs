//! The audit's verdict, over a cell's runs. Audited regions and decoys sat among the timed
//! ones (`worker::audit`), each after the same copy into the inputs: new data for the
//! audited, the data already there for the decoys. An honest kernel reads the same in both;
//! one that does all its work only on data it has not seen reads slower in the audited
//! regions. The test sets the two medians apart against the cell's own noise (its timed
//! samples' spread), at a stated false-alarm rate, and beyond a margin. Where a cell has
//! no decoys (too few samples to spare, or the weaker audit of one launch after its
//! timed ones), a fixed band against its reading is all there is.

use super::stats::Stats;
use super::{median, Analysis};
use crate::protocol::CellRecord;

/// The chance that an honest cell whose readings follow its timed samples' spread is called
/// suspect: one in a thousand (one-sided, a standard normal's 3.09).
pub const FALSE_ALARM: f64 = 1e-3;
pub const Z_FALSE_ALARM: f64 = 3.090;
/// Beyond the noise, the audited median must exceed the decoys' by this share of it...
pub const MARGIN_SHARE: f64 = 0.02;
/// ...and by this much: the spread of two event readings of one kernel.
pub const MARGIN_NS: f64 = 500.0;
/// Timed samples fewer than this give no spread to judge by.
const MIN_SAMPLES: usize = 10;
/// Without decoys, an audited launch is suspect where it took more than this many times the
/// reading...
pub const BAND_RATIO: f64 = 2.0;
/// ...plus this much. A launch on its own meets a colder instruction cache, TLB and queue
/// than timed launches that follow one another, and the events' floor moves by about a
/// microsecond: a few-µs kernel may read twice as long alone without cheating.
pub const BAND_SLACK_NS: f64 = 5_000.0;

/// What the audited launches were set against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Against {
    /// The decoys beside them.
    Decoys,
    /// The cell's reading, by the fixed band.
    Reading,
}

/// What the test found for a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub against: Against,
    /// The audited median, and the decoys' median or the cell's reading, ns per launch.
    pub audited_ns: f64,
    pub baseline_ns: f64,
    /// How far above the baseline the audited median may lie for an honest kernel.
    pub bound_ns: f64,
    /// The smallest share of its work a kernel could skip where it is timed (doing it all
    /// where it is audited) and still be caught.
    pub detection_limit: f64,
    /// Why the cell's reading is suspect, where it is.
    pub suspect: Option<String>,
}

/// The test's finding on a cell whose headline reading is `reading_ns` and whose timed
/// samples are `steady`, unless its records say why its times are not set against each
/// other, or there is nothing to set. Records from before these audits (no audit among the
/// timed launches, no weaker audit's reason) carry their verdict themselves.
pub fn judged(
    records: &[&CellRecord],
    reading_ns: Option<f64>,
    steady: Option<&Stats>,
) -> Option<Judgement> {
    let audits: Vec<_> = records.iter().filter_map(|r| r.audit.as_ref()).collect();
    let current = audits
        .iter()
        .any(|a| a.among.is_some() || a.weaker.is_some());
    if !current || audits.iter().any(|a| a.unjudged.is_some()) {
        return None;
    }
    let finite = |v: &[f64]| {
        v.iter()
            .copied()
            .filter(|t| t.is_finite())
            .collect::<Vec<_>>()
    };
    let among = audits.iter().filter_map(|a| a.among.as_ref());
    let audited: Vec<f64> = among.clone().flat_map(|m| finite(&m.readings_ns)).collect();
    let decoys: Vec<f64> = among.flat_map(|m| finite(&m.decoys_ns)).collect();
    let after: Vec<f64> = (audits.iter().filter(|a| a.weaker.is_some()))
        .filter_map(|a| a.launch_ns)
        .collect();
    match steady {
        Some(s) if !decoys.is_empty() && !audited.is_empty() && s.count as usize >= MIN_SAMPLES => {
            against_decoys(&audited, &decoys, s.iqr)
        }
        _ => band(&[audited, after].concat(), reading_ns?),
    }
}

/// The audited median against the decoys': suspect beyond `Z_FALSE_ALARM` standard errors
/// of the difference plus the margin. The standard error takes the larger of two spreads:
/// the cell's timed samples' (`iqr_ns`), and the regions' own about their medians (after
/// the copy, regions may spread more than the timed samples); a median of k readings of
/// that spread varies as sqrt(pi / 2k) of it.
fn against_decoys(audited: &[f64], decoys: &[f64], iqr_ns: f64) -> Option<Judgement> {
    let (k, m) = (audited.len(), decoys.len());
    let (audited_ns, baseline_ns) = (median(audited.to_vec())?, median(decoys.to_vec())?);
    let sigma = (iqr_ns / 1.349).max(regions_sigma(audited, decoys));
    let se = sigma * (std::f64::consts::FRAC_PI_2 * (1.0 / k as f64 + 1.0 / m as f64)).sqrt();
    let margin = (MARGIN_SHARE * baseline_ns).max(MARGIN_NS);
    let bound_ns = Z_FALSE_ALARM * se + margin;
    let suspect = (audited_ns - baseline_ns > bound_ns).then(|| {
        format!(
            "suspect: {k} audited launches on new inputs read {:.3} µs (median), {m} decoys staged alike {:.3} µs ({:.2}x), beyond the {:.3} µs noise and margin allow: the timed launches skipped work the audited ones did",
            audited_ns / 1e3,
            baseline_ns / 1e3,
            audited_ns / baseline_ns,
            bound_ns / 1e3,
        )
    });
    Some(Judgement {
        against: Against::Decoys,
        audited_ns,
        baseline_ns,
        bound_ns,
        detection_limit: bound_ns / (baseline_ns + bound_ns),
        suspect,
    })
}

/// The regions' own spread, as a normal's sigma: the median absolute deviation of each
/// reading from its group's median (audited, decoys), pooled, times 1.4826; 0 where no
/// group has two readings.
fn regions_sigma(audited: &[f64], decoys: &[f64]) -> f64 {
    let deviations: Vec<f64> = [audited, decoys]
        .into_iter()
        .filter(|group| group.len() >= 2)
        .flat_map(|group| {
            let centre = median(group.to_vec()).unwrap_or_default();
            group.iter().map(move |x| (x - centre).abs())
        })
        .collect();
    median(deviations).map_or(0.0, |mad| 1.4826 * mad)
}

/// The audited median against the cell's reading, by the fixed band: it lets through any
/// kernel that skips less than half its work, which is why decoys are set against audits
/// wherever the samples allow.
fn band(audited: &[f64], reading_ns: f64) -> Option<Judgement> {
    let audited_ns = median(audited.to_vec())?;
    if !reading_ns.is_finite() {
        return None;
    }
    let bound_ns = (BAND_RATIO - 1.0) * reading_ns + BAND_SLACK_NS;
    let suspect = (audited_ns > reading_ns + bound_ns).then(|| {
        format!(
            "suspect: the timed launches read {:.3} µs, but {} on new inputs took {:.3} µs ({:.1}x, more than {BAND_RATIO}x + {} µs): the timed launches did not do the work the audited ones did (a result kept from earlier inputs, or work skipped once done)",
            reading_ns / 1e3,
            match audited.len() {
                1 => "one launch".to_string(),
                n => format!("{n} launches (median)"),
            },
            audited_ns / 1e3,
            audited_ns / reading_ns,
            BAND_SLACK_NS / 1e3
        )
    });
    Some(Judgement {
        against: Against::Reading,
        audited_ns,
        baseline_ns: reading_ns,
        bound_ns,
        detection_limit: bound_ns / (reading_ns + bound_ns),
        suspect,
    })
}

/// A cell's audits, over its runs.
#[derive(Debug, Clone, PartialEq)]
pub struct CellAudits {
    pub cell: usize,
    /// Audited regions and decoys among the timed ones, over the runs.
    pub regions: usize,
    pub decoys: usize,
    /// The test's finding, where it could be made.
    pub judgement: Option<Judgement>,
    /// Why the cell got only the weaker audit, where it did.
    pub weaker: Option<String>,
    /// Why the times were not set against each other, where they were not.
    pub unjudged: Option<String>,
    /// Host time the audits took, and the cell's runs' wall time, in s.
    pub cost_s: f64,
    pub wall_s: f64,
}

/// The audits of every cell that ran one of the current kind (audited regions among the
/// timed ones, or the weaker audit with its reason); empty for a run from before them.
pub fn of(a: &Analysis) -> Vec<CellAudits> {
    (a.run.plan.cells.iter())
        .filter_map(|c| {
            let records = a.records.get(&c.index)?;
            let steady = a.reduced.stats.get(c.index, super::Phase::Steady);
            let reading = a.headline(c).map(|s| s.median);
            let per_region = c.knobs.launches.count();
            cell(c.index, records, (reading, steady.as_ref()), per_region)
        })
        .collect()
}

/// A cell's audits; `per_region`: launches in one timed region. In a batch or a graph of
/// N launches on one data set, a kernel that tells new data apart does all its work on the
/// region's first launch only, so it is caught only down to N times the limit.
fn cell(
    index: usize,
    records: &[&CellRecord],
    (reading, steady): (Option<f64>, Option<&Stats>),
    per_region: u64,
) -> Option<CellAudits> {
    let audits: Vec<_> = records.iter().filter_map(|r| r.audit.as_ref()).collect();
    if !audits
        .iter()
        .any(|a| a.among.is_some() || a.weaker.is_some())
    {
        return None;
    }
    let among: Vec<_> = audits.iter().filter_map(|a| a.among.as_ref()).collect();
    let unjudged = audits.iter().find_map(|a| a.unjudged.clone());
    Some(CellAudits {
        cell: index,
        regions: among.iter().map(|m| m.readings_ns.len()).sum(),
        decoys: among.iter().map(|m| m.decoys_ns.len()).sum(),
        judgement: judged(records, reading, steady).map(|mut j| {
            // The weaker audit's one launch after the timed ones is a region of its own.
            if audits.iter().all(|a| a.weaker.is_none()) {
                j.detection_limit = (j.detection_limit * per_region as f64).min(1.0);
            }
            j
        }),
        weaker: audits.iter().find_map(|a| a.weaker.clone()),
        unjudged,
        cost_s: audits.iter().map(|a| a.cost_s).sum(),
        wall_s: records.iter().map(|r| r.wall_s).sum(),
    })
}

/// The audits' share of the audited cells' wall time: their summed cost over the summed
/// wall time of the runs.
pub fn cost_share(audits: &[CellAudits]) -> Option<f64> {
    let wall: f64 = audits.iter().map(|a| a.wall_s).sum();
    (wall > 0.0).then(|| audits.iter().map(|a| a.cost_s).sum::<f64>() / wall)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{AuditRecord, AuditsAmong, Status};

    fn run(audited: Vec<f64>, decoys: Vec<f64>) -> CellRecord {
        let mut r = CellRecord::failed(0, "c", 0, String::new());
        r.status = Status::Ok;
        r.wall_s = 1.0;
        r.audit = Some(AuditRecord {
            cost_s: 0.02,
            among: Some(AuditsAmong {
                readings_ns: audited,
                decoys_ns: decoys,
                ..Default::default()
            }),
            ..Default::default()
        });
        r
    }

    fn steady(count: u64, iqr: f64) -> Stats {
        Stats {
            count,
            iqr,
            ..Default::default()
        }
    }

    fn judge(rs: &[&CellRecord], iqr: f64, count: u64) -> Option<Judgement> {
        judged(rs, Some(315e3), Some(&steady(count, iqr)))
    }

    #[test]
    fn audits_slower_than_their_decoys_beyond_the_noise_are_suspect() {
        // A kernel that skips a tenth of its work where it is timed: 315 µs, 350 audited;
        // its timed samples spread by an IQR of 1 µs.
        let r = run(
            vec![350e3, 351e3, 349e3, 352e3],
            vec![315e3, 316e3, 314e3, 315e3],
        );
        let j = judge(&[&r], 1e3, 20).unwrap();
        assert_eq!(j.against, Against::Decoys);
        let why = j.suspect.unwrap();
        assert!(why.contains("1.11x") && why.contains("4 decoys"), "{why}");
        // The bound: 3.09 standard errors and the 2% margin (6.3 µs). The regions spread
        // more than the timed samples' 0.74 µs: their deviations from their medians have a
        // median of 0.75 µs, a sigma of 1.11 µs, so each error is 1.11 µs * sqrt(pi/2 * 1/2).
        assert!(
            (j.bound_ns - (3.09 * 0.9855e3 + 6.3e3)).abs() < 50.0,
            "{}",
            j.bound_ns
        );
        assert!(
            (j.detection_limit - 0.0288).abs() < 0.001,
            "{}",
            j.detection_limit
        );
    }

    #[test]
    fn regions_that_spread_more_than_the_timed_samples_widen_the_bound() {
        // Quiet timed samples (IQR 0.1 µs), regions after the copy 1 µs apart: two audited
        // at 31.6 and 32.6 µs against decoys at 30.7 and 31.7 read 0.9 µs apart, within.
        let r = run(vec![31.6e3, 32.6e3], vec![30.7e3, 31.7e3]);
        let j = judge(&[&r], 100.0, 50).unwrap();
        assert!(j.suspect.is_none(), "{:?}", j.suspect);
        assert!(j.bound_ns > 2e3, "{}", j.bound_ns);
        // Regions as quiet as the samples, 1.1 µs apart, are suspect (the bound is 0.9 µs).
        let r = run(vec![32.3e3, 32.3e3], vec![31.2e3, 31.2e3]);
        assert!(judge(&[&r], 100.0, 50).unwrap().suspect.is_some());
    }

    #[test]
    fn honest_audits_within_the_noise_or_the_margin_are_not_suspect() {
        // The copy before both slows both: the audited read as the decoys do.
        let r = run(
            vec![112e3, 113e3, 111e3, 112e3],
            vec![112e3, 111e3, 113e3, 112e3],
        );
        assert!(judge(&[&r], 1e3, 200).unwrap().suspect.is_none());
        // 1.5% apart, within the margin.
        let r = run(vec![101.5e3; 4], vec![100e3; 4]);
        assert!(judge(&[&r], 100.0, 200).unwrap().suspect.is_none());
        // A noisy cell needs more: 10% apart with an IQR of 20%.
        let r = run(vec![110e3; 4], vec![100e3; 4]);
        assert!(judge(&[&r], 20e3, 200).unwrap().suspect.is_none());
        // A 1 µs kernel: 0.3 µs is within the events' spread.
        let r = run(vec![1.3e3; 4], vec![1e3; 4]);
        assert!(judge(&[&r], 10.0, 200).unwrap().suspect.is_none());
    }

    #[test]
    fn runs_pool_and_without_decoys_the_band_judges() {
        let (a, b) = (
            run(vec![200e3; 2], vec![100e3; 2]),
            run(vec![200e3; 2], vec![100e3; 2]),
        );
        assert!(judge(&[&a, &b], 1e3, 100).unwrap().suspect.is_some());
        // Too few samples for the noise, or no decoys: the band against the 315 µs reading.
        let j = judge(&[&a], 1e3, 5).unwrap();
        assert_eq!((j.against, j.suspect), (Against::Reading, None));
        let lone = run(vec![700e3], vec![]);
        let j = judge(&[&lone], 1e3, 100).unwrap();
        assert!(j
            .suspect
            .unwrap()
            .contains("one launch on new inputs took 700.000 µs"));
        assert!(
            (j.detection_limit - 0.504).abs() < 0.001,
            "{}",
            j.detection_limit
        );
        // The weaker audit's one launch after the timed ones.
        let mut after = run(vec![], vec![]);
        let audit = after.audit.as_mut().unwrap();
        (audit.among, audit.weaker, audit.launch_ns) = (None, Some("why".into()), Some(1e6));
        assert!(judge(&[&after], 1e3, 100).unwrap().suspect.is_some());
        // Unjudged, or a record from before these audits: nothing here.
        after.audit.as_mut().unwrap().unjudged = Some("a host timer".into());
        assert_eq!(judge(&[&after], 1e3, 100), None);
        let mut old = run(vec![], vec![]);
        old.audit.as_mut().unwrap().among = None;
        assert_eq!(judge(&[&old], 1e3, 100), None);
    }

    #[test]
    fn a_cell_sums_its_audits_and_says_when_they_are_of_an_older_kind() {
        let (a, b) = (run(vec![1.0, 2.0], vec![1.0]), run(vec![3.0], vec![2.0]));
        let s = steady(100, 1.0);
        let c = cell(3, &[&a, &b], (Some(1.0), Some(&s)), 1).unwrap();
        assert_eq!((c.regions, c.decoys), (3, 2));
        assert!((cost_share(&[c]).unwrap() - 0.02).abs() < 1e-12);
        let mut old = run(vec![], vec![]);
        old.audit.as_mut().unwrap().among = None;
        assert_eq!(cell(3, &[&old], (Some(1.0), Some(&s)), 1), None);
        // In a graph of 20, a kernel that tells new data apart pays on one launch of 20.
        let one = cell(3, &[&b], (Some(1.0), Some(&s)), 1)
            .unwrap()
            .judgement
            .unwrap();
        let graph = cell(3, &[&b], (Some(1.0), Some(&s)), 20)
            .unwrap()
            .judgement
            .unwrap();
        assert!((graph.detection_limit - (20.0 * one.detection_limit).min(1.0)).abs() < 1e-12);
    }
}
