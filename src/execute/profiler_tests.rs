//! The profiler's report read into launches, and launches cut into cells.
use super::*;

const REPORT: &str = "==PROF== Connected to process 1\n\
\"ID\",\"Process ID\",\"Kernel Name\",\"Context\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
\"0\",\"1\",\"matMulKernel\",\"1\",\"gpu__time_duration.sum\",\"nsecond\",\"20,100\"\n\
\"0\",\"1\",\"matMulKernel\",\"1\",\"sm__cycles_elapsed.avg.per_second\",\"hz\",\"1,979,436,476.44\"\n\
\"1\",\"1\",\"empty\",\"1\",\"gpu__time_duration.sum\",\"nsecond\",\"900\"\n\
\"2\",\"1\",\"matMulKernel\",\"1\",\"sm__cycles_elapsed.avg.per_second\",\"hz\",\"1,960,000,000\"\n\
\"2\",\"1\",\"matMulKernel\",\"1\",\"gpu__time_duration.sum\",\"usecond\",\"13.5\"\n\
\"3\",\"1\",\"matMulKernel\",\"1\",\"gpu__time_duration.sum\",\"nsecond\",\"13,300\"\n\
\"3\",\"1\",\"matMulKernel\",\"1\",\"sm__cycles_elapsed.avg.per_second\",\"hz\",\"1,970,000,000\"\n";

#[test]
fn the_report_gives_each_launch_in_nanoseconds() {
    let l = launches(REPORT).unwrap();
    assert_eq!(l.len(), 4);
    assert_eq!(
        (l[0].kernel.as_str(), l[0].ns, l[0].sm_hz),
        ("matMulKernel", 20_100.0, Some(1_979_436_476.44))
    );
    // Both metrics are kept as counters too, in the report's units.
    assert_eq!(l[0].counters.len(), 2);
    assert_eq!(l[2].counters[1].unit, "usecond");
    assert_eq!((l[1].ns, l[1].sm_hz), (900.0, None));
    assert_eq!((l[2].ns, l[2].sm_hz), (13_500.0, Some(1.96e9)));
    assert!(launches("no table here").is_err());
    let no_time = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
                   \"0\",\"k\",\"sm__cycles_elapsed.avg.per_second\",\"hz\",\"1\"\n";
    assert!(launches(no_time)
        .unwrap_err()
        .to_string()
        .contains("no time"));
    // Rows of one launch apart, a short row and a clock it could not read.
    let odd = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
               \"0\",\"k\",\"sm__cycles_elapsed.avg.per_second\",\"hz\",\"n/a\"\n\
               \"1\",\"k\",\"gpu__time_duration.sum\",\"ns\",\"5\"\n\
               \"1\",\"k\"\n\
               \"0\",\"k\",\"gpu__time_duration.sum\",\"ns\",\"7\"\n";
    let l = launches(odd).unwrap();
    assert_eq!(
        l.iter().map(|l| (l.ns, l.sm_hz)).collect::<Vec<_>>(),
        [(7.0, None), (5.0, None)]
    );
}

/// A matmul cell that launched its kernel `launches_done` times and took `samples`
/// samples, given its share of `REPORT`.
fn assigned(launches_done: u64, samples: usize) -> CellRecord {
    let mut r = CellRecord::new(0, "m", 0);
    r.status = crate::protocol::Status::Ok;
    r.kernel_launches = launches_done;
    r.samples_ns = vec![f64::NAN; samples];
    let mut records = vec![r];
    let report = launches(REPORT).unwrap();
    assign(&mut records, &report, |_| "matMulKernel".into(), |_| 1);
    records.remove(0)
}

#[test]
fn the_timed_launches_are_the_last_of_each_cell() {
    // One checked launch, then the first timed launch and one sample.
    let r = assigned(3, 1);
    assert_eq!(r.first_ns, Some(13_500.0));
    assert_eq!(r.samples_ns, vec![13_300.0]);
    // The timed launches' own clock: the median of 1960 and 1970 MHz.
    assert_eq!(r.profiler_sm_mhz, Some(1965.0));
}

#[test]
fn a_cell_the_report_is_short_of_fails_as_the_profilers() {
    let r = assigned(50, 1);
    assert_eq!(r.status, crate::protocol::Status::Failed);
    assert_eq!(r.failure, Some(FailureKind::Profiler));
    let why = r.error.unwrap();
    assert!(why.contains("fewer than the cells launched"), "{why}");
}

#[test]
fn a_failed_cell_keeps_its_launches_out_of_the_next_one() {
    let mut failed = CellRecord::failed(0, "m", 0, FailureKind::Check, "check failed".into());
    failed.kernel_launches = 1;
    let mut ok = CellRecord::new(1, "m", 0);
    ok.status = crate::protocol::Status::Ok;
    ok.kernel_launches = 2;
    ok.samples_ns = vec![f64::NAN];
    let mut records = vec![failed, ok];
    assign(
        &mut records,
        &launches(REPORT).unwrap(),
        |_| "matMulKernel".into(),
        |_| 1,
    );
    assert_eq!(records[0].first_ns, None);
    assert_eq!(records[1].first_ns, Some(13_500.0));
    assert_eq!(records[1].samples_ns, vec![13_300.0]);
}

#[test]
fn the_audit_launch_comes_after_the_timed_ones_and_gets_its_time() {
    let launch = |ns| Profiled {
        kernel: "k".into(),
        ns,
        sm_hz: None,
        counters: vec![],
    };
    // A checked launch, the first timed launch, two samples, then the audit's launch.
    let report = [50e3, 1.5e3, 1.6e3, 1.4e3, 46.6e3].map(launch);
    let mut records = vec![audited(5, 2)];
    assign(&mut records, &report, |_| "k".into(), |_| 1);
    let r = &records[0];
    assert_eq!(r.first_ns, Some(1.5e3));
    assert_eq!(r.samples_ns, vec![1.6e3, 1.4e3]);
    let audit = r.audit.as_ref().unwrap();
    assert_eq!(audit.launch_ns, Some(46.6e3));
}

#[test]
fn an_audit_the_worker_left_unjudged_gets_its_time_too() {
    let launch = |ns| Profiled {
        kernel: "k".into(),
        ns,
        sm_hz: None,
        counters: vec![],
    };
    let report = [50e3, 1.5e3, 1.6e3, 46.6e3].map(launch);
    let mut r = CellRecord::new(0, "k", 0);
    r.status = crate::protocol::Status::Ok;
    r.kernel_launches = 4;
    r.samples_ns = vec![f64::NAN];
    r.audit = Some(crate::protocol::AuditRecord {
        launches: 1,
        unjudged: Some("its managed inputs migrate back on the audit's refill".into()),
        ..Default::default()
    });
    let mut records = vec![r];
    assign(&mut records, &report, |_| "k".into(), |_| 1);
    let audit = records[0].audit.as_ref().unwrap();
    assert_eq!(audit.launch_ns, Some(46.6e3));
    assert!(audit.unjudged.is_some());
}

#[test]
fn too_few_launches_fail_the_cell() {
    assert_eq!(assigned(5, 0).status, crate::protocol::Status::Failed);
}

#[test]
fn the_worker_runs_under_ncu_with_clocks_left_alone() {
    let w = WorkerProgram {
        program: "/bin/runner".into(),
        args: vec!["__worker".into()],
    };
    let p = wrap(
        Path::new("/x/ncu"),
        &w,
        ProfilerCache::All,
        &["dram__bytes_read.sum".into(), TIME.into()],
        Path::new("/tmp/r.csv"),
    );
    let args = p.args.join(" ");
    assert!(
        args.contains(&format!(
            "--metrics {TIME},{SM_CLOCK},dram__bytes_read.sum "
        )),
        "{args}"
    );
    assert!(args.contains("--clock-control none"), "{args}");
    assert!(args.contains("--cache-control all"), "{args}");
    assert!(args.ends_with("/tmp/r.csv /bin/runner __worker"), "{args}");
}

#[test]
fn a_counter_pass_gives_each_counter_its_median_over_the_steady_launches() {
    let launch = |ns: f64, dram: f64| Profiled {
        kernel: "k".into(),
        ns,
        sm_hz: None,
        counters: vec![Counter {
            name: "dram__bytes_read.sum".into(),
            unit: "byte".into(),
            value: dram,
        }],
    };
    // A checked launch, the first timed launch (cold: 9 MB), three samples, the audit's.
    let report = [
        (5.0, 8e6),
        (7.0, 9e6),
        (4.0, 1e6),
        (4.2, 2e6),
        (4.4, 3e6),
        (5.0, 8e6),
    ]
    .map(|(ns, d)| launch(ns, d));
    let mut records = vec![audited(6, 3)];
    assign_counters(
        &mut records,
        &report,
        ProfilerCache::None,
        |_| "k".into(),
        |_| 1,
    );
    let c = records[0].counters.as_ref().unwrap();
    assert_eq!(
        (c.cache.as_str(), c.launches, c.launch_ns),
        ("none", 3, Some(4.2))
    );
    assert_eq!(c.value("dram__bytes_read.sum"), Some(2e6));
    // Too few launches in the report fail the cell, as a timed pass's would.
    let mut short = records[0].clone();
    short.counters = None;
    short.kernel_launches = 9;
    let mut records = vec![short];
    assign_counters(
        &mut records,
        &report,
        ProfilerCache::None,
        |_| "k".into(),
        |_| 1,
    );
    assert_eq!(records[0].status, crate::protocol::Status::Failed);
}

/// A cell of kernel `k` that launched it `launches_done` times and took `samples` samples,
/// the last launch its audit's.
fn audited(launches_done: u64, samples: usize) -> CellRecord {
    let mut r = CellRecord::new(0, "k", 0);
    r.status = crate::protocol::Status::Ok;
    r.kernel_launches = launches_done;
    r.samples_ns = vec![f64::NAN; samples];
    r.audit = Some(crate::protocol::AuditRecord {
        launches: 1,
        ..Default::default()
    });
    r
}
