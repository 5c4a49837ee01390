//! What `runner plan` shows of a kernel without a GPU: with `--verbose`, each buffer's type,
//! length and init as evaluated at every point; the check's tolerances from the sweep; that
//! static shared memory is unknown until compiled; and, with `--compile`, what can be known
//! where NVRTC is installed (`tests/gpu_plan.rs` runs it with NVRTC and a GPU).

mod common;
use common::*;

/// A softmax over a type axis and two sizes, its input drawn one way below 1024 columns and
/// another from there, checked against a reference kernel with a tolerance per type.
fn softmax_by_type() -> String {
    let kernel = |name: &str, extra: &str| {
        format!(
            r#"[[kernel]]
name = "{name}"
source = "{}"
entry = "softmax_block<{{{{ dtype | ctype }}}}>"
grid = [64]
block = [256]
shared_bytes = "256 * 4 if cols > 256 else 0"
args = [
  {{ name = "x", buffer = "{{{{ dtype }}}}", len = "64 * cols", init = "{{{{ 'uniform(-1, 1)' if cols < 1024 else 'normal(0, 4)' }}}}" }},
  {{ name = "y", buffer = "{{{{ dtype }}}}", len = "64 * cols", init = "output" }},
  {{ name = "rows", scalar = "i32", value = 64 }},
  {{ name = "cols", scalar = "i32", value = "cols" }},
]
{extra}
"#,
            kernels_dir().join("softmax.cu").display()
        )
    };
    [
        "[experiment]\ntitle = \"softmax by type\"\n[sweep]\ndtype = [\"f16\", \"bf16\"]\ncols = [256, 4096]\n".to_string(),
        kernel("softmax-ref", "timed = false"),
        kernel(
            "softmax",
            "check_kernel = { kernel = \"softmax-ref\", outputs = [\"y\"], rtol = \"{{ {'f16': 1e-3, 'bf16': 1.6e-2}[dtype] }}\" }",
        ),
        "[[variant]]\nname = \"hot\"\n[report]\nfloor = false\n".into(),
    ]
    .join("\n")
}

#[test]
fn plan_verbose_shows_each_buffers_type_length_and_init_at_every_point() {
    let (_dir, path) = write_experiment("softmax.toml", &softmax_by_type());
    let plain = run(&["plan", path.to_str().unwrap()]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    let plain = stdout(&plain);
    let out = run(&["plan", path.to_str().unwrap(), "--verbose"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let verbose = stdout(&out);
    let x = "    buffer x (input): f16 (dtype=f16), bf16 (dtype=bf16); length 16384 (dtype=f16 cols=256), 262144 (dtype=f16 cols=4096), 16384 (dtype=bf16 cols=256), 262144 (dtype=bf16 cols=4096); init uniform(-1, 1) (dtype=f16 cols=256), normal(0, 4) (dtype=f16 cols=4096), uniform(-1, 1) (dtype=bf16 cols=256), normal(0, 4) (dtype=bf16 cols=4096)";
    let y = "    buffer y (output): f16 (dtype=f16), bf16 (dtype=bf16); length 16384 (dtype=f16 cols=256), 262144 (dtype=f16 cols=4096), 16384 (dtype=bf16 cols=256), 262144 (dtype=bf16 cols=4096); init output";
    for line in [x, y] {
        assert!(verbose.contains(line), "no line {line:?} in:\n{verbose}");
        assert!(!plain.contains(line), "plain plan stays short:\n{plain}");
    }
    // Both kernels' buffers, and every other line of the plain plan.
    assert_eq!(verbose.matches("    buffer x (input)").count(), 2);
    assert_eq!(
        verbose
            .lines()
            .filter(|l| !l.starts_with("    buffer "))
            .collect::<Vec<_>>(),
        plain.lines().collect::<Vec<_>>()
    );
}

#[test]
fn plan_shows_tolerances_from_the_sweep_and_shared_memory_it_cannot_know_as_unknown() {
    let (_dir, path) = write_experiment("softmax.toml", &softmax_by_type());
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "    check: kernel `softmax-ref` on the same inputs, comparing y; it is given x, y, rows, cols by name; rtol 0.001 (dtype=f16), 0.016 (dtype=bf16)",
        "    launch: grid 64; block 256; dynamic shared 0 B (dtype=f16 cols=256), 1.0 KiB (dtype=f16 cols=4096), 0 B (dtype=bf16 cols=256), 1.0 KiB (dtype=bf16 cols=4096); static shared unknown until compiled (`runner plan --compile` reads it)",
    ] {
        assert!(text.contains(line), "no line {line:?} in:\n{text}");
    }
    assert!(!text.contains("shared 0 B;"), "{text}");
}

#[test]
fn plan_names_a_steps_entry_as_the_sweep_renders_it() {
    let text = softmax_by_type().replacen(
        "args = [",
        "takes = [\"x\", \"y\", \"rows\", \"cols\"]\nthen = [{ entry = \"softmax_warp<{{ dtype | ctype }}>\", grid = [2], block = [32], args = [\"x\", \"y\", \"rows\", \"cols\"] }]\nargs = [",
        1,
    );
    let (_dir, path) = write_experiment("softmax.toml", &text);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let line = "    then softmax_warp<__half>(x, y, rows, cols) (dtype=f16), softmax_warp<__nv_bfloat16>(x, y, rows, cols) (dtype=bf16): grid 2; block 32; dynamic shared 0 B";
    assert!(text.contains(line), "no line {line:?} in:\n{text}");
}

/// `plan` names what a kernel's declared work counts against: the FLOPs' type and its
/// peak (saying where the type is the default), and DRAM's peak for its bytes.
#[test]
fn plan_shows_the_type_and_peak_a_kernels_flops_and_bytes_count_against() {
    let plain = softmax_by_type().replacen(
        "args = [",
        "flops = \"64 * cols\"\nbytes = \"128 * cols\"\nargs = [",
        1,
    );
    let tensor = plain.replacen("flops = ", "flops_type = \"tensor-bf16\"\nflops = ", 1);
    let declared = plain.replacen(
        "flops = ",
        "peak = { per_sm_clock = 512, name = \"INT8 dp4a (operations)\" }\nflops = ",
        1,
    );
    for (text, line) in [
        (&plain, "    peaks on an assumed H100: flops as FP32 (the default; set `flops_type` or `peak` for another unit): 66.91 TFLOP/s at 1980 MHz; bytes against DRAM: 3352 GB/s"),
        (&tensor, "    peaks on an assumed H100: flops as BF16 tensor-core (dense) (its `flops_type`): 1071 TFLOP/s at 1980 MHz; bytes against DRAM: 3352 GB/s"),
        // 512 x 132 SMs x 1980 MHz.
        (&declared, "    peaks on an assumed H100: flops as INT8 dp4a (operations) (its `peak`: 512 operations per SM per clock x 132 SMs): 133.8 TFLOP/s at 1980 MHz; bytes against DRAM: 3352 GB/s"),
    ] {
        let (_dir, path) = write_experiment("softmax.toml", text);
        let out = run(&["plan", path.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains(line), "no line {line:?} in:\n{}", stdout(&out));
    }
}

/// `plan` shows bytes declared as reads and writes as their sum and each.
#[test]
fn plan_shows_reads_and_writes_beside_their_sum() {
    let text = softmax_by_type().replacen(
        "args = [",
        "reads = \"3 * 1024 * 1024\"\nwrites = \"1024 * 1024\"\nargs = [",
        1,
    );
    let (_dir, path) = write_experiment("softmax.toml", &text);
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = "    per launch: bytes 4.0 MiB = 3.0 MiB read + 1.0 MiB written; flops not declared";
    assert!(
        stdout(&out).contains(line),
        "no line {line:?} in:\n{}",
        stdout(&out)
    );
}

/// A `libnvrtc.so` that lacks NVRTC's functions (another version's, or another library
/// under its name) is named with what it lacks and the fix: exit 1, no panic.
#[test]
fn plan_compile_names_an_nvrtc_that_lacks_the_functions_the_runner_calls() {
    let (dir, path) = write_experiment("softmax.toml", &softmax_by_type());
    for nothing in [false, true] {
        let libs = tempfile::tempdir().unwrap();
        let library = stand_in_nvrtc(libs.path(), nothing);
        let out = runner()
            .args(["plan", path.to_str().unwrap(), "--compile"])
            .env("LD_LIBRARY_PATH", libs.path())
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.contains(&format!("{} lacks", library.display()))
                && err.contains("nvrtcCreateProgram")
                && err.contains("nothing was compiled")
                && err.contains("hint: put the `lib` folder"),
            "{err}"
        );
        assert_eq!(err.contains("nvrtcVersion"), nothing, "{err}");
    }
}
