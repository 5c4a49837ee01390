//! What `runner plan --compile` reads from the compiled code, and NVRTC's warnings in a run.
//! The first test needs NVRTC only (pip's `nvidia-cuda-nvrtc-cu12` on LD_LIBRARY_PATH will
//! do) and checks the driver's figures too where there is a GPU; the second needs a GPU.
//! Ignored without them, as in `tests/gpu.rs`: `cargo test --release -- --include-ignored`.

mod common;
use common::*;
use std::path::Path;

/// A source with a `#warning`, a tiled kernel whose `__shared__` tile and second pass are
/// templates of the tile, and a kernel that spills under its launch bounds.
const SOURCE: &str = r#"#warning this file is a test
template <int N> __global__ void tiled(float* y, const float* x, int n) {
    __shared__ float tile[N];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x % N] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = tile[(threadIdx.x + 1) % N] * 2.0f;
}
template <int N> __global__ void finish(float* y, int n) {
    __shared__ float sums[N / 8];
    sums[threadIdx.x % (N / 8)] = y[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0 && n > 0) y[0] += sums[1];
}
extern "C" __global__ void __launch_bounds__(1024, 2) spills(float* y, const float* x, int n) {
    float acc[96];
#pragma unroll
    for (int j = 0; j < 96; ++j) acc[j] = x[(threadIdx.x + j * 977) % n];
    for (int k = 0; k < 8; ++k) {
#pragma unroll
        for (int j = 0; j < 96; ++j) acc[j] = acc[j] * acc[(j + 1) % 96] + acc[(j + 7) % 96];
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 96; ++j) s += acc[j];
    y[threadIdx.x] = s;
}
"#;

/// The experiment over `SOURCE` in `dir`: the tiled kernel at two tiles, CUBIN and PTX
/// (`compile = "ptx"`), and the spilling kernel.
fn experiment(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("k.cu"), SOURCE).unwrap();
    let kernel = |name: &str, entry: &str, then: &str| {
        format!(
            r#"[[kernel]]
name = "{name}"
source = "k.cu"
entry = "{entry}"
grid = [4]
block = [256]
{then}
args = [
  {{ name = "y", buffer = "f32", len = 1024, init = "output" }},
  {{ name = "x", buffer = "f32", len = 1024, init = "uniform(0, 1)" }},
  {{ name = "n", scalar = "i32", value = 1024 }},
]
unchecked = true
"#
        )
    };
    let text = [
        "[experiment]\ntitle = \"what compiled code uses\"\n[sweep]\ntile = [256, 1024]\n".to_string(),
        kernel(
            "tiled",
            "tiled<{{ tile }}>",
            "takes = [\"y\", \"x\", \"n\"]\nthen = [{ entry = \"finish<{{ tile }}>\", grid = [1], block = [256], args = [\"y\", \"n\"] }]",
        ),
        kernel("spills", "spills", ""),
        "[defaults]\nwarmup = 1\nsamples = 5\n[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"jit\"\ncompile = \"ptx\"\n[report]\nfloor = false\n".into(),
    ]
    .join("\n");
    let path = dir.join("uses.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
#[ignore = "needs NVRTC (the CUDA toolkit), not a GPU: cargo test --release -- --include-ignored"]
fn plan_compile_shows_each_builds_registers_spills_shared_memory_and_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let path = experiment(dir.path());
    let out = run(&["plan", path.to_str().unwrap(), "--compile"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}\n{text}", stderr(&out));
    let on_gpu = text.contains("as the driver reads it");
    let block = |header: &str| -> String {
        let from = text
            .find(header)
            .unwrap_or_else(|| panic!("no build {header:?} in:\n{text}"));
        let rest = &text[from + header.len()..];
        rest[..rest.find("\n  kernel ").unwrap_or(rest.len())].to_string()
    };
    for (tile, tile_bytes, sums_bytes) in [(256, "1.0 KiB", "128 B"), (1024, "4.0 KiB", "512 B")] {
        let cubin = block(&format!(
            "  kernel `tiled` (tiled<{tile}>, at {tile}), a CUBIN for sm_"
        ));
        for (entry, bytes) in [("tiled", tile_bytes), ("finish", sums_bytes)] {
            let line = (cubin.lines())
                .find(|l| l.starts_with(&format!("    {entry}<{tile}>: ")))
                .unwrap_or_else(|| panic!("no {entry}<{tile}> in:\n{cubin}"));
            assert!(
                line.contains(" registers; no spills; local memory 0 B per thread; ")
                    && line.contains(&format!("; static shared {bytes}")),
                "{line}"
            );
            match on_gpu {
                true => assert!(line.ends_with(" threads per block"), "{line}"),
                false => assert!(
                    line.ends_with("; threads per block unknown (needs a GPU)"),
                    "{line}"
                ),
            }
        }
        let warning = format!(
            "{}:1: warning #1105-D: #warning directive: this file is a test",
            dir.path().join("k.cu").display()
        );
        assert!(
            cubin.contains(&warning) || cubin.contains("    NVRTC: the warnings of kernel `"),
            "{cubin}"
        );
        // The driver compiles PTX at load: without a GPU nothing of it is known.
        let ptx = block(&format!(
            "  kernel `tiled` (tiled<{tile}>, at {tile}), PTX for compute_"
        ));
        match on_gpu {
            true => assert!(
                ptx.contains(&format!("; static shared {tile_bytes}; at most "))
                    && ptx.contains("; spills unknown (the driver compiles PTX at load)"),
                "{ptx}"
            ),
            false => assert!(
                ptx.contains(&format!("    tiled<{tile}>: registers, local memory, static shared memory, threads per block unknown (needs a GPU); spills unknown (the driver compiles PTX at load)")),
                "{ptx}"
            ),
        }
    }
    let spills = block("  kernel `spills` (spills, at 256), a CUBIN for sm_");
    assert!(
        spills.contains(" stored, ") && !spills.contains("no spills"),
        "{spills}"
    );
    assert_eq!(
        text.matches("#warning directive: this file is a test")
            .count(),
        1,
        "each warning once, later builds pointing to it:\n{text}"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn a_run_keeps_nvrtcs_warnings_in_the_record_of_the_cell_that_compiled() {
    let dir = tempfile::tempdir().unwrap();
    let path = experiment(dir.path());
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(&[
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
        "--only",
        "kernel=tiled",
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let records = records_of(&out_dir.path().join("uses"));
    let warned: Vec<&serde_json::Value> = (records.iter())
        .filter(|r| r.get("compile_warnings").is_some())
        .collect();
    // The cells that compiled: one per tile and compile mode in the shared process.
    assert_eq!(warned.len(), 4, "{records:#?}");
    for r in &warned {
        let w = r["compile_warnings"][0].as_str().unwrap();
        assert!(
            w.ends_with("warning #1105-D: #warning directive: this file is a test"),
            "{r}"
        );
        assert!(r["compile_ms"].as_f64().is_some(), "{r}");
    }
    assert_eq!(
        err.matches("warning: NVRTC warned compiling the kernel of tiled/")
            .count(),
        4,
        "{err}"
    );
}

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn plan_probe_times_each_build_and_point_on_the_device_and_counts_it() {
    let text = matmul_with(
        "n = [64, 512]",
        "[[variant]]\nname = \"hot\"\n[[variant]]\nname = \"cold\"\ncache = \"flush\"\n",
    );
    let (dir, path) = write_experiment("probed.toml", &text);
    let out = runner()
        .current_dir(dir.path())
        .args(["plan", "--probe", "--verbose", path.to_str().unwrap()])
        .output()
        .unwrap();
    let said = stdout(&out);
    assert!(out.status.success(), "{said}{}", stderr(&out));
    // Two points, hot and flushed: four probe cells, each timed.
    assert!(said.contains("probe: 4 of 4 kernel builds"), "{said}");
    let reading = |id: &str| -> f64 {
        let line = (said.lines())
            .find(|l| l.trim_start().starts_with(&format!("probe/{id}:")))
            .unwrap_or_else(|| panic!("no probe line for {id}: {said}"));
        // `  probe/ID: 12.3 µs a launch (NVRTC 45 ms)`, the compile where the cell paid it.
        let (_, after) = line.split_once(": ").unwrap();
        after.split(" µs a launch").next().unwrap().parse().unwrap()
    };
    // The naive matmul at n = 512 takes far longer than at n = 64.
    assert!(
        reading("matmul/n=512/hot") > 4.0 * reading("matmul/n=64/hot"),
        "{said}"
    );
    assert!(
        said.contains("as the probe timed them")
            && said.contains("Probed, the project's first runs took 0.65 to 1.5 times"),
        "{said}"
    );
}
