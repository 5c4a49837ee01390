//! End-to-end runs on a GPU. They are ignored by default, so every `cargo test` lists them
//! as "ignored, needs a GPU"; on a GPU machine `cargo test --release -- --include-ignored`
//! runs them (README), and there they fail if the GPU cannot be used.

mod common;
use common::*;

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn matmul_runs_checked_and_reported() {
    let out_dir = tempfile::tempdir().unwrap();
    let (_d, path) = write_experiment("e2e.toml", &matmul_experiment(&kernels_dir()));
    let out = run(&[
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = out_dir.path().join("e2e");
    let cells = stored_text(&dir, "cells.jsonl");
    assert_eq!(cells.lines().count(), 4 + 2, "{cells}");
    assert!(
        cells.lines().all(|l| l.contains("\"status\":\"ok\"")),
        "{cells}"
    );
    assert!(
        cells.contains("matmul vs float64: relative error"),
        "{cells}"
    );
    // 2 sizes x 2 variants x (1 first + 20 samples), plus 2 floors x (1 + 1000)
    assert_eq!(sample_rows(&dir).len(), 1 + 4 * 21 + 2 * 1001);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("| 64 |") && report.contains("Δ sync vs events"),
        "{report}"
    );
    assert!(report.contains("bare cudarc loop"), "{report}");
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_faulting_kernel_fails_its_cell_and_the_others_complete() {
    let faulty = format!(
        "\n[[kernel]]\nname = \"faulty\"\nsource = \"{}\"\nentry = \"faulty\"\ngrid = [\"(n + 255) // 256\"]\nblock = [256]\nargs = [\n  {{ name = \"out\", buffer = \"f32\", len = \"n\", init = \"uniform(0, 1)\" }},\n  {{ name = \"n\", scalar = \"i32\", value = \"n\" }},\n]\n",
        kernels_dir().join("faulty.cu").display()
    );
    let text =
        matmul_experiment(&kernels_dir()).replace("[defaults]", &format!("{faulty}\n[defaults]"));
    let out_dir = tempfile::tempdir().unwrap();
    let (_d, path) = write_experiment("fault.toml", &text);
    let out = run(&[
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    // Failed cells of a kernel not written to be caught: the run says so in its exit code.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let cells = stored_text(&out_dir.path().join("fault"), "cells.jsonl");
    let failed: Vec<&str> = cells
        .lines()
        .filter(|l| l.contains("\"status\":\"failed\""))
        .collect();
    assert_eq!(failed.len(), 4, "every faulty cell fails:\n{cells}");
    assert!(
        failed
            .iter()
            .all(|l| l.contains("faulty/") && l.contains("CUDA_ERROR_")),
        "{cells}"
    );
    let ok = cells
        .lines()
        .filter(|l| l.contains("\"status\":\"ok\""))
        .count();
    assert_eq!(ok, 4 + 2, "matmul and floor cells complete:\n{cells}");
    let report = std::fs::read_to_string(out_dir.path().join("fault/report.md")).unwrap();
    assert!(report.contains("## Failed and skipped cells"), "{report}");
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_compile_error_shows_the_compiler_log_with_line_numbers() {
    let src = tempfile::tempdir().unwrap();
    let cu = src.path().join("broken.cu");
    std::fs::write(
        &cu,
        "extern \"C\" __global__ void broken(float *x) {\n    x[0] = undefined_name;\n}\n",
    )
    .unwrap();
    let text = format!(
        "[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"broken\"\nsource = \"{}\"\nentry = \"broken\"\ngrid = [1]\nblock = [1]\nargs = [{{ name = \"x\", buffer = \"f32\", len = 4, init = \"uniform(1, 2)\" }}]\n[[variant]]\nname = \"events\"\n",
        cu.display()
    );
    let out_dir = tempfile::tempdir().unwrap();
    let (_d, path) = write_experiment("broken.toml", &text);
    let out = run(&[
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
        "--allow-failures",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cells = stored_text(&out_dir.path().join("broken"), "cells.jsonl");
    assert!(
        cells.contains("broken.cu(2)") && cells.contains("undefined_name"),
        "{cells}"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn fresh_processes_run_in_their_environment_and_record_their_phases_in_order() {
    let variants = r#"[defaults]
fresh_process = true
processes = 2
samples = 5

[[variant]]
name = "ptx-empty-eager"
compile = "ptx"
jit_cache = "empty"
env = { CUDA_MODULE_LOADING = "EAGER" }

[[variant]]
name = "ptx-warm"
compile = "ptx"
jit_cache = "warm"

[[variant]]
name = "cubin-old-arch"
compile = "cubin"
arch = "sm_80"
"#;
    let (_out, dir, records) = run_on_gpu("phases", &matmul_with("n = [64, 96]", variants));
    let of = |variant: &str| -> Vec<&serde_json::Value> {
        records
            .iter()
            .filter(|r| r["id"].as_str().unwrap().ends_with(variant))
            .collect()
    };
    // Every fresh process is one cell run: 2 sizes x 2 processes per variant.
    for r in of("/ptx-empty-eager") {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["cuda_env"]["CUDA_MODULE_LOADING"], "EAGER", "{r}");
        let names: Vec<&str> = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            // A later process reads the image the first one compiled.
            .map(|n| match n {
                "compiled image (from an earlier process)" => "NVRTC compile",
                n => n,
            })
            .collect();
        let order = [
            "process start",
            "job received",
            // Both before the previous process has exited; the context after.
            "NVML open",
            "driver init",
            "context",
            "device query",
            "first inputs read",
            "NVRTC compile",
            "module load",
            "function lookup",
            "buffers",
            "set-up",
            "first timed launch",
            "output check",
            "steady samples",
        ];
        let at: Vec<usize> = order
            .iter()
            .map(|n| {
                names
                    .iter()
                    .position(|m| m == n)
                    .unwrap_or_else(|| panic!("{n} missing: {names:?}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{names:?}");
    }
    let empty_paths: Vec<&str> = of("/ptx-empty-eager")
        .iter()
        .map(|r| r["cuda_env"]["CUDA_CACHE_PATH"].as_str().unwrap())
        .collect();
    let mut unique = empty_paths.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        4,
        "a new empty cache per process: {empty_paths:?}"
    );
    let warm: Vec<&str> = of("/ptx-warm")
        .iter()
        .map(|r| r["cuda_env"]["CUDA_CACHE_PATH"].as_str().unwrap())
        .collect();
    assert!(
        warm.iter().all(|p| *p == warm[0]),
        "one warm cache: {warm:?}"
    );
    // An sm_80 CUBIN cannot load on a newer GPU: the cells fail with the driver's reason.
    for r in of("/cubin-old-arch") {
        assert_eq!(r["status"], "failed", "{r}");
        assert!(r["error"].as_str().unwrap().contains("CUDA_ERROR"), "{r}");
    }
    let cells = std::fs::read_to_string(dir.join("cells.md")).unwrap();
    assert!(
        cells.contains("## A fresh process, phase by phase"),
        "{cells}"
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("CUDA_MODULE_LOADING=EAGER"), "{report}");
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn cupti_spans_batches_graphs_and_a_saturated_queue_read_the_same_kernel() {
    let variants = r#"[defaults]
warmup = 5
samples = 20

[[variant]]
name = "cupti"
timer = "cupti"

[[variant]]
name = "events"

[[variant]]
name = "events-cupti"
cupti_collect = true

[[variant]]
name = "batch"
batch = 4

[[variant]]
name = "graph"
graph = 4

[[variant]]
name = "saturate"
queue = "saturate"

[report]
bias = [["events", "cupti"], ["batch", "cupti"], ["graph", "cupti"], ["saturate", "cupti"]]
"#;
    let (_out, dir, records) = run_on_gpu("accuracy", &matmul_with("n = [256]", variants));
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
    }
    let cell = |suffix: &str| record(&records, suffix);
    // One record per timed region: the first launch, 20 samples, and the audit's regions
    // among them (audited, decoys and pauses).
    let cupti = cell("/cupti");
    let among = &cupti["audit"]["among"];
    let regions = |key: &str| among[key].as_array().map_or(0, Vec::len);
    assert_eq!(
        cupti["cupti"]["records"],
        21 + regions("positions") + regions("decoy_positions") + regions("pause_positions"),
        "one record per timed region: {cupti}"
    );
    // The saturated queue's wait is released by the host, and none gave up waiting for it.
    let queue = &cell("/saturate")["queue"];
    assert_eq!(queue["released"], true, "{queue}");
    assert_eq!(queue["too_short"], 0, "{queue}");
    // A 256^3 matmul runs ~13 µs: every method's median reads it within a factor of two of
    // CUPTI's (one sample alone can be an outlier).
    let span = steady_median(&dir, "/cupti");
    for v in ["/events", "/batch", "/graph", "/saturate", "/events-cupti"] {
        let t = steady_median(&dir, v);
        assert!(
            t > 0.5 * span && t < 2.0 * span,
            "{v}: {t} ns vs CUPTI {span} ns"
        );
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Bias against the reference"), "{report}");
    let cells = std::fs::read_to_string(dir.join("cells.md")).unwrap();
    assert!(cells.contains("CUPTI submitted→start"), "{cells}");
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn the_profiler_and_an_adaptive_stop_read_the_kernel() {
    let variants = r#"[defaults]
warmup = 3
samples = 8

[[variant]]
name = "cupti"
timer = "cupti"

[[variant]]
name = "profiler"
timer = "profiler"

[[variant]]
name = "adaptive"
samples = 5000
stop = { rsd_pct = 50.0, min_samples = 20, min_gpu_time = "1ms" }
"#;
    let (_out, dir, records) = run_on_gpu("profiled", &matmul_with("n = [256]", variants));
    let cell = |suffix: &str| record(&records, suffix);
    for v in ["/cupti", "/profiler", "/adaptive"] {
        assert_eq!(cell(v)["status"], "ok", "{}", cell(v));
    }
    let span = steady_median(&dir, "/cupti");
    let profiled = steady_median(&dir, "/profiler");
    assert!(
        profiled > 0.5 * span && profiled < 2.0 * span,
        "profiler {profiled} ns vs CUPTI {span} ns"
    );
    let stopped = &cell("/adaptive")["stopped"];
    assert_eq!(stopped["by"], "precise", "{stopped}");
    assert!(
        stopped["reached"]["rsd_pct"].as_f64().unwrap() <= 50.0,
        "{stopped}"
    );
    let adaptive = sample_rows(&dir)
        .iter()
        .filter(|r| r[0].ends_with("/adaptive"))
        .count();
    assert!(
        (21..5001).contains(&adaptive),
        "{adaptive} adaptive samples"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn counters_check_declared_bytes_hot_and_cold_and_catch_a_wrong_count() {
    if !has_ncu() {
        eprintln!("SKIPPED: Nsight Compute (ncu) is not on PATH: the counter pass cannot run");
        return;
    }
    // The copy, and the same copy declaring twice its bytes.
    let copy = |name: &str, bytes_per_element: u32| {
        format!(
            r#"[[kernel]]
name = "{name}"
source = "{kernels}/copy.cu"
entry = "copy"
sweep = {{ mib = [256] }}
grid = ["sm_count * 4"]
block = [1024]
args = [
  {{ name = "output", buffer = "f32", len = "mib * 262144", init = "output" }},
  {{ name = "input", buffer = "f32", len = "mib * 262144", init = "uniform(0, 100)" }},
  {{ name = "n", scalar = "u64", value = "mib * 262144" }},
]
check = {{ reference = "copy", inputs = ["input"], output = "output" }}
bytes = "{bytes_per_element} * mib * 262144"
"#,
            kernels = kernels_dir().display()
        )
    };
    let text = format!(
        r#"[experiment]
title = "counters"

{}
{}
[defaults]
timer = "cupti"
warmup = 2
samples = 5
counters = "memory"

[[variant]]
name = "cold"
cache = "flush"
flush_method = "read"

[report]
floor = false
"#,
        copy("copy", 8),
        copy("copy-twice", 16)
    );
    let (_out, dir, records) = run_on_gpu("counters", &text);
    for id in ["copy/mib=256/cold", "copy-twice/mib=256/cold"] {
        let r = records.iter().find(|r| r["id"] == id).unwrap();
        assert_eq!(r["status"], "ok", "{r}");
        let c = &r["counters"];
        assert!(c["error"].is_null(), "{c}");
        let read = c["values"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "dram__bytes_read.sum")
            .unwrap()["value"]
            .as_f64()
            .unwrap();
        // A cold 256 MiB copy reads its input from DRAM once.
        let input = 256.0 * 1048576.0;
        assert!(
            (read / input - 1.0).abs() < 0.1,
            "{id}: read {read} of {input}"
        );
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Hardware counters"), "{report}");
    let row = |id: &str| {
        report
            .lines()
            .find(|l| l.starts_with(&format!("| {id} | cold (flushed) |")))
            .unwrap_or_else(|| panic!("no bytes row for {id}"))
            .to_string()
    };
    assert!(row("copy/mib=256/cold").contains("agrees with DRAM"));
    assert!(row("copy-twice/mib=256/cold").contains("⚠ declared more than any level moved"));
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn every_flush_method_makes_the_launch_cold_alone_and_in_a_graph() {
    let variants = r#"[defaults]
timer = "cupti"
warmup = 3
samples = 20

[[variant]]
name = "hot"

[[variant]]
name = "memset"
cache = "flush"

[[variant]]
name = "write"
cache = "flush"
flush_method = "kernel"

[[variant]]
name = "read"
cache = "flush"
flush_method = "read"

[[variant]]
name = "graph-hot"
timer = "events"
graph = 20
queue = "saturate"

[[variant]]
name = "graph-flush"
timer = "events"
graph = 20
cache = "flush"
queue = "saturate"

[[variant]]
name = "graph-flush-nodes"
timer = "events"
graph = 20
cache = "flush"
flushed_graph = "event_nodes"
queue = "saturate"
"#;
    let (_out, dir, records) = run_on_gpu("flushes", &matmul_with("n = [256]", variants));
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
    }
    // The 256^3 matmul's span is ~13 µs hot and ~20 µs after any flush on an H100: each
    // flush must leave the launch clearly slower than a hot one.
    let hot = steady_median(&dir, "/hot");
    for v in ["/memset", "/write", "/read"] {
        let cold = steady_median(&dir, v);
        assert!(cold > 1.2 * hot, "{v}: {cold} ns vs hot {hot} ns");
    }
    // In a graph, a flush before each launch (less a graph of the flushes alone) reads each
    // launch cold, as a flushed launch on its own.
    let (graph_hot, graph_cold) = (
        steady_median(&dir, "/graph-hot"),
        steady_median(&dir, "/graph-flush"),
    );
    let memset = steady_median(&dir, "/memset");
    assert!(
        graph_cold > 1.2 * graph_hot,
        "{graph_cold} ns vs {graph_hot} ns"
    );
    assert!(
        (graph_cold / memset - 1.0).abs() < 0.15,
        "{graph_cold} ns in the graph vs {memset} ns alone"
    );
    // Read by event nodes around each launch instead, likewise.
    let nodes = steady_median(&dir, "/graph-flush-nodes");
    assert!(
        (nodes / memset - 1.0).abs() < 0.15,
        "{nodes} ns by event nodes vs {memset} ns alone"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn an_interrupted_run_resumes_keeping_its_finished_cells() {
    let text = matmul_with(
        "n = [64, 96]",
        "[defaults]\nsamples = 20\nwarmup = 2\n[[variant]]\nname = \"events\"\n[[variant]]\nname = \"fresh\"\nfresh_process = true\nprocesses = 2\nsamples = 0\n",
    );
    let (_exp_dir, path) = write_experiment("resume.toml", &text);
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(&[
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = out_dir.path().join("resume");
    let records: Vec<&str> = vec![""; stored_text(&dir, "cells.jsonl").lines().count()];
    assert_eq!(
        records.len(),
        2 + 2 * 2 + 1,
        "2 shared, 4 fresh runs, 1 floor"
    );
    // As if the run had stopped after three cells, the third torn mid-line.
    let cells = stored_text(&dir, "cells.jsonl");
    let lines: Vec<&str> = cells.lines().collect();
    let kept = format!(
        "{}\n{}\n{}",
        lines[0],
        lines[1],
        &lines[2][..lines[2].len() / 2]
    );
    write_stored(&dir, "cells.jsonl", &kept);
    let out = run(&["run", "--resume", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("torn last line"), "{}", stderr(&out));
    let after = stored_text(&dir, "cells.jsonl");
    let after: Vec<&str> = after.lines().collect();
    assert_eq!(after.len(), records.len(), "every run recorded once");
    assert_eq!(
        &after[..2],
        &lines[..2],
        "the finished cells are kept as they were"
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        !report.contains("not run") && !report.contains("did not finish"),
        "{report}"
    );
    // The experiment changed: no resume, but --force starts over.
    std::fs::write(&path, text.replace("samples = 20", "samples = 21")).unwrap();
    let out = run(&["run", "--resume", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("changed"), "{}", stderr(&out));
    let out = run(&["run", "--resume", dir.to_str().unwrap(), "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_lazy_first_launch_carries_the_module_load_and_fresh_inputs_stay_checked() {
    let text = matmul_with(
        "n = [64]",
        "[defaults]\nfresh_process = true\nprocesses = 3\nsamples = 0\n[[variant]]\nname = \"lazy\"\nfirst_launch = \"lazy\"\n[[variant]]\nname = \"prepared\"\n[[variant]]\nname = \"fresh\"\nfresh_process = false\nfirst_launch = \"lazy\"\nwarmup = 2\nsamples = 10\ninputs = \"fresh\"\n[report]\nfloor = false\n",
    );
    let (_out, _dir, records) = run_on_gpu("lazy", &text);
    let firsts = |suffix: &str| -> Vec<f64> {
        records
            .iter()
            .filter(|r| r["id"].as_str().unwrap().ends_with(suffix))
            .map(|r| r["first_ns"].as_f64().unwrap())
            .collect()
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (lazy, prepared) = (median(firsts("/lazy")), median(firsts("/prepared")));
    // Loading a CUBIN module takes tens of microseconds or more; the timed launch of a
    // lazy process pays it, a prepared one does not.
    assert!(
        lazy > prepared + 20_000.0,
        "lazy {lazy} ns, prepared {prepared} ns"
    );
    let phases = |suffix: &str| -> Vec<String> {
        record(&records, suffix)["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        !phases("/lazy").contains(&"module load".to_string()),
        "{:?}",
        phases("/lazy")
    );
    assert!(phases("/prepared").contains(&"module load".to_string()));
    // A lazy first launch meets a heap as fresh as a new program's; a prepared one need not.
    let lazy_phases = phases("/lazy");
    let at = |name: &str| lazy_phases.iter().position(|p| p == name);
    assert!(
        at("heap released").is_some() && at("heap released") < at("first timed launch"),
        "{lazy_phases:?}"
    );
    assert!(!phases("/prepared").contains(&"heap released".to_string()));
    let fresh = record(&records, "/fresh");
    assert_eq!(fresh["status"], "ok", "{fresh}");
    assert!(
        fresh["check"].as_str().unwrap().contains("relative error"),
        "{fresh}"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn an_argument_list_that_does_not_match_the_kernel_fails_its_cell() {
    let text = matmul_with(
        "n = [64]",
        "[[variant]]\nname = \"events\"\nsamples = 5\n[report]\nfloor = false\n",
    )
    .replace("  { name = \"n\", scalar = \"i32\", value = \"n\" },\n", "");
    let (_out, _dir, records) = run_on_gpu("params", &text);
    let r = record(&records, "/events");
    assert_eq!(r["status"], "failed", "{r}");
    let why = r["error"].as_str().unwrap();
    assert!(
        why.contains("takes 6 parameter(s)") && why.contains("gives 5"),
        "{why}"
    );
    assert_eq!(r["failure"], "compile", "{r}");
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_kernel_checked_against_a_reference_kernel_passes_and_an_off_by_one_fails() {
    let base = matmul_with(
        "n = [64]",
        "[[variant]]\nname = \"hot\"\nsamples = 5\nwarmup = 1\n[report]\nfloor = false\n",
    );
    let tiled = |name: &str, entry: &str| {
        let start = base.find("[[kernel]]").unwrap();
        let end = base.find("[[variant]]").unwrap();
        base[start..end]
            .replace("name = \"matmul\"", &format!("name = \"{name}\""))
            .replace("matmul.cu", "matmul_tiled.cu")
            .replace("entry = \"matMulKernel\"", &format!("entry = \"{entry}\""))
            .replace(
                "check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }",
                "check_kernel = { kernel = \"matmul\", outputs = [\"C\"], rtol = 1e-3, atol = 1e-3 }",
            )
    };
    let text = base.replace(
        "[[variant]]",
        &format!(
            "{}{}[[variant]]",
            tiled("tiled", "matMulTiled"),
            tiled("off", "matMulTiledOffByOne")
        ),
    );
    let (_out, _dir, records) = run_on_gpu("refkernel", &text);
    let ok = record(&records, "tiled/n=64/hot");
    assert_eq!(ok["status"], "ok", "{ok}");
    assert!(
        ok["check"]
            .as_str()
            .unwrap()
            .contains("against kernel `matmul`"),
        "{ok}"
    );
    let bad = record(&records, "off/n=64/hot");
    assert_eq!(bad["status"], "failed", "{bad}");
    let why = bad["error"].as_str().unwrap();
    assert!(
        why.contains("max abs error") && why.contains("outside"),
        "{why}"
    );
    assert_eq!(bad["failure"], "check", "{bad}");
    assert_eq!(record(&records, "matmul/n=64/hot")["status"], "ok");
}

/// `base` (the matmul experiment, its variants under `[defaults]`) with the tiled matmul
/// checked against the naive one, which is not timed itself.
fn tiled_against_untimed_naive(base: &str) -> String {
    let start = base.find("[[kernel]]").unwrap();
    let end = base.find("[defaults]").unwrap();
    let tiled = base[start..end]
        .replace("name = \"matmul\"", "name = \"tiled\"")
        .replace("matmul.cu", "matmul_tiled.cu")
        .replace("entry = \"matMulKernel\"", "entry = \"matMulTiled\"")
        .replace(
            "check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }",
            "check_kernel = { kernel = \"matmul\", outputs = [\"C\"], rtol = 1e-3, atol = 1e-3 }",
        );
    base
        .replacen(
            "check = { reference = \"matmul\", inputs = [\"A\", \"B\"], output = \"C\", dims = [\"n\", \"n\", \"n\"] }",
            "timed = false",
            1,
        )
        .replace("[defaults]", &format!("{tiled}[defaults]"))
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn cells_of_one_draw_key_draw_their_own_audited_data_and_check_each_against_its_reference() {
    // A result cache kept where a cell's module does not reach (the device heap) hit on the
    // audited draws the cells of one draw key once shared: each cell draws its own, and runs
    // its reference on each of its audited draws.
    let base = matmul_with(
        "n = [1536]",
        "[defaults]\nwarmup = 2\nsamples = 200\n[[variant]]\nname = \"hot\"\ntimer = \"cupti\"\n[[variant]]\nname = \"events\"\n[[variant]]\nname = \"cold\"\ncache = \"flush\"\ntimer = \"cupti\"\n[report]\nfloor = false\n",
    );
    let text = tiled_against_untimed_naive(&base);
    let (_out, _dir, records) = run_on_gpu("own-draws", &text);
    // The reference kernel's runs after the audit's draw: its audited checks' own.
    let audited_runs = |r: &serde_json::Value| {
        let phases = r["phases"].as_array().unwrap();
        let names = phases.iter().map(|p| p["name"].as_str().unwrap());
        let after = names.skip_while(|n| *n != "audit draw");
        after.filter(|n| *n == "reference kernel").count()
    };
    let cells = ["/hot", "/events", "/cold"].map(|v| record(&records, v));
    let seed = |r: &serde_json::Value| r["audit"]["among"]["draw_seed"].as_u64().unwrap();
    for (i, cell) in cells.iter().enumerate() {
        assert_eq!(cell["status"], "ok", "{cell}");
        let audited = cell["audit"]["among"]["positions"]
            .as_array()
            .unwrap()
            .len();
        assert!(audited >= 2, "{cell}");
        assert!(
            audited_runs(cell) >= audited,
            "each audited draw checked: {cell}"
        );
        for other in &cells[i + 1..] {
            assert_ne!(seed(cell), seed(other), "draws of their own: {other}");
        }
        let check = cell["audit"]["check"].as_str().unwrap();
        assert!(check.contains("against kernel `matmul`"), "{cell}");
    }
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_budget_stops_a_cell_between_samples_and_a_reference_that_is_not_timed_only_checks() {
    let base = matmul_with(
        "n = [512]",
        r#"[defaults]
warmup = 1
samples = 100000
budget = { gpu_time = "50ms", min_samples = 5 }

[[variant]]
name = "events"

[[variant]]
name = "cupti"
timer = "cupti"

[[variant]]
name = "fixed"
samples = 30
budget = "none"

[report]
floor = false
"#,
    );
    let text = tiled_against_untimed_naive(&base);
    let (_out, dir, records) = run_on_gpu("budget", &text);
    assert_eq!(
        records.len(),
        3,
        "only the tiled kernel's cells: {records:?}"
    );
    let rows = sample_rows(&dir);
    let steady = |suffix: &str| {
        (rows.iter())
            .filter(|r| r[0].ends_with(suffix) && r.contains(&"steady".to_string()))
            .count()
    };
    for v in ["/events", "/cupti"] {
        let rec = record(&records, v);
        assert_eq!(rec["status"], "ok", "{rec}");
        assert!(
            rec["check"]
                .as_str()
                .unwrap()
                .contains("against kernel `matmul`"),
            "{rec}"
        );
        let why = &rec["stopped"];
        assert!(why["by"] == "budget" && why["planned"] == 100_000, "{why}");
        let n = steady(v);
        assert!((5..100_000).contains(&n), "{v}: {n} samples");
    }
    // Events count the samples' own time: 50 ms of launches of tens of microseconds.
    let median_ns = steady_median(&dir, "/events");
    let taken = steady("/events") as f64;
    assert!(
        taken * median_ns >= 45e6 && (taken - 1.0) * median_ns < 55e6,
        "{taken} samples of {median_ns} ns"
    );
    assert!(record(&records, "/fixed")["stopped"].is_null());
    assert_eq!(steady("/fixed"), 30);
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn l2_persist_sets_its_window_on_launches_alone_and_in_a_graph_and_says_so() {
    let text = matmul_with(
        "n = [256]",
        r#"[defaults]
warmup = 2
samples = 20
[[variant]]
name = "hot"
[[variant]]
name = "persist"
l2_persist = "B"
[[variant]]
name = "persist-graph"
l2_persist = "B"
graph = 10
timer = "cupti"
[report]
floor = false
"#,
    );
    let (_out, _dir, records) = run_on_gpu("persist", &text);
    for suffix in ["/hot", "/persist", "/persist-graph"] {
        let r = record(&records, suffix);
        assert_eq!(r["status"], "ok", "{r}");
        let window = r.get("l2_window").and_then(|w| w.as_str());
        match suffix {
            "/hot" => assert!(window.is_none(), "{r}"),
            // 256 x 256 floats: a quarter-MiB window, all of it persisting.
            _ => assert!(
                window
                    .is_some_and(|w| w.contains("MiB set aside; `B` window")
                        && w.ends_with("at hit ratio 1.00")),
                "{r}"
            ),
        }
    }
}
