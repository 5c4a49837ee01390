//! The audit's draws on the GPU (`kernels/audit.cu`) hold the distributions an experiment
//! names, in every type, up to the last element of a buffer whose length is no multiple of
//! the draw's 16-byte groups: a Python reference sees each audited region's inputs as drawn
//! and fails the check where their range, mean, spread or independence is not as asked.

mod common;
use common::*;

/// A kernel that reads nothing: its inputs are there only to be drawn.
const KERNEL: &str = r#"#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void touch(const float *f32, const __half *f16, const __nv_bfloat16 *bf16,
                                 const double *f64, const signed char *i8,
                                 const unsigned short *u16, const int *i32,
                                 const float *gauss, float *y, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        y[0] = 1.0f;
    }
}
"#;

/// The reference: asserts each input's distribution (five standard errors, or a bound no
/// draw may pass), then returns what the kernel writes.
const REFERENCE: &str = r#"import numpy as np

def near(name, got, want, tol):
    assert abs(got - want) <= tol, f"{name}: {got} where {want} +- {tol}"

def uniform(name, x, lo, hi, top_included=False, integers=False):
    x = np.asarray(x, dtype=np.float64)
    assert x.min() >= lo and (x.max() <= hi if top_included else x.max() < hi), f"{name}: [{x.min()}, {x.max()}] outside [{lo}, {hi})"
    # Integers are drawn rounded down: lo to hi - 1, each as likely.
    top = hi - 1 if integers else hi
    sd = np.sqrt(((hi - lo) ** 2 - (1 if integers else 0)) / 12.0)
    near(name + " mean", x.mean(), (lo + top) / 2, 5 * sd / np.sqrt(len(x)) + 1e-3 * sd)
    near(name + " sd", x.std(), sd, 0.03 * sd)
    independent(name, x)

def independent(name, x):
    # Elements near each other share no draw: a uniform pair comes from one 64-bit word, and
    # a 16-byte group's words from its first.
    for lag in (1, 2, 3, 4):
        c = np.corrcoef(x[:-lag], x[lag:])[0, 1]
        assert abs(c) < 5 / np.sqrt(len(x)) + 0.01, f"{name}: elements {lag} apart correlate {c}"

def normal(name, x, mean, sd):
    x = np.asarray(x, dtype=np.float64)
    assert np.isfinite(x).all(), f"{name}: not finite"
    near(name + " mean", x.mean(), mean, 5 * sd / np.sqrt(len(x)) + 1e-3 * sd)
    near(name + " sd", x.std(), sd, 0.03 * sd)
    within = np.mean(np.abs(x - mean) < sd)
    near(name + " within one sd", within, 0.6827, 0.02)
    independent(name, x)

def touch(f32, f16, bf16, f64, i8, u16, i32, gauss, n):
    uniform("f32", f32, -2.0, 3.0)
    normal("f16", f16, 1.0, 0.5)
    uniform("bf16", bf16, 0.0, 1.0, top_included=True)
    normal("f64", f64, 0.0, 2.0)
    uniform("i8", i8, -100, 100, integers=True)
    assert len(np.unique(i8)) == 200, f"i8: {len(np.unique(i8))} values of 200"
    uniform("u16", u16, 0, 60000, integers=True)
    uniform("i32", i32, -1000, 1000, integers=True)
    normal("gauss", gauss, -3.0, 0.25)
    return np.ones(1)
"#;

#[test]
#[ignore = "needs a GPU: cargo test --release -- --include-ignored"]
fn the_audits_draws_hold_each_types_distribution_to_the_last_element() {
    if !has_numpy() {
        eprintln!("SKIPPED: python3 has no NumPy here: a Python reference cannot run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join("touch.cu");
    let reference = dir.path().join("draws.py");
    std::fs::write(&kernel, KERNEL).unwrap();
    std::fs::write(&reference, REFERENCE).unwrap();
    let arg = |name: &str, dtype: &str, init: &str| {
        format!(
            "  {{ name = \"{name}\", buffer = \"{dtype}\", len = \"n\", init = \"{init}\" }},\n"
        )
    };
    let text = format!(
        "[experiment]\ntitle = \"draws\"\n[sweep]\nn = [1000003, 40961]\n\
         [[kernel]]\nname = \"touch\"\nsource = \"{}\"\nentry = \"touch\"\ngrid = [1]\nblock = [32]\n\
         args = [\n{}{}{}{}{}{}{}{}  {{ name = \"y\", buffer = \"f32\", len = \"1\", init = \"output\" }},\n  {{ name = \"n\", scalar = \"i64\", value = \"n\" }},\n]\n\
         check_python = {{ function = \"{}:touch\", outputs = [\"y\"] }}\n\
         [defaults]\ntimer = \"events\"\nwarmup = 1\nsamples = 300\n[[variant]]\nname = \"hot\"\n[report]\nfloor = false\n",
        kernel.display(),
        arg("f32", "f32", "uniform(-2, 3)"),
        arg("f16", "f16", "normal(1, 0.5)"),
        arg("bf16", "bf16", "uniform(0, 1)"),
        arg("f64", "f64", "normal(0, 2)"),
        arg("i8", "i8", "uniform(-100, 100)"),
        arg("u16", "u16", "uniform(0, 60000)"),
        arg("i32", "i32", "uniform(-1000, 1000)"),
        arg("gauss", "f32", "normal(-3, 0.25)"),
        reference.display(),
    );
    let (_out, _dir, records) = run_on_gpu("draws", &text);
    for n in [1000003, 40961] {
        let r = record(&records, &format!("touch/n={n}/hot"));
        assert_eq!(r["status"], "ok", "{r}");
        // The audited regions' inputs were the GPU's draws, each checked by the reference.
        let audit = &r["audit"];
        let regions = audit["among"]["readings_ns"].as_array().unwrap().len();
        assert!(regions >= 1, "{audit}");
        assert!(
            audit["inputs"].as_str().unwrap().contains("new data"),
            "{audit}"
        );
        assert!(
            audit["check"]
                .as_str()
                .unwrap()
                .contains("against Python `"),
            "{audit}"
        );
    }
}
