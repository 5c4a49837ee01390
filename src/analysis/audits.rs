//! A run's audits, cell by cell: how many regions of each kind sat among its timed
//! launches, what the tests found (`tells`), the detection limit a region of several
//! launches allows, and what the audits cost.

use super::bounds::Tell;
use super::facts::Facts;
use super::tells::{judged, Judgement, Readings};
use crate::protocol::{AuditsAmong, CellRecord, RegionHostTimes};

/// A cell's audits, over its runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellAudits {
    pub cell: usize,
    /// Audited regions, decoys and pauses among the timed ones, over the runs.
    pub regions: usize,
    pub decoys: usize,
    pub pauses: usize,
    /// The tests' findings, where they could be made.
    pub judgement: Option<Judgement>,
    /// Why the cell got only the weaker audit, where it did.
    pub weaker: Option<String>,
    /// Why the times were not set against each other, where they were not.
    pub unjudged: Option<String>,
    /// Host time the audits took, and the cell's runs' wall time, in s.
    pub cost_s: f64,
    pub wall_s: f64,
    /// The steady samples its runs took, and the host time of the sample loop per sample,
    /// the audit's regions among them included (the runs' median, in s; None in runs before
    /// it was recorded): the pace at which more samples would spread the audit's cost.
    pub samples: u64,
    pub sample_wall_s: Option<f64>,
    /// Of `cost_s`: the regions among the timed ones and the checks after the audited ones
    /// (both 0 in runs that predate them, and in the weaker audit's).
    pub regions_s: f64,
    pub checks_s: f64,
    /// How long every stage lasted, and stages whose draw outlasted it; None for a run
    /// from before the draws on the GPU (its stages copied two data sets in turn).
    pub wait_ns: Option<u64>,
    pub late: u64,
    /// Regions the audit's share of the cell's time left out.
    pub capped: u64,
    /// Single launches checked on audited regions' draws (`audit_rounds::SPOTS`).
    pub spots: u64,
    /// Of them, those read behind a wait kernel (none in runs from before they were).
    pub alone_read: u64,
    /// Audited regions run as probes over the held draw (`AuditsAmong::probe_positions`).
    pub probes: u64,
    /// Launches in each of the audit's regions, where fewer than in a timed one.
    pub region_launches: Option<u64>,
    /// Whether CUPTI read timed regions again for their first launches.
    pub firsts_read_again: bool,
    /// Of `cost_s`, in s, over the runs that recorded each region's host time: the regions'
    /// stages, the rest of the regions, and the audited ones' checks (None in runs before).
    pub split_s: Option<[f64; 3]>,
}

/// The audits of every cell that ran one of the current kind (regions among the timed
/// ones, or the weaker audit with its reason); empty for a run from before them.
pub fn of(a: &Facts) -> Vec<CellAudits> {
    (a.run.plan.cells.iter())
        .filter_map(|c| {
            let records = a.records.get(&c.index)?;
            let steady = a.reduced.stats.get(c.index, super::phase::Phase::Steady);
            let sorted = a.reduced.steady_sorted.get(&c.index).map(Vec::as_slice);
            let reading = (a.headline(c).map(|s| s.median), steady.as_ref(), sorted);
            let moved_to = a.clocks.get(&c.index).and_then(|k| k.moved_to);
            let readings = Readings::of(c, reading, (a.run.meta.device.as_ref(), moved_to));
            cell(c.index, records, &readings)
        })
        .collect()
}

/// A cell's audits. In a batch or a graph of
/// N launches on one data set, a kernel that tells new data apart does all its work on the
/// region's first launch only, so it is caught only down to N times the limit.
fn cell(index: usize, records: &[&CellRecord], readings: &Readings) -> Option<CellAudits> {
    let audits: Vec<_> = records.iter().filter_map(|r| r.audit.as_ref()).collect();
    if !audits
        .iter()
        .any(|a| a.among.is_some() || a.weaker.is_some())
    {
        return None;
    }
    let among: Vec<_> = audits.iter().filter_map(|a| a.among.as_ref()).collect();
    let unjudged = audits.iter().find_map(|a| a.unjudged.clone());
    let count = |of: fn(&AuditsAmong) -> usize| among.iter().map(|m| of(m)).sum();
    Some(CellAudits {
        cell: index,
        regions: count(|m| m.readings_ns.len()),
        decoys: count(|m| m.decoys_ns.len()),
        pauses: count(|m| m.pauses_ns.len()),
        judgement: judged(records, readings).map(|mut j| {
            // The weaker audit's one launch after the timed ones is a region of its own; a
            // region of several whose first launches were read is judged by them.
            let firsts = j
                .test(Tell::FirstData)
                .or(j.test(Tell::FirstPause))
                .is_some();
            // The longest of the runs' regions: a run that kept a timed region's counts so; a
            // run that held none (it only drew its own data) sized none.
            let per_region = (among.iter().filter(|m| holds_regions(m)))
                .map(|m| m.region_launches.unwrap_or(readings.per_region))
                .max()
                .unwrap_or(readings.per_region);
            if audits.iter().all(|a| a.weaker.is_none()) && !firsts {
                j.detection_limit = (j.detection_limit * per_region as f64).min(1.0);
            }
            j
        }),
        weaker: audits.iter().find_map(|a| a.weaker.clone()),
        unjudged,
        cost_s: audits.iter().map(|a| a.cost_s).sum(),
        wall_s: records.iter().map(|r| r.wall_s).sum(),
        samples: readings.steady.map_or(0, |s| s.count),
        sample_wall_s: crate::statistics::median(
            (records.iter())
                .filter_map(|r| r.sample_wall_ns.map(|ns| ns * 1e-9))
                .collect(),
        ),
        regions_s: audits.iter().map(|a| a.regions_s).sum(),
        checks_s: audits.iter().map(|a| a.checks_s).sum(),
        wait_ns: among.iter().find_map(|m| m.wait_ns),
        late: among.iter().map(|m| m.late).sum(),
        capped: among.iter().map(|m| m.capped).sum(),
        spots: among.iter().map(|m| m.spots).sum(),
        alone_read: among.iter().map(|m| m.alone_ns.len() as u64).sum(),
        probes: among.iter().map(|m| m.probe_positions.len() as u64).sum(),
        region_launches: super::tells::fewest_audit_launches(&among),
        firsts_read_again: (among.iter().filter_map(|m| m.by_cupti.as_ref()))
            .any(|k| !k.firsts_ns.is_empty()),
        split_s: split(&among),
    })
}

/// Whether a run's record holds regions among its timed launches.
fn holds_regions(m: &AuditsAmong) -> bool {
    !(m.readings_ns.is_empty() && m.decoys_ns.is_empty() && m.pauses_ns.is_empty())
}

/// The regions' stages, the rest of the regions and the checks, in s, over the runs that
/// recorded them (see [`CellAudits::split_s`]).
fn split(among: &[&AuditsAmong]) -> Option<[f64; 3]> {
    let hosts: Vec<_> = among.iter().filter_map(|m| m.host.as_ref()).collect();
    if hosts.is_empty() {
        return None;
    }
    let sum = |of: fn(&RegionHostTimes) -> &Vec<f64>| -> f64 {
        hosts.iter().flat_map(|h| of(h)).sum::<f64>() * 1e-6
    };
    let stages = sum(|h| &h.stages_us);
    Some([
        stages,
        sum(|h| &h.regions_us) - stages,
        sum(|h| &h.checks_us),
    ])
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
    use crate::analysis::tells_tests::{run, steady};
    use crate::protocol::FirstLaunches;

    #[test]
    fn the_regions_host_times_split_into_stages_regions_and_checks_over_the_runs_that_kept_them() {
        let host = |stages: Vec<f64>, regions: Vec<f64>, checks: Vec<f64>| AuditsAmong {
            host: Some(RegionHostTimes {
                kinds: "ap".into(),
                stages_us: stages,
                regions_us: regions,
                checks_us: checks,
            }),
            ..AuditsAmong::default()
        };
        let (a, b) = (
            host(vec![40.0, 50.0], vec![100.0, 120.0], vec![300.0, 0.0]),
            host(vec![60.0], vec![200.0], vec![500.0]),
        );
        let older = AuditsAmong::default();
        let [stages, regions, checks] = split(&[&a, &older, &b]).unwrap();
        assert!((stages - 150e-6).abs() < 1e-12, "{stages}");
        assert!((regions - 270e-6).abs() < 1e-12, "{regions}");
        assert!((checks - 800e-6).abs() < 1e-12, "{checks}");
        assert_eq!(split(&[&older]), None);
    }

    #[test]
    fn a_cell_sums_its_audits_and_says_when_they_are_of_an_older_kind() {
        let (a, b) = (
            run(vec![1.0, 2.0], vec![1.0], vec![1.0]),
            run(vec![3.0], vec![2.0], vec![]),
        );
        let s = steady(100, 1.0, 1.0);
        let r = Readings {
            reading_ns: Some(1.0),
            steady: Some(&s),
            steady_sorted: None,
            flushed: false,
            stage_allowance_ns: None,
            host_in_reading: false,
            per_region: 1,
            clock_moved_to: None,
        };
        let c = cell(3, &[&a, &b], &r).unwrap();
        assert_eq!((c.regions, c.decoys, c.pauses), (3, 2, 1));
        assert!((cost_share(&[c]).unwrap() - 0.02).abs() < 1e-12);
        let mut old = run(vec![], vec![], vec![]);
        old.audit.as_mut().unwrap().among = None;
        assert_eq!(cell(3, &[&old], &r), None);
    }

    #[test]
    fn in_a_region_of_several_the_limit_grows_with_the_audits_launches() {
        // Regions that read alike, 0.2% apart: a limit well under 1.
        let (read, steady_ns) = (vec![100e3, 100.2e3, 100.1e3], steady(200, 100.0, 100e3));
        let r = run(read.clone(), read.clone(), read);
        let readings = |per_region| Readings {
            reading_ns: Some(100e3),
            steady: Some(&steady_ns),
            steady_sorted: None,
            flushed: false,
            stage_allowance_ns: None,
            host_in_reading: false,
            per_region,
            clock_moved_to: None,
        };
        let limit = |r: &CellRecord, per_region| {
            let c = cell(3, &[r], &readings(per_region)).unwrap();
            c.judgement.unwrap().detection_limit
        };
        let one = limit(&r, 1);
        assert!(one > 0.0 && 20.0 * one < 1.0, "{one}");
        // In a graph of 20, a kernel that tells new data apart pays on one launch of 20.
        assert!((limit(&r, 20) - 20.0 * one).abs() < 1e-12);
        // Where the audit's regions held 4 launches of the 20, it pays on one of 4.
        let mut short = r.clone();
        let among = short.audit.as_mut().unwrap().among.as_mut().unwrap();
        among.region_launches = Some(4);
        assert!((limit(&short, 20) - 4.0 * one).abs() < 1e-12);
        // Beside a run that kept a timed region's 20, the longer counts.
        let pair = |a: &CellRecord, per_region| {
            let c = cell(3, &[a, &r], &readings(per_region)).unwrap();
            c.judgement.unwrap().detection_limit
        };
        let base = pair(&r, 1);
        assert!(base > 0.0 && 20.0 * base < 1.0, "{base}");
        assert!((pair(&short, 20) - 20.0 * base).abs() < 1e-12);
        // Beside a run that held no region (an interleaved round that only drew its own
        // data), the shorter regions count.
        let mut bare = r.clone();
        let among = bare.audit.as_mut().unwrap().among.as_mut().unwrap();
        (among.readings_ns, among.decoys_ns, among.pauses_ns) = (vec![], vec![], vec![]);
        let with_bare = cell(3, &[&short, &bare], &readings(20)).unwrap();
        let alone = limit(&short, 20);
        assert!((with_bare.judgement.unwrap().detection_limit - alone).abs() < 1e-12);
    }

    #[test]
    fn a_region_whose_first_launch_does_more_than_the_rest_is_suspect() {
        // A graph of 20 by events behind a wait kernel: every replay's first launch follows
        // a pause, and a kernel that does all its work only after one does it there (370 µs)
        // and half on the rest (190 µs). An honest one's first pays the graph's start.
        let judge = |first: f64, reading: f64| {
            let mut r = run(vec![reading; 2], vec![reading; 2], vec![reading; 2]);
            let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
            among.firsts = Some(FirstLaunches {
                audited: vec![first; 2],
                decoys: vec![first; 2],
                pauses: vec![first; 2],
                timed_count: 200,
                timed_median: first,
                timed_iqr: 700.0,
                timed_max: first + 1e3,
            });
            let s = steady(200, 700.0, reading);
            let readings = Readings {
                reading_ns: Some(reading),
                steady: Some(&s),
                steady_sorted: None,
                flushed: false,
                stage_allowance_ns: None,
                host_in_reading: false,
                per_region: 20,
                clock_moved_to: None,
            };
            cell(0, &[&r], &readings).unwrap().judgement.unwrap()
        };
        let cheat = judge(369.5e3, 213.2e3);
        assert!(cheat.suspect.unwrap().contains("first launches"));
        let honest = judge(353.1e3, 350.3e3);
        assert!(honest.suspect.is_none(), "{:?}", honest.suspect);
        assert!(honest.detection_limit < 0.05, "{}", honest.detection_limit);
    }

    #[test]
    fn on_an_idle_queue_the_first_launches_read_again_by_cupti_judge_first_against_rest() {
        // A batch of 500 by events on an idle queue, on an H200: the honest matmul's first
        // launches read 79.7 µs, 47.4 µs a launch in all, the host's submission in the
        // first; CUPTI's spans of eight regions more say 48.0 µs first and 47.3 µs the rest.
        // A kernel that works only after a pause: 48.0 µs first, 29.5 µs the rest.
        let judge = |(first, reading): (f64, f64), again: Option<(f64, f64)>| {
            let mut r = run(vec![reading; 2], vec![reading; 2], vec![reading; 6]);
            let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
            among.firsts = Some(FirstLaunches {
                audited: vec![first; 2],
                decoys: vec![first; 2],
                pauses: vec![first; 6],
                timed_count: 200,
                timed_median: first,
                timed_iqr: 2e3,
                timed_max: first + 5e3,
            });
            among.by_cupti = again.map(|(f, rest)| crate::protocol::KernelRecords {
                firsts_ns: vec![f, f + 100.0, f - 100.0, f, f, f + 50.0, f, f],
                rests_ns: vec![rest; 8],
                ..Default::default()
            });
            let s = steady(200, 50.0, reading);
            let readings = Readings {
                reading_ns: Some(reading),
                steady: Some(&s),
                steady_sorted: None,
                flushed: false,
                stage_allowance_ns: None,
                host_in_reading: true,
                per_region: 500,
                clock_moved_to: None,
            };
            cell(0, &[&r], &readings).unwrap().judgement.unwrap()
        };
        let by_events = judge((79.7e3, 47.4e3), None);
        assert!(by_events.suspect.is_some());
        let honest = judge((79.7e3, 47.4e3), Some((48.0e3, 47.3e3)));
        assert!(honest.suspect.is_none(), "{:?}", honest.suspect);
        let cheat = judge((64.2e3, 29.5e3), Some((48.0e3, 29.5e3)));
        let why = cheat.suspect.unwrap();
        assert!(
            why.contains("by CUPTI") && why.contains("first launches"),
            "{why}"
        );
    }

    #[test]
    fn in_a_graph_the_first_launches_catch_a_kernel_that_does_its_work_once_per_region() {
        // A graph of 20: on new data the first launch does all its work (345 µs), the rest
        // half (190 µs): the regions' means differ by less than their bound (a 20th of the
        // difference is 4%: here 1%), their first launches by 1.8x.
        let mut r = run(vec![192e3; 2], vec![190e3; 2], vec![190e3; 2]);
        let among = r.audit.as_mut().unwrap().among.as_mut().unwrap();
        among.firsts = Some(FirstLaunches {
            audited: vec![350e3, 349e3],
            decoys: vec![195e3, 196e3],
            pauses: vec![195e3, 194e3],
            timed_count: 200,
            timed_median: 195e3,
            timed_iqr: 1e3,
            timed_max: 199e3,
        });
        let s = steady(200, 1e3, 190e3);
        let readings = Readings {
            reading_ns: Some(190e3),
            steady: Some(&s),
            steady_sorted: None,
            flushed: false,
            stage_allowance_ns: None,
            host_in_reading: false,
            per_region: 20,
            clock_moved_to: None,
        };
        let c = cell(0, &[&r], &readings).unwrap();
        let j = c.judgement.unwrap();
        let why = j.suspect.clone().unwrap();
        assert!(why.contains("first launches"), "{why}");
        // Its limit is the first launches', not twenty times a region's.
        assert!(j.detection_limit < 0.1, "{}", j.detection_limit);
        // Without them, twenty times.
        let mut r2 = r.clone();
        r2.audit.as_mut().unwrap().among.as_mut().unwrap().firsts = None;
        let c2 = cell(0, &[&r2], &readings).unwrap();
        assert!(c2.judgement.unwrap().detection_limit > 0.3);
    }
}
