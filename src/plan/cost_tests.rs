//! The plan's estimate of a run's time (`cost`, `model`) and `plan --probe`'s cells.

use super::tests::{described, experiment};
use super::*;
use std::collections::HashMap;

#[test]
fn the_estimate_counts_the_gpu_warm_up() {
    let e = experiment("[[variant]]\nname = \"a\"\n[environment]\ngpu_warmup = \"30s\"\n");
    let text = described(&e, &Plan::new(&e).unwrap());
    assert!(text.contains("GPU warm-up: 30s"), "{text}");
    assert!(text.contains("; GPU warm-up 30.0 s"), "{text}");
}

#[test]
fn the_counter_passes_are_planned_and_costed_first_run_or_not() {
    let e =
        experiment("[[variant]]\nname = \"a\"\ncounters = \"memory\"\n[[variant]]\nname = \"b\"\n");
    let plan = Plan::new(&e).unwrap();
    let first = cost::Estimate::new(&e, &plan, &HashMap::new());
    // One pass (the shared process's hot cells), four cells counted.
    assert_eq!(first.counter_passes, 1);
    assert!(first.counted_s > 0.0 && first.counted_known_s == 0.0);
    let text = described(&e, &plan);
    assert!(
        text.contains("counters: 4 cell(s) read 6 counters")
            && text.contains("1 counter pass(es) under Nsight Compute"),
        "{text}"
    );
    // An earlier run's cell times hold no counter pass: the model's is added to them.
    let previous: HashMap<String, f64> = plan.cells.iter().map(|c| (c.id.clone(), 1.0)).collect();
    let again = cost::Estimate::new(&e, &plan, &previous);
    assert_eq!(again.counted_known_s, first.counted_s);
    assert!(
        again.total_s(&plan) > 8.0 + first.counted_s,
        "{}",
        again.total_s(&plan)
    );
}

/// A kernel whose launch moves 3.35 GB, one millisecond at an H100's DRAM peak.
const MILLISECOND: &str = "bytes = \"3352320000\"\n";

#[test]
fn a_first_runs_estimate_counts_declared_work_at_the_peaks_and_says_so() {
    let e = experiment(&format!(
        "{MILLISECOND}[[variant]]\nname = \"a\"\nsamples = 1000\n[report]\nfloor = false\n"
    ));
    let plan = Plan::new(&e).unwrap();
    let estimate = cost::Estimate::new(&e, &plan, &HashMap::new());
    // 4 cells of 1 + 1000 timed launches of 1 ms each (and 3 µs to launch, 12 µs a region).
    let per_cell = 1001.0 * (1e-3 + 3e-6 + 12e-6);
    assert!(
        (estimate.launches_s - 4.0 * per_cell).abs() < 1e-6,
        "{}",
        estimate.launches_s
    );
    assert!(estimate.undeclared.is_empty() && estimate.budget_stops.is_empty());
    let text = described(&e, &plan);
    assert!(
        text.contains(
            "for a first run, modelled: the kernels' launches 4.1 s at an assumed H100's peaks"
        ),
        "{text}"
    );
    // From a previous run's times where it has every cell.
    let previous: HashMap<String, f64> = plan.cells.iter().map(|c| (c.id.clone(), 2.0)).collect();
    let text = describe(&e, &plan, &previous, &Default::default(), Shown::default());
    assert!(
        text.contains(
            "estimated time: 8.2 s from the previous run's cell times: the cells it ran 8.0 s"
        ),
        "{text}"
    );
}

#[test]
fn a_probed_kernel_counts_at_its_probed_time_and_the_plan_gives_the_probes_range() {
    let e = experiment(&format!(
        "{MILLISECOND}[[variant]]\nname = \"a\"\nsamples = 1000\n[report]\nfloor = false\n"
    ));
    let plan = Plan::new(&e).unwrap();
    // The kernel reads 3 ms a launch, not the 1 ms its bytes take at the peak.
    let probed = probe::Probe {
        per_launch: (0..plan.cells.len()).map(|c| (c, 3e-3)).collect(),
    };
    let estimate = cost::Estimate::probed(&e, &plan, &HashMap::new(), &probed);
    // 1 + 1000 timed launches, 12 µs a region.
    let per_cell = 1001.0 * (3e-3 + 12e-6);
    assert!(
        (estimate.launches_s - 4.0 * per_cell).abs() < 1e-6,
        "{}",
        estimate.launches_s
    );
    assert_eq!((estimate.probed, estimate.unprobed), (4, 0));
    let text = describe(&e, &plan, &HashMap::new(), &probed, Shown::default());
    assert!(
        text.contains("the kernels' launches 12.1 s as the probe timed them")
            && text.contains("first runs took 0.65 to 1.5 times what it said: 8.0 s to 18.5 s"),
        "{text}"
    );
    // A cell the probe could not time is modelled, and the plan says which range holds.
    let one = probe::Probe {
        per_launch: [(0, 3e-3)].into(),
    };
    let text = describe(&e, &plan, &HashMap::new(), &one, Shown::default());
    assert!(
        text.contains("as the probe timed them (1 cells) or at an assumed H100's peaks (3 cells it could not time)")
            && text.contains("A model, not a bound"),
        "{text}"
    );
}

#[test]
fn the_budget_stops_a_slow_cell_after_its_minimum_and_says_so_in_the_plan() {
    // 1000 launches of 100 ms: 100 s a cell, stopped at 30 s.
    let slow = MILLISECOND.replace("3352320000", "335232000000");
    let e = experiment(&format!(
        "{slow}[[variant]]\nname = \"a\"\nsamples = 1000\n[report]\nfloor = false\n"
    ));
    let plan = Plan::new(&e).unwrap();
    let estimate = cost::Estimate::new(&e, &plan, &HashMap::new());
    assert_eq!(estimate.budget_stops.len(), 4);
    let text = described(&e, &plan);
    assert!(
        text.contains(
            "budget: stops once the steady samples hold 30s of GPU time (at least 10 samples)"
        ) && text.contains("By the estimate it stops 4 cell(s): k/n=1 m=10/a"),
        "{text}"
    );
    // 4 cells of about 301 launches of 100 ms: the first, the 300 samples that hold 30 s.
    assert!(
        (estimate.launches_s / 4.0 - 30.1).abs() < 0.1,
        "{}",
        estimate.launches_s
    );
    // Fixed counts take every sample.
    let e = experiment(&format!(
        "{slow}[[variant]]\nname = \"a\"\nsamples = 1000\nbudget = \"none\"\n[report]\nfloor = false\n"
    ));
    let plan = Plan::new(&e).unwrap();
    let estimate = cost::Estimate::new(&e, &plan, &HashMap::new());
    assert!(estimate.budget_stops.is_empty());
    assert!(described(&e, &plan).contains("budget: no budget: every sample asked for"));
}

#[test]
fn a_probe_times_each_build_point_and_cache_state_once() {
    use super::probe::{ProbePlan, PROBE_SAMPLES};
    let e = experiment("[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\ntimer = \"cupti\"\n[[variant]]\nname = \"c\"\ncache = \"flush\"\n");
    let plan = Plan::new(&e).unwrap();
    let probe = ProbePlan::new(&plan);
    // m does not change the launch: two n, hot and flushed.
    assert_eq!(probe.plan.cells.len(), 4);
    let of = |id: &str| probe.of_cell[plan.cells.iter().position(|c| c.id == id).unwrap()];
    assert_eq!(of("k/n=1 m=10/a"), of("k/n=1 m=20/b"));
    assert_ne!(of("k/n=1 m=10/a"), of("k/n=1 m=10/c"));
    assert_ne!(of("k/n=1 m=10/a"), of("k/n=2 m=10/a"));
    assert_eq!(of("floor/events"), None);
    for c in &probe.plan.cells {
        assert_eq!(
            (c.knobs.timer, c.knobs.samples.count),
            (TimerKind::Events, PROBE_SAMPLES)
        );
    }
    let a = of("k/n=1 m=10/a").unwrap();
    let mut readings = vec![None; 4];
    readings[a] = Some(2048.0);
    let per_launch = probe.measured(&readings).per_launch;
    let cell = plan
        .cells
        .iter()
        .position(|c| c.id == "k/n=1 m=20/b")
        .unwrap();
    assert_eq!(per_launch.get(&cell), Some(&(2048.0 * 1e-9)));
    // a and b at both m: the cells of the one probe cell that read.
    assert_eq!(per_launch.len(), 4);
}

/// A 256 x 256 matmul's buffers, checked against the built-in matmul reference, under
/// `variants`.
fn checked(variants: &str) -> Experiment {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\nargs = [{{ name = \"A\", buffer = \"f32\", len = \"65536\", init = \"uniform(0, 1)\" }}, {{ name = \"B\", buffer = \"f32\", len = \"65536\", init = \"uniform(0, 1)\" }}, {{ name = \"C\", buffer = \"f32\", len = \"65536\", init = \"output\" }}]\ncheck = {{ reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [256, 256, 256] }}\nbytes = \"1000000\"\n{variants}\n[report]\nfloor = false\n"
    );
    let e =
        crate::testkit::experiment_in(dir.path(), &[("k.cu", crate::testkit::EMPTY_KERNEL)], &text);
    std::mem::forget(dir);
    e
}

#[test]
fn the_audit_costs_its_first_round_among_the_samples_and_a_weaker_audit_once_a_cell() {
    let e = checked("[[variant]]\nname = \"among\"\nsamples = 200\n[[variant]]\nname = \"short\"\nsamples = 2\n[[variant]]\nname = \"processes\"\nsamples = 2\nfresh_process = true\nprocesses = 4\n");
    let plan = Plan::new(&e).unwrap();
    let work = |variant: &str| {
        let c = plan.cells.iter().find(|c| c.variant == variant).unwrap();
        super::model::model(&e, c, Some(&e.kernels[0]), None).work_s
    };
    // Ten regions (three of them audited and checked) against one launch after the samples.
    let (among, short) = (work("among"), work("short"));
    assert!(among > short + 8.0 * 12e-6, "{among} against {short}");
    // A cell of four fresh processes pays the weaker audit once, a quarter in each run.
    let processes = work("processes");
    assert!(processes < short, "{processes} against {short}");
}
