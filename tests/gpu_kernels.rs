//! Kernels of any shape on a GPU: bf16 buffers checked against a reference kernel, managed
//! and mapped buffers, copies, and a prebuilt PTX module. Ignored without a GPU, as in `tests/gpu.rs`.

mod common;
use common::*;

/// A kernel of `kernels/` at `source`, with the experiment's rows and columns.
fn softmax(name: &str, entry: &str, grid: &str, block: u32, check: &str) -> String {
    format!(
        r#"[[kernel]]
name = "{name}"
source = "{}"
entry = "{entry}"
grid = [{grid}]
block = [{block}]
args = [
  {{ name = "x", buffer = "bf16", len = "64 * cols", init = "normal(0, 4)" }},
  {{ name = "y", buffer = "bf16", len = "64 * cols", init = "output" }},
  {{ name = "rows", scalar = "i32", value = 64 }},
  {{ name = "cols", scalar = "i32", value = "cols" }},
]
{check}
"#,
        kernels_dir().join("softmax.cu").display()
    )
}

fn saxpy(name: &str, source: &str, entry: &str, check: &str) -> String {
    format!(
        r#"[[kernel]]
name = "{name}"
source = "{}"
entry = "{entry}"
grid = ["(cols + 255) // 256"]
block = [256]
args = [
  {{ name = "a", scalar = "f32", value = 2.5 }},
  {{ name = "x", buffer = "f32", len = "cols", init = "uniform(-1, 1)" }},
  {{ name = "y", buffer = "f32", len = "cols", init = "uniform(-1, 1)" }},
  {{ name = "count", scalar = "u64", value = "cols" }},
]
{check}
"#,
        kernels_dir().join(source).display()
    )
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn bf16_buffers_and_a_prebuilt_ptx_module_run_checked() {
    let against = |k: &str| format!("check_kernel = {{ kernel = \"{k}\", outputs = [\"y\"] }}");
    let text = [
        "[experiment]\ntitle = \"any kernel\"\n[sweep]\ncols = [1000, 4096]\n".to_string(),
        softmax("ref", "softmax_ref<__nv_bfloat16>", "1", 64, "unchecked = true"),
        softmax("warp", "softmax_warp<__nv_bfloat16>", "8", 256, &against("ref")),
        saxpy("saxpy-ref", "saxpy.cu", "saxpy_ref", "unchecked = true"),
        saxpy("saxpy-ptx", "prebuilt/saxpy.compute_90.ptx", "saxpy", &against("saxpy-ref")),
        "[defaults]\ntimer = \"events\"\nwarmup = 1\nsamples = 5\n[[variant]]\nname = \"hot\"\n[report]\nfloor = false\n".into(),
    ]
    .join("\n");
    let (_out, _dir, records) = run_on_gpu("anykernel", &text);
    for cols in [1000, 4096] {
        let warp = record(&records, &format!("warp/cols={cols}/hot"));
        assert_eq!(warp["status"], "ok", "{warp}");
        let check = warp["check"].as_str().unwrap();
        assert!(
            check.contains("against kernel `ref`: y: max abs error"),
            "{check}"
        );
        let ptx = record(&records, &format!("saxpy-ptx/cols={cols}/hot"));
        assert_eq!(ptx["status"], "ok", "{ptx}");
        assert!(
            ptx["check"]
                .as_str()
                .unwrap()
                .contains("against kernel `saxpy-ref`"),
            "{ptx}"
        );
        assert!(
            ptx["compile_ms"].is_null(),
            "a prebuilt module is not compiled: {ptx}"
        );
    }
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_kernel_with_a_second_pass_is_timed_as_one_region_and_checked() {
    let reduce = kernels_dir().join("reduce.cu");
    let kernel = |name: &str, first: &str, second: &str, block: u32, extra: &str| {
        format!(
            r#"[[kernel]]
name = "{name}"
source = "{src}"
entry = "{first}"
grid = ["(n + 4095) // 4096"]
block = [{block}]
shared_bytes = "{block} * 4"
takes = ["x", "partial", "n", "per_block"]
then = [{{ entry = "{second}", grid = [1], block = [256], shared_bytes = 1024, args = ["partial", "out", "count"] }}]
args = [
  {{ name = "x", buffer = "f32", len = "n", init = "uniform(0, 1)" }},
  {{ name = "partial", buffer = "f32", len = "(n + 4095) // 4096", init = "output" }},
  {{ name = "out", buffer = "f32", len = 1, init = "output" }},
  {{ name = "n", scalar = "u64", value = "n" }},
  {{ name = "per_block", scalar = "i32", value = 4096 }},
  {{ name = "count", scalar = "i32", value = "(n + 4095) // 4096" }},
]
{extra}
"#,
            src = reduce.display()
        )
    };
    let text = [
        "[experiment]\ntitle = \"two passes\"\n[sweep]\nn = [\"2^16\", \"2^20\"]\n".to_string(),
        kernel("ref", "reduce_ref", "reduce_final_ref", 32, "unchecked = true"),
        kernel(
            "sum",
            "reduce_block",
            "reduce_final",
            256,
            "check_kernel = { kernel = \"ref\", outputs = [\"partial\", \"out\"] }",
        ),
        "[defaults]\nwarmup = 2\nsamples = 10\n[[variant]]\nname = \"events\"\ntimer = \"events\"\n[[variant]]\nname = \"cupti\"\ntimer = \"cupti\"\n[report]\nfloor = false\n".into(),
    ]
    .join("\n");
    let (_out, dir, records) = run_on_gpu("twopass", &text);
    for cell in [
        "sum/n=65536/events",
        "sum/n=1048576/cupti",
        "sum/n=1048576/events",
    ] {
        let r = record(&records, cell);
        assert_eq!(r["status"], "ok", "{r}");
        let check = r["check"].as_str().unwrap();
        assert!(
            check.contains("partial:") && check.contains("out:"),
            "{check}"
        );
    }
    let kernels = record(&records, "sum/n=1048576/cupti")["cupti"]["kernels"].clone();
    assert_eq!(kernels.as_array().map(Vec::len), Some(2), "{kernels}");
    // CUPTI's span of the two kernels together is about what events read around them.
    let (cupti, events) = (
        steady_median(&dir, "sum/n=1048576/cupti"),
        steady_median(&dir, "sum/n=1048576/events"),
    );
    assert!(
        cupti > 0.0 && cupti < events,
        "cupti {cupti} ns, events {events} ns"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn headers_beside_the_source_and_in_an_include_option_are_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("inc")).unwrap();
    std::fs::write(dir.path().join("near.cuh"), "#define NEAR 2.0f\n").unwrap();
    std::fs::write(dir.path().join("inc/far.cuh"), "#define FAR 3.0f\n").unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "#include \"near.cuh\"\n#include \"far.cuh\"\n#include <cuda_fp16.h>\nextern \"C\" __global__ void k(float* y) { y[threadIdx.x] = NEAR * FAR + __half2float(__float2half(1.0f)); }\n",
    )
    .unwrap();
    let text = "[experiment]\ntitle = \"headers\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\noptions = [\"-Iinc\", \"--std=c++20\"]\ngrid = [1]\nblock = [32]\nargs = [{ name = \"y\", buffer = \"f32\", len = 32, init = \"output\" }]\nunchecked = true\n[[variant]]\nname = \"hot\"\nsamples = 3\n[report]\nfloor = false\n";
    std::fs::write(dir.path().join("e.toml"), text).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(&[
        dir.path().join("e.toml").to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cells = stored_text(&out_dir.path().join("e"), "cells.jsonl");
    assert!(cells.contains("\"status\":\"ok\""), "{cells}");
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn managed_and_mapped_buffers_run_checked_also_with_fresh_inputs() {
    let root = kernels_dir().parent().unwrap().to_path_buf();
    let experiment = std::fs::read_to_string(root.join("experiments/unified-memory.toml"))
        .unwrap()
        .replace("n = \"2^20..2^28\"", "n = [65536]")
        .replace("../kernels/", &format!("{}/", kernels_dir().display()));
    let (_out, _dir, records) = run_on_gpu("unified", &experiment);
    for kernel in ["device", "managed", "mapped"] {
        for variant in ["resident", "migrating"] {
            let r = record(&records, &format!("{kernel}/n=65536/{variant}"));
            assert_eq!(r["status"], "ok", "{r}");
            let check = r["check"].as_str().unwrap();
            assert!(
                check.contains("against kernel `triad-ref`: A: max abs error 0.000e0"),
                "{kernel}/{variant}: {check}"
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn copies_alone_and_around_a_kernel_run_checked_under_events_and_cupti() {
    let root = kernels_dir().parent().unwrap().to_path_buf();
    let experiment = std::fs::read_to_string(root.join("experiments/transfers.toml"))
        .unwrap()
        .replace("size = \"2^12..2^30\"", "size = [4096, 1048576]")
        .replace("../kernels/", &format!("{}/", kernels_dir().display()))
        .replacen(
            "[[kernel]]",
            "[[copy]]\nname = \"mapped-sync\"\nfrom = \"mapped\"\nto = \"managed\"\nbytes = \"size\"\nsync = true\n\n[[kernel]]",
            1,
        );
    let (_out, _dir, records) = run_on_gpu("transfers", &experiment);
    for size in [4096, 1048576] {
        for variant in ["events", "cupti"] {
            for copy in [
                "h2d-pinned",
                "h2d-pageable",
                "d2h-pinned",
                "d2h-pageable",
                "d2d",
            ] {
                let r = record(&records, &format!("{copy}/size={size}/{variant}"));
                assert_eq!(r["status"], "ok", "{r}");
                let check = r["check"].as_str().unwrap();
                assert!(check.contains("elements equal"), "{copy}: {check}");
                assert!(r["first_ns"].as_f64().unwrap() > 0.0, "{r}");
                // The driver's copy is checked; it holds no code of the experiment's to audit.
                assert!(r["audit"].is_null(), "{r}");
            }
            let r = record(&records, &format!("sequence/size={size}/{variant}"));
            assert_eq!(r["status"], "ok", "{r}");
            // A kernel among the copies is judged.
            assert!(r["audit"]["unjudged"].is_null(), "{r}");
            let check = r["check"].as_str().unwrap();
            assert!(
                check.contains("against kernel `sequence-ref`: h_out"),
                "{check}"
            );
        }
        // CUPTI sees the sequence's copy in, kernel and copy out apart, each copy whole.
        let r = record(&records, &format!("sequence/size={size}/cupti"));
        let phases: Vec<&str> = r["cupti"]["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k[0].as_str().unwrap())
            .collect();
        let copy = |way: &str| format!("memcpy {way} {size} B");
        assert_eq!(
            phases,
            [copy("HtoD").as_str(), "scale", &copy("DtoH")],
            "{r}"
        );
    }
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_run_of_part_of_an_experiment_keeps_its_selection_through_report_and_resume() {
    let out_dir = tempfile::tempdir().unwrap();
    let (_d, path) = write_experiment("part.toml", &matmul_experiment(&kernels_dir()));
    let out = run(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
        "--only",
        "variant=events",
        "--only",
        "n=96,48",
        "--set",
        "n=48,96",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = out_dir.path().join("part");
    let ids: Vec<String> = stored_text(&dir, "cells.jsonl")
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    // 48 is not in the file's sweep: --set put it there.
    assert_eq!(ids, ["matmul/n=48/events", "matmul/n=96/events"]);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        meta["only"],
        serde_json::json!(["variant=events", "n=96,48"])
    );
    assert_eq!(meta["set"], serde_json::json!(["n=48,96"]));
    let report = run(&["report", dir.to_str().unwrap()]);
    assert!(report.status.success(), "{}", stderr(&report));
    let text = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        text.contains("| sweep replaced | --set n=48,96 |"),
        "{text}"
    );
    let resumed = run(&["run", "--resume", dir.to_str().unwrap(), "--only", "n=64"]);
    assert_eq!(resumed.status.code(), Some(1));
    assert!(stderr(&resumed).contains("keeps the cells it was started with"));
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_graph_takes_the_buffer_sets_in_turn_and_stays_checked() {
    let text = matmul_with(
        "n = [64]",
        "[defaults]\nwarmup = 2\nsamples = 5\n[[variant]]\nname = \"graph-rotate\"\ntimer = \"events\"\ngraph = 8\nrotate = 3\n[[variant]]\nname = \"cupti-graph-rotate\"\ntimer = \"cupti\"\ngraph = 8\nrotate = 3\n[report]\nfloor = false\n",
    );
    let (_out, _dir, records) = run_on_gpu("graphrotate", &text);
    for v in ["graph-rotate", "cupti-graph-rotate"] {
        let r = record(&records, &format!("matmul/n=64/{v}"));
        assert_eq!(r["status"], "ok", "{r}");
        assert!(
            r["check"].as_str().unwrap().contains("matmul vs float64"),
            "{r}"
        );
    }
}

#[test]
#[ignore = "needs NVRTC (the CUDA toolkit), not a GPU: cargo test --release -- --include-ignored"]
fn plan_compile_names_the_kernel_file_and_line_of_a_compile_error_and_a_wrong_argument_list() {
    let dir = tempfile::tempdir().unwrap();
    // NVRTC compiles a whole file: the broken kernel has its own.
    std::fs::write(
        dir.path().join("k.cu"),
        "extern \"C\" __global__ void ok(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 1; }\n",
    )
    .unwrap();
    let source = dir.path().join("broken.cu");
    std::fs::write(
        &source,
        "// A kernel that does not compile.\n\nextern \"C\" __global__ void broken(float* y, int n) {\n  y[0] = undefined_name;\n}\n",
    )
    .unwrap();
    let kernel = |name: &str, entry: &str, args: &str| {
        let file = if entry == "broken" {
            "broken.cu"
        } else {
            "k.cu"
        };
        format!(
            "[[kernel]]\nname = \"{name}\"\nsource = \"{file}\"\nentry = \"{entry}\"\ngrid = [1]\nblock = [32]\nargs = [\n  {{ name = \"y\", buffer = \"f32\", len = 32, init = \"output\" }},\n{args}]\nunchecked = true\n"
        )
    };
    let text = |kernels: &str| {
        format!("[experiment]\ntitle = \"t\"\n{kernels}[[variant]]\nname = \"hot\"\n[report]\nfloor = false\n")
    };
    let plan = |kernels: &str| {
        let path = dir.path().join("e.toml");
        std::fs::write(&path, text(kernels)).unwrap();
        run(&["plan", path.to_str().unwrap(), "--compile"])
    };
    let n = "  { name = \"n\", scalar = \"i32\", value = 32 },\n";
    let out = plan(&kernel("good", "ok", n));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("1 build(s) of 1 kernel(s), 0 failed"),
        "{}",
        stdout(&out)
    );
    let out = plan(&kernel("bad", "broken", n));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let at = format!("{}:4: error", source.display());
    assert!(
        err.contains("kernel `bad` (broken)") && err.contains(&at),
        "{err}"
    );
    let long = "  { name = \"n\", scalar = \"i64\", value = 32 },\n";
    let out = plan(&kernel("wide", "ok", long));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("kernel `wide` (ok): the kernel `ok` takes 2 parameter(s) of [8, 4] bytes, but the experiment gives 2 of [8, 8] bytes"),
        "{err}"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_newcomers_kernels_run_checked_by_name_with_scratch_and_inits_from_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    // The reference takes neither the block sums nor per_block, in its own order.
    std::fs::write(
        dir.path().join("sum_ref.cu"),
        "extern \"C\" __global__ void sum_ref(float* out, const float* x, unsigned long long n) {\n  if (threadIdx.x != 0 || blockIdx.x != 0) return;\n  double s = 0.0;\n  for (unsigned long long i = 0; i < n; ++i) s += x[i];\n  out[0] = (float)s;\n}\n",
    )
    .unwrap();
    for spread in [256u32, 2] {
        let data: Vec<u32> = (0..65536u32).map(|i| (i * 7919) % spread).collect();
        std::fs::write(
            dir.path().join(format!("data_{spread}.npy")),
            npy_u32(&data),
        )
        .unwrap();
    }
    let (reduce, histograms) = (
        kernels_dir().join("reduce.cu"),
        kernels_dir().join("histogram.cu"),
    );
    let histogram = |name: &str, entry: &str, init: &str, extra: &str| {
        format!(
            r#"[[kernel]]
name = "{name}"
source = "{}"
entry = "{entry}"
grid = [256]
block = [256]
args = [
  {{ name = "data", buffer = "u32", len = 65536, init = "{init}" }},
  {{ name = "bins", buffer = "u32", len = 256, reset = "zeros" }},
  {{ name = "count", scalar = "u64", value = 65536 }},
]
{extra}
"#,
            histograms.display()
        )
    };
    let by_ref = "check_kernel = { kernel = \"histogram-ref\", outputs = [\"bins\"] }";
    let text = [
        "[experiment]\ntitle = \"newcomer\"\n[sweep]\nspread = [256, 2]\n".to_string(),
        histogram("histogram-ref", "histogram_plain", "uniform(0, {{ spread }})", "unchecked = true"),
        histogram("histogram", "histogram_shared", "uniform(0, {{ spread }})", by_ref),
        histogram("histogram-file", "histogram_shared", "npy(data_{{ spread }}.npy)", by_ref),
        format!(
            r#"[[kernel]]
name = "sum-ref"
source = "sum_ref.cu"
entry = "sum_ref"
grid = [1]
block = [32]
args = [
  {{ name = "out", buffer = "f32", len = 1, init = "output" }},
  {{ name = "x", buffer = "f32", len = 65536, init = "uniform(0, 1)" }},
  {{ name = "n", scalar = "u64", value = 65536 }},
]
unchecked = true
[[kernel]]
name = "sum"
source = "{}"
entry = "reduce_block"
grid = [16]
block = [256]
shared_bytes = 1024
takes = ["x", "partial", "n", "per_block"]
then = [{{ entry = "reduce_final", grid = [1], block = [256], shared_bytes = 1024, args = ["partial", "out", "blocks"] }}]
args = [
  {{ name = "x", buffer = "f32", len = 65536, init = "uniform(0, 1)" }},
  {{ name = "partial", buffer = "f32", len = 16, init = "scratch" }},
  {{ name = "out", buffer = "f32", len = 1, init = "output" }},
  {{ name = "n", scalar = "u64", value = 65536 }},
  {{ name = "per_block", scalar = "i32", value = 4096 }},
  {{ name = "blocks", scalar = "i32", value = 16 }},
]
check_kernel = {{ kernel = "sum-ref", outputs = ["out"] }}
"#,
            reduce.display()
        ),
        "[defaults]\ntimer = \"events\"\nwarmup = 1\nsamples = 5\n[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"graph\"\ngraph = 10\n[report]\nfloor = false\n".into(),
    ]
    .join("\n");
    let path = dir.path().join("newcomer.toml");
    std::fs::write(&path, &text).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(&[
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "every cell trusted: {}", stderr(&out));
    let records = records_of(&out_dir.path().join("newcomer"));
    for spread in [256, 2] {
        for kernel in ["histogram", "histogram-file"] {
            for variant in ["hot", "graph"] {
                let r = record(&records, &format!("{kernel}/spread={spread}/{variant}"));
                assert_eq!(r["status"], "ok", "{r}");
                let check = r["check"].as_str().unwrap();
                assert!(
                    check.contains("bins: all 256 elements equal (integers, compared exactly)"),
                    "{check}"
                );
            }
        }
    }
    let sum = record(&records, "sum/spread=2/graph");
    assert_eq!(sum["status"], "ok", "{sum}");
    assert!(
        sum["check"]
            .as_str()
            .unwrap()
            .contains("against kernel `sum-ref`: out:"),
        "{sum}"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn an_output_equal_bit_for_bit_is_compared_in_full_on_the_gpu_and_a_nan_still_fails() {
    let dir = tempfile::tempdir().unwrap();
    // y = 2x, with element `nan_at` a NaN and element `off_at` one more, where in range.
    let source = "extern \"C\" __global__ void twice(const float* x, float* y, int n, int nan_at, int off_at) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  float v = 2.0f * x[i];\n  if (i == nan_at) v = __int_as_float(0x7fc00000);\n  if (i == off_at) v += 1.0f;\n  y[i] = v;\n}\n";
    std::fs::write(dir.path().join("twice.cu"), source).unwrap();
    // The reference is given the checked kernel's arguments by name: `bump` is its own.
    let kernel = |name: &str, nan_at: i32, (off, off_at): (&str, i32), check: &str| {
        format!(
            r#"[[kernel]]
name = "{name}"
source = "twice.cu"
entry = "twice"
grid = ["(n + 255) // 256"]
block = [256]
args = [
  {{ name = "x", buffer = "f32", len = "n", init = "uniform(-1, 1)" }},
  {{ name = "y", buffer = "f32", len = "n", init = "output" }},
  {{ name = "n", scalar = "i32", value = "n" }},
  {{ name = "nan_at", scalar = "i32", value = {nan_at} }},
  {{ name = "{off}", scalar = "i32", value = {off_at} }},
]
{check}
"#
        )
    };
    let against = |r: &str| format!("check_kernel = {{ kernel = \"{r}\", outputs = [\"y\"] }}");
    let text = [
        "[experiment]\ntitle = \"checks on the GPU\"\n[sweep]\nn = [262144]\n".to_string(),
        kernel("ref", -1, ("off_at", -1), "unchecked = true"),
        kernel("nan-ref", 7, ("off_at", -1), "unchecked = true"),
        kernel("same", -1, ("off_at", -1), &against("ref")),
        kernel("nan", 7, ("off_at", -1), &against("nan-ref")),
        kernel("off", -1, ("bump", 200000), &against("ref")),
        "[defaults]\ntimer = \"events\"\nsamples = 200\n[[variant]]\nname = \"hot\"\n[report]\nfloor = false\n".into(),
    ]
    .join("\n");
    std::fs::write(dir.path().join("e.toml"), text).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(&[
        dir.path().join("e.toml").to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
        "--allow-failures",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let records = records_of(&out_dir.path().join("e"));
    // Every element compared, in the check and in each audited region's re-check (which
    // would read back a sample of 16384), and the same account as on the host.
    let same = record(&records, "same/n=262144/hot");
    assert_eq!(same["status"], "ok", "{same}");
    for check in [&same["check"], &same["audit"]["check"]] {
        assert_eq!(
            check.as_str().unwrap(),
            "against kernel `ref`: y: max abs error 0.000e0, max rel error 0.000e0 over 262144 elements",
            "{same}"
        );
    }
    // A NaN where the reference has one too matches byte for byte, and fails all the same.
    let nan = record(&records, "nan/n=262144/hot");
    assert_eq!(nan["status"], "failed", "{nan}");
    assert!(
        nan["error"].as_str().unwrap().contains("1 outside"),
        "{nan}"
    );
    let off = record(&records, "off/n=262144/hot");
    assert_eq!(off["status"], "failed", "{off}");
    assert!(
        off["error"].as_str().unwrap().contains("y[200000]"),
        "{off}"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_python_reference_checks_a_buffer_updated_in_place_and_each_audited_draw() {
    if !has_numpy() {
        eprintln!("SKIPPED: python3 has no NumPy here: a Python reference cannot run");
        return;
    }
    let references = std::env::current_dir()
        .unwrap()
        .join("experiments/references.py");
    let python = |function: &str| {
        format!(
            "check_python = {{ function = \"{}:{function}\", outputs = [\"y\"] }}",
            references.display()
        )
    };
    let wrong = format!("{}\nexpect = \"caught\"", python("saxpy_without_y"));
    let text = [
        "[experiment]\ntitle = \"python in place\"\n[sweep]\ncols = [4096, 1048576]\n".to_string(),
        saxpy("saxpy", "saxpy.cu", "saxpy_ref", &python("saxpy")),
        saxpy("saxpy-wrong", "saxpy.cu", "saxpy_ref", &wrong),
        "[defaults]\ntimer = \"events\"\nwarmup = 1\nsamples = 300\n[[variant]]\nname = \"hot\"\n[report]\nfloor = false\n".into(),
    ]
    .join("\n");
    let (_out, _dir, records) = run_on_gpu("pythoninplace", &text);
    for cols in [4096, 1048576] {
        let right = record(&records, &format!("saxpy/cols={cols}/hot"));
        assert_eq!(right["status"], "ok", "{right}");
        let check = right["check"].as_str().unwrap();
        assert!(check.contains("against Python `"), "{check}");
        // Its audited regions, each checked on its own draw.
        let audit = &right["audit"];
        let regions = audit["among"]["readings_ns"].as_array().unwrap().len();
        assert!(regions >= 1, "{audit}");
        let account = audit["check"].as_str().unwrap();
        assert!(
            account.contains("against Python `") && account.contains("y: max abs error"),
            "{account}"
        );
        let wrong = record(&records, &format!("saxpy-wrong/cols={cols}/hot"));
        assert_eq!(wrong["status"], "failed", "{wrong}");
    }
}

#[test]
#[ignore = "needs a GPU and torch with CUDA: cargo test --release -- --include-ignored"]
fn a_python_reference_on_the_gpu_checks_every_element_in_place() {
    let torch = std::process::Command::new("python3")
        .args(["-c", "import torch; assert torch.cuda.is_available()"])
        .status();
    if !torch.is_ok_and(|s| s.success()) {
        eprintln!("skipped: python3 has no torch with CUDA here");
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(&[
        "experiments/python-on-gpu.toml",
        "--only",
        "n=1048576",
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let records = records_of(&out_dir.path().join("python-on-gpu"));
    for variant in ["hot", "cold", "batch"] {
        let r = record(&records, &format!("saxpy/n=1048576/{variant}"));
        assert_eq!(r["status"], "ok", "{r}");
        let check = r["check"].as_str().unwrap();
        assert!(
            check.contains("on the GPU: y: max abs error 0.000e0")
                && check.contains("over 1048576 elements"),
            "{check}"
        );
        let wrong = record(&records, &format!("saxpy-wrong/n=1048576/{variant}"));
        assert_eq!(wrong["status"], "failed", "{wrong}");
    }
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_kernel_that_writes_past_its_output_into_the_inputs_kept_for_later_cells_fails() {
    // x and y of 2 MiB each: the copy of x the runner keeps for the cells after the first
    // is the allocation after y, where a write past y lands (or faults, where it is not
    // mapped).
    let kernel = tempfile::tempdir().unwrap();
    let source = kernel.path().join("scribble.cu");
    std::fs::write(
        &source,
        "extern \"C\" __global__ void scribble(const float *x, float *y, int n, int past) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n  if (i < past) y[n + i] = 7.0f;\n}\nextern \"C\" __global__ void doubled(const float *x, float *y, int n, int past) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i];\n}\n",
    )
    .unwrap();
    let kernel_text = |name: &str, entry: &str, check: &str| {
        format!(
            "[[kernel]]\nname = \"{name}\"\nsource = \"{}\"\nentry = \"{entry}\"\ngrid = [\"n // 256\"]\nblock = [256]\nargs = [\n  {{ name = \"x\", buffer = \"f32\", len = \"n\", init = \"uniform(-1, 1)\" }},\n  {{ name = \"y\", buffer = \"f32\", len = \"n\", init = \"output\" }},\n  {{ name = \"n\", scalar = \"i32\", value = \"n\" }},\n  {{ name = \"past\", scalar = \"i32\", value = 64 }},\n]\n{check}\n",
            source.display()
        )
    };
    let against = "check_kernel = { kernel = \"double\", outputs = [\"y\"] }";
    let text = [
        "[experiment]\ntitle = \"writes past its output\"\n[sweep]\nn = [524288]\n".to_string(),
        // The first cell of a draw keeps its inputs for the cells after it.
        kernel_text("scribble", "scribble", against),
        kernel_text("double", "doubled", "unchecked = true"),
        kernel_text("honest", "doubled", against),
        "[defaults]\ntimer = \"events\"\nwarmup = 1\nsamples = 20\n[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"cold\"\ncache = \"flush\"\n[report]\nfloor = false\n".into(),
    ]
    .join("\n");
    let (_out, _dir, records) = run_on_gpu("scribble", &text);
    for variant in ["hot", "cold"] {
        let honest = record(&records, &format!("honest/n=524288/{variant}"));
        assert_eq!(honest["status"], "ok", "{honest}");
    }
    let scribble = record(&records, "scribble/n=524288/hot");
    assert_eq!(scribble["status"], "failed", "{scribble}");
    let why = scribble["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("wrote outside its buffers") || why.contains("illegal"),
        "{why}"
    );
    println!("the write past the output: {why}");
}
