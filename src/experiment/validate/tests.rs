//! The `[report]` table's kernel pairs and tuned parameter, checked against the experiment.

use crate::experiment::{ConfigError, DeviceFacts, Experiment, Sources};
use std::path::Path;

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
    Experiment::parse(
        Path::new("e.toml"),
        &text(sweep, report),
        &DeviceFacts::nominal(),
        Sources::Skip,
    )
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
    let e = Experiment::parse(
        Path::new("e.toml"),
        &t,
        &DeviceFacts::nominal(),
        Sources::Skip,
    )
    .unwrap();
    let entries: Vec<&str> = e.kernels[0]
        .launches
        .iter()
        .map(|l| l.entry.as_str())
        .collect();
    assert_eq!(entries, ["k<128, float>", "k<256, float>"]);
    assert!(e.kernels[1].launches.iter().all(|l| l.entry.is_empty()));
    let bad = t.replace("{{ block }}", "{{ blok }}");
    let err = Experiment::parse(
        Path::new("e.toml"),
        &bad,
        &DeviceFacts::nominal(),
        Sources::Skip,
    )
    .unwrap_err();
    assert!(err.to_string().contains("cannot render entry"), "{err}");
}
