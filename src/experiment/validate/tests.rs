//! The `[report]` table's kernel pairs and tuned parameter, checked against the experiment.

use crate::experiment::{ConfigError, DeviceFacts, Experiment, Sources};

/// An experiment of two kernels over `sweep`, with `report` as its `[report]` table.
fn text(sweep: &str, report: &str) -> String {
    let kernel = |name: &str| {
        format!("[[kernel]]\nname = \"{name}\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\n")
    };
    format!(
        "[experiment]\ntitle = \"t\"\n[sweep]\n{sweep}\n{}{}[[variant]]\nname = \"hot\"\n[report]\n{report}\n",
        kernel("matmul-tiled"),
        kernel("matmul-naive"),
    )
}

fn parse(sweep: &str, report: &str) -> Result<Experiment, ConfigError> {
    parse_text(&text(sweep, report))
}

/// How tables label these points.
fn labels(points: &[crate::experiment::Point]) -> Vec<String> {
    points.iter().map(crate::experiment::point_label).collect()
}

/// A whole experiment's text, checked without reading sources.
fn parse_text(text: &str) -> Result<Experiment, ConfigError> {
    Experiment::from_text(text)
}

/// The error, asserted to be on the line of the `[report]` table's last key.
fn error(sweep: &str, report: &str) -> ConfigError {
    let e = parse(sweep, report).unwrap_err();
    let last_line = text(sweep, report).lines().count();
    assert_eq!(e.position.map(|(line, _)| line), Some(last_line), "{e}");
    e
}

#[test]
fn kernel_pairs_and_the_tuned_parameter_are_kept() {
    let e = parse(
        "n = [1, 2]\nblock = [128, 256]",
        "kernels = [[\"matmul-tiled\", \"matmul-naive\"]]\nbest = \"block\"",
    )
    .unwrap();
    assert_eq!(
        e.report.kernels,
        [("matmul-tiled".to_string(), "matmul-naive".to_string())]
    );
    assert_eq!(e.report.best.as_deref(), Some("block"));
    let plain = parse("n = [1, 2]", "").unwrap();
    assert!(plain.report.kernels.is_empty() && plain.report.best.is_none());
}

#[test]
fn an_unknown_kernel_is_located_and_the_kernels_listed() {
    let e = error(
        "n = [1, 2]",
        "kernels = [[\"matmul-tiled\", \"matmul-naiv\"]]",
    );
    assert_eq!(e.message, "unknown kernel `matmul-naiv`");
    assert_eq!(
        e.hint.as_deref(),
        Some("kernels of this experiment: matmul-tiled, matmul-naive")
    );
    let e = error("n = [1, 2]", "kernels = [[\"matmul-tiled\"]]");
    assert_eq!(e.message, "each kernel comparison is a pair of kernels");
}

#[test]
fn best_names_a_sweep_parameter() {
    let e = error("n = [1, 2]\nblock = [128, 256]", "best = \"blocks\"");
    assert_eq!(e.message, "best: `blocks` is not a sweep parameter");
    assert_eq!(
        e.hint.as_deref(),
        Some("sweep parameters of this experiment: n, block")
    );
}

#[test]
fn best_needs_two_values_to_choose_between() {
    let e = error("n = [1, 2]\nblock = [256]", "best = \"block\"");
    assert!(e.message.contains("only one value of `block`"), "{e}");
    assert!(e.hint.unwrap().contains("block = [128, 256, 512]"));
    let e = error("n = [1, 2]\nblock = 256", "best = \"block\"");
    assert!(e.message.contains("only one value"), "{e}");
}

#[test]
fn a_templated_entry_takes_the_sweep_at_every_point() {
    let t = text("block = [128, 256]", "floor = false").replace(
        "name = \"matmul-tiled\"\nsource = \"k.cu\"\nentry = \"k\"",
        "name = \"matmul-tiled\"\nsource = \"k.cu\"\nentry = \"k<{{ block }}, float>\"",
    );
    let e = parse_text(&t).unwrap();
    let entries: Vec<&str> = e.kernels[0]
        .launches
        .iter()
        .map(|l| l.entry.as_str())
        .collect();
    assert_eq!(entries, ["k<128, float>", "k<256, float>"]);
    assert!(e.kernels[1].launches.iter().all(|l| l.entry.is_empty()));
    let bad = t.replace("{{ block }}", "{{ blok }}");
    let err = parse_text(&bad).unwrap_err();
    assert!(err.to_string().contains("cannot render"), "{err}");
}

#[test]
fn a_step_entry_takes_the_sweep_and_a_leftover_brace_is_refused() {
    let t = text("T = [\"float\", \"double\"]", "floor = false").replace(
        "name = \"matmul-tiled\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\n",
        "name = \"matmul-tiled\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\nthen = [{ entry = \"second<{{ T }}>\", grid = [1], block = [1], args = [] }]\n",
    );
    let e = parse_text(&t).unwrap();
    let steps: Vec<&[String]> = (e.kernels[0].launches.iter())
        .map(|l| l.step_entries.as_slice())
        .collect();
    assert_eq!(steps, [["second<float>"], ["second<double>"]]);
    assert!(e.kernels[1]
        .launches
        .iter()
        .all(|l| l.step_entries.is_empty()));
    // A brace the rendering wrote itself is refused, naming the step's entry.
    let bad = t.replace("second<{{ T }}>", "second<{{ '{{' }}>");
    let err = parse_text(&bad).unwrap_err().to_string();
    assert!(
        err.contains("a step's entry") && err.contains("still holds"),
        "{err}"
    );
}

#[test]
fn a_kernel_runs_under_the_variants_it_names_and_skips_where_it_says() {
    let t = text("n = [1024, 4096]", "floor = false").replace(
        "name = \"matmul-naive\"\nsource = \"k.cu\"\nentry = \"k\"\n",
        "name = \"matmul-naive\"\nsource = \"k.cu\"\nentry = \"k\"\nvariants = [\"hot\"]\nskip = \"n >= 4096\"\n",
    );
    let e = parse_text(&t).unwrap();
    let naive = &e.kernels[1];
    assert_eq!(
        naive.only_variants.as_deref(),
        Some(&["hot".to_string()][..])
    );
    assert_eq!(naive.skipped, [false, true]);
    assert!(naive.runs_at(0, "hot") && !naive.runs_at(1, "hot") && !naive.runs_at(0, "cold"));
    // A variant the experiment lacks is named, with the ones it has.
    let err = parse_text(&t.replace("[\"hot\"]", "[\"warm\"]")).unwrap_err();
    assert!(err.to_string().contains("`warm`") && format!("{err:?}").contains("hot"));
    let err = parse_text(&t.replace("n >= 4096", "m >= 4096")).unwrap_err();
    assert!(err.to_string().contains("skip at 1024"), "{err}");
}

#[test]
fn a_type_axis_sets_buffer_types_and_template_arguments() {
    let text = r#"
[experiment]
title = "t"
[sweep]
dtype = ["f16", "bf16"]
shape = { rows = [2, 4], cols = [8, 16] }
[[kernel]]
name = "k"
source = "k.cu"
entry = "k<{{ dtype | ctype }}>"
grid = ["rows"]
block = [32]
args = [
  { name = "x", buffer = "{{ dtype }}", len = "rows * cols", init = "uniform(0, 1)" },
  { name = "y", buffer = "{{ dtype }}", len = "rows * cols", init = "output" },
  { name = "scale", scalar = "{{ dtype }}", value = 0.5 },
]
unchecked = true
[[variant]]
name = "hot"
"#;
    let e = parse_text(text).unwrap();
    assert_eq!(
        labels(&e.points),
        [
            "dtype=f16, rows=2, cols=8",
            "dtype=f16, rows=4, cols=16",
            "dtype=bf16, rows=2, cols=8",
            "dtype=bf16, rows=4, cols=16"
        ]
    );
    let l = &e.kernels[0].launches;
    assert_eq!(l[0].entry, "k<__half>");
    assert_eq!(l[3].entry, "k<__nv_bfloat16>");
    assert_eq!(l[3].buffer_bytes(), 2 * 2 * 64);
    assert!(matches!(
        &l[2].args[2],
        crate::experiment::ArgValue::Scalar { dtype: crate::experiment::Dtype::Bf16, bytes } if bytes.len() == 2
    ));
    let bad = text.replace(r#"["f16", "bf16"]"#, r#"["f16", "f99"]"#);
    let err = parse_text(&bad).unwrap_err().to_string();
    assert!(err.contains("not a type"), "{err}");
    let unknown = text.replace(
        r#"buffer = "{{ dtype }}", len = "rows * cols", init = "output""#,
        r#"buffer = "f17", len = "rows * cols", init = "output""#,
    );
    let err = parse_text(&unknown).unwrap_err().to_string();
    assert!(
        err.contains("unknown type `f17`") && err.starts_with("e.toml:15:"),
        "{err}"
    );
}

#[test]
fn a_npy_init_is_resolved_and_must_hold_the_buffers_elements() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "__global__ void k(float* x, float* y) {}",
    )
    .unwrap();
    let values: Vec<f32> = (0..6).map(|v| v as f32).collect();
    std::fs::write(
        dir.path().join("x.npy"),
        crate::experiment::npy::npy_f32("(2, 3)", &values),
    )
    .unwrap();
    let text = |len: &str| {
        format!(
            "[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [6]\nargs = [\n  {{ name = \"x\", buffer = \"f32\", len = {len}, init = \"npy(x.npy)\" }},\n  {{ name = \"y\", buffer = \"f32\", len = 6, init = \"output\" }},\n]\nunchecked = true\n[[variant]]\nname = \"hot\"\n"
        )
    };
    let path = dir.path().join("e.toml");
    let parse = |t: &str| Experiment::parse(&path, t, &DeviceFacts::nominal(), Sources::Read);
    let e = parse(&text("6")).unwrap();
    let crate::experiment::ArgValue::Buffer { init, .. } = &e.kernels[0].launches[0].args[0] else {
        panic!("a buffer");
    };
    let full = dir.path().join("x.npy").to_string_lossy().into_owned();
    assert_eq!(
        *init,
        crate::experiment::Init::Npy {
            path: full,
            offset: 128
        }
    );
    let err = parse(&text("5")).unwrap_err().to_string();
    assert!(
        err.contains("holds 6 elements of f32") && err.contains(":10:"),
        "{err}"
    );
    let err = parse(&text("6").replace("x.npy", "missing.npy"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot read") && err.contains("relative to the experiment"),
        "{err}"
    );
}

#[test]
fn a_kernel_sweeps_its_own_axes_across_the_experiments() {
    let text = |own: &str| {
        format!(
            r#"
[experiment]
title = "t"
[sweep]
n = [1024, 2048]
[[kernel]]
name = "tuned"
source = "k.cu"
entry = "k"
options = ["-DBLOCK={{{{ block }}}}"]
grid = ["n // block"]
block = ["block"]
sweep = {{ {own} }}
[[kernel]]
name = "plain"
source = "k.cu"
entry = "k"
grid = [8]
block = [128]
[[variant]]
name = "hot"
"#
        )
    };
    let e = parse_text(&text("block = [128, 256]")).unwrap();
    assert_eq!(
        labels(&e.kernels[0].points),
        [
            "n=1024, block=128",
            "n=1024, block=256",
            "n=2048, block=128",
            "n=2048, block=256"
        ]
    );
    assert_eq!(e.kernels[0].base, [0, 0, 1, 1]);
    assert_eq!(e.kernels[0].launches[3].block, [256, 1, 1]);
    assert_eq!(e.kernels[0].launches[3].options, ["-DBLOCK=256"]);
    assert_eq!(
        e.kernels[1].points.len(),
        2,
        "the other kernel keeps the experiment's sweep"
    );
    assert_eq!(e.parameter_names(0), "n, block");
    let err = parse_text(&text("n = [1, 2]")).unwrap_err().to_string();
    assert!(err.contains("already a sweep parameter"), "{err}");
}

#[test]
fn a_metric_is_checked_where_it_is_written() {
    let t = text("n = [1, 2]", "floor = false\n[[report.metric]]\nname = \"per n\"\nvalue = \"time_ns / n\"\nunit = \"ns\"");
    let e = parse("n = [1, 2]", "floor = false\n[[report.metric]]\nname = \"per n\"\nvalue = \"time_ns / n\"\nunit = \"ns\"").unwrap();
    assert_eq!(e.report.metrics[0].value, "time_ns / n");
    let k = &e.kernels[0];
    let v = crate::experiment::metric_value(
        &e.report.metrics[0],
        &k.points[1],
        &e.facts,
        10.0,
        &k.launches[1],
    );
    assert_eq!(v, Ok(5.0));
    let bad = t.replace("time_ns / n", "time_ns / steps");
    let err = parse_text(&bad).unwrap_err();
    assert!(
        err.to_string().contains("steps") && err.to_string().starts_with("e.toml:"),
        "{err}"
    );
}

#[test]
fn a_metric_reads_the_bytes_read_and_written_where_a_kernel_declares_them_apart() {
    let metric = "floor = false\n[[report.metric]]\nname = \"read share\"\nvalue = \"reads / (reads + writes)\"\nunit = \"\"";
    // matmul-tiled declares its reads and writes, matmul-naive nothing.
    let t = text("n = [1, 2]", metric).replacen(
        "block = [1]\n",
        "block = [1]\nreads = \"3 * n\"\nwrites = \"n\"\n",
        1,
    );
    let e = parse_text(&t).unwrap();
    let at = |k: usize| {
        let kernel = &e.kernels[k];
        let (p, launch) = (&kernel.points[1], &kernel.launches[1]);
        crate::experiment::metric_value(&e.report.metrics[0], p, &e.facts, 10.0, launch).unwrap()
    };
    assert_eq!(at(0), 0.75);
    assert!(at(1).is_nan(), "no bytes declared: no number");
    // A name a metric cannot use: the hint names what it can.
    let err = parse_text(&t.replace("reads / (reads + writes)", "reads / steps")).unwrap_err();
    assert!(
        err.to_string()
            .contains("bytes (or reads and writes, where the kernel declares them apart), flops"),
        "{err}"
    );
}

#[test]
fn a_chase_needs_an_integer_type_that_holds_its_indices() {
    let text = |ty: &str, len: &str| {
        format!(
            "[experiment]\ntitle = \"t\"\n[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\ngrid = [1]\nblock = [1]\nargs = [{{ name = \"next\", buffer = \"{ty}\", len = {len}, init = \"chase(4)\" }}]\n[[variant]]\nname = \"hot\"\n"
        )
    };
    assert!(parse_text(&text("u32", "1024")).is_ok());
    let err = parse_text(&text("f32", "1024")).unwrap_err().to_string();
    assert!(err.contains("needs an integer type"), "{err}");
    let err = parse_text(&text("u8", "1024")).unwrap_err().to_string();
    assert!(err.contains("index 1023"), "{err}");
}

#[test]
fn a_baseline_with_axes_the_kernel_lacks_is_refused() {
    let t = r#"
[experiment]
title = "t"
[sweep]
n = [1, 2]
[[kernel]]
name = "a"
source = "k.cu"
entry = "k"
grid = [1]
block = [1]
[[kernel]]
name = "b"
source = "k.cu"
entry = "k"
grid = [1]
block = [1]
sweep = { tile = [8, 16] }
[[variant]]
name = "hot"
[report]
kernels = [["a", "b"]]
"#;
    let err = parse_text(t).unwrap_err().to_string();
    assert!(err.contains("swept over axes"), "{err}");
    assert!(parse_text(&t.replace("[\"a\", \"b\"]", "[\"b\", \"a\"]")).is_ok());
}
