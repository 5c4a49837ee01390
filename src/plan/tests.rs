//! The plan's matrix, its worker processes and their order.

use super::*;
use crate::experiment::knobs::{cache::Cache, compile::CompileMode, env::JitCache};
use crate::testkit::{self, EMPTY_KERNEL};
use std::collections::HashMap;

/// `runner plan`'s text of `plan`, with no earlier run and no probe.
pub(super) fn described(e: &Experiment, plan: &Plan) -> String {
    describe(
        e,
        plan,
        &HashMap::new(),
        &Default::default(),
        Shown::default(),
    )
}

pub(super) fn experiment(variants: &str) -> Experiment {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
[experiment]
title = "t"
[sweep]
n = [1, 2]
m = "10..20 step 10"
[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
grid = ["n"]
block = [1]
{variants}
"#
    );
    let e = testkit::experiment_in(dir.path(), &[("k.cu", EMPTY_KERNEL)], &text);
    std::mem::forget(dir);
    e
}

#[test]
fn a_kernels_own_axes_make_its_cells_with_the_variants_knobs_at_the_base_point() {
    let e = experiment("sweep = { block = [1, 2, 3] }\n[[variant]]\nname = \"a\"\nsamples = \"n * 3\"\n[report]\nfloor = false\n");
    let plan = Plan::new(&e).unwrap();
    // 2 n x 2 m x 3 block.
    assert_eq!(plan.cells.len(), 12);
    let c = &plan.cells[5];
    assert_eq!(c.id, "k/n=1 m=20 block=3/a");
    assert_eq!(c.knobs.samples.count, 3, "samples = n * 3 at n = 1");
    assert_eq!(plan.cells[11].knobs.samples.count, 6);
}

#[test]
fn a_kernel_has_cells_only_under_its_variants_and_where_it_does_not_skip() {
    let e = experiment("variants = [\"b\"]\nskip = \"n == 2 and m == 20\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n[report]\nfloor = false\n");
    let plan = Plan::new(&e).unwrap();
    let ids: Vec<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["k/n=1 m=10/b", "k/n=1 m=20/b", "k/n=2 m=10/b"]);
}

#[test]
fn matrix_is_kernel_by_points_by_variants_plus_floor() {
    let e = experiment("[[variant]]\nname = \"a\"\ntimer = \"host\"\n[[variant]]\nname = \"b\"\nsamples = \"n * 3\"\n");
    let plan = Plan::new(&e).unwrap();
    let ids: Vec<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "k/n=1 m=10/a",
            "k/n=1 m=10/b",
            "k/n=1 m=20/a",
            "k/n=1 m=20/b",
            "k/n=2 m=10/a",
            "k/n=2 m=10/b",
            "k/n=2 m=20/a",
            "k/n=2 m=20/b",
            "floor/host",
            "floor/events"
        ]
    );
    assert_eq!(plan.cells[1].knobs.samples_per_run(), 3);
    assert_eq!(plan.cells[5].knobs.samples_per_run(), 6);
    assert_eq!(plan.cells[0].knobs.timer, TimerKind::Host);
    assert_eq!(plan.jobs().len(), 1);
}

#[test]
fn flush_cells_plan_a_buffer_of_twice_the_l2_by_default() {
    let e = experiment("[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"cold\"\ncache = \"flush\"\n[[variant]]\nname = \"cold-1x\"\ncache = \"flush\"\nflush_bytes = \"l2_bytes\"\nflush_method = \"kernel\"\n");
    let plan = Plan::new(&e).unwrap();
    assert_eq!(plan.cells[0].knobs.cache, Cache::Hot);
    let text = described(&e, &plan);
    assert!(text.contains("flush 100.0 MiB (memset)"), "{text}");
    assert!(text.contains("flush 50.0 MiB (write kernel)"), "{text}");
    assert!(
        !text.contains("l2_bytes"),
        "evaluated, not as written: {text}"
    );
    let floor = plan.cells.iter().find(|c| c.role == Role::Floor).unwrap();
    assert_eq!(
        floor.knobs.cache,
        Cache::Hot,
        "the floor reads the timer, not a flush"
    );
}

#[test]
fn shared_cells_run_in_one_process_per_environment() {
    let e = experiment(
            "[[variant]]\nname = \"plain\"\n[[variant]]\nname = \"eager\"\nenv = { CUDA_MODULE_LOADING = \"EAGER\" }\n[[variant]]\nname = \"plain-too\"\ncompile = \"ptx\"\n[[variant]]\nname = \"cold\"\nfresh_process = true\nprocesses = 2\nenv = { CUDA_FORCE_JIT = 1 }\njit_cache = \"empty\"\n",
        );
    let plan = Plan::new(&e).unwrap();
    let jobs = plan.jobs();
    // shared: {plain, plain-too, floor} and {eager}; fresh: 4 points x 2 processes
    assert_eq!(jobs.len(), 2 + 8);
    assert_eq!(jobs[0].env, ProcessEnv::default());
    let variants = |j: &WorkerJob| -> Vec<String> {
        j.runs
            .iter()
            .map(|r| plan.cells[r.cell].variant.clone())
            .collect()
    };
    assert!(variants(&jobs[0]).iter().all(|v| v != "eager"));
    assert!(variants(&jobs[0]).contains(&"plain-too".to_string()));
    assert_eq!(variants(&jobs[1]), ["eager"; 4]);
    assert_eq!(jobs[1].env.vars["CUDA_MODULE_LOADING"], "EAGER");
    for j in &jobs[2..] {
        assert_eq!(j.runs.len(), 1);
        assert_eq!(j.env.vars["CUDA_FORCE_JIT"], "1");
        assert_eq!(j.env.jit_cache, JitCache::Empty);
    }
    let ptx = plan
        .cells
        .iter()
        .find(|c| c.variant == "plain-too")
        .unwrap();
    assert_eq!(ptx.knobs.compile.mode, CompileMode::Ptx);
    assert_eq!(
        plan.priming_runs(&jobs[1].env).len(),
        4,
        "priming loads every cell of its environment"
    );
    let text = described(&e, &plan);
    assert!(
            text.contains("eager: CUDA events around the launch; no warm-up; first launch + samples until the median's 95% interval is within 0.5% of it (at least 10 samples and 500 ms of GPU time; at most 100000 samples or 15s); one shared process; hot L2; environment: CUDA_MODULE_LOADING=EAGER"),
            "{text}"
        );
    assert!(
        text.contains("environment: CUDA_FORCE_JIT=1, a new empty JIT cache per process"),
        "{text}"
    );
    assert!(
        text.contains("environment: inherited; PTX for the device's compute_XX"),
        "{text}"
    );
}

#[test]
fn interleaved_cells_take_turns_round_by_round_and_split_their_samples() {
    let e = experiment("[[variant]]\nname = \"seq\"\n[[variant]]\nname = \"a\"\norder = \"interleaved\"\nrounds = 3\nsamples = 10\n[[variant]]\nname = \"b\"\norder = \"interleaved\"\nrounds = 3\nsamples = 10\n[report]\nfloor = false\n");
    let plan = Plan::new(&e).unwrap();
    assert_eq!(
        plan.cells[1].knobs.samples_per_run(),
        4,
        "10 samples over 3 rounds, rounded up"
    );
    assert_eq!(plan.cells[1].runs(), 3);
    let jobs = plan.jobs();
    assert_eq!(jobs.len(), 1);
    let first_point: Vec<(String, u32)> = jobs[0].runs[..7]
        .iter()
        .map(|r| (plan.cells[r.cell].variant.clone(), r.process))
        .collect();
    let want = [
        ("seq", 0),
        ("a", 0),
        ("b", 0),
        ("a", 1),
        ("b", 1),
        ("a", 2),
        ("b", 2),
    ];
    assert_eq!(first_point, want.map(|(v, r)| (v.to_string(), r)).to_vec());
    assert_eq!(jobs[0].runs.len(), 4 * 7, "every point the same way");
}

#[test]
fn a_kernel_that_is_not_timed_has_no_cells_but_gives_the_checks_their_launch() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = |name: &str, entry: &str, extra: &str| {
        format!("[[kernel]]\nname = \"{name}\"\nsource = \"k.cu\"\nentry = \"{entry}\"\ngrid = [1]\nblock = [1]\nargs = [{{ name = \"y\", buffer = \"f32\", len = 4, init = \"output\" }}]\n{extra}\n")
    };
    let text =
        format!(
        "[experiment]\ntitle = \"t\"\n{}{}[[variant]]\nname = \"hot\"\n[report]\nfloor = false\n",
        kernel("ref", "r", "timed = false"),
        kernel("k", "k", "check_kernel = { kernel = \"ref\", outputs = [\"y\"] }")
    );
    let source =
        "extern \"C\" __global__ void k(float* y) {}\nextern \"C\" __global__ void r(float* y) {}";
    let e = testkit::experiment_in(dir.path(), &[("k.cu", source)], &text);
    let plan = Plan::new(&e).unwrap();
    let ids: Vec<&str> = plan.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["k/hot"]);
    assert_eq!(plan.cells[0].kernel, Some(1));
    assert!(
        plan.cells[0].reference_launch.is_some(),
        "checked against ref"
    );
}

#[test]
fn shuffled_cells_take_turns_in_a_seeded_order() {
    let v = |n: &str| format!("[[variant]]\nname = \"{n}\"\norder = \"shuffled\"\nrounds = 8\n");
    let e = experiment(&format!(
        "{}{}{}[report]\nfloor = false\n",
        v("a"),
        v("b"),
        v("c")
    ));
    let plan = Plan::new(&e).unwrap();
    let runs = plan.jobs()[0].runs.clone();
    let rounds: Vec<Vec<usize>> = runs[..24]
        .chunks(3)
        .map(|c| c.iter().map(|r| r.cell).collect())
        .collect();
    for (r, cells) in rounds.iter().enumerate() {
        let mut sorted = cells.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2], "round {r} holds each cell once");
    }
    assert!(
        rounds.iter().any(|c| c != &rounds[0]),
        "the order changes between rounds"
    );
    assert_eq!(
        runs,
        Plan::new(&e).unwrap().jobs()[0].runs,
        "and is the same every time"
    );
}

#[test]
fn fresh_process_cells_get_one_process_per_run_round_robin() {
    let e = experiment("[[variant]]\nname = \"cold\"\nfresh_process = true\nprocesses = 2\nsamples = 0\n[[variant]]\nname = \"warm\"\n");
    let plan = Plan::new(&e).unwrap();
    let jobs = plan.jobs();
    // one shared job (4 warm cells + floor), then 4 cold cells x 2 processes
    assert_eq!(jobs.len(), 1 + 8);
    assert_eq!(jobs[0].runs.len(), 5);
    assert_eq!(
        jobs[1].runs,
        vec![Run {
            cell: 0,
            process: 0
        }]
    );
    assert_eq!(
        jobs[5].runs,
        vec![Run {
            cell: 0,
            process: 1
        }]
    );
    assert_eq!(plan.cells[0].headline(), Headline::First);
    assert_eq!(plan.cells[1].headline(), Headline::Steady);
}

#[test]
fn batch_graph_and_queue_variants_print_apart() {
    let e = experiment("[[variant]]\nname = \"batch\"\nbatch = 10\n[[variant]]\nname = \"graph\"\ngraph = 10\n[[variant]]\nname = \"saturated\"\ngraph = 10\nqueue = \"saturate\"\n[report]\nfloor = false\n");
    let text = described(&e, &Plan::new(&e).unwrap());
    for want in ["batch of 10", "graph of 10  ", "graph of 10 +wait"] {
        assert!(text.contains(want), "{want} in {text}");
    }
    assert!(!text.contains("Int(") && !text.contains("//"), "{text}");
}

#[test]
fn a_cell_id_without_a_sweep_has_no_empty_segment() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\n[[variant]]\nname = \"hot\"\n";
    let e = testkit::experiment_in(dir.path(), &[("k.cu", EMPTY_KERNEL)], text);
    assert_eq!(Plan::new(&e).unwrap().cells[0].id, "k/hot");
}

#[test]
fn shards_split_the_plan_disjointly_and_balance_a_previous_runs_times() {
    let e = experiment(
        "[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n[report]\nfloor = false\n",
    );
    let plan = Plan::new(&e).unwrap();
    assert_eq!(plan.cells.len(), 8);
    let part = |i, seconds: &HashMap<String, f64>| {
        let estimate = cost::Estimate::new(&e, &plan, seconds);
        plan.shard_ids(shard::Shard { index: i, count: 3 }, &estimate)
    };
    let none = HashMap::new();
    let mut all: Vec<String> = (0..3).flat_map(|i| part(i, &none)).collect();
    assert_eq!(
        (0..3).map(|i| part(i, &none).len()).collect::<Vec<_>>(),
        [3, 3, 2]
    );
    all.sort();
    let mut ids: Vec<String> = plan.cells.iter().map(|c| c.id.clone()).collect();
    ids.sort();
    assert_eq!(all, ids, "every cell in exactly one part");
    // One cell as long as all the others together gets a part of its own.
    let long = plan.cells[5].id.clone();
    let seconds: HashMap<String, f64> = [(long.clone(), 7.0)].into();
    assert_eq!(part(0, &seconds), [long]);
    // A cell of fresh processes counts each process's run, with its start-up.
    let fresh = experiment(
        "[[variant]]\nname = \"a\"\nfresh_process = true\nprocesses = 4\n[report]\nfloor = false\n",
    );
    let fresh_plan = Plan::new(&fresh).unwrap();
    let cell = &fresh_plan.cells[0];
    let estimate = cost::Estimate::new(&fresh, &fresh_plan, &[(cell.id.clone(), 1.0)].into());
    let seconds = estimate.cell_seconds(cell);
    assert!(estimate.per_run[0].1, "from the previous run");
    assert!(
        (seconds - 4.0 * (1.0 + cost::PROCESS_S)).abs() < 1e-9,
        "{seconds}"
    );
    let kept = plan.clone().keep(&part(1, &none)).unwrap();
    assert_eq!(kept.cells.len(), 3);
    assert!(kept.cells.iter().enumerate().all(|(i, c)| c.index == i));
}

#[test]
fn l2_persist_names_a_buffer_of_the_kernel_or_the_plan_refuses_it() {
    let e = experiment("[[variant]]\nname = \"a\"\nl2_persist = \"table\"\n");
    let err = Plan::new(&e).unwrap_err().to_string();
    assert!(
        err.contains("l2_persist names `table`, which is not a buffer argument of `k`"),
        "{err}"
    );
}

#[test]
fn a_python_checked_output_updated_in_place_needs_its_checked_launch_alone() {
    let text = |warmup: u32| {
        format!("[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"axpy\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [32]\nargs = [\n  {{ name = \"x\", buffer = \"f32\", len = 4, init = \"uniform(0, 1)\" }},\n  {{ name = \"y\", buffer = \"f32\", len = 4, init = \"uniform(0, 1)\" }},\n]\ncheck_python = {{ function = \"ref.py:axpy\", outputs = [\"y\"] }}\n[[variant]]\nname = \"batch\"\nbatch = 10\nwarmup = {warmup}\n[report]\nfloor = false\n")
    };
    let e = Experiment::from_text(&text(0)).unwrap();
    let err = Plan::new(&e).unwrap_err().to_string();
    assert!(
        err.contains("`axpy` updates its checked output in place, which the first timed region here updates 10 times"),
        "{err}"
    );
    assert!(Plan::new(&Experiment::from_text(&text(1)).unwrap()).is_ok());
}

#[test]
fn a_claiming_part_runs_its_share_first_then_the_others_in_turn_groups() {
    let e = experiment("[[variant]]\nname = \"seq\"\n[[variant]]\nname = \"a\"\norder = \"interleaved\"\nrounds = 3\nsamples = 10\n[[variant]]\nname = \"b\"\norder = \"interleaved\"\nrounds = 3\nsamples = 10\n[[variant]]\nname = \"cold\"\nfresh_process = true\nprocesses = 2\n[report]\nfloor = false\n");
    let plan = Plan::new(&e).unwrap();
    let keys = plan.claim_keys();
    // Cells a and b of a point take turns: one key; the others are keyed alone.
    let cell = |variant: &str, i: usize| {
        (plan.cells.iter())
            .filter(|c| c.variant == variant)
            .nth(i)
            .unwrap()
    };
    assert_eq!(keys[cell("b", 2).index], cell("a", 2).id);
    assert_eq!(keys[cell("seq", 1).index], cell("seq", 1).id);
    let estimate = cost::Estimate::new(&e, &plan, &HashMap::new());
    let own = plan.shard_ids(shard::Shard { index: 1, count: 2 }, &estimate);
    let cost: Vec<f64> = plan
        .cells
        .iter()
        .map(|c| estimate.cell_seconds(c))
        .collect();
    let jobs = plan.claiming_jobs(&own, &cost);
    let runs: Vec<Run> = jobs.iter().flat_map(|j| j.runs.clone()).collect();
    // Every run once.
    let mut sorted = runs.clone();
    sorted.sort_by_key(|r| (r.cell, r.process));
    let mut all: Vec<Run> = plan.jobs().into_iter().flat_map(|j| j.runs).collect();
    all.sort_by_key(|r| (r.cell, r.process));
    assert_eq!(sorted, all);
    // The share first, then the rest.
    let is_own = |r: &Run| own.iter().any(|id| *id == keys[r.cell]);
    let first_other = runs.iter().position(|r| !is_own(r)).unwrap();
    assert!(runs[first_other..].iter().all(|r| !is_own(r)), "{runs:?}");
    assert!(first_other > 0);
    // A turn group's runs stay together, in its turns' order.
    let group: Vec<usize> = (runs.iter().enumerate())
        .filter(|(_, r)| keys[r.cell] == cell("a", 0).id)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(group.len(), 6);
    assert_eq!(group[5] - group[0], 5, "{group:?}");
    // A fresh process's run stays alone in its job, whatever the share: never timed in a
    // warm worker, nor two in one process.
    let seq: Vec<String> = (plan.cells.iter())
        .filter(|c| c.variant == "seq")
        .map(|c| c.id.clone())
        .collect();
    for share in [
        own.clone(),
        plan.shard_ids(shard::Shard { index: 0, count: 2 }, &estimate),
        seq,
    ] {
        for job in plan.claiming_jobs(&share, &cost) {
            let fresh = (job.runs.iter()).any(|r| plan.cells[r.cell].knobs.process.fresh.is_some());
            assert!(!fresh || job.runs.len() == 1, "{share:?}: {job:?}");
        }
    }
}

/// A kernel whose input's length follows `n` (four points, so four draws) under two
/// variants (each draw's two cells).
fn four_draws() -> Experiment {
    let dir = tempfile::tempdir().unwrap();
    let text = "[experiment]\ntitle = \"t\"\n[sweep]\nn = [1, 2, 3, 4]\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\nargs = [{ name = \"x\", buffer = \"f32\", len = \"n * 256\", init = \"uniform(0, 1)\" }]\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n[report]\nfloor = false\n";
    let e = testkit::experiment_in(dir.path(), &[("k.cu", EMPTY_KERNEL)], text);
    std::mem::forget(dir);
    e
}

#[test]
fn cells_drawn_alike_go_to_one_part_unless_they_would_hold_over_half_a_share() {
    let e = four_draws();
    let plan = Plan::new(&e).unwrap();
    let ids = |n: i64| [format!("k/n={n}/a"), format!("k/n={n}/b")];
    let parts = |previous: &HashMap<String, f64>| {
        let estimate = cost::Estimate::new(&e, &plan, previous);
        [0, 1].map(|i| plan.shard_ids(shard::Shard { index: i, count: 2 }, &estimate))
    };
    let part_of =
        |parts: &[Vec<String>; 2], id: &str| parts.iter().position(|p| p.iter().any(|c| c == id));
    let even: HashMap<String, f64> = (1..=4).flat_map(ids).map(|id| (id, 1.0)).collect();
    let split = parts(&even);
    for n in 1..=4 {
        let [a, b] = ids(n);
        assert_eq!(part_of(&split, &a), part_of(&split, &b), "n={n}: {split:?}");
    }
    assert_eq!(split[0].len(), 4);
    // Two cells of one draw that hold most of the run go to a part each.
    let mut long = even.clone();
    let [a, b] = ids(1);
    long.insert(a.clone(), 10.0);
    long.insert(b.clone(), 10.0);
    let split = parts(&long);
    assert_ne!(part_of(&split, &a), part_of(&split, &b), "{split:?}");
}

#[test]
fn a_claiming_part_takes_its_own_draws_costliest_first_then_the_others_from_their_end() {
    let e = four_draws();
    let plan = Plan::new(&e).unwrap();
    let at = |n: i64, v: &str| {
        (plan.cells.iter())
            .find(|c| c.variant == v && c.point[0].1.to_string() == n.to_string())
            .unwrap()
            .index
    };
    // Points 1 and 3 are this part's; point 3 and then point 2 cost most.
    let own: Vec<String> = [at(1, "a"), at(1, "b"), at(3, "a"), at(3, "b")]
        .map(|i| plan.cells[i].id.clone())
        .to_vec();
    let mut cost = vec![1.0; plan.cells.len()];
    cost[at(3, "b")] = 9.0;
    cost[at(2, "a")] = 5.0;
    let runs: Vec<usize> = (plan.claiming_jobs(&own, &cost).into_iter())
        .flat_map(|j| j.runs)
        .map(|r| r.cell)
        .collect();
    // A draw's cells stay together: own draws first, costliest first; then the others'
    // from their owner's end, the cheapest first, each in reverse.
    let order = [
        (3, "a"),
        (3, "b"),
        (1, "a"),
        (1, "b"),
        (4, "b"),
        (4, "a"),
        (2, "b"),
        (2, "a"),
    ];
    assert_eq!(runs, order.map(|(n, v)| at(n, v)).to_vec());
}

#[test]
fn a_claiming_part_counts_another_shares_group_alone_just_before_it_runs() {
    let e = experiment("[[variant]]\nname = \"a\"\ncounters = [\"dram__bytes_read.sum\"]\n[[variant]]\nname = \"b\"\n[report]\nfloor = false\n");
    let plan = Plan::new(&e).unwrap();
    let own: Vec<String> = vec![plan.cells[0].id.clone()];
    let jobs = plan.claiming_jobs(&own, &vec![1.0; plan.cells.len()]);
    let counted = |r: &Run| plan.cells[r.cell].knobs.counters.wanted();
    for job in &jobs[1..] {
        // Every other job holding a counted cell holds that cell's group alone.
        if job.runs.iter().any(counted) {
            let cells: std::collections::HashSet<usize> = job.runs.iter().map(|r| r.cell).collect();
            assert_eq!(cells.len(), 1, "{job:?}");
        }
    }
    assert!(
        jobs[0].runs.iter().all(|r| r.cell == 0 || !counted(r)),
        "{:?}",
        jobs[0]
    );
}
